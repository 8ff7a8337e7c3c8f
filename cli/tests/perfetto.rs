//! Perfetto traces from the command: `record` writing one live (killed
//! midway, or to the session's end) and `convert --to perfetto`, read back
//! by an independent decoder (`reader`: perfetto_protos, read the way
//! trace_processor reads a trace). Waits are bounded.

use std::path::Path;
use std::process::{Output, Stdio};

mod common;
#[path = "../../convert/tests/reader/mod.rs"]
mod reader;

use common::{record_then_kill, spawn_demo, spawn_demo_with, temp, typhon};
use reader::{read, Read};

fn convert(trace: &Path, output: &Path) -> Output {
    typhon()
        .arg("convert")
        .arg(trace)
        .args(["--to", "perfetto", "-o"])
        .arg(output)
        .output()
        .unwrap()
}

/// The slices of `read` as comparable tuples.
fn slices(read: &Read) -> Vec<(String, String, u64, u64, usize)> {
    let mut all: Vec<_> = read
        .slices
        .iter()
        .map(|s| (s.track.clone(), s.name.clone(), s.start, s.end, s.depth))
        .collect();
    all.sort();
    all
}

#[test]
fn a_live_recording_holds_what_the_processs_own_trace_file_holds() {
    // The demo waits for its viewer, and writes its own trace file too:
    // both readers get every Block from the start.
    let own = temp("own.tlt");
    let (mut demo, addr) = spawn_demo_with(&[
        "--duration",
        "2",
        "--threads",
        "2",
        "--live-wait",
        "20000",
        "--trace",
        own.to_str().unwrap(),
    ]);
    // Not a .pftrace name: the flag decides.
    let live = temp("live.trace");
    let record = typhon()
        .args([
            "record",
            &addr,
            "--format",
            "perfetto",
            "--duration",
            "60",
            "-o",
        ])
        .arg(&live)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&record.stderr);
    assert!(record.status.success(), "{stderr}");
    assert!(stderr.contains("(session ended)"), "{stderr}");
    assert!(demo.wait().unwrap().success());

    let converted = temp("own.pftrace");
    let out = convert(&own, &converted);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (live, file) = (
        read(&std::fs::read(&live).unwrap()),
        read(&std::fs::read(&converted).unwrap()),
    );
    let (live_slices, file_slices) = (slices(&live), slices(&file));
    assert!(file_slices.len() > 500, "{}", file_slices.len());
    if live.dropped_before.is_empty() {
        assert_eq!(live_slices, file_slices);
    } else {
        // A loaded machine made the viewer drop frames: what it has is
        // still the process's.
        assert!(live_slices
            .iter()
            .all(|s| file_slices.binary_search(s).is_ok()));
    }
    assert_eq!(live.process, file.process);
    let threads = |r: &Read| {
        let mut t: Vec<String> = r
            .tracks
            .values()
            .filter(|t| t.1 == "thread")
            .map(|t| t.0.clone())
            .collect();
        t.sort();
        t
    };
    assert_eq!(threads(&live), threads(&file));
    assert!(threads(&live).len() >= 3, "{:?}", threads(&live));
    assert!(file
        .slices
        .iter()
        .any(|s| s.track == "Ticks" && s.name.contains("tick")));
    assert!(file.counters.len() > 50);
    for path in [&own, &converted] {
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn a_perfetto_recording_killed_midway_is_a_valid_trace() {
    let (mut demo, addr) = spawn_demo("8", "2");
    let trace = temp("killed.pftrace");
    record_then_kill(&addr, &trace, 64 << 10);
    // The whole file parses as one Trace; its slices pair and nest.
    let read = read(&std::fs::read(&trace).unwrap());
    assert!(read.slices.len() > 200, "{}", read.slices.len());
    assert!(read.slices.iter().any(|s| s.depth > 0));
    assert!(read.slices.iter().any(|s| s.track == "Ticks"));
    let _ = demo.kill();
    let _ = demo.wait();
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn a_damaged_file_converts_with_its_losses_marked_and_said() {
    let tlt = temp("damaged.tlt");
    let status = typhon()
        .args([
            "demo",
            "--no-view",
            "--live",
            "0",
            "--duration",
            "1",
            "--threads",
            "1",
        ])
        .arg("--trace")
        .arg(&tlt)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let mut bytes = std::fs::read(&tlt).unwrap();
    // One byte flipped in the middle (a frame's checksum fails: it is
    // skipped, a sequence gap), and the last frame cut.
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    bytes.truncate(bytes.len() - 5);
    std::fs::write(&tlt, &bytes).unwrap();

    let pftrace = temp("damaged.pftrace");
    let out = convert(&tlt, &pftrace);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("damaged places"), "{stderr}");
    assert!(stderr.contains("lost 1 frames"), "{stderr}");
    let read = read(&std::fs::read(&pftrace).unwrap());
    assert_eq!(read.dropped_before.len(), 1);
    assert!(read.instants.iter().any(|i| i.name == "data lost"));
    assert!(read.slices.len() > 100);

    // Not a trace at all: named, and no output left behind.
    std::fs::write(&tlt, b"not a trace, not at all").unwrap();
    let out = convert(&tlt, &pftrace);
    assert_eq!(out.status.code(), Some(4));
    assert!(!pftrace.exists());
    let _ = std::fs::remove_file(&tlt);
}
