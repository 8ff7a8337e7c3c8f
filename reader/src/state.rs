//! What a reader knows of the stream it reads: the session, its names,
//! lanes and open spans, the latest time, and its tally.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use typhon_live_core::{LaneId, LaneInfo, OpenSpan, SpanId};

use crate::clock::Clock;
use crate::names::Names;
use crate::off_cpu::{OpenOffCpu, SwitchedOut};
use crate::placement::Placement;
use crate::stacks::Stacks;
use crate::ticks::{OpenTick, Ticks};

/// Lanes kept at most. A typhon-live process has at most 64, so this
/// binds only on a peer that is broken or hostile.
pub const MAX_LANES: usize = 1024;

/// The session an Init described.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// Its id: a new one whenever the process restarts (a device without
    /// fresh ids keeps one; see [`Update::Restarted`](crate::Update)).
    pub id: u64,
    /// The process's name.
    pub process_name: String,
    /// The process id (0 on a device).
    pub process_id: u32,
    /// When the session was created, ns since the Unix epoch.
    pub created_unix_ns: u64,
}

/// A lane of the stream's current lane table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    /// Its id, name id and kind.
    pub info: LaneInfo,
    /// Spans open, at least `open.len()` (the last Catch-up's depth).
    pub open_depth: u32,
    /// The outermost spans open on it as of the last Catch-up, less those
    /// that ended since; starts in ns. At most [`MAX_OPEN_SPANS`]
    /// (as deep as a writer tracks, whatever a peer lists).
    ///
    /// [`MAX_OPEN_SPANS`]: typhon_live_core::MAX_OPEN_SPANS
    pub open: Vec<OpenSpan>,
}

/// What the reader refused to keep because a cap was reached. It still
/// hands on every event; these are only what it does not remember.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refused {
    /// Name definitions past [`MAX_NAMES`](crate::MAX_NAMES) or
    /// [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES).
    pub names: u64,
    /// Lanes past [`MAX_LANES`].
    pub lanes: u64,
    /// Open spans past [`MAX_OPEN_SPANS`](typhon_live_core::MAX_OPEN_SPANS)
    /// in a Catch-up's lane.
    pub open_spans: u64,
    /// Tick starts on a lane past the [`MAX_LANES`] that have a tick open
    /// (their ends read as ticks without a start).
    pub ticks: u64,
    /// Switches out on a lane past the [`MAX_LANES`] that have a thread
    /// switched out (their ins read as unpaired).
    pub off_cpu: u64,
    /// Stack nodes whose parent was not held, or that stood deeper than
    /// [`MAX_STACK_DEPTH`](typhon_live_core::stacks::MAX_STACK_DEPTH).
    pub stack_nodes: u64,
    /// Frame symbols past [`MAX_FRAME_SYMBOLS`](crate::MAX_FRAME_SYMBOLS).
    pub frame_symbols: u64,
    /// Modules of absurd bounds: no bytes, an end past 2^64, no path or
    /// one past [`MAX_MODULE_PATH`](crate::MAX_MODULE_PATH).
    pub modules: u64,
}

/// What the reader has read and lost since it was made, over every
/// session and connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Frames read (every kind, damaged ones too).
    pub frames: u64,
    /// Their bytes on the wire.
    pub bytes: u64,
    /// Frames missing by sequence number.
    pub frames_missed: u64,
    /// Frames that arrived whole and broke a rule of the format.
    pub frames_damaged: u64,
    /// Frames of kinds this reader does not know, skipped.
    pub frames_unknown: u64,
    /// Frames read while no Init had been (names show as `#id`).
    pub frames_before_init: u64,
    /// Events read.
    pub events: u64,
    /// Events the stream reports dropped (Block drop entries).
    pub events_dropped: u64,
    /// Events damaged Blocks stated and that could not be read.
    pub events_damaged: u64,
    /// Encoded event bytes of the Blocks read, and the records they
    /// stated: bytes per event on the wire.
    pub block_bytes: u64,
    /// See `block_bytes`.
    pub block_records: u64,
    /// Log texts read (Text frames' records).
    pub texts: u64,
    /// Texts the stream says were lost (Text frames' counts).
    pub texts_lost: u64,
    /// Ticks told whole: their start and end both read.
    pub ticks: u64,
    /// Ticks told without a start (lost, or before the reader joined).
    pub ticks_without_start: u64,
    /// Ticks told without an end (lost, or after the session ended).
    pub ticks_without_end: u64,
    /// Ticks told overrunning their budget (whole, or without a start).
    pub ticks_overrun: u64,
    /// Off-CPU slices told: a switch out and the next in of its lane.
    pub off_cpu: u64,
    /// Switches without a partner: an in with no out before it (lost, or
    /// before the reader joined), an out followed by another out (its in
    /// lost).
    pub switches_unpaired: u64,
    /// Entries of Samples frames (a lane's counters, a switch) that named
    /// a lane the lane table did not hold: a writer's fault (FORMAT.md,
    /// "Samples"), skipped. Counted once an Init was read.
    pub samples_undefined_lanes: u64,
    /// Stacks sampled, read.
    pub stack_samples: u64,
    /// Stack samples that named a node this reader does not hold (never
    /// defined, or refused), skipped.
    pub stack_samples_undefined: u64,
    /// Sessions read: Inits with a session id other than the last one's.
    pub sessions: u64,
    /// Sessions that started over under their own id.
    pub restarts: u64,
    /// Connections made again after one was lost.
    pub reconnects: u64,
    /// What the caps kept out.
    pub refused: Refused,
}

impl Tally {
    /// What was read and lost since `earlier`, a tally of the same reader
    /// taken before (a session's start, say). Sessions, restarts,
    /// reconnects, refusals and frames before an Init stay as they are.
    pub fn since(&self, earlier: &Tally) -> Tally {
        let less = |now: u64, then: u64| now.saturating_sub(then);
        Tally {
            frames: less(self.frames, earlier.frames),
            bytes: less(self.bytes, earlier.bytes),
            frames_missed: less(self.frames_missed, earlier.frames_missed),
            frames_damaged: less(self.frames_damaged, earlier.frames_damaged),
            frames_unknown: less(self.frames_unknown, earlier.frames_unknown),
            events: less(self.events, earlier.events),
            events_dropped: less(self.events_dropped, earlier.events_dropped),
            events_damaged: less(self.events_damaged, earlier.events_damaged),
            block_bytes: less(self.block_bytes, earlier.block_bytes),
            block_records: less(self.block_records, earlier.block_records),
            texts: less(self.texts, earlier.texts),
            texts_lost: less(self.texts_lost, earlier.texts_lost),
            ticks: less(self.ticks, earlier.ticks),
            ticks_without_start: less(self.ticks_without_start, earlier.ticks_without_start),
            ticks_without_end: less(self.ticks_without_end, earlier.ticks_without_end),
            ticks_overrun: less(self.ticks_overrun, earlier.ticks_overrun),
            off_cpu: less(self.off_cpu, earlier.off_cpu),
            switches_unpaired: less(self.switches_unpaired, earlier.switches_unpaired),
            samples_undefined_lanes: less(
                self.samples_undefined_lanes,
                earlier.samples_undefined_lanes,
            ),
            stack_samples: less(self.stack_samples, earlier.stack_samples),
            stack_samples_undefined: less(
                self.stack_samples_undefined,
                earlier.stack_samples_undefined,
            ),
            ..*self
        }
    }
}

/// What a reader knows: passed to its consumer beside every update.
#[derive(Clone, Debug, Default)]
pub struct State {
    pub(crate) session: Option<Session>,
    pub(crate) clock: Clock,
    pub(crate) names: Names,
    pub(crate) stacks: Stacks,
    pub(crate) lanes: BTreeMap<LaneId, Lane>,
    /// `lanes`' ids as bits: a Samples frame's every entry is checked
    /// against them (FORMAT.md, "Samples"), thousands a second.
    pub(crate) lane_bits: Vec<u64>,
    /// Spans listed open over all lanes: while there are none (the usual
    /// case), an event costs no lane lookup.
    pub(crate) open_spans: usize,
    pub(crate) latest: Option<u64>,
    pub(crate) unix_offset: Option<i128>,
    pub(crate) ticks: Ticks,
    pub(crate) switched_out: SwitchedOut,
    pub(crate) tally: Tally,
}

impl State {
    /// The session of the last Init, if one was read.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The session's clock ([`Clock::NS`] until an Init states one).
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The names defined this session.
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// The session's call stacks: its nodes, and the frames at their
    /// addresses.
    pub fn stacks(&self) -> &Stacks {
        &self.stacks
    }

    /// The current lane table, by lane id.
    pub fn lanes(&self) -> &BTreeMap<LaneId, Lane> {
        &self.lanes
    }

    /// The latest time the stream stated this run (events' ends,
    /// Catch-ups, Shutdown), ns.
    pub fn latest(&self) -> Option<u64> {
        self.latest
    }

    /// Unix ns minus session ns, when frames were read with their arrival
    /// times ([`Reader::read_at`](crate::Reader::read_at)): an event at
    /// `t` ns was at `t + unix_offset` ns since the Unix epoch.
    ///
    /// It is the least, over the frames that state a time, of (arrival −
    /// the latest time the frame states): the true offset plus the
    /// fastest delivery seen, so that two streams line up to within their
    /// smallest delivery delay, never ahead of when they were received.
    /// It is estimated afresh for a new session or a restart.
    pub fn unix_offset(&self) -> Option<i128> {
        self.unix_offset
    }

    /// The session's times on the Unix clock, as [`State::unix_offset`]
    /// places them.
    pub fn unix(&self) -> Option<Placement> {
        self.unix_offset.map(Placement::unix)
    }

    /// Ticks started and not ended yet, one a lane at most.
    pub fn open_ticks(&self) -> impl Iterator<Item = &OpenTick> {
        self.ticks.open()
    }

    /// Lanes whose thread switched out and has not switched in yet, one
    /// slice a lane at most: threads asleep, blocked or preempted now.
    pub fn off_cpu_open(&self) -> impl Iterator<Item = &OpenOffCpu> {
        self.switched_out.open()
    }

    /// What was read and lost so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    pub(crate) fn stated(&mut self, time: u64) {
        self.latest = Some(self.latest.map_or(time, |latest| latest.max(time)));
    }

    pub(crate) fn placed(&mut self, received: Option<u64>, time: u64) {
        if let Some(received) = received {
            let sample = i128::from(received) - i128::from(time);
            self.unix_offset = Some(self.unix_offset.map_or(sample, |o| o.min(sample)));
        }
    }

    /// Whether a Samples frame may name `lane`: it is in the lane table
    /// (FORMAT.md, "Samples"), or no Init gave a table to check against.
    #[inline]
    pub fn samples_may_name(&self, lane: LaneId) -> bool {
        let (word, bit) = (usize::from(lane) / 64, lane % 64);
        let defined = self
            .lane_bits
            .get(word)
            .is_some_and(|w| w & (1 << bit) != 0);
        defined || self.session.is_none()
    }

    /// [`State::samples_may_name`], a lane it may not counted.
    #[inline]
    pub(crate) fn counted_samples_lane(&mut self, lane: LaneId) -> bool {
        let named = self.samples_may_name(lane);
        if !named {
            self.tally.samples_undefined_lanes += 1;
        }
        named
    }

    /// Lanes left the table: its ids' bits made again.
    pub(crate) fn lanes_removed(&mut self) {
        self.lane_bits.clear();
        for &id in self.lanes.keys() {
            set_lane_bit(&mut self.lane_bits, id);
        }
    }

    /// Span `id` of `lane` ended: no longer open, whatever the last
    /// Catch-up said.
    pub(crate) fn ended(&mut self, lane: LaneId, id: SpanId) {
        if let Some(lane) = self.lanes.get_mut(&lane) {
            let before = lane.open.len();
            lane.open.retain(|open| open.id != id);
            self.open_spans -= before - lane.open.len();
        }
    }

    pub(crate) fn forget_open_spans(&mut self) {
        for lane in self.lanes.values_mut() {
            lane.open.clear();
            lane.open_depth = 0;
        }
        self.open_spans = 0;
    }

    /// Sets lane `info`'s entry, unless [`MAX_LANES`] is reached. A slot
    /// given to another thread (another name) is another lane.
    pub(crate) fn set_lane(&mut self, info: LaneInfo) -> Option<&mut Lane> {
        if !self.lanes.contains_key(&info.id) && self.lanes.len() >= MAX_LANES {
            self.tally.refused.lanes += 1;
            return None;
        }
        set_lane_bit(&mut self.lane_bits, info.id);
        let lane = self.lanes.entry(info.id).or_insert(Lane {
            info,
            open_depth: 0,
            open: Vec::new(),
        });
        if lane.info != info {
            self.open_spans -= lane.open.len();
            *lane = Lane {
                info,
                open_depth: 0,
                open: Vec::new(),
            };
        }
        Some(lane)
    }
}

/// Lane `id`'s bit set in `bits` (see `State::lane_bits`).
fn set_lane_bit(bits: &mut Vec<u64>, id: LaneId) {
    let word = usize::from(id) / 64;
    if bits.len() <= word {
        bits.resize(word + 1, 0);
    }
    bits[word] |= 1 << (id % 64);
}
