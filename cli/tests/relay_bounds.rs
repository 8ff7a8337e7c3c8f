//! The relay's memory under idle viewers and a hostile source, measured
//! on a real relay process (Linux's VmHWM), and its sources isolated from
//! each other. The sources are scripted here, to fill the relay's tables
//! on purpose. Everything on 127.0.0.1; waits are bounded.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use typhon_live_core::block::{block_scratch_len, max_block_frame_len, write_block};
use typhon_live_core::init::write_init;
use typhon_live_core::{BlockBuilder, Event, LaneInfo, LaneKind, Metadata, NameId, NameSource};
use typhon_live_tests::{Owned, Viewer};

mod common;

use common::{free_port, get, peak_rss, relay_value, spawn_relay_with, typhon, wait_for};

/// The bound docs/RELAY.md states for the relay with 64 viewers that take
/// nothing, on a full name table.
const IDLE_VIEWERS_BOUND: u64 = 256 << 20;
/// The bound docs/RELAY.md states for the relay beside a hostile source.
const HOSTILE_SOURCE_BOUND: u64 = 256 << 20;

/// A source's names: id 0 its lane, then the rest.
struct Texts(Vec<String>);

impl NameSource for Texts {
    fn count(&self) -> u32 {
        self.0.len() as u32
    }

    fn get(&self, id: NameId) -> Option<&str> {
        self.0.get(id as usize).map(String::as_str)
    }
}

/// One session of a scripted source: its names, and the ids of them that
/// its Blocks' spans use.
struct Session {
    id: u64,
    names: Texts,
    spans: std::ops::Range<NameId>,
}

/// A source on a port of its own: each connection gets `sessions` in
/// turn (an Init each, so a new session id on the same connection: the
/// process restarted), each followed by a Block with a span of each of
/// its span names; then, for as long as the connection lasts, a Block
/// every 2 ms of 20 spans of the last session's names.
fn source(sessions: Vec<Session>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let sessions = std::sync::Arc::new(sessions);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let sessions = std::sync::Arc::clone(&sessions);
            std::thread::spawn(move || stream_sessions(stream, &sessions));
        }
    });
    addr
}

fn stream_sessions(mut stream: TcpStream, sessions: &[Session]) {
    let epoch = Instant::now();
    let mut scratch = vec![0u8; block_scratch_len(4096)];
    let mut out = vec![0u8; max_block_frame_len(scratch.len(), 0)];
    let mut seq = 0u32;
    let mut span_id = 0u32;
    let mut block = |stream: &mut TcpStream, seq: &mut u32, names: std::ops::Range<NameId>| {
        let mut builder = BlockBuilder::new(&mut scratch);
        let now = epoch.elapsed().as_nanos() as u64 + 1_000_000;
        for name in names {
            span_id = span_id.wrapping_add(1).max(1);
            let span = Event::Span {
                start: now - 1000,
                duration: 500,
                name,
                id: span_id,
                parent: 0,
                arg: None,
            };
            builder.push(0, &span);
        }
        let n = write_block(&mut out, *seq, &builder, &[]).unwrap();
        *seq = seq.wrapping_add(1);
        stream.write_all(&out[..n]).is_ok()
    };
    for session in sessions {
        let meta = Metadata {
            ticks_per_second: 1_000_000_000,
            session_id: session.id,
            process_name: "scripted source",
            ..Metadata::default()
        };
        let lanes = [LaneInfo {
            id: 0,
            name: 0,
            kind: LaneKind::Main,
        }];
        let size: usize = session.names.0.iter().map(|n| n.len() + 8).sum();
        let mut init = vec![0u8; size + 4096];
        let n = write_init(&mut init, seq, &meta, &session.names, lanes.into_iter()).unwrap();
        if stream.write_all(&init[..n]).is_err() {
            return;
        }
        let spans = session.spans.clone();
        for at in spans.clone().step_by(1000) {
            if !block(&mut stream, &mut seq, at..(at + 1000).min(spans.end)) {
                return;
            }
        }
    }
    let Some(last) = sessions.last() else { return };
    let mut next = last.spans.start;
    loop {
        let end = (next + 20).min(last.spans.end);
        if !block(&mut stream, &mut seq, next..end) {
            return;
        }
        next = if end == last.spans.end {
            last.spans.start
        } else {
            end
        };
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A relay of `sources` for 60 s: it, its viewers' address and its
/// metrics port.
fn relay(sources: &[(&str, SocketAddr)]) -> (common::Killed, SocketAddr, u16) {
    let metrics = free_port();
    let mut command = typhon();
    command.args(["relay", "--listen", "0", "--duration", "60"]);
    command.args(["--metrics", &format!("127.0.0.1:{metrics}")]);
    for (name, addr) in sources {
        command.args(["--source", &format!("{name}={addr}")]);
    }
    let (relay, viewers) = spawn_relay_with(command, "typhon-live relay: viewers on ");
    (relay, viewers.parse().unwrap(), metrics)
}

/// A connection to the relay's viewer port that reads nothing, with a
/// small receive buffer so that the kernel holds little for it.
fn idle_viewer(addr: SocketAddr) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4 << 10).unwrap();
    socket
        .connect_timeout(&addr.into(), Duration::from_secs(5))
        .unwrap();
    TcpStream::from(socket)
}

/// Sequence numbers missing from a viewer's frames, after its Init.
fn gaps(frames: &[Owned]) -> u64 {
    let mut expected = None;
    let mut gaps = 0;
    for frame in frames {
        match (frame, expected) {
            (Owned::Init { next_seq, .. }, _) => expected = Some(*next_seq),
            (_, Some(want)) => {
                gaps += u64::from(frame.seq().wrapping_sub(want));
                expected = Some(frame.seq().wrapping_add(1));
            }
            (_, None) => {}
        }
    }
    gaps
}

/// Names of 120 bytes, as many as fill the relay's 7 MiB of merged text
/// and more.
fn full_table() -> Session {
    let mut names = vec!["main".to_owned()];
    names.extend((1..64_000).map(|i| format!("{i:06} {}", "n".repeat(113))));
    Session {
        id: 1,
        names: Texts(names),
        spans: 1..200,
    }
}

#[test]
fn idle_viewers_on_a_full_name_table_are_bounded_and_a_reading_viewer_loses_nothing() {
    if !cfg!(target_os = "linux") {
        return common::skipped("peak memory is measured on Linux only");
    }
    let full = source(vec![full_table()]);
    let (relay, viewers, metrics) = relay(&[("full", full)]);
    wait_for(metrics, "typhon_source_up{source=\"full\"}", |v| v == 1.0);

    // The reader first, once the merged table is full: it takes its
    // start, then everything.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut reader = loop {
        let mut reader = Viewer::connect(viewers);
        let started = reader.read_until(Duration::from_secs(20), |frames| {
            frames.iter().any(|f| matches!(f, Owned::CatchUp { .. }))
        });
        assert!(started, "the reader got its start");
        let text = match &reader.frames[0] {
            Owned::Init { names, .. } => names.iter().map(|(_, t)| t.len()).sum::<usize>(),
            other => panic!("{other:?} before the Init"),
        };
        if text > 6 << 20 {
            break reader;
        }
        assert!(
            Instant::now() < deadline,
            "the table is not full: {text} bytes of names"
        );
        std::thread::sleep(Duration::from_millis(200));
    };

    // 63 more that read nothing: 64 viewers, the relay's most.
    let idle: Vec<TcpStream> = (0..63).map(|_| idle_viewer(viewers)).collect();
    wait_for(metrics, "typhon_viewers ", |v| v == 64.0);
    // Past the start deadline, while the source streams.
    reader.read_for(Duration::from_secs(13));
    wait_for(
        metrics,
        "typhon_viewers_let_go_total{reason=\"start_not_taken\"}",
        |v| v == 63.0,
    );
    reader.read_for(Duration::from_secs(1));
    let peak = peak_rss(relay.0.id()).unwrap();
    drop(idle);

    assert!(reader.errors.is_empty(), "{:?}", reader.errors);
    assert!(!reader.is_closed(), "the reader is served still");
    let blocks = reader
        .frames
        .iter()
        .filter(|f| matches!(f, Owned::Block { .. }))
        .count();
    assert!(blocks > 1000, "{blocks} Blocks read");
    assert_eq!(gaps(&reader.frames), 0, "the reader lost nothing");
    eprintln!(
        "relay peak RSS with 64 viewers on a full table: {} MiB",
        peak >> 20
    );
    assert!(
        peak < IDLE_VIEWERS_BOUND,
        "relay peak RSS {} MiB",
        peak >> 20
    );
}

#[test]
fn a_hostile_source_takes_nothing_from_a_good_one_beside_it() {
    if !cfg!(target_os = "linux") {
        return common::skipped("peak memory is measured on Linux only");
    }
    // 24 restarts, each with 1 024 new span names, then 6 names of 1 MiB
    // (the most one Init can carry).
    let mut sessions: Vec<Session> = (0..24u64)
        .map(|restart| {
            let mut names = vec![format!("lane {restart}")];
            names.extend((1..=1024).map(|i| format!("hostile {restart} {i}")));
            Session {
                id: 100 + restart,
                names: Texts(names),
                spans: 1..1025,
            }
        })
        .collect();
    let mut long = vec!["lane".to_owned()];
    long.extend((0..6).map(|i| format!("{i}{}", "x".repeat(1 << 20))));
    sessions.push(Session {
        id: 200,
        names: Texts(long),
        spans: 1..7,
    });
    let hostile = source(sessions);
    let good_names: Vec<String> = std::iter::once("main".to_owned())
        .chain((1..=100).map(|i| format!("good span {i}")))
        .collect();
    let good = source(vec![Session {
        id: 7,
        names: Texts(good_names.clone()),
        spans: 1..101,
    }]);
    let (relay, viewers, metrics) = relay(&[("hostile", hostile), ("good", good)]);
    wait_for(
        metrics,
        "typhon_source_restarts_total{source=\"hostile\"}",
        |v| v == 24.0,
    );
    wait_for(metrics, "typhon_source_up{source=\"good\"}", |v| v == 1.0);
    std::thread::sleep(Duration::from_secs(2));

    // The good one's series, every one of them.
    let text = get(metrics, "/metrics").unwrap();
    for name in &good_names[1..] {
        let series =
            format!("typhon_span_duration_seconds_count{{source=\"good\",span=\"{name}\"}}");
        assert!(
            relay_value(metrics, &series).is_some_and(|v| v > 0.0),
            "{series}"
        );
    }
    let hostile_series = text
        .lines()
        .filter(|l| l.starts_with("typhon_span_duration_seconds_count{source=\"hostile\""))
        .count();
    assert!(
        hostile_series <= 1024,
        "{hostile_series} series of the hostile source"
    );
    assert!(text.len() < 8 << 20, "/metrics is {} bytes", text.len());

    // A viewer joining now gets every one of the good one's names.
    let mut viewer = Viewer::connect(viewers);
    assert!(viewer.read_until(Duration::from_secs(20), |f| !f.is_empty()));
    let Owned::Init { names, .. } = &viewer.frames[0] else {
        panic!("no Init first");
    };
    for name in &good_names[1..] {
        assert!(names.iter().any(|(_, t)| t == name), "{name} lost");
    }
    assert!(names.iter().any(|(_, t)| t == "good/main"), "its lane lost");
    let peak = peak_rss(relay.0.id()).unwrap();
    eprintln!("relay peak RSS beside a hostile source: {} MiB", peak >> 20);
    assert!(
        peak < HOSTILE_SOURCE_BOUND,
        "relay peak RSS {} MiB",
        peak >> 20
    );
}
