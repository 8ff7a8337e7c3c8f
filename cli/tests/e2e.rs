//! The command end to end: the demo exporting on an ephemeral loopback
//! port, recorded, inspected and converted; and `attach` against peers that
//! misbehave. Waits are bounded.

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

mod common;

use common::{record_then_kill, spawn_demo, spawn_demo_with, temp, typhon, BIN};

/// Runs `command`, which must succeed; its standard output.
fn run_ok(command: &mut Command) -> String {
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// `inspect` on a file that must read cleanly; its report.
fn inspect_ok(trace: &std::path::Path) -> String {
    run_ok(typhon().arg("inspect").arg(trace))
}

/// `convert --to chrome` of a trace into `temp(name)`: its events, and the
/// JSON file's path.
fn to_chrome(trace: &std::path::Path, name: &str) -> (Vec<serde_json::Value>, PathBuf) {
    let json_path = temp(name);
    run_ok(
        typhon()
            .arg("convert")
            .arg(trace)
            .args(["--to", "chrome", "-o"])
            .arg(&json_path),
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap().clone();
    (events, json_path)
}

#[test]
fn demo_record_inspect_convert() {
    // LZ4 on every Block: `record` must keep each frame's flags (its codec).
    let (mut demo, addr) =
        spawn_demo_with(&["--duration", "4", "--threads", "2", "--compression", "lz4"]);

    let trace = temp("demo.tlt");
    let record = typhon()
        .args(["record", &addr, "-o"])
        .arg(&trace)
        .args(["--duration", "30"])
        .output()
        .unwrap();
    assert!(
        record.status.success(),
        "record failed: {}",
        String::from_utf8_lossy(&record.stderr)
    );
    assert!(String::from_utf8_lossy(&record.stderr).contains("session ended"));
    assert!(demo.wait().unwrap().success());

    let report = inspect_ok(&trace);
    for expected in [
        "typhon-live demo",
        "Transform",
        "shutdown    clean",
        "Sim ",
        "worker-0",
        "0 missing by sequence number",
        "blocks lz4",
    ] {
        assert!(
            report.contains(expected),
            "{expected:?} missing from\n{report}"
        );
    }

    let (events, json_path) = to_chrome(&trace, "demo.json");
    let has = |ph: &str, name: &str| events.iter().any(|e| e["ph"] == ph && e["name"] == name);
    assert!(
        has("X", "Tick") && has("X", "Sim.Physics") && has("X", "Query<Collider>"),
        "spans with their names"
    );
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "Sim"));
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["args"]["name"] == "worker-1"));
    assert!(has("C", "memory.bytes"), "the memory gauge");
    assert!(events
        .iter()
        .filter(|e| e["ph"] == "X")
        .all(|e| e["ts"].is_number() && e["dur"].is_number()));
    for path in [&trace, &json_path] {
        let _ = std::fs::remove_file(path);
    }
}

fn attach(addr: &str) -> (i32, String, Duration) {
    let started = Instant::now();
    let out = typhon()
        .args(["attach", addr, "--json", "--duration", "30"])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

#[test]
fn demo_via_tracing_names_its_spans_through_the_layer() {
    let trace = temp("via-tracing.tlt");
    let demo = typhon()
        .args(["demo", "--via-tracing", "--no-view", "--live", "0"])
        .args(["--duration", "2", "--threads", "2", "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        demo.status.success(),
        "{}",
        String::from_utf8_lossy(&demo.stderr)
    );
    inspect_ok(&trace);
    let (events, json_path) = to_chrome(&trace, "via-tracing.json");
    let spans = |name: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == name)
            .count()
    };
    // Each Tick runs every system once, each system one query per worker.
    let ticks = spans("Tick");
    assert!(ticks > 10, "{ticks} ticks in 2 s");
    assert!(spans("Sim.Physics").abs_diff(ticks) <= 1);
    let queries: usize = [
        "Query<Transform, Velocity>",
        "Query<Collider>",
        "Query<Brain, Transform>",
        "Query<Skeleton>",
    ]
    .iter()
    .map(|q| spans(q))
    .sum();
    assert!(queries.abs_diff(10 * ticks) <= 10, "{queries} queries");
    for path in [&trace, &json_path] {
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn attach_to_nothing_says_so() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, stderr, took) = attach(&format!("127.0.0.1:{port}"));
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    // Three tries, two seconds apart.
    assert!(took >= Duration::from_secs(4), "{took:?}");
}

#[test]
fn attach_to_a_peer_sending_garbage_says_it_is_not_typhon() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nhello");
        std::thread::sleep(Duration::from_secs(2));
    });
    let (code, stderr, _) = attach(&addr);
    assert_eq!(code, 4, "{stderr}");
    assert!(stderr.contains("is not a typhon-live stream"), "{stderr}");
    server.join().unwrap();
}

#[test]
fn attach_to_a_peer_that_closes_mid_frame_says_the_connection_was_lost() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        // A real Init, then half of a frame, then gone for good.
        let mut out = vec![0u8; 4096];
        let names: typhon_live_core::NameTable<4, 64> = typhon_live_core::NameTable::new();
        let n = typhon_live_core::init::write_init(
            &mut out,
            0,
            &typhon_live_core::Metadata::default(),
            &names,
            std::iter::empty(),
        )
        .unwrap();
        conn.write_all(&out[..n]).unwrap();
        conn.write_all(&out[..n / 2]).unwrap();
        drop(conn);
        drop(listener);
    });
    let (code, stderr, _) = attach(&addr);
    server.join().unwrap();
    assert_eq!(code, 5, "{stderr}");
    assert!(
        stderr.contains(&format!("lost the connection to {addr}")) && stderr.contains("mid-frame"),
        "{stderr}"
    );
}

#[test]
fn a_truncated_trace_is_read_to_its_last_frame_and_reported() {
    let bytes = {
        let mut out = vec![0u8; 4096];
        let names: typhon_live_core::NameTable<4, 64> = typhon_live_core::NameTable::new();
        let n = typhon_live_core::init::write_init(
            &mut out,
            0,
            &typhon_live_core::Metadata::default(),
            &names,
            std::iter::empty(),
        )
        .unwrap();
        let mut file = out[..n].to_vec();
        file.extend(&out[..n / 2]);
        file
    };
    let path = temp("cut.tlt");
    std::fs::write(&path, &bytes).unwrap();
    let out = typhon().arg("inspect").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("at byte"),
        "damage with its offset"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let missing = typhon()
        .args(["inspect", "/nonexistent/trace.tlt"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/trace.tlt"));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_recording_killed_midway_is_a_valid_trace_and_bad_outputs_are_named() {
    let (mut demo, addr) = spawn_demo("6", "1");
    let trace = temp("killed.tlt");
    record_then_kill(&addr, &trace, 4096);
    let report = inspect_ok(&trace);
    assert!(
        report.contains("shutdown    none") && !report.contains("damage"),
        "{report}"
    );

    let convert = typhon()
        .arg("convert")
        .arg(&trace)
        .args(["--to", "chrome", "-o", "/nonexistent-dir/out.json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&convert.stderr);
    assert_eq!(convert.status.code(), Some(6), "{stderr}");
    assert!(
        stderr.contains("/nonexistent-dir/out.json") && stderr.lines().count() == 1,
        "{stderr}"
    );
    let _ = demo.kill();
    let _ = demo.wait();
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn the_demos_compression_setting_shows_in_inspect_per_codec() {
    for (setting, shown, absent) in [
        ("lz4", "blocks lz4", "blocks packed"),
        ("off", "blocks packed", "blocks lz4"),
    ] {
        let trace = temp(&format!("codec-{setting}.tlt"));
        run_ok(
            typhon()
                .args(["demo", "--no-view", "--live", "0", "--duration", "2"])
                .args(["--threads", "2", "--compression", setting, "--trace"])
                .arg(&trace),
        );
        let report = inspect_ok(&trace);
        let line = report
            .lines()
            .find(|l| l.starts_with(shown))
            .unwrap_or_else(|| panic!("no {shown:?} line in\n{report}"));
        assert!(!report.contains(absent), "{setting}: {report}");
        // "blocks lz4   N blocks, E events: P bytes packed (...), W on the wire (...), ratio R"
        let ratio: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        if setting == "off" {
            assert_eq!(ratio, 1.0, "{line}");
        } else {
            assert!(ratio > 0.0 && ratio < 1.2, "{line}");
        }
        let (events, json) = to_chrome(&trace, &format!("codec-{setting}.json"));
        assert!(events.iter().any(|e| e["ph"] == "X" && e["name"] == "Tick"));
        for path in [&trace, &json] {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[test]
fn the_binary_does_not_carry_the_rings() {
    // The process's lanes are a 160 MiB `static` of zeroes: in `.bss`, paged
    // in as threads record. A non-zero initial value anywhere in a ring
    // would move all of it into the binary's initialized data. (The file's
    // size says little: a debug build's DWARF alone is over 100 MiB.)
    use object::{Object, ObjectSection, SectionKind};
    let bytes = std::fs::read(BIN).unwrap();
    let binary = object::File::parse(&*bytes).unwrap();
    let data: u64 = binary
        .sections()
        .filter(|s| s.kind() == SectionKind::Data)
        .map(|s| s.size())
        .sum();
    assert!(
        data < 16 << 20,
        "typhon-live has {data} bytes of initialized data"
    );
}
