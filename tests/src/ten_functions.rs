//! A workload of ten functions whose shares of a thread's time on a CPU
//! are known by construction, and the shares that `perf` and typhon-live
//! each measured of it: for the stacks' accuracy test
//! (`tests/tests/stacks_vs_perf.rs`) and the benchmark's accuracy row.
//!
//! Each round, `round` calls eight functions, two of which call one more;
//! each spins for its number of units of the same loop, so a function's
//! own share is its units over the round's. A function's *own* samples
//! are those in which it is the innermost of the ten (what it calls of
//! Rust's standard library counts as its own, as a person reads it); its
//! *total*, those in which it is on the stack at all.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

/// The ten functions: name, own units, units with what they call.
pub const FUNCTIONS: [(&str, u64, u64); 10] = [
    ("alpha", 200, 300),
    ("alpha_inner", 100, 100),
    ("beta", 150, 200),
    ("beta_inner", 50, 50),
    ("gamma", 120, 120),
    ("delta", 100, 100),
    ("epsilon", 80, 80),
    ("zeta", 60, 60),
    ("eta", 50, 50),
    ("theta", 40, 40),
];

/// Units of one round.
pub const ROUND: u64 = 950;
/// Iterations of the loop a unit is.
const UNIT: u64 = 64;

#[inline(always)]
fn spin(units: u64, mut x: u64) -> u64 {
    for _ in 0..units * UNIT {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
    x
}

#[inline(never)]
fn alpha(x: u64) -> u64 {
    alpha_inner(spin(200, x))
}
#[inline(never)]
fn alpha_inner(x: u64) -> u64 {
    spin(100, x)
}
#[inline(never)]
fn beta(x: u64) -> u64 {
    beta_inner(spin(150, x))
}
#[inline(never)]
fn beta_inner(x: u64) -> u64 {
    spin(50, x)
}
#[inline(never)]
fn gamma(x: u64) -> u64 {
    spin(120, x)
}
#[inline(never)]
fn delta(x: u64) -> u64 {
    spin(100, x)
}
#[inline(never)]
fn epsilon(x: u64) -> u64 {
    spin(80, x)
}
#[inline(never)]
fn zeta(x: u64) -> u64 {
    spin(60, x)
}
#[inline(never)]
fn eta(x: u64) -> u64 {
    spin(50, x)
}
#[inline(never)]
fn theta(x: u64) -> u64 {
    spin(40, x)
}

/// One round: each function once.
#[inline(never)]
pub fn round(x: u64) -> u64 {
    let x = alpha(x);
    let x = beta(x);
    let x = gamma(x);
    let x = delta(x);
    let x = epsilon(x);
    let x = zeta(x);
    let x = eta(x);
    theta(x)
}

/// Rounds until `until`; how many.
pub fn run(until: Instant) -> u64 {
    let (mut rounds, mut x) = (0, 1);
    while Instant::now() < until {
        x = round(x);
        rounds += 1;
    }
    black_box(x);
    rounds
}

/// Which of the ten a frame's text names (`…::ten_functions::alpha`, with
/// or without a place or an offset after it; `alpha` alone where the
/// debug information has line tables only, which name no path).
pub fn function_of(frame: &str) -> Option<&'static str> {
    let path = frame.split([' ', '+']).next()?;
    let name = path.rsplit("::").next()?;
    let ours = path.contains("ten_functions::") || !path.contains("::");
    (ours)
        .then(|| FUNCTIONS.iter().map(|f| f.0).find(|&f| f == name))
        .flatten()
}

/// Shares of samples, in percent: own and total per function.
#[derive(Debug, Default, PartialEq)]
pub struct Shares {
    /// Samples counted: those with one of the ten on their stack.
    pub samples: u64,
    /// Per function: own and total, in percent of `samples`.
    pub of: BTreeMap<&'static str, (f64, f64)>,
}

impl Shares {
    /// Shares of `stacks`, each a sample's frames' texts, innermost
    /// first. A sample with none of the ten on it (the loop between two
    /// calls, the thread's start) is not counted.
    pub fn of<'a>(stacks: impl Iterator<Item = Vec<&'a str>>) -> Shares {
        let mut counts: BTreeMap<&'static str, (u64, u64)> = BTreeMap::new();
        let mut samples = 0;
        for stack in stacks {
            let functions: Vec<&'static str> =
                stack.iter().filter_map(|f| function_of(f)).collect();
            let Some(&innermost) = functions.first() else {
                continue;
            };
            samples += 1;
            counts.entry(innermost).or_default().0 += 1;
            let mut seen: Vec<&str> = Vec::new();
            for f in functions {
                if !seen.contains(&f) {
                    seen.push(f);
                    counts.entry(f).or_default().1 += 1;
                }
            }
        }
        let percent = |n: u64| n as f64 * 100.0 / samples.max(1) as f64;
        Shares {
            samples,
            of: (counts.into_iter())
                .map(|(f, (own, total))| (f, (percent(own), percent(total))))
                .collect(),
        }
    }

    /// The shares by construction.
    pub fn expected() -> Shares {
        let percent = |units: u64| units as f64 * 100.0 / ROUND as f64;
        Shares {
            samples: 0,
            of: (FUNCTIONS.iter())
                .map(|&(f, own, total)| (f, (percent(own), percent(total))))
                .collect(),
        }
    }

    /// The largest difference from `other`, in points: of the own shares
    /// and of the totals, over the ten functions.
    pub fn farthest_from(&self, other: &Shares) -> (f64, f64) {
        let mut far = (0.0f64, 0.0f64);
        for &(f, _, _) in &FUNCTIONS {
            let a = self.of.get(f).copied().unwrap_or_default();
            let b = other.of.get(f).copied().unwrap_or_default();
            far.0 = far.0.max((a.0 - b.0).abs());
            far.1 = far.1.max((a.1 - b.1).abs());
        }
        far
    }
}

/// The stacks of `perf script`'s output (a header line per sample, then
/// its frames one a line, innermost first: `address symbol+offset
/// (module)`), each as its frames' symbols.
pub fn perf_stacks(script: &str) -> impl Iterator<Item = Vec<&str>> {
    script.split("\n\n").map(|sample| {
        (sample.lines().skip(1))
            .filter_map(|line| {
                let mut words = line.trim().splitn(2, ' ');
                let _address = words.next()?;
                words.next()
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_told_and_shares_counted_as_a_person_reads_them() {
        assert_eq!(
            function_of("typhon_live_tests::ten_functions::alpha_inner+0x1d (/x/y)"),
            Some("alpha_inner")
        );
        assert_eq!(
            function_of("typhon_live_tests::ten_functions::beta (ten_functions.rs:52)"),
            Some("beta")
        );
        assert_eq!(function_of("alpha (ten_functions.rs:48)"), Some("alpha"));
        assert_eq!(function_of("core::hint::black_box"), None);
        assert_eq!(function_of("other::alpha"), None);
        let script = "t 1 1.0: cpu-clock:\n\
            \t 5555 core::hint::black_box+0x1 (/b)\n\
            \t 5556 typhon_live_tests::ten_functions::alpha_inner+0x2 (/b)\n\
            \t 5557 typhon_live_tests::ten_functions::alpha+0x3 (/b)\n\
            \n\
            t 1 1.1: cpu-clock:\n\
            \t 5558 typhon_live_tests::ten_functions::alpha+0x9 (/b)\n\
            \n\
            t 1 1.2: cpu-clock:\n\
            \t 5559 [unknown] (/b)\n";
        let shares = Shares::of(perf_stacks(script));
        assert_eq!(shares.samples, 2);
        assert_eq!(shares.of["alpha"], (50.0, 100.0));
        assert_eq!(shares.of["alpha_inner"], (50.0, 50.0));
        let expected = Shares::expected();
        let sum: f64 = expected.of.values().map(|s| s.0).sum();
        assert!((sum - 100.0).abs() < 1e-9);
        assert!(expected.of.values().all(|s| s.0 >= 2.0));
    }
}

/// What one run measured of the workload: typhon-live's shares, perf's,
/// and typhon-live's samples' make-up.
#[derive(Debug)]
pub struct Measured {
    /// typhon-live's shares, from its trace file.
    pub ours: Shares,
    /// perf's, from `perf record --call-graph dwarf`.
    pub perf: Shares,
    /// typhon-live's samples of the workload's lane, those cut, and
    /// those walked by frame pointers.
    pub samples: (u64, u64, u64),
    /// Rounds the workload ran.
    pub rounds: u64,
}

/// Runs the workload on a thread of its own for `seconds`, sampled at
/// `hz` by typhon-live (with stack copies if `copies`) and by `perf
/// record -e cpu-clock --call-graph dwarf -t TID` at once; `Err` says why
/// it could not (`perf` not installed, or refused).
pub fn against_perf(seconds: u64, hz: u32, copies: bool) -> Result<Measured, String> {
    use std::process::{Command, Stdio};
    use std::time::Duration;

    use typhon_live_core::{LaneKind, Metadata};
    use typhon_live_std::config::ProfilerConfig;
    use typhon_live_std::{runtime, Profiler};

    let perf_here = Command::new("perf").arg("--version").output();
    if !perf_here.is_ok_and(|o| o.status.success()) {
        return Err("perf not installed".into());
    }
    let dir = std::env::temp_dir();
    let id = std::process::id();
    let trace = dir.join(format!("typhon-live-ten-functions-{id}.tlt"));
    let perf_data = dir.join(format!("typhon-live-ten-functions-{id}.perf"));
    let config = ProfilerConfig {
        trace: Some(trace.clone()),
        stack_sample_hz: hz,
        stack_copies: copies,
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).map_err(|e| e.to_string())?;
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<Instant>();
    let workload = std::thread::spawn(move || {
        runtime::register_thread("workload", LaneKind::Worker);
        let tid = std::fs::read_link("/proc/thread-self").ok().and_then(|p| {
            let tid = p.file_name()?.to_str()?.parse::<u32>().ok()?;
            Some(tid)
        });
        let _ = tid_tx.send(tid);
        go_rx.recv().map(run).unwrap_or(0)
    });
    let tid = tid_rx
        .recv()
        .ok()
        .flatten()
        .ok_or("no thread id (no /proc here)")?;
    let perf = Command::new("perf")
        .args(["record", "-e", "cpu-clock", "-F", &hz.to_string()])
        .args(["--call-graph", "dwarf", "-t", &tid.to_string(), "-o"])
        .arg(&perf_data)
        .args(["--", "sleep", &(seconds + 1).to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("perf record: {e}"))?;
    // perf attaches within a few hundred ms; the workload runs inside its
    // second of slack.
    std::thread::sleep(Duration::from_millis(500));
    let _ = go_tx.send(Instant::now() + Duration::from_secs(seconds));
    let rounds = workload.join().unwrap_or(0);
    let recorded = perf.wait_with_output().map_err(|e| e.to_string())?;
    // The samples and symbols still on their way.
    std::thread::sleep(Duration::from_millis(700));
    profiler.stop().map_err(|e| e.to_string())?;
    let script = Command::new("perf")
        .args(["script", "-F", "comm,tid,time,ip,sym", "-i"])
        .arg(&perf_data)
        .output()
        .map_err(|e| format!("perf script: {e}"))?;
    let _ = std::fs::remove_file(&perf_data);
    let script = String::from_utf8_lossy(&script.stdout).into_owned();
    let perf = Shares::of(perf_stacks(&script));
    if perf.samples == 0 {
        // It ends on a SIGTERM of its own once `sleep` does, whatever it
        // recorded: what it says tells whether it was refused.
        let _ = std::fs::remove_file(&trace);
        return Err(format!(
            "perf recorded nothing ({}): {}",
            recorded.status,
            String::from_utf8_lossy(&recorded.stderr).trim()
        ));
    }

    let bytes = std::fs::read(&trace).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&trace);
    let (ours, samples) = our_shares(&bytes);
    Ok(Measured {
        ours,
        perf,
        samples,
        rounds,
    })
}

/// typhon-live's shares of the workload's lane in a trace file, and its
/// samples there: all, cut, walked by frame pointers.
fn our_shares(trace: &[u8]) -> (Shares, (u64, u64, u64)) {
    use typhon_live_core::Unwinding;
    use typhon_live_reader::{frames, Reader, Update};

    let mut reader = Reader::new();
    let mut taken = Vec::new();
    let _ = frames(trace, |frame| {
        reader.read(frame, |state, update| {
            if let Update::StackSample(sample) = update {
                let lane = state.lanes().get(&sample.lane);
                let name = lane.map(|l| state.names().show(l.info.name).into_owned());
                if name.as_deref() == Some("workload") {
                    taken.push(sample);
                }
            }
        })
    });
    let state = reader.state();
    let stacks = state.stacks();
    let texts: Vec<Vec<String>> = (taken.iter())
        .map(|sample| {
            (stacks.frames(sample.node))
                .map(|frame| match frame {
                    Ok(name) => state.names().show(name).into_owned(),
                    Err(address) => format!("{address:#x}"),
                })
                .collect()
        })
        .collect();
    let shares = Shares::of(texts.iter().map(|f| f.iter().map(String::as_str).collect()));
    let cut = taken.iter().filter(|s| s.cut).count() as u64;
    let by_pointers = (taken.iter())
        .filter(|s| s.unwinding == Unwinding::FramePointers)
        .count() as u64;
    (shares, (taken.len() as u64, cut, by_pointers))
}
