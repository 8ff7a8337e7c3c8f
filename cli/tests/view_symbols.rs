//! `typhon-live view FILE --symbols DIR`: a trace of a stripped binary,
//! whose sampled stacks its own process could name only by address, is
//! named from the unstripped binary, found by the build id its module map
//! gives (FORMAT.md, "Stacks"). The binary is this crate's own, stripped
//! with binutils' `strip` (which gcc brings), run as the demo.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{skipped, temp, typhon, BIN};

/// `view FILE --json [ARGS]`'s summary.
fn summary(file: &Path, args: &[&str]) -> serde_json::Value {
    let out = typhon()
        .arg("view")
        .arg(file)
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The hottest functions' names in a summary.
fn code(summary: &serde_json::Value) -> Vec<String> {
    let code = summary["code"].as_array().cloned().unwrap_or_default();
    code.iter()
        .map(|f| f["frame"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_stripped_binary_s_stacks_are_named_from_its_debug_file() {
    if !cfg!(target_os = "linux") {
        println!("stacks are sampled on Linux only");
        return;
    }
    if !Command::new("strip")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return skipped("strip (binutils) not installed");
    }
    let dir = temp("symbols");
    let debug = dir.join("debug");
    std::fs::create_dir_all(&debug).unwrap();
    let stripped = dir.join("stripped");
    std::fs::copy(BIN, debug.join("typhon-live")).unwrap();
    std::fs::copy(BIN, &stripped).unwrap();
    let strip = Command::new("strip").arg(&stripped).status().unwrap();
    assert!(strip.success());

    let trace = dir.join("stripped.tlt");
    let mut demo = Command::new(&stripped);
    common::without_settings(&mut demo);
    let mut demo = demo
        .args(["demo", "--no-view", "--live", "0", "--duration", "3"])
        .args(["--stack-sample-hz", "1000", "--trace"])
        .arg(&trace)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while demo.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the demo did not end");
        std::thread::sleep(Duration::from_millis(50));
    }

    let without = code(&summary(&trace, &[]));
    if without.is_empty() {
        // No stack sampled: perf_event_open refused (paranoid above 2).
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(paranoid.is_ok_and(|p| p.trim().parse::<i32>().is_ok_and(|p| p > 2)));
        return skipped("perf_event_open refused here");
    }
    eprintln!("stripped, by itself: {without:#?}");
    // Its own code has no name in its own process.
    assert!(without.iter().all(|f| !f.contains("typhon_live")));

    let named = summary(&trace, &["--symbols", debug.to_str().unwrap()]);
    let with = code(&named);
    eprintln!("named from {}: {with:#?}", debug.display());
    let notice = named["notice"].as_str().unwrap_or_default();
    assert!(notice.contains("code addresses named from"), "{notice}");
    // The demo's own work is named, with its place (a build of line
    // tables only names a function without its path).
    assert!(with.iter().any(|f| f.contains(" (demo.rs:")), "{with:#?}");
    // The hottest function is named, not an address.
    assert!(!with[0].starts_with("0x"), "{with:#?}");
    // Named the same stacks: the stream read as whole with the names.
    assert_eq!(named["frames_dropped"], 0);
    assert_eq!(named["frames_damaged"], 0);

    // A directory that is not there is an error that names it.
    let out = typhon()
        .arg("view")
        .arg(&trace)
        .args(["--json", "--symbols"])
        .arg(dir.join("nowhere"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("nowhere") && said.contains("cannot be read"),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
