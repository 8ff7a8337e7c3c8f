//! What the cross-crate tests in `tests/tests/` share: owned copies of
//! decoded frames, so that what went in and what came out compare with `==`,
//! and a reader that decodes a whole byte stream fed in chunks.

pub mod browser;
pub mod collector;
pub mod http_attack;
pub mod service;
#[cfg(doctest)]
pub mod snippets;
pub mod ten_functions;
pub mod tls;

use typhon_live_core::init::{ArchetypeView, ComponentView};
use typhon_live_core::{
    DecodeError, Decoder, Event, Frame, GaugeValue, LaneId, LaneInfo, OpenSpan, Payload, Shutdown,
};

/// Owned Init metadata (names and lanes kept apart): the std transport's
/// own owned form, so that what went in and what came out compare with `==`.
pub use typhon_live_std::metadata::{OwnedComponent as Component, OwnedMetadata as Meta};

/// One lane of a Catch-up, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatchUpLane {
    pub info: LaneInfo,
    pub name: String,
    pub open_depth: u32,
    pub open: Vec<OpenSpan>,
}

/// A decoded frame, owned.
#[derive(Clone, Debug, PartialEq)]
pub enum Owned {
    Init {
        next_seq: u32,
        meta: Meta,
        names: Vec<(u32, String)>,
        lanes: Vec<LaneInfo>,
    },
    Block {
        seq: u32,
        first: u64,
        last: u64,
        drops: Vec<(LaneId, u32)>,
        events: Vec<(LaneId, Event)>,
        /// Bytes of the encoded events (group table and columns).
        encoded: usize,
    },
    Definitions {
        seq: u32,
        names: Vec<(u32, String)>,
        lanes: Vec<LaneInfo>,
    },
    CatchUp {
        seq: u32,
        time: u64,
        lanes: Vec<CatchUpLane>,
    },
    Shutdown {
        seq: u32,
        totals: Shutdown,
    },
    Samples {
        seq: u32,
        time: u64,
        lanes: Vec<typhon_live_core::LaneSample>,
        switches: Vec<typhon_live_core::SwitchRecord>,
    },
    Texts {
        seq: u32,
        lost: u32,
        texts: Vec<OwnedText>,
    },
}

/// One record of a Text frame, owned.
pub use typhon_live_reader::owned::Text as OwnedText;

impl Owned {
    /// The frame's sequence number (Init: the next frame's).
    pub fn seq(&self) -> u32 {
        match *self {
            Owned::Init { next_seq, .. } => next_seq,
            Owned::Block { seq, .. }
            | Owned::Definitions { seq, .. }
            | Owned::CatchUp { seq, .. }
            | Owned::Shutdown { seq, .. }
            | Owned::Samples { seq, .. }
            | Owned::Texts { seq, .. } => seq,
        }
    }
}

fn component(c: ComponentView<'_>) -> Component {
    Component {
        id: c.id,
        name: c.name.into(),
        size: c.size,
        fields: c
            .fields
            .map(|f| (f.name.into(), f.ty.into(), f.offset, f.size))
            .collect(),
    }
}

fn archetype(a: ArchetypeView<'_>) -> (u32, String, Vec<u32>) {
    (a.id, a.name.into(), a.components.collect())
}

/// Parses a frame into its owned form, decoding Blocks.
pub fn own(frame: &Frame<'_>) -> Result<Owned, DecodeError> {
    Ok(match frame.parse()? {
        Payload::Init(init) => Owned::Init {
            next_seq: init.next_seq,
            meta: Meta {
                ticks_per_second: init.ticks_per_second,
                session_id: init.session_id,
                process_name: init.process_name.into(),
                process_id: init.process_id,
                created_unix_ns: init.created_unix_ns,
                components: init.components().map(component).collect(),
                archetypes: init.archetypes().map(archetype).collect(),
                indexes: init
                    .indexes()
                    .map(|i| (i.component, i.field.into(), i.kind.into()))
                    .collect(),
                config: init
                    .config()
                    .map(|c| (c.key.into(), c.value.into()))
                    .collect(),
                queues: init
                    .queues()
                    .map(|q| (q.id, q.name.into(), q.capacity))
                    .collect(),
                resources: init
                    .resources()
                    .map(|r| (r.id, r.parent, r.name.into(), r.kind.into()))
                    .collect(),
            },
            names: init.names().map(|(id, n)| (id, n.into())).collect(),
            lanes: init.lanes().collect(),
        },
        Payload::Block(block) => {
            let events = typhon_live_reader::BlockBuffer::new()
                .events(&block)?
                .collect::<Result<Vec<_>, _>>()?;
            Owned::Block {
                seq: frame.seq,
                first: block.first_time,
                last: block.last_time,
                drops: block.drops().collect(),
                events,
                encoded: block.encoded_len(),
            }
        }
        Payload::Definitions(defs) => Owned::Definitions {
            seq: frame.seq,
            names: defs.names().map(|(id, n)| (id, n.into())).collect(),
            lanes: defs.lanes().into_iter().flatten().collect(),
        },
        Payload::CatchUp(catchup) => Owned::CatchUp {
            seq: frame.seq,
            time: catchup.time,
            lanes: catchup
                .lanes()
                .map(|l| CatchUpLane {
                    info: l.info,
                    name: l.name.into(),
                    open_depth: l.open_depth,
                    open: l.open.collect(),
                })
                .collect(),
        },
        Payload::Shutdown(totals) => Owned::Shutdown {
            seq: frame.seq,
            totals,
        },
        Payload::Samples(view) => Owned::Samples {
            seq: frame.seq,
            time: view.time,
            lanes: view.lanes().collect(),
            switches: view.switches().collect(),
        },
        Payload::Texts(view) => Owned::Texts {
            seq: frame.seq,
            lost: view.lost,
            texts: view.texts().map(|t| OwnedText::of(&t)).collect(),
        },
    })
}

/// Whether a read on a socket with a read timeout only timed out: Unix
/// says `WouldBlock`, Windows `TimedOut`.
pub fn timed_out(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// What a reader saw: frames (owned) and errors, in stream order.
#[allow(clippy::large_enum_variant)] // test data, compared not stored
#[derive(Debug, PartialEq)]
pub enum Seen {
    Frame {
        offset: u64,
        skipped: u64,
        frame: Owned,
    },
    Error(DecodeError),
}

/// Decodes `stream` fed in chunks of the given sizes (cycled; `[]` means
/// all at once) through a decoder with a `buf_len`-byte buffer.
pub fn read_stream(stream: &[u8], chunks: &[usize], buf_len: usize) -> Vec<Seen> {
    let mut buf = vec![0u8; buf_len];
    let mut decoder = Decoder::new(&mut buf);
    let mut seen = Vec::new();
    let mut rest = stream;
    let mut sizes = chunks.iter().copied().filter(|&n| n > 0).cycle();
    let drain = |decoder: &mut Decoder<'_>, seen: &mut Vec<Seen>| loop {
        match decoder.next() {
            Ok(Some(frame)) => {
                let item = match own(&frame) {
                    Ok(owned) => Seen::Frame {
                        offset: frame.offset,
                        skipped: frame.skipped,
                        frame: owned,
                    },
                    Err(e) => Seen::Error(e),
                };
                seen.push(item);
            }
            Ok(None) => break,
            Err(e) => seen.push(Seen::Error(e)),
        }
    };
    while !rest.is_empty() {
        let want = sizes.next().unwrap_or(rest.len()).min(rest.len());
        let mut chunk = &rest[..want];
        while !chunk.is_empty() {
            let n = decoder.feed(chunk);
            chunk = &chunk[n..];
            drain(&mut decoder, &mut seen);
        }
        rest = &rest[want..];
    }
    drain(&mut decoder, &mut seen);
    if let Err(e) = decoder.finish() {
        seen.push(Seen::Error(e));
    }
    seen
}

/// The frames of `seen`, dropping position details; panics on errors.
pub fn frames(seen: Vec<Seen>) -> Vec<Owned> {
    seen.into_iter()
        .map(|s| match s {
            Seen::Frame { frame, .. } => frame,
            Seen::Error(e) => panic!("unexpected decode error: {e}"),
        })
        .collect()
}

/// Whether two events are equal, comparing float gauges and fields bit
/// for bit (so that NaN equals itself).
pub fn same_event(a: &Event, b: &Event) -> bool {
    use typhon_live_core::FieldValue;
    use typhon_live_core::GaugeValue::Float;
    match (a, b) {
        (
            Event::Gauge {
                time: ta,
                gauge: ga,
                value: Float(va),
            },
            Event::Gauge {
                time: tb,
                gauge: gb,
                value: Float(vb),
            },
        ) => ta == tb && ga == gb && va.to_bits() == vb.to_bits(),
        (
            Event::Field {
                time: ta,
                key: ka,
                value: FieldValue::Float(va),
                owner: oa,
            },
            Event::Field {
                time: tb,
                key: kb,
                value: FieldValue::Float(vb),
                owner: ob,
            },
        ) => ta == tb && ka == kb && oa == ob && va.to_bits() == vb.to_bits(),
        _ => a == b,
    }
}

/// [`same_event`] over two lists of `(lane, event)`.
pub fn same_events(a: &[(LaneId, Event)], b: &[(LaneId, Event)]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((la, ea), (lb, eb))| la == lb && same_event(ea, eb))
}

/// A deterministic source of jitter (xorshift64 from `seed`): each call
/// gives a value below `max`.
fn jitter(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut rng = seed;
    move |max: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % max.max(1)
    }
}

/// A deterministic stand-in for a game/simulation runtime's telemetry, for
/// measurements and seed corpora: a 60 Hz tick on lane 0 running nested
/// system spans, three workers running query spans with entity counts, a
/// memory gauge that climbs like a soak test, and the odd instant.
/// Timestamps are nanoseconds; events come out in drain order per lane.
pub fn realistic_events(ticks: u64) -> Vec<(LaneId, Event)> {
    let mut jitter = jitter(0x2545_f491_4f6c_dd1d);
    let mut out = Vec::new();
    let mut span_ids = [0u32; 4];
    let mut memory: i64 = 512 << 20;
    let systems = [10u32, 11, 12, 13, 14, 15];
    let queries = [20u32, 21, 22, 23];
    for tick in 0..ticks {
        let base = 1_000_000_000 + tick * 16_666_667;
        out.push((0, Event::TickStart { time: base, tick }));
        let tick_id = {
            span_ids[0] += 1;
            span_ids[0]
        };
        let mut t = base + 2_000 + jitter(500);
        let mut lane0 = Vec::new();
        for &system in &systems {
            span_ids[0] += 1;
            let id = span_ids[0];
            let duration = 150_000 + jitter(90_000);
            lane0.push(Event::Span {
                start: t,
                duration,
                name: system,
                id,
                parent: tick_id,
                arg: None,
            });
            // Workers run this system's queries.
            for (w, &query) in queries.iter().enumerate().take(3) {
                let lane = (w + 1) as LaneId;
                span_ids[w + 1] += 1;
                let qstart = t + 5_000 + jitter(3_000);
                out.push((
                    lane,
                    Event::Span {
                        start: qstart,
                        duration: 40_000 + jitter(60_000),
                        name: query,
                        id: span_ids[w + 1],
                        parent: 0,
                        arg: Some(256 + jitter(64)),
                    },
                ));
            }
            t += duration + 1_000 + jitter(400);
        }
        let end = t + 3_000;
        lane0.push(Event::Span {
            start: base,
            duration: end - base,
            name: 1,
            id: tick_id,
            parent: 0,
            arg: None,
        });
        memory += 4096 * (1 + jitter(8) as i64);
        lane0.push(Event::Gauge {
            time: end,
            gauge: 2,
            value: GaugeValue::Int(memory),
        });
        lane0.push(Event::Gauge {
            time: end,
            gauge: 3,
            value: GaugeValue::Float((end - base) as f64 / 1e6),
        });
        if tick % 30 == 0 {
            lane0.push(Event::Instant {
                time: end,
                name: 4,
                payload: tick,
            });
        }
        lane0.push(Event::TickEnd {
            time: end,
            tick,
            overrun: end - base > 16_666_667,
        });
        out.extend(lane0.into_iter().map(|e| (0, e)));
    }
    // Drain order: lane by lane, as the exporter does.
    out.sort_by_key(|(lane, _)| *lane);
    out
}

/// The span tree one tick of [`steady_spans`] runs: (name, parent index
/// in this list or `usize::MAX` for the root, mean duration in ns).
pub const STEADY_TREE: [(&str, usize, u64); 16] = [
    ("Tick", usize::MAX, 0),
    ("Input", 0, 120_000),
    ("Physics", 0, 0),
    ("Broadphase", 2, 310_000),
    ("Narrowphase", 2, 540_000),
    ("Solver", 2, 1_200_000),
    ("AI", 0, 0),
    ("Pathfinding", 6, 800_000),
    ("Animation", 0, 650_000),
    ("Audio", 0, 90_000),
    ("Render", 0, 0),
    ("Cull", 10, 400_000),
    ("Draw", 10, 2_100_000),
    ("Present", 10, 150_000),
    ("Network", 0, 210_000),
    ("Telemetry", 0, 30_000),
];

/// A steady engine loop, what a real main thread looks like: every tick
/// (60 Hz, nanosecond clock) runs the same systems in the same order
/// ([`STEADY_TREE`], names 0 to 15), each leaf taking its mean duration
/// ±2 %, a parent spanning its children, 2 to 3 µs between siblings.
/// Returns each span as (start, end, name, depth) in the order spans
/// begin, so that any profiler can replay it.
pub fn steady_spans(ticks: u64) -> Vec<(u64, u64, u32, usize)> {
    let mut jitter = jitter(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::new();
    for tick in 0..ticks {
        let base = 1_000_000_000 + tick * 16_666_667;
        // Children lie after their parent in the tree: lay out leaves,
        // then close parents over their children.
        let mut spans: Vec<(u64, u64)> = vec![(0, 0); STEADY_TREE.len()];
        let mut t = base + 1_000 + jitter(200);
        for (i, &(_, parent, mean)) in STEADY_TREE.iter().enumerate().skip(1) {
            t += 2_000 + jitter(1_000);
            let is_parent = STEADY_TREE.iter().any(|&(_, p, _)| p == i);
            if is_parent {
                spans[i] = (t, t);
                continue;
            }
            let duration = mean - mean / 50 + jitter(mean / 25);
            spans[i] = (t, t + duration);
            t += duration;
            // Close every ancestor over this leaf.
            let mut p = parent;
            while p != usize::MAX && p != 0 {
                spans[p].1 = t + 500;
                p = STEADY_TREE[p].1;
            }
            if parent != 0 {
                t += 500;
            }
        }
        spans[0] = (base, t + 1_000);
        for (i, &(start, end)) in spans.iter().enumerate() {
            let mut depth = 0;
            let mut p = STEADY_TREE[i].1;
            while p != usize::MAX {
                depth += 1;
                p = STEADY_TREE[p].1;
            }
            out.push((start, end, i as u32, depth));
        }
    }
    out
}

/// [`steady_spans`] as a lane's events, in the order a profiler records
/// them (a span when it ends: children before their parent).
pub fn steady_events(ticks: u64) -> Vec<(LaneId, Event)> {
    let spans = steady_spans(ticks);
    let per_tick = STEADY_TREE.len();
    let mut out = Vec::with_capacity(spans.len());
    let mut next_id = 0u32;
    for tick in spans.chunks(per_tick) {
        let first_id = next_id + 1;
        next_id += per_tick as u32;
        let mut events: Vec<Event> = tick
            .iter()
            .enumerate()
            .map(|(i, &(start, end, name, _))| {
                let parent = STEADY_TREE[i].1;
                Event::Span {
                    start,
                    duration: end - start,
                    name,
                    id: first_id + i as u32,
                    parent: if parent == usize::MAX {
                        0
                    } else {
                        first_id + parent as u32
                    },
                    arg: None,
                }
            })
            .collect();
        events.sort_by_key(Event::end_time);
        out.extend(events.into_iter().map(|e| (0, e)));
    }
    out
}

/// The names [`realistic_events`] refers to, by id.
pub const REALISTIC_NAMES: [&str; 24] = [
    "Main",
    "Tick",
    "memory.bytes",
    "tick.ms",
    "checkpoint",
    "Worker 1",
    "Worker 2",
    "Worker 3",
    "unused",
    "unused2",
    "Sim.Input",
    "Sim.Physics",
    "Sim.AI",
    "Sim.Animation",
    "Sim.Render",
    "Sim.Audio",
    "",
    "",
    "",
    "",
    "Query<Transform,Velocity>",
    "Query<Collider>",
    "Query<Brain,Transform>",
    "Query<Skeleton>",
];

/// A whole session as the real exporter writes it: Init, Catch-up, then
/// `ticks` ticks of [`realistic_events`] drained once per tick, with a name
/// interned mid-session (so a Definitions frame appears), then Shutdown.
/// Blocks are compressed per `compression`.
pub fn exporter_stream(
    ticks: u64,
    scratch_len: usize,
    compression: typhon_live_core::Compression,
) -> Vec<u8> {
    use typhon_live_core::block::encoding_buffer_len;
    use typhon_live_core::{Exporter, LaneKind, Lanes, Lz4Table, Metadata, NameTable};

    let lanes: Lanes<8, 1024> = Lanes::new();
    let mut names: NameTable<64, 2048> = NameTable::new();
    for name in REALISTIC_NAMES {
        names.intern(name).expect("room for the names");
    }
    let kinds = [
        LaneKind::Main,
        LaneKind::Worker,
        LaneKind::Worker,
        LaneKind::Worker,
    ];
    let lane_names = [0u32, 5, 6, 7];
    let handles: Vec<_> = kinds
        .iter()
        .zip(lane_names)
        .map(|(&kind, name)| lanes.claim(name, kind).expect("a free lane"))
        .collect();
    let mut scratch = vec![0u8; scratch_len];
    let meta = Metadata {
        ticks_per_second: 1_000_000_000,
        session_id: 0x5eed,
        process_name: "realistic",
        process_id: 4242,
        created_unix_ns: 1_764_633_600_000_000_000,
        ..Metadata::default()
    };
    let mut work = vec![0u8; encoding_buffer_len(scratch_len, compression)];
    let mut table = Lz4Table::large();
    let mut exporter: Exporter<'_, 8> = Exporter::new(meta, &mut scratch);
    exporter.set_encoding_buffer(&mut work);
    exporter.set_compression(compression, &mut table);
    let mut out = vec![0u8; 1 << 20];
    let mut stream = Vec::new();
    exporter.attach();
    let events = realistic_events(ticks);
    let mut now = 1_000_000_000;
    let mut poll = |exporter: &mut Exporter<'_, 8>, names: &NameTable<64, 2048>, now: u64| {
        while let Some(e) = exporter
            .poll(now, &lanes, names, &mut out)
            .expect("buffer large enough")
        {
            stream.extend(&out[..e.len]);
        }
    };
    let mut by_tick: Vec<Vec<(LaneId, Event)>> = vec![Vec::new(); ticks as usize];
    for &(lane, event) in &events {
        let tick = ((event.time() - 1_000_000_000) / 16_666_667) as usize;
        if let Some(bucket) = by_tick.get_mut(tick) {
            bucket.push((lane, event));
        }
    }
    for (tick, bucket) in by_tick.iter().enumerate() {
        let tick = tick as u64;
        for (lane, event) in bucket {
            handles[usize::from(*lane)].record(event);
        }
        if tick == ticks / 2 {
            names.intern("late.name").expect("room");
        }
        now += 16_666_667;
        exporter.request_drain();
        poll(&mut exporter, &names, now);
    }
    exporter.stop();
    poll(&mut exporter, &names, now);
    drop(handles);
    stream
}

/// `block` as a Block frame, the way the exporter writes it with
/// `compression`: packed straight into the frame when `Off`, else packed
/// into a work buffer and compressed there first. With `Lz4` and events,
/// the frame is always compressed.
pub fn block_frame(
    block: &typhon_live_core::BlockBuilder<'_>,
    seq: u32,
    drops: &[(LaneId, u32)],
    compression: typhon_live_core::Compression,
) -> Vec<u8> {
    use typhon_live_core::block::{
        encode_events, encoding_buffer_len, max_compressed_block_frame_len, write_block,
        write_block_encoded,
    };
    use typhon_live_core::{Codec, Compression, Lz4Table};

    let scratch_len = block.capacity();
    let mut out = vec![0u8; max_compressed_block_frame_len(scratch_len, drops.len())];
    let n = if compression == Compression::Off {
        write_block(&mut out, seq, block, drops).expect("block fits its bound")
    } else {
        let mut work = vec![0u8; encoding_buffer_len(scratch_len, compression)];
        let mut table = Lz4Table::small();
        let encoded = encode_events(&mut work, block, compression, Some(&mut table))
            .expect("events fit the work buffer");
        if compression == Compression::Lz4 && !block.is_empty() {
            assert_eq!(encoded.codec, Codec::Lz4);
        }
        write_block_encoded(&mut out, seq, block, drops, encoded, &work)
            .expect("block fits its bound")
    };
    out.truncate(n);
    out
}

/// The small stream FORMAT.md's worked example shows: an Init naming one
/// lane, a Block of a tick start and a span, the same events again in an
/// LZ4-compressed Block, and a Shutdown.
pub fn format_example() -> Vec<u8> {
    use typhon_live_core::block::block_scratch_len;
    use typhon_live_core::init::write_init;
    use typhon_live_core::{BlockBuilder, Compression, LaneKind, Metadata, NameTable, Shutdown};

    let mut names: NameTable<4, 64> = NameTable::new();
    let main = names.intern("Main").expect("room");
    let tick = names.intern("Tick").expect("room");
    let meta = Metadata {
        ticks_per_second: 1_000_000,
        session_id: 0x0102_0304_0506_0708,
        process_name: "demo",
        process_id: 42,
        created_unix_ns: 0,
        ..Metadata::default()
    };
    let lanes = [LaneInfo {
        id: 0,
        name: main,
        kind: LaneKind::Main,
    }];
    let mut stream = Vec::new();
    let mut out = vec![0u8; 4096];
    let n = write_init(&mut out, 0, &meta, &names, lanes.iter().copied()).expect("fits");
    stream.extend(&out[..n]);

    let mut scratch = [0u8; block_scratch_len(2)];
    let mut block = BlockBuilder::new(&mut scratch);
    let tick_start = Event::TickStart {
        time: 1000,
        tick: 7,
    };
    let span = Event::Span {
        start: 1010,
        duration: 250,
        name: tick,
        id: 1,
        parent: 0,
        arg: None,
    };
    assert!(block.push(0, &tick_start) && block.push(0, &span));
    stream.extend(block_frame(&block, 0, &[(0, 3)], Compression::Off));
    // LZ4 forced: `Auto` would send this one packed, as LZ4 finds nothing
    // to repeat in 25 bytes.
    stream.extend(block_frame(&block, 1, &[], Compression::Lz4));

    let shutdown = Shutdown {
        time: 2000,
        frames_sent: 2,
        frames_dropped: 0,
        events_dropped: 3,
    };
    let n = shutdown.write(&mut out, 2).expect("fits");
    stream.extend(&out[..n]);
    stream
}

/// The events of FORMAT.md's second worked example: a task span (task 5,
/// name 2) created at 1000 on lane 1, polled twice, closed at 1340.
pub fn task_example_events() -> [Event; 4] {
    [
        Event::TaskBegin {
            time: 1000,
            name: 2,
            task: 5,
            parent: 0,
        },
        Event::Poll {
            start: 1010,
            duration: 40,
            name: 2,
            id: 1,
            parent: 0,
            task: 5,
        },
        Event::Poll {
            start: 1300,
            duration: 30,
            name: 2,
            id: 2,
            parent: 0,
            task: 5,
        },
        Event::TaskEnd {
            time: 1340,
            name: 2,
            task: 5,
            wall: 340,
            busy: 70,
        },
    ]
}

/// FORMAT.md's second worked example: [`task_example_events`] in one
/// packed Block, sequence number 3, on lane 1.
pub fn task_example() -> Vec<u8> {
    task_block(3)
}

/// [`task_example_events`] in one packed Block numbered `seq`.
fn task_block(seq: u32) -> Vec<u8> {
    packed_block(1, &task_example_events(), seq)
}

/// `events` of `lane` in one packed Block numbered `seq`.
fn packed_block(lane: LaneId, events: &[Event], seq: u32) -> Vec<u8> {
    use typhon_live_core::block::block_scratch_len;
    use typhon_live_core::{BlockBuilder, Compression};

    let mut scratch = vec![0u8; block_scratch_len(events.len())];
    let mut block = BlockBuilder::new(&mut scratch);
    for event in events {
        assert!(block.push(lane, event));
    }
    block_frame(&block, seq, &[], Compression::Off)
}

/// The events of FORMAT.md's third worked example: a span "query" (name
/// 1, id 1) on lane 0 from 1000 for 250, and its two fields: "route"
/// (name 2) is "a" (name 3), "rows" (name 4) is 42.
pub fn fields_example_events() -> [Event; 3] {
    use typhon_live_core::{FieldOwner, FieldValue};
    let field = |key, value| Event::Field {
        time: 1000,
        key,
        value,
        owner: FieldOwner::Span(1),
    };
    [
        Event::Span {
            start: 1000,
            duration: 250,
            name: 1,
            id: 1,
            parent: 0,
            arg: None,
        },
        field(2, FieldValue::Str(3)),
        field(4, FieldValue::Int(42)),
    ]
}

/// FORMAT.md's third worked example: [`fields_example_events`] in one
/// packed Block, sequence number 4, on lane 0.
pub fn fields_example() -> Vec<u8> {
    fields_block(4)
}

/// [`fields_example_events`] in one packed Block numbered `seq`.
fn fields_block(seq: u32) -> Vec<u8> {
    packed_block(0, &fields_example_events(), seq)
}

/// A whole stream of a span with fields: an Init naming lane 0 and the
/// names of [`fields_example_events`], their Block, and a Shutdown.
pub fn fields_stream() -> Vec<u8> {
    stream_of(&["main", "query", "route", "a", "rows"], fields_block(0))
}

/// A whole stream of one task span: an Init naming lanes 0 and 1 and
/// the task's name (id 2, "GET /a"), the Block of
/// [`task_example_events`], and a Shutdown.
pub fn task_stream() -> Vec<u8> {
    stream_of(&["main", "worker", "GET /a"], task_block(0))
}

/// The fourth worked example of docs/FORMAT.md: a Text frame (sequence
/// number 2) telling 3 texts lost, then [`text_example_texts`].
pub fn text_example() -> Vec<u8> {
    text_frame(2, 3)
}

/// The Text records of [`text_example`]: a warning on lane 0 (site name
/// 1), and a line whose lane the writer could no longer say (site 2).
pub fn text_example_texts() -> [typhon_live_core::Text<'static>; 2] {
    use typhon_live_core::{Level, Text};
    [
        Text {
            time: 1000,
            lane: Some(0),
            level: Level::Warn,
            site: 1,
            text: "disk full dev=sda",
            cut: false,
        },
        Text {
            time: 1200,
            lane: None,
            level: Level::Info,
            site: 2,
            text: "bye",
            cut: false,
        },
    ]
}

fn text_frame(seq: u32, lost: u32) -> Vec<u8> {
    let mut buf = [0u8; 256];
    let mut batch = typhon_live_core::TextBatch::new(&mut buf);
    for text in text_example_texts() {
        assert!(batch.push(&text), "room");
    }
    let mut out = vec![0u8; batch.frame_len()];
    let n = typhon_live_core::text::write_texts(&mut out, seq, lost, &batch).expect("fits");
    out.truncate(n);
    out
}

/// A whole stream with log texts: an Init naming lane 0 and the sites of
/// [`text_example_texts`], their Text frame, and a Shutdown.
pub fn text_stream() -> Vec<u8> {
    stream_of(&["main", "WARN disk full", "INFO bye"], text_frame(0, 0))
}

/// A whole stream with CPU samples (FORMAT.md, "Samples"): an Init naming
/// lanes 0 and 1; a Samples frame at 1 500 µs of both lanes' counters
/// (lane 1's switches traced) and two switches of lane 1; another at
/// 1 900 µs, where lane 0's thread ran 300 µs more and lane 1's 40 µs;
/// and a Shutdown.
pub fn samples_stream() -> Vec<u8> {
    use typhon_live_core::samples::write_samples;
    use typhon_live_core::{Counters, LaneSample, SamplesBatch, Switch, SwitchRecord};
    let lane = |lane, thread, switches_traced, on_cpu_ns| LaneSample {
        lane,
        thread,
        switches_traced,
        counters: Counters {
            on_cpu_ns: Some(on_cpu_ns),
            waiting_ns: Some(on_cpu_ns / 8),
            voluntary: Some(3),
            involuntary: Some(1),
            ..Counters::default()
        },
    };
    let switches = [
        SwitchRecord {
            lane: 1,
            time: 1_200,
            what: Switch::OutWaiting,
        },
        SwitchRecord {
            lane: 1,
            time: 1_450,
            what: Switch::In,
        },
    ];
    let mut frames = Vec::new();
    for (seq, time, grown, switches) in [(0, 1_500, 0, &switches[..]), (1, 1_900, 1, &[][..])] {
        let lanes = [
            lane(0, 4001, false, 900_000 + grown * 300_000),
            lane(1, 4002, true, 120_000 + grown * 40_000),
        ];
        let mut out = vec![0u8; 512];
        let batch = SamplesBatch {
            time,
            lanes: &lanes,
            switches,
            ..SamplesBatch::default()
        };
        let n = write_samples(&mut out, seq, &batch).expect("fits");
        frames.push(out[..n].to_vec());
    }
    stream_of_frames(&["main", "worker"], &frames)
}

/// The stacks of FORMAT.md's worked example: three nodes, `main` at
/// 0x401000, `run` at 0x401230 under it, and the sampled instruction at
/// 0x4015a0 under that.
pub fn stacks_example_nodes() -> [typhon_live_core::StackNode; 3] {
    use typhon_live_core::StackNode;
    [
        StackNode {
            parent: None,
            address: 0x40_1000,
        },
        StackNode {
            parent: Some(0),
            address: 0x40_1230,
        },
        StackNode {
            parent: Some(1),
            address: 0x40_15a0,
        },
    ]
}

/// The frame symbols of FORMAT.md's worked example: 0x4015a0 is `hash`
/// (name 5) inlined into `spin` (name 4); 0x401230 is `run` (name 3).
pub const STACKS_EXAMPLE_SYMBOLS: [(u64, &[u32]); 2] = [(0x40_15a0, &[5, 4]), (0x40_1230, &[3])];

/// The module of FORMAT.md's worked example of stacks: `/app`, from
/// 0x400000 for 64 KiB, loaded where it was linked (bias 0), its build id
/// two bytes for brevity (a GNU build id has 20).
pub const STACKS_EXAMPLE_MODULE: typhon_live_core::Module<'static> = typhon_live_core::Module {
    start: 0x40_0000,
    size: 0x1_0000,
    bias: 0,
    build_id: &[0xb1, 0x1d],
    path: "/app",
};

/// The stack samples of FORMAT.md's worked example, in a frame at 5 000:
/// lane 0 at 4 000 in node 2, walked with unwind tables; at 4 900 in
/// node 1, by frame pointers, cut.
pub fn stacks_example_samples() -> [typhon_live_core::StackSample; 2] {
    use typhon_live_core::{StackSample, Unwinding};
    [
        StackSample {
            lane: 0,
            time: 4_000,
            node: 2,
            unwinding: Unwinding::UnwindTables,
            cut: false,
        },
        StackSample {
            lane: 0,
            time: 4_900,
            node: 1,
            unwinding: Unwinding::FramePointers,
            cut: true,
        },
    ]
}

/// FORMAT.md's worked example of stacks: a Definitions frame (sequence
/// number 3) of [`stacks_example_nodes`], [`STACKS_EXAMPLE_SYMBOLS`] and
/// [`STACKS_EXAMPLE_MODULE`], then a Samples frame (4) at 5 000 of
/// [`stacks_example_samples`].
pub fn stacks_example() -> Vec<u8> {
    use typhon_live_core::definitions::{write_stack_definitions, StackRanges};
    use typhon_live_core::samples::write_samples;
    use typhon_live_core::{FrameSymbol, Module, NameSource, NodeId, SamplesBatch, StackNode};
    struct Example;
    impl NameSource for Example {
        fn count(&self) -> u32 {
            0
        }
        fn get(&self, _: u32) -> Option<&str> {
            None
        }
        fn stack_node_count(&self) -> u32 {
            3
        }
        fn stack_node(&self, id: NodeId) -> Option<StackNode> {
            stacks_example_nodes().get(id as usize).copied()
        }
        fn frame_symbol_count(&self) -> u32 {
            2
        }
        fn frame_symbol(&self, index: u32) -> Option<FrameSymbol<'_>> {
            let &(address, frames) = STACKS_EXAMPLE_SYMBOLS.get(index as usize)?;
            Some(FrameSymbol { address, frames })
        }
        fn module_count(&self) -> u32 {
            1
        }
        fn module(&self, index: u32) -> Option<Module<'_>> {
            (index == 0).then_some(STACKS_EXAMPLE_MODULE)
        }
    }
    let mut out = vec![0u8; 256];
    let ranges = StackRanges {
        nodes: 0..3,
        symbols: 0..2,
        modules: 0..1,
    };
    let n = write_stack_definitions(&mut out, 3, &Example, ranges).expect("fits");
    let mut stream = out[..n].to_vec();
    let samples = stacks_example_samples();
    let batch = SamplesBatch {
        time: 5_000,
        stacks: &samples,
        ..SamplesBatch::default()
    };
    let n = write_samples(&mut out, 4, &batch).expect("fits");
    stream.extend_from_slice(&out[..n]);
    stream
}

/// A whole stream with call stacks (FORMAT.md, "Stacks"), on a 1 MHz
/// clock: an Init naming lane 0 and the example's frames; a Block of a
/// span of `run` (name 3) on lane 0 from 3 500 to 4 500; then
/// [`stacks_example`]'s frames, numbered on, and a Shutdown. The first
/// sample falls in the span, the second after it.
pub fn stacks_stream() -> Vec<u8> {
    let example = stacks_example();
    let mut scratch = vec![0u8; 4096];
    let mut block = typhon_live_core::BlockBuilder::new(&mut scratch);
    let span = Event::Span {
        start: 3_500,
        duration: 1_000,
        name: 3,
        id: 1,
        parent: 0,
        arg: None,
    };
    assert!(block.push(0, &span));
    let block = block_frame(&block, 0, &[], typhon_live_core::Compression::Off);
    // Its two frames, renumbered 1 and 2.
    let defs_len = u32::from_le_bytes(example[8..12].try_into().expect("4 bytes")) as usize + 20;
    let (defs, samples) = example.split_at(defs_len);
    let renumbered = [block, renumber(defs, 1), renumber(samples, 2)];
    stream_of_frames(
        &["main", "worker", "idle", "run", "spin", "hash"],
        &renumbered,
    )
}

/// `frame` with sequence number `seq`, its checks made again.
fn renumber(frame: &[u8], seq: u32) -> Vec<u8> {
    use typhon_live_core::frame::{HEADER_LEN, TRAILER_LEN};
    let (kind, flags) = (frame[2], frame[3]);
    let payload = &frame[HEADER_LEN..frame.len() - TRAILER_LEN];
    let (header, trailer) =
        typhon_live_core::frame::frame_around(kind, flags, seq, payload).expect("fits");
    [&header[..], payload, &trailer[..]].concat()
}

/// A whole stream with the process's memory and two allocation sites
/// (FORMAT.md, "Samples", "Memory"), a Samples frame a second for 10 s:
/// site 1 (`demo::cache_replay_frame`, below `demo::simulate`, its
/// innermost frame the standard library's) leaks 1 MB a second; site 2
/// (`demo::load_level`) holds 50 MB throughout. The process holds 100 MB
/// more than the two.
pub fn memory_stream() -> Vec<u8> {
    use typhon_live_core::samples::write_samples;
    use typhon_live_core::{Memory, SamplesBatch, SiteSample, SiteTotals};
    let mut frames = Vec::new();
    for second in 0..=10u64 {
        let leaked = second * 1_000_000;
        let site = |site, frames, allocated| SiteSample {
            site,
            frames,
            totals: SiteTotals {
                allocated,
                freed: 0,
                allocations: allocated / 500_000,
                frees: 0,
            },
        };
        let sites = [
            site(1, &[2, 3, 4][..], leaked),
            site(2, &[5, 4][..], 50_000_000),
        ];
        let batch = SamplesBatch {
            time: second * 1_000_000,
            memory: Some(Memory {
                allocated: 150_000_000 + leaked + 7_000_000,
                freed: 7_000_000,
                sampling_mean: 512 << 10,
                sampled: 300 + second * 2,
                missed: 0,
            }),
            sites: &sites,
            ..SamplesBatch::default()
        };
        let mut out = vec![0u8; batch.max_frame_len()];
        let n = write_samples(&mut out, second as u32, &batch).expect("fits");
        frames.push(out[..n].to_vec());
    }
    stream_of_frames(
        &[
            "main",
            "worker",
            "alloc::raw_vec::RawVec<T>::grow_one (raw_vec.rs:1)",
            "demo::cache_replay_frame (demo.rs:120)",
            "demo::simulate (demo.rs:400)",
            "demo::load_level (demo.rs:50)",
        ],
        &frames,
    )
}

/// [`task_stream`]'s task span with a field after its end: its "route"
/// (name 3) is "a" (name 4).
pub fn task_fields_stream() -> Vec<u8> {
    use typhon_live_core::{FieldOwner, FieldValue};
    let mut events = task_example_events().to_vec();
    events.push(Event::Field {
        time: 1340,
        key: 3,
        value: FieldValue::Str(4),
        owner: FieldOwner::Task(5),
    });
    stream_of(
        &["main", "worker", "GET /a", "route", "a"],
        packed_block(1, &events, 0),
    )
}

/// Spans that allocated (FORMAT.md, "Allocated bytes"), on lane 1
/// ("worker"): a "Frame" (name 2) of 64 KiB of its own around a "Load"
/// (name 3) of 256 KiB, ten times.
pub fn allocated_stream() -> Vec<u8> {
    let mut events = Vec::new();
    for i in 0..10u64 {
        let (frame, load) = (2 * i as u32 + 1, 2 * i as u32 + 2);
        let start = i * 1000;
        events.push(Event::Span {
            start: start + 100,
            duration: 500,
            name: 3,
            id: load,
            parent: frame,
            arg: None,
        });
        events.push(Event::Allocated {
            time: start + 100,
            span: load,
            bytes: 256 << 10,
        });
        events.push(Event::Span {
            start,
            duration: 900,
            name: 2,
            id: frame,
            parent: 0,
            arg: None,
        });
        events.push(Event::Allocated {
            time: start,
            span: frame,
            bytes: 64 << 10,
        });
    }
    stream_of(
        &["main", "worker", "Frame", "Load"],
        packed_block(1, &events, 0),
    )
}

/// An Init naming `names` (from id 0) and lanes 0 ("main", name 0) and
/// 1 (name 1), the frame `frame` (sequence number 0), and a Shutdown.
fn stream_of(names_from_0: &[&str], frame: Vec<u8>) -> Vec<u8> {
    stream_of_frames(names_from_0, &[frame])
}

/// [`stream_of`] with `frames`, numbered from 0.
fn stream_of_frames(names_from_0: &[&str], frames: &[Vec<u8>]) -> Vec<u8> {
    use typhon_live_core::init::write_init;
    use typhon_live_core::{LaneKind, Metadata, NameTable, Shutdown};

    let mut names: NameTable<16, 512> = NameTable::new();
    for name in names_from_0 {
        names.intern(name).expect("room");
    }
    let lanes = [(0, 0, LaneKind::Main), (1, 1, LaneKind::Worker)]
        .map(|(id, name, kind)| LaneInfo { id, name, kind });
    let meta = Metadata {
        ticks_per_second: 1_000_000,
        process_name: "service",
        ..Metadata::default()
    };
    let mut out = vec![0u8; 4096];
    let n = write_init(&mut out, 0, &meta, &names, lanes.into_iter()).expect("fits");
    let mut stream = out[..n].to_vec();
    stream.extend(frames.iter().flatten());
    let shutdown = Shutdown {
        time: 2000,
        frames_sent: frames.len() as u64,
        frames_dropped: 0,
        events_dropped: 0,
    };
    let n = shutdown.write(&mut out, frames.len() as u32).expect("fits");
    stream.extend(&out[..n]);
    stream
}

/// A test viewer: a TCP connection to a live profiler, decoding frames as
/// they arrive, with bounded waits.
pub struct Viewer {
    pub stream: std::net::TcpStream,
    buf: Vec<u8>,
    pending: Vec<u8>,
    /// Every frame received so far, in order.
    pub frames: Vec<Owned>,
    /// Every decode error met (there should be none).
    pub errors: Vec<DecodeError>,
    closed: bool,
}

impl Viewer {
    /// Connects to `addr`.
    pub fn connect(addr: std::net::SocketAddr) -> Viewer {
        let stream = std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(5))
            .expect("connect");
        Viewer::with_stream(stream)
    }

    /// A viewer over an already connected stream.
    pub fn with_stream(stream: std::net::TcpStream) -> Viewer {
        stream
            .set_read_timeout(Some(std::time::Duration::from_millis(20)))
            .expect("read timeout");
        Viewer {
            stream,
            buf: vec![0u8; 16 << 20],
            pending: Vec::new(),
            frames: Vec::new(),
            errors: Vec::new(),
            closed: false,
        }
    }

    /// Whether the server closed the connection.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Reads at most `max` bytes, slowly, as a struggling viewer would.
    pub fn read_some(&mut self, max: usize) {
        self.read_once(max);
    }

    /// Reads what is available for up to `wait`, decoding every whole frame.
    pub fn read_for(&mut self, wait: std::time::Duration) {
        let deadline = std::time::Instant::now() + wait;
        while std::time::Instant::now() < deadline && !self.closed {
            self.read_once(64 << 10);
        }
    }

    /// One read of at most `max` bytes (waiting at most the read timeout),
    /// then decodes what is whole.
    fn read_once(&mut self, max: usize) {
        use std::io::Read;
        let mut chunk = vec![0u8; max];
        match self.stream.read(&mut chunk) {
            Ok(0) => self.closed = true,
            Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
            Err(e) if timed_out(&e) => {}
            Err(_) => self.closed = true,
        }
        self.decode_pending();
    }

    /// Reads until `done` holds for the frames so far, or `wait` passes.
    pub fn read_until(
        &mut self,
        wait: std::time::Duration,
        done: impl Fn(&[Owned]) -> bool,
    ) -> bool {
        let deadline = std::time::Instant::now() + wait;
        while !done(&self.frames) {
            let now = std::time::Instant::now();
            if now >= deadline || self.closed {
                return done(&self.frames);
            }
            self.read_for((deadline - now).min(std::time::Duration::from_millis(50)));
        }
        true
    }

    fn decode_pending(&mut self) {
        let mut decoder = Decoder::new(&mut self.buf);
        let mut used = 0;
        let mut rest = &self.pending[..];
        while !rest.is_empty() {
            let n = decoder.feed(rest);
            rest = &rest[n..];
            loop {
                match decoder.next() {
                    Ok(Some(frame)) => {
                        used = (frame.offset as usize) + frame.wire_len();
                        match own(&frame) {
                            Ok(owned) => self.frames.push(owned),
                            Err(e) => self.errors.push(e),
                        }
                    }
                    Ok(None) => break,
                    Err(e) => self.errors.push(e),
                }
            }
            if n == 0 {
                break;
            }
        }
        self.pending.drain(..used);
    }
}

/// The Block of issue 21, framed with sequence number `seq`: 58 bytes of
/// payload stating 2^32 − 1 tick starts on lane 0 in one group whose
/// columns all have width 0, so that they cost no bytes. A reader without
/// the format's record bound would have four billion events to read.
pub fn over_bound_block(seq: u32) -> Vec<u8> {
    const RECORDS: [u8; 5] = [0xff, 0xff, 0xff, 0xff, 0x0f]; // v(2^32 − 1)
    let mut payload = Vec::new();
    payload.extend(u32::MAX.to_le_bytes()); // record count
    payload.extend(1_000u64.to_le_bytes()); // first timestamp
    payload.extend(2_000u64.to_le_bytes()); // last timestamp
    payload.extend(0u16.to_le_bytes()); // no drop entries
    payload.push(1); // one lane group
    payload.extend(0u16.to_le_bytes()); // lane 0
    payload.extend(RECORDS);
    payload.push(0); // first event at the first timestamp
                     // Kind: every record a tick start (code 16), width 0.
    payload.extend(RECORDS);
    payload.extend([0, 16]);
    // Span time, name, span id, parent, duration, argument: empty.
    payload.extend([0; 6]);
    // Point time and value: each z(1) = 2, width 0.
    for _ in 0..2 {
        payload.extend(RECORDS);
        payload.extend([0, 2]);
    }
    let mut out = vec![0u8; payload.len() + 20];
    let n = typhon_live_core::frame::write_raw_frame(
        &mut out,
        typhon_live_core::FrameKind::Block.to_byte(),
        0,
        seq,
        &payload,
    )
    .expect("room for the frame");
    out.truncate(n);
    out
}

/// `stream` with its Block of sequence number `seq` replaced by `block`:
/// a writer that sent that instead.
pub fn replace_block(stream: &[u8], seq: u32, block: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; 1 << 20];
    let mut decoder = Decoder::new(&mut buf);
    assert_eq!(decoder.feed(stream), stream.len(), "a stream under 1 MiB");
    let mut out = Vec::with_capacity(stream.len() + block.len());
    while let Ok(Some(frame)) = decoder.next() {
        let at = frame.offset as usize;
        let bytes = &stream[at..at + frame.wire_len()];
        let is_it = frame.kind == typhon_live_core::FrameKind::Block.to_byte() && frame.seq == seq;
        out.extend_from_slice(if is_it { block } else { bytes });
    }
    out
}

/// Ticks `ticks` (1 ms apart) of an outer span holding two inner ones (100 and 200
/// µs), from the core's exporter.
pub fn nested_stream(ticks: std::ops::Range<u64>) -> Vec<u8> {
    use typhon_live_core::{Exporter, LaneKind, Lanes};
    let lanes = Lanes::<2, 1024>::new();
    let mut names: typhon_live_core::NameTable<8, 128> = typhon_live_core::NameTable::new();
    let lane = lanes
        .claim(names.intern("Main").unwrap(), LaneKind::Main)
        .unwrap();
    let (outer, inner) = (
        names.intern("outer").unwrap(),
        names.intern("inner").unwrap(),
    );
    let mut scratch = vec![0u8; 1 << 16];
    let meta = typhon_live_core::Metadata {
        ticks_per_second: 1_000_000,
        session_id: 9,
        ..typhon_live_core::Metadata::default()
    };
    let mut exporter: Exporter<'_, 2> = Exporter::new(meta, &mut scratch);
    exporter.attach().unwrap();
    let mut out = vec![0u8; exporter.min_block_buffer()];
    let mut stream = Vec::new();
    for t in ticks {
        let at = 1_000 + t * 1_000;
        lane.tick_start(t, at);
        let o = lane.begin(outer, at);
        let a = lane.begin(inner, at + 100);
        lane.end(a, at + 200, None);
        let b = lane.begin(inner, at + 300);
        lane.end(b, at + 500, Some(t));
        lane.end(o, at + 900, None);
        lane.tick_end(t, at + 950, t == 42);
        exporter.request_drain();
        while let Some(frame) = exporter.poll(at + 999, &lanes, &names, &mut out).unwrap() {
            stream.extend_from_slice(&out[..frame.len]);
        }
    }
    stream
}

/// A flight recorder's capture of [`nested_stream`]'s ticks 0 to 99: tick
/// 42 overruns, and the trigger `overrun` fires on it (20 ms before, 20 ms
/// after).
pub fn capture_stream() -> Vec<u8> {
    use typhon_live_recorder::{Recorder, Settings};
    const MS: u64 = 1_000_000;
    let settings = Settings {
        keep_ns: 100 * MS,
        before_ns: 20 * MS,
        after_ns: 20 * MS,
        ..Settings::default()
    };
    let mut recorder = Recorder::new(settings, vec!["overrun".parse().unwrap()]);
    each_frame(&nested_stream(0..100), |frame| recorder.frame(frame, 0));
    recorder.end();
    recorder.take().expect("tick 42 overran").bytes
}

/// Every frame of `bytes`, whole, to `take`; a test's stream has no
/// damage, so any is a failure.
pub fn each_frame(bytes: &[u8], mut take: impl FnMut(&typhon_live_core::Frame<'_>)) {
    let damage = typhon_live_reader::frames(bytes, |frame| {
        take(frame);
        Ok(())
    });
    assert_eq!(damage, [], "a test stream is whole");
}

/// A name source over a plain vector (ids `0..len`), for tests that write
/// Inits and Definitions by hand.
pub struct VecNames(pub Vec<String>);

impl typhon_live_core::NameSource for VecNames {
    fn count(&self) -> u32 {
        self.0.len() as u32
    }
    fn get(&self, id: u32) -> Option<&str> {
        self.0.get(id as usize).map(String::as_str)
    }
}

/// A trace from the core's exporter, a tick at a time: each tick's spans
/// `(name, duration ns)` laid one after another on one lane, the tick as
/// long as they are and marked overrun as told. The clock is in ns and the
/// first tick starts at 1 ms.
pub fn ticks_trace(ticks: &[(bool, Vec<(&str, u64)>)]) -> Vec<u8> {
    use typhon_live_core::{Exporter, LaneKind, Lanes, NameTable};
    let lanes = Lanes::<1, 4096>::new();
    let mut names: NameTable<256, 8192> = NameTable::new();
    let lane = lanes
        .claim(names.intern("Main").expect("room"), LaneKind::Main)
        .expect("a free lane");
    let mut scratch = vec![0u8; 1 << 16];
    let meta = typhon_live_core::Metadata {
        ticks_per_second: 1_000_000_000,
        session_id: 0x71c5,
        process_name: "ticks",
        ..typhon_live_core::Metadata::default()
    };
    let mut exporter: Exporter<'_, 1> = Exporter::new(meta, &mut scratch);
    exporter.attach().expect("attached");
    let mut out = vec![0u8; exporter.min_block_buffer().max(1 << 16)];
    let mut stream = Vec::new();
    let mut at = 1_000_000u64;
    for (tick, (overrun, spans)) in ticks.iter().enumerate() {
        let tick = tick as u64;
        lane.tick_start(tick, at);
        let mut t = at;
        for &(name, duration) in spans {
            let id = names.intern(name).expect("room for the names");
            let span = lane.begin(id, t);
            t += duration;
            lane.end(span, t, None);
        }
        lane.tick_end(tick, t, *overrun);
        at = t + 1;
        exporter.request_drain();
        while let Some(frame) = exporter.poll(at, &lanes, &names, &mut out).expect("room") {
            stream.extend_from_slice(&out[..frame.len]);
        }
    }
    exporter.stop();
    while let Some(frame) = exporter.poll(at, &lanes, &names, &mut out).expect("room") {
        stream.extend_from_slice(&out[..frame.len]);
    }
    stream
}
