//! Property tests: whatever goes in comes out, through every frame kind and
//! any split of the stream into chunks (a text past its bound comes out
//! cut, and says so).

use proptest::prelude::*;
use typhon_live_core::block::{
    block_scratch_len, pack_events, packed_block_frame_len, relabel_events, relabelled_len_bound,
    write_packed_block, Relabel, RelabelError, RECORDS_PER_GROUP,
};
use typhon_live_core::definitions::write_definitions;
use typhon_live_core::init::write_init;
use typhon_live_core::text::{within_bound, write_texts};
use typhon_live_core::{
    BlockBuilder, Compression, Decoder, EncodeError, Event, EventKinds, FieldOwner, FieldValue,
    GaugeValue, LaneId, LaneInfo, LaneKind, Metadata, NameSource, Shutdown,
};
use typhon_live_core::{Level, TextBatch};
use typhon_live_tests::{
    frames, own, read_stream, same_events, Component, Meta, Owned, OwnedText, VecNames,
};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z_.:/ ]{0,12}",
        any::<String>().prop_map(|s| s.chars().take(8).collect()),
    ]
}

fn meta() -> impl Strategy<Value = Meta> {
    let component = (
        any::<u32>(),
        text(),
        any::<u32>(),
        prop::collection::vec((text(), text(), any::<u32>(), any::<u32>()), 0..4),
    )
        .prop_map(|(id, name, size, fields)| Component {
            id,
            name,
            size,
            fields,
        });
    (
        (
            any::<u64>(),
            any::<u64>(),
            text(),
            any::<u32>(),
            any::<u64>(),
        ),
        prop::collection::vec(component, 0..4),
        prop::collection::vec(
            (
                any::<u32>(),
                text(),
                prop::collection::vec(any::<u32>(), 0..5),
            ),
            0..4,
        ),
        prop::collection::vec((any::<u32>(), text(), text()), 0..4),
        prop::collection::vec((text(), text()), 0..4),
        prop::collection::vec((any::<u32>(), text(), any::<u32>()), 0..4),
        prop::collection::vec((any::<u32>(), any::<Option<u32>>(), text(), text()), 0..4),
    )
        .prop_map(
            |(
                (tps, session, process, pid, created),
                components,
                archetypes,
                indexes,
                config,
                queues,
                resources,
            )| Meta {
                ticks_per_second: tps,
                session_id: session,
                process_name: process,
                process_id: pid,
                created_unix_ns: created,
                components,
                archetypes,
                indexes,
                config,
                queues,
                resources,
            },
        )
}

fn lane_kind() -> impl Strategy<Value = LaneKind> {
    prop_oneof![
        Just(LaneKind::Main),
        Just(LaneKind::Worker),
        Just(LaneKind::Pool),
        Just(LaneKind::Other)
    ]
}

fn lanes() -> impl Strategy<Value = Vec<LaneInfo>> {
    prop::collection::vec((any::<u16>(), any::<u32>(), lane_kind()), 0..6).prop_map(|v| {
        v.into_iter()
            .map(|(id, name, kind)| LaneInfo { id, name, kind })
            .collect()
    })
}

/// Timestamps that are mostly realistic, sometimes extreme.
fn time() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1_000_000u64..1_100_000, 1 => any::<u64>(), 1 => Just(u64::MAX), 1 => Just(0)]
}

fn gauge_value() -> impl Strategy<Value = GaugeValue> {
    prop_oneof![
        any::<i64>().prop_map(GaugeValue::Int),
        any::<u64>().prop_map(|bits| GaugeValue::Float(f64::from_bits(bits))),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (
            time(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<Option<u64>>()
        )
            .prop_map(|(start, duration, name, id, parent, arg)| Event::Span {
                start,
                duration,
                name,
                id,
                parent,
                arg
            }),
        (time(), any::<u32>(), any::<u64>()).prop_map(|(time, name, payload)| Event::Instant {
            time,
            name,
            payload
        }),
        (time(), any::<u32>(), gauge_value()).prop_map(|(time, gauge, value)| Event::Gauge {
            time,
            gauge,
            value
        }),
        (time(), any::<u64>()).prop_map(|(time, tick)| Event::TickStart { time, tick }),
        (time(), any::<u64>(), any::<bool>()).prop_map(|(time, tick, overrun)| Event::TickEnd {
            time,
            tick,
            overrun
        }),
        (time(), any::<u32>(), task(), task()).prop_map(|(time, name, task, parent)| {
            Event::TaskBegin {
                time,
                name,
                task,
                parent,
            }
        }),
        (
            time(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            task()
        )
            .prop_map(|(start, duration, name, id, parent, task)| Event::Poll {
                start,
                duration,
                name,
                id,
                parent,
                task
            }),
        (time(), any::<u32>(), task(), any::<u64>(), any::<u64>()).prop_map(
            |(time, name, task, wall, busy)| Event::TaskEnd {
                time,
                name,
                task,
                wall,
                busy
            }
        ),
        (time(), any::<u32>(), field_value(), field_owner()).prop_map(
            |(time, key, value, owner)| Event::Field {
                time,
                key,
                value,
                owner
            }
        ),
        (
            time(),
            any::<u32>(),
            proptest::option::of((any::<u32>(), time()))
        )
            .prop_map(|(time, label, span)| Event::Mark { time, label, span }),
        (time(), any::<u32>(), any::<u64>()).prop_map(|(time, span, bytes)| Event::Allocated {
            time,
            span,
            bytes
        }),
        (time(), 14u8..=15).prop_map(|(time, kind)| Event::Unknown { time, kind }),
    ]
}

fn field_value() -> impl Strategy<Value = FieldValue> {
    prop_oneof![
        any::<i64>().prop_map(FieldValue::Int),
        any::<u64>().prop_map(|bits| FieldValue::Float(f64::from_bits(bits))),
        any::<u32>().prop_map(FieldValue::Str),
    ]
}

fn field_owner() -> impl Strategy<Value = FieldOwner> {
    prop_oneof![
        any::<u32>().prop_map(FieldOwner::Span),
        task().prop_map(FieldOwner::Task),
    ]
}

/// Task ids: mostly a process's counter, sometimes anything.
fn task() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0u64..1000, 1 => any::<u64>()]
}

fn batch() -> impl Strategy<Value = Vec<(LaneId, Event)>> {
    prop::collection::vec((0u16..4, event()), 0..200)
}

/// Lanes, names and gauges each mapped to others, spread out so that a
/// relabelled name column packs differently.
struct Shuffled;

impl Relabel for Shuffled {
    fn lane(&self, lane: LaneId) -> Option<LaneId> {
        Some(lane.wrapping_mul(7).wrapping_add(1))
    }

    fn name(&self, name: u32) -> u32 {
        name.wrapping_mul(2_654_435_761).wrapping_add(5)
    }

    fn gauge(&self, gauge: u32) -> u32 {
        gauge ^ 0xABCD
    }
}

fn drops() -> impl Strategy<Value = Vec<(LaneId, u32)>> {
    prop::collection::vec((any::<u16>(), any::<u32>()), 0..4)
}

fn with_metadata<R>(m: &Meta, f: impl FnOnce(&Metadata<'_>) -> R) -> R {
    m.with(|meta| f(&meta))
}

/// Encodes a Block of `events` (as many as fit `scratch_len`), returning the
/// frame and how many events went in.
fn block_frame(
    seq: u32,
    events: &[(LaneId, Event)],
    drops: &[(LaneId, u32)],
    scratch_len: usize,
) -> (Vec<u8>, usize) {
    block_frame_with(seq, events, drops, scratch_len, Compression::Off)
}

/// [`block_frame`] through the exporter's path: events encoded once with
/// `compression`, then framed.
fn block_frame_with(
    seq: u32,
    events: &[(LaneId, Event)],
    drops: &[(LaneId, u32)],
    scratch_len: usize,
    compression: Compression,
) -> (Vec<u8>, usize) {
    let mut scratch = vec![0u8; scratch_len];
    let mut builder = BlockBuilder::new(&mut scratch);
    let taken = events
        .iter()
        .take_while(|(lane, e)| builder.push(*lane, e))
        .count();
    (
        typhon_live_tests::block_frame(&builder, seq, drops, compression),
        taken,
    )
}

fn init_frame(m: &Meta, names: &VecNames, lanes: &[LaneInfo], seq: u32) -> Vec<u8> {
    with_metadata(m, |meta| {
        let mut out = vec![0u8; 64];
        let n = match write_init(&mut out, seq, meta, names, lanes.iter().copied()) {
            Err(EncodeError::BufferTooSmall { needed }) => {
                out.resize(needed, 0);
                write_init(&mut out, seq, meta, names, lanes.iter().copied())
                    .expect("needed was exact")
            }
            other => other.expect("only the buffer can be too small"),
        };
        out.truncate(n);
        out
    })
}

fn names() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(text(), 0..20)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn init_round_trips(m in meta(), names in names(), lanes in lanes(), seq in any::<u32>()) {
        let names = VecNames(names);
        let bytes = init_frame(&m, &names, &lanes, seq);
        let got = frames(read_stream(&bytes, &[], 1 << 16));
        let want_names: Vec<(u32, String)> = names.0.iter().cloned().enumerate().map(|(i, n)| (i as u32, n)).collect();
        prop_assert_eq!(got, vec![Owned::Init { next_seq: seq, meta: m, names: want_names, lanes }]);
    }

    #[test]
    fn block_round_trips(
        events in batch(),
        drops in drops(),
        seq in any::<u32>(),
        compression in prop_oneof![Just(Compression::Off), Just(Compression::Lz4), Just(Compression::Auto)],
    ) {
        // Room for every event even if each is its own lane group.
        let (bytes, taken) = block_frame_with(seq, &events, &drops, block_scratch_len(RECORDS_PER_GROUP * 200), compression);
        prop_assert_eq!(taken, events.len());
        let got = frames(read_stream(&bytes, &[], 1 << 20));
        let Owned::Block { seq: got_seq, events: got_events, drops: got_drops, first, last, .. } = &got[0] else {
            panic!("not a block: {got:?}");
        };
        prop_assert_eq!(*got_seq, seq);
        prop_assert!(same_events(got_events, &events), "{:?} != {:?}", got_events, events);
        prop_assert_eq!(got_drops, &drops);
        let want_first = events.iter().map(|(_, e)| e.time()).min().unwrap_or(0);
        let want_last = events.iter().map(|(_, e)| e.end_time()).max().unwrap_or(0);
        prop_assert_eq!((*first, *last), (want_first, want_last));
    }

    #[test]
    fn a_relabelled_block_reads_as_its_events_relabelled(
        events in batch(),
        shift in any::<u64>(),
    ) {
        let mut scratch = vec![0u8; block_scratch_len(RECORDS_PER_GROUP * 200)];
        let mut builder = BlockBuilder::new(&mut scratch);
        for (lane, event) in &events {
            prop_assert!(builder.push(*lane, event));
        }
        let mut packed = vec![0u8; 1 << 20];
        let n = pack_events(&mut packed, &builder).unwrap();
        let records = builder.records();
        let mut out = vec![0u8; relabelled_len_bound(n, records)];
        let mut names = vec![0u64; events.len()];
        let result = relabel_events(&packed[..n], records, &Shuffled, &mut names, &mut out);
        // Records whose ids lie outside the name column are refused.
        let refused = events.iter().find_map(|(_, e)| match e {
            Event::TaskBegin { .. } => Some(6),
            Event::Poll { .. } => Some(7),
            Event::TaskEnd { .. } => Some(8),
            Event::Field { value: FieldValue::Str(_), .. } => Some(11),
            Event::Field { owner: FieldOwner::Task(_), value: FieldValue::Int(_), .. } => Some(9),
            Event::Field { owner: FieldOwner::Task(_), .. } => Some(10),
            Event::Mark { .. } => Some(12),
            Event::Unknown { kind, .. } => Some(*kind),
            _ => None,
        });
        let len = match result {
            Err(RelabelError::Kind { .. }) => {
                prop_assert!(refused.is_some(), "{:?}", result);
                return Ok(());
            }
            other => other.unwrap(),
        };
        prop_assert!(refused.is_none());
        // Moved in time by its header alone.
        let (first, last) = builder.time_range();
        let times = (first.wrapping_add(shift), last.wrapping_add(shift));
        let mut frame = vec![0u8; packed_block_frame_len(1, len)];
        let n = write_packed_block(&mut frame, 3, records, times, &[(2, 5)], &out[..len]).unwrap();
        let got = frames(read_stream(&frame[..n], &[], 1 << 20));
        let Owned::Block { events: got, drops, .. } = &got[0] else {
            panic!("not a block: {got:?}");
        };
        let want: Vec<(LaneId, Event)> = events
            .iter()
            .map(|&(lane, event)| {
                // Each time moves by `shift`, wrapping as the header's
                // does; a span's duration stays (map_times would measure
                // it between its moved ends, which may wrap).
                let event = match event.map_times(|t| t.wrapping_add(shift), |length| length) {
                    Event::Span { start, name, id, parent, arg, .. } => {
                        let Event::Span { duration, .. } = event else { unreachable!() };
                        Event::Span { start, duration, name, id, parent, arg }
                    }
                    moved => moved,
                };
                (Shuffled.lane(lane).unwrap(), event.map_ids(|n| Shuffled.name(n), |g| Shuffled.gauge(g), |task| task))
            })
            .collect();
        prop_assert!(same_events(got, &want), "{:?} != {:?}", got, want);
        prop_assert_eq!(drops, &[(2, 5)]);
    }

    #[test]
    fn relabelling_any_bytes_fails_cleanly(
        bytes in prop::collection::vec(any::<u8>(), 0..300),
        records in prop_oneof![0u32..40, any::<u32>()],
    ) {
        let mut out = vec![0u8; 512];
        let mut names = vec![0u64; 16];
        // Never a panic; what it writes fits what it said.
        if let Ok(n) = relabel_events(&bytes, records, &Shuffled, &mut names, &mut out) {
            prop_assert!(n <= out.len());
        }
    }

    #[test]
    fn texts_round_trip_cut_to_their_bound(
        texts in prop::collection::vec(
            (time(), any::<Option<u16>>(), 0usize..6, any::<u32>(), any::<String>(), 0usize..3),
            0..40,
        ),
        lost in any::<u32>(),
        seq in any::<u32>(),
    ) {
        // Some texts past the bound: a multi-byte one repeated.
        let texts: Vec<OwnedText> = texts
            .into_iter()
            .map(|(time, lane, level, site, text, grow)| OwnedText {
                time,
                lane: lane.filter(|&l| l != LaneId::MAX),
                level: Level::ALL[level],
                site,
                text: text.repeat(1 + grow * 300),
                cut: false,
            })
            .collect();
        let mut buf = vec![0u8; 1 << 20];
        let mut batch = TextBatch::new(&mut buf);
        for text in &texts {
            prop_assert!(batch.push(&text.as_core()));
        }
        let mut out = vec![0u8; batch.frame_len()];
        let n = write_texts(&mut out, seq, lost, &batch).unwrap();
        let got = frames(read_stream(&out[..n], &[], 1 << 23));
        let want: Vec<OwnedText> = texts
            .iter()
            .map(|t| {
                let (text, cut) = within_bound(&t.text);
                OwnedText { text: text.to_owned(), cut, ..t.clone() }
            })
            .collect();
        prop_assert_eq!(got, vec![Owned::Texts { seq, lost, texts: want }]);
    }

    #[test]
    fn reading_in_batches_gives_what_the_iterator_gives(
        events in prop::collection::vec((0u16..3, event()), 0..300),
        sorted in any::<bool>(),
        batch in 1usize..70,
    ) {
        // Sorted by lane, groups are long and often of one kind: the batch
        // path's fast case. Unsorted, they are short and mixed.
        let mut events = events;
        if sorted {
            events.sort_by_key(|(lane, _)| *lane);
        }
        let (bytes, taken) = block_frame(1, &events, &[], block_scratch_len(RECORDS_PER_GROUP * 300));
        prop_assert_eq!(taken, events.len());
        let view = typhon_live_core::BlockView::parse(&bytes[16..bytes.len() - 4], 0).expect("parses");
        let mut reader = view.events().expect("columns parse");
        let mut out = vec![(0, Event::TickStart { time: 0, tick: 0 }); batch];
        let mut got = Vec::new();
        loop {
            let n = reader.read(&mut out).expect("valid");
            if n == 0 {
                break;
            }
            got.extend_from_slice(&out[..n]);
        }
        prop_assert!(same_events(&got, &events), "{:?} != {:?}", got, events);
    }

    #[test]
    fn a_skimmed_block_hands_on_every_wanted_event_and_counts_the_rest(
        events in prop::collection::vec((0u16..3, event()), 0..300),
        sorted in any::<bool>(),
        wanted in prop::sample::subsequence(
            vec![EventKinds::SPAN, EventKinds::GAUGE, EventKinds::TICK_START, EventKinds::TICK_END, EventKinds::POLL, EventKinds::FIELD],
            0..3,
        ),
    ) {
        let mut events = events;
        if sorted {
            events.sort_by_key(|(lane, _)| *lane);
        }
        let wanted = wanted.into_iter().fold(EventKinds::NONE, |a, b| a | b);
        let (bytes, _) = block_frame(1, &events, &[], block_scratch_len(RECORDS_PER_GROUP * 300));
        let view = typhon_live_core::BlockView::parse(&bytes[16..bytes.len() - 4], 0).expect("parses");
        let all: Vec<_> = view.events().expect("columns parse").map(|e| e.expect("valid")).collect();
        let mut skimming = view.events().expect("columns parse").skim(wanted);
        let got: Vec<_> = skimming.by_ref().map(|e| e.expect("valid")).collect();
        prop_assert_eq!(got.len() + skimming.skipped() as usize, all.len());
        let of_wanted = |events: &[(LaneId, Event)]| -> Vec<(LaneId, Event)> {
            events.iter().copied().filter(|(_, e)| wanted.contains(EventKinds::of(e))).collect()
        };
        prop_assert!(same_events(&of_wanted(&got), &of_wanted(&all)));
        // What it hands on is what a whole reading gives, less whole groups.
        let mut rest = all.iter();
        for event in &got {
            prop_assert!(rest.any(|e| same_events(&[*e], &[*event])), "{:?} out of order", event);
        }
        if !all.iter().any(|(_, e)| wanted.contains(EventKinds::of(e))) {
            prop_assert!(got.is_empty());
        }
    }

    #[test]
    fn a_full_block_refuses_more_and_keeps_what_it_took(events in prop::collection::vec((0u16..3, event()), 50..300)) {
        // Room for eight records in three lane groups.
        let scratch = block_scratch_len(8);
        let (bytes, taken) = block_frame(1, &events, &[], scratch);
        prop_assert!(taken >= 1 && taken < events.len());
        let got = frames(read_stream(&bytes, &[], 1 << 20));
        let Owned::Block { events: got_events, .. } = &got[0] else { panic!("not a block") };
        prop_assert!(same_events(got_events, &events[..taken]));
    }

    #[test]
    fn any_split_decodes_to_the_same_frames(
        m in meta(),
        batches in prop::collection::vec(batch(), 1..4),
        more_names in names(),
        chunks in prop::collection::vec(1usize..700, 1..8),
    ) {
        let mut names = VecNames(vec!["Main".into(), "Tick".into()]);
        let lanes = vec![LaneInfo { id: 0, name: 0, kind: LaneKind::Main }];
        let mut stream = init_frame(&m, &names, &lanes, 0);
        let mut seq = 0;
        for batch in &batches {
            stream.extend(block_frame(seq, batch, &[(0, 3)], 64 << 10).0);
            seq += 1;
        }
        let first_new = names.count();
        names.0.extend(more_names);
        let mut out = vec![0u8; 1 << 16];
        let n = write_definitions(&mut out, seq, &names, first_new, lanes.iter().copied()).unwrap();
        stream.extend(&out[..n]);
        seq += 1;
        let n = Shutdown { time: 9, frames_sent: 4, frames_dropped: 0, events_dropped: 3 }.write(&mut out, seq).unwrap();
        stream.extend(&out[..n]);

        let whole = read_stream(&stream, &[], 1 << 20);
        let split = read_stream(&stream, &chunks, 1 << 20);
        prop_assert_eq!(whole.len(), batches.len() + 3);
        // Debug text, so that a NaN gauge compares equal to itself.
        prop_assert_eq!(format!("{whole:?}"), format!("{split:?}"));
        let got = frames(whole);
        let seqs: Vec<u32> = got.iter().map(Owned::seq).collect();
        let want: Vec<u32> = std::iter::once(0).chain(0..=seq).collect();
        prop_assert_eq!(seqs, want);
    }
}

#[test]
fn empty_metadata_and_empty_block_round_trip() {
    let bytes = init_frame(&Meta::default(), &VecNames(vec![]), &[], 7);
    assert_eq!(
        frames(read_stream(&bytes, &[], 4096)),
        vec![Owned::Init {
            next_seq: 7,
            meta: Meta::default(),
            names: vec![],
            lanes: vec![]
        }]
    );
    let (bytes, _) = block_frame(3, &[], &[], 1024);
    let got = frames(read_stream(&bytes, &[], 4096));
    assert!(
        matches!(&got[..], [Owned::Block { seq: 3, events, first: 0, last: 0, .. }] if events.is_empty())
    );
}

#[test]
fn frames_parse_without_the_stream_decoder_too() {
    let (bytes, _) = block_frame(0, &[(1, Event::TickStart { time: 5, tick: 1 })], &[], 256);
    let mut buf = vec![0u8; 1024];
    let mut decoder = Decoder::new(&mut buf);
    assert_eq!(decoder.feed(&bytes), bytes.len());
    let frame = decoder.next().unwrap().unwrap();
    assert!(matches!(own(&frame), Ok(Owned::Block { .. })));
}

#[test]
fn catchup_and_definitions_carry_lanes_names_and_open_spans() {
    use typhon_live_core::catchup::write_catchup;
    use typhon_live_core::{Lanes, NameTable, OpenSpan, MAX_OPEN_SPANS};
    use typhon_live_tests::CatchUpLane;

    let lanes = Lanes::<4, 16>::new();
    let mut names: NameTable<32, 512> = NameTable::new();
    let main = lanes
        .claim(names.intern("Main").unwrap(), LaneKind::Main)
        .unwrap();
    let pool = lanes
        .claim(names.intern("pool-1").unwrap(), LaneKind::Pool)
        .unwrap();
    let (tick, stall) = (
        names.intern("Tick").unwrap(),
        names.intern("Stall").unwrap(),
    );
    let _outer = main.begin(tick, 100);
    let _inner = main.begin(stall, 150);
    let deep: Vec<_> = (0..MAX_OPEN_SPANS as u64 + 2)
        .map(|i| pool.begin(tick, 200 + i))
        .collect();

    let mut out = vec![0u8; 4096];
    let n = write_catchup(&mut out, 5, 10_000, names.count(), &lanes, &names).unwrap();
    let got = frames(read_stream(&out[..n], &[], 4096));
    let want_pool_open: Vec<OpenSpan> = (0..MAX_OPEN_SPANS as u64)
        .map(|i| OpenSpan {
            id: i as u32 + 1,
            name: tick,
            start: 200 + i,
        })
        .collect();
    assert_eq!(
        got,
        vec![Owned::CatchUp {
            seq: 5,
            time: 10_000,
            lanes: vec![
                CatchUpLane {
                    info: LaneInfo {
                        id: 0,
                        name: 0,
                        kind: LaneKind::Main
                    },
                    name: "Main".into(),
                    open_depth: 2,
                    open: vec![
                        OpenSpan {
                            id: 1,
                            name: tick,
                            start: 100
                        },
                        OpenSpan {
                            id: 2,
                            name: stall,
                            start: 150
                        },
                    ],
                },
                CatchUpLane {
                    info: LaneInfo {
                        id: 1,
                        name: 1,
                        kind: LaneKind::Pool
                    },
                    name: "pool-1".into(),
                    open_depth: deep.len() as u32,
                    open: want_pool_open,
                },
            ],
        }]
    );

    let n = write_definitions(&mut out, 6, &names, 2, lanes.iter()).unwrap();
    let got = frames(read_stream(&out[..n], &[], 4096));
    assert_eq!(
        got,
        vec![Owned::Definitions {
            seq: 6,
            names: vec![(2, "Tick".into()), (3, "Stall".into())],
            lanes: vec![
                LaneInfo {
                    id: 0,
                    name: 0,
                    kind: LaneKind::Main
                },
                LaneInfo {
                    id: 1,
                    name: 1,
                    kind: LaneKind::Pool
                },
            ],
        }]
    );
}

#[test]
fn a_scratch_too_small_for_any_event_still_writes_valid_drop_only_blocks() {
    let (bytes, taken) = block_frame(
        4,
        &[(0, Event::TickStart { time: 1, tick: 1 })],
        &[(2, 9)],
        3,
    );
    assert_eq!(taken, 0);
    let got = frames(read_stream(&bytes, &[], 256));
    assert!(
        matches!(&got[..], [Owned::Block { seq: 4, events, drops, encoded: 0, .. }]
        if events.is_empty() && drops == &[(2, 9)])
    );
}
