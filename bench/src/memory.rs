//! Memory by lane and allocation sites (issue 40): what counting and
//! sampling cost an allocation-heavy program, beside Tracy's memory
//! profiling on the same program; how close the sites' estimates come
//! to the truth; how soon the demo's leak is the top growing site.
//!
//! The program runs once per allocator in a binary of its own
//! (`alloc-system`, `alloc-tracking`, `alloc-tracy`: `cargo build
//! --release -p typhon-live-bench --bins`), runs alternated, medians.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use typhon_live_core::Decoder;
use typhon_live_model::Model;

/// A run of the workload: which binary, and its sampling interval.
#[derive(Clone, Copy)]
pub struct Run {
    binary: &'static str,
    sample_bytes: u64,
}

/// The runs, in the order they alternate: System, counted, sampled,
/// Tracy.
pub const RUNS: [Run; 4] = [
    Run {
        binary: "alloc-system",
        sample_bytes: 0,
    },
    Run {
        binary: "alloc-tracking",
        sample_bytes: 0,
    },
    Run {
        binary: "alloc-tracking",
        sample_bytes: typhon_live_std::allocation_sites::DEFAULT_MEAN,
    },
    Run {
        binary: "alloc-tracy",
        sample_bytes: 0,
    },
];

/// A workload binary beside this one; `None`, said, when not built.
fn sibling(name: &str) -> Option<Command> {
    crate::relay::built_beside(name, "cargo build --release -p typhon-live-bench --bins")
}

/// One run's wall time, ns.
fn once(run: Run, iterations: usize) -> Option<f64> {
    let output = sibling(run.binary)?
        .args([
            iterations.to_string(),
            "2".into(),
            run.sample_bytes.to_string(),
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}

/// Median wall times of each of [`RUNS`], `runs` times each, alternated.
pub fn workload(runs: usize, iterations: usize) -> Option<[f64; 4]> {
    let mut all: [Vec<f64>; 4] = Default::default();
    for _ in 0..runs {
        for (at, run) in RUNS.into_iter().enumerate() {
            all[at].push(once(run, iterations)?);
        }
    }
    Some(all.map(|mut v| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }))
}

/// Per site kept (and the churning one): its name, true and estimated
/// live bytes, after `seconds` of allocation.
pub fn accuracy(seconds: u64) -> Option<Vec<(String, u64, u64)>> {
    let output = sibling("alloc-tracking")?
        .args(["accuracy", &seconds.to_string()])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let sites: Vec<(String, u64, u64)> = text
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let name = parts.next()?.to_owned();
            Some((
                name,
                parts.next()?.parse().ok()?,
                parts.next()?.parse().ok()?,
            ))
        })
        .collect();
    (!sites.is_empty()).then_some(sites)
}

/// The demo leaking `per_second` bytes from `cache_replay_frame`,
/// watched live by a view model for `seconds`: when its site first led
/// the growing ones (s after the demo started), and the share of the
/// summaries after that in which it led.
pub fn leak_found(per_second: u64, seconds: u64) -> Option<(f64, f64)> {
    let mut demo = crate::relay::typhon_live()?
        .args(["demo", "--no-view", "--live", "0", "--threads", "2"])
        .args(["--leak", &per_second.to_string()])
        .args(["--duration", &seconds.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    let mut line = String::new();
    BufReader::new(demo.stdout.take()?)
        .read_line(&mut line)
        .ok()?;
    let addr = line.trim().rsplit(' ').next()?.to_owned();
    let mut stream = std::net::TcpStream::connect(&addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .ok()?;
    let mut model = Model::default();
    let mut buf = vec![0u8; 16 << 20];
    let mut decoder = Decoder::new(&mut buf);
    let mut chunk = vec![0u8; 1 << 16];
    let (mut found, mut led, mut looked) = (None::<f64>, 0u32, 0u32);
    let mut next_look = Instant::now();
    let end = started + Duration::from_secs(seconds);
    while Instant::now() < end {
        use std::io::Read;
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                let mut rest = &chunk[..n];
                while !rest.is_empty() {
                    let fed = decoder.feed(rest);
                    rest = &rest[fed..];
                    while let Ok(Some(frame)) = decoder.next() {
                        let _ = model.on_frame(&frame, started.elapsed());
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
        if Instant::now() >= next_look {
            next_look += Duration::from_millis(100);
            let leading = (model.summary(started.elapsed()).memory)
                .and_then(|m| m.sites_by_growth.into_iter().next())
                .is_some_and(|s| s.label.ends_with("cache_replay_frame"));
            if found.is_some() {
                looked += 1;
                led += u32::from(leading);
            } else if leading {
                found = Some(started.elapsed().as_secs_f64());
            }
        }
    }
    let _ = demo.kill();
    let _ = demo.wait();
    Some((found?, f64::from(led) / f64::from(looked.max(1))))
}
