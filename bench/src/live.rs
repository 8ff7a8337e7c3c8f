//! End to end over loopback: a producer recording at a paced rate, the
//! profiler exporting, and a viewer in this process decoding every frame.
//! Measures drops, latency (record to decoded, on the same clock) and RSS.

use std::io::Read;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use typhon_live_core::{Decoder, Event, Metadata, Payload};
use typhon_live_model::Model;
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler};

/// What the viewer saw in one run.
pub struct Run {
    pub rate: f64,
    /// How long the producer recorded, in seconds.
    pub seconds: f64,
    pub recorded: u64,
    pub received: u64,
    pub frames_missed: u64,
    pub events_dropped: u64,
    /// Record-to-decode latencies in nanoseconds, sorted.
    pub latencies: Vec<u64>,
    /// Times the recording thread woke the exporter early.
    pub early_wakes: u64,
    /// The exporter's longest cycle.
    pub worst_cycle_us: u64,
}

impl Run {
    pub fn lossless(&self) -> bool {
        self.frames_missed == 0 && self.events_dropped == 0 && self.received == self.recorded
    }

    /// Events a second the producer recorded: below the rate asked when
    /// its thread could not keep up.
    pub fn achieved(&self) -> f64 {
        self.recorded as f64 / self.seconds.max(f64::MIN_POSITIVE)
    }

    /// The producer's thread recorded less than 95 % of the rate asked:
    /// the rung was not run at its rate.
    pub fn short(&self) -> bool {
        self.achieved() < 0.95 * self.rate
    }

    /// What stopped it, in words: the producer's thread, the rings (the
    /// exporter drained them too late), the stream (frames dropped for a
    /// reader behind), or the reader (events not read by the end).
    pub fn stopped_by(&self) -> &'static str {
        if self.short() {
            "the producer's thread"
        } else if self.events_dropped > 0 {
            "the rings: the exporter drained them too late"
        } else if self.frames_missed > 0 {
            "the stream: frames dropped for a reader behind"
        } else {
            "the reader: events not read by the end"
        }
    }

    pub fn percentile(&self, q: f64) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        let i = ((self.latencies.len() - 1) as f64 * q).round() as usize;
        self.latencies[i] as f64 / 1e6
    }
}

/// Connects to `addr` and hands every byte read to `take`, until the
/// peer closes or, once `done` is set, no event came for 300 ms: `take`
/// says whether its bytes brought any (a live process sends its lanes'
/// CPU samples every 10 ms, events or not).
fn read_all(addr: std::net::SocketAddr, done: &AtomicBool, mut take: impl FnMut(&[u8]) -> bool) {
    let mut stream = TcpStream::connect(addr).expect("viewer connects");
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let mut chunk = vec![0u8; 1 << 20];
    let mut quiet_since = None::<Instant>;
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => 0,
        };
        if take(&chunk[..n]) {
            quiet_since = None;
        } else if done.load(Ordering::Acquire) {
            // The producer finished: wait for the last Blocks, then stop.
            let since = *quiet_since.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_millis(300) {
                break;
            }
        }
    }
}

fn empty_run() -> Run {
    Run {
        rate: 0.0,
        seconds: 0.0,
        recorded: 0,
        received: 0,
        frames_missed: 0,
        events_dropped: 0,
        latencies: Vec::new(),
        early_wakes: 0,
        worst_cycle_us: 0,
    }
}

fn viewer(addr: std::net::SocketAddr, done: Arc<AtomicBool>, name: &str) -> Run {
    let mut buf = vec![0u8; 16 << 20];
    let mut decoder = Decoder::new(&mut buf);
    let mut names = std::collections::HashMap::new();
    let mut unpacked = typhon_live_reader::BlockBuffer::new();
    let mut run = empty_run();
    let mut expected = None;
    read_all(addr, &done, |mut rest| {
        let received = run.received;
        loop {
            let taken = decoder.feed(rest);
            rest = &rest[taken..];
            while let Ok(Some(frame)) = decoder.next() {
                let Ok(payload) = frame.parse() else { continue };
                if !matches!(payload, Payload::Init(_)) {
                    if let Some(e) = expected {
                        run.frames_missed += u64::from(frame.seq.wrapping_sub(e));
                    }
                    expected = Some(frame.seq.wrapping_add(1));
                }
                match payload {
                    Payload::Init(init) => {
                        expected = Some(init.next_seq);
                        names.extend(init.names().map(|(id, n)| (id, n.to_owned())));
                    }
                    Payload::Definitions(defs) => {
                        names.extend(defs.names().map(|(id, n)| (id, n.to_owned())))
                    }
                    Payload::Block(block) => {
                        let now = runtime::now();
                        run.events_dropped += block.drops().map(|(_, d)| u64::from(d)).sum::<u64>();
                        let Ok(events) = unpacked.events(&block) else {
                            continue;
                        };
                        for item in events.flatten() {
                            if let (_, Event::Instant { name: id, time, .. }) = item {
                                if names.get(&id).is_some_and(|n: &String| n == name) {
                                    run.received += 1;
                                    // Sampled, so that the vector stays small.
                                    if run.received.is_multiple_of(64) {
                                        run.latencies.push(now.saturating_sub(time));
                                    }
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
            if rest.is_empty() {
                break run.received > received;
            }
        }
    });
    run.latencies.sort_unstable();
    run
}

/// The live view's model as the viewer: every frame goes through
/// `Model::on_frame`, and a summary is made four times a second, as the
/// terminal view draws; no terminal.
fn model_viewer(addr: std::net::SocketAddr, done: Arc<AtomicBool>) -> Run {
    let mut buf = vec![0u8; 16 << 20];
    let mut decoder = Decoder::new(&mut buf);
    let mut model = Model::default();
    let mut last_summary = Instant::now();
    read_all(addr, &done, |mut rest| {
        let events = model.events();
        loop {
            let taken = decoder.feed(rest);
            rest = &rest[taken..];
            while let Ok(Some(frame)) = decoder.next() {
                let _ = model.on_frame(&frame, typhon_live_tui::uptime::now());
            }
            if rest.is_empty() {
                break;
            }
        }
        if last_summary.elapsed() >= Duration::from_millis(250) {
            last_summary = Instant::now();
            std::hint::black_box(model.summary(typhon_live_tui::uptime::at(last_summary)));
        }
        model.events() > events
    });
    let mut run = empty_run();
    run.received = model.events();
    run.frames_missed = model.frames_dropped();
    run.events_dropped = model.events_dropped();
    run
}

/// Records instants at `rate` per second for `duration` on one thread while
/// a viewer decodes everything, with rings of `ring_events` events.
pub fn run_at(rate: f64, duration: Duration, ring_events: usize) -> Run {
    let name = format!("e2e-{rate}");
    let viewer_name = name.clone();
    produce(
        rate,
        duration,
        ring_events,
        move |addr, done| viewer(addr, done, &viewer_name),
        runtime::instant,
        &name,
    )
}

/// Records spans at `rate` per second for `duration` on one thread while
/// the live view's model (`typhon_live_model::Model`) takes every
/// frame: the rate at which a viewer keeps up.
pub fn model_run_at(rate: f64, duration: Duration, ring_events: usize) -> Run {
    produce(
        rate,
        duration,
        ring_events,
        model_viewer,
        |id, _| drop(runtime::span(id)),
        &format!("keep-up-{rate}"),
    )
}

/// Starts a profiler with a live port, a viewer on it (`view`), and
/// records `record(id, n)` at `rate` per second for `duration`.
fn produce(
    rate: f64,
    duration: Duration,
    ring_events: usize,
    view: impl FnOnce(std::net::SocketAddr, Arc<AtomicBool>) -> Run + Send + 'static,
    record: impl Fn(typhon_live_core::NameId, u64),
    name: &str,
) -> Run {
    let config = ProfilerConfig {
        live: Some(0),
        ring_events,
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
    let addr = profiler.live_addr().expect("live address");
    let done = Arc::new(AtomicBool::new(false));
    let viewer = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || view(addr, done))
    };
    // Let the viewer attach and read its Init first.
    std::thread::sleep(Duration::from_millis(100));
    let id = runtime::intern(name).expect("name");
    let started = Instant::now();
    let mut recorded = 0u64;
    while started.elapsed() < duration {
        let due = (started.elapsed().as_secs_f64() * rate) as u64;
        while recorded < due {
            record(id, recorded);
            recorded += 1;
        }
        std::hint::spin_loop();
    }
    std::thread::sleep(Duration::from_millis(50));
    done.store(true, Ordering::Release);
    let mut run = viewer.join().expect("viewer");
    let stats = profiler.stats();
    profiler.stop().expect("stop");
    run.rate = rate;
    run.seconds = duration.as_secs_f64();
    run.recorded = recorded;
    run.early_wakes = stats.early_wakes;
    run.worst_cycle_us = stats.worst_cycle_us;
    run
}

/// Resident set size of this process in bytes.
pub fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

/// RSS growth while one thread records spans as fast as it can for
/// `duration` with a profiler on and nobody watching.
pub fn rss_growth_unwatched(duration: Duration) -> (u64, u64) {
    let profiler =
        Profiler::start(&ProfilerConfig::default(), &Metadata::default()).expect("profiler");
    // Warm up: every page the steady state touches is touched once.
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(500) {
        let _span = typhon_live_std::span!("unwatched");
    }
    let before = rss();
    let started = Instant::now();
    let mut spans = 0u64;
    while started.elapsed() < duration {
        for _ in 0..1000 {
            let _span = typhon_live_std::span!("unwatched");
        }
        spans += 1000;
    }
    let after = rss();
    profiler.stop().expect("stop");
    (after.saturating_sub(before), spans)
}

/// A puffin_http server on a free loopback port, scopes on; and its address.
fn puffin_server() -> (puffin_http::Server, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let addr = format!("127.0.0.1:{port}");
    let server = puffin_http::Server::new(&addr).expect("puffin_http server");
    puffin::set_scopes_on(true);
    (server, addr)
}

/// The same workload through puffin_http: scopes recorded at `rate` per
/// second, one puffin frame a millisecond (puffin's unit of export), and a
/// client reading every frame. Returns (scopes expected, scopes received):
/// puffin counts one scope more per frame than were recorded in it.
pub fn puffin_run_at(rate: f64, duration: Duration) -> (u64, u64) {
    let (server, addr) = puffin_server();
    let done = Arc::new(AtomicBool::new(false));
    let client = {
        let (addr, done) = (addr.clone(), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut stream = TcpStream::connect(&addr).expect("puffin client connects");
            stream
                .set_read_timeout(Some(Duration::from_millis(300)))
                .expect("timeout");
            let mut received = 0u64;
            loop {
                match read_puffin_frame(&mut stream) {
                    Some(frame) => received += frame.meta().num_scopes as u64,
                    None if done.load(Ordering::Acquire) => break,
                    None => {}
                }
            }
            received
        })
    };
    // Let the server accept the client before the first frame.
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.num_clients() == 0 && Instant::now() < deadline {
        puffin::GlobalProfiler::lock().new_frame();
        std::thread::sleep(Duration::from_millis(10));
    }
    // Frames sent before counting starts are not counted by either side.
    std::thread::sleep(Duration::from_millis(100));
    puffin::GlobalProfiler::lock().new_frame();
    let started = Instant::now();
    let mut recorded = 0u64;
    let mut frames = 0u64;
    let mut next_frame = Duration::from_millis(1);
    while started.elapsed() < duration {
        let elapsed = started.elapsed();
        let due = (elapsed.as_secs_f64() * rate) as u64;
        while recorded < due {
            puffin::profile_scope!("e2e");
            recorded += 1;
        }
        if elapsed >= next_frame {
            puffin::GlobalProfiler::lock().new_frame();
            frames += 1;
            next_frame += Duration::from_millis(1);
        }
    }
    puffin::GlobalProfiler::lock().new_frame();
    frames += 1;
    std::thread::sleep(Duration::from_millis(500));
    done.store(true, Ordering::Release);
    let received = client.join().expect("puffin client");
    puffin::set_scopes_on(false);
    drop(server);
    (recorded + frames, received)
}

/// One puffin_http message: the protocol version, then a frame (what
/// puffin_http's own client reads; its reader is not public).
fn read_puffin_frame(stream: &mut impl Read) -> Option<puffin::FrameData> {
    let mut version = [0u8; 2];
    stream.read_exact(&mut version).ok()?;
    if u16::from_le_bytes(version) != puffin_http::PROTOCOL_VERSION {
        return None;
    }
    puffin::FrameData::read_next(stream).ok().flatten()
}

/// The clock puffin reads on the replay thread: set before each scope
/// begins or ends, so that puffin records exactly the replayed times.
static REPLAY_NS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

fn replay_now() -> puffin::NanoSecond {
    REPLAY_NS.load(Ordering::Relaxed)
}

/// A reader that counts the bytes it reads.
struct Counted<R> {
    inner: R,
    bytes: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// puffin_http's bytes on the wire per scope for `spans` ((start, end,
/// name, depth) in begin order, [`typhon_live_tests::steady_spans`]),
/// replayed on one thread with puffin reading the replayed times, one
/// puffin frame per `per_frame` spans (puffin's unit of export: a tick).
/// Counts every byte a client of a real puffin_http server reads, and the
/// scopes it receives. Returns (bytes, scopes).
pub fn puffin_wire_bytes(spans: &[(u64, u64, u32, usize)], per_frame: usize) -> (u64, u64) {
    let names = typhon_live_tests::STEADY_TREE;
    let (server, addr) = puffin_server();
    let expected_frames = spans.len().div_ceil(per_frame) as u64;
    let client = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            let stream = TcpStream::connect(&addr).expect("puffin client connects");
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .expect("timeout");
            let mut counted = Counted {
                inner: stream,
                bytes: 0,
            };
            let (mut frames, mut scopes) = (0u64, 0u64);
            while frames < expected_frames {
                let Some(frame) = read_puffin_frame(&mut counted) else {
                    break;
                };
                frames += 1;
                scopes += frame.meta().num_scopes as u64;
            }
            (counted.bytes, scopes)
        })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.num_clients() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Replay on a thread of its own, whose puffin clock is the replay's.
    let spans = spans.to_vec();
    std::thread::spawn(move || {
        puffin::ThreadProfiler::initialize(replay_now, puffin::internal_profile_reporter);
        let ids = puffin::GlobalProfiler::lock().register_user_scopes(
            &names.map(|(name, _, _)| puffin::ScopeDetails::from_scope_name(name)),
        );
        for frame in spans.chunks(per_frame) {
            // Begin in order; end each span when the next one starts past
            // its end, deepest first.
            let mut open: Vec<(u64, usize)> = Vec::new();
            let close = |open: &mut Vec<(u64, usize)>, until: u64| {
                while let Some(&(end, offset)) = open.last() {
                    if end > until {
                        break;
                    }
                    REPLAY_NS.store(end as i64, Ordering::Relaxed);
                    puffin::ThreadProfiler::call(|tp| tp.end_scope(offset));
                    open.pop();
                }
            };
            for &(start, end, name, _) in frame {
                close(&mut open, start);
                REPLAY_NS.store(start as i64, Ordering::Relaxed);
                let offset =
                    puffin::ThreadProfiler::call(|tp| tp.begin_scope(ids[name as usize], ""));
                open.push((end, offset));
            }
            close(&mut open, u64::MAX);
            puffin::GlobalProfiler::lock().new_frame();
            // puffin_http drops a frame its client's queue has no room
            // for: pace the replay so that every frame is sent.
            std::thread::sleep(Duration::from_millis(1));
        }
    })
    .join()
    .expect("replay");
    let result = client.join().expect("puffin client");
    puffin::set_scopes_on(false);
    drop(server);
    result
}
