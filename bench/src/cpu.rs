//! Each lane's CPU (issue 39): what sampling costs the exporter thread,
//! 64 lanes read every 10 ms, against the same run with sampling off,
//! and what tracing their switches one by one adds (exporter CPU, the
//! switches a second, the bytes they take); then the same for the demo,
//! a real mix of threads. Runs alternated, medians.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use typhon_live_core::{LaneKind, Metadata};
use typhon_live_reader::{frames, Reader, Update};
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler};

use crate::exporter_cpu::{exporter_cpu_ns, exporter_cpu_ns_of};

/// Lanes sampled: as many as a process has.
pub const LANES: usize = 64;
/// How often each of them sleeps, and so switches out and back in.
pub const SLEEP: Duration = Duration::from_millis(20);

/// What one run measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct Measured {
    /// The exporter thread's CPU, ms per second.
    pub exporter_ms: f64,
    /// The trace file's bytes per second.
    pub bytes: f64,
    /// Switches traced per second.
    pub switches: f64,
}

/// What is sampled in a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sampling {
    Off,
    Samples,
    SamplesAndSwitches,
}

impl Sampling {
    const ALL: [Sampling; 3] = [
        Sampling::Off,
        Sampling::Samples,
        Sampling::SamplesAndSwitches,
    ];

    fn config(self, trace: Option<PathBuf>) -> ProfilerConfig {
        ProfilerConfig {
            cpu_samples: (self != Sampling::Off).then(|| Duration::from_millis(10)),
            cpu_switches: self == Sampling::SamplesAndSwitches,
            trace,
            ..ProfilerConfig::default()
        }
    }

    fn env(self) -> [(&'static str, &'static str); 2] {
        [
            (
                "TYPHON__PROFILER__CPUSAMPLEMS",
                if self == Sampling::Off { "0" } else { "10" },
            ),
            (
                "TYPHON__PROFILER__CPUSWITCHES",
                if self == Sampling::SamplesAndSwitches {
                    "on"
                } else {
                    "off"
                },
            ),
        ]
    }
}

fn trace_path(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "typhon-bench-cpu-{what}-{}.tlt",
        std::process::id()
    ))
}

/// Switches a trace holds.
fn switches_in(trace: &[u8]) -> u64 {
    let mut reader = Reader::new();
    let mut switches = 0;
    frames(trace, |frame| {
        reader.read(frame, |_, update| {
            if let Update::Switch { .. } = update {
                switches += 1;
            }
        })
    });
    switches
}

/// One run of `duration` with [`LANES`] threads, each with its lane,
/// each sleeping [`SLEEP`] at a time, sampled as `sampling` says; with a
/// trace file if `traced` (its bytes and switches are then measured, and
/// its writes are in the exporter's CPU).
pub fn run(sampling: Sampling, duration: Duration, traced: bool) -> Option<Measured> {
    let trace = traced.then(|| trace_path("lanes"));
    let profiler = Profiler::start(&sampling.config(trace.clone()), &Metadata::default()).ok()?;
    let stop = Arc::new(AtomicBool::new(false));
    let claimed = Arc::new(Barrier::new(LANES + 1));
    let threads: Vec<_> = (0..LANES)
        .map(|i| {
            let (stop, claimed) = (Arc::clone(&stop), Arc::clone(&claimed));
            std::thread::spawn(move || {
                runtime::register_thread(&format!("sampled-{i}"), LaneKind::Worker);
                claimed.wait();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(SLEEP);
                }
            })
        })
        .collect();
    claimed.wait();
    std::thread::sleep(Duration::from_millis(50));
    let before = exporter_cpu_ns()?;
    let started = Instant::now();
    std::thread::sleep(duration);
    let cpu = exporter_cpu_ns()?.saturating_sub(before);
    let seconds = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        let _ = thread.join();
    }
    profiler.stop().ok()?;
    match trace {
        Some(trace) => measured_from(&trace, cpu, seconds),
        None => Some(Measured {
            exporter_ms: cpu as f64 / 1e6 / seconds,
            ..Measured::default()
        }),
    }
}

/// What a run's trace says, its exporter having spent `cpu` ns over the
/// `seconds` measured (its bytes and switches are over the whole file,
/// spread over the same seconds: the run's edges are a few ms).
fn measured_from(trace: &PathBuf, cpu: u64, seconds: f64) -> Option<Measured> {
    let bytes = std::fs::read(trace).ok()?;
    let _ = std::fs::remove_file(trace);
    Some(Measured {
        exporter_ms: cpu as f64 / 1e6 / seconds,
        bytes: bytes.len() as f64 / seconds,
        switches: switches_in(&bytes) as f64 / seconds,
    })
}

/// The demo (`typhon-live demo`, 4 worker threads) for `duration`,
/// sampled as `sampling` says: its exporter's CPU over the middle of the
/// run, its trace's bytes and switches per second.
pub fn demo(sampling: Sampling, duration: Duration) -> Option<Measured> {
    let trace = trace_path("demo");
    let seconds = duration.as_secs().max(3);
    let mut demo = crate::relay::typhon_live()?
        .args(["demo", "--no-view", "--live", "0", "--threads", "4"])
        .args(["--duration", &seconds.to_string(), "--trace"])
        .arg(&trace)
        .envs(sampling.env())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // Past its start; measured until a second before its end.
    std::thread::sleep(Duration::from_millis(700));
    let before = exporter_cpu_ns_of(demo.id());
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds) - Duration::from_millis(1_700));
    let after = exporter_cpu_ns_of(demo.id());
    let measured = started.elapsed().as_secs_f64();
    let ok = demo.wait().ok()?.success();
    let cpu = after?.saturating_sub(before?);
    let mut result = measured_from(&trace, cpu, measured)?;
    // The file covers the whole run.
    let whole = seconds as f64;
    (result.bytes, result.switches) = (
        result.bytes * measured / whole,
        result.switches * measured / whole,
    );
    ok.then_some(result)
}

/// Medians of `runs` runs of `one`, each sampling alternated: off,
/// samples, samples and switches.
pub fn alternated(
    runs: usize,
    one: impl Fn(Sampling) -> Option<Measured>,
) -> Option<[Measured; 3]> {
    let mut all: [Vec<Measured>; 3] = Default::default();
    for _ in 0..runs {
        for (at, sampling) in Sampling::ALL.into_iter().enumerate() {
            all[at].push(one(sampling)?);
        }
    }
    let median = |v: &mut Vec<Measured>, key: fn(&Measured) -> f64| {
        let mut values: Vec<f64> = v.iter().map(key).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    Some(all.map(|mut v| Measured {
        exporter_ms: median(&mut v, |m| m.exporter_ms),
        bytes: median(&mut v, |m| m.bytes),
        switches: median(&mut v, |m| m.switches),
    }))
}
