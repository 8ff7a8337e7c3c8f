//! The embedded example's firmware booted in QEMU (`qemu-system-arm -M
//! mps2-an386`, through `examples/embedded/run-qemu.sh`), streaming over
//! its UART, which QEMU serves on a loopback TCP port: decoded with the
//! core's decoder, then watched, recorded, inspected and converted with
//! `typhon-live`, with QEMU killed mid-recording; and the ITM build on the
//! same board, which must run on with nobody reading the ITM.
//!
//! Skipped, saying why, where `qemu-system-arm` or the
//! `thumbv7em-none-eabihf` target is missing; `.ci/run` installs both.

mod common;
#[path = "../../convert/tests/reader/mod.rs"]
mod reader;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::temp;
use typhon_live_core::{Decoder, Event, GaugeValue, LaneKind, Payload};
use typhon_live_reader::BlockBuffer;

/// The UART's line rate in the firmware, and what it carries: 10 bits a
/// byte (start, 8 data, stop).
const BAUD: f64 = 115_200.0;
/// The firmware's main loop runs at this rate (`PASSES_PER_SECOND`).
const PASS_HZ: f64 = 100.0;

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/embedded")
}

/// Why this machine cannot boot the firmware, if it cannot.
fn missing() -> Option<String> {
    if !cfg!(unix) {
        // run-qemu.sh (bash) builds and boots it; nm reads its symbols.
        return Some("the QEMU firmware test runs on a Unix host only (bash, nm, QEMU)".into());
    }
    let qemu = Command::new("qemu-system-arm")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !qemu.is_ok_and(|s| s.success()) {
        return Some("qemu-system-arm not installed (apt-get install qemu-system-arm)".into());
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    if !Path::new(&sysroot)
        .join("lib/rustlib/thumbv7em-none-eabihf")
        .is_dir()
    {
        return Some(
            "the thumbv7em-none-eabihf target is not installed \
             (rustup target add thumbv7em-none-eabihf)"
                .into(),
        );
    }
    None
}

/// The firmware built with `run-qemu.sh`'s `flags`, copied where no other
/// build overwrites it; `None` (reason printed) where it cannot run here.
fn firmware(flags: &[&str]) -> Option<PathBuf> {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    if let Some(why) = missing() {
        common::skipped(&why);
        return None;
    }
    let key = flags.join(" ");
    // One build at a time: every variant is linked to the same path.
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, elf)) = built.iter().find(|(k, _)| *k == key) {
        return Some(elf.clone());
    }
    let out = Command::new("bash")
        .arg(example_dir().join("run-qemu.sh"))
        .args(flags)
        .arg("--build-only")
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "the firmware does not build:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let linked = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    // Beside the build, overwritten by the next run rather than left in
    // the temporary directory.
    let linked = PathBuf::from(linked);
    let elf = linked.with_file_name(format!("firmware-qemu-test{}", key.replace(' ', "")));
    std::fs::copy(&linked, &elf).expect("copy the firmware");
    built.push((key, elf.clone()));
    Some(elf)
}

/// QEMU running the firmware; killed when dropped.
struct Qemu {
    child: Child,
    addr: String,
    monitor: String,
    log: PathBuf,
}

/// A free loopback port (free when asked; QEMU takes it a moment later).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl Qemu {
    /// Boots `elf` with its UART and QEMU's monitor on free loopback ports
    /// and waits until QEMU accepts connections on the UART's.
    fn boot(name: &str, elf: &Path) -> Qemu {
        Qemu::boot_at(name, elf, free_port())
    }

    /// [`Qemu::boot`] with the UART on `port`.
    fn boot_at(name: &str, elf: &Path, port: u16) -> Qemu {
        let monitor = free_port();
        let log = temp(&format!("qemu-{name}.log"));
        let child = Command::new("bash")
            .arg(example_dir().join("run-qemu.sh"))
            .args(["--port", &port.to_string()])
            .args(["--monitor", &monitor.to_string()])
            .arg("--elf")
            .arg(elf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("run-qemu.sh starts");
        let mut qemu = Qemu {
            child,
            addr: format!("127.0.0.1:{port}"),
            monitor: format!("127.0.0.1:{monitor}"),
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(probe) = TcpStream::connect(&qemu.addr) {
                drop(probe);
                return qemu;
            }
            if let Ok(Some(status)) = qemu.child.try_wait() {
                panic!("QEMU exited ({status}):\n{}", qemu.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "QEMU never listened on {}:\n{}",
                qemu.addr,
                qemu.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The 32-bit word at `address` of the guest's memory, read through
    /// QEMU's monitor (`xp`).
    fn read_word(&self, address: u64) -> u32 {
        let mut monitor = TcpStream::connect(&self.monitor).expect("QEMU's monitor");
        monitor
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        monitor
            .write_all(format!("xp /1wx {address:#x}\n").as_bytes())
            .expect("ask the monitor");
        // It answers "00000000200029f0: 0x0000002a".
        let (mut text, mut chunk) = (String::new(), [0u8; 1024]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(n) = monitor.read(&mut chunk) {
                text.push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
            let word = text
                .split(": 0x")
                .nth(1)
                .and_then(|rest| rest.get(..8))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok());
            if let Some(word) = word {
                return word;
            }
        }
        panic!("the monitor did not answer xp: {text:?}");
    }

    /// Kills QEMU at once, as a crash or a pulled cable would.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The address of the firmware's static `name` (`nm`, from binutils).
fn symbol(elf: &Path, name: &str) -> u64 {
    let out = Command::new("nm")
        .arg("-C")
        .arg(elf)
        .output()
        .expect("nm runs (binutils)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|line| line.ends_with(name))
        .and_then(|line| line.split(' ').next())
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .unwrap_or_else(|| panic!("no symbol {name} in {}", elf.display()))
}

/// The UART's bytes over at least `least` and then until `enough` says so
/// (asked twice a second), or `most` has passed: on a loaded machine the
/// guest runs slower than the wall clock, and a fixed window may end
/// before what the test waits for.
fn read_uart_until(
    addr: &str,
    least: Duration,
    most: Duration,
    enough: impl Fn(&[u8]) -> bool,
) -> Vec<u8> {
    let mut uart = TcpStream::connect(addr).expect("connect to the UART");
    uart.set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let (mut bytes, mut chunk) = (Vec::new(), [0u8; 4096]);
    let started = Instant::now();
    let mut asked = started;
    while started.elapsed() < most {
        match uart.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(_) => {}
        }
        if started.elapsed() >= least && asked.elapsed() >= Duration::from_millis(500) {
            if enough(&bytes) {
                break;
            }
            asked = Instant::now();
        }
    }
    bytes
}

/// What the decoded UART stream holds.
#[derive(Default)]
struct Stream {
    inits: u32,
    /// Sequence numbers missing after an Init, and Block drop counts.
    gaps: u64,
    dropped: u64,
    /// Lanes as the Inits describe them: id → (name, kind).
    lanes: HashMap<u16, (String, LaneKind)>,
    /// Events after the first Init, with their names resolved.
    events: Vec<(u16, String, Event)>,
}

fn decode(bytes: &[u8]) -> Stream {
    let mut buf = vec![0u8; 1 << 16];
    let mut decoder = Decoder::new(&mut buf);
    let mut unpacked = BlockBuffer::new();
    let (mut stream, mut names) = (Stream::default(), HashMap::new());
    let (mut any_frame, mut expected) = (false, None::<u32>);
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = decoder.feed(rest);
        rest = &rest[n..];
        loop {
            let frame = match decoder.next() {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    assert!(!any_frame, "damage after the first frame: {e}");
                    continue;
                }
            };
            any_frame = true;
            let payload = frame.parse().expect("a whole frame parses");
            if let Payload::Init(init) = &payload {
                stream.inits += 1;
                expected = Some(init.next_seq);
                names.extend(init.names().map(|(id, n)| (id, n.to_owned())));
                for lane in init.lanes() {
                    let name = names.get(&lane.name).cloned().unwrap_or_default();
                    stream.lanes.insert(lane.id, (name, lane.kind));
                }
                continue;
            }
            // Before the first Init (joined mid-stream): no names yet.
            let Some(next) = expected else {
                continue;
            };
            stream.gaps += u64::from(frame.seq.wrapping_sub(next));
            expected = Some(frame.seq.wrapping_add(1));
            if let Payload::Block(block) = payload {
                stream.dropped += block.drops().map(|(_, n)| u64::from(n)).sum::<u64>();
                for item in unpacked.events(&block).expect("columns") {
                    let (lane, event) = item.expect("event");
                    let id = match event {
                        Event::Span { name, .. }
                        | Event::Instant { name, .. }
                        | Event::Poll { name, .. }
                        | Event::TaskBegin { name, .. }
                        | Event::TaskEnd { name, .. }
                        | Event::Field { key: name, .. } => Some(name),
                        Event::Gauge { gauge, .. } => Some(gauge),
                        Event::TickStart { .. }
                        | Event::TickEnd { .. }
                        | Event::Mark { .. }
                        | Event::Allocated { .. }
                        | Event::Unknown { .. } => None,
                    };
                    let name = id.map_or(String::new(), |id| {
                        names.get(&id).cloned().expect("every name is in the Init")
                    });
                    stream.events.push((lane, name, event));
                }
            }
        }
    }
    stream
}

#[test]
fn the_firmware_streams_over_its_uart_under_qemu() {
    let Some(elf) = firmware(&[]) else {
        return;
    };
    let qemu = Qemu::boot("stream", &elf);
    // The Init is repeated every 2 s of the guest's clock: a viewer that
    // joins late has names within 2 s. Two in 5 s, unless a loaded
    // machine slows the guest (then read on, up to 20 s).
    let started = Instant::now();
    let bytes = read_uart_until(
        &qemu.addr,
        Duration::from_secs(5),
        Duration::from_secs(20),
        |bytes| decode(bytes).inits >= 2,
    );
    let stream = decode(&bytes);
    assert!(
        stream.inits >= 2,
        "{} Inits in {:?}",
        stream.inits,
        started.elapsed()
    );
    assert_eq!(
        stream.lanes.get(&0),
        Some(&("main loop".to_owned(), LaneKind::Main))
    );
    assert_eq!(
        stream.lanes.get(&1),
        Some(&("SysTick".to_owned(), LaneKind::Other))
    );
    // The link is faster than the events: nothing lost.
    assert_eq!((stream.gaps, stream.dropped), (0, 0));

    // The main loop, in order: per tick its three nested spans, the
    // control span's argument and the gauge derived from the tick.
    let mut tick = None::<u64>;
    let (mut ticks, mut first_start, mut last_start) = (0u64, None, 0u64);
    let mut children = Vec::new();
    let mut checked_passes = 0;
    let mut link_gauges: HashMap<&str, Vec<i64>> = HashMap::new();
    for (_, name, event) in stream.events.iter().filter(|(lane, ..)| *lane == 0) {
        match *event {
            Event::TickStart { tick: t, time } => {
                if let Some(previous) = tick {
                    assert_eq!(t, previous + 1, "ticks in order, none missing");
                }
                tick = Some(t);
                ticks += 1;
                children.clear();
                first_start.get_or_insert(time);
                last_start = time;
            }
            Event::Span {
                id, parent, arg, ..
            } => match name.as_str() {
                // The children end first: their parent is the pass's span.
                "sense" | "control" => {
                    if name == "control" {
                        assert_eq!(arg, tick.map(|t| t % 7), "control's argument");
                    }
                    children.push(parent);
                }
                "control loop" => {
                    assert_eq!(parent, 0, "the pass's span is a root");
                    assert_eq!(children, [id, id], "sense and control nest in it");
                    children.clear();
                    checked_passes += 1;
                }
                other => panic!("unexpected span {other:?}"),
            },
            Event::Gauge {
                value: GaugeValue::Int(v),
                ..
            } => match name.as_str() {
                "queue.depth" => {
                    assert_eq!(Some(v as u64), tick.map(|t| t % 5), "queue.depth")
                }
                "link.backlog" | "link.refused" | "link.errors" => {
                    link_gauges.entry(name.as_str()).or_default().push(v);
                }
                other => panic!("unexpected gauge {other:?}"),
            },
            _ => {}
        }
    }
    assert!(ticks >= 100 && checked_passes >= 100, "{ticks} ticks");
    // The loop's period, by the firmware's own clock.
    let period = (last_start - first_start.unwrap_or(0)) as f64 / (ticks - 1) as f64 / 1e6;
    assert!(
        (period * PASS_HZ - 1.0).abs() < 0.1,
        "a pass every {:.2} ms",
        period * 1e3
    );
    assert!(link_gauges["link.refused"].iter().all(|&v| v == 0));
    assert!(link_gauges["link.errors"].iter().all(|&v| v == 0));

    // The interrupt: samples on their own lane, every tenth interrupt, each
    // the hash of the interrupt's count. Its time gives the count: the
    // handler reads the clock after counting, so the time is at least the
    // count's millisecond, and later by however long the handler waited
    // (a loaded host can hold QEMU's guest past the next millisecond). The
    // last multiple of ten at or before the time is the count, as long as
    // the wait is under 10 ms; the payload then proves it.
    let samples: Vec<(u64, u64)> = stream
        .events
        .iter()
        .filter(|(lane, ..)| *lane == 1)
        .map(|(_, name, event)| match *event {
            Event::Instant { time, payload, .. } if name == "adc.sample" => (time, payload),
            other => panic!("unexpected event on the interrupt's lane: {other:?}"),
        })
        .collect();
    assert!(
        samples.len() as u64 >= ticks * 9 / 10,
        "{} samples",
        samples.len()
    );
    for (time, payload) in &samples {
        let count = (time / 1_000 / 10 * 10) as u32;
        assert_eq!(
            *payload,
            u64::from(count.wrapping_mul(2654435761) >> 20),
            "sample at {time} µs: the hash of interrupt {count}"
        );
    }

    let rate = bytes.len() as f64 / started.elapsed().as_secs_f64();
    let capacity = BAUD / 10.0;
    // Events per second of the firmware's clock, over the events decoded.
    let times = stream.events.iter().map(|(_, _, e)| e.time());
    let (first, last) = (times.clone().min().unwrap_or(0), times.max().unwrap_or(0));
    let events_per_second = stream.events.len() as f64 / ((last - first) as f64 / 1e6);
    println!(
        "UART: {rate:.0} B/s of a {capacity:.0} B/s line at 115200 baud ({:.0}%), \
         {events_per_second:.0} events/s, {:.2} B/event on the wire",
        100.0 * rate / capacity,
        rate / events_per_second
    );
    assert!(rate < capacity, "the example outruns its own UART");
}

/// Runs `typhon-live` with `args`; its exit code, stdout and stderr.
fn typhon(args: &[&str]) -> (i32, String, String) {
    let out = common::typhon()
        .args(args)
        .output()
        .expect("typhon-live runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn viewers_come_and_go_then_attach_record_inspect_and_convert_work_on_it() {
    let Some(elf) = firmware(&[]) else {
        return;
    };
    let mut qemu = Qemu::boot("tools", &elf);

    // Viewers that connect and leave at once, twenty times: the firmware
    // does not notice (QEMU drops what nobody reads).
    for _ in 0..20 {
        let mut uart = TcpStream::connect(&qemu.addr).expect("connect");
        let mut some = [0u8; 64];
        uart.set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let _ = uart.read(&mut some);
    }

    // The live view: both lanes by name once the repeated Init came, the
    // tick rate, the gauges, nothing lost.
    let (code, stdout, stderr) = typhon(&["attach", &qemu.addr, "--json", "--duration", "4"]);
    assert_eq!(code, 0, "{stderr}");
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a summary")).expect("JSON");
    // The `name` of each entry of the summary's list `list`.
    let names = |list: &str| -> Vec<String> {
        last[list]
            .as_array()
            .unwrap_or_else(|| panic!("no {list} in {last}"))
            .iter()
            .map(|entry| entry["name"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert_eq!(names("lanes"), ["main loop", "SysTick"], "{last}");
    let rate = last["tick_rate_hz"].as_f64().unwrap_or(0.0);
    assert!((rate / PASS_HZ - 1.0).abs() < 0.2, "tick rate {rate} Hz");
    assert!(names("gauges").iter().any(|g| g == "queue.depth"), "{last}");
    assert!(
        names("top_spans").iter().any(|s| s == "control loop"),
        "{last}"
    );
    assert_eq!(last["frames_dropped"], 0, "{last}");
    assert_eq!(last["events_dropped"], 0, "{last}");

    // A recording cut by killing QEMU: valid up to its last whole frame,
    // beginning with an Init.
    let trace = temp("qemu.tlt");
    let record = common::typhon()
        .args(["record", &qemu.addr, "-o"])
        .arg(&trace)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("record starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(&trace).map_or(0, |m| m.len()) < 8_000 {
        assert!(Instant::now() < deadline, "the recording does not grow");
        std::thread::sleep(Duration::from_millis(100));
    }
    qemu.kill();
    let recorded = record.wait_with_output().expect("record ends");
    let stderr = String::from_utf8_lossy(&recorded.stderr);
    assert!(
        stderr.contains("connection") || stderr.contains("closed"),
        "record says the connection ended: {stderr}"
    );
    let (code, stdout, stderr) = typhon(&["inspect", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("typhon-live embedded example"), "{stdout}");
    assert!(stdout.contains("0 missing by sequence number"), "{stdout}");
    assert!(stdout.contains("main loop"), "{stdout}");
    assert!(!stdout.contains("before Init"), "{stdout}");

    let chrome = temp("qemu.json");
    let (code, _, stderr) = typhon(&[
        "convert",
        trace.to_str().unwrap(),
        "--to",
        "chrome",
        "-o",
        chrome.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&chrome).expect("chrome JSON")).expect("JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let named = |n: &str| events.iter().filter(|e| e["name"] == n).count();
    assert!(named("control loop") > 50 && named("adc.sample") > 50);

    // And as Perfetto: the device (pid 0) as a process of its own, its
    // lanes as threads, the loop's spans nested, its ticks.
    let pftrace = temp("qemu.pftrace");
    let (code, _, stderr) = typhon(&[
        "convert",
        trace.to_str().unwrap(),
        "--to",
        "perfetto",
        "-o",
        pftrace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let read = reader::read(&std::fs::read(&pftrace).expect("the .pftrace"));
    assert_eq!(read.process.len(), 1, "{:?}", read.process);
    assert_eq!(read.process[0].1, "typhon-live embedded example");
    let threads: Vec<&str> = read
        .tracks
        .values()
        .filter(|t| t.1 == "thread")
        .map(|t| t.0.as_str())
        .collect();
    assert!(
        threads.contains(&"main loop") && threads.contains(&"SysTick"),
        "{threads:?}"
    );
    let slices = |name: &str, depth| {
        read.slices
            .iter()
            .filter(|s| s.name == name && s.depth == depth)
            .count()
    };
    assert!(
        slices("control loop", 0) > 50,
        "{}",
        slices("control loop", 0)
    );
    assert_eq!(slices("sense", 1), slices("control loop", 0));
    assert!(slices("tick", 0) > 50);
    assert!(
        read.instants
            .iter()
            .filter(|i| i.name == "adc.sample")
            .count()
            > 50
    );
    for path in [&trace, &chrome, &pftrace] {
        let _ = std::fs::remove_file(path);
    }
}

/// The ITM build on the same board: no debugger enables the ITM under
/// QEMU, and `cortex_m::itm::write_all` waited for its FIFO forever, so
/// the main loop stopped at its first frame (PASSES stayed 0). Now a write
/// to a disabled port is refused and counted, and the loop runs on.
#[test]
fn the_itm_build_runs_on_with_nobody_reading_the_itm() {
    let Some(elf) = firmware(&["--itm"]) else {
        return;
    };
    let passes = symbol(&elf, "firmware::PASSES");
    let qemu = Qemu::boot("itm", &elf);
    std::thread::sleep(Duration::from_millis(500));
    let before = qemu.read_word(passes);
    std::thread::sleep(Duration::from_secs(1));
    let after = qemu.read_word(passes);
    // 100 passes a second; at least half of that on a loaded machine.
    assert!(
        after.wrapping_sub(before) >= 50,
        "the main loop ran {before} -> {after} passes in a second"
    );
}

/// A board that reboots while watched: `attach` loses the connection,
/// reconnects, and tells the reboot from a reconnect although the firmware
/// has no fresh session id to offer: its clock went back to zero.
#[test]
fn attach_tells_a_firmware_reboot_from_a_reconnect() {
    let Some(elf) = firmware(&[]) else {
        return;
    };
    let mut qemu = Qemu::boot("reboot", &elf);
    let port: u16 = qemu.addr.rsplit(':').next().unwrap().parse().unwrap();
    let mut attach = common::typhon()
        .args(["attach", &qemu.addr, "--json", "--duration", "14"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("attach starts");
    let mut stdout = attach.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    // Several seconds of uptime, then a reboot on the same port.
    std::thread::sleep(Duration::from_secs(6));
    qemu.kill();
    let _rebooted = Qemu::boot_at("rebooted", &elf, port);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = attach.try_wait().expect("attach") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = attach.kill();
            panic!("attach ran past its duration");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    let _ = attach.stderr.take().unwrap().read_to_string(&mut stderr);
    assert!(status.success(), "{stderr}");
    let stdout = reader.join().unwrap();
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a summary")).expect("JSON");
    assert!(last["reconnects"].as_u64() >= Some(1), "{last}");
    assert_eq!(last["restarts"], 1, "{last}");
    assert_eq!(last["connection"]["state"], "connected", "{last}");
    let rate = last["tick_rate_hz"].as_f64().unwrap_or(0.0);
    assert!(
        (rate / PASS_HZ - 1.0).abs() < 0.2,
        "tick rate {rate} Hz after the reboot"
    );
}
