//! `-- --relay-attack`: how long a normal scrape of the relay's
//! `/metrics` takes, alone and while 500 slowloris clients, 50 clients
//! that never read their answer and a client sending a 1 MiB head try to
//! hold the port (issue 24's attack). The relay runs as a process of its
//! own, fed by a demo, so that `/metrics` holds a real source's series.
//!
//! Needs the `typhon-live` binary beside this one:
//! `cargo build --release -p typhon-live-cli` first.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::time::Duration;

use typhon_live_tests::http_attack::{scrape, Attack};

/// Scrapes per measurement.
const SCRAPES: usize = 50;
/// A scrape that waits longer has failed.
const WAIT: Duration = Duration::from_secs(10);

/// Kills the child when dropped.
pub(crate) struct Running(Child);

impl Running {
    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `typhon-live ARGS` and returns it with the rest of the first
/// stdout line that starts with `prefix`.
pub(crate) fn start(args: &[&str], prefix: &str) -> Option<(Running, String)> {
    let mut child = crate::relay::typhon_live()?
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let lines = BufReader::new(child.stdout.take()?).lines();
    let child = Running(child);
    for line in lines {
        if let Some(rest) = line.ok()?.trim().strip_prefix(prefix) {
            return Some((child, rest.to_owned()));
        }
    }
    None
}

/// Median, 90th percentile and largest of `SCRAPES` scrapes, in ms, and
/// how many failed.
fn measure(addr: SocketAddr) -> (f64, f64, f64, usize) {
    let mut took = Vec::with_capacity(SCRAPES);
    let mut failed = 0;
    for _ in 0..SCRAPES {
        match scrape(addr, "/metrics", WAIT) {
            Ok((status, t)) if status == "HTTP/1.1 200 OK" => took.push(t.as_secs_f64() * 1e3),
            _ => failed += 1,
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    took.sort_by(f64::total_cmp);
    let at = |q: f64| took.get(((took.len() as f64 - 1.0) * q) as usize).copied();
    (
        at(0.5).unwrap_or(f64::NAN),
        at(0.9).unwrap_or(f64::NAN),
        took.last().copied().unwrap_or(f64::NAN),
        failed,
    )
}

pub fn print() {
    let Some((_demo, source)) = start(&["demo", "--no-view", "--live", "0"], "") else {
        return;
    };
    let source = source.rsplit(' ').next().unwrap_or("").to_owned();
    let args = [
        "relay",
        "--source",
        &format!("demo={source}"),
        "--metrics",
        "127.0.0.1:0",
    ];
    let Some((_relay, metrics)) = start(&args, "typhon-live relay: metrics on http://") else {
        return;
    };
    let Ok(addr) = metrics.trim_end_matches("/metrics").parse::<SocketAddr>() else {
        return;
    };
    // Let the demo's series appear.
    std::thread::sleep(Duration::from_secs(2));
    println!("relay /metrics: {SCRAPES} scrapes, 100 ms apart, each on a new connection");
    println!("| while | p50 | p90 | max | failed |");
    println!("|---|---:|---:|---:|---:|");
    let row = |what: &str, (p50, p90, max, failed): (f64, f64, f64, usize)| {
        println!("| {what} | {p50:.2} ms | {p90:.2} ms | {max:.2} ms | {failed} |");
    };
    row("nothing else", measure(addr));
    let attack = Attack {
        slowloris: 500,
        non_readers: 50,
        huge_heads: 1,
    };
    let attackers = attack.start(addr, "/metrics");
    row("500 slowloris, 50 non-readers, a 1 MiB head", measure(addr));
    drop(attackers);
}
