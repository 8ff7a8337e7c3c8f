//! Each lane's CPU samples (issue 39): what sampling costs the exporter
//! thread, 64 lanes read every 10 ms, against the same run with sampling
//! off, runs alternated. The lanes' threads sleep: the cost is the
//! exporter's alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use typhon_live_core::{LaneKind, Metadata};
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler};

use crate::exporter_cpu::exporter_cpu_ns;

/// Lanes sampled: as many as a process has.
pub const LANES: usize = 64;

/// One run of `duration` with `LANES` threads, each with its lane, and
/// sampling every `every` (or never): the exporter thread's CPU, ms per
/// second.
pub fn run(every: Option<Duration>, duration: Duration) -> Option<f64> {
    let config = ProfilerConfig {
        cpu_samples: every,
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
    let stop = Arc::new(AtomicBool::new(false));
    let claimed = Arc::new(Barrier::new(LANES + 1));
    let threads: Vec<_> = (0..LANES)
        .map(|i| {
            let (stop, claimed) = (Arc::clone(&stop), Arc::clone(&claimed));
            std::thread::spawn(move || {
                runtime::register_thread(&format!("sampled-{i}"), LaneKind::Worker);
                claimed.wait();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        })
        .collect();
    claimed.wait();
    std::thread::sleep(Duration::from_millis(50));
    let before = exporter_cpu_ns()?;
    let started = std::time::Instant::now();
    std::thread::sleep(duration);
    let cpu = exporter_cpu_ns()?.saturating_sub(before);
    let seconds = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        let _ = thread.join();
    }
    profiler.stop().expect("stop");
    Some(cpu as f64 / 1e6 / seconds)
}

/// Medians of `runs` alternated runs with sampling off and every 10 ms:
/// (off, on) exporter ms per second.
pub fn alternated(duration: Duration, runs: usize) -> Option<(f64, f64)> {
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        off.push(run(None, duration)?);
        on.push(run(Some(Duration::from_millis(10)), duration)?);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Some((median(&mut off), median(&mut on)))
}
