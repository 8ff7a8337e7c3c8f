//! The embedded example's code (examples/embedded/src/lib.rs) on the host:
//! a main loop and an "interrupt" record into static rings, the exporter is
//! pumped into an in-memory `embedded_io::Write`, and the bytes are read
//! back through `io::FrameReader` from an `embedded_io::Read`: in short
//! reads from memory, from a file and from a loopback socket (both std,
//! through embedded-io-adapters). Every event must come back.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Write as _;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use embedded_io_adapters::std::FromStd;
use typhon_live_core::io::{FrameReader, ReadError};
use typhon_live_core::{Codec, Decoder, Lz4Table};
use typhon_live_core::{Event, GaugeValue, LaneId, LaneKind, Lanes, Payload};
use typhon_live_embedded::link::{drain, FrameQueue, LinkError, LinkQueue};
use typhon_live_embedded::{
    main_loop_pass, on_interrupt, FirmwareLanes, Ids, LinkGauges, LinkStats, Names, Telemetry,
    OUT_LEN, SAMPLE_EVERY, SCRATCH_LEN, WORK_LEN,
};

static LANES: FirmwareLanes = Lanes::new();
/// The lanes of the run with LZ4 on (a lane is claimed once per static).
static LZ4_LANES: FirmwareLanes = Lanes::new();
/// The lanes of the runs over a UART's link queue.
static FAST_LINK_LANES: FirmwareLanes = Lanes::new();
static SLOW_LINK_LANES: FirmwareLanes = Lanes::new();

const PASSES: u64 = 400;
const INTERRUPTS_PER_PASS: u32 = 5;

/// An in-memory UART: every byte written is kept.
struct Memory(Vec<u8>);

impl embedded_io::ErrorType for Memory {
    type Error = Infallible;
}

impl embedded_io::Write for Memory {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

/// Reads back in pieces of 1 to 97 bytes, as a UART driver hands them out.
struct Trickle<'a> {
    bytes: &'a [u8],
    turn: usize,
}

impl embedded_io::ErrorType for Trickle<'_> {
    type Error = Infallible;
}

impl embedded_io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Infallible> {
        self.turn += 1;
        let n = (1 + self.turn * 31 % 97)
            .min(buf.len())
            .min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

/// The firmware's run, once per test binary: its lanes are a `static`,
/// and a lane released after its exporter is gone is never drained free.
fn firmware_output() -> &'static (Vec<u8>, Vec<u64>) {
    static RUN: std::sync::OnceLock<(Vec<u8>, Vec<u64>)> = std::sync::OnceLock::new();
    RUN.get_or_init(|| run_firmware(&LANES, false))
}

/// Runs the firmware's loop on the host, with LZ4 (`Auto`) if `lz4`;
/// returns the bytes it wrote and the samples the interrupt recorded, in
/// order.
fn run_firmware(lanes: &'static FirmwareLanes, lz4: bool) -> (Vec<u8>, Vec<u64>) {
    let mut names = Names::new();
    let ids = Ids::intern(&mut names).expect("names fit");
    let main = lanes.claim(ids.main, LaneKind::Main).expect("lane");
    let interrupt = lanes.claim(ids.interrupt, LaneKind::Other).expect("lane");
    let mut scratch = [0u8; SCRATCH_LEN];
    let mut out = [0u8; OUT_LEN];
    let (mut work, mut table) = ([0u8; WORK_LEN], Lz4Table::small());
    let mut telemetry = if lz4 {
        Telemetry::compressed(&mut scratch, &mut out, &mut work, &mut table)
    } else {
        Telemetry::new(&mut scratch, &mut out)
    };
    let clock = std::cell::Cell::new(0u64);
    let now = || {
        clock.set(clock.get() + 3);
        clock.get()
    };
    let mut uart = Memory(Vec::new());
    let (mut count, mut samples) = (0u32, Vec::new());
    for pass in 0..PASSES {
        // A 50 Hz loop: 400 passes are 8 s, past one re-announcement.
        clock.set(pass * 20_000);
        main_loop_pass(&main, &ids, pass, &now, &mut |_| {});
        for _ in 0..INTERRUPTS_PER_PASS {
            count += 1;
            let sample = u64::from(count) * 1_000 + pass;
            if count % SAMPLE_EVERY == 0 {
                samples.push(sample);
            }
            on_interrupt(&interrupt, &ids, count, now(), sample);
        }
        // Pumped every pass, as the firmware does: the rings never fill.
        telemetry
            .pump(now(), lanes, &names, &mut uart)
            .expect("pump");
    }
    (uart.0, samples)
}

/// Every frame from `reader`: named events and the drop count. Damage is
/// only allowed at the very start (a reader that joined late).
fn read_all<R: embedded_io::Read>(reader: R) -> (Vec<(LaneId, String, Event)>, u64)
where
    R::Error: std::fmt::Debug,
{
    read_from(reader, false)
}

fn read_from<R: embedded_io::Read>(
    reader: R,
    joined_late: bool,
) -> (Vec<(LaneId, String, Event)>, u64)
where
    R::Error: std::fmt::Debug,
{
    let (mut buf, mut chunk) = (vec![0u8; 64 << 10], vec![0u8; 256]);
    let mut frames = FrameReader::new(reader, &mut buf, &mut chunk);
    let (mut names, mut events, mut dropped) = (HashMap::new(), Vec::new(), 0u64);
    let mut frames_seen = 0;
    let mut unpacked = typhon_live_reader::BlockBuffer::new();
    loop {
        let frame = match frames.next() {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(ReadError::Decode(_)) if joined_late && frames_seen == 0 => continue,
            Err(e) => panic!("damage in a clean stream: {e}"),
        };
        frames_seen += 1;
        match frame.parse().expect("parses") {
            Payload::Init(init) => names.extend(init.names().map(|(id, n)| (id, n.to_owned()))),
            Payload::Definitions(defs) => {
                names.extend(defs.names().map(|(id, n)| (id, n.to_owned())));
            }
            Payload::Block(block) => {
                dropped += block.drops().map(|(_, n)| u64::from(n)).sum::<u64>();
                for item in unpacked.events(&block).expect("columns") {
                    let (lane, event) = item.expect("event");
                    // Empty: a name id this reader was never told.
                    let name = match event {
                        Event::Span { name, .. }
                        | Event::Instant { name, .. }
                        | Event::Poll { name, .. }
                        | Event::TaskBegin { name, .. }
                        | Event::TaskEnd { name, .. }
                        | Event::Field { key: name, .. } => names.get(&name),
                        Event::Gauge { gauge, .. } => names.get(&gauge),
                        Event::TickStart { .. }
                        | Event::TickEnd { .. }
                        | Event::Mark { .. }
                        | Event::Allocated { .. }
                        | Event::Unknown { .. } => None,
                    };
                    let name = name.cloned().unwrap_or_else(|| match event {
                        Event::TickStart { .. } => "tick start".into(),
                        Event::TickEnd { .. } => "tick end".into(),
                        _ => String::new(),
                    });
                    events.push((lane, name, event));
                }
            }
            _ => {}
        }
    }
    (events, dropped)
}

#[test]
fn the_firmware_loop_round_trips_through_embedded_io() {
    let (bytes, samples) = firmware_output();
    let (events, dropped) = read_all(Trickle { bytes, turn: 0 });
    assert_eq!(dropped, 0);

    // The main loop: per pass a tick start, three spans, a gauge, a tick end.
    let main: Vec<_> = events.iter().filter(|(lane, ..)| *lane == 0).collect();
    assert_eq!(main.len() as u64, 6 * PASSES);
    let ticks: Vec<u64> = main
        .iter()
        .filter_map(|(_, _, e)| match e {
            Event::TickStart { tick, .. } => Some(*tick),
            _ => None,
        })
        .collect();
    assert_eq!(ticks, (0..PASSES).collect::<Vec<_>>());
    let spans = |wanted: &str| -> Vec<Event> {
        main.iter()
            .filter(|(_, name, e)| name == wanted && matches!(e, Event::Span { .. }))
            .map(|(_, _, e)| *e)
            .collect()
    };
    let (outer, sense, control) = (spans("control loop"), spans("sense"), spans("control"));
    assert_eq!(outer.len() as u64, PASSES);
    for ((outer, sense), (pass, control)) in
        outer.iter().zip(&sense).zip(control.iter().enumerate())
    {
        let (
            Event::Span {
                id,
                start,
                duration,
                ..
            },
            Event::Span { parent: p1, .. },
            Event::Span {
                parent: p2, arg, ..
            },
        ) = (outer, sense, control)
        else {
            unreachable!()
        };
        assert_eq!((*p1, *p2), (*id, *id), "sense and control nest in the loop");
        assert_eq!(*arg, Some(pass as u64 % 7));
        assert!(sense.time() >= *start && control.end_time() <= start + duration);
    }
    let gauges: Vec<i64> = main
        .iter()
        .filter_map(|(_, name, e)| match e {
            Event::Gauge {
                value: GaugeValue::Int(v),
                ..
            } if name == "queue.depth" => Some(*v),
            _ => None,
        })
        .collect();
    assert_eq!(
        gauges,
        (0..PASSES).map(|p| (p % 5) as i64).collect::<Vec<_>>()
    );

    // The interrupt: every sample, in order, on its own lane.
    let got: Vec<u64> = events
        .iter()
        .filter_map(|(lane, name, e)| match e {
            Event::Instant { payload, .. } if *lane == 1 && name == "adc.sample" => Some(*payload),
            _ => None,
        })
        .collect();
    assert_eq!(&got, samples);
    assert_eq!(events.len() as u64, 6 * PASSES + samples.len() as u64);
}

#[test]
fn with_lz4_the_firmware_sends_the_same_events() {
    let (packed, samples) = firmware_output();
    let (compressed, lz4_samples) = run_firmware(&LZ4_LANES, true);
    assert_eq!(samples, &lz4_samples);
    assert_eq!(
        read_all(Trickle {
            bytes: &compressed,
            turn: 0
        }),
        read_all(Trickle {
            bytes: packed,
            turn: 0
        })
    );
    // Auto chose per Block: what it compressed is smaller than packed.
    let mut buf = vec![0u8; 1 << 16];
    let mut decoder = Decoder::new(&mut buf);
    let mut lz4_blocks = 0;
    let mut rest = &compressed[..];
    while !rest.is_empty() {
        let n = decoder.feed(rest);
        rest = &rest[n..];
        while let Ok(Some(frame)) = decoder.next() {
            if let Ok(Payload::Block(block)) = frame.parse() {
                if block.codec() == Ok(Codec::Lz4) {
                    lz4_blocks += 1;
                    assert!(block.encoded_len() < block.packed_len());
                }
            }
        }
    }
    println!(
        "firmware: {} bytes packed, {} with Auto ({lz4_blocks} Blocks compressed)",
        packed.len(),
        compressed.len()
    );
    assert!(compressed.len() <= packed.len());
}

#[test]
fn a_reader_that_joins_late_gets_the_names_from_the_next_announcement() {
    let (bytes, _) = firmware_output();
    // Join in the middle of the stream, mid-frame.
    let (events, _) = read_from(
        Trickle {
            bytes: &bytes[bytes.len() / 2 + 7..],
            turn: 0,
        },
        true,
    );
    // Spans, instants and gauges carry name ids; tick markers do not.
    let events: Vec<_> = events
        .iter()
        .filter(|(_, _, e)| !matches!(e, Event::TickStart { .. } | Event::TickEnd { .. }))
        .collect();
    let first = events
        .iter()
        .position(|(_, name, _)| !name.is_empty())
        .expect("no name arrived: the Init was not repeated");
    assert!(first > 0, "joined mid-stream: ids came before their names");
    // From the repeated Init on, every id has its name.
    assert!(events[first..].iter().all(|(_, name, _)| !name.is_empty()));
    assert!(
        events.len() - first > 100,
        "the names came late in the stream"
    );
}

#[test]
fn frames_are_read_from_std_files_and_sockets_through_embedded_io() {
    // Its own bytes: a short session from a fresh exporter over the same
    // lanes would race the other test, so build a stream without lanes.
    let bytes = typhon_live_tests::format_example();
    let (want, _) = read_all(Trickle {
        bytes: &bytes,
        turn: 0,
    });
    assert!(!want.is_empty());

    let path =
        std::env::temp_dir().join(format!("typhon-live-embedded-{}.tlt", std::process::id()));
    std::fs::write(&path, &bytes).expect("write");
    let file = std::fs::File::open(&path).expect("open");
    let (from_file, _) = read_all(FromStd::new(file));
    std::fs::remove_file(&path).expect("remove");
    assert_eq!(from_file, want);

    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    let sender = std::thread::spawn(move || {
        let (mut peer, _) = listener.accept().expect("accept");
        for piece in bytes.chunks(7) {
            peer.write_all(piece).expect("send");
        }
    });
    let socket = TcpStream::connect(addr).expect("connect");
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let (from_socket, _) = read_all(FromStd::new(socket));
    sender.join().expect("sender");
    assert_eq!(from_socket, want);
}

#[test]
fn a_stream_cut_mid_frame_is_reported_once_then_ends() {
    let bytes = typhon_live_tests::format_example();
    let cut = &bytes[..bytes.len() - 5];
    let (mut buf, mut chunk) = (vec![0u8; 4096], vec![0u8; 64]);
    let mut frames = FrameReader::new(
        Trickle {
            bytes: cut,
            turn: 0,
        },
        &mut buf,
        &mut chunk,
    );
    let mut whole = 0;
    let error = loop {
        match frames.next() {
            Ok(Some(_)) => whole += 1,
            Ok(None) => panic!("the cut was not reported"),
            Err(e) => break e,
        }
    };
    assert_eq!(whole, 3, "Init and two Blocks before the cut Shutdown");
    assert!(matches!(
        error,
        ReadError::Decode(typhon_live_core::DecodeError::Truncated { .. })
    ));
    assert!(matches!(frames.next(), Ok(None)));
}

#[test]
fn the_link_queue_takes_a_frame_whole_or_refuses_it_whole() {
    let mut queue: heapless::spsc::Queue<u8, 8> = heapless::spsc::Queue::new();
    let (producer, mut consumer) = queue.split();
    let mut link = FrameQueue::new(producer);
    assert_eq!(
        embedded_io::Write::write(&mut link, &[1, 2, 3, 4, 5]),
        Ok(5)
    );
    assert_eq!(
        embedded_io::Write::write(&mut link, &[6, 7, 8]),
        Err(LinkError::Full { frame: 3, free: 2 })
    );
    assert_eq!((link.refused(), link.backlog()), (1, 5));
    // A transmit buffer with room for three bytes, then full.
    let (mut room, mut sent) = (3, Vec::new());
    let ready = || {
        room -= 1;
        room >= 0
    };
    assert_eq!(drain(&mut consumer, 8, ready, |b| sent.push(b)), 3);
    assert_eq!(sent, [1, 2, 3]);
    assert_eq!(embedded_io::Write::write(&mut link, &[6, 7, 8]), Ok(3));
    // At most `max` per call: what an interrupt moves per entry.
    assert_eq!(drain(&mut consumer, 4, || true, |b| sent.push(b)), 4);
    assert_eq!(drain(&mut consumer, 4, || true, |b| sent.push(b)), 1);
    assert_eq!(sent, [1, 2, 3, 4, 5, 6, 7, 8]);
}

/// What a run over a UART behind the link queue gave.
struct LinkRun {
    /// Bytes that went over the line.
    line: Vec<u8>,
    /// Events the firmware recorded.
    recorded: u64,
    /// Frames the queue refused.
    refused: u32,
}

/// The firmware's loop at 50 Hz for `passes` passes, its frames queued
/// for a line of `baud` (10 bits a byte) that the "transmit interrupt"
/// feeds after each pass with what the line carried in those 20 ms; then
/// the line is given time to empty the queue.
fn run_over_link(lanes: &'static FirmwareLanes, baud: u64, passes: u64) -> LinkRun {
    let mut names = Names::new();
    let ids = Ids::intern(&mut names).expect("names fit");
    let main = lanes.claim(ids.main, LaneKind::Main).expect("lane");
    let interrupt = lanes.claim(ids.interrupt, LaneKind::Other).expect("lane");
    let (mut scratch, mut out) = ([0u8; SCRATCH_LEN], [0u8; OUT_LEN]);
    let mut telemetry = Telemetry::new(&mut scratch, &mut out);
    let mut queue = LinkQueue::new();
    let (producer, mut consumer) = queue.split();
    let mut link = FrameQueue::new(producer);
    let per_pass = (baud / 10 / 50) as usize;
    let clock = std::cell::Cell::new(0u64);
    let now = || {
        clock.set(clock.get() + 3);
        clock.get()
    };
    let (mut line, mut count, mut recorded) = (Vec::new(), 0u32, 0u64);
    let mut gauges = LinkGauges::new();
    // After the recording passes, quiet ones (at least 200) until the queue
    // is empty: the losses reach the reader in a last Block.
    for pass in 0..passes + 2_000 {
        if pass >= passes + 200 && link.backlog() == 0 {
            break;
        }
        clock.set(pass * 20_000);
        let stats = LinkStats {
            backlog: link.backlog() as u32,
            refused: link.refused(),
            errors: 0,
        };
        if gauges.record(&main, &ids, pass, now(), stats) {
            recorded += 3;
        }
        if pass < passes {
            main_loop_pass(&main, &ids, pass, &now, &mut |_| {});
            recorded += 6;
            for _ in 0..INTERRUPTS_PER_PASS {
                count += 1;
                recorded += u64::from(count % SAMPLE_EVERY == 0);
                on_interrupt(&interrupt, &ids, count, now(), u64::from(count));
            }
        }
        match telemetry.pump(now(), lanes, &names, &mut link) {
            Ok(_) | Err(typhon_live_core::io::PumpError::Write(LinkError::Full { .. })) => {}
            Err(e) => panic!("pump: {e}"),
        }
        drain(&mut consumer, per_pass, || true, |b| line.push(b));
    }
    assert_eq!(link.backlog(), 0, "the line emptied the queue");
    LinkRun {
        line,
        recorded,
        refused: link.refused(),
    }
}

/// Sequence numbers missing between consecutive frames of `bytes`
/// (counted from each Init), and whether any frame was damaged.
fn sequence_gaps(bytes: &[u8]) -> (u64, bool) {
    let mut buf = vec![0u8; 1 << 16];
    let mut decoder = Decoder::new(&mut buf);
    let (mut expected, mut gaps, mut damaged) = (None::<u32>, 0u64, false);
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = decoder.feed(rest);
        rest = &rest[n..];
        loop {
            match decoder.next() {
                Ok(Some(frame)) => match frame.parse() {
                    Ok(Payload::Init(init)) => expected = Some(init.next_seq),
                    _ => {
                        if let Some(e) = expected {
                            gaps += u64::from(frame.seq.wrapping_sub(e));
                        }
                        expected = Some(frame.seq.wrapping_add(1));
                    }
                },
                Ok(None) => break,
                Err(_) => damaged = true,
            }
        }
    }
    (gaps, damaged)
}

#[test]
fn a_line_fast_enough_for_the_events_carries_every_one() {
    let run = run_over_link(&FAST_LINK_LANES, 115_200, 300);
    assert_eq!(run.refused, 0);
    let (events, dropped) = read_all(Trickle {
        bytes: &run.line,
        turn: 0,
    });
    assert_eq!((events.len() as u64, dropped), (run.recorded, 0));
    assert_eq!(sequence_gaps(&run.line), (0, false));
    assert_eq!(last_gauge(&events, "link.refused"), Some(0));
    println!(
        "link at 115200 baud: {} bytes for {} events in {} s of firmware time",
        run.line.len(),
        run.recorded,
        300 / 50
    );
}

#[test]
fn a_line_slower_than_the_events_drops_whole_frames_and_says_how_many_events() {
    // 9600 baud: 960 B/s, under the ~1.7 kB/s this loop records.
    let run = run_over_link(&SLOW_LINK_LANES, 9_600, 300);
    assert!(run.refused > 0, "the queue never filled");
    // Every frame that went out is whole: the reader never resyncs.
    let (gaps, damaged) = sequence_gaps(&run.line);
    assert!(!damaged, "a frame was cut");
    // A refused Block or Catch-up is a gap; a refused Init is written again
    // (no number to miss), and a gap just before an Init is renumbered away.
    assert!(gaps > 0 && gaps <= u64::from(run.refused), "{gaps} gaps");
    // Every event either arrived or is counted as lost in a later Block.
    let (events, dropped) = read_all(Trickle {
        bytes: &run.line,
        turn: 0,
    });
    assert!(dropped > 0);
    assert_eq!(events.len() as u64 + dropped, run.recorded);
    // The link's own count reached the reader too.
    assert_eq!(
        last_gauge(&events, "link.refused"),
        Some(i64::from(run.refused))
    );
}

/// The last value of the gauge `name` among `events`.
fn last_gauge(events: &[(LaneId, String, Event)], name: &str) -> Option<i64> {
    events.iter().rev().find_map(|(_, n, e)| match e {
        Event::Gauge {
            value: GaugeValue::Int(v),
            ..
        } if n == name => Some(*v),
        _ => None,
    })
}
