//! [`TraceWriter`]: typhon-live frames in, Perfetto packets out, frame by
//! frame, so that a recorder can append them to a file as they arrive.

use std::borrow::Cow;
use std::collections::hash_map::Entry;

use foldhash::HashMap;

use typhon_live_core::{
    DecodeError, Event, FieldValue, Frame, GaugeValue, LaneId, LaneInfo, Memory, NameId, SpanId,
    Switch, TaskId,
};
use typhon_live_reader::{
    CpuInterval, FieldOwners, Loss, Names, OffCpu, Reader, State, TextRecord, Tick, Update,
};

use super::heap::HeapDumps;
use super::nesting::{self, Edge, Held};
use super::proto::{
    AnnotationValue, CounterDescriptor, CounterValue, ProcessDescriptor, ThreadDescriptor,
    TrackDescriptor,
};
use super::sequence::{Annotation, FieldArg, Kind, Sequence};

/// Counter tracks per session; readings of further gauges are refused.
pub const MAX_COUNTERS: usize = 1024;
/// Lanes per session whose tracks the writer keeps, as the reader caps
/// its lane table; events of further lanes are refused.
pub const MAX_LANES: usize = typhon_live_reader::MAX_LANES;
/// Held spans whose room a lane keeps between its roots: a burst past it
/// gives its memory back.
const HELD_KEPT: usize = 256;
/// Spans held for nesting order, over all lanes; past it a lane's held
/// spans are written at once (see [`WriterStats::early_writes`]).
pub const MAX_HELD: usize = 1 << 18;
/// Fields held with their spans, over all lanes; past it a field is
/// left out (see [`WriterStats::fields_refused`]).
pub const MAX_HELD_FIELDS: usize = 1 << 18;

/// The pid written for a process that has none (a device: process id 0)
/// or one Perfetto's `int32` cannot hold: this plus the session's number,
/// so that two such sessions stay two processes.
pub const SUBSTITUTE_PID: i32 = 0x4000_0000;

/// Iids of the writer's own event names, above every `NameId + 1`.
const OWN_NAMES: u64 = 1 << 40;
const DATA_LOST: (u64, &str) = (OWN_NAMES, "data lost");
const TICK: (u64, &str) = (OWN_NAMES + 1, "tick");
const OVERRUN_TICK: (u64, &str) = (OWN_NAMES + 2, "overrun tick");
const TICK_END_LOST: (u64, &str) = (OWN_NAMES + 3, "tick (its end was lost)");
const TICK_START_LOST: (u64, &str) = (OWN_NAMES + 4, "tick (its start was lost)");
const OFF_CPU: (u64, &str) = (OWN_NAMES + 5, Switch::OutWaiting.label());
const PREEMPTED: (u64, &str) = (OWN_NAMES + 6, Switch::OutPreempted.label());

/// Task tracks of a process at most: task spans that overlap more than
/// this many at once are left out, and counted.
pub const MAX_TASK_TRACKS: usize = 64;

/// What a [`TraceWriter`] took in and wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriterStats {
    /// Frames taken in.
    pub frames: u64,
    /// Packets written.
    pub packets: u64,
    /// Spans written as slices.
    pub spans: u64,
    /// Instants written.
    pub instants: u64,
    /// Gauge readings written as counter values.
    pub counter_values: u64,
    /// Ticks written (slices on a Ticks track, or instants for a tick
    /// whose start or end was lost).
    pub ticks: u64,
    /// Sessions: Inits with a session id other than the last one's, and
    /// restarts.
    pub sessions: u64,
    /// Sessions that started over under the same id (the clock went back
    /// after an Init).
    pub restarts: u64,
    /// Frames missing from the sequence numbers, and frames whose payload
    /// did not decode (see `damaged_frames`).
    pub frames_lost: u64,
    /// Events the process dropped (its Blocks' drop counts).
    pub events_lost: u64,
    /// Frames whose payload did not decode, whole or in part (counted in
    /// `frames_lost` too).
    pub damaged_frames: u64,
    /// Frames of a kind a newer writer added, skipped.
    pub unknown_frames: u64,
    /// Names the reader refused by its caps (written as `#id`).
    pub names_refused: u64,
    /// Gauge readings refused by [`MAX_COUNTERS`].
    pub gauge_values_refused: u64,
    /// Events and lane definitions refused by [`MAX_LANES`].
    pub lane_events_refused: u64,
    /// Float gauge readings that were not finite, left out.
    pub values_not_finite: u64,
    /// Times a lane's held spans were written before their root ended,
    /// because [`MAX_HELD`] was reached.
    pub early_writes: u64,
    /// Task spans written as slices on the process's task tracks.
    pub tasks: u64,
    /// Task spans left out: more overlapped than [`MAX_TASK_TRACKS`].
    pub tasks_refused: u64,
    /// Log lines written as instants with their text.
    pub texts: u64,
    /// Fields written as their spans' arguments.
    pub fields: u64,
    /// Fields (and allocated bytes) left out: their span was written before they came (they
    /// came in a later frame), or [`MAX_HELD_FIELDS`] were held.
    pub fields_refused: u64,
    /// Log lines the stream said were lost.
    pub texts_lost: u64,
    /// Heap profile dumps written (allocation sites).
    pub heap_dumps: u64,
    /// Allocation sites left out, past the heap dumps' cap.
    pub sites_refused: u64,
}

impl WriterStats {
    /// One line saying what a Perfetto trace got and what was lost.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "{} packets, {} spans, {} task spans, {} instants, {} counter values, {} ticks, {} log lines",
            self.packets, self.spans, self.tasks, self.instants, self.counter_values, self.ticks, self.texts
        );
        if self.texts_lost > 0 {
            line += &format!("; {} log lines lost", self.texts_lost);
        }
        if self.fields_refused > 0 {
            line += &format!(
                "; {} fields left out (their span went out before them)",
                self.fields_refused
            );
        }
        if self.frames_lost + self.events_lost > 0 {
            line += &format!(
                "; lost {} frames ({} of them damaged) and {} events (marked in the trace)",
                self.frames_lost, self.damaged_frames, self.events_lost
            );
        }
        let refused = self.names_refused
            + self.gauge_values_refused
            + self.lane_events_refused
            + self.tasks_refused
            + self.values_not_finite;
        if refused > 0 {
            line += &format!(
                "; left out {} names, {} gauge readings, {} lane events and {} task spans over the caps, {} non-finite readings",
                self.names_refused,
                self.gauge_values_refused,
                self.lane_events_refused,
                self.tasks_refused,
                self.values_not_finite
            );
        }
        line
    }
}

/// One process track and what hangs under it.
struct Session {
    /// `None` for data before any Init.
    id: Option<u64>,
    /// As the Init gave it (`pid` may be a substitute).
    process_id: u32,
    name: String,
    pid: i32,
    uuid: u64,
    described: bool,
    counters: HashMap<NameId, u64>,
    /// Counter tracks of the frames and events lost.
    loss_tracks: Option<(u64, u64)>,
    frames_lost: u64,
    events_lost: u64,
    ticks_tracks: u32,
    /// The counter track of the process's live bytes.
    memory_track: Option<u64>,
    /// Task tracks: each track's uuid and the end of its last task span.
    /// A task span goes on the first whose last one ended by its start,
    /// so that slices on one track never overlap.
    task_tracks: Vec<(u64, u64)>,
}

/// A lane of the current session.
#[derive(Default)]
struct LaneState {
    name: Option<NameId>,
    track: Option<u64>,
    ticks_track: Option<u64>,
    held: Vec<Held>,
    /// Fields of held spans, by the span's arrival order.
    fields: Vec<(u64, NameId, FieldValue)>,
    /// A root span ended: its tree goes out before the lane's next record
    /// that is not one of its fields, or at the frame's end.
    root_ended: bool,
    /// A task span that ended here, waiting for its fields likewise.
    task: Option<EndedTask>,
    /// Its thread's CPU: the counter tracks of its share on a CPU and
    /// waiting for one, and the track of its switches' slices.
    cpu_tracks: Option<(u64, u64)>,
    switch_track: Option<u64>,
}

/// A task span's end, held while its fields arrive.
struct EndedTask {
    start: u64,
    end: u64,
    name: NameId,
    task: TaskId,
    busy: u64,
    fields: Vec<(NameId, FieldValue)>,
}

/// What a field read on a lane belongs to.
#[derive(Clone, Copy)]
enum Owner {
    /// The held span of this arrival order.
    Span(u64),
    /// The lane's ended task.
    Task,
}

/// Converts a typhon-live stream into Perfetto `TracePacket`s.
///
/// Feed it every frame in order with [`TraceWriter::frame`]; each call
/// appends whole packets (each a `Trace.packet` field) to `out`, so the
/// bytes written so far are always a valid trace. [`TraceWriter::finish`]
/// writes what it still holds: spans whose root span has not ended, and
/// a tick that started and did not end.
pub struct TraceWriter {
    /// The stream as every consumer reads it: names, sessions, restarts,
    /// losses, times in ns.
    reader: Reader,
    seq: Sequence,
    session: Session,
    lanes: HashMap<LaneId, LaneState>,
    held_total: usize,
    next_uuid: u64,
    next_tid: i32,
    order: u64,
    /// The latest time seen, ns: where a loss is marked.
    last_time: u64,
    /// Events the Block being read reports dropped, marked as lost before
    /// its first event (or at its end).
    dropped: u64,
    /// Records of the frame being read that could not be read: events
    /// lost with its damage.
    unread: u32,
    nesting: nesting::Scratch,
    /// The process's allocation sites, dumped as a heap profile.
    heap: HeapDumps,
    /// The time of the Samples frame being read.
    samples_time: u64,
    /// What the next field on each lane belongs to.
    owners: FieldOwners<Owner>,
    /// Fields held over all lanes.
    held_fields: usize,
    stats: WriterStats,
}

impl Default for TraceWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceWriter {
    /// A writer at the start of a trace.
    pub fn new() -> Self {
        TraceWriter {
            reader: Reader::new(),
            seq: Sequence::new(),
            // Data before any Init: times taken as ns, names as ids.
            session: Session::new(None, SUBSTITUTE_PID, "unknown process (no Init read)", 1),
            lanes: HashMap::default(),
            held_total: 0,
            next_uuid: 2,
            next_tid: 1,
            order: 0,
            last_time: 0,
            dropped: 0,
            unread: 0,
            nesting: nesting::Scratch::default(),
            heap: HeapDumps::default(),
            samples_time: 0,
            owners: FieldOwners::default(),
            held_fields: 0,
            stats: WriterStats::default(),
        }
    }

    /// What was taken in and written so far.
    pub fn stats(&self) -> WriterStats {
        let state = self.reader.state();
        WriterStats {
            packets: self.seq.packets,
            names_refused: state.tally().refused.names,
            ..self.stats.clone()
        }
    }

    /// Takes in one frame, appending its packets to `out`. An error names
    /// a payload that did not decode: what it held is lost, which the
    /// next packet says, and the writer goes on with the next frame.
    pub fn frame(&mut self, frame: &Frame<'_>, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        self.stats.frames += 1;
        // Taken out while its updates are written.
        let mut reader = std::mem::take(&mut self.reader);
        let result = reader.read(frame, |state, update| self.update(state, update, out));
        // Fields come right after their span, in the same frame: what
        // waited for them goes out now.
        self.write_ended(reader.state().names(), out);
        self.reader = reader;
        let dropped = std::mem::take(&mut self.dropped);
        if dropped > 0 {
            self.lost(0, dropped, out);
        }
        if result.is_err() {
            // What it held (all of it, or a Block's events from the bad
            // one on) is lost.
            self.stats.damaged_frames += 1;
            let unread = std::mem::take(&mut self.unread);
            self.lost(1, u64::from(unread), out);
        }
        result
    }

    /// Writes what is still held: each lane's spans whose root has not
    /// ended (in nesting order) and each tick without its end (as an
    /// instant).
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let mut reader = std::mem::take(&mut self.reader);
        reader.ended(|state, update| self.update(state, update, out));
        self.finish_with(reader.state().names(), out);
        self.reader = reader;
    }

    fn finish_with(&mut self, names: &Names, out: &mut Vec<u8>) {
        let mut lanes: Vec<LaneId> = self.lanes.keys().copied().collect();
        lanes.sort_unstable();
        for lane in lanes {
            self.write_lane(names, lane, out);
        }
        self.owners.clear();
        self.heap_dump(names, self.samples_time, true, out);
    }

    /// The allocation sites' dump at `time`, when due (or `at_end`).
    fn heap_dump(&mut self, names: &Names, time: u64, at_end: bool, out: &mut Vec<u8>) {
        let pid = u32::try_from(self.session.pid).unwrap_or(0);
        if let Some(dump) = self.heap.dump(time, pid, names, at_end) {
            self.seq.profile(out, time, dump);
            self.stats.heap_dumps += 1;
        }
        self.stats.sites_refused = self.heap.refused;
    }

    /// The process's live bytes, on its "memory live" counter track.
    fn memory(&mut self, memory: Memory, out: &mut Vec<u8>) {
        self.heap.memory(memory);
        let process = self.process_track(out);
        let track = match self.session.memory_track {
            Some(track) => track,
            None => {
                let track = self.uuid();
                self.session.memory_track = Some(track);
                let name = "memory live".to_owned();
                self.seq
                    .descriptor(out, child_track(track, process, name, true));
                track
            }
        };
        let live = i64::try_from(memory.live()).unwrap_or(i64::MAX);
        let value = Kind::Counter(CounterValue::Int(live));
        self.seq.event(out, self.samples_time, track, value);
        self.stats.counter_values += 1;
    }

    /// Writes what waited for its fields on every lane.
    fn write_ended(&mut self, names: &Names, out: &mut Vec<u8>) {
        let mut waiting: Vec<LaneId> = (self.lanes.iter())
            .filter(|(_, s)| s.root_ended || s.task.is_some())
            .map(|(&lane, _)| lane)
            .collect();
        waiting.sort_unstable();
        for lane in waiting {
            self.write_ended_on(names, lane, out);
        }
        self.owners.clear();
    }

    /// Writes what waited for its fields on `lane`: a root's tree, a task
    /// span.
    fn write_ended_on(&mut self, names: &Names, lane: LaneId, out: &mut Vec<u8>) {
        let Some(state) = self.lanes.get_mut(&lane) else {
            return;
        };
        let task = state.task.take();
        if std::mem::take(&mut state.root_ended) {
            self.write_spans(names, lane, out);
        }
        if let Some(task) = task {
            self.held_fields -= task.fields.len();
            self.task(names, task, out);
        }
    }

    /// A field of the record before it on `lane`, kept with it; left out
    /// when that record went out already, or too many are held.
    fn field(&mut self, lane: LaneId, event: Event) {
        let Event::Field {
            key, value, owner, ..
        } = event
        else {
            return;
        };
        let (Some(owner), Some(state)) =
            (self.owners.field(lane, owner), self.lanes.get_mut(&lane))
        else {
            self.stats.fields_refused += 1;
            return;
        };
        if self.held_fields >= MAX_HELD_FIELDS {
            self.stats.fields_refused += 1;
            return;
        }
        match owner {
            Owner::Span(order) => state.fields.push((order, key, value)),
            Owner::Task => match &mut state.task {
                Some(task) => task.fields.push((key, value)),
                None => {
                    self.stats.fields_refused += 1;
                    return;
                }
            },
        }
        self.held_fields += 1;
    }

    /// The bytes span `span` on `lane` allocated itself: an argument of
    /// its slice, if it is the lane's last span and still held.
    fn allocated(&mut self, lane: LaneId, span: SpanId, bytes: u64) {
        let held = match (self.owners.allocated(lane, span), self.lanes.get_mut(&lane)) {
            (Some(Owner::Span(order)), Some(state)) => {
                state.held.iter_mut().rev().find(|h| h.order == order)
            }
            _ => None,
        };
        match held {
            Some(held) => held.allocated = bytes,
            None => self.stats.fields_refused += 1,
        }
    }

    fn update(&mut self, state: &State, update: Update<'_>, out: &mut Vec<u8>) {
        let names = state.names();
        match update {
            Update::NewSession { .. } => {
                // A new process (or the first Init): what the last one
                // held is written under it, then its ids mean nothing any
                // more. (The reader has already dropped the old names:
                // what is held is written with ids.)
                self.finish_with(names, out);
                self.heap.clear();
                self.lanes.clear();
                self.held_total = 0;
                self.held_fields = 0;
                self.seq.clear();
                if let Some(session) = state.session() {
                    self.new_session(session.id, session.process_id, &session.process_name);
                }
            }
            Update::SessionRepeated => self.seq.clear(),
            // An iid already written means the old text.
            Update::Name { id, .. } if self.seq.is_interned(iid(id)) => self.seq.clear(),
            Update::Lanes => {
                let lanes: Vec<LaneInfo> = state.lanes().values().map(|l| l.info).collect();
                self.set_lanes(names, lanes, out);
            }
            Update::Restarted { .. } => self.restart(names, out),
            Update::Lost(Loss::Gap { frames }) => self.lost(frames, 0, out),
            Update::Lost(Loss::Dropped { events, .. }) => {
                self.dropped = self.dropped.saturating_add(u64::from(events));
            }
            Update::Lost(Loss::AtShutdown { events }) => self.lost(0, events, out),
            Update::Lost(Loss::Damaged { events }) => self.unread = events,
            Update::Event { lane, event } => {
                let dropped = std::mem::take(&mut self.dropped);
                if dropped > 0 {
                    if self.last_time == 0 {
                        self.last_time = event.time();
                    }
                    self.lost(0, dropped, out);
                }
                self.event(names, lane, event, out);
            }
            Update::Samples { time } => {
                // Before this frame's sites: the dump holds those before.
                self.heap_dump(names, self.samples_time, false, out);
                self.samples_time = time;
                self.last_time = self.last_time.max(time);
            }
            Update::Memory(memory) => self.memory(memory, out),
            Update::Site(site) => self.heap.site(&site),
            Update::Cpu(interval) => self.cpu(names, &interval, out),
            Update::OffCpu(slice) => self.off_cpu(names, slice, out),
            Update::Text(text) => self.text(names, &text, out),
            Update::Tick(tick) => self.tick(names, tick, out),
            Update::Lost(Loss::Texts { texts }) => {
                self.stats.texts_lost = self.stats.texts_lost.saturating_add(u64::from(texts));
            }
            Update::Unknown { .. } => self.stats.unknown_frames += 1,
            // Spans open when a viewer joined arrive whole when they end.
            Update::Shutdown { .. } => self.finish_with(names, out),
            _ => {}
        }
    }

    /// Starts a process track for a session.
    fn new_session(&mut self, id: u64, process_id: u32, name: &str) {
        self.stats.sessions += 1;
        let pid = i32::try_from(process_id)
            .ok()
            .filter(|&pid| pid != 0)
            .unwrap_or(SUBSTITUTE_PID.saturating_add(self.stats.sessions as i32));
        let uuid = self.uuid();
        self.session = Session::new(Some(id), pid, name, uuid);
        self.session.process_id = process_id;
        self.last_time = 0;
    }

    /// The same session id with its clock gone back (a restart, as the
    /// reader tells): the process started over, so it gets a process
    /// track (and its lanes thread tracks) of its own, keeping the names
    /// and lanes its Init just gave.
    fn restart(&mut self, names: &Names, out: &mut Vec<u8>) {
        self.finish_with(names, out);
        self.heap.clear();
        for lane in self.lanes.values_mut() {
            lane.track = None;
            lane.ticks_track = None;
        }
        let session = &self.session;
        let (id, process_id, name) = (
            session.id.unwrap_or(0),
            session.process_id,
            session.name.clone(),
        );
        self.new_session(id, process_id, &name);
        self.stats.restarts += 1;
    }

    fn uuid(&mut self) -> u64 {
        self.next_uuid += 1;
        self.next_uuid - 1
    }

    /// A lane under a new name gets a new track; its past stays on the
    /// old one.
    fn set_lanes(&mut self, names: &Names, lanes: Vec<LaneInfo>, out: &mut Vec<u8>) {
        for lane in lanes {
            let Some(state) = self.lane(lane.id) else {
                self.stats.lane_events_refused += 1;
                continue;
            };
            if state.name == Some(lane.name) {
                continue;
            }
            if state.name.is_some() || state.track.is_some() {
                self.write_lane(names, lane.id, out);
            }
            let state = self.lanes.entry(lane.id).or_default();
            *state = LaneState {
                name: Some(lane.name),
                held: std::mem::take(&mut state.held),
                ..LaneState::default()
            };
        }
    }

    /// A log line: an instant named after its call site on its lane's
    /// track (the process's when it has none), its text and level as
    /// arguments.
    fn text(&mut self, names: &Names, text: &TextRecord<'_>, out: &mut Vec<u8>) {
        let track = match text.lane {
            Some(lane) if self.lane(lane).is_none() => {
                self.stats.lane_events_refused += 1;
                return;
            }
            Some(lane) => self.lane_track(names, lane, out),
            None => self.process_track(out),
        };
        self.stats.texts += 1;
        self.last_time = self.last_time.max(text.time);
        let mut message = text.text.to_owned();
        if text.cut {
            message.push('…');
        }
        self.seq.named(
            out,
            text.time,
            track,
            Kind::Instant,
            iid(text.site),
            || names.show(text.site),
            &[
                (Annotation::Message, AnnotationValue::String(message)),
                (
                    Annotation::Level,
                    AnnotationValue::String(text.level.as_str().into()),
                ),
            ],
        );
    }

    /// A lane's state, unless [`MAX_LANES`] is reached.
    fn lane(&mut self, lane: LaneId) -> Option<&mut LaneState> {
        let full = self.lanes.len() >= MAX_LANES;
        match self.lanes.entry(lane) {
            Entry::Occupied(state) => Some(state.into_mut()),
            Entry::Vacant(_) if full => None,
            Entry::Vacant(state) => Some(state.insert(LaneState::default())),
        }
    }

    fn event(&mut self, names: &Names, lane: LaneId, event: Event, out: &mut Vec<u8>) {
        if self.lane(lane).is_none() {
            self.stats.lane_events_refused += 1;
            return;
        }
        match event {
            Event::Field { .. } => return self.field(lane, event),
            Event::Allocated { span, bytes, .. } => return self.allocated(lane, span, bytes),
            _ => {}
        }
        // What waited for its fields has them all.
        self.write_ended_on(names, lane, out);
        let order = self.order + 1;
        self.owners.read(lane, &event, || match event {
            Event::TaskEnd { .. } => Owner::Task,
            _ => Owner::Span(order),
        });
        // Times are in ns: the reader converted them.
        self.last_time = self.last_time.max(event.time());
        if let Event::TaskEnd {
            time,
            name,
            task,
            wall,
            busy,
        } = event
        {
            if let Some(state) = self.lanes.get_mut(&lane) {
                state.task = Some(EndedTask {
                    start: time.saturating_sub(wall),
                    end: time,
                    name,
                    task,
                    busy,
                    fields: Vec::new(),
                });
            }
            return;
        }
        // A poll is what its lane ran: a slice of the lane's track.
        let event = event.lane_span();
        match event {
            Event::Poll { .. }
            | Event::TaskBegin { .. }
            | Event::TaskEnd { .. }
            | Event::Field { .. }
            | Event::Allocated { .. }
            | Event::Unknown { .. } => {}
            Event::Span {
                start,
                duration,
                name,
                id,
                parent,
                arg,
            } => {
                self.stats.spans += 1;
                let end = start.saturating_add(duration);
                self.last_time = self.last_time.max(end);
                self.order += 1;
                self.lanes.entry(lane).or_default().held.push(Held {
                    start,
                    end,
                    name,
                    id,
                    parent,
                    arg,
                    allocated: 0,
                    order: self.order,
                });
                self.held_total += 1;
                if parent == 0 {
                    // Its tree goes out once its fields are read.
                    self.lanes.entry(lane).or_default().root_ended = true;
                } else if self.held_total > MAX_HELD {
                    self.stats.early_writes += 1;
                    self.write_spans(names, lane, out);
                }
            }
            // A flight recorder's trigger: an instant on its lane, named
            // as the trigger was written.
            Event::Mark { time, label, .. } => {
                self.stats.instants += 1;
                let track = self.lane_track(names, lane, out);
                self.seq.named(
                    out,
                    time,
                    track,
                    Kind::Instant,
                    iid(label),
                    || names.show(label),
                    &[],
                );
            }
            Event::Instant {
                time,
                name,
                payload,
            } => {
                self.stats.instants += 1;
                let track = self.lane_track(names, lane, out);
                self.seq.named(
                    out,
                    time,
                    track,
                    Kind::Instant,
                    iid(name),
                    || names.show(name),
                    &[(Annotation::Payload, AnnotationValue::Uint(payload))],
                );
            }
            Event::Gauge { time, gauge, value } => {
                let value = match value {
                    GaugeValue::Int(v) => CounterValue::Int(v),
                    GaugeValue::Float(v) if v.is_finite() => CounterValue::Double(v),
                    GaugeValue::Float(_) => {
                        self.stats.values_not_finite += 1;
                        return;
                    }
                };
                let Some(track) = self.counter_track(names, gauge, out) else {
                    self.stats.gauge_values_refused += 1;
                    return;
                };
                self.stats.counter_values += 1;
                self.seq.event(out, time, track, Kind::Counter(value));
            }
            // Paired by the reader: `tick`.
            Event::TickStart { .. } | Event::TickEnd { .. } => {}
        }
    }

    /// A tick the reader paired: a whole one as a slice on its lane's
    /// Ticks track, one with a half lost as an instant there.
    fn tick(&mut self, names: &Names, tick: Tick, out: &mut Vec<u8>) {
        let (lane, number, overrun) = (tick.lane, tick.tick, tick.overrun);
        match (tick.start, tick.end) {
            (Some(start), Some(end)) => {
                self.stats.ticks += 1;
                // A peer's clock that went back within the tick would put
                // its end before its begin.
                let end = end.max(start);
                let track = self.ticks_track(names, lane, out);
                let (iid, text) = if overrun { OVERRUN_TICK } else { TICK };
                self.seq.named(
                    out,
                    start,
                    track,
                    Kind::Begin,
                    iid,
                    || text.into(),
                    &[
                        (Annotation::Tick, AnnotationValue::Uint(number)),
                        (Annotation::Overrun, AnnotationValue::Bool(overrun)),
                    ],
                );
                self.seq.event(out, end, track, Kind::End);
            }
            (Some(start), None) => self.lone_tick(names, lane, start, number, None, out),
            (None, Some(end)) => self.lone_tick(names, lane, end, number, Some(overrun), out),
            (None, None) => {}
        }
    }

    /// A tick of which only the start (`overrun` is `None`) or the end
    /// arrived, as an instant on the Ticks track.
    fn lone_tick(
        &mut self,
        names: &Names,
        lane: LaneId,
        time: u64,
        tick: u64,
        overrun: Option<bool>,
        out: &mut Vec<u8>,
    ) {
        self.stats.ticks += 1;
        let track = self.ticks_track(names, lane, out);
        let (iid, text) = if overrun.is_some() {
            TICK_START_LOST
        } else {
            TICK_END_LOST
        };
        let args = [
            (Annotation::Tick, AnnotationValue::Uint(tick)),
            (
                Annotation::Overrun,
                AnnotationValue::Bool(overrun == Some(true)),
            ),
        ];
        let args = if overrun.is_some() {
            &args[..]
        } else {
            &args[..1]
        };
        self.seq
            .named(out, time, track, Kind::Instant, iid, || text.into(), args);
    }

    /// A task span from `start` to `end` on the first of the process's task
    /// tracks free by its start (all named "tasks", which Perfetto shows as
    /// one group), with its id, busy and idle times as arguments.
    fn task(&mut self, names: &Names, ended: EndedTask, out: &mut Vec<u8>) {
        let EndedTask {
            start,
            end,
            name,
            task,
            busy,
            fields,
        } = ended;
        let free = (self.session.task_tracks.iter()).position(|&(_, last)| last <= start);
        let at = match free {
            Some(at) => at,
            None if self.session.task_tracks.len() < MAX_TASK_TRACKS => {
                let parent = self.process_track(out);
                let uuid = self.uuid();
                self.seq
                    .descriptor(out, child_track(uuid, parent, "tasks".into(), false));
                self.session.task_tracks.push((uuid, 0));
                self.session.task_tracks.len() - 1
            }
            None => {
                self.stats.tasks_refused += 1;
                return;
            }
        };
        let track = &mut self.session.task_tracks[at];
        track.1 = end;
        let track = track.0;
        self.stats.tasks += 1;
        let args = [
            (Annotation::Task, AnnotationValue::Uint(task)),
            (Annotation::Busy, AnnotationValue::Uint(busy)),
            (
                Annotation::Idle,
                AnnotationValue::Uint(end.saturating_sub(start).saturating_sub(busy)),
            ),
        ];
        let fields = field_args(names, &fields);
        self.stats.fields += fields.len() as u64;
        self.seq.named_with_fields(
            out,
            start,
            track,
            Kind::Begin,
            iid(name),
            || names.show(name),
            &args,
            &fields,
        );
        self.seq.event(out, end, track, Kind::End);
    }

    /// Writes a lane's held spans.
    fn write_lane(&mut self, names: &Names, lane: LaneId, out: &mut Vec<u8>) {
        self.write_ended_on(names, lane, out);
        self.write_spans(names, lane, out);
    }

    /// Writes a lane's held spans, in nesting order.
    fn write_spans(&mut self, names: &Names, lane: LaneId, out: &mut Vec<u8>) {
        let Some(state) = self.lanes.get_mut(&lane) else {
            return;
        };
        if state.held.is_empty() {
            return;
        }
        let mut held = std::mem::take(&mut state.held);
        let mut fields = std::mem::take(&mut state.fields);
        state.root_ended = false;
        self.held_total -= held.len();
        self.held_fields -= fields.len();
        self.stats.fields += fields.len() as u64;
        // By span: each span's fields found by its arrival order.
        fields.sort_by_key(|&(order, ..)| order);
        let track = self.lane_track(names, lane, out);
        let seq = &mut self.seq;
        nesting::order(&mut held, &mut self.nesting, |edge| match edge {
            Edge::Begin(span) => {
                let arg = span
                    .arg
                    .map(|a| (Annotation::Arg, AnnotationValue::Uint(a)));
                let allocated = (span.allocated > 0)
                    .then_some((Annotation::Allocated, AnnotationValue::Uint(span.allocated)));
                let args: Vec<_> = arg.into_iter().chain(allocated).collect();
                let from = fields.partition_point(|&(order, ..)| order < span.order);
                let to = fields.partition_point(|&(order, ..)| order <= span.order);
                let its: Vec<(NameId, FieldValue)> =
                    fields[from..to].iter().map(|&(_, k, v)| (k, v)).collect();
                seq.named_with_fields(
                    out,
                    span.start,
                    track,
                    Kind::Begin,
                    iid(span.name),
                    || names.show(span.name),
                    &args,
                    &field_args(names, &its),
                );
            }
            Edge::End(time) => seq.event(out, time, track, Kind::End),
        });
        held.clear();
        held.shrink_to(HELD_KEPT);
        if let Some(state) = self.lanes.get_mut(&lane) {
            // Its room kept for the next root's spans.
            state.held = held;
        }
    }

    /// The process track, described before its first use.
    fn process_track(&mut self, out: &mut Vec<u8>) -> u64 {
        let session = &mut self.session;
        if !session.described {
            session.described = true;
            self.seq.descriptor(
                out,
                TrackDescriptor {
                    uuid: Some(session.uuid),
                    process: Some(ProcessDescriptor {
                        pid: Some(session.pid),
                        process_name: Some(session.name.clone()),
                    }),
                    ..TrackDescriptor::default()
                },
            );
        }
        session.uuid
    }

    /// A lane's thread track, described before its first use.
    fn lane_track(&mut self, names: &Names, lane: LaneId, out: &mut Vec<u8>) -> u64 {
        if let Some(track) = self.lanes.get(&lane).and_then(|s| s.track) {
            return track;
        }
        self.process_track(out);
        let uuid = self.uuid();
        self.lanes.entry(lane).or_default().track = Some(uuid);
        let name = self.lane_name(names, lane);
        // Unique in the trace, so that a restarted process with the same
        // pid gets threads of its own.
        let tid = self.next_tid;
        self.next_tid = tid.saturating_add(1);
        self.seq.descriptor(
            out,
            TrackDescriptor {
                uuid: Some(uuid),
                thread: Some(ThreadDescriptor {
                    pid: Some(self.session.pid),
                    tid: Some(tid),
                    thread_name: Some(name),
                }),
                ..TrackDescriptor::default()
            },
        );
        uuid
    }

    /// A lane's Ticks track: "Ticks" for the first lane that ticks,
    /// "Ticks: LANE" for others.
    fn ticks_track(&mut self, names: &Names, lane: LaneId, out: &mut Vec<u8>) -> u64 {
        if let Some(track) = self.lanes.get(&lane).and_then(|s| s.ticks_track) {
            return track;
        }
        let parent = self.process_track(out);
        let uuid = self.uuid();
        self.lanes.entry(lane).or_default().ticks_track = Some(uuid);
        let name = if self.session.ticks_tracks == 0 {
            "Ticks".to_owned()
        } else {
            format!("Ticks: {}", self.lane_name(names, lane))
        };
        self.session.ticks_tracks += 1;
        self.seq
            .descriptor(out, child_track(uuid, parent, name, false));
        uuid
    }

    /// A lane's interval between two CPU samples: from its start, the
    /// share of it its thread spent on a CPU, and waiting for one, on two
    /// counter tracks under the lane's thread.
    fn cpu(&mut self, names: &Names, interval: &CpuInterval, out: &mut Vec<u8>) {
        let Some(on_cpu) = interval.spent.on_cpu_ns else {
            return;
        };
        if self.lane(interval.lane).is_none() {
            self.stats.lane_events_refused += 1;
            return;
        }
        let (on_track, waiting_track) = match self.lanes[&interval.lane].cpu_tracks {
            Some(tracks) => tracks,
            None => {
                let thread = self.lane_track(names, interval.lane, out);
                let tracks = (self.uuid(), self.uuid());
                let lane = self.lane_name(names, interval.lane);
                for (uuid, what) in [(tracks.0, "on CPU"), (tracks.1, "waiting for a CPU")] {
                    let name = format!("{lane}: {what}");
                    self.seq
                        .descriptor(out, child_track(uuid, thread, name, true));
                }
                self.lanes.entry(interval.lane).or_default().cpu_tracks = Some(tracks);
                tracks
            }
        };
        // The reader gives only intervals that move on.
        let length = interval.to.saturating_sub(interval.from).max(1) as f64;
        let share = |ns: u64| Kind::Counter(CounterValue::Double((ns as f64 / length).min(1.0)));
        self.seq.event(out, interval.from, on_track, share(on_cpu));
        if let Some(waiting) = interval.spent.waiting_ns {
            self.seq
                .event(out, interval.from, waiting_track, share(waiting));
        }
        self.last_time = self.last_time.max(interval.to);
    }

    /// A switch of a lane's thread: a switch in after one out is a slice
    /// "off-CPU (waiting)" or "preempted" on the lane's switches track.
    fn off_cpu(&mut self, names: &Names, slice: OffCpu, out: &mut Vec<u8>) {
        let lane = slice.lane;
        let Some(state) = self.lane(lane) else {
            self.stats.lane_events_refused += 1;
            return;
        };
        let track = match state.switch_track {
            Some(track) => track,
            None => {
                let thread = self.lane_track(names, lane, out);
                let uuid = self.uuid();
                let name = format!("{}: switches", self.lane_name(names, lane));
                self.seq
                    .descriptor(out, child_track(uuid, thread, name, false));
                self.lanes.entry(lane).or_default().switch_track = Some(uuid);
                uuid
            }
        };
        let (iid, text) = if slice.preempted { PREEMPTED } else { OFF_CPU };
        let name = || Cow::Borrowed(text);
        self.seq
            .named(out, slice.from, track, Kind::Begin, iid, name, &[]);
        (self.seq).named(out, slice.to, track, Kind::End, iid, name, &[]);
        self.last_time = self.last_time.max(slice.to);
    }

    /// A lane's name as its tracks show it.
    fn lane_name(&self, names: &Names, lane: LaneId) -> String {
        (self.lanes.get(&lane).and_then(|s| s.name))
            .map_or_else(|| format!("lane {lane}"), |id| names.show(id).into_owned())
    }

    /// A gauge's counter track, unless [`MAX_COUNTERS`] is reached.
    fn counter_track(&mut self, names: &Names, gauge: NameId, out: &mut Vec<u8>) -> Option<u64> {
        if let Some(&track) = self.session.counters.get(&gauge) {
            return Some(track);
        }
        if self.session.counters.len() >= MAX_COUNTERS {
            return None;
        }
        let parent = self.process_track(out);
        let uuid = self.uuid();
        self.session.counters.insert(gauge, uuid);
        let name = names.show(gauge).into_owned();
        self.seq
            .descriptor(out, child_track(uuid, parent, name, true));
        Some(uuid)
    }

    /// Notes data lost before what comes next: the next packet says so
    /// (`previous_packet_dropped`), and a "data lost" instant on the
    /// process track and two counters of the totals mark where.
    ///
    /// The totals saturate: a peer's Shutdown may claim up to `u64::MAX`
    /// events lost, and a trace may hold several.
    fn lost(&mut self, frames: u64, events: u64, out: &mut Vec<u8>) {
        self.stats.frames_lost = self.stats.frames_lost.saturating_add(frames);
        self.stats.events_lost = self.stats.events_lost.saturating_add(events);
        self.seq.lost();
        let process = self.process_track(out);
        let (frames_track, events_track) = match self.session.loss_tracks {
            Some(tracks) => tracks,
            None => {
                let tracks = (self.uuid(), self.uuid());
                self.session.loss_tracks = Some(tracks);
                for (uuid, name) in [(tracks.0, "frames lost"), (tracks.1, "events lost")] {
                    self.seq
                        .descriptor(out, child_track(uuid, process, name.into(), true));
                }
                tracks
            }
        };
        let session = &mut self.session;
        session.frames_lost = session.frames_lost.saturating_add(frames);
        session.events_lost = session.events_lost.saturating_add(events);
        let time = self.last_time;
        self.seq.named(
            out,
            time,
            process,
            Kind::Instant,
            DATA_LOST.0,
            || DATA_LOST.1.into(),
            &[
                (Annotation::Frames, AnnotationValue::Uint(frames)),
                (Annotation::Events, AnnotationValue::Uint(events)),
            ],
        );
        for (track, total) in [
            (frames_track, session.frames_lost),
            (events_track, session.events_lost),
        ] {
            let total = CounterValue::Int(i64::try_from(total).unwrap_or(i64::MAX));
            self.seq.event(out, time, track, Kind::Counter(total));
        }
    }
}

impl Session {
    fn new(id: Option<u64>, pid: i32, name: &str, uuid: u64) -> Self {
        Session {
            id,
            process_id: 0,
            name: name.to_owned(),
            pid,
            uuid,
            described: false,
            counters: HashMap::default(),
            loss_tracks: None,
            frames_lost: 0,
            events_lost: 0,
            ticks_tracks: 0,
            task_tracks: Vec::new(),
            memory_track: None,
        }
    }
}

/// A named track under `parent`, a counter track if `counter`.
fn child_track(uuid: u64, parent: u64, name: String, counter: bool) -> TrackDescriptor {
    TrackDescriptor {
        uuid: Some(uuid),
        name: Some(name),
        parent_uuid: Some(parent),
        counter: counter.then_some(CounterDescriptor {}),
        ..TrackDescriptor::default()
    }
}

/// The iid of a stream's name: never 0, below the writer's own.
/// A span's fields as arguments: a string's value is its name's text.
fn field_args<'n>(names: &'n Names, fields: &[(NameId, FieldValue)]) -> Vec<FieldArg<'n>> {
    (fields.iter())
        .map(|&(key, value)| FieldArg {
            key,
            name: names.show(key),
            value: match value {
                FieldValue::Int(v) => AnnotationValue::Int(v),
                FieldValue::Float(v) => AnnotationValue::Double(v),
                FieldValue::Str(v) => AnnotationValue::String(names.show(v).into_owned()),
            },
        })
        .collect()
}

fn iid(name: NameId) -> u64 {
    u64::from(name) + 1
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::perfetto::proto::Trace;

    #[test]
    fn lanes_and_gauges_past_their_caps_are_refused_and_counted() {
        let (mut writer, mut out) = (TraceWriter::new(), Vec::new());
        let names = &Names::new();
        let instant = Event::Instant {
            time: 1,
            name: 1,
            payload: 0,
        };
        for lane in 0..MAX_LANES as u16 + 5 {
            writer.event(names, lane, instant, &mut out);
        }
        assert_eq!(writer.lanes.len(), MAX_LANES);
        assert_eq!(writer.stats.lane_events_refused, 5);
        assert_eq!(writer.stats.instants, MAX_LANES as u64);

        for gauge in 0..MAX_COUNTERS as u32 + 3 {
            let value = GaugeValue::Int(i64::from(gauge));
            writer.event(
                names,
                0,
                Event::Gauge {
                    time: 2,
                    gauge,
                    value,
                },
                &mut out,
            );
        }
        let value = GaugeValue::Float(f64::NAN);
        writer.event(
            names,
            0,
            Event::Gauge {
                time: 3,
                gauge: 0,
                value,
            },
            &mut out,
        );
        assert_eq!(writer.stats.gauge_values_refused, 3);
        assert_eq!(writer.stats.values_not_finite, 1);
        assert_eq!(writer.stats.counter_values, MAX_COUNTERS as u64);

        let trace = Trace::decode(&out[..]).expect("a Trace");
        assert_eq!(trace.packet.len() as u64, writer.stats().packets);
    }

    #[test]
    fn a_lane_gives_back_the_room_of_a_burst() {
        let (mut writer, mut out) = (TraceWriter::new(), Vec::new());
        let span = |id, parent| Event::Span {
            start: u64::from(id),
            duration: 1,
            name: 1,
            id,
            parent,
            arg: None,
        };
        for id in 2..10_000 {
            writer.event(&Names::new(), 0, span(id, 1), &mut out);
        }
        assert_eq!(writer.held_total, 9_998);
        writer.event(&Names::new(), 0, span(1, 0), &mut out);
        // The root's tree waits for its fields, until the frame's end.
        assert_eq!(writer.held_total, 9_999);
        writer.write_ended(&Names::new(), &mut out);
        assert_eq!(writer.held_total, 0);
        assert!(writer.lanes[&0].held.capacity() <= HELD_KEPT);
        assert_eq!(writer.stats.spans, 9_999);
    }
}
