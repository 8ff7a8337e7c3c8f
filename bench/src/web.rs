//! `-- --web`: the browser viewer's rows, in headless Chromium with
//! SwiftShader (Debian's `chromium` and `chromium-driver`):
//! - decode plus model as wasm: a trace of 5 000 realistic ticks served by
//!   `view FILE --web`, read whole by the page (WebSocket, our decoder,
//!   reader and model in wasm), from its first bytes to its end; beside
//!   the same reader and model natively on the same bytes;
//! - the first frame with spans drawn after the page is opened, on
//!   loopback, against `demo --web`;
//! - the bundle's size, gzipped.
//!
//! Needs the `typhon-live` binary beside this one:
//! `cargo build --release -p typhon-live-cli` first.

use std::time::{Duration, Instant};

use serde_json::Value;
use typhon_live_core::{Compression, Decoder};
use typhon_live_tests::browser::Browser;

use crate::relay_attack::start;

const HOOK: &str = "return window.typhon ? window.typhon.summary().page : null;";
const WAIT: Duration = Duration::from_secs(60);

/// Reader and model natively over `stream`: events per second, the
/// median of `rounds`.
fn native(stream: &[u8], rounds: usize) -> f64 {
    let mut buf = vec![0u8; 16 << 20];
    let mut rates = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let mut decoder = Decoder::new(&mut buf);
        let mut model = typhon_live_model::Model::default();
        let mut rest = stream;
        while !rest.is_empty() {
            let n = decoder.feed(rest);
            rest = &rest[n..];
            while let Ok(Some(frame)) = decoder.next() {
                let _ = model.on_frame(&frame, Duration::ZERO);
            }
        }
        rates.push(model.events() as f64 / started.elapsed().as_secs_f64());
    }
    median(&mut rates)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The page's state once `want` holds (at most [`WAIT`]).
fn page_when(browser: &Browser, want: impl Fn(&Value) -> bool) -> Option<Value> {
    browser
        .wait_for(HOOK, WAIT, want)
        .map_err(|e| eprintln!("web bench: {e}"))
        .ok()
}

/// Prints the rows.
pub fn print(quick: bool) {
    let rounds = if quick { 1 } else { 5 };
    let browser = match Browser::start(1400, 800) {
        Ok(browser) => browser,
        Err(why) => return eprintln!("web bench: {why}"),
    };
    let stream = typhon_live_tests::exporter_stream(5_000, 1 << 20, Compression::Auto);
    let trace = std::env::temp_dir().join(format!("typhon-web-bench-{}.tlt", std::process::id()));
    if let Err(e) = std::fs::write(&trace, &stream) {
        return eprintln!("web bench: {}: {e}", trace.display());
    }
    let native_rate = native(&stream, 11);
    let Some((_view, url)) = start(
        &["view", &trace.display().to_string(), "--web"],
        "typhon-live view: browser viewer at ",
    ) else {
        return;
    };
    let (mut wasm, mut arrival) = (Vec::new(), Vec::new());
    let mut events = 0;
    for _ in 0..rounds {
        if browser.open(&url).is_err() {
            return;
        }
        let Some(page) = page_when(&browser, |p| p["file_ended_ms"].is_number()) else {
            return;
        };
        // The time in the decoder, reader and model (the copy out of the
        // message included); the page's drawing between messages is not.
        let took = page["ingest_ms"].as_f64().unwrap_or(f64::NAN);
        let whole = page["file_ended_ms"].as_f64().unwrap_or(f64::NAN)
            - page["first_bytes_ms"].as_f64().unwrap_or(f64::NAN);
        events = page["summary"]["events"].as_u64().unwrap_or(0);
        wasm.push(events as f64 / (took / 1e3));
        arrival.push(events as f64 / (whole / 1e3));
    }
    let _ = std::fs::remove_file(&trace);
    let Some((_demo, url)) = start(&["demo", "--web"], "typhon-live web: browser viewer at ")
    else {
        return;
    };
    let mut first = Vec::new();
    for _ in 0..rounds {
        // A fresh page each time: the first frame of an opened page.
        if browser.open("about:blank").is_err() || browser.open(&url).is_err() {
            return;
        }
        let Some(page) = page_when(&browser, |p| p["first_drawn_ms"].is_number()) else {
            return;
        };
        first.push(page["first_drawn_ms"].as_f64().unwrap_or(f64::NAN));
    }
    let bundle: u64 = [
        "index.html",
        "main.js",
        "style.css",
        "typhon_live_web.js",
        "typhon_live_web_bg.wasm",
    ]
    .iter()
    .filter_map(|f| {
        std::fs::metadata(format!("{}/../web/dist/{f}.gz", env!("CARGO_MANIFEST_DIR"))).ok()
    })
    .map(|m| m.len())
    .sum();
    let wasm_rate = median(&mut wasm);
    println!("| row | measured | target |");
    println!("|---|---:|---|");
    println!(
        "| decode plus model in the browser, as wasm ({events} events, {rounds} page loads, median) | {:.2} M events/s (natively, same bytes: {:.2} M; ratio {:.2}) | >= 4 M events/s |",
        wasm_rate / 1e6,
        native_rate / 1e6,
        wasm_rate / native_rate
    );
    println!(
        "| the same file, first byte to last event in the page (transfer and drawing included) | {:.2} M events/s | - |",
        median(&mut arrival) / 1e6
    );
    let first_max = first.iter().copied().fold(f64::NAN, f64::max);
    println!(
        "| first frame with spans drawn after the page is opened, loopback ({rounds} loads) | median {:.0} ms, max {:.0} ms | <= 1.5 s |",
        median(&mut first),
        first_max
    );
    println!("| bundle, gzip | {:.2} MB | <= 2 MB |", bundle as f64 / 1e6);
}
