//! What a viewer knows about a session, built frame by frame
//! ([`Model::on_frame`] is the only write path), with no UI and no clock,
//! so that the terminal view and a browser (wasm32) share it. It reads
//! the stream through the one stream reader (`typhon-live-reader`).
//!
//! - [`model`]: the [`Model`], and the reader's updates handed on;
//! - [`session`]: the connection, new sessions, restarts and reconnects,
//!   and the host clock;
//! - [`lanes`]: a row per lane, and each span's self time;
//! - [`cpu`]: each lane's CPU samples, read for a span and for a strip;
//! - [`tasks`]: task spans, which run in polls on any lanes;
//! - [`fields`]: spans' fields, and statistics grouped by them;
//! - [`ingest`]: a Block's events into the history, ticks and gauges;
//! - [`history`]: every record of the last stretch, in chunks within a
//!   byte budget;
//! - [`stats`]: per-name totals and exact distributions;
//! - [`profile`]: which code ran in a selection, its sampled stacks
//!   folded into a call tree;
//! - [`name_detail`]: what both viewers show of the selected name;
//! - [`logs`]: log events' texts, and the search both viewers run;
//! - [`marks`]: where the stream lost something or started over;
//! - [`triggers`]: a capture's triggers, where a view opens it;
//! - [`limits`]: what a peer can make the viewer keep;
//! - [`summary`]: what a view shows, computed on demand.
#![deny(missing_docs)]

pub mod allocated;
pub mod cpu;
pub mod fields;
pub mod history;
pub mod ingest;
pub mod lanes;
pub mod limits;
pub mod logs;
pub mod marks;
pub mod memory;
pub mod model;
pub mod name_detail;
pub mod profile;
pub mod session;
pub mod stats;
pub mod summary;
pub mod tasks;
pub mod triggers;

pub use cpu::{CpuCell, CpuIndex, CpuShare, NameCpu};
pub use fields::{FieldGroup, FieldRecord, FieldSummary};
pub use limits::{
    Limits, Refused, MAX_FIELDS_PER_SPAN, MAX_GAUGES, MAX_LANES, MAX_NAMES, MAX_NAME_BYTES,
    MAX_OPEN_TASKS, MAX_TICKS,
};
pub use logs::{LogLine, LogQuery, LogRow, LogSearch, Logs};
pub use memory::{MemoryReading, MemorySummary, SiteSummary};
pub use model::Model;
pub use name_detail::NameDetail;
pub use profile::{CallNode, Frame, FunctionSamples, Profile, Selection};
pub use session::Connection;
pub use summary::{
    GaugeSummary, HistorySummary, HotFunction, LaneSummary, OpenSummary, SpanCpu, SpanStats,
    SpanTotal, Summary, TickTally, TimelineInputs, HOTTEST_FUNCTIONS, PERCENTILE_SPANS, STALL_MS,
};
pub use tasks::{task_tracks, OpenTask, PollMark, TaskBar, TaskTracks};
pub use triggers::{Trigger, Triggers, MAX_TRIGGERS};

/// Host time the sliding windows cover (tick durations, top spans: the
/// latter from the per-name totals of the history's chunks that end in
/// it, so that no event pays for it twice).
const WINDOW_SECONDS: f64 = 2.0;
/// Gauge readings kept per gauge, for the sparkline.
const GAUGE_HISTORY: usize = 120;
/// The model's clock: the reader hands every time in ns.
const NS_PER_SECOND: u64 = 1_000_000_000;

/// `seconds` in ns.
fn ns(seconds: f64) -> u64 {
    (seconds * NS_PER_SECOND as f64) as u64
}
