//! A `tracing` span through typhon-live's layer and through
//! tracing-tracy's, side by side in one criterion run, with the
//! registry alone (what every layer adds to): a synchronous span
//! (created, entered once, closed), the same with two fields (a number
//! and a string, both carried), and an async one (created, entered and
//! exited three times, as three polls, then closed); and an event with a
//! message and two fields (its text kept, in typhon-live's log, and in
//! Tracy's messages).
//!
//! `cargo bench -p typhon-live-bench --bench tracing_layer`

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use tracing_subscriber::layer::SubscriberExt;
use typhon_live_core::Metadata;
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::Profiler;

/// Spans per measured batch: below a ring's capacity (four records a
/// task span of three polls), drained between batches.
const BATCH: usize = 1000;

fn sync_spans() {
    for _ in 0..BATCH {
        let _span = tracing::info_span!("bench span").entered();
    }
}

fn spans_with_fields() {
    for i in 0..BATCH {
        let table = if i % 2 == 0 { "users" } else { "orders" };
        let _span = tracing::info_span!("bench fields", rows = i, table).entered();
    }
}

fn events() {
    for i in 0..BATCH {
        let table = if i % 2 == 0 { "users" } else { "orders" };
        tracing::info!(rows = i, table, "bench event");
    }
}

fn async_spans() {
    for _ in 0..BATCH {
        let span = tracing::info_span!("bench task");
        for _ in 0..3 {
            drop(span.enter());
        }
    }
}

fn layers(c: &mut Criterion) {
    let profiler =
        Profiler::start(&ProfilerConfig::default(), &Metadata::default()).expect("profiler");
    let _tracy = tracy_client::Client::start();
    for (group, shape, spans) in [
        ("tracing span x1000", "sync", sync_spans as fn()),
        ("tracing span x1000", "sync, 2 fields", spans_with_fields),
        ("tracing span x1000", "async 3 polls", async_spans),
        ("tracing event x1000", "message, 2 fields", events),
    ] {
        let mut group = c.benchmark_group(group);
        group.measurement_time(Duration::from_secs(3));
        let registry = tracing_subscriber::registry();
        tracing::subscriber::with_default(registry, || {
            group.bench_function(format!("{shape}: registry alone"), |b| b.iter(spans));
        });
        let typhon = tracing_subscriber::registry().with(typhon_live_tracing::TyphonLayer::new());
        tracing::subscriber::with_default(typhon, || {
            group.bench_function(format!("{shape}: typhon-live layer"), |b| {
                b.iter_batched(
                    || std::thread::sleep(Duration::from_millis(2)),
                    |()| spans(),
                    BatchSize::PerIteration,
                )
            });
        });
        let tracy = tracing_subscriber::registry().with(tracing_tracy::TracyLayer::default());
        tracing::subscriber::with_default(tracy, || {
            group.bench_function(format!("{shape}: tracing-tracy layer"), |b| b.iter(spans));
        });
        group.finish();
    }
    profiler.stop().expect("stops");
}

criterion_group!(benches, layers);
criterion_main!(benches);
