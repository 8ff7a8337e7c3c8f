//! The relay forwards a source's Blocks relabelled (`Merger`'s forward
//! path: core's `relabel_events`) instead of decoding and encoding them
//! again. Property: any source stream, through a merger that forwards and
//! read by a viewer, gives the viewer the events a merger that encodes
//! every Block again gives it, lane by lane. Blocks it cannot forward (a
//! task's records, a string field, times that move off the clock) are
//! encoded, so any mix of them holds too.

use std::collections::BTreeMap;

use proptest::prelude::*;

use typhon_live_core::block::{block_scratch_len, RECORDS_PER_GROUP};
use typhon_live_core::init::write_init;
use typhon_live_core::{
    BlockBuilder, Compression, Event, FieldOwner, FieldValue, GaugeValue, LaneId, LaneInfo,
    LaneKind, Metadata,
};
use typhon_live_reader::owned::{self, Update};
use typhon_live_reader::{Reader, Update as Read};
use typhon_live_relay::merge::{MergedFrame, Merger};
use typhon_live_tests::{block_frame, each_frame, VecNames};

/// Names the source defines: ids 0 to 6; events also use 9, undefined.
const NAMES: [&str; 7] = [
    "Main", "Worker", "Tick", "Physics", "route", "memory", "Worker 2",
];

fn name() -> impl Strategy<Value = u32> {
    prop_oneof![0..6u32, Just(9u32)]
}

/// One event at `time` (its kind's other values drawn).
fn event_at(time: u64) -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => (prop_oneof![9 => 0..5_000u64, 1 => any::<u64>()], name(), 1..50u32, 0..3u32, any::<Option<u64>>()).prop_map(
            move |(duration, name, id, parent, arg)| Event::Span {
                start: time,
                duration,
                name,
                id,
                parent,
                arg,
            }
        ),
        1 => (name(), any::<u64>()).prop_map(move |(name, payload)| Event::Instant {
            time,
            name,
            payload
        }),
        1 => (name(), any::<i64>(), any::<bool>()).prop_map(move |(gauge, v, float)| Event::Gauge {
            time,
            gauge,
            value: if float {
                GaugeValue::Float(v as f64)
            } else {
                GaugeValue::Int(v)
            },
        }),
        1 => (any::<u64>(), any::<bool>()).prop_map(move |(tick, end)| if end {
            Event::TickEnd {
                time,
                tick,
                overrun: tick % 2 == 0,
            }
        } else {
            Event::TickStart { time, tick }
        }),
        1 => (name(), any::<i64>(), 0..3u8, 1..50u32).prop_map(move |(key, v, how, span)| {
            Event::Field {
                time,
                key,
                value: match how {
                    0 => FieldValue::Int(v),
                    1 => FieldValue::Float(v as f64),
                    _ => FieldValue::Str(v.unsigned_abs() as u32 % 6),
                },
                owner: if v % 3 == 0 {
                    FieldOwner::Task(v.unsigned_abs() % 100)
                } else {
                    FieldOwner::Span(span)
                },
            }
        }),
        1 => (1..50u32, any::<u64>()).prop_map(move |(span, bytes)| Event::Allocated {
            time,
            span,
            bytes
        }),
        1 => (name(), 1..100u64, 0..4u64).prop_map(move |(name, task, parent)| Event::TaskBegin {
            time,
            name,
            task,
            parent,
        }),
    ]
}

/// A Block's events: on lanes 0 to 3 (lane 3 undefined), times rising
/// from `base` by the drawn steps.
fn block(base: u64) -> impl Strategy<Value = Vec<(LaneId, Event)>> {
    prop::collection::vec((0..4u16, 0..10_000u64), 1..60).prop_flat_map(move |steps| {
        let mut time = base;
        steps
            .into_iter()
            .map(|(lane, step)| {
                time = time.saturating_add(step);
                event_at(time).prop_map(move |event| (lane, event))
            })
            .collect::<Vec<_>>()
    })
}

/// A source's stream: its Init, then its Blocks, each packed or LZ4.
fn source_stream(blocks: &[(Vec<(LaneId, Event)>, bool)]) -> Vec<u8> {
    let names = VecNames(NAMES.iter().map(|n| n.to_string()).collect());
    let lanes = [
        LaneInfo {
            id: 0,
            name: 0,
            kind: LaneKind::Main,
        },
        LaneInfo {
            id: 1,
            name: 1,
            kind: LaneKind::Worker,
        },
        LaneInfo {
            id: 2,
            name: 6,
            kind: LaneKind::Worker,
        },
    ];
    let meta = Metadata {
        ticks_per_second: 1_000_000_000,
        session_id: 77,
        process_name: "source",
        ..Metadata::default()
    };
    let mut out = vec![0u8; 4096];
    let n = write_init(&mut out, 0, &meta, &names, lanes.into_iter()).expect("fits");
    let mut stream = out[..n].to_vec();
    // Room for a group per event: lanes alternate freely.
    let mut scratch = vec![0u8; block_scratch_len(64 * RECORDS_PER_GROUP)];
    for (seq, (events, lz4)) in blocks.iter().enumerate() {
        let mut builder = BlockBuilder::new(&mut scratch);
        for (lane, event) in events {
            assert!(builder.push(*lane, event), "the Block holds them");
        }
        let compression = if *lz4 {
            Compression::Lz4
        } else {
            Compression::Off
        };
        stream.extend(block_frame(&builder, seq as u32, &[(1, 2)], compression));
    }
    stream
}

/// `stream` through a merger of two sources (it is the second), arriving
/// at Unix time `received` ns; `forward` keeps each Block's packed events
/// for the merger, else it must encode them again. The merged stream, and
/// the Blocks the merger forwarded.
fn merged(stream: &[u8], received: u64, forward: bool) -> (Vec<u8>, u64) {
    let mut merger = Merger::new(&["a".into(), "b".into()], 7, 1_000_000_000);
    let whole = |frame: &MergedFrame, seq: u32| {
        let (header, trailer) = frame.seal(seq);
        [&header[..], &frame.payload, &trailer].concat()
    };
    let mut merged = whole(&merger.init(), 0);
    let mut seq = 0;
    let mut reader = owned::Reader::default();
    each_frame(stream, |frame| {
        let _ = reader.read(frame, received, |mut update, _| {
            if let Update::Events { packed, .. } = &mut update {
                if !forward {
                    *packed = None;
                }
            }
            merger.update(1, &update, |frame| {
                seq += 1;
                merged.extend(whole(&frame, seq));
            });
        });
    });
    (merged, merger.forwarded_blocks)
}

/// Each lane's name and events as a viewer reads `stream`, by lane id.
fn per_lane(stream: &[u8]) -> BTreeMap<LaneId, (String, Vec<Event>)> {
    let mut reader = Reader::new();
    let mut lanes: BTreeMap<LaneId, (String, Vec<Event>)> = BTreeMap::new();
    each_frame(stream, |frame| {
        reader
            .read(frame, |state, update| {
                if let Read::Event { lane, event } = update {
                    let name = state.lanes().get(&lane).map_or(0, |l| l.info.name);
                    let name = state.names().show(name).into_owned();
                    let entry = lanes.entry(lane).or_insert_with(|| (name, Vec::new()));
                    entry.1.push(event);
                }
            })
            .expect("the merged stream reads");
    });
    lanes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn forwarded_blocks_read_as_encoded_ones(
        blocks in prop::collection::vec(
            (prop_oneof![Just(0u64), 1_000_000u64..2_000_000, Just(u64::MAX - 1_000_000)], any::<bool>())
                .prop_flat_map(|(base, lz4)| block(base).prop_map(move |events| (events, lz4))),
            1..6,
        ),
        received in prop_oneof![Just(0u64), 500_000_000u64..3_000_000_000],
    ) {
        let stream = source_stream(&blocks);
        let (forwarding, _) = merged(&stream, received, true);
        let (encoding, none) = merged(&stream, received, false);
        prop_assert_eq!(none, 0);
        prop_assert_eq!(per_lane(&forwarding), per_lane(&encoding));
    }
}

/// The ordinary case forwards: a Block of spans, instants, gauges and
/// ticks on defined lanes goes on relabelled, not encoded, whichever way
/// it came packed; one with a task's record is encoded.
#[test]
fn an_ordinary_block_is_forwarded_and_reads_the_same() {
    let events: Vec<(LaneId, Event)> = (0..40u64)
        .map(|i| {
            let event = match i % 4 {
                0 => Event::TickStart {
                    time: 1_000 + i * 100,
                    tick: i,
                },
                1 => Event::Span {
                    start: 1_000 + i * 100,
                    duration: 50,
                    name: 3,
                    id: i as u32,
                    parent: 0,
                    arg: None,
                },
                2 => Event::Gauge {
                    time: 1_000 + i * 100,
                    gauge: 5,
                    value: GaugeValue::Int(i as i64 * 1000),
                },
                _ => Event::Instant {
                    time: 1_000 + i * 100,
                    name: 4,
                    payload: i,
                },
            };
            ((i % 3) as LaneId, event)
        })
        .collect();
    let task = Event::TaskBegin {
        time: 9_000,
        name: 2,
        task: 5,
        parent: 0,
    };
    let with_task: Vec<(LaneId, Event)> = events.iter().copied().chain([(0, task)]).collect();
    let stream = source_stream(&[(events.clone(), true), (events, false), (with_task, true)]);
    let (forwarding, forwarded) = merged(&stream, 2_000_000_000, true);
    let (encoding, _) = merged(&stream, 2_000_000_000, false);
    assert_eq!(forwarded, 2, "the LZ4 and the packed Block, not the task's");
    let lanes = per_lane(&forwarding);
    assert_eq!(lanes, per_lane(&encoding));
    let named: Vec<&str> = lanes.values().map(|(name, _)| name.as_str()).collect();
    assert_eq!(named, ["b/Main", "b/Worker", "b/Worker 2"]);
}
