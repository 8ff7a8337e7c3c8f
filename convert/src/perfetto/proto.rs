//! The part of Perfetto's trace format this crate writes, as prost
//! messages.
//!
//! Names, field numbers and types are those of Perfetto's
//! `protos/perfetto/trace/perfetto_trace.proto` (package
//! `perfetto.protos`); a message here leaves out the fields we never
//! write, which a decoder of the full schema reads as absent. The tests
//! decode our output with types generated from Perfetto's own files.

/// `Trace`: the file is one, its packets written one after another (field
/// 1, length-delimited), so that appending a packet keeps it valid.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    /// `packet = 1`.
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `TracePacket`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// `timestamp = 8`: nanoseconds on the trace's clock.
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// `trusted_packet_sequence_id = 10`: the writer's sequence, which
    /// interned data and the flags below are scoped to.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// `interned_data = 12`: names this and later packets refer to by iid.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// `sequence_flags = 13`: [`SEQ_INCREMENTAL_STATE_CLEARED`] and
    /// [`SEQ_NEEDS_INCREMENTAL_STATE`].
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// `previous_packet_dropped = 42`: data is missing before this packet.
    #[prost(bool, optional, tag = "42")]
    pub previous_packet_dropped: Option<bool>,
    /// `first_packet_on_sequence = 87`.
    #[prost(bool, optional, tag = "87")]
    pub first_packet_on_sequence: Option<bool>,
    /// The `data` oneof.
    #[prost(oneof = "PacketData", tags = "11, 37, 60")]
    pub data: Option<PacketData>,
}

/// `TracePacket.sequence_flags`: this packet starts the sequence's
/// incremental state (interned names) afresh.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `TracePacket.sequence_flags`: this packet refers to interned names.
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// `TracePacket`'s `data` oneof, the members we write.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum PacketData {
    /// `track_event = 11`.
    #[prost(message, tag = "11")]
    TrackEvent(TrackEvent),
    /// `track_descriptor = 60`.
    #[prost(message, tag = "60")]
    TrackDescriptor(TrackDescriptor),
    /// `profile_packet = 37`: a heap profile's dump.
    #[prost(message, tag = "37")]
    ProfilePacket(ProfilePacket),
}

/// `ProfilePacket`: a dump of a process's heap profile, its strings,
/// frames and callstacks interned in the packet (a heapprofd dump).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProfilePacket {
    /// `strings = 1`.
    #[prost(message, repeated, tag = "1")]
    pub strings: Vec<InternedString>,
    /// `frames = 2`.
    #[prost(message, repeated, tag = "2")]
    pub frames: Vec<ProfileFrame>,
    /// `callstacks = 3`.
    #[prost(message, repeated, tag = "3")]
    pub callstacks: Vec<Callstack>,
    /// `mappings = 4`.
    #[prost(message, repeated, tag = "4")]
    pub mappings: Vec<Mapping>,
    /// `process_dumps = 5`.
    #[prost(message, repeated, tag = "5")]
    pub process_dumps: Vec<ProcessHeapSamples>,
    /// `continued = 6`: more packets of this dump follow.
    #[prost(bool, optional, tag = "6")]
    pub continued: Option<bool>,
    /// `index = 7`: the packet's number on its sequence, from 0.
    #[prost(uint64, optional, tag = "7")]
    pub index: Option<u64>,
}

/// `InternedString`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    /// `iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `str = 2`.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}

/// `Frame` (profile_common.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProfileFrame {
    /// `iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `function_name_id = 2`: an [`InternedString`]'s iid.
    #[prost(uint64, optional, tag = "2")]
    pub function_name_id: Option<u64>,
    /// `mapping_id = 3`: a [`Mapping`]'s iid.
    #[prost(uint64, optional, tag = "3")]
    pub mapping_id: Option<u64>,
    /// `rel_pc = 4`.
    #[prost(uint64, optional, tag = "4")]
    pub rel_pc: Option<u64>,
}

/// `Callstack`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Callstack {
    /// `iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `frame_ids = 2`: the bottom (outermost) frame first.
    #[prost(uint64, repeated, packed = "false", tag = "2")]
    pub frame_ids: Vec<u64>,
}

/// `Mapping`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    /// `iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `path_string_ids = 7`: the path's parts, as [`InternedString`]s.
    #[prost(uint64, repeated, packed = "false", tag = "7")]
    pub path_string_ids: Vec<u64>,
}

/// `ProfilePacket.ProcessHeapSamples`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessHeapSamples {
    /// `pid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub pid: Option<u64>,
    /// `samples = 2`.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<HeapSample>,
    /// `timestamp = 9`.
    #[prost(uint64, optional, tag = "9")]
    pub timestamp: Option<u64>,
    /// `heap_name = 11`.
    #[prost(string, optional, tag = "11")]
    pub heap_name: Option<String>,
    /// `sampling_interval_bytes = 12`.
    #[prost(uint64, optional, tag = "12")]
    pub sampling_interval_bytes: Option<u64>,
}

/// `ProfilePacket.HeapSample`: a callstack's totals, cumulative.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HeapSample {
    /// `callstack_id = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub callstack_id: Option<u64>,
    /// `self_allocated = 2`.
    #[prost(uint64, optional, tag = "2")]
    pub self_allocated: Option<u64>,
    /// `self_freed = 3`.
    #[prost(uint64, optional, tag = "3")]
    pub self_freed: Option<u64>,
    /// `alloc_count = 5`.
    #[prost(uint64, optional, tag = "5")]
    pub alloc_count: Option<u64>,
    /// `free_count = 6`.
    #[prost(uint64, optional, tag = "6")]
    pub free_count: Option<u64>,
}

/// `TrackEvent`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    /// `debug_annotations = 4`.
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    /// `type = 9`.
    #[prost(enumeration = "EventType", optional, tag = "9")]
    pub r#type: Option<i32>,
    /// `name_iid = 10` (of the `name_field` oneof): an
    /// [`EventName`]'s iid.
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    /// `track_uuid = 11`.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// The `counter_value_field` oneof.
    #[prost(oneof = "CounterValue", tags = "30, 44")]
    pub counter_value: Option<CounterValue>,
}

/// `TrackEvent.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum EventType {
    /// `TYPE_UNSPECIFIED`.
    Unspecified = 0,
    /// `TYPE_SLICE_BEGIN`.
    SliceBegin = 1,
    /// `TYPE_SLICE_END`: ends the innermost open slice of the track.
    SliceEnd = 2,
    /// `TYPE_INSTANT`.
    Instant = 3,
    /// `TYPE_COUNTER`: a value on a counter track.
    Counter = 4,
}

/// `TrackEvent`'s `counter_value_field` oneof.
#[derive(Clone, Copy, PartialEq, prost::Oneof)]
pub enum CounterValue {
    /// `counter_value = 30`.
    #[prost(int64, tag = "30")]
    Int(i64),
    /// `double_counter_value = 44`.
    #[prost(double, tag = "44")]
    Double(f64),
}

/// `DebugAnnotation`: a named argument of an event.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    /// `name_iid = 1`: a [`DebugAnnotationName`]'s iid.
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    /// The `value` oneof, the members we write.
    #[prost(oneof = "AnnotationValue", tags = "2, 3, 4, 5, 6")]
    pub value: Option<AnnotationValue>,
}

/// `DebugAnnotation`'s `value` oneof, the members we write.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum AnnotationValue {
    /// `bool_value = 2`.
    #[prost(bool, tag = "2")]
    Bool(bool),
    /// `uint_value = 3`.
    #[prost(uint64, tag = "3")]
    Uint(u64),
    /// `int_value = 4`.
    #[prost(int64, tag = "4")]
    Int(i64),
    /// `double_value = 5`.
    #[prost(double, tag = "5")]
    Double(f64),
    /// `string_value = 6`.
    #[prost(string, tag = "6")]
    String(String),
}

/// `InternedData`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    /// `event_names = 2`.
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<EventName>,
    /// `debug_annotation_names = 3`.
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<DebugAnnotationName>,
}

/// `EventName`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EventName {
    /// `iid = 1`, never 0.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `name = 2`.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `DebugAnnotationName`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotationName {
    /// `iid = 1`, never 0.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `name = 2`.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `TrackDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    /// `uuid = 1`, unique in the trace.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// `name = 2` (of the `static_or_dynamic_name` oneof).
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// `process = 3`: a process track.
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    /// `thread = 4`: a thread track.
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    /// `parent_uuid = 5`: the track this one is nested under.
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// `counter = 8`: a counter track.
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `ProcessDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    /// `pid = 1`.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `process_name = 6`.
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// `ThreadDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    /// `pid = 1`.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `tid = 2`.
    #[prost(int32, optional, tag = "2")]
    pub tid: Option<i32>,
    /// `thread_name = 5`.
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `CounterDescriptor`: present (even empty) makes a track a counter
/// track.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct CounterDescriptor {}
