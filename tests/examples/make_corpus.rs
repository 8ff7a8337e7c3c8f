//! Writes the fuzzers' seed corpus of valid streams into
//! `fuzz/corpus/decode/`: `cargo run -p typhon-live-tests --example make_corpus`.

use std::fs;
use std::path::Path;

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
    ];
    for (name, bytes) in seeds {
        fs::write(dir.join(name), &bytes)?;
        println!("{name}: {} bytes", bytes.len());
    }
    Ok(())
}
