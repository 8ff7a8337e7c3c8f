//! `-- --formats FILE...`: each trace file's size as `.tlt`, as Perfetto's
//! `.pftrace` and as Chrome JSON, and how fast each conversion runs
//! (medians, in-process, output to memory: `convert` adds the file write).

use std::path::Path;
use std::time::Instant;

use typhon_live_convert::{chrome, perfetto};
use typhon_live_core::Payload;

/// Median seconds of `runs` calls of `f`, and its last output.
fn median<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut last = f();
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            last = f();
            started.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], last)
}

/// Prints one table row per file.
pub fn print(files: &[String], runs: usize) {
    println!("| trace | events | .tlt | .pftrace | Chrome JSON | to Perfetto | to Chrome JSON |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for path in files {
        let bytes = match std::fs::read(Path::new(path)) {
            Ok(bytes) => bytes,
            Err(e) => {
                eprintln!("{path}: {e}");
                continue;
            }
        };
        let mut events = 0u64;
        typhon_live_reader::frames(&bytes, |frame| {
            if let Ok(Payload::Block(block)) = frame.parse() {
                events += u64::from(block.records);
            }
            Ok(())
        });
        let (to_perfetto, pftrace) = median(runs, || {
            let mut out = Vec::with_capacity(bytes.len() * 4);
            perfetto::write_perfetto(&bytes, &mut out).expect("a Vec takes it");
            out.len()
        });
        let (to_chrome, json) = median(runs, || {
            let converted = chrome::chrome_trace(&bytes);
            serde_json::to_vec(&converted.output).expect("JSON").len()
        });
        let rate = |seconds: f64| events as f64 / seconds / 1e6;
        println!(
            "| {path} | {events} | {} B | {pftrace} B ({:.2}x) | {json} B ({:.2}x) | {:.2} ms, {:.1} M events/s | {:.2} ms, {:.1} M events/s |",
            bytes.len(),
            pftrace as f64 / bytes.len() as f64,
            json as f64 / bytes.len() as f64,
            to_perfetto * 1e3,
            rate(to_perfetto),
            to_chrome * 1e3,
            rate(to_chrome),
        );
    }
}
