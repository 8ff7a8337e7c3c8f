//! Issue 21: a Block that states four billion records in 58 bytes (its
//! columns have width 0), in place of a trace's second Block. Every
//! command refuses it, naming the format's bound, keeps every other event
//! of the stream, and finishes (or, live, keeps going) within 5 s and
//! 100 MiB of peak resident memory: measured by GNU time (`%M`, from the
//! kernel's accounting at exit) for a command that ends, and from
//! `/proc` (VmHWM) for the relay, which runs until it is stopped. Before
//! the bound, the relay passed 1.2 GiB and was killed, both converters
//! ran out of memory, and `inspect` and `view` ran for ever.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use typhon_live_core::Compression;
use typhon_live_tests::{exporter_stream, over_bound_block, replace_block};

mod common;

use common::{peak_rss, spawn_relay_with, temp, typhon, wait_for, BIN};

/// The Block replaced: the second (the Catch-up after the Init is 0).
const SEQ: u32 = 2;
const LIMIT: Duration = Duration::from_secs(5);
const MEMORY: u64 = 100 << 20;
/// What every command says of the crafted Block.
const REFUSAL: &str = "block record count 4294967295 is over the format's bound of 65536";

/// A realistic session of 6 ticks with its second Block replaced by the
/// crafted one, and the same session with that Block missing (a gap):
/// what a reader that refuses it keeps.
fn traces() -> (Vec<u8>, Vec<u8>) {
    let clean = exporter_stream(6, 4096, Compression::Off);
    (
        replace_block(&clean, SEQ, &over_bound_block(SEQ)),
        replace_block(&clean, SEQ, &[]),
    )
}

/// `typhon-live ARGS`, under GNU time where it is installed: the command,
/// and the file where time writes the peak RSS.
fn command(args: &[&str]) -> (Command, Option<PathBuf>) {
    if !cfg!(target_os = "linux") {
        common::skipped("peak memory is measured on Linux only (GNU time, /proc)");
    } else if !Path::new(GNU_TIME).exists() {
        common::skipped("GNU time not installed: the peak memory is not measured");
    } else {
        let report = temp(&format!("time-{}", args.join("-").replace('/', "_")));
        let mut command = Command::new(GNU_TIME);
        common::without_settings(&mut command);
        command.args(["-f", "%M", "-o"]).arg(&report).arg(BIN);
        command.args(args);
        return (command, Some(report));
    }
    let mut command = typhon();
    command.args(args);
    (command, None)
}

const GNU_TIME: &str = "/usr/bin/time";

/// Runs `command` to its end, which must come within [`LIMIT`] and
/// [`MEMORY`]: exit code, stdout and stderr.
fn finish(
    (mut command, report): (Command, Option<PathBuf>),
    what: &str,
) -> (Option<i32>, String, String) {
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (stdout, stderr) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if let Some(report) = report {
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        // GNU time's last line is %M, KiB; a line before it says how the
        // command ended if it did not exit 0.
        let kib: u64 = text
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("{what}: time said {text:?}"));
        assert!(kib << 10 < MEMORY, "{what}: peak RSS {kib} KiB");
        println!("{what}: peak RSS {kib} KiB, {:?}", started.elapsed());
        let _ = std::fs::remove_file(report);
    }
    (
        status.code(),
        stdout.join().unwrap(),
        stderr.join().unwrap(),
    )
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    })
}

/// The two traces written to scratch files.
fn trace_files(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let (crafted, gap) = traces();
    let (crafted_path, gap_path) = (
        temp(&format!("{name}.tlt")),
        temp(&format!("{name}-gap.tlt")),
    );
    std::fs::write(&crafted_path, crafted).unwrap();
    std::fs::write(&gap_path, gap).unwrap();
    (crafted_path, gap_path)
}

fn line<'t>(text: &'t str, prefix: &str) -> &'t str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in {text}"))
}

#[test]
fn inspect_refuses_the_block_and_counts_every_other_event() {
    let (crafted, gap) = trace_files("bound-inspect");
    let run =
        |path: &std::path::Path| finish(command(&["inspect", path.to_str().unwrap()]), "inspect");
    let (code, report, stderr) = run(&crafted);
    assert_eq!(code, Some(4), "{report}{stderr}");
    assert!(report.contains(REFUSAL), "{report}");
    let (_, without, _) = run(&gap);
    assert_eq!(line(&report, "events "), line(&without, "events "));
}

#[test]
fn view_json_refuses_the_block_and_keeps_every_other_event() {
    let (crafted, gap) = trace_files("bound-view");
    let run = |path: &std::path::Path| {
        let (code, out, stderr) = finish(
            command(&["view", path.to_str().unwrap(), "--json"]),
            "view --json",
        );
        assert_eq!(code, Some(0), "{stderr}");
        serde_json::from_str::<serde_json::Value>(out.trim()).unwrap()
    };
    let (got, want) = (run(&crafted), run(&gap));
    assert!(
        got["notice"].as_str().unwrap_or("").contains(REFUSAL),
        "{got}"
    );
    assert_eq!(got["events"], want["events"], "{got}");
    assert_eq!(got["frames_damaged"], 1, "{got}");
    assert_eq!(got["events_damaged"], 0, "refused whole: {got}");
}

#[test]
fn both_converters_refuse_the_block_and_convert_every_other_event() {
    let (crafted, gap) = trace_files("bound-convert");
    let convert = |path: &std::path::Path, to: &str, out: &std::path::Path| {
        finish(
            command(&[
                "convert",
                path.to_str().unwrap(),
                "--to",
                to,
                "-o",
                out.to_str().unwrap(),
            ]),
            "convert",
        )
    };
    // Chrome JSON has no loss marker: the two conversions are the same.
    let (a, b) = (temp("bound-a.json"), temp("bound-b.json"));
    let (code, _, stderr) = convert(&crafted, "chrome", &a);
    assert_eq!(code, Some(4), "{stderr}");
    assert!(stderr.contains(REFUSAL), "{stderr}");
    assert_eq!(convert(&gap, "chrome", &b).0, Some(0));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // Perfetto: the same spans, instants, counter values and ticks.
    let (a, b) = (temp("bound-a.pftrace"), temp("bound-b.pftrace"));
    let (code, _, stderr) = convert(&crafted, "perfetto", &a);
    assert_eq!(code, Some(4), "{stderr}");
    assert!(stderr.contains(REFUSAL), "{stderr}");
    let (_, _, without) = convert(&gap, "perfetto", &b);
    // "wrote F: N packets, N spans, ...; lost 1 frames": the gap is a
    // loss too, so the packets match as well.
    let written = |text: &str| {
        let wrote = line(text, "wrote").split(';').next().unwrap();
        wrote.split_once(": ").unwrap().1.to_owned()
    };
    assert_eq!(written(&stderr), written(&without));
    for path in [a, b, crafted, gap] {
        let _ = std::fs::remove_file(path);
    }
}

/// A peer on an ephemeral loopback port that sends `stream` to whoever
/// connects and keeps the connection open for `hold`.
fn serve(stream: Vec<u8>, hold: Duration) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let thread = std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut held = Vec::new();
        while Instant::now() < deadline {
            match listener.accept() {
                Ok((mut conn, _)) => {
                    conn.set_nonblocking(false).unwrap();
                    let _ = conn.write_all(&stream);
                    held.push(conn);
                    if held.len() == 1 {
                        std::thread::sleep(hold);
                        return;
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    (addr, thread)
}

#[test]
fn record_keeps_the_stream_and_says_what_it_refused() {
    let (crafted, _) = traces();
    let (addr, peer) = serve(crafted.clone(), Duration::from_secs(1));
    let path = temp("bound-record.tlt");
    let (code, _, stderr) = finish(
        command(&["record", &addr, "-o", path.to_str().unwrap()]),
        "record",
    );
    peer.join().unwrap();
    // The session ends with its Shutdown; the file is the stream.
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains(REFUSAL), "{stderr}");
    assert!(stderr.contains("1 refused"), "{stderr}");
    assert_eq!(std::fs::read(&path).unwrap(), crafted);
    let _ = std::fs::remove_file(path);
}

#[test]
fn attach_refuses_the_block_and_keeps_every_other_event() {
    let (crafted, gap) = traces();
    let summary = |stream: Vec<u8>| {
        let (addr, peer) = serve(stream, Duration::from_secs(1));
        let (code, out, stderr) = finish(command(&["attach", &addr, "--json"]), "attach");
        peer.join().unwrap();
        assert_eq!(code, Some(0), "{stderr}");
        let last = out.lines().last().expect("a summary").to_owned();
        serde_json::from_str::<serde_json::Value>(&last).unwrap()
    };
    let (got, want) = (summary(crafted), summary(gap));
    assert_eq!(got["events"], want["events"], "{got}");
    assert_eq!(got["frames_damaged"], 1, "{got}");
    let first = got["first_damage"].as_str().unwrap_or("");
    assert_eq!(
        first,
        format!("damaged frame seq {SEQ}: {REFUSAL}"),
        "{got}"
    );
}

#[test]
fn the_relay_refuses_the_block_and_serves_every_other_event() {
    let (crafted, gap) = traces();
    // A relay reading one source, which sends its stream once and stays.
    let start = |stream: Vec<u8>| {
        let (addr, peer) = serve(stream, Duration::from_secs(15));
        let mut command = typhon();
        command.args(["relay", "--source", &format!("s={addr}")]);
        command.args(["--metrics", "127.0.0.1:0"]);
        let (relay, metrics) = spawn_relay_with(command, "typhon-live relay: metrics on http://");
        let port: u16 = metrics.rsplit(':').next().unwrap().parse().unwrap();
        (relay, port, peer)
    };
    const TICKS: &str = "typhon_tick_duration_seconds_count{source=\"s\"}";
    let series = [
        TICKS,
        "typhon_span_duration_seconds_count{source=\"s\",span=\"Tick\"}",
        "typhon_events_dropped_total{source=\"s\"}",
        "typhon_frames_dropped_total{source=\"s\"}",
    ];
    let values = |port: u16| -> Vec<f64> {
        series
            .iter()
            .map(|s| common::relay_value(port, s).unwrap_or(-1.0))
            .collect()
    };
    // Without the Block: what every frame read gives.
    let (_relay, port, _peer) = start(gap);
    wait_for(port, TICKS, |n| n > 0.0);
    std::thread::sleep(Duration::from_secs(1));
    let want = values(port);
    // With it: the same, within the time bound, and the Block counted.
    let (relay, port, _peer) = start(crafted);
    let started = Instant::now();
    wait_for(port, TICKS, |n| n == want[0]);
    assert!(started.elapsed() < LIMIT, "{:?}", started.elapsed());
    std::thread::sleep(Duration::from_millis(500));
    // Every event: the same ticks, spans and drops. The Block is no gap
    // (it arrived), but a damaged frame.
    let got = values(port);
    assert_eq!(got[..3], want[..3]);
    assert_eq!((got[3], want[3]), (0.0, 1.0));
    let damaged = "typhon_frames_damaged_total{source=\"s\"}";
    assert_eq!(common::relay_value(port, damaged), Some(1.0));
    match peak_rss(relay.0.id()) {
        Some(peak) => assert!(peak < MEMORY, "the relay's peak RSS is {peak} bytes"),
        None => common::skipped("no /proc here: the relay's peak memory is not measured"),
    }
}
