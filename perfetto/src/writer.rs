//! [`TraceWriter`]: typhon-live frames in, Perfetto packets out, frame by
//! frame, so that a recorder can append them to a file as they arrive.

use std::borrow::Cow;

use std::collections::hash_map::Entry;

use foldhash::HashMap;

use typhon_live_core::{
    DecodeError, Event, Frame, GaugeValue, InitView, LaneId, LaneInfo, NameId, Payload,
    RestartCheck, SequenceCheck,
};
use typhon_live_reader::BlockBuffer;

use crate::nesting::{self, Edge, Held};
use crate::proto::{
    AnnotationValue, CounterDescriptor, CounterValue, ProcessDescriptor, ThreadDescriptor,
    TrackDescriptor,
};
use crate::sequence::{Annotation, Kind, Sequence};

/// Names kept per session, as the live view caps them.
pub const MAX_NAMES: usize = 65_536;
/// Bytes of name text kept per session.
pub const MAX_NAME_BYTES: usize = 16 << 20;
/// Counter tracks per session; readings of further gauges are refused.
pub const MAX_COUNTERS: usize = 1024;
/// Lanes per session, as the live view caps them; events of further
/// lanes are refused.
pub const MAX_LANES: usize = 1024;
/// Held spans whose room a lane keeps between its roots: a burst past it
/// gives its memory back.
const HELD_KEPT: usize = 256;
/// Spans held for nesting order, over all lanes; past it a lane's held
/// spans are written at once (see [`WriterStats::early_writes`]).
pub const MAX_HELD: usize = 1 << 18;

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
    /// Names refused by [`MAX_NAMES`] or [`MAX_NAME_BYTES`] (written as
    /// `#id`).
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
}

/// Ticks to nanoseconds, exact.
#[derive(Clone, Copy, Debug)]
struct Clock {
    ticks_per_second: u64,
    /// When a tick is a whole number of ns, the cheap way.
    ns_per_tick: Option<u64>,
}

impl Clock {
    fn new(ticks_per_second: u64) -> Self {
        let ticks_per_second = ticks_per_second.max(1);
        Clock {
            ticks_per_second,
            ns_per_tick: (1_000_000_000 % ticks_per_second == 0)
                .then_some(1_000_000_000 / ticks_per_second),
        }
    }

    fn ns(&self, ticks: u64) -> u64 {
        match self.ns_per_tick {
            Some(k) => ticks.saturating_mul(k),
            None => {
                u64::try_from(u128::from(ticks) * 1_000_000_000 / u128::from(self.ticks_per_second))
                    .unwrap_or(u64::MAX)
            }
        }
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
    clock: Clock,
    counters: HashMap<NameId, u64>,
    /// Counter tracks of the frames and events lost.
    loss_tracks: Option<(u64, u64)>,
    frames_lost: u64,
    events_lost: u64,
    ticks_tracks: u32,
}

/// A lane of the current session.
#[derive(Default)]
struct LaneState {
    name: Option<NameId>,
    track: Option<u64>,
    ticks_track: Option<u64>,
    held: Vec<Held>,
    /// A tick started and not yet ended: (ns, tick number).
    tick: Option<(u64, u64)>,
}

/// Converts a typhon-live stream into Perfetto `TracePacket`s.
///
/// Feed it every frame in order with [`TraceWriter::frame`]; each call
/// appends whole packets (each a `Trace.packet` field) to `out`, so the
/// bytes written so far are always a valid trace. [`TraceWriter::finish`]
/// writes what it still holds: spans whose root span has not ended, and
/// a tick that started and did not end.
pub struct TraceWriter {
    seq: Sequence,
    names: HashMap<NameId, String>,
    name_bytes: usize,
    session: Session,
    lanes: HashMap<LaneId, LaneState>,
    held_total: usize,
    next_uuid: u64,
    next_tid: i32,
    order: u64,
    sequence: SequenceCheck,
    restart: RestartCheck,
    /// The latest time seen, ns: where a loss is marked.
    last_time: u64,
    unpacked: BlockBuffer,
    /// Records of the Block being read that could not be read: events
    /// lost with its damage.
    unread: u32,
    nesting: nesting::Scratch,
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
            seq: Sequence::new(),
            names: HashMap::default(),
            name_bytes: 0,
            // Data before any Init: times taken as ns, names as ids.
            session: Session::new(
                None,
                SUBSTITUTE_PID,
                "unknown process (no Init read)",
                1_000_000_000,
                1,
            ),
            lanes: HashMap::default(),
            held_total: 0,
            next_uuid: 2,
            next_tid: 1,
            order: 0,
            sequence: SequenceCheck::new(),
            restart: RestartCheck::new(),
            last_time: 0,
            unpacked: BlockBuffer::new(),
            unread: 0,
            nesting: nesting::Scratch::default(),
            stats: WriterStats::default(),
        }
    }

    /// What was taken in and written so far.
    pub fn stats(&self) -> WriterStats {
        WriterStats {
            packets: self.seq.packets,
            ..self.stats.clone()
        }
    }

    /// Takes in one frame, appending its packets to `out`. An error names
    /// a payload that did not decode: what it held is lost, which the
    /// next packet says, and the writer goes on with the next frame.
    pub fn frame(&mut self, frame: &Frame<'_>, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        self.stats.frames += 1;
        if frame.is_sequenced() {
            let missed = self.sequence.sequenced(frame.seq);
            if missed > 0 {
                self.lost(u64::from(missed), 0, out);
            }
        }
        if frame.kind().is_err() {
            // A newer writer's kind: nothing to convert, not damage.
            self.stats.unknown_frames += 1;
            return Ok(());
        }
        let result = frame.parse().and_then(|payload| self.payload(payload, out));
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
        let mut lanes: Vec<LaneId> = self.lanes.keys().copied().collect();
        lanes.sort_unstable();
        for lane in lanes {
            self.write_lane(lane, out);
        }
    }

    fn payload(&mut self, payload: Payload<'_>, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        match payload {
            Payload::Init(init) => self.init(&init, out),
            Payload::Definitions(defs) => {
                for (id, name) in defs.names() {
                    self.define(id, name);
                }
                if let Some(lanes) = defs.lanes() {
                    self.set_lanes(lanes, out);
                }
            }
            Payload::Block(block) => {
                let tps = self.session.clock.ticks_per_second;
                if self
                    .restart
                    .block(block.first_time, block.last_time, block.records, tps)
                {
                    self.restart(out);
                }
                let dropped: u64 = block.drops().map(|(_, n)| u64::from(n)).sum();
                if dropped > 0 {
                    if self.last_time == 0 {
                        self.last_time = self.session.clock.ns(block.first_time);
                    }
                    self.lost(0, dropped, out);
                }
                // Taken out while its events are written.
                let mut unpacked = std::mem::take(&mut self.unpacked);
                let result =
                    unpacked.each_event(&block, |lane, event| self.event(lane, event, out));
                self.unpacked = unpacked;
                if let Err(damage) = result {
                    self.unread = damage.unread;
                    return Err(damage.error);
                }
            }
            // Spans open when a viewer joined arrive whole when they end;
            // its time may tell a restart.
            Payload::CatchUp(catchup) => {
                let tps = self.session.clock.ticks_per_second;
                if self.restart.catch_up(catchup.time, tps) {
                    self.restart(out);
                }
            }
            Payload::Shutdown(_) => self.finish(out),
        }
        Ok(())
    }

    fn init(&mut self, init: &InitView<'_>, out: &mut Vec<u8>) {
        // A repeated Init that skipped numbers: frames of this session lost.
        let missed = self.sequence.init(init.next_seq, init.session_id);
        if missed > 0 {
            self.lost(u64::from(missed), 0, out);
        }
        if self.session.id != Some(init.session_id) {
            // A new process (or the first Init): what the last one held
            // is written under it, then its ids mean nothing any more.
            self.finish(out);
            self.lanes.clear();
            self.held_total = 0;
            self.names.clear();
            self.name_bytes = 0;
            self.restart.new_session();
            self.new_session(
                init.session_id,
                init.process_id,
                init.process_name,
                init.ticks_per_second,
            );
        } else {
            // A reconnect, a device's repeated announcement, or a device
            // that rebooted with the same id (one without a source of
            // fresh ids): the next time read tells.
            self.restart.arm();
        }
        self.seq.clear();
        for (id, name) in init.names() {
            self.define(id, name);
        }
        self.set_lanes(init.lanes(), out);
    }

    /// Starts a process track for a session.
    fn new_session(&mut self, id: u64, process_id: u32, name: &str, ticks_per_second: u64) {
        self.stats.sessions += 1;
        let pid = i32::try_from(process_id)
            .ok()
            .filter(|&pid| pid != 0)
            .unwrap_or(SUBSTITUTE_PID.saturating_add(self.stats.sessions as i32));
        let uuid = self.uuid();
        self.session = Session::new(Some(id), pid, name, ticks_per_second, uuid);
        self.session.process_id = process_id;
        self.last_time = 0;
    }

    /// The same session id with its clock gone back (as
    /// [`RestartCheck`] tells): the process started over, so it gets a
    /// process track (and its lanes thread tracks) of its own, keeping the
    /// names and lanes its Init just gave.
    fn restart(&mut self, out: &mut Vec<u8>) {
        self.finish(out);
        for lane in self.lanes.values_mut() {
            lane.track = None;
            lane.ticks_track = None;
        }
        let session = &self.session;
        let (id, process_id, name, ticks_per_second) = (
            session.id.unwrap_or(0),
            session.process_id,
            session.name.clone(),
            session.clock.ticks_per_second,
        );
        self.new_session(id, process_id, &name, ticks_per_second);
        self.stats.restarts += 1;
    }

    fn uuid(&mut self) -> u64 {
        self.next_uuid += 1;
        self.next_uuid - 1
    }

    /// Keeps `name` for `id` unless a cap is reached (then counts it).
    fn define(&mut self, id: NameId, name: &str) {
        let known = self.names.get(&id);
        if known.is_some_and(|k| k == name) {
            return;
        }
        let known_len = known.map_or(0, String::len);
        let bytes = self.name_bytes - known_len + name.len();
        if (known.is_none() && self.names.len() >= MAX_NAMES) || bytes > MAX_NAME_BYTES {
            self.stats.names_refused += 1;
            return;
        }
        if known.is_some() {
            // An iid already written means the old text: start afresh.
            self.seq.clear();
        }
        self.name_bytes = bytes;
        self.names.insert(id, name.to_owned());
    }

    /// A lane under a new name gets a new track; its past stays on the
    /// old one.
    fn set_lanes(&mut self, lanes: impl Iterator<Item = LaneInfo>, out: &mut Vec<u8>) {
        for lane in lanes {
            let Some(state) = self.lane(lane.id) else {
                self.stats.lane_events_refused += 1;
                continue;
            };
            if state.name == Some(lane.name) {
                continue;
            }
            if state.name.is_some() || state.track.is_some() {
                self.write_lane(lane.id, out);
            }
            let state = self.lanes.entry(lane.id).or_default();
            *state = LaneState {
                name: Some(lane.name),
                held: std::mem::take(&mut state.held),
                ..LaneState::default()
            };
        }
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

    fn event(&mut self, lane: LaneId, event: Event, out: &mut Vec<u8>) {
        if self.lane(lane).is_none() {
            self.stats.lane_events_refused += 1;
            return;
        }
        let clock = self.session.clock;
        let at = |t: u64| clock.ns(t);
        self.last_time = self.last_time.max(at(event.time()));
        match event {
            Event::Span {
                start,
                duration,
                name,
                id,
                parent,
                arg,
            } => {
                self.stats.spans += 1;
                let (start, end) = (at(start), at(start.saturating_add(duration)));
                self.last_time = self.last_time.max(end);
                self.order += 1;
                self.lanes.entry(lane).or_default().held.push(Held {
                    start,
                    end,
                    name,
                    id,
                    parent,
                    arg,
                    order: self.order,
                });
                self.held_total += 1;
                if parent == 0 {
                    self.write_spans(lane, out);
                } else if self.held_total > MAX_HELD {
                    self.stats.early_writes += 1;
                    self.write_spans(lane, out);
                }
            }
            Event::Instant {
                time,
                name,
                payload,
            } => {
                self.stats.instants += 1;
                let track = self.lane_track(lane, out);
                self.seq.named(
                    out,
                    at(time),
                    track,
                    Kind::Instant,
                    iid(name),
                    || name_of(&self.names, name),
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
                let Some(track) = self.counter_track(gauge, out) else {
                    self.stats.gauge_values_refused += 1;
                    return;
                };
                self.stats.counter_values += 1;
                self.seq.event(out, at(time), track, Kind::Counter(value));
            }
            Event::TickStart { time, tick } => {
                let state = self.lanes.entry(lane).or_default();
                if let Some(unended) = state.tick.replace((at(time), tick)) {
                    self.lone_tick(lane, unended.0, unended.1, None, out);
                }
            }
            Event::TickEnd {
                time,
                tick,
                overrun,
            } => {
                let started = self.lanes.entry(lane).or_default().tick.take();
                match started {
                    Some((start, number)) if number == tick => {
                        self.stats.ticks += 1;
                        // A peer's clock that went back within the tick
                        // would put its end before its begin.
                        let end = at(time).max(start);
                        let track = self.ticks_track(lane, out);
                        let (iid, text) = if overrun { OVERRUN_TICK } else { TICK };
                        self.seq.named(
                            out,
                            start,
                            track,
                            Kind::Begin,
                            iid,
                            || text.into(),
                            &[
                                (Annotation::Tick, AnnotationValue::Uint(tick)),
                                (Annotation::Overrun, AnnotationValue::Bool(overrun)),
                            ],
                        );
                        self.seq.event(out, end, track, Kind::End);
                    }
                    other => {
                        if let Some((start, number)) = other {
                            self.lone_tick(lane, start, number, None, out);
                        }
                        self.lone_tick(lane, at(time), tick, Some(overrun), out);
                    }
                }
            }
        }
    }

    /// A tick of which only the start (`overrun` is `None`) or the end
    /// arrived, as an instant on the Ticks track.
    fn lone_tick(
        &mut self,
        lane: LaneId,
        time: u64,
        tick: u64,
        overrun: Option<bool>,
        out: &mut Vec<u8>,
    ) {
        self.stats.ticks += 1;
        let track = self.ticks_track(lane, out);
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

    /// Writes a lane's held spans and its unended tick.
    fn write_lane(&mut self, lane: LaneId, out: &mut Vec<u8>) {
        self.write_spans(lane, out);
        if let Some((start, tick)) = self.lanes.get_mut(&lane).and_then(|s| s.tick.take()) {
            self.lone_tick(lane, start, tick, None, out);
        }
    }

    /// Writes a lane's held spans, in nesting order.
    fn write_spans(&mut self, lane: LaneId, out: &mut Vec<u8>) {
        let Some(state) = self.lanes.get_mut(&lane) else {
            return;
        };
        if state.held.is_empty() {
            return;
        }
        let mut held = std::mem::take(&mut state.held);
        self.held_total -= held.len();
        let track = self.lane_track(lane, out);
        let (seq, names) = (&mut self.seq, &self.names);
        nesting::order(&mut held, &mut self.nesting, |edge| match edge {
            Edge::Begin(span) => {
                let arg = span
                    .arg
                    .map(|a| (Annotation::Arg, AnnotationValue::Uint(a)));
                seq.named(
                    out,
                    span.start,
                    track,
                    Kind::Begin,
                    iid(span.name),
                    || name_of(names, span.name),
                    arg.as_slice(),
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
    fn lane_track(&mut self, lane: LaneId, out: &mut Vec<u8>) -> u64 {
        if let Some(track) = self.lanes.get(&lane).and_then(|s| s.track) {
            return track;
        }
        self.process_track(out);
        let uuid = self.uuid();
        let state = self.lanes.entry(lane).or_default();
        state.track = Some(uuid);
        let name = state.name.map_or_else(
            || format!("lane {lane}"),
            |id| name_of(&self.names, id).into_owned(),
        );
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
    fn ticks_track(&mut self, lane: LaneId, out: &mut Vec<u8>) -> u64 {
        if let Some(track) = self.lanes.get(&lane).and_then(|s| s.ticks_track) {
            return track;
        }
        let parent = self.process_track(out);
        let uuid = self.uuid();
        let state = self.lanes.entry(lane).or_default();
        state.ticks_track = Some(uuid);
        let name = if self.session.ticks_tracks == 0 {
            "Ticks".to_owned()
        } else {
            let lane_name = state.name.map_or_else(
                || format!("lane {lane}"),
                |id| name_of(&self.names, id).into_owned(),
            );
            format!("Ticks: {lane_name}")
        };
        self.session.ticks_tracks += 1;
        self.seq
            .descriptor(out, child_track(uuid, parent, name, false));
        uuid
    }

    /// A gauge's counter track, unless [`MAX_COUNTERS`] is reached.
    fn counter_track(&mut self, gauge: NameId, out: &mut Vec<u8>) -> Option<u64> {
        if let Some(&track) = self.session.counters.get(&gauge) {
            return Some(track);
        }
        if self.session.counters.len() >= MAX_COUNTERS {
            return None;
        }
        let parent = self.process_track(out);
        let uuid = self.uuid();
        self.session.counters.insert(gauge, uuid);
        let name = name_of(&self.names, gauge).into_owned();
        self.seq
            .descriptor(out, child_track(uuid, parent, name, true));
        Some(uuid)
    }

    /// Notes data lost before what comes next: the next packet says so
    /// (`previous_packet_dropped`), and a "data lost" instant on the
    /// process track and two counters of the totals mark where.
    fn lost(&mut self, frames: u64, events: u64, out: &mut Vec<u8>) {
        self.stats.frames_lost += frames;
        self.stats.events_lost += events;
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
        session.frames_lost += frames;
        session.events_lost += events;
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
    fn new(id: Option<u64>, pid: i32, name: &str, ticks_per_second: u64, uuid: u64) -> Self {
        Session {
            id,
            process_id: 0,
            name: name.to_owned(),
            pid,
            uuid,
            described: false,
            clock: Clock::new(ticks_per_second),
            counters: HashMap::default(),
            loss_tracks: None,
            frames_lost: 0,
            events_lost: 0,
            ticks_tracks: 0,
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
fn iid(name: NameId) -> u64 {
    u64::from(name) + 1
}

fn name_of(names: &HashMap<NameId, String>, id: NameId) -> Cow<'_, str> {
    match names.get(&id) {
        Some(name) => Cow::Borrowed(name),
        None => Cow::Owned(format!("#{id}")),
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::proto::Trace;

    #[test]
    fn names_lanes_and_gauges_past_their_caps_are_refused_and_counted() {
        let (mut writer, mut out) = (TraceWriter::new(), Vec::new());
        for id in 0..MAX_NAMES as u32 + 10 {
            writer.define(id, "n");
        }
        assert_eq!(writer.names.len(), MAX_NAMES);
        assert_eq!(writer.stats.names_refused, 10);
        // Redefining a kept name is not a new one.
        writer.define(0, "renamed");
        assert_eq!(writer.stats.names_refused, 10);

        let instant = Event::Instant {
            time: 1,
            name: 1,
            payload: 0,
        };
        for lane in 0..MAX_LANES as u16 + 5 {
            writer.event(lane, instant, &mut out);
        }
        assert_eq!(writer.lanes.len(), MAX_LANES);
        assert_eq!(writer.stats.lane_events_refused, 5);
        assert_eq!(writer.stats.instants, MAX_LANES as u64);

        for gauge in 0..MAX_COUNTERS as u32 + 3 {
            let value = GaugeValue::Int(i64::from(gauge));
            writer.event(
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
            writer.event(0, span(id, 1), &mut out);
        }
        assert_eq!(writer.held_total, 9_998);
        writer.event(0, span(1, 0), &mut out);
        assert_eq!(writer.held_total, 0);
        assert!(writer.lanes[&0].held.capacity() <= HELD_KEPT);
        assert_eq!(writer.stats.spans, 9_999);
    }
}
