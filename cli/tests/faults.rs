//! The command against peers and files that misbehave: a peer that hangs
//! up after its Init, a peer that defines millions of names, a trace whose
//! Init is damaged, a viewer that stalls the demo's exporter. And the
//! demo's zero-code configuration. Assertions are on counts and outputs;
//! every wait is bounded.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use typhon_live_core::definitions::write_definitions;
use typhon_live_core::init::write_init;
use typhon_live_core::{Exporter, LaneKind, Lanes, Metadata, NameSource, NameTable};

mod common;

use common::{spawn_demo_with, temp, typhon};

/// Waits for `child` at most `limit`; kills it and fails if it is still
/// running then.
fn wait_bounded(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn init_frame(session_id: u64) -> Vec<u8> {
    let names: NameTable<4, 64> = NameTable::new();
    let meta = Metadata {
        session_id,
        ..Metadata::default()
    };
    let mut out = vec![0u8; 4096];
    let n = write_init(&mut out, 0, &meta, &names, std::iter::empty()).unwrap();
    out.truncate(n);
    out
}

/// A listener on an ephemeral loopback port whose every connection is
/// handed to `serve` on the accepting thread until `stop`; counts them.
struct Peer {
    addr: String,
    connections: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Peer {
    fn start(serve: impl Fn(u32, TcpStream) + Send + 'static) -> Peer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let connections = Arc::new(AtomicU32::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (connections, stop) = (Arc::clone(&connections), Arc::clone(&stop));
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                    match listener.accept() {
                        Ok((conn, _)) => {
                            let n = connections.fetch_add(1, Ordering::Relaxed);
                            conn.set_nonblocking(false).unwrap();
                            serve(n, conn);
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(2)),
                    }
                }
            })
        };
        Peer {
            addr,
            connections,
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> u32 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        self.connections.load(Ordering::Relaxed)
    }
}

/// `attach --json` for `seconds`: its exit status, stdout lines and stderr.
fn attach_json(addr: &str, seconds: &str, limit: Duration) -> (Option<i32>, Vec<String>, String) {
    let mut child = typhon()
        .args(["attach", addr, "--json", "--duration", seconds])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let status = wait_bounded(&mut child, limit, "attach");
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    let lines = reader.join().unwrap().lines().map(str::to_owned).collect();
    (status.code(), lines, stderr)
}

/// `attach --json` for 2 s to a peer that sends `stream` and stays
/// connected (the viewer decides when it is done): its last JSON line.
fn attach_to_stream(stream: Vec<u8>) -> serde_json::Value {
    let peer = Peer::start(move |_, mut conn| {
        let _ = conn.write_all(&stream);
        std::thread::sleep(Duration::from_secs(3));
    });
    let (code, lines, stderr) = attach_json(&peer.addr, "2", Duration::from_secs(15));
    peer.finish();
    assert_eq!(code, Some(0), "{stderr}");
    serde_json::from_str(lines.last().expect("a JSON line")).unwrap()
}

/// Fault 5: a peer that sends an Init and hangs up (cleanly, or mid-frame).
/// `attach` used to reconnect about 20 times a second and run past its
/// `--duration`; now it backs off (0.1, 0.2, 0.4 ... s between tries) and
/// stops on time.
#[test]
fn attach_honours_its_duration_and_backs_off_from_a_peer_that_hangs_up() {
    let init = init_frame(0x0bad);
    let peer = Peer::start(move |n, mut conn| {
        let _ = conn.write_all(&init);
        if n % 2 == 1 {
            let _ = conn.write_all(&init[..init.len() / 2]);
        }
    });
    let (code, lines, stderr) = attach_json(&peer.addr, "3", Duration::from_secs(15));
    let connections = peer.finish();
    assert_eq!(code, Some(0), "{stderr}");
    // 0, 0.1, 0.3, 0.7, 1.5 and 3.1 s: at most six in three seconds, and a
    // loaded machine only makes fewer.
    assert!(
        (2..=7).contains(&connections),
        "{connections} connections in 3 s"
    );
    assert!(
        lines.iter().any(|l| l.contains("\"state\":\"waiting\"")),
        "the pause is shown: {lines:?}"
    );
}

/// Names `first..first + count`, made up on the fly.
struct ManyNames {
    first: u32,
    count: u32,
    text: Vec<String>,
}

impl ManyNames {
    fn new(first: u32, count: u32) -> Self {
        let text = (first..first + count)
            .map(|id| format!("peer.name.{id:08}"))
            .collect();
        ManyNames { first, count, text }
    }
}

impl NameSource for ManyNames {
    fn count(&self) -> u32 {
        self.first + self.count
    }

    fn get(&self, id: u32) -> Option<&str> {
        let index = id.checked_sub(self.first)?;
        self.text.get(index as usize).map(String::as_str)
    }
}

/// Fault 6: a peer defining more names than a viewer keeps. `attach` used
/// to keep them all (570 MiB for 6 M names); now it keeps its cap and
/// reports what it refused.
#[test]
fn attach_keeps_a_peers_names_within_its_cap_and_says_so() {
    const TOTAL: u32 = 100_000;
    const CHUNK: u32 = 10_000;
    let mut stream = init_frame(0x0bad_0002);
    let mut out = vec![0u8; 1 << 20];
    for (seq, first) in (0..TOTAL).step_by(CHUNK as usize).enumerate() {
        let names = ManyNames::new(first, CHUNK);
        let n = write_definitions(&mut out, seq as u32, &names, first, std::iter::empty()).unwrap();
        stream.extend_from_slice(&out[..n]);
    }
    let last = attach_to_stream(stream);
    let cap = last["limits"]["names"].as_u64().unwrap();
    let refused = last["refused"]["names"].as_u64().unwrap();
    assert!(cap < u64::from(TOTAL), "cap {cap}");
    assert_eq!(refused, u64::from(TOTAL) - cap, "{last}");
}

/// A stream of a few ticks from the core's exporter, as a file holds it.
fn small_trace() -> Vec<u8> {
    exporter_stream(20, 0x0bad_0003, "damaged", None)
}

/// A stream as a device on a serial link writes it: no Shutdown, and its
/// Init repeated every 10 ticks (the embedded example's announcement).
fn serial_stream() -> Vec<u8> {
    exporter_stream(40, 0x0bad_0005, "serial", Some(10))
}

/// `ticks` ticks of a span each from the core's exporter, with a new Init
/// every `announce_every` ticks if given (and then no Shutdown: a serial
/// device never says goodbye), else a Shutdown at the end.
fn exporter_stream(
    ticks: u64,
    session_id: u64,
    process_name: &str,
    announce_every: Option<u64>,
) -> Vec<u8> {
    let lanes = Lanes::<2, 256>::new();
    let mut names: NameTable<16, 512> = NameTable::new();
    let lane = lanes
        .claim(names.intern("Main").unwrap(), LaneKind::Main)
        .unwrap();
    let tick = names.intern("Tick").unwrap();
    let mut scratch = vec![0u8; 4096];
    let meta = Metadata {
        ticks_per_second: 1_000_000,
        session_id,
        process_name,
        ..Metadata::default()
    };
    let mut exporter: Exporter<'_, 2> = Exporter::new(meta, &mut scratch);
    let reader = exporter.attach().unwrap();
    let mut out = vec![0u8; exporter.min_block_buffer()];
    let mut stream = Vec::new();
    for t in 0..ticks {
        if announce_every.is_some_and(|every| t > 0 && t % every == 0) {
            exporter.restart(reader);
        }
        let now = 1_000 + t * 1_000;
        lane.tick_start(t, now);
        let span = lane.begin(tick, now + 10);
        lane.end(span, now + 500, None);
        lane.tick_end(t, now + 900, false);
        exporter.request_drain();
        while let Some(frame) = exporter.poll(now + 999, &lanes, &names, &mut out).unwrap() {
            stream.extend_from_slice(&out[..frame.len]);
        }
    }
    if announce_every.is_none() {
        exporter.stop();
        while let Some(frame) = exporter
            .poll(ticks * 1_500, &lanes, &names, &mut out)
            .unwrap()
        {
            stream.extend_from_slice(&out[..frame.len]);
        }
    }
    stream
}

/// `bytes` written to the scratch file `name` and inspected: the exit code,
/// the report, and the file.
fn inspect(bytes: &[u8], name: &str) -> (Option<i32>, String, std::path::PathBuf) {
    let path = temp(name);
    std::fs::write(&path, bytes).unwrap();
    let out = typhon().arg("inspect").arg(&path).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), report, path)
}

/// Fault 7: one flipped bit inside a trace's Init. `inspect` used to refuse
/// the whole file; now it reads every frame after the damage, `convert`
/// converts them, and both still say the file is damaged (exit 4).
#[test]
fn a_damaged_init_loses_nothing_after_it() {
    let mut bytes = small_trace();
    bytes[40] ^= 0x10; // inside the Init's payload: its frame check fails
    let (code, report, path) = inspect(&bytes, "damaged-init.tlt");
    assert_eq!(code, Some(4), "{report}");
    assert!(report.contains("no readable Init"), "{report}");
    assert!(report.contains("before Init"), "{report}");
    // 20 ticks: a start, a span and an end each.
    assert!(
        report.contains("events      60 (20 spans, 40 tick markers)"),
        "{report}"
    );
    assert!(report.contains("checksum mismatch"), "{report}");

    let json = temp("damaged-init.json");
    let convert = typhon()
        .arg("convert")
        .arg(&path)
        .args(["--to", "chrome", "-o"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(
        convert.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&convert.stderr)
    );
    let chrome: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let slices = |tick: bool| {
        let events = chrome["traceEvents"].as_array().unwrap().iter();
        events
            .filter(|e| e["ph"] == "X" && (e["cat"] == "tick") == tick)
            .count()
    };
    assert_eq!(
        (slices(false), slices(true)),
        (20, 20),
        "spans, whole ticks"
    );
    for p in [&path, &json] {
        let _ = std::fs::remove_file(p);
    }
}

/// FORMAT.md: a frame of a kind the reader does not know is skipped, is
/// not damage, and its sequence number counts as received (no false gap).
#[test]
fn an_unknown_frame_kind_is_skipped_without_a_gap() {
    let mut bytes = init_frame(0x0bad_0004);
    let mut out = vec![0u8; 4096];
    let n =
        typhon_live_core::frame::write_raw_frame(&mut out, 9, 0, 0, b"from the future").unwrap();
    bytes.extend_from_slice(&out[..n]);
    let n = typhon_live_core::Shutdown::default()
        .write(&mut out, 1)
        .unwrap();
    bytes.extend_from_slice(&out[..n]);
    let (code, report, path) = inspect(&bytes, "unknown-kind.tlt");
    assert_eq!(code, Some(0), "{report}");
    assert!(
        report.contains("frames      3 (1 init, 1 shutdown, 1 unknown), 0 missing"),
        "{report}"
    );
    let _ = std::fs::remove_file(&path);
}

/// Fault 7, live: a damaged Init on the wire is damage, not "not a
/// typhon-live stream": the view reads the frames after it.
#[test]
fn attach_reads_on_past_a_damaged_init() {
    let mut bytes = small_trace();
    bytes[40] ^= 0x10;
    let last = attach_to_stream(bytes);
    assert_eq!(last["events"], 60, "{last}");
}

/// Fault 2, as the issue saw it: the demo with a viewer that connects and
/// never reads. It used to run on at full CPU until the viewer left; now
/// it stops when its duration is up.
#[test]
fn the_demo_stops_on_time_with_a_viewer_that_never_reads() {
    let (mut demo, addr) =
        spawn_demo_with(&["--duration", "2", "--threads", "8", "--tick-rate", "1000"]);
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let addr: std::net::SocketAddr = addr.parse().unwrap();
    socket
        .connect_timeout(&addr.into(), Duration::from_secs(5))
        .unwrap();
    let status = wait_bounded(&mut demo, Duration::from_secs(20), "the demo");
    assert!(status.success(), "{status}");
    drop(socket);
}

/// The demo is configured like any instrumented process:
/// `typhon.telemetry.json` in its working directory, then the environment,
/// then its own flags.
#[test]
fn the_demo_reads_the_zero_code_configuration() {
    let dir = temp("config-dir");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("typhon.telemetry.json"),
        r#"{ "Typhon": { "Telemetry": { "Profiler": { "Live": 0, "Trace": "from-file.tlt" } } } }"#,
    )
    .unwrap();
    let run = |flags: &[&str]| {
        typhon()
            .current_dir(&dir)
            .args(["demo", "--no-view", "--duration", "0.5", "--threads", "1"])
            .args(flags)
            .env("TYPHON__PROFILER__LIVEWAITMS", "50")
            .env("TYPHON__PROFILER__BINDADDRESS", "127.0.0.1")
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // The file's Live 0 (a free port, not 9100), the environment's wait.
    assert!(stdout.contains("waiting up to 50 ms"), "{stdout}");
    assert!(!stdout.contains(":9100"), "{stdout}");
    assert!(dir.join("from-file.tlt").exists(), "the file's Trace");
    // A flag is the top layer.
    let out = run(&["--trace", "from-flag.tlt"]);
    assert!(out.status.success());
    assert!(dir.join("from-flag.tlt").exists(), "the flag's Trace");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where the first frame of `stream` ends.
fn first_frame_len(stream: &[u8]) -> usize {
    let mut buf = vec![0u8; 1 << 16];
    let mut decoder = typhon_live_core::Decoder::new(&mut buf);
    decoder.feed(stream);
    decoder.next().unwrap().unwrap().wire_len()
}

/// Issue 12: a viewer joins a serial link inside a frame. It used to
/// call the peer "not a typhon-live stream"; now it skips to the first
/// whole frame, shows ids until the repeated Init, then names.
#[test]
fn attach_joins_a_serial_stream_mid_frame_and_waits_for_the_next_init() {
    let stream = serial_stream();
    // Inside the Catch-up that follows the Init, before any Block.
    let joined = stream[first_frame_len(&stream) + 5..].to_vec();
    let last = attach_to_stream(joined);
    let notice = last["notice"].as_str().unwrap_or("");
    assert!(notice.starts_with("Init received after"), "{last}");
    assert_eq!(last["lanes"][0]["name"], "Main", "{last}");
    let top = last["top_spans"].as_array().unwrap();
    assert!(top.iter().any(|s| s["name"] == "Tick"), "{last}");
    // Every tick: the frame cut was the Catch-up.
    assert_eq!(last["events"], 3 * 40, "{last}");
    assert_eq!(last["frames_dropped"], 0, "{last}");
}

/// Issue 12: `record` on a serial link joined mid-frame starts its file at
/// the first Init, so every name in the file resolves, and says what it
/// skipped.
#[test]
fn record_starts_a_serial_stream_at_its_next_init() {
    let stream = serial_stream();
    let joined = stream[first_frame_len(&stream) + 5..].to_vec();
    let peer = Peer::start(move |_, mut conn| {
        let _ = conn.write_all(&joined);
        std::thread::sleep(Duration::from_secs(3));
    });
    let path = temp("serial.tlt");
    let mut record = typhon()
        .args(["record", &peer.addr, "--duration", "1.5", "-o"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_bounded(&mut record, Duration::from_secs(15), "record");
    let mut stderr = String::new();
    let _ = record.stderr.take().unwrap().read_to_string(&mut stderr);
    peer.finish();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("joined mid-stream"), "{stderr}");
    let (code, report, path) = inspect(&std::fs::read(&path).unwrap(), "serial-inspected.tlt");
    assert_eq!(code, Some(0), "{report}");
    assert!(!report.contains("before Init"), "{report}");
    // Ticks 10 to 39, from the first repeated Init on.
    assert!(
        report.contains("events      90 (30 spans, 60 tick markers)"),
        "{report}"
    );
    assert!(report.contains("0 missing by sequence number"), "{report}");
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(temp("serial.tlt"));
}
