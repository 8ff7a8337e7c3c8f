//! `-- --web`: the browser viewer's rows, in headless Chromium with
//! SwiftShader (Debian's `chromium` and `chromium-driver`):
//! - decode plus model as wasm: a trace of 5 000 realistic ticks served by
//!   `view FILE --web`, read whole by the page (WebSocket, our decoder,
//!   reader and model in wasm), from its first bytes to its end; beside
//!   the same reader and model natively on the same bytes;
//! - the first frame with spans drawn after the page is opened, on
//!   loopback, against `demo --web`;
//! - the bundle's size, gzipped;
//! - live at 1 M spans/s (one source of the relay bench, through `relay
//!   --web`): latency from a latency mark's recording to the page first
//!   drawing it, and the page's time per frame; then sixteen WebSocket
//!   readers of the same stream, each reading as the page does, and what
//!   the relay took (CPU, memory) and the source lost.
//!
//! Needs the `typhon-live` binary beside this one:
//! `cargo build --release -p typhon-live-cli` first.

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tungstenite::client::IntoClientRequest;
use typhon_live_core::Compression;
use typhon_live_model::Model;
use typhon_live_tests::browser::Browser;
use typhon_live_web::feed::Feed;

use crate::relay::{memory, percentile, source, unix_ns, SourceServer};
use crate::relay_attack::{start, Running};

const HOOK: &str = "return window.typhon ? window.typhon.summary().page : null;";
const WAIT: Duration = Duration::from_secs(60);

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
    let native_rate = crate::model_ingest(&stream, 11);
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
        "worker.js",
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
    let run = Duration::from_secs(if quick { 3 } else { 10 });
    println!("| live rows, the page 1400 x 800 | | |");
    if live(&browser, 1e6, run).is_none() {
        eprintln!("web bench: the live rows did not run");
    }
    // Without a GPU, each frame is rasterized on the CPU: a quarter of
    // the pixels, the same page.
    drop(browser);
    let small = match Browser::start(700, 400) {
        Ok(browser) => browser,
        Err(why) => return eprintln!("web bench: {why}"),
    };
    println!("| live rows, the page 700 x 400 | | |");
    if live(&small, 1e6, run).is_none() {
        eprintln!("web bench: the live rows did not run");
    }
}

/// The relay process's CPU time so far (user and system), s.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command's name in parentheses: state is field 3; utime
    // and stime are 14 and 15, in clock ticks (100 a second here).
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i - 3)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(14) + ticks(15)) / 100.0
}

/// One reader of the relay's tab stream for `run`, as the page reads it:
/// its events and frames missed.
fn reader(url: &str, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<(u64, u64)> {
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or("")
        .to_owned();
    let stream_url = format!("ws{}stream", url.trim_start_matches("http"));
    std::thread::spawn(move || {
        let Ok(mut request) = stream_url.into_client_request() else {
            return (0, 0);
        };
        if let Ok(origin) = format!("http://{authority}").parse() {
            request.headers_mut().insert("Origin", origin);
        }
        let Ok(tcp) = TcpStream::connect(&authority) else {
            return (0, 0);
        };
        let Ok((mut socket, _)) = tungstenite::client(request, tcp) else {
            return (0, 0);
        };
        let _ = socket
            .get_ref()
            .set_read_timeout(Some(Duration::from_millis(100)));
        let (mut feed, mut model) = (Feed::new(), Model::default());
        // The page's recorder too: it keeps every frame the page reads.
        let settings = typhon_live_web::source::recorder_settings();
        let mut recorder = typhon_live_recorder::Recorder::new(settings, Vec::new());
        let began = Instant::now();
        while !stop.load(Ordering::Acquire) {
            if let Ok(tungstenite::Message::Binary(bytes)) = socket.read() {
                // As the page's worker: each message's arrival on the
                // Unix clock too.
                let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                let received = unix.ok().map(|d| d.as_nanos() as u64);
                feed.push(&bytes, &mut model, &mut recorder, began.elapsed(), received);
                if let Some(said) = feed.say_read() {
                    let _ = socket.send(tungstenite::Message::text(said));
                }
            }
        }
        (model.events(), model.frames_dropped())
    })
}

/// A source of `per_second` spans for `run` (the relay bench's, held
/// until `go`), and `relay --web` of it: the source, `go`, the relay and
/// the viewer's URL.
fn relayed_source(
    per_second: f64,
    run: Duration,
) -> Option<(SourceServer, Arc<AtomicBool>, Running, String)> {
    let go = Arc::new(AtomicBool::new(false));
    let src = source(0, per_second, run, Instant::now(), Arc::clone(&go));
    let source = format!("s={}", src.addr);
    let args = ["relay", "--source", &source, "--web", "0"];
    let (relay, url) = start(&args, "typhon-live relay: browser viewer at ")?;
    Some((src, go, relay, url))
}

/// The live rows: `per_second` spans through `relay --web` for `run`,
/// to the page in `browser`, then to sixteen readers.
fn live(browser: &Browser, per_second: f64, run: Duration) -> Option<()> {
    // The page.
    let (src, go, relay, url) = relayed_source(per_second, run)?;
    browser.open(&url).ok()?;
    page_when(browser, |p| p["first_bytes_ms"].is_number())?;
    let frames_before = browser
        .run("return window.typhon.summary().frame_ms.length")
        .ok()?;
    let cpu_before = cpu_seconds(relay.pid());
    go.store(true, Ordering::Release);
    let began = unix_ns();
    let sent = src.thread.join().unwrap_or(0);
    let cpu = (cpu_seconds(relay.pid()) - cpu_before) / run.as_secs_f64();
    let (rss, peak) = memory(relay.pid());
    // The hook is as of the last frame drawn with the worker's side: one
    // drawn after now.
    let asked = browser.run("return performance.now()").ok()?.as_f64()?;
    page_when(browser, |p| p["at_ms"].as_f64() >= Some(asked))?;
    let state = browser.run("return window.typhon.summary()").ok()?;
    let origin = browser
        .run("return performance.timeOrigin")
        .ok()?
        .as_f64()?;
    let page = &state["page"];
    let mut latencies: Vec<u64> = page["latency_marks"]
        .as_array()?
        .iter()
        .filter_map(|m| Some((m[0].as_u64()?, m[1].as_f64()?)))
        .filter(|&(sent, _)| sent >= began)
        .map(|(sent, drawn)| (((origin + drawn) * 1e6) as u64).saturating_sub(sent))
        .collect();
    latencies.sort_unstable();
    let skip = frames_before.as_u64().unwrap_or(0) as usize;
    let mut frames: Vec<u64> = state["frame_ms"]
        .as_array()?
        .iter()
        .skip(skip)
        .filter_map(|v| v.as_f64())
        .map(|ms| (ms * 1e6) as u64)
        .collect();
    frames.sort_unstable();
    println!(
        "| latency from event to screen at {:.1} M spans/s ({} marks drawn of about {}) | p50 {:.0} ms / p99 {:.0} ms | <= 100 / <= 250 ms |",
        per_second / 1e6,
        latencies.len(),
        run.as_millis(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
    println!(
        "| frame time while live at {:.1} M spans/s ({} frames; SwiftShader, source and relay on the same 2 cores) | p50 {:.1} ms / p99 {:.1} ms | <= 16 / <= 50 ms |",
        per_second / 1e6,
        frames.len(),
        percentile(&frames, 0.5),
        percentile(&frames, 0.99)
    );
    println!(
        "| the page's reading of it, when the source stopped | {} of {sent} spans sent read, {} frames missed; {:.0} ms of the {} ms in the decoder, reader and model | - |",
        page["summary"]["events"],
        page["summary"]["frames_dropped"],
        page["ingest_ms"].as_f64().unwrap_or(f64::NAN),
        run.as_millis()
    );
    println!(
        "| the relay, one tab | {:.0} % of a core, {:.1} MiB resident (peak {:.1}) | - |",
        cpu * 100.0,
        rss as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    drop(relay);
    browser.open("about:blank").ok()?;

    // Sixteen readers.
    let (src, go, relay, url) = relayed_source(per_second, run)?;
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..16).map(|_| reader(&url, Arc::clone(&stop))).collect();
    // Every reader given its start before the first Block.
    std::thread::sleep(Duration::from_secs(2));
    let cpu_before = cpu_seconds(relay.pid());
    go.store(true, Ordering::Release);
    let sent = src.thread.join().unwrap_or(0);
    let cpu = (cpu_seconds(relay.pid()) - cpu_before) / run.as_secs_f64();
    std::thread::sleep(Duration::from_secs(2));
    let (rss, peak) = memory(relay.pid());
    stop.store(true, Ordering::Release);
    let seen: Vec<(u64, u64)> = readers
        .into_iter()
        .map(|r| r.join().unwrap_or((0, 0)))
        .collect();
    let complete = seen
        .iter()
        .filter(|&&(events, missed)| missed == 0 && events > sent)
        .count();
    let missed: u64 = seen.iter().map(|s| s.1).sum();
    println!(
        "| 16 WebSocket readers at {:.1} M spans/s ({sent} spans sent) | {complete} of 16 complete, {missed} frames missed in all (counted by each); relay {:.0} % of a core, {:.1} MiB resident (peak {:.1}) | no source drops added |",
        per_second / 1e6,
        cpu * 100.0,
        rss as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    Some(())
}
