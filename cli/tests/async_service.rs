//! An async service watched live through the relay: the tests' axum
//! service (`typhon_live_tests::service`) runs in this test under load,
//! recorded through the `tracing` layer with the profiler live. The
//! relay's /metrics must hold a latency histogram per route, and
//! headless Chromium's page must draw the requests as task spans on the
//! task tracks, with their polls, named by route; the tokio runtime's
//! gauges (`typhon-live-tokio`) reach both. The browser's part is
//! skipped, with the reason, where Chromium is not installed; `.ci/run`
//! installs it and fails on the skip.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{listed_at, relay_value, skipped, typhon, wait_for};
use serde_json::Value;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::Profiler;
use typhon_live_tests::browser::Browser;
use typhon_live_tests::service::{self, load, SLEEP};

const HOOK: &str = "return window.typhon ? window.typhon.summary() : null;";

#[test]
fn an_async_service_is_watched_live_by_route() {
    let config = ProfilerConfig {
        live: Some(0),
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Default::default()).expect("profiler");
    let live = profiler.live_addr().expect("a live port");
    tracing_subscriber::registry()
        .with(typhon_live_tracing::TyphonLayer::new())
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let _gauges = typhon_live_tokio::RuntimeGauges::watch(runtime.handle()).expect("sampled");
    let service = runtime
        .block_on(service::start())
        .expect("the service starts");
    let addr = service.addr;
    // Load until the checks are done: two clients, in rounds.
    let loading = Arc::new(AtomicBool::new(true));
    let load_loop = runtime.spawn({
        let loading = loading.clone();
        async move {
            while loading.load(Ordering::Relaxed) {
                load(addr, 2, 20).await;
            }
        }
    });

    let mut relay = typhon();
    relay
        .args(["relay", "--web", "0", "--metrics", "127.0.0.1:0"])
        .args(["--duration", "90", "--source", &format!("svc={live}")]);
    let (_relay, told) = common::spawn_telling(
        relay,
        &[
            "typhon-live relay: metrics on http://",
            "typhon-live relay: browser viewer at ",
        ],
    );
    // A latency histogram per route: a request counted once, by its wall
    // time, not once per poll.
    let metrics: u16 = (told[0].trim_end_matches("/metrics").rsplit(':').next())
        .and_then(|port| port.parse().ok())
        .expect("the metrics port");
    let series = |what: &str, route: &str| {
        format!("typhon_span_duration_seconds_{what}{{source=\"svc\",span=\"{route}\"}}")
    };
    for route in ["GET /a", "GET /b"] {
        wait_for(metrics, &series("count", route), |n| n > 0.0);
    }
    let sum = relay_value(metrics, &series("sum", "GET /a"));
    let count = relay_value(metrics, &series("count", "GET /a"));
    let mean = sum
        .zip(count)
        .map(|(s, n)| s / n)
        .expect("GET /a's sum and count");
    assert!(
        mean >= SLEEP.as_secs_f64(),
        "a request lasts at least the sleep: {mean} s"
    );

    // The runtime as the exporter samples it, through the relay.
    let reading = |gauge: &str| format!("typhon_reading{{source=\"svc\",gauge=\"{gauge}\"}}");
    wait_for(metrics, &reading("tokio.workers"), |n| n == 2.0);
    wait_for(metrics, &reading("tokio.alive_tasks"), |n| n >= 1.0);
    // tower-http's events, counted by level: its requests at DEBUG.
    wait_for(
        metrics,
        "typhon_log_lines_total{source=\"svc\",level=\"debug\"}",
        |n| n > 0.0,
    );

    if let Err(why) = browse(told[1].trim()) {
        skipped(&why);
    }

    loading.store(false, Ordering::Relaxed);
    runtime.block_on(async {
        let _ = tokio::time::timeout(Duration::from_secs(30), load_loop).await;
        service.stop(Duration::from_secs(30)).await;
    });
    runtime.shutdown_timeout(Duration::from_secs(10));
    profiler.stop().expect("stop");
}

fn span_names(state: &Value) -> Vec<String> {
    (state["page"]["summary"]["span_stats"]
        .as_array()
        .into_iter())
    .flatten()
    .filter_map(|s| s["name"].as_str().map(str::to_owned))
    .collect()
}

/// The page at `url` in headless Chromium draws the routes' requests on
/// its task tracks, with their polls; `Err` when Chromium cannot run here.
fn browse(url: &str) -> Result<(), String> {
    if !cfg!(target_os = "linux") {
        // Under wine, /usr/bin/chromium is found and cannot run.
        return Err("the browser test runs Chromium on Linux only".into());
    }
    let browser = Browser::start(1400, 800)?;
    browser.open(url).unwrap();
    let state = browser
        .wait_for(HOOK, Duration::from_secs(60), |s| {
            let names = span_names(s);
            s["page"]["task_bars"].as_u64() > Some(0)
                && s["page"]["task_polls"].as_u64() > Some(0)
                && ["GET /a", "GET /b"]
                    .iter()
                    .all(|route| names.iter().any(|n| n.ends_with(route)))
                // Drawn in the list too, to be clicked: a frame of the
                // page may report its statistics before its list.
                && (s["page"]["listed"].as_array().into_iter().flatten())
                    .any(|row| row[0] == "query")
        })
        .unwrap_or_else(|e| panic!("the page drew no task tracks of the routes: {e}"));
    let screenshot = std::env::temp_dir().join("typhon-live-task-tracks.png");
    if let Ok(png) = browser.screenshot() {
        let _ = std::fs::write(&screenshot, png);
        eprintln!("screenshot: {}", screenshot.display());
    }
    let page = &state["page"];
    assert!(page["task_rows"].as_u64() >= Some(1), "{page}");
    let stats = (page["summary"]["span_stats"].as_array().cloned()).unwrap_or_default();
    let route = stats
        .iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.ends_with("GET /a")))
        .expect("GET /a");
    assert!(
        route["idle_ms"].as_f64() > Some(0.0),
        "a request waits: {route}"
    );
    // `query` clicked: its statistics by its `route` field, carried
    // through the relay.
    let (x, y) = listed_at(&state, "query");
    browser.click(x, y).unwrap();
    let selected = browser
        .wait_for(HOOK, Duration::from_secs(30), |s| {
            let fields = &s["page"]["selected"]["fields"];
            fields[0]["key"] == "route" && fields[0]["groups"].as_array().map(Vec::len) == Some(2)
        })
        .unwrap_or_else(|e| panic!("query's fields were not listed by route: {e}"));
    let fields_png = std::env::temp_dir().join("typhon-live-fields-by-route.png");
    if let Ok(png) = browser.screenshot() {
        let _ = std::fs::write(&fields_png, png);
        eprintln!("screenshot: {}", fields_png.display());
    }
    let by_route = &selected["page"]["selected"]["fields"][0];
    for group in by_route["groups"].as_array().into_iter().flatten() {
        assert!(
            ["a", "b"].contains(&group["value"].as_str().unwrap_or("")),
            "{by_route}"
        );
        assert!(
            group["durations"]["p50"].as_u64() >= Some(SLEEP.as_nanos() as u64),
            "a query by route lasts at least the sleep: {group}"
        );
    }
    // The log: tower-http's events with their fields, searched.
    let log = browser
        .wait_for(HOOK, Duration::from_secs(30), |s| {
            s["page"]["log"]["kept"].as_u64() > Some(0)
        })
        .unwrap_or_else(|e| panic!("the page showed no log: {e}"));
    let (x, y) = common::middle(&log["page"]["log"]["search_box"]);
    browser.click(x, y).unwrap();
    browser.type_text("status=200").unwrap();
    let searched = browser
        .wait_for(HOOK, Duration::from_secs(30), |s| {
            let shown = (s["page"]["log"]["shown"].as_array().cloned()).unwrap_or_default();
            !shown.is_empty()
                && shown.iter().all(|row| {
                    let text = row[0]["text"].as_str().unwrap_or("");
                    text.starts_with("finished processing request") && text.contains("status=200")
                })
        })
        .unwrap_or_else(|e| panic!("the log was not searched: {e}"));
    let log_png = std::env::temp_dir().join("typhon-live-log.png");
    if let Ok(png) = browser.screenshot() {
        let _ = std::fs::write(&log_png, png);
        eprintln!("screenshot: {}", log_png.display());
    }
    let log = &searched["page"]["log"];
    assert!(
        log["matched"].as_u64() < log["kept"].as_u64(),
        "the search keeps some lines, not all: {log}"
    );
    let gauges = (page["summary"]["gauges"].as_array().cloned()).unwrap_or_default();
    let workers = gauges
        .iter()
        .find(|g| {
            g["name"]
                .as_str()
                .is_some_and(|n| n.ends_with("tokio.workers"))
        })
        .unwrap_or_else(|| panic!("the runtime's gauges are shown: {gauges:?}"));
    assert_eq!(workers["value"].as_f64(), Some(2.0), "{workers}");
    Ok(())
}
