//! The sans-IO exporter under arbitrary sequences of events, attaches,
//! detaches, drains, clock steps and dropped frames, with one or two
//! readers: every stream it writes decodes, its sequence gaps equal the
//! frames reported dropped on it, every id is defined before use in it, its
//! Shutdown states its own totals, drop reports never outnumber drain
//! passes, and every recorded event is accounted for. With a "file" reader
//! (attached first, never dropping) beside the viewer, the file holds every
//! event whatever the viewer does. The one stream reader
//! (`typhon-live-reader`) reads every stream to the same counts, and finds
//! each Shutdown's totals agree with what it received and lost.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use typhon_live_core::block::encoding_buffer_len;
use typhon_live_core::{
    Compression, Event, Exporter, FrameKind, GaugeValue, LaneHandle, LaneKind, Lanes, Lz4Table,
    Metadata, NameTable, ReaderId,
};
use typhon_live_reader::{Reader, Tally, TotalsCheck, Update};
use typhon_live_tests::{each_frame, frames, read_stream, Owned, Seen};

const LANES: usize = 4;
const RING: usize = 8;
/// One Block's scratch: a few events, so that Blocks fill up.
const SCRATCH: usize = 300;

/// A stream's frames with each Block's encoded size left out: what two
/// encodings of the same frames agree on.
fn decoded(stream: &[u8]) -> Vec<Owned> {
    let mut frames = frames(read_stream(stream, &[], 1 << 16));
    for frame in &mut frames {
        if let Owned::Block { encoded, .. } = frame {
            *encoded = 0;
        }
    }
    frames
}

#[derive(Clone, Debug)]
enum Op {
    Intern(u8),
    Claim(u8),
    Release(u8),
    Instant(u8, u8),
    Spans(u8, u8, u8),
    Gauge(u8, i64),
    Tick(u8),
    Attach,
    Detach,
    Drain,
    Advance(u16),
    Poll(Vec<bool>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => any::<u8>().prop_map(Op::Intern),
        1 => any::<u8>().prop_map(Op::Claim),
        1 => any::<u8>().prop_map(Op::Release),
        4 => (any::<u8>(), any::<u8>()).prop_map(|(l, n)| Op::Instant(l, n)),
        3 => (any::<u8>(), any::<u8>(), 1u8..5).prop_map(|(l, n, d)| Op::Spans(l, n, d)),
        1 => (any::<u8>(), any::<i64>()).prop_map(|(l, v)| Op::Gauge(l, v)),
        1 => any::<u8>().prop_map(Op::Tick),
        1 => Just(Op::Attach),
        1 => Just(Op::Detach),
        3 => Just(Op::Drain),
        2 => (0u16..1500).prop_map(Op::Advance),
        // Each pattern ends in a delivery, as a transport that keeps failing
        // to send a frame that must not be dropped disconnects instead.
        4 => prop::collection::vec(prop::bool::weighted(0.3), 0..6).prop_map(|mut p| {
            p.push(false);
            Op::Poll(p)
        }),
    ]
}

/// What one attachment (one reader) received, and what was dropped on it.
#[derive(Default)]
struct Attachment {
    bytes: Vec<u8>,
    /// Drops a later delivered frame's sequence number reveals.
    sequenced_drops: u64,
    /// Drops since the last delivered sequenced frame (not yet visible).
    unseen_drops: u64,
    /// Sequenced frames reported dropped, and delivered.
    frames_dropped: u64,
    frames_delivered: u64,
    /// Events in Blocks dropped on its way.
    dropped_block_events: u64,
    /// Blocks handed out with drop entries and no events.
    drop_only_blocks: u64,
}

/// Two reader slots: the file (when the run has one) and a viewer.
const READERS: usize = 2;

struct Run<'a> {
    lanes: &'a Lanes<LANES, RING>,
    names: NameTable<64, 2048>,
    handles: Vec<LaneHandle<'a, RING>>,
    exporter: Exporter<'a, LANES, READERS>,
    now: u64,
    tick: u64,
    recorded: u64,
    /// Events a full ring refused.
    refused: u64,
    attachments: Vec<Attachment>,
    /// The file's slot: attached before anything, never dropping.
    file: Option<ReaderId>,
    /// The viewer's slot and its attachment.
    viewer: Option<(ReaderId, usize)>,
    /// The file's attachment.
    file_attachment: Option<usize>,
    dropped_block_events: u64,
    drains: u64,
    out: Vec<u8>,
}

impl Run<'_> {
    fn name(&mut self, n: u8) -> u32 {
        self.names
            .intern(&format!("name-{}", n % 24))
            .expect("room for 24 names")
    }

    fn handle(&self, lane: u8) -> Option<&LaneHandle<'_, RING>> {
        if self.handles.is_empty() {
            None
        } else {
            self.handles.get(usize::from(lane) % self.handles.len())
        }
    }

    fn count(&mut self, ok: bool) {
        self.recorded += u64::from(ok);
        self.refused += u64::from(!ok);
    }

    /// Polls until the exporter runs dry; the viewer's frames are dropped
    /// by the pattern `drops`, the file's never.
    fn poll(&mut self, drops: &[bool]) {
        let mut pattern = drops.iter().copied().cycle();
        for _ in 0..10_000 {
            let emitted = self
                .exporter
                .poll(self.now, self.lanes, &self.names, &mut self.out)
                .expect("buffers are large enough");
            let Some(emitted) = emitted else { return };
            let to_file = Some(emitted.reader) == self.file;
            let index = if to_file {
                self.file_attachment.expect("the file is attached")
            } else {
                match self.viewer {
                    Some((id, index)) if id == emitted.reader => index,
                    _ => panic!("a frame for a reader that is not attached: {emitted:?}"),
                }
            };
            let a = &mut self.attachments[index];
            let drop_only = emitted.kind == FrameKind::Block && emitted.events == 0;
            a.drop_only_blocks += u64::from(drop_only);
            if !to_file && pattern.next().unwrap_or(false) {
                assert!(self.exporter.frame_dropped());
                if emitted.kind == FrameKind::Block {
                    self.dropped_block_events += u64::from(emitted.events);
                    a.dropped_block_events += u64::from(emitted.events);
                }
                if emitted.kind != FrameKind::Init {
                    a.unseen_drops += 1;
                    a.frames_dropped += 1;
                }
            } else {
                a.bytes.extend(&self.out[..emitted.len]);
                if emitted.kind != FrameKind::Init {
                    a.sequenced_drops += std::mem::take(&mut a.unseen_drops);
                    if emitted.kind != FrameKind::Shutdown {
                        a.frames_delivered += 1;
                    }
                }
            }
        }
        panic!("poll never ran dry");
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Intern(n) => {
                self.name(n);
            }
            Op::Claim(n) => {
                let name = self.name(n);
                let kind = [
                    LaneKind::Main,
                    LaneKind::Worker,
                    LaneKind::Pool,
                    LaneKind::Other,
                ][usize::from(n % 4)];
                if let Some(h) = self.lanes.claim(name, kind) {
                    self.handles.push(h);
                }
            }
            Op::Release(n) => {
                if !self.handles.is_empty() {
                    let i = usize::from(n) % self.handles.len();
                    self.handles.remove(i);
                }
            }
            Op::Instant(l, n) => {
                let name = self.name(n);
                let now = self.now;
                if let Some(ok) = self.handle(l).map(|h| h.instant(name, now, u64::from(n))) {
                    self.count(ok);
                }
            }
            Op::Spans(l, n, depth) => {
                let name = self.name(n);
                let now = self.now;
                let mut results = Vec::new();
                if let Some(h) = self.handle(l) {
                    let tokens: Vec<_> = (0..depth)
                        .map(|d| h.begin(name, now + u64::from(d)))
                        .collect();
                    for (d, t) in tokens.into_iter().rev().enumerate() {
                        results.push(h.end(t, now + 10 + d as u64, Some(d as u64)));
                    }
                }
                for ok in results {
                    self.count(ok);
                }
            }
            Op::Gauge(l, v) => {
                let name = self.name(200);
                let now = self.now;
                if let Some(ok) = self
                    .handle(l)
                    .map(|h| h.gauge(name, now, GaugeValue::Int(v)))
                {
                    self.count(ok);
                }
            }
            Op::Tick(l) => {
                self.tick += 1;
                let (now, tick) = (self.now, self.tick);
                let ok = self.handle(l).map(|h| {
                    (
                        h.tick_start(tick, now),
                        h.tick_end(tick, now + 5, tick % 3 == 0),
                    )
                });
                if let Some((a, b)) = ok {
                    self.count(a);
                    self.count(b);
                }
            }
            Op::Attach => {
                if let Some((id, _)) = self.viewer.take() {
                    // A new connection replaces the old one.
                    self.exporter.detach(id);
                }
                let id = self.exporter.attach().expect("a free slot");
                self.attachments.push(Attachment::default());
                self.viewer = Some((id, self.attachments.len() - 1));
            }
            Op::Detach => {
                if let Some((id, _)) = self.viewer.take() {
                    self.exporter.detach(id);
                }
            }
            Op::Drain => {
                self.exporter.request_drain();
                self.drains += 1;
            }
            Op::Advance(dt) => self.now += u64::from(dt),
            Op::Poll(ref drops) => self.poll(drops),
        }
    }
}

/// Checks one reader's stream; returns the events it received, the sum of
/// its Blocks' drop entries, and its Shutdown.
fn check_attachment(a: &Attachment) -> (u64, u64, Option<typhon_live_core::Shutdown>) {
    let seen = read_stream(&a.bytes, &[97], 1 << 20);
    let mut frames = Vec::new();
    for s in seen {
        match s {
            Seen::Frame { frame, skipped, .. } => {
                assert_eq!(skipped, 0);
                frames.push(frame);
            }
            Seen::Error(e) => panic!("stream did not decode: {e}"),
        }
    }
    if frames.is_empty() {
        // Attached and detached before any poll (or its Init was dropped).
        return (0, 0, None);
    }
    let Owned::Init {
        next_seq,
        names,
        lanes,
        ..
    } = &frames[0]
    else {
        panic!("first frame is not Init: {:?}", frames[0]);
    };
    let mut expected = *next_seq;
    let mut gaps = 0u64;
    let mut known_names: HashSet<u32> = names.iter().map(|(id, _)| *id).collect();
    let mut known_lanes: HashMap<u16, u32> = lanes.iter().map(|l| (l.id, l.name)).collect();
    let mut events = 0u64;
    let mut drop_entries = 0u64;
    let mut shutdown = None;
    for frame in &frames[1..] {
        assert!(shutdown.is_none(), "a frame after Shutdown");
        let seq = frame.seq();
        gaps += u64::from(seq.wrapping_sub(expected));
        expected = seq.wrapping_add(1);
        match frame {
            Owned::Init { .. } => panic!("second Init on one attachment"),
            Owned::Definitions { names, lanes, .. } => {
                known_names.extend(names.iter().map(|(id, _)| *id));
                known_lanes = lanes.iter().map(|l| (l.id, l.name)).collect();
                for l in lanes {
                    assert!(
                        known_names.contains(&l.name),
                        "lane named by an undefined name"
                    );
                }
            }
            Owned::Block {
                events: evs, drops, ..
            } => {
                drop_entries += drops.iter().map(|&(_, d)| u64::from(d)).sum::<u64>();
                for (lane, e) in evs {
                    assert!(
                        known_lanes.contains_key(lane),
                        "lane {lane} used before defined"
                    );
                    let name = match *e {
                        Event::Span { name, .. } | Event::Instant { name, .. } => Some(name),
                        Event::Gauge { gauge, .. } => Some(gauge),
                        _ => None,
                    };
                    if let Some(name) = name {
                        assert!(
                            known_names.contains(&name),
                            "name {name} used before defined"
                        );
                    }
                }
                events += evs.len() as u64;
            }
            Owned::CatchUp { lanes, .. } => {
                for l in lanes {
                    assert!(known_names.contains(&l.info.name));
                }
            }
            Owned::Shutdown { totals, .. } => shutdown = Some(*totals),
            Owned::Samples {
                lanes, switches, ..
            } => {
                let lanes = lanes.iter().map(|l| l.lane);
                for lane in lanes.chain(switches.iter().map(|s| s.lane)) {
                    assert!(known_lanes.contains_key(&lane), "lane {lane} undefined");
                }
            }
            Owned::Texts { texts, .. } => {
                for t in texts {
                    assert!(known_names.contains(&t.site), "text site undefined");
                    assert!(t.lane.is_none_or(|lane| known_lanes.contains_key(&lane)));
                }
            }
        }
    }
    assert_eq!(
        gaps, a.sequenced_drops,
        "sequence gaps != frames reported dropped"
    );
    (events, drop_entries, shutdown)
}

/// `stream` read by the one stream reader: its tally, and what it made
/// of the Shutdown's totals.
fn read_with_the_reader(stream: &[u8]) -> (Tally, Option<TotalsCheck>) {
    let mut reader = Reader::new();
    let mut check = None;
    each_frame(stream, |frame| {
        reader
            .read(frame, |_, update| {
                if let Update::Shutdown { check: c, .. } = update {
                    check = Some(c);
                }
            })
            .expect("the frame reads");
    });
    (*reader.state().tally(), check)
}

/// Runs `ops` and checks every stream; returns each attachment's bytes.
/// With an `encoding` buffer of that many bytes, Blocks are encoded once
/// for every reader (`Exporter::set_encoding_buffer`) and compressed as
/// the setting says; a buffer too small for a Block falls back to packing
/// it per reader.
fn run(
    ops: &[Op],
    final_drops: &[bool],
    block_max_age: u64,
    with_file: bool,
    encoding: Option<(usize, Compression)>,
) -> Vec<Vec<u8>> {
    let lanes = Lanes::<LANES, RING>::new();
    let mut scratch = vec![0u8; SCRATCH];
    let mut work = vec![0u8; encoding.map_or(0, |(len, _)| len)];
    let mut table = Lz4Table::small();
    let meta = Metadata {
        ticks_per_second: 1000,
        session_id: 7,
        process_name: "proptest",
        ..Metadata::default()
    };
    let mut run = Run {
        lanes: &lanes,
        names: NameTable::new(),
        handles: Vec::new(),
        exporter: {
            let mut exporter = Exporter::new(meta, &mut scratch);
            exporter.set_block_max_age(block_max_age);
            if let Some((_, compression)) = encoding {
                exporter.set_encoding_buffer(&mut work);
                exporter.set_compression(compression, &mut table);
            }
            exporter
        },
        now: 1,
        tick: 0,
        recorded: 0,
        refused: 0,
        attachments: Vec::new(),
        file: None,
        viewer: None,
        file_attachment: None,
        dropped_block_events: 0,
        drains: 0,
        out: vec![0u8; 1 << 16],
    };
    if with_file {
        run.file = run.exporter.attach();
        run.attachments.push(Attachment::default());
        run.file_attachment = Some(0);
    }
    for op in ops {
        run.apply(op);
    }
    run.exporter.stop();
    run.drains += 1;
    let mut final_drops = final_drops.to_vec();
    final_drops.push(false);
    run.poll(&final_drops);
    assert!(run.exporter.is_finished());

    let mut delivered = 0;
    for (index, a) in run.attachments.iter().enumerate() {
        let (events, drop_entries, shutdown) = check_attachment(a);
        delivered += events;
        // The one stream reader agrees with this test's own reading, and
        // with the writer's totals: received + lost = sent.
        let (tally, check) = read_with_the_reader(&a.bytes);
        assert_eq!(
            (tally.events, tally.frames_missed),
            (events, a.sequenced_drops),
            "the reader's tally differs from the stream's"
        );
        match shutdown {
            Some(totals) => {
                assert_eq!(check, Some(TotalsCheck::Agree), "{totals:?}");
                assert_eq!(tally.events_dropped, totals.events_dropped);
            }
            None => assert_eq!(tally.events_dropped, drop_entries),
        }
        assert!(
            a.drop_only_blocks <= run.drains,
            "{} drop-only Blocks in {} drain passes: drop reports outran the drains",
            a.drop_only_blocks,
            run.drains
        );
        let still_attached = Some(index) == run.file_attachment
            || run.viewer.is_some_and(|(_, current)| current == index);
        if !still_attached {
            continue;
        }
        let shutdown = shutdown.expect("an attached stream ends with Shutdown");
        assert_eq!(
            shutdown.frames_dropped, a.frames_dropped,
            "Shutdown's frames dropped are this reader's"
        );
        assert_eq!(
            shutdown.frames_sent, a.frames_delivered,
            "Shutdown's frames sent are this reader's"
        );
        assert!(shutdown.events_dropped >= a.dropped_block_events);
        assert!(
            shutdown.events_dropped - a.dropped_block_events <= run.refused,
            "a reader's dropped events are its dropped Blocks plus ring refusals"
        );
        assert!(drop_entries <= shutdown.events_dropped);
        if Some(index) == run.file_attachment {
            // Attached before the first event and never dropping: it has
            // every event, and was told of every refusal.
            assert_eq!(events, run.recorded, "the file misses events");
            assert_eq!(
                drop_entries, run.refused,
                "the file was not told of every refusal"
            );
            assert_eq!(shutdown.events_dropped, run.refused);
            assert_eq!(shutdown.frames_dropped, 0);
        }
    }
    assert_eq!(run.exporter.events_refused(), run.refused);
    if !with_file {
        // One reader at a time: what it did not get was dropped on its way
        // or drained while nobody was attached.
        assert_eq!(
            delivered + run.dropped_block_events + run.exporter.events_discarded(),
            run.recorded,
            "events delivered + lost in dropped Blocks + discarded while detached != events recorded"
        );
    } else {
        assert_eq!(run.exporter.events_discarded(), 0);
    }
    run.attachments.into_iter().map(|a| a.bytes).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn exporter_streams_always_decode_and_account_for_everything(
        ops in prop::collection::vec(op(), 0..120),
        final_drops in prop::collection::vec(prop::bool::weighted(0.3), 1..4),
        block_max_age in prop_oneof![Just(0u64), 1u64..3000],
        with_file in any::<bool>(),
    ) {
        let streams = run(&ops, &final_drops, block_max_age, with_file, None);
        if with_file {
            // Packing a Block once for both readers changes no byte, nor
            // does falling back when the buffer is too small.
            let full = encoding_buffer_len(SCRATCH, Compression::Off);
            for size in [full, 24] {
                let packed_once =
                    run(&ops, &final_drops, block_max_age, with_file, Some((size, Compression::Off)));
                prop_assert_eq!(&streams, &packed_once);
            }
        }
        // Compressed, every stream passes the same checks (run's) and
        // carries the same frames and events; only the bytes differ.
        for compression in [Compression::Lz4, Compression::Auto] {
            for size in [encoding_buffer_len(SCRATCH, compression), 24] {
                let compressed =
                    run(&ops, &final_drops, block_max_age, with_file, Some((size, compression)));
                prop_assert_eq!(streams.len(), compressed.len());
                for (plain, compressed) in streams.iter().zip(&compressed) {
                    prop_assert_eq!(decoded(plain), decoded(compressed));
                }
            }
        }
    }
}

#[test]
fn a_quiet_session_gets_init_catchup_and_shutdown() {
    let ops = [
        Op::Attach,
        Op::Claim(1),
        Op::Poll(vec![false]),
        Op::Advance(1000),
        Op::Poll(vec![false]),
    ];
    run(&ops, &[false], 0, false, None);
}

#[test]
fn a_dropped_definitions_frame_is_written_again() {
    let ops = [
        Op::Attach,
        Op::Poll(vec![false]),
        Op::Claim(3),
        Op::Instant(0, 9),
        Op::Drain,
        // Drops the Definitions, delivers the rest.
        Op::Poll(vec![true, false, false, false]),
    ];
    run(&ops, &[false], 0, false, None);
}

#[test]
fn a_block_collects_several_drains_until_it_ages() {
    let lanes = Lanes::<LANES, 64>::new();
    let mut names: NameTable<8, 64> = NameTable::new();
    let lane = lanes
        .claim(names.intern("main").unwrap(), LaneKind::Main)
        .unwrap();
    let mut scratch = vec![0u8; 4096];
    let meta = Metadata {
        ticks_per_second: 1_000_000,
        ..Metadata::default()
    };
    let mut exporter: Exporter<'_, LANES> = Exporter::new(meta, &mut scratch);
    exporter.set_block_max_age(5_000);
    exporter.attach().expect("a free slot");
    let mut out = vec![0u8; 1 << 16];
    let mut blocks = Vec::new();
    for step in 0..10u64 {
        let now = step * 1_000;
        assert!(lane.instant(0, now, step));
        exporter.request_drain();
        while let Some(frame) = exporter.poll(now, &lanes, &names, &mut out).unwrap() {
            if frame.kind == FrameKind::Block {
                blocks.push((now, frame.events));
            }
        }
    }
    // Events at 0..=5 ms share a Block, written once it is 5 ms old.
    assert_eq!(blocks, [(5_000, 6)]);
    exporter.stop();
    while let Some(frame) = exporter.poll(10_000, &lanes, &names, &mut out).unwrap() {
        if frame.kind == FrameKind::Block {
            blocks.push((10_000, frame.events));
        }
    }
    assert_eq!(
        blocks,
        [(5_000, 6), (10_000, 4)],
        "stop flushes the open Block"
    );
}

#[test]
fn texts_lost_on_the_way_or_refused_are_told_in_the_next_text_frame() {
    use typhon_live_core::{Level, Text, TextBatch};
    let lanes = Lanes::<LANES, 64>::new();
    let mut names: NameTable<8, 64> = NameTable::new();
    let site = names.intern("INFO hello").unwrap();
    let _lane = lanes
        .claim(names.intern("main").unwrap(), LaneKind::Main)
        .unwrap();
    let mut scratch = vec![0u8; 4096];
    let mut exporter: Exporter<'_, LANES> = Exporter::new(Metadata::default(), &mut scratch);
    let viewer = exporter.attach().unwrap();
    let mut out = vec![0u8; 1 << 16];
    let mut stream = Vec::new();
    let mut flush = |exporter: &mut Exporter<'_, LANES>, stream: &mut Vec<u8>| {
        while let Some(f) = exporter.poll(1, &lanes, &names, &mut out).unwrap() {
            stream.extend_from_slice(&out[..f.len]);
        }
    };
    let mut buf = [0u8; 256];
    let mut batch = TextBatch::new(&mut buf);
    let send = |exporter: &mut Exporter<'_, LANES>, batch: &TextBatch<'_>| {
        let mut out = vec![0u8; 1024];
        let frame = exporter.write_texts(viewer, batch, &mut out).unwrap();
        frame.map(|f| out[..f.len].to_vec())
    };
    // Before its Init, a reader is sent no texts.
    assert!(batch.push(&Text {
        time: 1,
        lane: Some(0),
        level: Level::Info,
        site,
        text: "hello",
        cut: false
    }));
    assert_eq!(send(&mut exporter, &batch), None);
    flush(&mut exporter, &mut stream);
    // Three texts dropped on the way, then two refused by the queue.
    for _ in 0..3 {
        let mut one = [0u8; 64];
        let mut one_batch = TextBatch::new(&mut one);
        one_batch.push(&Text {
            time: 2,
            lane: Some(0),
            level: Level::Info,
            site,
            text: "lost",
            cut: false,
        });
        assert!(send(&mut exporter, &one_batch).is_some());
        assert!(exporter.frame_dropped());
    }
    exporter.texts_refused(2);
    let told = send(&mut exporter, &batch).expect("a Text frame");
    stream.extend(told);
    batch.clear();
    // Nothing new, nothing lost: no frame.
    assert_eq!(send(&mut exporter, &batch), None);
    let mut reader = Reader::new();
    let mut seen = Vec::new();
    each_frame(&stream, |frame| {
        reader
            .read(frame, |_, update| match update {
                Update::Text(t) => seen.push(t.text.to_owned()),
                Update::Lost(typhon_live_reader::Loss::Texts { texts }) => {
                    seen.push(format!("lost {texts}"))
                }
                _ => {}
            })
            .unwrap()
    });
    assert_eq!(seen, ["lost 5", "hello"]);
    let tally = reader.state().tally();
    assert_eq!(
        (tally.texts, tally.texts_lost, tally.frames_missed),
        (1, 5, 3)
    );
}
