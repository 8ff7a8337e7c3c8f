//! Writes the fuzzers' seed corpus into `fuzz/corpus/decode/`: valid
//! streams (one with task records, one with fields), and one whose second Block is issue 21's, stating four billion
//! records in 58 bytes. `cargo run -p typhon-live-tests --example make_corpus`.

use std::fs;
use std::path::Path;

/// The sequence number of the second Block (the Catch-up after the Init is 0).
const OVER_BOUND_SEQ: u32 = 2;

fn main() -> std::io::Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/decode");
    fs::create_dir_all(&dir)?;
    use typhon_live_core::Compression;
    let seeds = [
        (
            "session-2-ticks.tlt",
            typhon_live_tests::exporter_stream(2, 4096, Compression::Off),
        ),
        (
            "session-6-ticks-small-blocks.tlt",
            typhon_live_tests::exporter_stream(6, 512, Compression::Off),
        ),
        (
            "session-2-ticks-lz4.tlt",
            typhon_live_tests::exporter_stream(2, 4096, Compression::Lz4),
        ),
        (
            "session-4-ticks-auto.tlt",
            typhon_live_tests::exporter_stream(4, 1 << 16, Compression::Auto),
        ),
        (
            "session-4-ticks-over-bound-block.tlt",
            typhon_live_tests::replace_block(
                &typhon_live_tests::exporter_stream(4, 4096, Compression::Off),
                OVER_BOUND_SEQ,
                &typhon_live_tests::over_bound_block(OVER_BOUND_SEQ),
            ),
        ),
        // Task records (kinds 6 to 8).
        ("task-span.tlt", typhon_live_tests::task_stream()),
        // A span's fields (kinds 9 to 11).
        ("span-fields.tlt", typhon_live_tests::fields_stream()),
        ("log-texts.tlt", typhon_live_tests::text_stream()),
        ("task-fields.tlt", typhon_live_tests::task_fields_stream()),
        // A flight recorder's capture: a written start, its labels, the
        // frames renumbered, a mark (kind 12).
        ("capture-marks.tlt", typhon_live_tests::capture_stream()),
        // Each lane's CPU: counters and switches (frame kind 6).
        ("cpu-samples.tlt", typhon_live_tests::samples_stream()),
        // The process's memory and its allocation sites (kind 6's
        // sections 3 and 4).
        ("memory-sites.tlt", typhon_live_tests::memory_stream()),
        // Spans' allocated bytes (kind 13).
        ("span-allocated.tlt", typhon_live_tests::allocated_stream()),
        // Call stacks: nodes and frame symbols (Definitions' sections 9
        // and 10), and stack samples (kind 6's section 5).
        ("stack-samples.tlt", typhon_live_tests::stacks_stream()),
    ];
    for (name, bytes) in seeds {
        fs::write(dir.join(name), &bytes)?;
        println!("{name}: {} bytes", bytes.len());
    }
    Ok(())
}
