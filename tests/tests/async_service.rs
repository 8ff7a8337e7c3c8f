//! A real async service watched through the `tracing` layer: axum with
//! tower-http's `TraceLayer` on a two-worker tokio runtime, loaded by
//! four hyper clients. Each request must be one task span named by its
//! route, with its real latency; an awaited `query` must show its wait
//! as idle time. Read back by the view model, as a viewer reads it.

use std::time::Duration;

use typhon_live_model::SpanStats;
use typhon_live_tests::service::{self, load, SLEEP};

mod layer;

const CLIENTS: usize = 4;
/// Requests per client, alternating between /a and /b.
const PER_CLIENT: usize = 100;

fn stats<'a>(all: &'a [SpanStats], name: &str) -> &'a SpanStats {
    all.iter().find(|s| s.name == name).unwrap_or_else(|| {
        panic!(
            "no statistics for {name}: {:?}",
            all.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    })
}

#[test]
fn an_axum_service_under_load_has_one_span_per_request_named_by_route() {
    let (profiler, path) = layer::record("service");

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let served = runtime.block_on(async {
        let service = service::start().await.expect("the service starts");
        let load = load(service.addr, CLIENTS, PER_CLIENT);
        let served = tokio::time::timeout(Duration::from_secs(120), load)
            .await
            .expect("the load finishes");
        assert!(
            service.stop(Duration::from_secs(30)).await,
            "the service stops"
        );
        served
    });
    runtime.shutdown_timeout(Duration::from_secs(10));
    profiler.stop().expect("stop");

    let model = layer::read(&path);
    let mut all = model.span_stats();
    model.fill_exact(&mut all);

    assert_eq!(served, CLIENTS * PER_CLIENT);
    let (a, b) = (stats(&all, "GET /a"), stats(&all, "GET /b"));
    assert_eq!(
        a.count + b.count,
        served as u64,
        "one span per request: {a:?} {b:?}"
    );
    assert_eq!(a.count, b.count, "half the requests each");
    let sleep_ms = SLEEP.as_secs_f64() * 1e3;
    for route in [a, b] {
        let p50 = route.p50_ms.expect("percentiles");
        assert!(
            p50 >= sleep_ms,
            "a request lasts at least the sleep: {route:?}"
        );
    }
    let query = stats(&all, "query");
    assert_eq!(
        query.count, served as u64,
        "one query per request: {query:?}"
    );
    // Each query waited at least the sleep: its idle time.
    assert!(
        query.idle_ms >= sleep_ms * query.count as f64,
        "the sleep is idle time: {query:?}"
    );
    assert!(query.busy_ms < query.total_ms - sleep_ms * query.count as f64 + 1e-9);
    let open: Vec<String> = (model.open_tasks().iter())
        .map(|(_, t)| model.name(t.name))
        .collect();
    assert!(open.is_empty(), "every task closed: {open:?}");
    let render = stats(&all, "render");
    assert_eq!(render.count, served as u64, "render runs once a request");

    // Their `route` field, carried: `query`'s (a task span's) and
    // `render`'s (an ordinary span's) statistics by route.
    for span in [query, render] {
        let keys: Vec<(String, bool)> = (model.field_keys(span.id).into_iter())
            .map(|(key, numeric)| (model.name(key), numeric))
            .collect();
        assert_eq!(keys, [("route".to_owned(), false)], "{}", span.name);
        let route = model.field_keys(span.id)[0].0;
        let groups: Vec<(String, u64)> = (model.field_groups(span.id, route).into_iter())
            .map(|g| (g.value, g.durations.count))
            .collect();
        let half = served as u64 / 2;
        assert_eq!(
            groups,
            [("a".to_owned(), half), ("b".to_owned(), half)],
            "{}",
            span.name
        );
    }
    let query_by_route = model.field_groups(query.id, model.field_keys(query.id)[0].0);
    for group in &query_by_route {
        assert!(
            group.durations.p50 as f64 >= SLEEP.as_nanos() as f64,
            "a query by route lasts at least the sleep: {group:?}"
        );
    }
}
