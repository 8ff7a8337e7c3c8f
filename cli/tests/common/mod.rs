//! What the end-to-end test files share: the binary, scratch paths, and
//! the demo launcher.
#![allow(dead_code)] // each test file uses its own part

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_typhon-live");

pub fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("typhon-live-e2e-{}-{name}", std::process::id()))
}

/// Starts `demo --no-view --live 0` and returns it with the address it
/// printed.
pub fn spawn_demo(duration: &str, threads: &str) -> (std::process::Child, String) {
    spawn_demo_with(&["--duration", duration, "--threads", threads])
}

/// Starts `demo --no-view --live 0` with more arguments.
pub fn spawn_demo_with(args: &[&str]) -> (std::process::Child, String) {
    let mut demo = Command::new(BIN)
        .args(["demo", "--no-view", "--live", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("demo starts");
    let mut line = String::new();
    BufReader::new(demo.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "demo printed {line:?}");
    (demo, addr)
}

/// Records `addr` into `path` until the file holds `min_len` bytes (or 20
/// s pass), then kills the recorder: as hard an interruption as there is.
pub fn record_then_kill(addr: &str, path: &std::path::Path, min_len: u64) {
    let mut record = Command::new(BIN)
        .args(["record", addr, "-o"])
        .arg(path)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(path).map_or(0, |m| m.len()) < min_len && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    record.kill().unwrap();
    record.wait().unwrap();
}
