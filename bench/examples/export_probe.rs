//! A profiling probe for the exporter's hot path: fills rings with the
//! realistic batch and drains them into Blocks, `ROUNDS` times (first
//! argument, default 200). Run it under `perf record` or
//! `valgrind --tool=callgrind`:
//!
//! `cargo build --release -p typhon-live-bench --example export_probe`

use typhon_live_core::{Exporter, LaneKind, Lanes, Metadata, NameTable};

static LANES: Lanes<8, 65536> = Lanes::new();

fn main() {
    let rounds: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let events = typhon_live_tests::realistic_events(2000);
    let names: NameTable<8, 64> = NameTable::new();
    let handles: Vec<_> = (0..4)
        .map(|i| LANES.claim(i, LaneKind::Worker).expect("lane"))
        .collect();
    let mut scratch = vec![0u8; typhon_live_core::block::block_scratch_len(8192)];
    let meta = Metadata {
        ticks_per_second: 1_000_000_000,
        ..Metadata::default()
    };
    let mut exporter: Exporter<'_, 8> = Exporter::new(meta, &mut scratch);
    let mut out = vec![0u8; exporter.min_block_buffer()];
    exporter.attach();
    let mut total = 0u64;
    for _ in 0..rounds {
        for (lane, event) in &events {
            handles[usize::from(*lane) % handles.len()].record(event);
        }
        exporter.request_drain();
        while let Some(frame) = exporter.poll(1, &LANES, &names, &mut out).expect("frame") {
            total += u64::from(frame.events);
        }
    }
    println!("{total} events exported");
}
