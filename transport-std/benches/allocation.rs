//! What counting allocations adds to an allocator (issue 40): a 64-byte
//! allocation and its free through `System`, and through
//! `Tracking<System>`, on a thread with a lane (its counters: a relaxed
//! load and store each) and on one without (its own slot's, the same;
//! past 64 such threads, a shard's atomic add), side
//! by side in one run; and on the lane's thread with sites sampled at
//! the default rate (one allocation in 512 KiB takes its stack).
//!
//! `cargo bench -p typhon-live-std --bench allocation`

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use typhon_live_core::LaneKind;
use typhon_live_std::{allocation_sites, runtime, Tracking};

/// An allocation and its free through `allocator`.
fn round_trip(allocator: &impl GlobalAlloc, layout: Layout) {
    // SAFETY: a layout of non-zero size; the block, if any, is freed with
    // it at once.
    unsafe {
        let block = allocator.alloc(black_box(layout));
        if !block.is_null() {
            allocator.dealloc(black_box(block), layout);
        }
    }
}

fn allocation(c: &mut Criterion) {
    let layout = Layout::from_size_align(64, 8).expect("a layout");
    let tracking = Tracking::new(System);
    let mut group = c.benchmark_group("alloc+dealloc 64 B");
    group.bench_function("System", |b| b.iter(|| round_trip(&System, layout)));
    group.bench_function("Tracking<System>, no lane", |b| {
        b.iter(|| round_trip(&tracking, layout))
    });
    runtime::register_thread("bench", LaneKind::Main);
    group.bench_function("Tracking<System>, a lane", |b| {
        b.iter(|| round_trip(&tracking, layout))
    });
    // Sampling at its default: one allocation in 512 KiB takes its stack.
    allocation_sites::set_sampling_mean(allocation_sites::DEFAULT_MEAN);
    group.bench_function("Tracking<System>, a lane, sites sampled", |b| {
        b.iter(|| round_trip(&tracking, layout))
    });
    allocation_sites::set_sampling_mean(0);
    group.finish();
}

criterion_group!(benches, allocation);
criterion_main!(benches);
