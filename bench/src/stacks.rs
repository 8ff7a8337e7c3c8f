//! The call stacks' rows (`--stacks`): what sampling each lane's thread's
//! stack at 1 kHz costs 16 busy threads, by frame-pointer chains and by
//! copied stacks, against sampling off (alternated runs, medians); the
//! wire bytes it adds; a span's cost with it on and off; how long a
//! sample takes to reach a viewer's reader; what a first-seen address
//! costs the symbolizer; and the accuracy of the shares against `perf`
//! itself, on a workload of ten functions built without frame pointers
//! (this crate's release profile).

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use typhon_live_core::{Decoder, LaneKind, Metadata};
use typhon_live_reader::{Reader, Update};
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler};
use typhon_live_tests::ten_functions::{self, against_perf};

use crate::Row;

/// Busy threads of the cost rows.
const THREADS: usize = 16;
/// Samples a second of each thread's time on a CPU.
const HZ: u32 = 1000;

/// How a run samples stacks.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Off,
    FramePointers,
    Copies,
}

impl Mode {
    fn config(self, trace: &std::path::Path) -> ProfilerConfig {
        ProfilerConfig {
            trace: Some(trace.to_path_buf()),
            stack_sample_hz: if self == Mode::Off { 0 } else { HZ },
            stack_copies: self == Mode::Copies,
            ..ProfilerConfig::default()
        }
    }
}

/// One run: rounds a second of the 16 threads, and per second of their
/// own time on a CPU (what the machine's other tenants cannot move), the
/// exporter's and the symbolizer's CPU (ms a second), and the trace's
/// bytes a second.
struct Run {
    rounds: f64,
    rounds_per_cpu_s: f64,
    helpers_ms: f64,
    bytes: f64,
}

/// CPU time (ms) of this process's threads whose name starts with
/// `prefix`, from `/proc/self/task/*/stat`.
fn threads_cpu_ms(prefixes: &[&str]) -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let mut ticks = 0u64;
    for task in tasks.flatten() {
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !prefixes.iter().any(|p| name.trim().starts_with(p)) {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // Past the name in parentheses: fields 14 and 15 are utime, stime.
        let rest = stat.rsplit_once(')').map_or("", |r| r.1);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0)
        };
        ticks += field(11) + field(12);
    }
    // Clock ticks are 100 a second on Linux.
    ticks as f64 * 10.0
}

/// The profiler's own threads whose CPU a row counts.
const HELPERS: [&str; 2] = ["typhon-live-exp", "typhon-live-sym"];
/// A run's first second is not counted: the symbolizer parses the debug
/// information for the first addresses then, once.
const WARM_UP: Duration = Duration::from_secs(1);

fn run(mode: Mode, seconds: u64) -> Run {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;

    let trace = std::env::temp_dir().join(format!(
        "typhon-live-bench-stacks-{}.tlt",
        std::process::id()
    ));
    let profiler = Profiler::start(&mode.config(&trace), &Metadata::default()).expect("profiler");
    let (rounds, stop) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let (rounds, stop) = (Arc::clone(&rounds), Arc::clone(&stop));
            let thread = std::thread::Builder::new().name(format!("busy-{i}"));
            thread
                .spawn(move || {
                    runtime::register_thread(&format!("busy-{i}"), LaneKind::Worker);
                    let mut x = 1;
                    while !stop.load(Ordering::Relaxed) {
                        x = ten_functions::round(x);
                        rounds.fetch_add(1, Ordering::Relaxed);
                    }
                    std::hint::black_box(x);
                })
                .expect("a thread")
        })
        .collect();
    std::thread::sleep(WARM_UP);
    let (rounds_before, helpers_before) =
        (rounds.load(Ordering::Relaxed), threads_cpu_ms(&HELPERS));
    let busy_before = threads_cpu_ms(&["busy-"]);
    let bytes_before = std::fs::metadata(&trace).map_or(0, |m| m.len());
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let elapsed = started.elapsed().as_secs_f64();
    let counted = rounds.load(Ordering::Relaxed) - rounds_before;
    let helpers = threads_cpu_ms(&HELPERS) - helpers_before;
    let busy_s = (threads_cpu_ms(&["busy-"]) - busy_before) / 1e3;
    let bytes = std::fs::metadata(&trace).map_or(0, |m| m.len()) - bytes_before;
    stop.store(true, Ordering::Relaxed);
    threads.into_iter().for_each(|t| drop(t.join()));
    profiler.stop().expect("stopped");
    let _ = std::fs::remove_file(&trace);
    Run {
        rounds: counted as f64 / elapsed,
        rounds_per_cpu_s: counted as f64 / busy_s.max(1e-3),
        helpers_ms: helpers / elapsed,
        bytes: bytes as f64 / elapsed,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// ns a span takes to record on a lane whose stack is sampled (`mode`),
/// the median of `samples` batches.
fn span_ns(mode: Mode, samples: usize) -> f64 {
    let trace = std::env::temp_dir().join(format!(
        "typhon-live-bench-spans-{}.tlt",
        std::process::id()
    ));
    let profiler = Profiler::start(&mode.config(&trace), &Metadata::default()).expect("profiler");
    let ns = std::thread::spawn(move || {
        runtime::register_thread("spans", LaneKind::Worker);
        let name = runtime::intern("bench.span").expect("a name");
        crate::per_iteration(
            samples,
            |n| {
                for _ in 0..n {
                    drop(std::hint::black_box(runtime::span(name)));
                }
            },
            || std::thread::sleep(Duration::from_millis(2)),
        )
    })
    .join()
    .unwrap_or(f64::NAN);
    profiler.stop().expect("stopped");
    let _ = std::fs::remove_file(&trace);
    ns
}

/// How long samples take from being taken to a viewer's reader over TCP,
/// ms: p50 and p99 over `seconds` of a busy thread sampled at 1 kHz.
fn latency_ms(seconds: u64) -> Option<(f64, f64)> {
    let config = ProfilerConfig {
        live: Some(0),
        stack_sample_hz: HZ,
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).ok()?;
    let addr = profiler.live_addr()?;
    let mut socket = TcpStream::connect(addr).ok()?;
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .ok()?;
    let until = Instant::now() + Duration::from_secs(seconds);
    let busy = std::thread::spawn(move || {
        runtime::register_thread("busy", LaneKind::Worker);
        ten_functions::run(until)
    });
    let (mut buf, mut reader, mut bytes) = (vec![0u8; 16 << 20], Reader::new(), vec![0u8; 1 << 16]);
    let mut decoder = Decoder::new(&mut buf);
    let mut latencies = Vec::new();
    while Instant::now() < until {
        let n = match socket.read(&mut bytes) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => continue,
        };
        let mut rest = &bytes[..n];
        while !rest.is_empty() {
            let used = decoder.feed(rest);
            rest = &rest[used..];
            while let Ok(Some(frame)) = decoder.next() {
                let _ = reader.read(&frame, |_, update| {
                    if let Update::StackSample(sample) = update {
                        // The stream's clock is the profiler's (ns).
                        latencies.push(runtime::now().saturating_sub(sample.time) as f64 / 1e6);
                    }
                });
            }
            if used == 0 {
                break;
            }
        }
    }
    let _ = busy.join();
    let _ = profiler.stop();
    if latencies.is_empty() {
        return None;
    }
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    Some((at(0.5), at(0.99)))
}

/// What resolving a first-seen address costs, µs: the median over this
/// binary's functions, once the debug information is loaded (the first
/// load, ms, beside it). What the symbolizer thread does per new address.
fn first_seen_us() -> (f64, f64) {
    let resolve = |address: usize| {
        let mut found = 0;
        backtrace::resolve(address as *mut std::ffi::c_void, |_| found += 1);
        found
    };
    let started = Instant::now();
    resolve(first_seen_us as *const () as usize);
    let load_ms = started.elapsed().as_secs_f64() * 1e3;
    // Addresses across this binary's code, each new to the cache.
    let base = ten_functions::round as *const () as usize;
    let mut times = Vec::new();
    for i in 1..=400usize {
        let address = base.wrapping_add(i * 997);
        let started = Instant::now();
        std::hint::black_box(resolve(address));
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    (median(times), load_ms)
}

/// The rows.
pub fn rows(quick: bool) -> Vec<Row> {
    // Many short alternations: a shared 2-core machine drifts by a few
    // per cent over a minute, more than the cost measured.
    let (seconds, runs) = if quick { (1, 1) } else { (3, 7) };
    let mut rows = Vec::new();
    // Before anything here loads the debug information.
    let (first_seen, load) = first_seen_us();
    let modes = [Mode::Off, Mode::FramePointers, Mode::Copies];
    let mut measured: Vec<Vec<Run>> = vec![Vec::new(), Vec::new(), Vec::new()];
    // Alternated, so that the machine's drift falls on all three.
    for _ in 0..runs {
        for (i, mode) in modes.iter().enumerate() {
            measured[i].push(run(*mode, seconds));
        }
    }
    let of = |i: usize, f: fn(&Run) -> f64| median(measured[i].iter().map(f).collect());
    let off = of(0, |r| r.rounds);
    for (i, what, target, bound) in [
        (
            1,
            "stacks at 1 kHz, 16 busy threads: frame pointers",
            "<= 2 % slower, <= +20 ms/s",
            Some((2.0, 20.0)),
        ),
        (
            2,
            "stacks at 1 kHz, 16 busy threads: copied stacks",
            "measured",
            None,
        ),
    ] {
        let slower = (1.0 - of(i, |r| r.rounds) / off) * 100.0;
        // Each alternation's own ratio against the run of sampling off
        // beside it: their spread is the noise.
        let pairs: Vec<f64> = (measured[i].iter().zip(&measured[0]))
            .map(|(on, off)| (1.0 - on.rounds / off.rounds) * 100.0)
            .collect();
        let (low, high) = pairs
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &p| (l.min(p), h.max(p)));
        let helpers = of(i, |r| r.helpers_ms) - of(0, |r| r.helpers_ms);
        let wire = (of(i, |r| r.bytes) - of(0, |r| r.bytes)) / 1024.0;
        let per_cpu = 1.0 - of(i, |r| r.rounds_per_cpu_s) / of(0, |r| r.rounds_per_cpu_s);
        let says = format!(
            "{slower:.1} % slower (pairs {low:.1} to {high:.1}), {:.1} % a second on a CPU; exporter + symbolizer {helpers:+.1} ms/s; {wire:+.0} KiB/s on the wire",
            per_cpu * 100.0
        );
        let met = bound.map(|(pct, ms)| slower <= pct && helpers <= ms);
        rows.push(Row::ours(what, says, target, met));
    }
    let samples = if quick { 20 } else { 200 };
    let (span_off, span_on) = (span_ns(Mode::Off, samples), span_ns(Mode::Copies, samples));
    rows.push(Row::ours(
        "a span, its lane's stack sampled at 1 kHz (copies) against off",
        format!("{span_on:.1} ns against {span_off:.1} ns"),
        "unchanged",
        None,
    ));
    if let Some((p50, p99)) = latency_ms(if quick { 2 } else { 10 }) {
        // The page folds again every 500 ms, and draws within a frame.
        rows.push(Row::ours(
            "a stack sample to a viewer's reader (TCP), the page refolds every 500 ms",
            format!("p50 {p50:.1} ms, p99 {p99:.1} ms (the page: p99 + 500 ms)"),
            "<= 1 s at p99 in the browser",
            Some(p99 + 500.0 + 17.0 <= 1000.0),
        ));
    }
    rows.push(Row::ours(
        "symbols: a first-seen address (the debug information loaded once)",
        format!("{first_seen:.1} µs (first load {load:.0} ms, on the symbolizer's thread)"),
        "measured",
        None,
    ));
    for (copies, what) in [
        (
            true,
            "shares against perf (copied stacks): own, total, points apart at most",
        ),
        (
            false,
            "shares against perf (frame pointers alone): own, total",
        ),
    ] {
        let row = match against_perf(if quick { 3 } else { 10 }, HZ, copies) {
            Ok(m) => {
                let (own, total) = m.ours.farthest_from(&m.perf);
                Row::ours(
                    what,
                    format!(
                        "{own:.2}, {total:.2} ({} samples, perf {}; {} cut)",
                        m.ours.samples, m.perf.samples, m.samples.1
                    ),
                    "<= 2, <= 3",
                    Some(own <= 2.0 && total <= 3.0),
                )
            }
            Err(why) => Row::ours(what, format!("- ({why})"), "<= 2, <= 3", None),
        };
        rows.push(row);
    }
    rows
}
