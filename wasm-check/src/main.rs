//! `typhon-live-wasm-check FILE`: the summary of a trace, natively.

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: typhon-live-wasm-check FILE");
        std::process::exit(2);
    };
    match std::fs::read(&path) {
        Ok(trace) => println!("{}", typhon_live_wasm_check::summary(&trace)),
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    }
}
