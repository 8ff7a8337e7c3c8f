//! What a reader makes of a Perfetto trace, by the rules trace_processor
//! reads one with: interned names per sequence, reset where a packet
//! clears them; track events sorted by time (the file's order deciding
//! ties), then nested per track. Decoded with `perfetto_protos`, types
//! that protoc generates from Perfetto's own `.proto` files. Shared by
//! this crate's tests and the cli's (`#[path]`).

#![allow(dead_code)]

use std::collections::HashMap;

use perfetto_protos::trace::Trace;
use perfetto_protos::track_event::track_event::Type;
use protobuf::Message;

/// `trusted_packet_sequence_id` of every packet but the heap profile's.
pub const SEQUENCE_ID: u32 = 1;
/// The heap profile's dumps' sequence.
pub const HEAP_SEQUENCE_ID: u32 = 2;

/// A heap profile's dump, as trace_processor reads a heapprofd dump: its
/// strings, frames and callstacks interned in the packet.
#[derive(Clone, Debug, PartialEq)]
pub struct HeapDump {
    pub time: u64,
    pub pid: u64,
    pub sampling_interval: u64,
    /// Per callstack: its frames' function names, innermost first, and
    /// its bytes allocated and freed.
    pub samples: Vec<(Vec<String>, u64, u64)>,
}
/// `SEQ_INCREMENTAL_STATE_CLEARED`.
pub const CLEARED: u32 = 1;
/// `SEQ_NEEDS_INCREMENTAL_STATE`.
pub const NEEDS: u32 = 2;

/// A slice as a reader nests it.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    pub track: String,
    pub name: String,
    pub start: u64,
    pub end: u64,
    pub depth: usize,
    pub args: Vec<(String, String)>,
}

/// A point event (instant or counter value).
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub track: String,
    pub name: String,
    pub time: u64,
    pub value: String,
    pub args: Vec<(String, String)>,
}

/// What a reader makes of a trace.
#[derive(Debug, Default)]
pub struct Read {
    pub process: Vec<(i32, String)>,
    /// uuid → (name, kind): "thread", "counter", "track", "process".
    pub tracks: HashMap<u64, (String, &'static str)>,
    pub slices: Vec<Slice>,
    pub instants: Vec<Point>,
    pub counters: Vec<Point>,
    /// Index, among track-event packets, of each packet that says data
    /// was lost before it.
    pub dropped_before: Vec<usize>,
    /// Heap profile dumps, in order.
    pub heap_dumps: Vec<HeapDump>,
    pub packets: usize,
}

/// A dump's samples, every id it uses resolved within the packet.
fn heap_dump(time: u64, profile: &perfetto_protos::profile_packet::ProfilePacket) -> HeapDump {
    let strings: HashMap<u64, String> = (profile.strings.iter())
        .map(|s| (s.iid(), String::from_utf8_lossy(s.str()).into_owned()))
        .collect();
    let mappings: Vec<u64> = profile.mappings.iter().map(|m| m.iid()).collect();
    let frames: HashMap<u64, String> = (profile.frames.iter())
        .map(|f| {
            assert!(
                mappings.contains(&f.mapping_id()),
                "a frame's mapping is there"
            );
            (f.iid(), strings[&f.function_name_id()].clone())
        })
        .collect();
    let callstacks: HashMap<u64, Vec<String>> = (profile.callstacks.iter())
        .map(|c| {
            // Outermost first in the packet.
            let names = c.frame_ids.iter().rev().map(|id| frames[id].clone());
            (c.iid(), names.collect())
        })
        .collect();
    assert_eq!(profile.process_dumps.len(), 1);
    let dump = &profile.process_dumps[0];
    HeapDump {
        time,
        pid: dump.pid(),
        sampling_interval: dump.sampling_interval_bytes(),
        samples: (dump.samples.iter())
            .map(|s| {
                let stack = callstacks[&s.callstack_id()].clone();
                (stack, s.self_allocated(), s.self_freed())
            })
            .collect(),
    }
}

pub fn read(bytes: &[u8]) -> Read {
    let trace = Trace::parse_from_bytes(bytes).expect("the whole file is one Trace");
    let mut read = Read::default();
    let mut event_names: HashMap<u64, String> = HashMap::new();
    let mut arg_names: HashMap<u64, String> = HashMap::new();
    let mut cleared = false;
    // (time, file order, track, type, name, args, value)
    let mut events = Vec::new();
    for packet in &trace.packet {
        read.packets += 1;
        if packet.has_profile_packet() {
            assert_eq!(packet.trusted_packet_sequence_id(), HEAP_SEQUENCE_ID);
            let profile = packet.profile_packet();
            assert_eq!(
                profile.index(),
                read.heap_dumps.len() as u64,
                "dumps numbered"
            );
            read.heap_dumps.push(heap_dump(packet.timestamp(), profile));
            continue;
        }
        assert_eq!(packet.trusted_packet_sequence_id(), SEQUENCE_ID);
        let flags = packet.sequence_flags();
        if flags & CLEARED != 0 {
            event_names.clear();
            arg_names.clear();
            cleared = true;
        }
        if packet.previous_packet_dropped() {
            assert!(flags & CLEARED != 0, "a loss must clear the interned state");
            read.dropped_before.push(events.len());
        }
        for name in &packet.interned_data.event_names {
            event_names.insert(name.iid(), name.name().to_owned());
        }
        for name in &packet.interned_data.debug_annotation_names {
            arg_names.insert(name.iid(), name.name().to_owned());
        }
        if packet.has_track_descriptor() {
            let d = packet.track_descriptor();
            let entry = if d.process.is_some() {
                read.process
                    .push((d.process.pid(), d.process.process_name().to_owned()));
                (d.process.process_name().to_owned(), "process")
            } else if d.thread.is_some() {
                assert!(d.thread.pid() > 0 && d.thread.tid() > 0);
                (d.thread.thread_name().to_owned(), "thread")
            } else if d.counter.is_some() {
                (d.name().to_owned(), "counter")
            } else {
                (d.name().to_owned(), "track")
            };
            assert!(
                read.tracks.insert(d.uuid(), entry).is_none(),
                "uuid {} described twice",
                d.uuid()
            );
        }
        if packet.has_track_event() {
            assert!(cleared && flags & NEEDS != 0, "{packet:?}");
            let e = packet.track_event();
            assert!(
                read.tracks.contains_key(&e.track_uuid()),
                "track {} used before its descriptor",
                e.track_uuid()
            );
            let name = e.has_name_iid().then(|| {
                event_names
                    .get(&e.name_iid())
                    .unwrap_or_else(|| panic!("iid {} not interned", e.name_iid()))
                    .clone()
            });
            let args: Vec<(String, String)> = e
                .debug_annotations
                .iter()
                .map(|a| {
                    let value = if a.has_uint_value() {
                        a.uint_value().to_string()
                    } else if a.has_bool_value() {
                        a.bool_value().to_string()
                    } else if a.has_string_value() {
                        a.string_value().to_owned()
                    } else if a.has_int_value() {
                        a.int_value().to_string()
                    } else if a.has_double_value() {
                        a.double_value().to_string()
                    } else {
                        panic!("unexpected annotation {a:?}")
                    };
                    (arg_names[&a.name_iid()].clone(), value)
                })
                .collect();
            let value = if e.has_counter_value() {
                e.counter_value().to_string()
            } else if e.has_double_counter_value() {
                e.double_counter_value().to_string()
            } else {
                String::new()
            };
            events.push((
                packet.timestamp(),
                events.len(),
                e.track_uuid(),
                e.type_(),
                name,
                args,
                value,
            ));
        }
    }
    // A reader sorts by time; the file's order decides ties.
    events.sort_by_key(|e| (e.0, e.1));
    let mut open: HashMap<u64, Vec<Slice>> = HashMap::new();
    for (time, _, track, kind, name, args, value) in events {
        let track_name = read.tracks[&track].0.clone();
        match kind {
            Type::TYPE_SLICE_BEGIN => {
                let stack = open.entry(track).or_default();
                stack.push(Slice {
                    track: track_name,
                    name: name.expect("a begin has a name"),
                    start: time,
                    end: 0,
                    depth: stack.len(),
                    args,
                });
            }
            Type::TYPE_SLICE_END => {
                let mut slice = (open.get_mut(&track).and_then(Vec::pop))
                    .unwrap_or_else(|| panic!("an end has a begin: {track_name} at {time}"));
                slice.end = time;
                read.slices.push(slice);
            }
            Type::TYPE_INSTANT => read.instants.push(Point {
                track: track_name,
                name: name.unwrap(),
                time,
                value,
                args,
            }),
            Type::TYPE_COUNTER => read.counters.push(Point {
                track: track_name,
                name: String::new(),
                time,
                value,
                args,
            }),
            other => panic!("unexpected type {other:?}"),
        }
    }
    assert!(open.values().all(Vec::is_empty), "unended slices: {open:?}");
    read.slices
        .sort_by_key(|s| (s.track.clone(), s.start, s.depth));
    read
}
