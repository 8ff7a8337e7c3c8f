//! What the end-to-end test files share: the binary, scratch paths, and
//! the demo launcher.
#![allow(dead_code)] // each test file uses its own part

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

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
