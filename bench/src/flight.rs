//! The flight recorder's cost in the process: the exporter thread's CPU
//! time at 1 M spans a second with the recorder on (its trigger never
//! fires: the steady cost of keeping the past and watching) against the
//! same run with it off, runs alternated. Alone, the recorder is the
//! stream's only reader, so it also pays for the Blocks being encoded at
//! all; beside a trace file, its own part.

use std::time::{Duration, Instant};

use typhon_live_core::Metadata;
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler};

/// The exporter thread's time on a CPU so far, ns (Linux: its
/// schedstat's first field), found by its name.
fn exporter_cpu_ns() -> Option<u64> {
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if comm.trim() == "typhon-live-expo" || comm.trim().starts_with("typhon-live-exp") {
            let stat = std::fs::read_to_string(path.join("schedstat")).ok()?;
            return stat.split_whitespace().next()?.parse().ok();
        }
    }
    None
}

/// Records `rate` spans a second for `duration`, with the recorder on
/// (`recorder`) or off, and a trace file (`file`) or not; nobody watches
/// either way. The exporter thread's CPU, ms per second.
pub fn run(rate: f64, duration: Duration, recorder: bool, file: bool) -> Option<f64> {
    let dir = std::env::temp_dir().join(format!("typhon-live-bench-flight-{}", std::process::id()));
    let trace = std::env::temp_dir().join(format!(
        "typhon-live-bench-flight-{}.tlt",
        std::process::id()
    ));
    let mut config = ProfilerConfig::default();
    if file {
        config.trace = Some(trace.clone());
    }
    if recorder {
        config.capture_dir = Some(dir.clone());
        // Never fires: the steady cost of keeping the past and watching.
        config.recorder = vec![("on".into(), "tick > 1h".into())];
    }
    let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
    let id = runtime::intern("bench.flight").expect("name");
    std::thread::sleep(Duration::from_millis(50));
    let cpu_before = exporter_cpu_ns()?;
    let started = Instant::now();
    let mut recorded = 0u64;
    while started.elapsed() < duration {
        let due = (started.elapsed().as_secs_f64() * rate) as u64;
        while recorded < due {
            drop(runtime::span(id));
            recorded += 1;
        }
        std::hint::spin_loop();
    }
    let cpu = exporter_cpu_ns()?.saturating_sub(cpu_before);
    let seconds = started.elapsed().as_secs_f64();
    profiler.stop().expect("stop");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&trace);
    Some(cpu as f64 / 1e6 / seconds)
}

/// Medians of `runs` alternated runs off and on, beside a trace file or
/// not: (off, on) exporter ms per second.
pub fn alternated(rate: f64, duration: Duration, runs: usize, file: bool) -> Option<(f64, f64)> {
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        off.push(run(rate, duration, false, file)?);
        on.push(run(rate, duration, true, file)?);
    }
    Some((median(&mut off), median(&mut on)))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
