//! What recording costs on the host thread, side by side in one run: the
//! clock (quanta's calibrated TSC against `std::time::Instant`), a span
//! with the profiler off, a span with it on, and a span with it on once
//! allocations are counted (`Tracking` in use: each span's own bytes are
//! read at its begin and end).
//!
//! `cargo bench -p typhon-live-std --bench recording`

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use typhon_live_core::Metadata;
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler, Tracking};

fn recording(c: &mut Criterion) {
    let mut clocks = c.benchmark_group("clock read");
    let origin = Instant::now();
    clocks.bench_function("std Instant (ns since origin)", |b| {
        b.iter(|| black_box(origin.elapsed().as_nanos() as u64))
    });
    clocks.bench_function("typhon runtime::now (quanta TSC)", |b| {
        b.iter(|| black_box(runtime::now()))
    });
    clocks.finish();

    let mut spans = c.benchmark_group("span! begin+end");
    spans.bench_function("profiler off", |b| {
        b.iter(|| {
            let _span = typhon_live_std::span!("bench");
        })
    });
    // On, with nobody attached: the exporter drains and discards, so the
    // ring never fills and every span takes the full recording path.
    let profiler =
        Profiler::start(&ProfilerConfig::default(), &Metadata::default()).expect("profiler");
    spans.bench_function("profiler on", |b| {
        b.iter(|| {
            let _span = typhon_live_std::span!("bench");
        })
    });
    // One allocation through `Tracking` and spans charge bytes from then
    // on (none here: the span allocates nothing, as the row above).
    let tracking = Tracking::new(System);
    let layout = Layout::from_size_align(64, 8).expect("a layout");
    // SAFETY: a layout of non-zero size; the block, if any, is freed with
    // it at once.
    unsafe {
        let block = tracking.alloc(layout);
        if !block.is_null() {
            tracking.dealloc(block, layout);
        }
    }
    spans.bench_function("profiler on, allocations counted", |b| {
        b.iter(|| {
            let _span = typhon_live_std::span!("bench");
        })
    });
    spans.finish();
    profiler.stop().expect("stops");
}

criterion_group!(benches, recording);
criterion_main!(benches);
