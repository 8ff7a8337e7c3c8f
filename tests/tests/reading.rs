//! FORMAT.md's "Reading a stream", one test per rule: what a writer
//! guarantees about each reader's stream, and what a reader makes of what
//! the format leaves to it (bounds, damage, empty and unknown things,
//! repeated Inits, Catch-ups). Readers count through the core's shared
//! pieces (`SequenceCheck`, `BlockBuffer::each_event`), so these rules
//! hold for every consumer that uses them.

use typhon_live_core::definitions::write_definitions;
use typhon_live_core::frame::write_raw_frame;
use typhon_live_core::init::write_init;
use typhon_live_core::{
    BlockBuilder, BlockView, Compression, DecodeError, Decoder, Emitted, Event, Exporter,
    FrameKind, LaneKind, Lanes, Metadata, NameTable, OpenSpan, Payload, ReaderId, SequenceCheck,
    Shutdown, DEFAULT_MAX_FRAME,
};
use typhon_live_reader::BlockBuffer;
use typhon_live_tests::{block_frame, frames, read_stream, Owned};

type Names = NameTable<16, 256>;

/// Every frame `exporter` has due at `now`, with its reader and bytes;
/// `drop` says which of them the transport fails to send.
fn poll<const R: usize>(
    exporter: &mut Exporter<'_, 4, R>,
    now: u64,
    lanes: &Lanes<4, 16>,
    names: &Names,
    mut drop: impl FnMut(&Emitted) -> bool,
) -> Vec<(Emitted, Vec<u8>)> {
    let mut out = vec![0u8; 1 << 16];
    let mut got = Vec::new();
    while let Some(emitted) = exporter.poll(now, lanes, names, &mut out).unwrap() {
        if drop(&emitted) {
            exporter.frame_dropped();
        } else {
            got.push((emitted, out[..emitted.len].to_vec()));
        }
    }
    got
}

/// The bytes of every frame due at `now`, all of them delivered.
fn delivered<const R: usize>(
    exporter: &mut Exporter<'_, 4, R>,
    now: u64,
    lanes: &Lanes<4, 16>,
    names: &Names,
) -> Vec<u8> {
    bytes_of(&poll(exporter, now, lanes, names, |_| false))
}

/// `stream`'s frames, which must all decode.
fn decoded(stream: &[u8]) -> Vec<Owned> {
    frames(read_stream(stream, &[], 1 << 16))
}

fn kinds(frames: &[(Emitted, Vec<u8>)]) -> Vec<FrameKind> {
    frames.iter().map(|(e, _)| e.kind).collect()
}

/// "Off-CPU slices": a lane's switch out and its next switch in are one
/// slice; an in stated before its out ends where it began; an in with no
/// out, or an out over an out, is unpaired; after a gap an open out is in
/// doubt, and an in that meets it unpaired; a lane freed forgets its
/// out; the threads still out are listed open.
#[test]
fn a_switch_out_and_the_next_in_are_one_off_cpu_slice_and_a_gap_forgets_the_open_ones() {
    use typhon_live_core::samples::write_samples;
    use typhon_live_core::{LaneInfo, SamplesBatch, Switch, SwitchRecord};
    use typhon_live_reader::{OffCpu, Reader, Update};

    let (_, names) = writer_parts();
    let lane = |id| LaneInfo {
        id,
        name: MAIN,
        kind: LaneKind::Worker,
    };
    let mut out = vec![0u8; 4096];
    let n = write_init(&mut out, 0, &meta(), &names, [lane(0), lane(1)].into_iter()).unwrap();
    let mut stream = out[..n].to_vec();
    let mut samples = |seq: u32, time: u64, switches: &[(u16, u64, Switch)]| {
        let switches: Vec<SwitchRecord> = (switches.iter())
            .map(|&(lane, time, what)| SwitchRecord { lane, time, what })
            .collect();
        let batch = SamplesBatch {
            time,
            switches: &switches,
            ..SamplesBatch::default()
        };
        let n = write_samples(&mut out, seq, &batch).unwrap();
        out[..n].to_vec()
    };
    use Switch::{In, OutPreempted as Preempted, OutWaiting as Waiting};
    // µs. Lane 0 waits 10..30, is preempted 40..45; lane 1 comes in at 5
    // (its out before the reader joined), goes out at 50 and again at 60
    // (the in between lost), and its in at 58 comes before that out.
    stream.extend(samples(
        1,
        100,
        &[(1, 5, In), (0, 10, Waiting), (0, 30, In)],
    ));
    stream.extend(samples(
        2,
        200,
        &[(0, 40, Preempted), (1, 50, Waiting), (1, 60, Waiting)],
    ));
    stream.extend(samples(
        3,
        300,
        &[(0, 45, In), (1, 58, In), (0, 250, Waiting)],
    ));
    // Frame 4 lost: it held lane 0's in at 320 and its out at 330. Frame
    // 5 lists no lane counters to settle the doubt: the in at 340 is
    // unpaired.
    stream.extend(samples(5, 500, &[(0, 340, In), (1, 400, Waiting)]));
    let read = |reader: &mut Reader, bytes: &[u8]| {
        let mut slices = Vec::new();
        let damage = typhon_live_reader::frames(bytes, |frame| {
            reader.read(frame, |_, update| {
                if let Update::OffCpu(slice) = update {
                    slices.push(slice);
                }
            })
        });
        assert_eq!(damage, []);
        slices
    };
    let mut reader = Reader::new();
    let slices = read(&mut reader, &stream);
    let slice = |lane, from: u64, to: u64, preempted| OffCpu {
        lane,
        from: from * 1_000,
        to: to * 1_000,
        preempted,
    };
    assert_eq!(
        slices,
        [
            slice(0, 10, 30, false),
            slice(0, 40, 45, true),
            slice(1, 60, 60, false),
        ]
    );
    let tally = *reader.state().tally();
    // Lane 1's in at 5, its out at 50, lane 0's in at 340.
    assert_eq!((tally.off_cpu, tally.switches_unpaired), (3, 3));
    let open: Vec<_> = reader
        .state()
        .off_cpu_open()
        .map(|o| (o.lane, o.since))
        .collect();
    assert_eq!(open, [(1, 400_000)], "lane 1, out since 400 µs");
    // Lane 1 freed: its thread's in will never come.
    let n = write_definitions(
        &mut out,
        6,
        &names,
        names.len() as u32,
        [lane(0)].into_iter(),
    )
    .unwrap();
    let freed = out[..n].to_vec();
    assert_eq!(read(&mut reader, &freed), []);
    assert_eq!(reader.state().off_cpu_open().count(), 0);
    // A forwarding reader (the relay's) hands every switch on, unpaired.
    let (mut forwarding, mut forwarded) = (typhon_live_reader::owned::Reader::default(), 0);
    let damage = typhon_live_reader::frames(&stream, |frame| {
        forwarding.read(frame, 0, |update, _| {
            if let typhon_live_reader::owned::Update::Samples(samples) = update {
                forwarded += samples.switches.len();
            }
        })
    });
    assert_eq!(damage, []);
    assert_eq!(forwarded, 11);
    let mut plain = Reader::new();
    plain.forward_switches();
    assert_eq!(read(&mut plain, &stream), []);
    let tally = plain.state().tally();
    assert_eq!((tally.off_cpu, tally.switches_unpaired), (0, 0));
    assert_eq!(plain.state().off_cpu_open().count(), 0);
}

fn bytes_of(frames: &[(Emitted, Vec<u8>)]) -> Vec<u8> {
    frames.iter().flat_map(|(_, b)| b.iter().copied()).collect()
}

/// A writer's lanes and names, with "Main" interned as [`MAIN`].
fn writer_parts() -> (Lanes<4, 16>, Names) {
    let mut names = Names::new();
    assert_eq!(names.intern("Main"), Ok(MAIN));
    (Lanes::new(), names)
}

/// The name of lane 0 in these tests.
const MAIN: u32 = 0;

fn meta() -> Metadata<'static> {
    Metadata {
        ticks_per_second: 1_000_000,
        session_id: 21,
        process_name: "reading",
        ..Metadata::default()
    }
}

/// A packed Block payload of `n` tick starts on lane 0, with `drops`.
fn block_payload(n: u64, drops: &[(u16, u32)]) -> Vec<u8> {
    let mut scratch = vec![0u8; 4096];
    let mut builder = BlockBuilder::new(&mut scratch);
    for tick in 0..n {
        builder.push(
            0,
            &Event::TickStart {
                time: tick * 10,
                tick,
            },
        );
    }
    let frame = block_frame(&builder, 0, drops, Compression::Off);
    frame[16..frame.len() - 4].to_vec()
}

/// What a reader makes of a Block payload with frame flags `flags`: its
/// drop entries, the events it read, and the damage with the records
/// left unread.
fn read_block(payload: &[u8], flags: u8) -> (u64, usize, Option<(DecodeError, u32)>) {
    let block = BlockView::parse(payload, flags).expect("the header reads");
    let dropped = block.drops().map(|(_, n)| u64::from(n)).sum();
    let mut read = 0;
    let damage = BlockBuffer::new()
        .each_event(&block, |_, _| read += 1)
        .err()
        .map(|d| (d.error, d.unread));
    (dropped, read, damage)
}

/// Question 2: an unknown codec. A version 3 writer never sends one, so
/// it is damage; the header is the same in every codec, so its drop
/// entries count, and its records are events lost to the damage.
#[test]
fn an_unknown_codec_is_damage_whose_drop_entries_count() {
    let payload = block_payload(5, &[(0, 3)]);
    assert_eq!(
        read_block(&payload, 0x40),
        (3, 0, Some((DecodeError::UnknownCodec { flags: 0x40 }, 5)))
    );
}

/// Question 3: damaged LZ4 data. The drop entries stand outside the
/// compressed part and count; none of the records can be read.
#[test]
fn damaged_lz4_data_keeps_its_drop_entries_and_loses_its_records() {
    let mut scratch = vec![0u8; 4096];
    let mut builder = BlockBuilder::new(&mut scratch);
    for tick in 0..40 {
        builder.push(
            0,
            &Event::TickStart {
                time: tick * 10,
                tick,
            },
        );
    }
    let frame = block_frame(&builder, 0, &[(1, 7)], Compression::Lz4);
    let mut payload = frame[16..frame.len() - 4].to_vec();
    assert_eq!(read_block(&payload, 1), (7, 40, None));
    // Cut the LZ4 data short.
    payload.truncate(payload.len() - 3);
    let (dropped, read, damage) = read_block(&payload, 1);
    assert_eq!((dropped, read), (7, 0));
    assert!(
        matches!(damage, Some((DecodeError::Decompression { .. }, 40))),
        "{damage:?}"
    );
}

/// Question 4: out-of-range sizes. A packed length of 0 is malformed, one
/// over 8 MiB is over the format's bound; both are damage of the events
/// (the drop entries count). The 8 MiB frame limit is of the whole frame,
/// header and check included, and a reader accepts at least that much.
#[test]
fn packed_lengths_of_zero_or_over_8_mib_and_the_frame_limit() {
    let drops = 22 + 6;
    let mut payload = block_payload(2, &[(0, 1)]);
    payload.truncate(drops);
    payload.extend(0u32.to_le_bytes());
    payload.push(0);
    assert!(matches!(
        read_block(&payload, 1),
        (1, 0, Some((DecodeError::Malformed { .. }, 2)))
    ));
    payload[drops..drops + 4].copy_from_slice(&((8u32 << 20) + 1).to_le_bytes());
    let over = DecodeError::OverBound {
        what: "block packed events length",
        stated: (8 << 20) + 1,
        bound: 8 << 20,
    };
    assert_eq!(read_block(&payload, 1), (1, 0, Some((over, 2))));
    // Frames of 8 MiB whole pass a default decoder; one byte more is
    // refused whole, and the stream stays in step.
    let frame = |payload_len: usize, seq: u32| {
        let mut out = vec![0u8; payload_len + 20];
        write_raw_frame(&mut out, 9, 0, seq, &vec![0u8; payload_len]).unwrap();
        out
    };
    let mut stream = frame(DEFAULT_MAX_FRAME - 20, 0);
    stream.extend(frame(DEFAULT_MAX_FRAME - 19, 1));
    stream.extend(frame(0, 2));
    let mut buf = vec![0u8; 2 * DEFAULT_MAX_FRAME];
    let mut decoder = Decoder::new(&mut buf);
    let mut seen = Vec::new();
    let mut rest = &stream[..];
    while !rest.is_empty() {
        let n = decoder.feed(rest);
        rest = &rest[n..];
        loop {
            match decoder.next() {
                Ok(Some(frame)) => seen.push(Ok(frame.seq)),
                Ok(None) => break,
                Err(e) => seen.push(Err(e)),
            }
        }
    }
    assert!(
        matches!(
            seen[..],
            [Ok(0), Err(DecodeError::FrameTooLarge { len, max, .. }), Ok(2)]
                if len == DEFAULT_MAX_FRAME as u64 + 1 && max == DEFAULT_MAX_FRAME as u64
        ),
        "{seen:?}"
    );
}

/// Question 5: empty Blocks. An LZ4 Block without records is malformed
/// (a writer never compresses one); its drop entries count. A packed
/// Block without records or drop entries is valid and carries nothing.
#[test]
fn empty_blocks() {
    let empty = block_payload(0, &[(2, 4)]);
    assert_eq!(read_block(&empty, 0), (4, 0, None));
    let mut lz4 = empty.clone();
    lz4.extend(1u32.to_le_bytes());
    lz4.extend([0x10, 0]);
    assert!(matches!(
        read_block(&lz4, 1),
        (4, 0, Some((DecodeError::Malformed { .. }, 0)))
    ));
    assert_eq!(read_block(&block_payload(0, &[]), 0), (0, 0, None));
}

/// Question 6: a repeated Init (a serial link) goes on with the numbers:
/// if it skips some, those frames were missed, a gap. The Shutdown's
/// totals run from the stream's first Init (the writer's attach).
#[test]
fn a_repeated_init_that_skips_numbers_is_a_gap() {
    let (lanes, names) = writer_parts();
    let lane = lanes.claim(MAIN, LaneKind::Main).unwrap();
    let mut scratch = vec![0u8; 4096];
    let mut exporter: Exporter<'_, 4> = Exporter::new(meta(), &mut scratch);
    let reader = exporter.attach().unwrap();
    let mut stream = Vec::new();
    for tick in 0..6 {
        lane.tick_start(tick, tick * 1000);
        exporter.request_drain();
        if tick == 3 {
            exporter.restart(reader);
        }
        // The link loses the Blocks of ticks 1 and 2.
        let lost = |e: &Emitted| e.kind == FrameKind::Block && (1..=2).contains(&tick);
        stream.extend(bytes_of(&poll(
            &mut exporter,
            tick * 1000 + 1,
            &lanes,
            &names,
            lost,
        )));
    }
    exporter.stop();
    stream.extend(delivered(&mut exporter, 9000, &lanes, &names));
    // A listener that joins at the repeated Init sees no gap.
    let got = decoded(&stream);
    let inits: Vec<usize> = (0..got.len())
        .filter(|&i| matches!(got[i], Owned::Init { .. }))
        .collect();
    assert_eq!(inits.len(), 2);
    let count = |frames: &[Owned]| {
        let mut check = SequenceCheck::new();
        frames
            .iter()
            .map(|f| match f {
                Owned::Init { next_seq, meta, .. } => check.init(*next_seq, meta.session_id),
                other => check.sequenced(other.seq()),
            })
            .sum::<u32>()
    };
    assert_eq!(count(&got[inits[1]..]), 0);
    // The one that read from the start missed the two Blocks; the
    // repeated Init came right after them and says so.
    assert_eq!(count(&got), 2);
    let before_repeat = count(&got[..inits[1]]);
    assert_eq!(before_repeat, 0, "the gap shows only at the repeated Init");
    let Some(Owned::Shutdown { seq, totals }) = got.last() else {
        panic!("no Shutdown")
    };
    assert_eq!(totals.frames_dropped, 2);
    assert_eq!(totals.frames_sent + totals.frames_dropped, u64::from(*seq));
}

/// Question 7: ring losses carried by a Block that is then dropped are
/// told again, with that Block's own events, in the next Block the reader
/// receives; the drop entries it receives add up to its Shutdown's total.
#[test]
fn ring_losses_in_a_dropped_block_are_told_again() {
    let (lanes, names) = writer_parts();
    let lane = lanes.claim(MAIN, LaneKind::Main).unwrap();
    let mut scratch = vec![0u8; 4096];
    let mut exporter: Exporter<'_, 4> = Exporter::new(meta(), &mut scratch);
    exporter.attach().unwrap();
    let mut stream = delivered(&mut exporter, 0, &lanes, &names);
    // 20 events into a ring of 16: 4 lost to it.
    for tick in 0..20 {
        lane.tick_start(tick, tick);
    }
    exporter.request_drain();
    let dropped = poll(&mut exporter, 100, &lanes, &names, |e| {
        e.kind == FrameKind::Block
    });
    assert!(dropped.is_empty());
    lane.tick_start(20, 200);
    exporter.request_drain();
    stream.extend(delivered(&mut exporter, 300, &lanes, &names));
    exporter.stop();
    stream.extend(delivered(&mut exporter, 400, &lanes, &names));
    let got = decoded(&stream);
    let drops: Vec<_> = got
        .iter()
        .filter_map(|f| match f {
            Owned::Block { drops, .. } if !drops.is_empty() => Some(drops.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(drops, [vec![(0, 4 + 16)]]);
    let Some(Owned::Shutdown { totals, .. }) = got.last() else {
        panic!("no Shutdown")
    };
    assert_eq!(totals.events_dropped, 20);
}

/// Question 8: a lane whose thread ended. Its events come in Blocks
/// before the Definitions that frees it, so they resolve with the lane
/// table in force when they are read.
#[test]
fn a_lanes_events_come_before_the_definitions_that_free_it() {
    let (lanes, mut names) = writer_parts();
    let main = lanes.claim(MAIN, LaneKind::Main).unwrap();
    let worker = lanes
        .claim(names.intern("worker").unwrap(), LaneKind::Worker)
        .unwrap();
    let mut scratch = vec![0u8; 4096];
    let mut exporter: Exporter<'_, 4> = Exporter::new(meta(), &mut scratch);
    exporter.attach().unwrap();
    let mut stream = delivered(&mut exporter, 0, &lanes, &names);
    worker.tick_start(1, 10);
    drop(worker); // the thread ends with its event still in the ring
    main.tick_start(2, 20);
    exporter.request_drain();
    stream.extend(delivered(&mut exporter, 30, &lanes, &names));
    exporter.request_drain();
    stream.extend(delivered(&mut exporter, 40, &lanes, &names));
    let got = decoded(&stream);
    let block = got
        .iter()
        .position(
            |f| matches!(f, Owned::Block { events, .. } if events.iter().any(|(l, _)| *l == 1)),
        )
        .expect("the worker's Block");
    let freed = got
        .iter()
        .position(
            |f| matches!(f, Owned::Definitions { lanes, .. } if lanes.iter().all(|l| l.id != 1)),
        )
        .expect("a Definitions without the worker");
    assert!(block < freed, "{got:?}");
}

/// Question 9, and issue 21's race: every name id in a Catch-up's open
/// spans was defined before it, and every span it lists was open at its
/// host time. A lane's own name may be newer (it is spelled out beside
/// it). The transport reads the clock before the exporter collects the
/// open spans; a span begun in between used to be listed (0.6 to 17.8 µs
/// after the Catch-up's time in 2 of 5 demo runs at 1000 ticks/s).
#[test]
fn a_catch_up_lists_only_spans_open_at_its_time_and_named_before_it() {
    use typhon_live_core::catchup::write_catchup;
    let (lanes, mut names) = writer_parts();
    let lane = lanes.claim(MAIN, LaneKind::Main).unwrap();
    let (outer, inner) = (
        names.intern("outer").unwrap(),
        names.intern("inner").unwrap(),
    );
    let _a = lane.begin(outer, 100);
    let _b = lane.begin(inner, 600); // after the clock read at 500
    let mut scratch = vec![0u8; 4096];
    let mut exporter: Exporter<'_, 4> = Exporter::new(meta(), &mut scratch);
    exporter.attach().unwrap();
    let got = frames(read_stream(
        &delivered(&mut exporter, 500, &lanes, &names),
        &[],
        1 << 16,
    ));
    let Some(Owned::CatchUp {
        time,
        lanes: listed,
        ..
    }) = got.get(1)
    else {
        panic!("{got:?}")
    };
    assert_eq!(*time, 500);
    let open = OpenSpan {
        id: 1,
        name: outer,
        start: 100,
    };
    assert_eq!(
        (listed[0].open_depth, &listed[0].open[..]),
        (1, &[open][..])
    );
    // A span whose name the reader has not been told is not listed.
    let mut out = vec![0u8; 4096];
    let n = write_catchup(&mut out, 0, 1_000, inner, &lanes, &names).unwrap();
    let got = frames(read_stream(&out[..n], &[], 4096));
    let Some(Owned::CatchUp { lanes: listed, .. }) = got.first() else {
        panic!("{got:?}")
    };
    assert_eq!(
        (listed[0].open_depth, &listed[0].open[..]),
        (1, &[open][..])
    );
}

/// Question 10: the Catch-up after an Init comes before any Block; only
/// Definitions may come between (and a Shutdown, if the session ends).
#[test]
fn the_catch_up_comes_right_after_each_init() {
    let (lanes, mut names) = writer_parts();
    let lane = lanes.claim(MAIN, LaneKind::Main).unwrap();
    let mut scratch = vec![0u8; 4096];
    let mut exporter: Exporter<'_, 4, 2> = Exporter::new(meta(), &mut scratch);
    let first = exporter.attach().unwrap();
    lane.tick_start(1, 10);
    exporter.request_drain();
    let got = poll(&mut exporter, 20, &lanes, &names, |_| false);
    assert_eq!(
        kinds(&got),
        [FrameKind::Init, FrameKind::CatchUp, FrameKind::Block]
    );
    // A reader joining while events wait, and one restarted.
    let second = exporter.attach().unwrap();
    exporter.restart(first);
    names.intern("late").unwrap();
    lane.tick_start(2, 30);
    exporter.request_drain();
    let got = poll(&mut exporter, 40, &lanes, &names, |_| false);
    for reader in [first, second] {
        let of: Vec<_> = got
            .iter()
            .filter(|(e, _)| e.reader == reader)
            .map(|(e, _)| e.kind)
            .collect();
        assert_eq!(
            of,
            [FrameKind::Init, FrameKind::CatchUp, FrameKind::Block],
            "{reader:?}"
        );
    }
}

/// Question 11: a version 2 Block whose flags byte is not 0. Version 2
/// writers wrote 0 there; a reader reads a Block's flags by version 3's
/// rule whatever the stream's version, so such a Block is damage (an
/// unknown codec) whose drop entries count.
#[test]
fn a_version_2_block_with_flags_reads_by_version_3_rules() {
    let names = Names::new();
    let mut out = vec![0u8; 4096];
    let n = write_init(&mut out, 0, &meta(), &names, std::iter::empty()).unwrap();
    let mut stream = out[..n].to_vec();
    stream[16] = 2; // version 2; the frame checks are written again below
    let payload = stream[16..n - 4].to_vec();
    let n = write_raw_frame(&mut out, FrameKind::Init.to_byte(), 0, 0, &payload).unwrap();
    let mut stream = out[..n].to_vec();
    let block = block_payload(3, &[(0, 2)]);
    let n = write_raw_frame(&mut out, FrameKind::Block.to_byte(), 0x02, 0, &block).unwrap();
    stream.extend(&out[..n]);
    let mut buf = vec![0u8; 1 << 16];
    let mut decoder = Decoder::new(&mut buf);
    decoder.feed(&stream);
    let init = decoder.next().unwrap().unwrap();
    let Ok(Payload::Init(init)) = init.parse() else {
        panic!("the Init reads")
    };
    assert_eq!(init.version, 2);
    let frame = decoder.next().unwrap().unwrap();
    assert_eq!(
        read_block(frame.payload, frame.flags),
        (2, 0, Some((DecodeError::UnknownCodec { flags: 0x02 }, 3)))
    );
}

/// Question 12: reserved flags (the frame flags of every kind but Block,
/// the Init's flags field) are ignored by readers; writers write 0.
#[test]
fn reserved_flags_are_ignored() {
    let (lanes, mut names) = writer_parts();
    let _lane = lanes.claim(MAIN, LaneKind::Main).unwrap();
    let mut scratch = vec![0u8; 4096];
    let mut exporter: Exporter<'_, 4> = Exporter::new(meta(), &mut scratch);
    exporter.attach().unwrap();
    let mut stream = delivered(&mut exporter, 5, &lanes, &names);
    names.intern("late").unwrap();
    exporter.stop();
    stream.extend(delivered(&mut exporter, 6, &lanes, &names));
    let clean = decoded(&stream);
    let kinds: Vec<u8> = clean
        .iter()
        .map(|f| match f {
            Owned::Init { .. } => 1,
            Owned::Block { .. } => 2,
            Owned::Definitions { .. } => 3,
            Owned::CatchUp { .. } => 4,
            Owned::Shutdown { .. } => 5,
            Owned::Samples { .. } => 6,
            Owned::Texts { .. } => 7,
        })
        .collect();
    assert_eq!(kinds, [1, 4, 3, 5]);
    // Every frame resealed with flags 0xff, the Init's own flags too.
    let (mut out, mut buf) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    let mut decoder = Decoder::new(&mut buf);
    decoder.feed(&stream);
    let mut flagged = Vec::new();
    while let Ok(Some(frame)) = decoder.next() {
        let mut payload = frame.payload.to_vec();
        if frame.kind == FrameKind::Init.to_byte() {
            payload[2..4].copy_from_slice(&[0xff, 0xff]);
        }
        let n = write_raw_frame(&mut out, frame.kind, 0xff, frame.seq, &payload).unwrap();
        flagged.extend(&out[..n]);
    }
    assert_ne!(flagged, stream);
    assert_eq!(decoded(&flagged), clean);
}

/// Question 13: a Definitions frame without a names section defines no
/// name; without a lanes section it leaves the lane table as it is (an
/// empty lanes section frees every lane).
#[test]
fn definitions_without_a_section_change_nothing_of_it() {
    let (lanes, names) = writer_parts();
    let _lane = lanes.claim(MAIN, LaneKind::Main).unwrap();
    let mut out = vec![0u8; 4096];
    let n = write_definitions(&mut out, 0, &names, 0, lanes.iter()).unwrap();
    let mut buf = vec![0u8; 4096];
    let mut decoder = Decoder::new(&mut buf);
    decoder.feed(&out[..n]);
    let whole = decoder.next().unwrap().unwrap().payload.to_vec();
    // Sections: names (tag 7) then lanes (tag 8), each tag, u32 length, body.
    let names_len = 5 + u32::from_le_bytes(whole[1..5].try_into().unwrap()) as usize;
    let (names_part, lanes_part) = whole.split_at(names_len);
    let parse = |payload: &[u8]| {
        let payload = payload.to_vec();
        let view = typhon_live_core::DefinitionsView::parse(&payload).unwrap();
        (
            view.names().count(),
            view.lanes().map(|table| table.count()),
        )
    };
    assert_eq!(parse(&whole), (1, Some(1)));
    assert_eq!(parse(names_part), (1, None));
    assert_eq!(parse(lanes_part), (0, Some(1)));
    assert_eq!(parse(&[8, 2, 0, 0, 0, 0, 0]), (0, Some(0)));
}

/// A Block of a tick start, a record of kind `kind` with flags A and B,
/// and a tick start: lane 0, all at time 0.
fn block_around(kind: u8) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend(3u32.to_le_bytes()); // three records
    payload.extend([0; 16]); // first and last timestamps
    payload.extend(0u16.to_le_bytes()); // no drop entries
    payload.extend([1, 0, 0, 3, 0]); // one group: lane 0, 3 records, at 0
                                     // Kind: tick start (16), the record with flags A and B, tick start.
    payload.extend([3, 8, 0, 0, 16, kind * 4 + 3, 16]);
    payload.extend([0]); // span time: empty
    payload.extend([1, 0, 5]); // name: the middle record's
    payload.extend([0, 0]); // span id, parent: empty
    payload.extend([1, 0, 7]); // duration: the middle record's (B)
    payload.extend([1, 0, 9]); // argument: the middle record's (A)
    payload.extend([3, 0, 0]); // point time: three gaps of 0
    payload.extend([3, 8, 0, 0, 2, 11, 2]); // value: z(1), 11, z(1)
    payload
}

/// A record of a reserved kind (14 and 15) is read by the shape they share
/// and skipped: the records after it stand.
#[test]
fn a_record_of_a_reserved_kind_is_skipped() {
    let payload = block_around(14);
    let block = BlockView::parse(&payload, 0).expect("the header reads");
    let mut events = Vec::new();
    BlockBuffer::new()
        .each_event(&block, |_, event| events.push(event))
        .expect("no damage");
    assert_eq!(
        events,
        [
            Event::TickStart { time: 0, tick: 1 },
            Event::Unknown { time: 0, kind: 14 },
            Event::TickStart { time: 0, tick: 2 },
        ]
    );
}

/// A mark (kind 12) defines flag A only: one with flag B is damage from
/// there on; the events before it stand.
#[test]
fn a_mark_with_a_flag_it_does_not_define_is_damage() {
    let payload = block_around(12);
    let block = BlockView::parse(&payload, 0).expect("the header reads");
    let mut events = Vec::new();
    let error = BlockBuffer::new()
        .each_event(&block, |_, event| events.push(event))
        .unwrap_err();
    assert_eq!(events, [Event::TickStart { time: 0, tick: 1 }], "{error:?}");
}

/// Allocated bytes (kind 13) define flag B only (their span): with flag
/// A as well they are damage from there on; the events before them stand.
#[test]
fn allocated_bytes_with_a_flag_they_do_not_define_are_damage() {
    let (_, read, damage) = read_block(&block_around(13), 0);
    assert_eq!(read, 1);
    assert!(damage.is_some());
}

/// A field (kinds 9 to 11) has exactly one owner, a task (A) or a span
/// (B): one that names both is damage from there on, as any malformed
/// record; the events before it stand.
#[test]
fn a_field_with_two_owners_ends_the_block_there() {
    for kind in 9..=11 {
        let (_, read, damage) = read_block(&block_around(kind), 0);
        assert_eq!(read, 1, "kind {kind}");
        assert_eq!(
            damage,
            Some((
                DecodeError::Malformed {
                    what: "field without exactly one owner"
                },
                2
            )),
            "kind {kind}"
        );
    }
}

/// Question 14: a record of a kind the reader does not know ends the
/// Block there: the events before it (in record order) stand, the rest
/// of the stated records are events lost to the damage.
#[test]
fn a_record_of_unknown_kind_ends_the_block_there() {
    let mut payload = Vec::new();
    payload.extend(3u32.to_le_bytes()); // three records
    payload.extend([0; 16]); // first and last timestamps
    payload.extend(0u16.to_le_bytes()); // no drop entries
    payload.extend([1, 0, 0, 3, 0]); // one group: lane 0, 3 records, at 0
                                     // Kind: width 8, no escapes: tick start (16), tick start, kind 0 (0).
    payload.extend([3, 8, 0, 0, 16, 16, 0]);
    payload.extend([0; 6]); // span time to argument: empty
    payload.extend([3, 0, 0]); // point time: three gaps of 0
    payload.extend([2, 0, 2]); // value: the two tick numbers' z(1)
    let (_, read, damage) = read_block(&payload, 0);
    assert_eq!(read, 2);
    assert_eq!(
        damage,
        Some((
            DecodeError::Malformed {
                what: "unknown record kind"
            },
            1
        ))
    );
    // A record count above what the columns hold: the five read, then the
    // fault, the two more it states unread.
    let mut overstated = block_payload(5, &[]);
    overstated[..4].copy_from_slice(&7u32.to_le_bytes());
    let (_, read, damage) = read_block(&overstated, 0);
    assert_eq!(read, 5);
    assert!(
        matches!(damage, Some((DecodeError::Malformed { .. }, 2))),
        "{damage:?}"
    );
}

/// Question 15: each reader's stream starts at 0, whenever it attaches:
/// its Init names 0 and its first sequenced frame carries it.
#[test]
fn a_reader_attaching_later_starts_at_zero() {
    let (lanes, names) = writer_parts();
    let lane = lanes.claim(MAIN, LaneKind::Main).unwrap();
    let mut scratch = vec![0u8; 4096];
    let mut exporter: Exporter<'_, 4, 2> = Exporter::new(meta(), &mut scratch);
    exporter.attach().unwrap();
    for tick in 0..5 {
        lane.tick_start(tick, tick * 10);
        exporter.request_drain();
        poll(&mut exporter, tick * 10 + 1, &lanes, &names, |_| false);
    }
    let late = exporter.attach().unwrap();
    lane.tick_start(5, 60);
    exporter.request_drain();
    let got = poll(&mut exporter, 61, &lanes, &names, |_| false);
    let seqs: Vec<(FrameKind, u32)> = got
        .iter()
        .filter(|(e, _)| e.reader == late)
        .map(|(e, _)| (e.kind, e.seq))
        .collect();
    assert_eq!(
        seqs,
        [
            (FrameKind::Init, 0),
            (FrameKind::CatchUp, 0),
            (FrameKind::Block, 1)
        ]
    );
    assert_ne!(late, ReaderId::FIRST);
}

/// Question 16: a reader is attached from the moment the writer accepts
/// it, before its Init goes out: ring losses collected from then on are
/// told in its stream (in its first Block, after its Init).
#[test]
fn a_reader_is_attached_from_attach_not_from_its_init() {
    let (lanes, names) = writer_parts();
    let lane = lanes.claim(MAIN, LaneKind::Main).unwrap();
    for tick in 0..20 {
        lane.tick_start(tick, tick);
    }
    let mut scratch = vec![0u8; 4096];
    let mut exporter: Exporter<'_, 4> = Exporter::new(meta(), &mut scratch);
    exporter.attach().unwrap();
    exporter.request_drain();
    let mut stream = delivered(&mut exporter, 100, &lanes, &names);
    exporter.stop();
    stream.extend(delivered(&mut exporter, 200, &lanes, &names));
    let got = decoded(&stream);
    let kinds: Vec<_> = got
        .iter()
        .map(|f| match f {
            Owned::Init { .. } => "init",
            Owned::CatchUp { .. } => "catch-up",
            Owned::Block { drops, .. } if drops == &[(0, 4)] => "block with the losses",
            Owned::Block { .. } => "block",
            Owned::Definitions { .. } => "definitions",
            Owned::Texts { .. } => "text",
            Owned::Samples { .. } => "samples",
            Owned::Shutdown {
                totals: Shutdown {
                    events_dropped: 4, ..
                },
                ..
            } => "shutdown counting them",
            Owned::Shutdown { .. } => "shutdown",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "init",
            "catch-up",
            "block with the losses",
            "shutdown counting them"
        ]
    );
}

/// "Samples": its lanes are defined before it. A Samples frame naming a
/// lane the table does not hold broke that rule: its entries for that lane
/// (counters and switches) are counted and skipped, the rest read.
#[test]
fn a_samples_frames_lane_not_defined_before_it_is_counted_and_skipped() {
    use typhon_live_core::samples::write_samples;
    use typhon_live_core::{Counters, LaneInfo, LaneSample, SamplesBatch, Switch, SwitchRecord};
    use typhon_live_reader::{Reader, Update};

    let (_, names) = writer_parts();
    let main = LaneInfo {
        id: 0,
        name: MAIN,
        kind: LaneKind::Main,
    };
    let mut out = vec![0u8; 4096];
    let n = write_init(&mut out, 0, &meta(), &names, [main].into_iter()).unwrap();
    let mut stream = out[..n].to_vec();
    let sample = |lane, on_cpu_ns| LaneSample {
        lane,
        thread: 100 + u64::from(lane),
        switches_traced: true,
        counters: Counters {
            on_cpu_ns: Some(on_cpu_ns),
            ..Counters::default()
        },
    };
    for (seq, time) in [(1, 1_000), (2, 2_000)] {
        let lanes = [sample(0, time), sample(3, time)];
        let switches = [0, 3].map(|lane| SwitchRecord {
            lane,
            time: time - 10,
            what: Switch::OutWaiting,
        });
        let batch = SamplesBatch {
            time,
            lanes: &lanes,
            switches: &switches,
            ..SamplesBatch::default()
        };
        let n = write_samples(&mut out, seq, &batch).unwrap();
        stream.extend_from_slice(&out[..n]);
    }
    let mut reader = Reader::new();
    let (mut intervals, mut switches) = (Vec::new(), Vec::new());
    let damage = typhon_live_reader::frames(&stream, |frame| {
        reader.read(frame, |_, update| match update {
            Update::Cpu(interval) => intervals.push(interval.lane),
            Update::Switch { lane, .. } => switches.push(lane),
            _ => {}
        })
    });
    assert_eq!(damage, []);
    assert_eq!(intervals, [0], "lane 3's counters skipped");
    assert_eq!(switches, [0, 0], "lane 3's switches skipped");
    // Two frames, each a counter entry and a switch of lane 3.
    assert_eq!(reader.state().tally().samples_undefined_lanes, 4);
    // Read a frame at a time, as the relay does: the same lanes.
    let mut owned = typhon_live_reader::owned::Reader::default();
    let mut stated = Vec::new();
    let damage = typhon_live_reader::frames(&stream, |frame| {
        owned.read(frame, 0, |update, _| {
            if let typhon_live_reader::owned::Update::Samples(samples) = update {
                let lanes = samples.lanes.iter().map(|l| l.lane);
                let switches = samples.switches.iter().map(|s| s.0);
                stated.push((lanes.collect::<Vec<_>>(), switches.collect::<Vec<_>>()));
            }
        })
    });
    assert_eq!(damage, []);
    assert_eq!(stated, [(vec![0], vec![0]), (vec![0], vec![0])]);
}
