//! What a peer can make a viewer keep: the caps, and what they refused.

pub use typhon_live_reader::{MAX_FIELDS_PER_SPAN, MAX_LANES, MAX_NAMES, MAX_NAME_BYTES};

use serde::Serialize;

/// Gauges (distinct gauge names) kept at most.
pub const MAX_GAUGES: usize = 1024;
/// Ticks kept in the window at most.
pub const MAX_TICKS: usize = 100_000;
/// Task spans begun and not yet ended, kept at most.
pub const MAX_OPEN_TASKS: usize = 16_384;

/// What the viewer refused to keep because a cap was reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// Name definitions past [`MAX_NAMES`] or [`MAX_NAME_BYTES`].
    pub names: u64,
    /// Lanes past [`MAX_LANES`].
    pub lanes: u64,
    /// Gauges past [`MAX_GAUGES`].
    pub gauges: u64,
    /// Ticks past [`MAX_TICKS`] in the window, or started on more lanes
    /// than the reader keeps ticks open on.
    pub ticks: u64,
    /// Task spans begun past [`MAX_OPEN_TASKS`] open ones.
    pub tasks: u64,
    /// Fields past [`MAX_FIELDS_PER_SPAN`] of one span, or whose span was
    /// lost (it is not the record before them on their lane); and a
    /// span's allocated bytes whose span was lost, or read twice.
    pub fields: u64,
}

impl Refused {
    pub(crate) fn any(&self) -> bool {
        *self != Refused::default()
    }
}

/// The caps, as the view and `--json` report them.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Limits {
    /// [`MAX_NAMES`].
    pub names: usize,
    /// [`MAX_NAME_BYTES`].
    pub name_bytes: usize,
    /// [`MAX_LANES`].
    pub lanes: usize,
    /// [`MAX_GAUGES`].
    pub gauges: usize,
    /// [`MAX_TICKS`].
    pub ticks: usize,
    /// [`MAX_OPEN_TASKS`].
    pub open_tasks: usize,
    /// [`MAX_FIELDS_PER_SPAN`].
    pub fields_per_span: u32,
}

pub(crate) const LIMITS: Limits = Limits {
    names: MAX_NAMES,
    name_bytes: MAX_NAME_BYTES,
    lanes: MAX_LANES,
    gauges: MAX_GAUGES,
    ticks: MAX_TICKS,
    open_tasks: MAX_OPEN_TASKS,
    fields_per_span: MAX_FIELDS_PER_SPAN,
};
