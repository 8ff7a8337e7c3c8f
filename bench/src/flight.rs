//! The flight recorder in the process (docs/RECORDER.md):
//!
//! - its cost: the exporter thread's CPU time at 1 M spans a second with
//!   the recorder on (its trigger never fires: the steady cost of keeping
//!   the past and watching) against the same run with it off, runs
//!   alternated. Alone, the recorder is the stream's only reader, so it
//!   also pays for the Blocks being encoded at all; beside a trace file,
//!   its own part;
//! - its memory: peak RSS with it on, against off, each in a process of
//!   its own, beside the bound its options set;
//! - its latency: from a window's end to its file being whole;
//! - a trigger storm: every tick fires, the directory stays in bounds.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use typhon_live_core::Metadata;
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler};

use crate::exporter_cpu::exporter_cpu_ns;

/// Records `rate` spans a second for `duration`, with a recorder whose
/// trigger is `trigger` (never firing) or none, and a trace file (`file`)
/// or not; nobody watches either way. The exporter thread's CPU, ms per
/// second.
pub fn run(rate: f64, duration: Duration, trigger: Option<&str>, file: bool) -> Option<f64> {
    let dir = scratch_dir("cost");
    let trace = std::env::temp_dir().join(format!(
        "typhon-live-bench-flight-{}.tlt",
        std::process::id()
    ));
    let mut config = ProfilerConfig::default();
    if file {
        config.trace = Some(trace.clone());
    }
    if let Some(trigger) = trigger {
        config.capture_dir = Some(dir.clone());
        // Never fires: the steady cost of keeping the past and watching.
        config.recorder = vec![("on".into(), trigger.into())];
    }
    let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
    let id = runtime::intern("bench.flight").expect("name");
    std::thread::sleep(Duration::from_millis(50));
    let cpu_before = exporter_cpu_ns()?;
    let started = Instant::now();
    spans_at(rate, duration, id, |_| true);
    let cpu = exporter_cpu_ns()?.saturating_sub(cpu_before);
    let seconds = started.elapsed().as_secs_f64();
    profiler.stop().expect("stop");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&trace);
    Some(cpu as f64 / 1e6 / seconds)
}

/// Records `rate` spans of `name` a second for `duration` on this
/// thread, calling `between` with the time since the start between
/// bursts; it ends the run early by answering `false`.
fn spans_at(rate: f64, duration: Duration, name: u32, mut between: impl FnMut(Duration) -> bool) {
    let started = Instant::now();
    let mut recorded = 0u64;
    loop {
        let elapsed = started.elapsed();
        if elapsed >= duration || !between(elapsed) {
            break;
        }
        let due = (elapsed.as_secs_f64() * rate) as u64;
        while recorded < due {
            drop(runtime::span(name));
            recorded += 1;
        }
        std::hint::spin_loop();
    }
}

/// Medians of `runs` alternated runs off and on (with `trigger`), beside
/// a trace file or not: (off, on) exporter ms per second.
pub fn alternated(
    rate: f64,
    duration: Duration,
    runs: usize,
    trigger: &str,
    file: bool,
) -> Option<(f64, f64)> {
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        off.push(run(rate, duration, None, file)?);
        on.push(run(rate, duration, Some(trigger), file)?);
    }
    Some((median(&mut off), median(&mut on)))
}

/// The memory row's recorder: 8 MiB of past (kept for an hour, so that
/// bytes bind), captures of at most 8 MiB (30 s before: all the past),
/// asked for every 2 s.
const MEMORY_OPTIONS: [(&str, &str); 5] = [
    ("keep", "1h"),
    ("keep_bytes", "8MiB"),
    ("max_capture_bytes", "8MiB"),
    ("before", "30s"),
    ("after", "500ms"),
];

/// What a process's recorder may hold at most with `options`: its past,
/// the capture being gathered (whose frames may have left the past), and
/// the captures made whole: one being written and
/// [`WAITING`](typhon_live_recorder::store::WAITING) waiting
/// (docs/RECORDER.md, "Memory").
pub fn memory_bound(options: &typhon_live_recorder::Options) -> u64 {
    let settings = &options.settings;
    let captures = 2 + typhon_live_recorder::store::WAITING;
    (settings.keep_bytes + captures * settings.max_capture_bytes) as u64
}

/// `--recorder-memory-row on|off`, in a process of its own: 1 M spans a
/// second for `duration` with the memory row's recorder (`on`) or none,
/// asking for a capture every 2 s; prints the peak RSS (VmHWM) and the
/// largest capture written, in bytes.
pub fn print_memory_row(on: bool, duration: Duration) {
    let dir = scratch_dir("memory");
    let mut config = ProfilerConfig::default();
    if on {
        config.capture_dir = Some(dir.clone());
        config.recorder = MEMORY_OPTIONS
            .iter()
            .map(|&(k, v)| (k.into(), v.into()))
            .collect();
    }
    let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
    let id = runtime::intern("bench.flight").expect("name");
    let mut asked = Duration::ZERO;
    spans_at(1_000_000.0, duration, id, |elapsed| {
        if elapsed >= asked + Duration::from_secs(2) {
            asked = elapsed;
            profiler.capture();
        }
        true
    });
    profiler.stop().expect("stop");
    let largest = capture_files(&dir)
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .max()
        .unwrap_or(0);
    let _ = std::fs::remove_dir_all(&dir);
    println!("{} {largest}", peak_rss().unwrap_or(0));
}

/// The memory row: (peak RSS off, on, the largest capture, the bound), in
/// bytes, each run in a process of its own (`--recorder-memory-row`).
pub fn memory(quick: bool) -> Option<(u64, u64, u64, u64)> {
    let run = |on: bool| -> Option<(u64, u64)> {
        let exe = std::env::current_exe().ok()?;
        let mut command = std::process::Command::new(exe);
        command.args(["--recorder-memory-row", if on { "on" } else { "off" }]);
        if quick {
            command.arg("--quick");
        }
        let output = command.output().ok()?;
        assert!(
            output.status.success(),
            "the recorder's memory row failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let line = String::from_utf8_lossy(&output.stdout);
        let mut numbers = line.split_whitespace().filter_map(|n| n.parse().ok());
        Some((numbers.next()?, numbers.next()?))
    };
    let mut options = typhon_live_recorder::Options::default();
    for (key, value) in MEMORY_OPTIONS {
        options.set(key, value).expect("the row's options");
    }
    let (off, _) = run(false)?;
    let (on, largest) = run(true)?;
    Some((off, on, largest, memory_bound(&options)))
}

/// The peak resident set of this process (VmHWM), bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The latency row: `count` captures asked for while 1 M spans a second
/// are recorded, each with a window of 500 ms after; how long after its
/// window ended each file was whole (renamed to its final name).
pub fn latency(count: usize) -> Vec<Duration> {
    let dir = scratch_dir("latency");
    let after = Duration::from_millis(500);
    let config = ProfilerConfig {
        capture_dir: Some(dir.clone()),
        recorder: vec![
            ("before".into(), "1s".into()),
            ("after".into(), "500ms".into()),
        ],
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
    let id = runtime::intern("bench.flight").expect("name");
    let mut latencies = Vec::new();
    // Asked at 1 s, then 200 ms after each file is whole.
    let mut next_ask = Some(Duration::from_secs(1));
    let mut waiting: Option<Instant> = None;
    let mut last_look = Duration::ZERO;
    spans_at(1_000_000.0, Duration::from_secs(60), id, |elapsed| {
        if latencies.len() >= count {
            return false;
        }
        if next_ask.is_some_and(|at| elapsed >= at) {
            next_ask = None;
            profiler.capture();
            waiting = Some(Instant::now());
        }
        // A look at the directory every 2 ms.
        if elapsed < last_look + Duration::from_millis(2) {
            return true;
        }
        last_look = elapsed;
        if let Some(asked) = waiting {
            if capture_files(&dir).len() > latencies.len() {
                let window_end = asked + after;
                latencies.push(Instant::now().saturating_duration_since(window_end));
                waiting = None;
                next_ask = Some(elapsed + Duration::from_millis(200));
            }
        }
        true
    });
    profiler.stop().expect("stop");
    let _ = std::fs::remove_dir_all(&dir);
    latencies
}

/// What a trigger storm left.
pub struct Storm {
    /// How long it ran.
    pub duration: Duration,
    /// Ticks recorded (each fired the trigger).
    pub ticks: u64,
    /// Triggers fired.
    pub fired: u64,
    /// Captures written.
    pub written: u64,
    /// Files in the directory at the end, and their bytes.
    pub files: usize,
    /// See `files`.
    pub bytes: u64,
    /// The directory's limits and the cooldown.
    pub max_files: usize,
    /// See `max_files`.
    pub max_bytes: u64,
    /// See `max_files`.
    pub cooldown: Duration,
}

impl Storm {
    /// Files and bytes within their limits, and no more captures than one
    /// per cooldown (the first at once).
    pub fn within_bounds(&self) -> bool {
        let per_cooldown = self.duration.as_secs_f64() / self.cooldown.as_secs_f64();
        self.files <= self.max_files
            && self.bytes <= self.max_bytes
            && self.written as f64 <= per_cooldown.floor() + 1.0
    }
}

/// A trigger storm: a 60 Hz loop whose every tick fires `tick > 0ns`,
/// 100 k spans a second besides, for `duration`; cooldown 10 s, at most
/// 3 files and 1 MiB in the directory.
pub fn storm(duration: Duration) -> Storm {
    let dir = scratch_dir("storm");
    let (max_files, max_bytes, cooldown) = (3, 1 << 20, Duration::from_secs(10));
    let config = ProfilerConfig {
        capture_dir: Some(dir.clone()),
        recorder: vec![
            ("on".into(), "tick > 0ns".into()),
            ("before".into(), "1s".into()),
            ("after".into(), "1s".into()),
            ("cooldown".into(), "10s".into()),
            ("max_files".into(), max_files.to_string()),
            ("max_bytes".into(), max_bytes.to_string()),
        ],
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
    let id = runtime::intern("bench.flight").expect("name");
    let frame = Duration::from_micros(16_667);
    let mut tick = 0u64;
    runtime::tick_start(tick);
    spans_at(100_000.0, duration, id, |elapsed| {
        if elapsed >= frame * (tick as u32 + 1) {
            runtime::tick_end(tick, false);
            tick += 1;
            runtime::tick_start(tick);
        }
        true
    });
    runtime::tick_end(tick, false);
    let stats = profiler.stop().expect("stop");
    let files = capture_files(&dir);
    let bytes = files
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let _ = std::fs::remove_dir_all(&dir);
    Storm {
        duration,
        ticks: tick + 1,
        fired: stats.triggers_fired,
        written: stats.captures_written,
        files: files.len(),
        bytes,
        max_files,
        max_bytes,
        cooldown,
    }
}

/// A fresh directory for one measurement's captures.
fn scratch_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "typhon-live-bench-flight-{what}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The whole capture files in `dir` (not the temporary `.NAME.part`).
fn capture_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.') && n.ends_with(".tlt"))
        })
        .collect()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
