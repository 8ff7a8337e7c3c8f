//! The event model: what a lane records and what a Block carries.
//!
//! Spans are recorded whole when they end, so a dropped frame never leaves
//! half a span behind. Every other event is a single point in time.

/// Index of an interned name (system, query, query text, gauge, lane name).
///
/// Ids are dense, starting at 0, in interning order.
pub type NameId = u32;

/// Slot index of a lane (one lane per producing thread).
pub type LaneId = u16;

/// Span id, unique within its lane for the session; 0 means "no span".
pub type SpanId = u32;

/// Task id: a span that crosses an `.await` (a task span, FORMAT.md
/// "Tasks"), unique in its process for the session, whatever lanes it ran
/// on; 0 means "no task".
pub type TaskId = u64;

/// What kind of thread a lane stands for; only used to label and group lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LaneKind {
    /// The process's main or game-loop thread.
    Main,
    /// A dedicated worker thread.
    Worker,
    /// A thread of a thread pool.
    Pool,
    /// Anything else.
    Other,
}

impl LaneKind {
    /// The wire byte for this kind.
    pub const fn to_byte(self) -> u8 {
        match self {
            LaneKind::Main => 0,
            LaneKind::Worker => 1,
            LaneKind::Pool => 2,
            LaneKind::Other => 3,
        }
    }

    /// The kind for a wire byte; unknown bytes read as [`LaneKind::Other`] so
    /// that a newer sender's kinds still label a lane.
    pub const fn from_byte(byte: u8) -> Self {
        match byte {
            0 => LaneKind::Main,
            1 => LaneKind::Worker,
            2 => LaneKind::Pool,
            _ => LaneKind::Other,
        }
    }
}

/// A gauge reading: integer (bytes, counts) or floating point (ratios, ms).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GaugeValue {
    /// A signed integer value.
    Int(i64),
    /// A floating-point value; carried bit-exact, NaN included.
    Float(f64),
}

/// A field's value (FORMAT.md, "Fields").
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FieldValue {
    /// A signed integer (a `bool` as 0 or 1).
    Int(i64),
    /// A floating-point number; carried bit-exact, NaN included.
    Float(f64),
    /// A string, interned: its name id.
    Str(NameId),
}

/// What a field belongs to: the record right before it on its lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FieldOwner {
    /// The lane's span (or poll) with this id.
    Span(SpanId),
    /// The task span with this id (its end).
    Task(TaskId),
}

/// The code of each event kind, shared by the ring's records and the
/// Block's wire records (FORMAT.md, "Block").
pub(crate) mod kind {
    pub const SPAN: u8 = 1;
    pub const INSTANT: u8 = 2;
    pub const GAUGE: u8 = 3;
    pub const TICK_START: u8 = 4;
    pub const TICK_END: u8 = 5;
    pub const TASK_BEGIN: u8 = 6;
    pub const POLL: u8 = 7;
    pub const TASK_END: u8 = 8;
    pub const FIELD_INT: u8 = 9;
    pub const FIELD_FLOAT: u8 = 10;
    pub const FIELD_STR: u8 = 11;
    pub const MARK: u8 = 12;
    pub const ALLOCATED: u8 = 13;
    /// Kinds 14 and 15: reserved for additions a version 4 reader skips.
    pub const FIRST_RESERVED: u8 = 14;
    pub const LAST_RESERVED: u8 = 15;
}

/// A set of event kinds: what a reader that skims Blocks wants decoded
/// ([`BlockEvents::skim`](crate::BlockEvents::skim)). Each constant names
/// the kinds of one [`Event`] variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EventKinds(u16);

impl EventKinds {
    /// No kind.
    pub const NONE: EventKinds = EventKinds(0);
    /// Every kind, the ones a later writer may define included.
    pub const ALL: EventKinds = EventKinds(u16::MAX);
    /// [`Event::Span`].
    pub const SPAN: EventKinds = EventKinds::bit(kind::SPAN);
    /// [`Event::Instant`].
    pub const INSTANT: EventKinds = EventKinds::bit(kind::INSTANT);
    /// [`Event::Gauge`].
    pub const GAUGE: EventKinds = EventKinds::bit(kind::GAUGE);
    /// [`Event::TickStart`].
    pub const TICK_START: EventKinds = EventKinds::bit(kind::TICK_START);
    /// [`Event::TickEnd`].
    pub const TICK_END: EventKinds = EventKinds::bit(kind::TICK_END);
    /// [`Event::TaskBegin`].
    pub const TASK_BEGIN: EventKinds = EventKinds::bit(kind::TASK_BEGIN);
    /// [`Event::Poll`].
    pub const POLL: EventKinds = EventKinds::bit(kind::POLL);
    /// [`Event::TaskEnd`].
    pub const TASK_END: EventKinds = EventKinds::bit(kind::TASK_END);
    /// [`Event::Field`], of any value.
    pub const FIELD: EventKinds = EventKinds(
        EventKinds::bit(kind::FIELD_INT).0
            | EventKinds::bit(kind::FIELD_FLOAT).0
            | EventKinds::bit(kind::FIELD_STR).0,
    );
    /// [`Event::Mark`].
    pub const MARK: EventKinds = EventKinds::bit(kind::MARK);
    /// [`Event::Allocated`].
    pub const ALLOCATED: EventKinds = EventKinds::bit(kind::ALLOCATED);

    const fn bit(kind: u8) -> EventKinds {
        EventKinds(1 << kind)
    }

    /// The kind of `event`: a skimmed Block hands on every event of a
    /// wanted kind, so this is how its consumer tells them from the
    /// others of their group.
    pub const fn of(event: &Event) -> EventKinds {
        match *event {
            Event::Span { .. } => EventKinds::SPAN,
            Event::Instant { .. } => EventKinds::INSTANT,
            Event::Gauge { .. } => EventKinds::GAUGE,
            Event::TickStart { .. } => EventKinds::TICK_START,
            Event::TickEnd { .. } => EventKinds::TICK_END,
            Event::TaskBegin { .. } => EventKinds::TASK_BEGIN,
            Event::Poll { .. } => EventKinds::POLL,
            Event::TaskEnd { .. } => EventKinds::TASK_END,
            Event::Field { .. } => EventKinds::FIELD,
            Event::Mark { .. } => EventKinds::MARK,
            Event::Allocated { .. } => EventKinds::ALLOCATED,
            Event::Unknown { kind, .. } if kind < 16 => EventKinds::bit(kind),
            Event::Unknown { .. } => EventKinds::NONE,
        }
    }

    /// The kinds of either set.
    pub const fn union(self, other: EventKinds) -> EventKinds {
        EventKinds(self.0 | other.0)
    }

    /// Whether every kind of `other` is in this set.
    pub const fn contains(self, other: EventKinds) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the record kind `kind` (FORMAT.md, "Records": 0 to 15) is
    /// in this set.
    pub(crate) const fn has_kind(self, kind: u8) -> bool {
        kind < 16 && self.0 & (1 << kind) != 0
    }
}

impl core::ops::BitOr for EventKinds {
    type Output = EventKinds;

    fn bitor(self, other: EventKinds) -> EventKinds {
        self.union(other)
    }
}

/// One recorded event. Timestamps are in host clock ticks (see
/// [`crate::init::Metadata::ticks_per_second`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Event {
    /// A completed span.
    Span {
        /// Tick at which the span began.
        start: u64,
        /// Length of the span in ticks.
        duration: u64,
        /// Name of the span (system, query, ...).
        name: NameId,
        /// Id of this span within its lane (never 0).
        id: SpanId,
        /// Id of the enclosing span in the same lane, 0 for a root span.
        parent: SpanId,
        /// Optional argument (entity count, bytes, query id, ...).
        arg: Option<u64>,
    },
    /// A point event with a payload.
    Instant {
        /// Tick of the event.
        time: u64,
        /// Name of the event.
        name: NameId,
        /// Free-form payload.
        payload: u64,
    },
    /// A gauge reading, e.g. memory in use.
    Gauge {
        /// Tick of the reading.
        time: u64,
        /// Name of the gauge.
        gauge: NameId,
        /// The value read.
        value: GaugeValue,
    },
    /// The start of tick number `tick`.
    TickStart {
        /// Tick (clock) at which the simulation tick started.
        time: u64,
        /// The simulation tick number, explicit so a viewer never counts.
        tick: u64,
    },
    /// The end of tick number `tick`.
    TickEnd {
        /// Tick (clock) at which the simulation tick ended.
        time: u64,
        /// The simulation tick number.
        tick: u64,
        /// The tick took longer than its budget.
        overrun: bool,
    },
    /// A task span began: a span that may run in several polls, on any
    /// lanes, between its creation and its close (an `async` request).
    TaskBegin {
        /// Tick at which the task span was created.
        time: u64,
        /// Name of the task span.
        name: NameId,
        /// The task's id (never 0).
        task: TaskId,
        /// The task span it was created inside, 0 for none.
        parent: TaskId,
    },
    /// One poll of a task span on this lane: a span of the lane (it nests
    /// like one, and the lane's spans inside it name it as parent) that
    /// belongs to `task` and does not count as a span of its own name.
    Poll {
        /// Tick at which the poll began.
        start: u64,
        /// Length of the poll in ticks.
        duration: u64,
        /// Name of the task span.
        name: NameId,
        /// Id of the poll among the lane's spans (never 0).
        id: SpanId,
        /// Id of the enclosing span in the same lane, 0 for none.
        parent: SpanId,
        /// The task it is a poll of.
        task: TaskId,
    },
    /// A task span closed.
    TaskEnd {
        /// Tick at which the task span closed.
        time: u64,
        /// Name of the task span (it may differ from its begin's: a name
        /// built from fields recorded later).
        name: NameId,
        /// The task's id.
        task: TaskId,
        /// From its creation to its close, in ticks.
        wall: u64,
        /// The sum of its polls, in ticks.
        busy: u64,
    },
    /// A field of the span or task span recorded right before it on its
    /// lane (FORMAT.md, "Fields"): a request's route, a query's rows.
    Field {
        /// The owner's start (a span's, or a task's creation).
        time: u64,
        /// The field's name, interned.
        key: NameId,
        /// Its value.
        value: FieldValue,
        /// What it belongs to.
        owner: FieldOwner,
    },
    /// A flight recorder's trigger, in the capture it made (FORMAT.md,
    /// "Marks"): when it fired, what it was, and the span it fired on, so
    /// that a viewer opens the capture there.
    Mark {
        /// When it fired.
        time: u64,
        /// What fired, a name: the trigger as written (`tick > 100ms`).
        label: NameId,
        /// The span it fired on, if one: its name and its start.
        span: Option<(NameId, u64)>,
    },
    /// The bytes the span (or poll) recorded right before it on its lane
    /// allocated while it was the lane's innermost open span: its own,
    /// its children's left out (FORMAT.md, "Allocated bytes").
    Allocated {
        /// The span's start.
        time: u64,
        /// The span's id.
        span: SpanId,
        /// Bytes allocated.
        bytes: u64,
    },
    /// A record of a kind this version of the format reserves for later
    /// additions (14 and 15): it was read and skipped. Readers ignore it.
    Unknown {
        /// Its time.
        time: u64,
        /// Its kind.
        kind: u8,
    },
}

impl Event {
    /// The event's timestamp: the start for a span, the point otherwise.
    pub const fn time(&self) -> u64 {
        match *self {
            Event::Span { start, .. } | Event::Poll { start, .. } => start,
            Event::Instant { time, .. }
            | Event::Gauge { time, .. }
            | Event::TickStart { time, .. }
            | Event::TickEnd { time, .. }
            | Event::TaskBegin { time, .. }
            | Event::TaskEnd { time, .. }
            | Event::Field { time, .. }
            | Event::Mark { time, .. }
            | Event::Allocated { time, .. }
            | Event::Unknown { time, .. } => time,
        }
    }

    /// The last tick the event covers: start + duration for a span or a
    /// poll. A task's end is a point: its time is its close.
    pub const fn end_time(&self) -> u64 {
        match *self {
            Event::Span {
                start, duration, ..
            }
            | Event::Poll {
                start, duration, ..
            } => start.saturating_add(duration),
            _ => self.time(),
        }
    }

    /// The span its lane ran, for a poll (its task left out), for readers
    /// that show what each lane ran; any other event as it is.
    pub const fn lane_span(self) -> Event {
        match self {
            Event::Poll {
                start,
                duration,
                name,
                id,
                parent,
                ..
            } => Event::Span {
                start,
                duration,
                name,
                id,
                parent,
                arg: None,
            },
            other => other,
        }
    }

    /// A span as a poll of task `task` named `name` (its argument left
    /// out); any other event as it is.
    pub const fn into_poll(self, task: TaskId, name: NameId) -> Event {
        match self {
            Event::Span {
                start,
                duration,
                id,
                parent,
                ..
            } => Event::Poll {
                start,
                duration,
                name,
                id,
                parent,
                task,
            },
            other => other,
        }
    }

    /// The event with each point in time mapped by `point`: a span's and
    /// a poll's duration, and a task's wall time, become the distance
    /// between their mapped ends (so that a child that ends with its
    /// parent still does); a task's busy time is mapped by `length`.
    pub fn map_times(self, point: impl Fn(u64) -> u64, length: impl Fn(u64) -> u64) -> Event {
        let between = |from: u64, to: u64| point(to).saturating_sub(point(from));
        match self {
            Event::Span {
                start,
                duration,
                name,
                id,
                parent,
                arg,
            } => Event::Span {
                start: point(start),
                duration: between(start, start.saturating_add(duration)),
                name,
                id,
                parent,
                arg,
            },
            Event::Poll {
                start,
                duration,
                name,
                id,
                parent,
                task,
            } => Event::Poll {
                start: point(start),
                duration: between(start, start.saturating_add(duration)),
                name,
                id,
                parent,
                task,
            },
            Event::TaskEnd {
                time,
                name,
                task,
                wall,
                busy,
            } => Event::TaskEnd {
                time: point(time),
                name,
                task,
                wall: between(time.saturating_sub(wall), time),
                busy: length(busy),
            },
            Event::Instant {
                time,
                name,
                payload,
            } => Event::Instant {
                time: point(time),
                name,
                payload,
            },
            Event::Gauge { time, gauge, value } => Event::Gauge {
                time: point(time),
                gauge,
                value,
            },
            Event::TickStart { time, tick } => Event::TickStart {
                time: point(time),
                tick,
            },
            Event::TickEnd {
                time,
                tick,
                overrun,
            } => Event::TickEnd {
                time: point(time),
                tick,
                overrun,
            },
            Event::TaskBegin {
                time,
                name,
                task,
                parent,
            } => Event::TaskBegin {
                time: point(time),
                name,
                task,
                parent,
            },
            Event::Field {
                time,
                key,
                value,
                owner,
            } => Event::Field {
                time: point(time),
                key,
                value,
                owner,
            },
            Event::Mark { time, label, span } => Event::Mark {
                time: point(time),
                label,
                span: span.map(|(name, start)| (name, point(start))),
            },
            Event::Allocated { time, span, bytes } => Event::Allocated {
                time: point(time),
                span,
                bytes,
            },
            Event::Unknown { time, kind } => Event::Unknown {
                time: point(time),
                kind,
            },
        }
    }
}

impl Event {
    /// The event with its name ids mapped by `name` (a gauge's by
    /// `gauge`) and its task ids by `task`, as a merger of several
    /// streams renumbers them.
    pub fn map_ids(
        self,
        name: impl Fn(NameId) -> NameId,
        gauge: impl Fn(NameId) -> NameId,
        task: impl Fn(TaskId) -> TaskId,
    ) -> Event {
        match self {
            Event::Span {
                start,
                duration,
                name: n,
                id,
                parent,
                arg,
            } => Event::Span {
                start,
                duration,
                name: name(n),
                id,
                parent,
                arg,
            },
            Event::Instant {
                time,
                name: n,
                payload,
            } => Event::Instant {
                time,
                name: name(n),
                payload,
            },
            Event::Gauge {
                time,
                gauge: g,
                value,
            } => Event::Gauge {
                time,
                gauge: gauge(g),
                value,
            },
            Event::TaskBegin {
                time,
                name: n,
                task: t,
                parent,
            } => Event::TaskBegin {
                time,
                name: name(n),
                task: task(t),
                parent: task(parent),
            },
            Event::Poll {
                start,
                duration,
                name: n,
                id,
                parent,
                task: t,
            } => Event::Poll {
                start,
                duration,
                name: name(n),
                id,
                parent,
                task: task(t),
            },
            Event::TaskEnd {
                time,
                name: n,
                task: t,
                wall,
                busy,
            } => Event::TaskEnd {
                time,
                name: name(n),
                task: task(t),
                wall,
                busy,
            },
            Event::Field {
                time,
                key,
                value,
                owner,
            } => Event::Field {
                time,
                key: name(key),
                value: match value {
                    FieldValue::Str(v) => FieldValue::Str(name(v)),
                    number => number,
                },
                owner: match owner {
                    FieldOwner::Task(t) => FieldOwner::Task(task(t)),
                    span => span,
                },
            },
            Event::Mark { time, label, span } => Event::Mark {
                time,
                label: name(label),
                span: span.map(|(id, start)| (name(id), start)),
            },
            other @ (Event::TickStart { .. }
            | Event::TickEnd { .. }
            | Event::Allocated { .. }
            | Event::Unknown { .. }) => other,
        }
    }
}

/// A span that has begun and not yet ended, as reported for a live stall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OpenSpan {
    /// Span id within its lane.
    pub id: SpanId,
    /// Name of the span.
    pub name: NameId,
    /// Tick at which it began.
    pub start: u64,
}
