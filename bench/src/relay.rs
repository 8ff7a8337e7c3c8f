//! `-- --relay`: the relay under load, as a process of its own: 4 sources
//! stream spans at a rate split between them, 4 viewers read the relay,
//! and one reads source 0 directly. Per rate of the ladder: whether every
//! viewer got every event (no sequence gap, the events counted), the
//! latency from a source's send to a viewer's read (p50, p99) through the
//! relay and directly, and the relay's memory (VmRSS, VmHWM).
//!
//! Needs the `typhon-live` binary beside this one:
//! `cargo build --release -p typhon-live-cli` first.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use typhon_live_core::block::{block_scratch_len, max_block_frame_len, write_block};
use typhon_live_core::init::write_init;
use typhon_live_core::{
    BlockBuilder, Decoder, Event, LaneInfo, LaneKind, Metadata, NameTable, Payload,
};
use typhon_live_model::marks::LATENCY_MARK;
use typhon_live_reader::BlockBuffer;

const SOURCES: usize = 4;
/// Viewers of the relay, unless `--relay-viewers` says otherwise.
pub const VIEWERS: usize = 4;

/// A source: a listener whose every client gets an Init, then a Block a
/// millisecond once `go` is set, each with one `marker` instant carrying
/// its send time.
pub(crate) struct SourceServer {
    pub(crate) addr: String,
    pub(crate) thread: JoinHandle<u64>,
}

pub(crate) fn source(
    index: usize,
    per_second: f64,
    run: Duration,
    epoch: Instant,
    go: Arc<AtomicBool>,
) -> SourceServer {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().expect("bound").to_string();
    let clients: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
    let mut names: NameTable<4, 64> = NameTable::new();
    let [lane, span, marker] =
        ["main", "work", LATENCY_MARK].map(|n| names.intern(n).expect("room"));
    let seq = Arc::new(Mutex::new(0u32));
    {
        let (clients, seq) = (Arc::clone(&clients), Arc::clone(&seq));
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let _ = stream.set_nodelay(true);
                let meta = Metadata {
                    ticks_per_second: 1_000_000_000,
                    session_id: index as u64 + 1,
                    process_name: "bench source",
                    ..Metadata::default()
                };
                let lanes = [LaneInfo {
                    id: 0,
                    name: lane,
                    kind: LaneKind::Main,
                }];
                let mut out = vec![0u8; 4096];
                // Held while the Init goes out, so no Block slips between.
                let seq = seq.lock().expect("not poisoned");
                let n = write_init(&mut out, *seq, &meta, &names, lanes.into_iter()).expect("fits");
                if stream.write_all(&out[..n]).is_ok() {
                    clients.lock().expect("not poisoned").push(stream);
                }
            }
        });
    }
    let thread = std::thread::spawn(move || {
        while !go.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut scratch = vec![0u8; block_scratch_len(1 << 16)];
        let mut out = vec![0u8; max_block_frame_len(scratch.len(), 0)];
        let (started, mut sent, mut id) = (Instant::now(), 0u64, 0u32);
        let mut period = 0u64;
        while started.elapsed() < run {
            period += 1;
            let due = (started.elapsed().as_secs_f64() * per_second) as u64;
            let mut block = BlockBuilder::new(&mut scratch);
            let now = epoch.elapsed().as_nanos() as u64;
            while sent < due && block.records() < (1 << 16) - 1 {
                id = id.wrapping_add(1).max(1);
                let start = now.saturating_sub(1000);
                block.push(
                    0,
                    &Event::Span {
                        start,
                        duration: 500 + u64::from(id % 97),
                        name: span,
                        id,
                        parent: 0,
                        arg: None,
                    },
                );
                sent += 1;
            }
            block.push(
                0,
                &Event::Instant {
                    time: now,
                    name: marker,
                    payload: unix_ns(),
                },
            );
            let mut seq = seq.lock().expect("not poisoned");
            let n = write_block(&mut out, *seq, &block, &[]).expect("sized for the largest");
            *seq = seq.wrapping_add(1);
            clients
                .lock()
                .expect("not poisoned")
                .retain_mut(|c| c.write_all(&out[..n]).is_ok());
            drop(seq);
            // A Block a millisecond.
            let next = started + Duration::from_millis(period);
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        sent
    });
    SourceServer { addr, thread }
}

/// What a viewer read.
#[derive(Default)]
struct Seen {
    spans: u64,
    gaps: u64,
    latencies_ns: Vec<u64>,
}

/// Reads `addr` until `stop`, counting `work` spans, sequence gaps and
/// the markers' latencies.
fn viewer(addr: String, stop: Arc<AtomicBool>) -> JoinHandle<Seen> {
    std::thread::spawn(move || {
        let mut stream = TcpStream::connect(&addr).expect("the viewer connects");
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("a timeout");
        let mut buf = vec![0u8; 16 << 20];
        let mut decoder = Decoder::new(&mut buf);
        let (mut chunk, mut unpacked) = (vec![0u8; 1 << 18], BlockBuffer::new());
        let (mut seen, mut expected) = (Seen::default(), None::<u32>);
        let (mut markers, mut works) = (Vec::new(), Vec::new());
        while !stop.load(Ordering::Acquire) {
            let n = match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(_) => continue,
            };
            let mut rest = &chunk[..n];
            while !rest.is_empty() {
                let used = decoder.feed(rest);
                rest = &rest[used..];
                while let Ok(Some(frame)) = decoder.next() {
                    if frame.is_sequenced() {
                        if let Some(e) = expected {
                            seen.gaps += u64::from(frame.seq.wrapping_sub(e));
                        }
                        expected = Some(frame.seq.wrapping_add(1));
                    }
                    let names = |list: &mut Vec<u32>,
                                 pairs: &mut dyn Iterator<Item = (u32, &str)>,
                                 text: &str| {
                        list.extend(pairs.filter(|(_, n)| *n == text).map(|(id, _)| id));
                    };
                    match frame.parse() {
                        Ok(Payload::Init(init)) => {
                            expected = Some(init.next_seq);
                            names(&mut markers, &mut init.names(), LATENCY_MARK);
                            names(&mut works, &mut init.names(), "work");
                        }
                        Ok(Payload::Definitions(defs)) => {
                            names(&mut markers, &mut defs.names(), LATENCY_MARK);
                            names(&mut works, &mut defs.names(), "work");
                        }
                        Ok(Payload::Block(block)) => {
                            let now = unix_ns();
                            if let Ok(events) = unpacked.events(&block) {
                                for (_, event) in events.flatten() {
                                    match event {
                                        Event::Span { name, .. } if works.contains(&name) => {
                                            seen.spans += 1
                                        }
                                        Event::Instant { name, payload, .. }
                                            if markers.contains(&name) =>
                                        {
                                            seen.latencies_ns.push(now.saturating_sub(payload));
                                        }
                                        _ => {}
                                    }
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        seen
    })
}

/// A command of the `typhon-live` binary beside this one; `None`, said
/// on stderr, when it has not been built.
pub(crate) fn typhon_live() -> Option<Command> {
    built_beside("typhon-live", "cargo build --release -p typhon-live-cli")
}

/// A command of binary `name` beside this one; `None`, said on stderr
/// with the command that builds it (`build`), when it has not been built.
pub(crate) fn built_beside(name: &str, build: &str) -> Option<Command> {
    let binary = std::env::current_exe().ok()?.with_file_name(name);
    if !binary.is_file() {
        eprintln!("bench: {} not found: run `{build}` first", binary.display());
        return None;
    }
    Some(Command::new(binary))
}

/// The relay process, and the address its viewers connect to.
fn relay(sources: &[String], seconds: u64) -> Option<(Child, String)> {
    let mut command = typhon_live()?;
    command.args(["relay", "--listen", "0", "--duration", &seconds.to_string()]);
    for (i, addr) in sources.iter().enumerate() {
        command.args(["--source", &format!("s{i}={addr}")]);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take()?)
        .read_line(&mut line)
        .ok()?;
    let addr = line
        .trim()
        .strip_prefix("typhon-live relay: viewers on ")?
        .to_owned();
    Some((child, addr))
}

/// The Unix time, ns: what a latency mark carries (LATENCY_MARK).
pub(crate) fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The relay process's resident and peak memory, KiB.
pub(crate) fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

pub(crate) fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize] as f64 / 1e6
}

/// One step of the ladder at `per_second` events in all; its row.
fn step(per_second: f64, run: Duration, viewers: usize) -> Option<String> {
    let (epoch, go, stop) = (
        Instant::now(),
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let servers: Vec<SourceServer> = (0..SOURCES)
        .map(|i| source(i, per_second / SOURCES as f64, run, epoch, Arc::clone(&go)))
        .collect();
    let addrs: Vec<String> = servers.iter().map(|s| s.addr.clone()).collect();
    let (mut child, viewers_at) = relay(&addrs, run.as_secs() + 30)?;
    let direct = viewer(addrs[0].clone(), Arc::clone(&stop));
    let viewers: Vec<_> = (0..viewers)
        .map(|_| viewer(viewers_at.clone(), Arc::clone(&stop)))
        .collect();
    // Everyone connected and given an Init before the first Block.
    std::thread::sleep(Duration::from_secs(2));
    go.store(true, Ordering::Release);
    let sent: Vec<u64> = servers
        .into_iter()
        .map(|s| s.thread.join().unwrap_or(0))
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let (rss, peak) = memory(child.id());
    stop.store(true, Ordering::Release);
    let direct = direct.join().unwrap_or_default();
    let seen: Vec<Seen> = viewers
        .into_iter()
        .map(|v| v.join().unwrap_or_default())
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    let total: u64 = sent.iter().sum();
    let mut relayed: Vec<u64> = seen
        .iter()
        .flat_map(|s| s.latencies_ns.iter().copied())
        .collect();
    relayed.sort_unstable();
    let mut straight = direct.latencies_ns;
    straight.sort_unstable();
    let complete = seen.iter().all(|s| s.spans == total && s.gaps == 0);
    let got: Vec<String> = seen.iter().map(|s| format!("{}", s.spans)).collect();
    Some(format!(
        "| {:.2} M/s | {total} | {} | {} | {:.2} / {:.2} ms | {:.2} / {:.2} ms | {:.1} / {:.1} MiB |",
        per_second / 1e6,
        got.join(", "),
        if complete { "yes" } else { "NO" },
        percentile(&relayed, 0.5),
        percentile(&relayed, 0.99),
        percentile(&straight, 0.5),
        percentile(&straight, 0.99),
        rss as f64 / 1024.0,
        peak as f64 / 1024.0,
    ))
}

/// Prints the ladder's table, with `viewers` reading the relay.
pub fn print(quick: bool, viewers: usize) {
    let run = Duration::from_secs(if quick { 2 } else { 5 });
    println!(
        "relay: {SOURCES} sources, {viewers} viewers, {} s a rate; latency from a source's send to a viewer's read",
        run.as_secs()
    );
    println!("| events/s (all sources) | sent | each viewer got | all, no gap | through the relay p50 / p99 | directly p50 / p99 | relay RSS / peak |");
    println!("|---|---:|---|---|---:|---:|---:|");
    for rate in [250e3, 500e3, 1e6, 2e6, 4e6, 8e6, 16e6] {
        match step(rate, run, viewers) {
            Some(row) => println!("{row}"),
            None => return,
        }
    }
}
