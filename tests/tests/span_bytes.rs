//! The bytes each span allocated itself (FORMAT.md, "Allocated bytes"),
//! with `Tracking` as this test binary's global allocator: written by
//! the runtime's spans and by the `tracing` layer's task spans, read back
//! through a trace file by the view model. A parent's bytes leave out its
//! children's; a task span's are its polls'.

use std::alloc::System;
use std::hint::black_box;

use typhon_live_model::SpanStats;
use typhon_live_std::{runtime, Tracking};

mod layer;

#[global_allocator]
static ALLOCATOR: Tracking<System> = Tracking::new(System);

const FRAMES: u64 = 10;
const FRAME_OWN: usize = 64 << 10;
const LOAD_OWN: usize = 256 << 10;
const REQUESTS: u64 = 5;
const POLL_OWN: usize = 100_000;

fn stats<'a>(all: &'a [SpanStats], name: &str) -> &'a SpanStats {
    let mut found = all.iter().filter(|s| s.name == name);
    found
        .next()
        .unwrap_or_else(|| panic!("no {name} in {all:#?}"))
}

#[test]
fn each_span_has_the_bytes_it_allocated_itself() {
    let (profiler, path) = layer::record("span-bytes");
    std::thread::spawn(|| {
        runtime::register_thread("allocating", typhon_live_core::LaneKind::Worker);
        let (frame, load) = (runtime::intern("Frame"), runtime::intern("Load"));
        for _ in 0..FRAMES {
            let _frame = runtime::span(frame.unwrap());
            black_box(vec![1u8; FRAME_OWN]);
            let _load = runtime::span(load.unwrap());
            black_box(vec![2u8; LOAD_OWN]);
        }
        // Task spans: each entered twice, so in two polls.
        for _ in 0..REQUESTS {
            let request = tracing::info_span!("Request");
            for _ in 0..2 {
                request.in_scope(|| black_box(vec![3u8; POLL_OWN]));
            }
        }
    })
    .join()
    .unwrap();
    profiler.stop().expect("stop");

    let model = layer::read(&path);
    let all = model.span_stats();
    // Exactly: nothing else allocates inside them.
    assert_eq!(
        stats(&all, "Load").allocated_bytes,
        FRAMES * LOAD_OWN as u64
    );
    assert_eq!(
        stats(&all, "Frame").allocated_bytes,
        FRAMES * FRAME_OWN as u64,
        "a frame's own, its load's left out"
    );
    // The subscriber's own bookkeeping of an entry may allocate inside a
    // poll: a little over.
    let request = stats(&all, "Request");
    assert_eq!(request.count, REQUESTS);
    let expected = REQUESTS * 2 * POLL_OWN as u64;
    assert!(
        (expected..expected + (16 << 10)).contains(&request.allocated_bytes),
        "{request:?}"
    );
    // The selected name's distribution says the same.
    let load = model.history().distribution(stats(&all, "Load").id);
    assert_eq!(load.allocated, FRAMES * LOAD_OWN as u64);
}
