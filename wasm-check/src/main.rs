//! `typhon-live-wasm-check FILE`: the summary of a trace, natively.
//! `typhon-live-wasm-check --rounds N FILE`: the trace read into a model
//! N times, and the median rate (events a second), natively.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (rounds, path) = match args.as_slice() {
        [path] => (None, path),
        [flag, n, path] if flag == "--rounds" => match n.parse::<usize>() {
            Ok(n) if n > 0 => (Some(n), path),
            _ => usage(),
        },
        _ => usage(),
    };
    let trace = match std::fs::read(path) {
        Ok(trace) => trace,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let Some(rounds) = rounds else {
        return println!("{}", typhon_live_wasm_check::summary(&trace));
    };
    let mut rates: Vec<f64> = (0..rounds)
        .map(|_| {
            let began = Instant::now();
            let events = typhon_live_wasm_check::ingest(&trace);
            events / began.elapsed().as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    println!("{:.0}", rates[rates.len() / 2]);
}

fn usage() -> ! {
    eprintln!("usage: typhon-live-wasm-check [--rounds N] FILE");
    std::process::exit(2);
}
