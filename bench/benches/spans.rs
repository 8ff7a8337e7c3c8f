//! One span (begin and end, profiler on, no viewer) in typhon-live,
//! tracy-client and puffin, side by side in one criterion run, with the
//! floor: two reads of typhon's clock.
//!
//! `cargo bench -p typhon-live-bench --bench spans`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use typhon_live_core::Metadata;
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler};

/// Spans per measured batch: below a ring's capacity, so every span takes
/// the full recording path; the exporter drains between batches.
const BATCH: usize = 2000;

fn spans(c: &mut Criterion) {
    let mut group = c.benchmark_group("span begin+end x2000");
    group.measurement_time(Duration::from_secs(4));

    group.bench_function("floor: 2 clock reads", |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                black_box(runtime::now());
                black_box(runtime::now());
            }
        })
    });

    let profiler =
        Profiler::start(&ProfilerConfig::default(), &Metadata::default()).expect("profiler");
    group.bench_function("typhon-live span!", |b| {
        b.iter_batched(
            || std::thread::sleep(Duration::from_millis(2)),
            |()| {
                for _ in 0..BATCH {
                    let _span = typhon_live_std::span!("bench span");
                }
            },
            BatchSize::PerIteration,
        )
    });
    profiler.stop().expect("stops");

    let _tracy = tracy_client::Client::start();
    group.bench_function("tracy-client span!", |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                let _span = tracy_client::span!("bench span");
            }
        })
    });

    puffin::set_scopes_on(true);
    group.bench_function("puffin profile_scope!", |b| {
        b.iter_batched(
            || puffin::GlobalProfiler::lock().new_frame(),
            |()| {
                for _ in 0..BATCH {
                    puffin::profile_scope!("bench span");
                }
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, spans);
criterion_main!(benches);
