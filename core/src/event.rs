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

/// The code of each event kind, shared by the ring's records and the
/// Block's wire records (FORMAT.md, "Block").
pub(crate) mod kind {
    pub const SPAN: u8 = 1;
    pub const INSTANT: u8 = 2;
    pub const GAUGE: u8 = 3;
    pub const TICK_START: u8 = 4;
    pub const TICK_END: u8 = 5;
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
}

impl Event {
    /// The event's timestamp: the start for a span, the point otherwise.
    pub const fn time(&self) -> u64 {
        match *self {
            Event::Span { start, .. } => start,
            Event::Instant { time, .. }
            | Event::Gauge { time, .. }
            | Event::TickStart { time, .. }
            | Event::TickEnd { time, .. } => time,
        }
    }

    /// The last tick the event covers: start + duration for a span.
    pub const fn end_time(&self) -> u64 {
        match *self {
            Event::Span {
                start, duration, ..
            } => start.saturating_add(duration),
            _ => self.time(),
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
