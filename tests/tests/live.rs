//! The std transport over loopback: a profiler in this process, a viewer on
//! 127.0.0.1, ephemeral ports and bounded waits. The profiler is one per
//! process, so these tests take turns.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use typhon_live_core::{Event, GaugeValue, Metadata};
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler, StartError};
use typhon_live_tests::{frames, read_stream, Owned, Viewer};

static TURN: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

fn live_config(port: u16) -> ProfilerConfig {
    ProfilerConfig {
        live: Some(port),
        ..ProfilerConfig::default()
    }
}

fn start(config: &ProfilerConfig) -> Profiler {
    Profiler::start(
        config,
        &Metadata {
            process_name: "live-test",
            ..Metadata::default()
        },
    )
    .expect("profiler starts")
}

const WAIT: Duration = Duration::from_secs(10);

fn names_of(frames: &[Owned]) -> Vec<(u32, String)> {
    frames
        .iter()
        .flat_map(|f| match f {
            Owned::Init { names, .. } | Owned::Definitions { names, .. } => names.clone(),
            _ => Vec::new(),
        })
        .collect()
}

fn events_of(frames: &[Owned]) -> Vec<Event> {
    frames
        .iter()
        .flat_map(|f| match f {
            Owned::Block { events, .. } => events.iter().map(|(_, e)| *e).collect(),
            _ => Vec::new(),
        })
        .collect()
}

fn name_id(frames: &[Owned], name: &str) -> Option<u32> {
    names_of(frames)
        .into_iter()
        .find(|(_, n)| n == name)
        .map(|(id, _)| id)
}

#[test]
fn init_then_blocks_carry_every_event_kind() {
    let _turn = turn();
    let profiler = start(&live_config(0));
    let mut viewer = Viewer::connect(profiler.live_addr().unwrap());
    assert!(viewer.read_until(WAIT, |f| matches!(f.first(), Some(Owned::Init { .. }))));

    std::thread::Builder::new()
        .name("recorder".into())
        .spawn(|| {
            runtime::tick_start(41);
            {
                let mut span = typhon_live_std::span!("Physics");
                span.set_arg(7);
            }
            typhon_live_std::instant!("checkpoint", 99);
            typhon_live_std::gauge!("memory.bytes", 1 << 30);
            runtime::gauge_f64(runtime::intern("tick.ms").unwrap(), 16.5);
            runtime::tick_end(41, true);
        })
        .unwrap()
        .join()
        .unwrap();

    assert!(
        viewer.read_until(WAIT, |f| events_of(f).len() >= 6),
        "got {:?}",
        viewer.frames
    );
    let frames = &viewer.frames;
    let events = events_of(frames);
    let physics = name_id(frames, "Physics").expect("span name defined");
    assert!(events.iter().any(|e| matches!(*e, Event::Span { name, arg: Some(7), duration, .. } if name == physics && duration < 1_000_000_000)));
    let checkpoint = name_id(frames, "checkpoint").unwrap();
    assert!(events.contains(&Event::Instant {
        time: events_of(frames)
            .iter()
            .find_map(|e| match e {
                Event::Instant { time, .. } => Some(*time),
                _ => None,
            })
            .unwrap(),
        name: checkpoint,
        payload: 99
    }));
    let memory = name_id(frames, "memory.bytes").unwrap();
    assert!(events.iter().any(|e| matches!(*e, Event::Gauge { gauge, value: GaugeValue::Int(v), .. } if gauge == memory && v == 1 << 30)));
    let tick_ms = name_id(frames, "tick.ms").unwrap();
    assert!(events.iter().any(|e| matches!(*e, Event::Gauge { gauge, value: GaugeValue::Float(v), .. } if gauge == tick_ms && v == 16.5)));
    assert!(events
        .iter()
        .any(|e| matches!(*e, Event::TickStart { tick: 41, .. })));
    assert!(events.iter().any(|e| matches!(
        *e,
        Event::TickEnd {
            tick: 41,
            overrun: true,
            ..
        }
    )));
    // The recording thread's lane is named after the thread.
    let recorder = name_id(frames, "recorder").expect("lane named after its thread");
    assert!(frames.iter().any(|f| matches!(f, Owned::Definitions { lanes, .. } | Owned::Init { lanes, .. } if lanes.iter().any(|l| l.name == recorder))));
    assert!(viewer.errors.is_empty(), "{:?}", viewer.errors);
    profiler.stop().unwrap();
}

#[test]
fn live_wait_zero_does_not_block_and_n_blocks_until_a_viewer() {
    let _turn = turn();
    let started = Instant::now();
    let profiler = start(&live_config(0));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(!profiler.viewer_ever_connected());
    drop(profiler);

    // No viewer: start waits about LiveWaitMs.
    let config = ProfilerConfig {
        live_wait: Duration::from_millis(300),
        ..live_config(0)
    };
    let started = Instant::now();
    let profiler = start(&config);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert!(!profiler.viewer_ever_connected());
    drop(profiler);

    // A viewer arriving early ends the wait early. A free port is found
    // first, so that the viewer knows where to connect before start returns.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = ProfilerConfig {
        live_wait: Duration::from_secs(20),
        ..live_config(port)
    };
    let connector = std::thread::spawn(move || {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + WAIT;
        loop {
            std::thread::sleep(Duration::from_millis(50));
            if let Ok(stream) = TcpStream::connect(addr) {
                return stream;
            }
            assert!(Instant::now() < deadline, "profiler never listened");
        }
    });
    let started = Instant::now();
    let profiler = start(&config);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "waited the whole LiveWaitMs"
    );
    assert!(profiler.viewer_ever_connected());
    let _stream = connector.join().unwrap();
    profiler.stop().unwrap();
}

#[test]
fn a_second_viewer_is_closed_while_the_first_keeps_receiving() {
    let _turn = turn();
    let profiler = start(&live_config(0));
    let addr = profiler.live_addr().unwrap();
    let mut first = Viewer::connect(addr);
    assert!(first.read_until(WAIT, |f| !f.is_empty()));
    let mut second = Viewer::connect(addr);
    second.read_for(Duration::from_millis(500));
    assert!(second.is_closed(), "second viewer still open");
    assert!(
        second.frames.is_empty(),
        "second viewer was sent {:?}",
        second.frames
    );
    let name = runtime::intern("after-second").unwrap();
    runtime::instant(name, 1);
    assert!(first.read_until(WAIT, |f| events_of(f)
        .iter()
        .any(|e| matches!(e, Event::Instant { payload: 1, .. }))));
    profiler.stop().unwrap();
}

#[test]
fn a_viewer_that_reconnects_gets_a_fresh_init() {
    let _turn = turn();
    let profiler = start(&live_config(0));
    let addr = profiler.live_addr().unwrap();
    let mut first = Viewer::connect(addr);
    assert!(first.read_until(WAIT, |f| matches!(f.first(), Some(Owned::Init { .. }))));
    drop(first);
    // The process keeps running; the dead viewer is noticed by its read side.
    let mut second = None;
    let deadline = Instant::now() + WAIT;
    while second.is_none() && Instant::now() < deadline {
        let mut viewer = Viewer::connect(addr);
        if viewer.read_until(Duration::from_millis(500), |f| !f.is_empty()) {
            second = Some(viewer);
        }
    }
    let second = second.expect("a reconnecting viewer is accepted");
    assert!(matches!(second.frames.first(), Some(Owned::Init { .. })));
    profiler.stop().unwrap();
}

#[test]
fn a_catchup_arrives_without_traffic_and_shutdown_on_stop() {
    let _turn = turn();
    let profiler = start(&live_config(0));
    runtime::register_thread("test-main", typhon_live_core::LaneKind::Main);
    let _open = typhon_live_std::span!("Stall");
    let mut viewer = Viewer::connect(profiler.live_addr().unwrap());
    let catchups = |f: &[Owned]| {
        f.iter()
            .filter(|f| matches!(f, Owned::CatchUp { .. }))
            .count()
    };
    assert!(viewer.read_until(WAIT, |f| catchups(f) >= 1));
    let first = Instant::now();
    assert!(viewer.read_until(Duration::from_secs(5), |f| catchups(f) >= 2));
    let gap = first.elapsed();
    assert!(
        gap < Duration::from_millis(1500),
        "second Catch-up after {gap:?}"
    );
    // The open span shows in the Catch-up: a live stall.
    let stall = name_id(&viewer.frames, "Stall").unwrap();
    assert!(viewer
        .frames
        .iter()
        .any(|f| matches!(f, Owned::CatchUp { lanes, .. }
        if lanes.iter().any(|l| l.name == "test-main" && l.open.iter().any(|s| s.name == stall)))));
    let stopping = Instant::now();
    profiler.stop().unwrap();
    assert!(stopping.elapsed() < Duration::from_secs(2));
    assert!(viewer.read_until(WAIT, |f| matches!(f.last(), Some(Owned::Shutdown { .. }))));
    viewer.read_for(Duration::from_millis(200));
    assert!(viewer.is_closed());
}

#[test]
fn trace_and_live_together_get_the_same_blocks() {
    let _turn = turn();
    let path = std::env::temp_dir().join(format!("typhon-live-test-{}.tlt", std::process::id()));
    let config = ProfilerConfig {
        trace: Some(path.clone()),
        ..live_config(0)
    };
    let profiler = start(&config);
    let mut viewer = Viewer::connect(profiler.live_addr().unwrap());
    assert!(viewer.read_until(WAIT, |f| !f.is_empty()));
    let name = runtime::intern("together").unwrap();
    for i in 0..200 {
        runtime::instant(name, i);
        if i % 50 == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    assert!(viewer.read_until(WAIT, |f| events_of(f).len() >= 200));
    profiler.stop().unwrap();
    assert!(viewer.read_until(WAIT, |f| matches!(f.last(), Some(Owned::Shutdown { .. }))));
    let file = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let in_file = frames(read_stream(&file, &[], 16 << 20));
    assert!(matches!(in_file.first(), Some(Owned::Init { .. })));
    assert!(matches!(in_file.last(), Some(Owned::Shutdown { .. })));
    // Every Block the viewer got holds the events of a Block of the file
    // (the bytes differ: each reader has its own sequence numbers).
    type Contents = (u64, u64, Vec<(u16, Event)>);
    let contents = |frames: &[Owned]| -> Vec<Contents> {
        frames
            .iter()
            .filter_map(|f| match f {
                Owned::Block {
                    first,
                    last,
                    events,
                    ..
                } if !events.is_empty() => Some((*first, *last, events.clone())),
                _ => None,
            })
            .collect()
    };
    let file_blocks = contents(&in_file);
    let live_blocks = contents(&viewer.frames);
    assert!(!live_blocks.is_empty());
    for block in &live_blocks {
        assert!(
            file_blocks.contains(block),
            "a live Block is missing from the file"
        );
    }
    let instants = |frames: &[Owned]| {
        events_of(frames)
            .iter()
            .filter(|e| matches!(e, Event::Instant { name: n, .. } if *n == name))
            .count()
    };
    assert_eq!(instants(&in_file), 200);
    assert_eq!(instants(&viewer.frames), 200);
}

#[test]
fn start_errors_name_the_address_and_nothing_panics() {
    let _turn = turn();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    // SO_REUSEADDR does not let two listeners share a port on Linux.
    let err = Profiler::start(&live_config(port), &Metadata::default())
        .err()
        .expect("port in use");
    assert!(matches!(err, StartError::Listen { .. }));
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
    // 192.0.2.1 (TEST-NET-1) is not an address of this machine: bind fails
    // at once, no traffic is sent anywhere.
    let config = ProfilerConfig {
        bind_address: [192, 0, 2, 1].into(),
        ..live_config(0)
    };
    let err = Profiler::start(&config, &Metadata::default())
        .err()
        .expect("not a local address");
    assert!(err.to_string().contains("192.0.2.1:0"), "{err}");
    let config = ProfilerConfig {
        trace: Some("/nonexistent-dir/x.tlt".into()),
        ..ProfilerConfig::default()
    };
    let err = Profiler::start(&config, &Metadata::default())
        .err()
        .expect("bad trace path");
    assert!(err.to_string().contains("/nonexistent-dir/x.tlt"), "{err}");
    // After those failures the slot is free again.
    start(&live_config(0)).stop().unwrap();
}

#[test]
fn a_disabled_profiler_records_nothing() {
    let _turn = turn();
    let config = ProfilerConfig {
        enabled: false,
        ..live_config(0)
    };
    let profiler = start(&config);
    assert_eq!(profiler.live_addr(), None);
    assert!(!runtime::is_enabled());
    let _span = typhon_live_std::span!("never");
    profiler.stop().unwrap();
}

/// Sequence gaps a viewer saw: frames it missed.
fn gaps(frames: &[Owned]) -> u64 {
    let mut expected = None;
    let mut gaps = 0u64;
    for f in frames {
        match f {
            Owned::Init { next_seq, .. } => expected = Some(*next_seq),
            other => {
                let seq = other.seq();
                if let Some(e) = expected {
                    gaps += u64::from(seq.wrapping_sub(e));
                }
                expected = Some(seq.wrapping_add(1));
            }
        }
    }
    gaps
}

#[test]
fn a_slow_viewer_loses_whole_frames_never_the_stream() {
    let _turn = turn();
    let profiler = start(&live_config(0));
    let addr = profiler.live_addr().unwrap();
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket
        .connect_timeout(&addr.into(), Duration::from_secs(5))
        .unwrap();
    let mut viewer = Viewer::with_stream(socket.into());
    assert!(viewer.read_until(WAIT, |f| !f.is_empty()));

    // Record until the viewer has fallen behind far enough for frames to be
    // dropped (or 20 s pass): how long that takes depends on the machine's
    // load, what is checked does not. Payloads are scrambled so that Blocks
    // do not compress to nothing.
    let behind = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let producer = {
        let behind = behind.clone();
        std::thread::spawn(move || {
            let name = runtime::intern("flood").unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut recorded = 0u64;
            while !behind.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
                for _ in 0..1000 {
                    runtime::instant(name, recorded.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    recorded += 1;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            recorded
        })
    };
    // Read 2 KiB every 5 ms while the producer floods.
    while !producer.is_finished() {
        viewer.read_some(2048);
        if profiler.stats().live_frames_dropped >= 3 {
            behind.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let recorded = producer.join().unwrap();
    // Then catch up, so that the end of the stream is seen whole.
    viewer.read_for(Duration::from_millis(500));
    let stats = profiler.stats();
    profiler.stop().unwrap();
    assert!(viewer.read_until(WAIT, |f| matches!(f.last(), Some(Owned::Shutdown { .. }))));

    assert!(
        viewer.errors.is_empty(),
        "the stream was corrupted: {:?}",
        viewer.errors
    );
    let Some(Owned::Shutdown { totals, .. }) = viewer.frames.last() else {
        unreachable!()
    };
    assert!(
        totals.frames_dropped > 0,
        "the viewer was never slow enough to drop frames"
    );
    assert_eq!(
        gaps(&viewer.frames),
        totals.frames_dropped,
        "sequence gaps != frames dropped"
    );
    assert!(stats.live_frames_dropped <= totals.frames_dropped);
    let flood = name_id(&viewer.frames, "flood").unwrap();
    let delivered = events_of(&viewer.frames)
        .iter()
        .filter(|e| matches!(e, Event::Instant { name, .. } if *name == flood))
        .count() as u64;
    assert_eq!(
        delivered + totals.events_dropped,
        recorded,
        "every event delivered or counted"
    );
    // The exporter thread never waited on the socket: sends are non-blocking.
    assert!(
        stats.worst_send_us < 100_000,
        "a send blocked for {} µs",
        stats.worst_send_us
    );
    println!(
        "slow viewer: {} frames sent, {} dropped, {delivered} events delivered, {} dropped; worst send {} µs, worst cycle {} µs",
        totals.frames_sent, totals.frames_dropped, totals.events_dropped, stats.worst_send_us, stats.worst_cycle_us
    );
}

#[test]
fn lanes_of_ended_threads_are_reused() {
    let _turn = turn();
    let profiler = start(&live_config(0));
    let mut viewer = Viewer::connect(profiler.live_addr().unwrap());
    assert!(viewer.read_until(WAIT, |f| !f.is_empty()));
    // Four batches of half as many threads as there are lane slots: the
    // later batches only find lanes if the earlier ones' were freed. Each
    // batch waits until its spans arrived, so a loaded machine only slows
    // the test down.
    let batch = runtime::MAX_LANES / 2;
    for round in 0..4 {
        let handles: Vec<_> = (0..batch)
            .map(|i| {
                std::thread::Builder::new()
                    .name(format!("short-{round}-{i}"))
                    .spawn(|| {
                        let _span = typhon_live_std::span!("short work");
                    })
                    .unwrap()
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let want = (round + 1) * batch;
        assert!(
            viewer.read_until(WAIT, |f| events_of(f).len() >= want),
            "round {round}: {} spans",
            events_of(&viewer.frames).len()
        );
    }
    assert_eq!(
        runtime::unrecorded_events(),
        0,
        "a thread found no free lane"
    );
    profiler.stop().unwrap();
}

#[test]
fn a_viewer_sending_garbage_is_ignored() {
    use std::io::Write;
    let _turn = turn();
    let profiler = start(&live_config(0));
    let mut viewer = Viewer::connect(profiler.live_addr().unwrap());
    let mut writer = viewer.stream.try_clone().unwrap();
    let flood = std::thread::spawn(move || {
        let junk = vec![0xa5u8; 64 << 10];
        let deadline = Instant::now() + Duration::from_millis(700);
        while Instant::now() < deadline {
            if writer.write_all(&junk).is_err() {
                break;
            }
        }
    });
    let name = runtime::intern("despite-garbage").unwrap();
    for i in 0..100 {
        runtime::instant(name, i);
        std::thread::sleep(Duration::from_millis(5));
    }
    flood.join().unwrap();
    assert!(viewer.read_until(WAIT, |f| events_of(f)
        .iter()
        .filter(|e| matches!(e, Event::Instant { name: n, .. } if *n == name))
        .count()
        == 100));
    assert!(viewer.errors.is_empty());
    profiler.stop().unwrap();
}

#[test]
fn without_a_reader_events_are_drained_and_discarded() {
    let _turn = turn();
    let profiler = start(&live_config(0));
    let name = runtime::intern("unwatched").unwrap();
    for i in 0..50_000 {
        runtime::instant(name, i);
    }
    std::thread::sleep(Duration::from_millis(100));
    // A viewer attaching later sees none of them.
    let mut viewer = Viewer::connect(profiler.live_addr().unwrap());
    assert!(viewer.read_until(WAIT, |f| f
        .iter()
        .any(|f| matches!(f, Owned::CatchUp { .. }))));
    viewer.read_for(Duration::from_millis(100));
    assert!(!events_of(&viewer.frames)
        .iter()
        .any(|e| matches!(e, Event::Instant { name: n, .. } if *n == name)));
    profiler.stop().unwrap();
}

#[test]
fn a_ring_passing_half_full_wakes_the_exporter_before_it_overflows() {
    let _turn = turn();
    let bad = ProfilerConfig {
        ring_events: 1000,
        ..ProfilerConfig::default()
    };
    assert!(matches!(
        Profiler::start(&bad, &Metadata::default()),
        Err(StartError::RingEvents { events: 1000 })
    ));
    let path = std::env::temp_dir().join(format!("typhon-wake-{}.tlt", std::process::id()));
    // 1024-event rings and a drain every 5 s: 600 events a burst would
    // overflow by the second burst if only the timer drained them.
    let config = ProfilerConfig {
        ring_events: 1024,
        drain_interval: Duration::from_secs(5),
        trace: Some(path.clone()),
        ..ProfilerConfig::default()
    };
    let profiler = start(&config);
    let name = runtime::intern("burst").unwrap();
    let (bursts, per_burst) = (8u64, 600u64);
    // A burst comes in chunks 2 ms apart: a wake at half full leaves the
    // exporter half a ring of headroom, 512 pushes. Pushed at once they
    // take some 50 µs, less than a loaded machine may take to run a woken
    // thread (CI lost 77 events so); in chunks they take 10 ms.
    let chunk = 100;
    for burst in 0..bursts {
        for i in 0..per_burst {
            runtime::instant(name, burst * per_burst + i);
            if (i + 1) % chunk == 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    let wakes = profiler.stats().early_wakes;
    profiler.stop().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let got = frames(read_stream(&bytes, &[], 1 << 20));
    let burst_events = events_of(&got)
        .iter()
        .filter(|e| matches!(e, Event::Instant { name: n, .. } if *n == name))
        .count() as u64;
    assert_eq!(
        burst_events,
        bursts * per_burst,
        "the rings overflowed ({wakes} early wakes)"
    );
    assert!(wakes >= bursts - 1, "{wakes} early wakes");
}

#[test]
fn the_configured_bind_address_is_the_one_listened_on() {
    let _turn = turn();
    let file = typhon_live_std::config::ConfigLayer::from_json(&serde_json_value(
        r#"{ "Typhon": { "Telemetry": { "Profiler": { "Live": 0, "BindAddress": "127.0.0.2" } } } }"#,
    ))
    .unwrap();
    let args = typhon_live_std::config::ConfigLayer::from_args(["--trace-less-host-flag"]).unwrap();
    let config = ProfilerConfig::layered([&file, &args]);
    let profiler = start(&config);
    let addr = profiler.live_addr().unwrap();
    assert_eq!(addr.ip(), std::net::IpAddr::from([127, 0, 0, 2]));
    let mut viewer = Viewer::connect(addr);
    assert!(viewer.read_until(WAIT, |f| matches!(f.first(), Some(Owned::Init { .. }))));
    profiler.stop().unwrap();
}

fn serde_json_value(text: &str) -> typhon_live_std::config::Json {
    text.parse().unwrap()
}

#[test]
fn a_trace_file_read_mid_session_holds_whole_frames() {
    let _turn = turn();
    let path = std::env::temp_dir().join(format!("typhon-live-crash-{}.tlt", std::process::id()));
    let config = ProfilerConfig {
        trace: Some(path.clone()),
        ..ProfilerConfig::default()
    };
    let profiler = start(&config);
    let name = runtime::intern("before-the-crash").unwrap();
    for i in 0..1000 {
        runtime::instant(name, i);
    }
    // As if the process died now: read what is on disk without stopping.
    let deadline = Instant::now() + WAIT;
    let seen = loop {
        let bytes = std::fs::read(&path).unwrap();
        let seen = read_stream(&bytes, &[], 16 << 20);
        let events: usize = seen
            .iter()
            .map(|s| match s {
                typhon_live_tests::Seen::Frame {
                    frame: Owned::Block { events, .. },
                    ..
                } => events.len(),
                _ => 0,
            })
            .sum();
        if events >= 1000 || Instant::now() > deadline {
            break seen;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(matches!(
        seen.first(),
        Some(typhon_live_tests::Seen::Frame {
            frame: Owned::Init { .. },
            ..
        })
    ));
    // Nothing but whole frames, except perhaps a frame still being written.
    for (i, s) in seen.iter().enumerate() {
        if let typhon_live_tests::Seen::Error(e) = s {
            assert!(
                i == seen.len() - 1 && matches!(e, typhon_live_core::DecodeError::Truncated { .. }),
                "{e}"
            );
        }
    }
    profiler.stop().unwrap();
    std::fs::remove_file(&path).unwrap();
}
