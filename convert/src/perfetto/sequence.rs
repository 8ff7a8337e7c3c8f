//! The one packet sequence a writer writes: each packet framed as a
//! `Trace.packet` field, names interned, and the sequence flags that tell
//! a reader when interned names start afresh and where data is missing.

use std::borrow::Cow;

use foldhash::HashSet;

use prost::encoding::{encode_key, WireType};
use prost::Message;
use typhon_live_core::NameId;

use super::proto::{
    AnnotationValue, CounterValue, DebugAnnotation, DebugAnnotationName, EventName, EventType,
    InternedData, PacketData, ProfilePacket, TracePacket, TrackDescriptor, TrackEvent,
    SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE,
};

/// `trusted_packet_sequence_id` of every packet but the heap profile's:
/// one writer, one sequence (0 would mean "no sequence", on which a
/// reader refuses interned names).
pub const SEQUENCE_ID: u32 = 1;
/// The heap profile's dumps' sequence: a `ProfilePacket` interns its own
/// strings, frames and callstacks, numbered on a sequence of their own.
pub const HEAP_SEQUENCE_ID: u32 = 2;

/// The names of event arguments, interned with fixed iids on every packet
/// that clears the sequence's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Annotation {
    /// A span's argument.
    Arg = 1,
    /// An instant's payload.
    Payload = 2,
    /// A tick's number.
    Tick = 3,
    /// Whether a tick overran its budget.
    Overrun = 4,
    /// Frames lost.
    Frames = 5,
    /// Events lost.
    Events = 6,
    /// A task span's busy time, ns.
    Busy = 7,
    /// A task span's idle time, ns.
    Idle = 8,
    /// A task span's id.
    Task = 9,
    /// A log line's text.
    Message = 10,
    /// A log line's level.
    Level = 11,
    /// The bytes a span allocated itself.
    Allocated = 12,
}

const ARGS: [(Annotation, &str); 12] = [
    (Annotation::Arg, "arg"),
    (Annotation::Payload, "payload"),
    (Annotation::Tick, "tick"),
    (Annotation::Overrun, "overrun"),
    (Annotation::Frames, "frames"),
    (Annotation::Events, "events"),
    (Annotation::Busy, "busy_ns"),
    (Annotation::Idle, "idle_ns"),
    (Annotation::Task, "task"),
    (Annotation::Message, "message"),
    (Annotation::Level, "level"),
    (Annotation::Allocated, "allocated_bytes"),
];

/// What a track event is: kind, name and value.
pub(crate) enum Kind {
    /// Begins a slice.
    Begin,
    /// Ends the innermost open slice.
    End,
    /// A point in time.
    Instant,
    /// A counter's value.
    Counter(CounterValue),
}

/// Where the debug annotation names of fields' keys start: a key's name
/// id past it, clear of [`Annotation`]'s.
const FIELD_KEYS: u64 = 1 << 32;

/// A span's field, as an argument of its begin: its key (a name id, and
/// its text for the first use since the state was cleared) and value.
pub(crate) struct FieldArg<'a> {
    pub(crate) key: NameId,
    pub(crate) name: Cow<'a, str>,
    pub(crate) value: AnnotationValue,
}

/// The packet sequence, with its interning state.
pub(crate) struct Sequence {
    /// Event name iids interned since the state was last cleared.
    interned: HashSet<u64>,
    /// Fields' keys interned as annotation names since then.
    keys: HashSet<u64>,
    clear_next: bool,
    dropped_next: bool,
    first: bool,
    /// Reused for every event, so that writing one does not allocate.
    event: TrackEvent,
    pub(crate) packets: u64,
}

impl Sequence {
    pub(crate) fn new() -> Self {
        Sequence {
            interned: HashSet::default(),
            keys: HashSet::default(),
            clear_next: true,
            dropped_next: false,
            first: true,
            event: TrackEvent::default(),
            packets: 0,
        }
    }

    /// Whether event name `iid` is interned since the state was last
    /// cleared.
    pub(crate) fn is_interned(&self, iid: u64) -> bool {
        self.interned.contains(&iid)
    }

    /// The next packet starts the interned names afresh (a new Init: its
    /// ids may mean other names); names interned from now on go in it or
    /// later.
    pub(crate) fn clear(&mut self) {
        self.clear_next = true;
        self.interned.clear();
        self.keys.clear();
    }

    /// Data was lost: the next packet says so, and clears the state, as a
    /// reader drops interned names at a loss and keeps no packet that
    /// needs them until one clears it.
    pub(crate) fn lost(&mut self) {
        self.dropped_next = true;
        self.clear();
    }

    /// Writes a heap profile's dump, at `time`, on its own sequence.
    pub(crate) fn profile(&mut self, out: &mut Vec<u8>, time: u64, profile: ProfilePacket) {
        let packet = TracePacket {
            timestamp: Some(time),
            trusted_packet_sequence_id: Some(HEAP_SEQUENCE_ID),
            first_packet_on_sequence: (profile.index == Some(0)).then_some(true),
            data: Some(PacketData::ProfilePacket(profile)),
            ..TracePacket::default()
        };
        self.write(out, &packet);
    }

    /// Writes a track descriptor.
    pub(crate) fn descriptor(&mut self, out: &mut Vec<u8>, descriptor: TrackDescriptor) {
        let mut packet = self.packet(None, false);
        packet.data = Some(PacketData::TrackDescriptor(descriptor));
        self.write(out, &packet);
    }

    /// Writes a track event without a name (an end, a counter value) at
    /// `time` (ns) on `track`.
    pub(crate) fn event(&mut self, out: &mut Vec<u8>, time: u64, track: u64, kind: Kind) {
        let packet = self.packet(Some(time), true);
        self.write_event(out, packet, track, kind, None, &[], &[]);
    }

    /// Writes a track event named by `iid` at `time` (ns) on `track`, with
    /// `args`; `text` is asked for the first use of `iid` since the state
    /// was cleared, and interned in this packet.
    #[allow(clippy::too_many_arguments)] // an event's fields, named
    pub(crate) fn named<'t>(
        &mut self,
        out: &mut Vec<u8>,
        time: u64,
        track: u64,
        kind: Kind,
        iid: u64,
        text: impl FnOnce() -> Cow<'t, str>,
        args: &[(Annotation, AnnotationValue)],
    ) {
        self.named_with_fields(out, time, track, kind, iid, text, args, &[]);
    }

    /// [`Sequence::named`] with a span's `fields` as further arguments,
    /// their keys interned as annotation names at their first use.
    #[allow(clippy::too_many_arguments)] // an event's fields, named
    pub(crate) fn named_with_fields<'t>(
        &mut self,
        out: &mut Vec<u8>,
        time: u64,
        track: u64,
        kind: Kind,
        iid: u64,
        text: impl FnOnce() -> Cow<'t, str>,
        args: &[(Annotation, AnnotationValue)],
        fields: &[FieldArg<'_>],
    ) {
        let mut packet = self.packet(Some(time), true);
        if self.interned.insert(iid) {
            packet
                .interned_data
                .get_or_insert_with(InternedData::default)
                .event_names
                .push(EventName {
                    iid: Some(iid),
                    name: Some(text().into_owned()),
                });
        }
        for field in fields {
            let key = FIELD_KEYS + u64::from(field.key);
            if self.keys.insert(key) {
                packet
                    .interned_data
                    .get_or_insert_with(InternedData::default)
                    .debug_annotation_names
                    .push(DebugAnnotationName {
                        iid: Some(key),
                        name: Some(field.name.clone().into_owned()),
                    });
            }
        }
        self.write_event(out, packet, track, kind, Some(iid), args, fields);
    }

    #[allow(clippy::too_many_arguments)] // an event's fields, named
    fn write_event(
        &mut self,
        out: &mut Vec<u8>,
        mut packet: TracePacket,
        track: u64,
        kind: Kind,
        name_iid: Option<u64>,
        args: &[(Annotation, AnnotationValue)],
        fields: &[FieldArg<'_>],
    ) {
        let mut event = std::mem::take(&mut self.event);
        event.track_uuid = Some(track);
        event.name_iid = name_iid;
        let (kind, counter) = match kind {
            Kind::Begin => (EventType::SliceBegin, None),
            Kind::End => (EventType::SliceEnd, None),
            Kind::Instant => (EventType::Instant, None),
            Kind::Counter(value) => (EventType::Counter, Some(value)),
        };
        event.r#type = Some(kind as i32);
        event.counter_value = counter;
        event.debug_annotations.clear();
        event
            .debug_annotations
            .extend(args.iter().map(|(name, value)| DebugAnnotation {
                name_iid: Some(*name as u64),
                value: Some(value.clone()),
            }));
        event
            .debug_annotations
            .extend(fields.iter().map(|field| DebugAnnotation {
                name_iid: Some(FIELD_KEYS + u64::from(field.key)),
                value: Some(field.value.clone()),
            }));
        packet.data = Some(PacketData::TrackEvent(event));
        self.write(out, &packet);
        if let Some(PacketData::TrackEvent(event)) = packet.data {
            self.event = event;
        }
    }

    /// A packet with the sequence's id and flags; the first after a clear
    /// carries the argument names.
    fn packet(&mut self, time: Option<u64>, needs_state: bool) -> TracePacket {
        let mut packet = TracePacket {
            timestamp: time,
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            ..TracePacket::default()
        };
        let mut flags = if needs_state {
            SEQ_NEEDS_INCREMENTAL_STATE
        } else {
            0
        };
        if std::mem::take(&mut self.clear_next) {
            flags |= SEQ_INCREMENTAL_STATE_CLEARED;
            packet.interned_data = Some(InternedData {
                event_names: Vec::new(),
                debug_annotation_names: ARGS
                    .iter()
                    .map(|&(iid, name)| DebugAnnotationName {
                        iid: Some(iid as u64),
                        name: Some(name.into()),
                    })
                    .collect(),
            });
        }
        if std::mem::take(&mut self.first) {
            packet.first_packet_on_sequence = Some(true);
        }
        if std::mem::take(&mut self.dropped_next) {
            packet.previous_packet_dropped = Some(true);
        }
        packet.sequence_flags = (flags != 0).then_some(flags);
        packet
    }

    fn write(&mut self, out: &mut Vec<u8>, packet: &TracePacket) {
        encode_key(1, WireType::LengthDelimited, out);
        packet.encode_length_delimited(out).expect("a Vec grows");
        self.packets += 1;
    }
}
