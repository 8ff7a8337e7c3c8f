//! A profiling probe for small Blocks, the relay's kind: the realistic
//! batch cut into Blocks of `EVENTS` events (about what a merged Block
//! holds at 1 M events/s), each encoded and framed, `ROUNDS` times
//! (first argument, default 200). Run it under
//! `valgrind --tool=callgrind` with two round counts: the difference,
//! over the Blocks it prints, is the instructions a Block takes.
//!
//! `cargo build --release -p typhon-live-bench --example small_block_probe`

use typhon_live_core::block::{block_scratch_len, max_block_frame_len, write_block};
use typhon_live_core::BlockBuilder;

/// Events a Block: issue 23's profile of the relay found merged Blocks
/// of about 54.
const EVENTS: usize = 54;

fn main() {
    let rounds: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let events = typhon_live_tests::realistic_events(200);
    let scratch_len = block_scratch_len(EVENTS);
    let mut scratch = vec![0u8; scratch_len];
    let mut frame = vec![0u8; max_block_frame_len(scratch_len, 0)];
    let (mut blocks, mut bytes) = (0u64, 0u64);
    for _ in 0..rounds {
        for batch in events.chunks(EVENTS) {
            let mut builder = BlockBuilder::new(&mut scratch);
            for (lane, event) in batch {
                assert!(builder.push(*lane, event), "a Block holds {EVENTS}");
            }
            let len = write_block(&mut frame, 0, &builder, &[]).expect("frame fits");
            blocks += 1;
            bytes += len as u64;
        }
    }
    println!("{blocks} Blocks, {bytes} bytes");
}
