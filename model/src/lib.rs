//! What a viewer knows about a session, built frame by frame
//! ([`Model::on_frame`] is the only write path): the live aggregates, the
//! history of every record ([`history`]) with its statistics ([`stats`]),
//! and the summary the screen, the summary lines and `--json` show.
//!
//! It reads the stream through the one stream reader
//! (`typhon-live-reader`), has no UI and reads no clock, so that the
//! terminal view and a browser (wasm32) share it.
#![deny(missing_docs)]

pub mod history;
pub mod marks;
pub mod stats;

use std::sync::Arc;

use history::{Chunk, GaugeRecord, History, InstantRecord, SpanRecord, TickRecord};
use marks::{Mark, MarkKind, Marks};

use std::collections::{BTreeMap, VecDeque};

// Seeded and fast: SipHash was a tenth of the model's time per event.
use foldhash::HashMap;
use std::time::Duration;

use serde::Serialize;
use typhon_live_core::{DecodeError, Event, Frame, GaugeValue, LaneKind, OpenSpan};
use typhon_live_reader::{Loss, Names, Reader, Session, State, Tally, Update};

/// Host time the sliding windows cover (tick durations, top spans: the
/// latter from the per-name totals of the history's chunks that end in
/// it, so that no event pays for it twice).
const WINDOW_SECONDS: f64 = 2.0;
/// Gauge readings kept per gauge, for the sparkline.
const GAUGE_HISTORY: usize = 120;
/// The model's clock: the reader hands every time in ns.
const NS_PER_SECOND: u64 = 1_000_000_000;

pub use typhon_live_reader::{MAX_LANES, MAX_NAMES, MAX_NAME_BYTES};
/// Gauges (distinct gauge names) kept at most.
pub const MAX_GAUGES: usize = 1024;
/// Ticks waiting for their end, and ticks in the window, at most.
pub const MAX_OPEN_TICKS: usize = 1024;
/// Ticks kept in the window at most.
pub const MAX_TICKS: usize = 100_000;

/// `seconds` in ns.
fn ns(seconds: f64) -> u64 {
    (seconds * NS_PER_SECOND as f64) as u64
}

/// A lane as the view keeps it: its row stays when its slot is freed
/// (its counts, its past on the timeline); its open spans are the
/// reader's.
#[derive(Clone, Debug, Default)]
struct Lane {
    name: u32,
    kind: Option<LaneKind>,
    events: u64,
    dropped: u64,
    /// The spans whose children ended before them (children end first),
    /// innermost last, each with its children's summed durations: for
    /// its self time. Nested spans end in order, so this is a stack.
    child_time: Vec<(u32, u64)>,
}

/// Spans whose children's time a lane tracks at most; past it (parents
/// that never arrive: dropped with their Block) the stack starts over.
const MAX_PENDING_PARENTS: usize = 4096;
/// Entries of spans whose end was lost that a span ending may find above
/// its own, and take off.
const LOST_ENDS_SKIPPED: usize = 7;

/// The connection, as the view reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Connection {
    /// Trying to connect.
    Connecting {
        /// Attempts so far, this one included.
        attempt: u32,
    },
    /// Receiving.
    Connected {
        /// The peer's address.
        peer: String,
    },
    /// The connection dropped; trying again.
    Reconnecting {
        /// Attempts so far, this one included.
        attempt: u32,
        /// How the connection dropped.
        reason: String,
    },
    /// The connection dropped; waiting before connecting again.
    Waiting {
        /// How the connection dropped.
        reason: String,
        /// The wait left before the next attempt.
        retry_in_ms: u64,
    },
    /// The session ended (Shutdown received, or gave up).
    Ended {
        /// Why.
        reason: String,
    },
    /// Read from a trace file.
    File {
        /// The file.
        path: String,
    },
}

/// What the viewer refused to keep because a cap was reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// Name definitions past [`MAX_NAMES`] or [`MAX_NAME_BYTES`].
    pub names: u64,
    /// Lanes past [`MAX_LANES`].
    pub lanes: u64,
    /// Gauges past [`MAX_GAUGES`].
    pub gauges: u64,
    /// Ticks past [`MAX_OPEN_TICKS`] or [`MAX_TICKS`].
    pub ticks: u64,
}

impl Refused {
    fn any(&self) -> bool {
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
}

const LIMITS: Limits = Limits {
    names: MAX_NAMES,
    name_bytes: MAX_NAME_BYTES,
    lanes: MAX_LANES,
    gauges: MAX_GAUGES,
    ticks: MAX_TICKS,
};

/// A viewer's running state.
///
/// It reads no clock: `now` is passed in, as a [`Duration`] since any
/// origin the front end keeps (the terminal's start, a page's
/// `performance.now()`), so that it runs where there is no clock to read.
pub struct Model {
    /// The connection's state, set by the source.
    pub connection: Connection,
    /// The latest thing worth telling the user, until replaced.
    pub notice: Option<String>,
    /// A Shutdown arrived.
    pub ended_cleanly: bool,
    /// The stream, as every consumer reads it: sessions, names, lanes,
    /// open spans, clocks, losses.
    reader: Reader,
    /// The reader's tally when this session began: a session's figures
    /// count from there.
    base: Tally,
    lanes: BTreeMap<u16, Lane>,
    /// What the model's own caps kept out (names are the reader's).
    refused: Refused,
    /// The first frame that broke a rule of the format, and why: kept
    /// when later notices replace it.
    first_damage: Option<String>,
    /// Latest host time seen (ns), and when it arrived: the view
    /// extrapolates from there while no event comes (a stall), so an open
    /// span's age keeps growing on screen.
    host_now: u64,
    host_now_at: Option<Duration>,
    tick_starts: HashMap<u64, u64>,
    /// (tick, start, duration, overrun), newest last.
    ticks: VecDeque<(u64, u64, u64, bool)>,
    gauges: BTreeMap<u32, VecDeque<f64>>,
    rates: VecDeque<(Duration, u64, u64)>,
    /// Every record of the last stretch of the stream.
    history: History,
    /// The chunk being filled.
    chunk: Chunk,
    /// Seconds and bytes of history to keep.
    history_seconds: f64,
    history_bytes: usize,
    /// Where the stream lost something or started over.
    marks: Marks,
    /// A mark to place at the next host time seen (a new session's
    /// clock is not known before its first event).
    mark_pending: Option<MarkKind>,
}

impl Default for Model {
    fn default() -> Self {
        Model::with_history(
            history::DEFAULT_HISTORY_SECONDS,
            history::DEFAULT_HISTORY_BYTES,
        )
    }
}

impl Model {
    /// A model keeping `seconds` of history within `bytes`.
    pub fn with_history(seconds: f64, bytes: usize) -> Model {
        Model {
            connection: Connection::Connecting { attempt: 1 },
            notice: None,
            ended_cleanly: false,
            reader: Reader::new(),
            base: Tally::default(),
            lanes: BTreeMap::new(),
            refused: Refused::default(),
            first_damage: None,
            host_now: 0,
            host_now_at: None,
            tick_starts: HashMap::default(),
            ticks: VecDeque::new(),
            gauges: BTreeMap::new(),
            rates: VecDeque::new(),
            history: History::new(ns(seconds), bytes),
            chunk: Chunk::default(),
            history_seconds: seconds,
            history_bytes: bytes,
            marks: Marks::default(),
            mark_pending: None,
        }
    }

    /// Where the stream lost something or started over, oldest first.
    pub fn marks(&self) -> &Marks {
        &self.marks
    }

    /// What the model keeps of the stream.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Names by id.
    pub fn names(&self) -> &Names {
        self.reader.state().names()
    }

    /// The session of the last Init, if one was read.
    pub fn session(&self) -> Option<&Session> {
        self.reader.state().session()
    }

    /// What the reader counted this session (since its Init).
    fn counted(&self) -> Tally {
        self.reader.state().tally().since(&self.base)
    }

    /// Events read this session.
    pub fn events(&self) -> u64 {
        self.counted().events
    }

    /// Frames missing by sequence number this session.
    pub fn frames_dropped(&self) -> u64 {
        self.counted().frames_missed
    }

    /// Events the stream says were lost this session.
    pub fn events_dropped(&self) -> u64 {
        self.counted().events_dropped
    }

    /// Restarts seen: new session ids, and sessions that started over
    /// under their own.
    pub fn restarts(&self) -> u32 {
        let tally = self.reader.state().tally();
        (tally.restarts + tally.sessions.saturating_sub(1)) as u32
    }

    /// What the timeline draws from, as of `now`: the history's chunks
    /// and a copy of the one being filled, the lanes (main first, then
    /// workers and pools, then the rest) with their open spans, the host
    /// clock.
    pub fn timeline_inputs(&self, now: Duration) -> TimelineInputs {
        let mut chunks: Vec<Arc<Chunk>> = self.history.chunks().iter().cloned().collect();
        if self.chunk.records() > 0 {
            chunks.push(Arc::new(self.chunk.clone()));
        }
        let order = |kind: Option<LaneKind>| match kind {
            Some(LaneKind::Main) => 0,
            Some(LaneKind::Worker | LaneKind::Pool) => 1,
            _ => 2,
        };
        let mut lanes: Vec<_> = self.lanes.iter().collect();
        lanes.sort_by_key(|(&id, lane)| (order(lane.kind), id));
        TimelineInputs {
            chunks,
            lanes: lanes
                .into_iter()
                .map(|(&id, lane)| (id, self.name(lane.name), self.open_spans(id).to_vec()))
                .collect(),
            now: self.host_time(now),
            ticks_per_second: NS_PER_SECOND,
            marks: self.marks.iter().copied().collect(),
        }
    }

    /// The spans open on lane `id`, as the reader keeps them.
    fn open_spans(&self, id: u16) -> &[OpenSpan] {
        self.reader
            .state()
            .lanes()
            .get(&id)
            .map_or(&[], |lane| lane.open.as_slice())
    }

    /// The name of id `id`, or a placeholder until its definition arrives.
    pub fn name(&self, id: u32) -> String {
        self.names().show(id).into_owned()
    }

    fn seconds(&self, ns: u64) -> f64 {
        ns as f64 / NS_PER_SECOND as f64
    }

    /// Takes in one frame, which arrived at `now`. Errors name a
    /// malformed payload; the model keeps what it had, and says so in its
    /// notice.
    pub fn on_frame(&mut self, frame: &Frame<'_>, now: Duration) -> Result<(), DecodeError> {
        // Taken out while its updates go into the model.
        let mut reader = std::mem::take(&mut self.reader);
        let result = reader.read(frame, |state, update| match update {
            // The one update of every event, straight to its handling.
            Update::Event { lane, event } => self.on_event(lane, &event, now),
            other => self.update(state, other, now),
        });
        self.reader = reader;
        self.close_chunk_if_due();
        if self.reader.state().session().is_none() && self.notice.is_none() {
            self.notice = Some(
                "no Init yet (joined mid-stream, or it was damaged): names show as #id until the next".into(),
            );
        }
        result.inspect_err(|error| {
            let said = format!("damaged frame seq {}: {error}", frame.seq);
            self.first_damage.get_or_insert_with(|| said.clone());
            self.notice = Some(said);
        })
    }

    fn update(&mut self, state: &State, update: Update<'_>, now: Duration) {
        match update {
            Update::JoinedMidStream { skipped } => {
                self.notice = Some(format!(
                    "joined mid-stream ({skipped} bytes skipped to the first whole frame): \
                     names show as #id until the next Init"
                ));
            }
            Update::NewSession { previous } => {
                if previous.is_some() {
                    self.reset_session(state);
                    self.mark_pending = Some(MarkKind::Restart);
                    self.notice = Some(format!(
                        "engine restarted: new session {:016x}",
                        state.session().map_or(0, |s| s.id)
                    ));
                } else if state.tally().frames_before_init > 0 {
                    self.notice = Some(format!(
                        "Init received after {} frames without one: names resolved",
                        state.tally().frames_before_init
                    ));
                }
            }
            Update::Lanes | Update::CatchUp { .. } => {
                // A lane freed since keeps its row; a slot used again
                // takes the new name.
                for lane in state.lanes().values() {
                    if let Some(row) = self.lane(lane.info.id) {
                        row.name = lane.info.name;
                        row.kind = Some(lane.info.kind);
                    }
                }
                if let Update::CatchUp { time } = update {
                    self.advance_host_now(time, now);
                }
            }
            Update::Restarted { from, to } => self.clock_went_back(from, to, now),
            Update::Lost(Loss::Dropped { lane, events }) => {
                if let Some(row) = self.lane(lane) {
                    row.dropped = row.dropped.saturating_add(u64::from(events));
                }
                self.marks
                    .add(self.host_now, MarkKind::Dropped, u64::from(events));
            }
            Update::Lost(Loss::Gap { frames }) => {
                self.marks.add(self.host_now, MarkKind::Gap, frames);
            }
            Update::Lost(Loss::Damaged { events }) => {
                self.marks
                    .add(self.host_now, MarkKind::Damaged, u64::from(events));
            }
            Update::Lost(Loss::AtShutdown { events }) => {
                self.marks.add(self.host_now, MarkKind::Dropped, events);
            }
            Update::Shutdown { .. } => {
                self.ended_cleanly = true;
                if self.chunk.records() > 0 {
                    self.close_chunk();
                }
                self.connection = Connection::Ended {
                    reason: "the session ended (Shutdown)".into(),
                };
            }
            _ => {}
        }
    }

    /// Lane `id`'s row, made if there is room for one more (one search
    /// of the table: this is on every event's way).
    fn lane(&mut self, id: u16) -> Option<&mut Lane> {
        let full = self.lanes.len() >= MAX_LANES;
        match self.lanes.entry(id) {
            std::collections::btree_map::Entry::Occupied(row) => Some(row.into_mut()),
            std::collections::btree_map::Entry::Vacant(_) if full => {
                self.refused.lanes += 1;
                None
            }
            std::collections::btree_map::Entry::Vacant(row) => Some(row.insert(Lane::default())),
        }
    }

    fn advance_host_now(&mut self, time: u64, now: Duration) {
        if let Some(kind) = self.mark_pending.take() {
            self.marks.add(time, kind, 1);
        }
        if time > self.host_now {
            self.host_now = time;
            self.host_now_at = Some(now);
        }
    }

    /// The connection was made again after one was lost: if the first
    /// time read on it is far behind, the process restarted meanwhile.
    pub fn reconnected(&mut self) {
        self.reader.reconnected();
        self.marks.add(self.host_now, MarkKind::Reconnect, 1);
    }

    /// The process restarted without a new session id (the reader
    /// tells): the names and lanes of its Init stay; the time windows and
    /// the history start over.
    fn clock_went_back(&mut self, from: u64, to: u64, now: Duration) {
        self.notice = Some(format!(
            "restarted: the clock went back from {:.3} s to {:.3} s \
             under the same session id",
            self.seconds(from),
            self.seconds(to)
        ));
        self.host_now = to;
        self.host_now_at = Some(now);
        self.tick_starts.clear();
        self.ticks.clear();
        for lane in self.lanes.values_mut() {
            lane.child_time.clear();
        }
        // The timeline is by time: the old run's records would overlap
        // the new one's.
        self.history.clear();
        self.chunk = Chunk::default();
        self.marks = Marks::default();
        self.marks.add(to, MarkKind::Restart, 1);
    }

    /// Keeps `event` in the chunk being filled (ticks go in at their end).
    fn keep(&mut self, lane: u16, event: &Event, self_time: u64) {
        match *event {
            Event::Span {
                start,
                duration,
                name,
                id,
                parent,
                arg,
            } => self.chunk.push_span(
                SpanRecord {
                    start,
                    duration,
                    arg: arg.unwrap_or(0),
                    id,
                    parent,
                    name,
                    lane,
                    has_arg: arg.is_some(),
                },
                self_time,
            ),
            Event::Instant {
                time,
                name,
                payload,
            } => self.chunk.push_instant(InstantRecord {
                time,
                payload,
                name,
                lane,
            }),
            Event::Gauge { time, gauge, value } => self.chunk.push_gauge(GaugeRecord {
                time,
                value: match value {
                    GaugeValue::Int(v) => v as f64,
                    GaugeValue::Float(v) => v,
                },
                name: gauge,
            }),
            Event::TickStart { .. } | Event::TickEnd { .. } => {}
        }
        if self.chunk.records() >= history::CHUNK_RECORDS {
            self.close_chunk();
        }
    }

    /// The chunk being filled goes into the history once it covers
    /// [`history::CHUNK_SECONDS`] of host time.
    fn close_chunk_if_due(&mut self) {
        let span = ns(history::CHUNK_SECONDS);
        if self.chunk.records() > 0 && self.host_now.saturating_sub(self.chunk.first) >= span {
            self.close_chunk();
        }
    }

    fn close_chunk(&mut self) {
        let next = Chunk::sized_like(&self.chunk);
        self.history.push(std::mem::replace(&mut self.chunk, next));
        if let Some(start) = self.history.starts_at() {
            self.marks.forget_before(start);
        }
    }

    /// The stream is over (a file read to its end): what was being
    /// collected goes into the history.
    pub fn flush_history(&mut self) {
        if self.chunk.records() > 0 {
            self.close_chunk();
        }
    }

    /// The host clock now, extrapolated from the last time seen while the
    /// session is live.
    fn host_time(&self, now: Duration) -> u64 {
        match (self.host_now_at, &self.connection) {
            (Some(at), Connection::Connected { .. }) => {
                let elapsed = now.saturating_sub(at).as_nanos();
                self.host_now
                    .saturating_add(u64::try_from(elapsed).unwrap_or(u64::MAX))
            }
            _ => self.host_now,
        }
    }

    /// A new session: what the model knew of the last one goes, but for
    /// the connection, the notice and what the caps kept out; its figures
    /// count from here.
    fn reset_session(&mut self, state: &State) {
        let keep = Model {
            connection: self.connection.clone(),
            refused: self.refused,
            notice: self.notice.take(),
            reader: std::mem::take(&mut self.reader),
            base: *state.tally(),
            ..Model::with_history(self.history_seconds, self.history_bytes)
        };
        *self = keep;
    }

    fn on_event(&mut self, lane: u16, event: &Event, now: Duration) {
        let row = self.lane(lane);
        // A span's time outside its children, which ended before it.
        let mut self_time = 0;
        if let Some(row) = row {
            row.events += 1;
            if let Event::Span {
                id,
                parent,
                duration,
                ..
            } = *event
            {
                // Its children's sum is on top, or just under entries of
                // spans whose ends were lost (a dropped Block): those go.
                // Only the top few are looked at: most spans are leaves.
                let pending = row.child_time.len();
                let found = row
                    .child_time
                    .iter()
                    .rev()
                    .take(LOST_ENDS_SKIPPED + 1)
                    .position(|&(p, _)| p == id);
                let children = match found {
                    Some(from_top) => {
                        let at = pending - 1 - from_top;
                        let sum = row.child_time[at].1;
                        row.child_time.truncate(at);
                        sum
                    }
                    None => 0,
                };
                self_time = duration.saturating_sub(children);
                if parent != 0 {
                    match row.child_time.last_mut() {
                        Some((p, sum)) if *p == parent => *sum = sum.saturating_add(duration),
                        _ => {
                            if row.child_time.len() >= MAX_PENDING_PARENTS {
                                row.child_time.clear();
                            }
                            row.child_time.push((parent, duration));
                        }
                    }
                }
            }
        }
        self.keep(lane, event, self_time);
        match *event {
            Event::Span { .. } => {}
            Event::Gauge { gauge, value, .. } => {
                let v = match value {
                    GaugeValue::Int(v) => v as f64,
                    GaugeValue::Float(v) => v,
                };
                if !self.gauges.contains_key(&gauge) && self.gauges.len() >= MAX_GAUGES {
                    self.refused.gauges += 1;
                } else {
                    let history = self.gauges.entry(gauge).or_default();
                    history.push_back(v);
                    if history.len() > GAUGE_HISTORY {
                        history.pop_front();
                    }
                }
            }
            Event::TickStart { time, tick } => {
                if self.tick_starts.len() < MAX_OPEN_TICKS {
                    self.tick_starts.insert(tick, time);
                } else {
                    self.refused.ticks += 1;
                }
            }
            Event::TickEnd {
                time,
                tick,
                overrun,
            } => {
                if let Some(start) = self.tick_starts.remove(&tick) {
                    self.chunk.push_tick(TickRecord {
                        tick,
                        start,
                        end: time,
                        overrun,
                    });
                    if self.ticks.len() >= MAX_TICKS {
                        self.ticks.pop_front();
                        self.refused.ticks += 1;
                    }
                    self.ticks
                        .push_back((tick, start, time.saturating_sub(start), overrun));
                }
            }
            Event::Instant { .. } => {}
        }
        self.advance_host_now(event.end_time(), now);
        let horizon = self.host_now.saturating_sub(ns(WINDOW_SECONDS));
        while self.ticks.front().is_some_and(|t| t.1 < horizon) {
            self.ticks.pop_front();
        }
        // A tick whose end never came (dropped frame) must not pile up.
        if self.tick_starts.len() > 1024 {
            self.tick_starts.retain(|_, start| *start >= horizon);
        }
    }

    /// The figures a view shows, as of wall-clock `now`.
    pub fn summary(&mut self, now: Duration) -> Summary {
        let counted = self.counted();
        self.rates.push_back((now, counted.events, counted.bytes));
        while self.rates.len() > 2 && now.saturating_sub(self.rates[0].0) > Duration::from_secs(2) {
            self.rates.pop_front();
        }
        self.summarise(now)
    }

    fn history_summary(&self) -> HistorySummary {
        let chunks = self.history.chunks();
        let seconds = match (chunks.front(), chunks.back()) {
            (Some(first), Some(last)) => self.seconds(last.last.saturating_sub(first.first)),
            _ => 0.0,
        };
        HistorySummary {
            seconds,
            records: self.history.records(),
            bytes: self.history.bytes(),
            budget_bytes: self.history.budget(),
            evicted_records: self.history.evicted_records(),
        }
    }

    /// Per name over the history: the totals add up as chunks come and go;
    /// the maximum is the largest of the chunks' held.
    pub fn span_stats(&self) -> Vec<SpanStats> {
        let mut max: HashMap<u32, u64> = HashMap::default();
        for chunk in self.history.chunks() {
            for (&name, t) in &chunk.totals {
                let m = max.entry(name).or_default();
                *m = (*m).max(t.max);
            }
        }
        let ms = |ticks: u64| self.seconds(ticks) * 1e3;
        let mut stats: Vec<SpanStats> = self
            .history
            .totals()
            .iter()
            .map(|(&name, t)| SpanStats {
                id: name,
                name: self.name(name),
                count: t.count,
                total_ms: ms(t.total),
                self_ms: ms(t.self_time),
                mean_ms: ms(t.total) / t.count.max(1) as f64,
                max_ms: ms(max.get(&name).copied().unwrap_or(0)),
                p50_ms: None,
                p90_ms: None,
                p99_ms: None,
            })
            .collect();
        stats.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms).then(a.name.cmp(&b.name)));
        stats
    }

    /// The summary as of `now` as one line: JSON (with the span
    /// percentiles) for `--json`, else the text form.
    pub fn summary_line(&mut self, now: Duration, json: bool) -> String {
        let mut summary = self.summary(now);
        if json {
            self.fill_percentiles(&mut summary.span_stats);
            serde_json::to_string(&summary).unwrap_or_default()
        } else {
            summary.line()
        }
    }

    /// Fills in every name's exact percentiles over the history, in one
    /// pass over its spans, unless it holds more than
    /// [`PERCENTILE_SPANS`] (then they stay `None`: the screen computes
    /// them for the selected name only).
    pub fn fill_percentiles(&self, stats: &mut [SpanStats]) {
        let chunks = self.history.chunks();
        if chunks.iter().map(|c| c.spans.len()).sum::<usize>() > PERCENTILE_SPANS {
            return;
        }
        let mut durations: HashMap<u32, Vec<u64>> = HashMap::default();
        for span in chunks.iter().flat_map(|c| c.spans.iter()) {
            durations.entry(span.name).or_default().push(span.duration);
        }
        let ms = |ticks: u64| self.seconds(ticks) * 1e3;
        for s in stats {
            if let Some(d) = durations.get_mut(&s.id) {
                let d = stats::Distribution::of(d, 0, 0);
                (s.p50_ms, s.p90_ms, s.p99_ms) =
                    (Some(ms(d.p50)), Some(ms(d.p90)), Some(ms(d.p99)));
            }
        }
    }

    fn summarise(&self, now: Duration) -> Summary {
        let (t0, e0, b0) = self.rates[0];
        let elapsed = now.saturating_sub(t0).as_secs_f64();
        let counted = self.counted();
        let init_seen = self.session().is_some();
        let refused = Refused {
            names: counted.refused.names,
            ..self.refused
        };
        let per_second = |delta: u64| {
            if elapsed > 0.0 {
                delta as f64 / elapsed
            } else {
                0.0
            }
        };

        let mut durations: Vec<u64> = self.ticks.iter().map(|t| t.2).collect();
        if !init_seen {
            // The clock's rate comes with the Init: no times before it.
            durations.clear();
        }
        durations.sort_unstable();
        let pick = |q: f64| {
            durations
                .get(((durations.len() as f64 - 1.0) * q).round() as usize)
                .map(|&d| self.seconds(d) * 1e3)
        };
        let tick_rate = match (self.ticks.front(), self.ticks.back()) {
            (Some(first), Some(last)) if last.1 > first.1 && init_seen => {
                (self.ticks.len() - 1) as f64 / self.seconds(last.1 - first.1)
            }
            _ => 0.0,
        };

        // The chunks that end in the window, the one being filled too.
        let horizon = self.host_now.saturating_sub(ns(WINDOW_SECONDS));
        let recent = self.history.chunks().iter().rev().map(|c| &**c);
        let in_window =
            std::iter::once(&self.chunk).chain(recent.take_while(|c| c.last >= horizon));
        let mut totals: HashMap<u32, (u64, u64)> = HashMap::default();
        for chunk in in_window {
            for (&name, t) in &chunk.totals {
                let entry = totals.entry(name).or_default();
                entry.0 = entry.0.saturating_add(t.total);
                entry.1 = entry.1.saturating_add(t.count);
            }
        }
        let mut top: Vec<SpanTotal> = totals
            .into_iter()
            .map(|(name, (total, count))| SpanTotal {
                name: self.name(name),
                total_ms: self.seconds(total) * 1e3,
                count,
            })
            .collect();
        top.sort_by(|a, b| {
            b.total_ms
                .total_cmp(&a.total_ms)
                .then_with(|| a.name.cmp(&b.name))
        });
        top.truncate(10);

        let lanes = self
            .lanes
            .iter()
            .map(|(&id, lane)| LaneSummary {
                id,
                name: self.name(lane.name),
                kind: match lane.kind {
                    Some(LaneKind::Main) => "main",
                    Some(LaneKind::Worker) => "worker",
                    Some(LaneKind::Pool) => "pool",
                    _ => "other",
                },
                events: lane.events,
                dropped: lane.dropped,
            })
            .collect();
        let host_time = self.host_time(now);
        let mut open: Vec<OpenSummary> = self
            .reader
            .state()
            .lanes()
            .values()
            .flat_map(|lane| {
                lane.open.iter().map(move |span| OpenSummary {
                    lane: self.name(lane.info.name),
                    span: self.name(span.name),
                    open_ms: self.seconds(host_time.saturating_sub(span.start)) * 1e3,
                })
            })
            .collect();
        open.sort_by(|a, b| b.open_ms.total_cmp(&a.open_ms));
        let gauges = self
            .gauges
            .iter()
            .map(|(&id, history)| GaugeSummary {
                name: self.name(id),
                value: history.back().copied().unwrap_or(0.0),
                history: history.iter().copied().collect(),
            })
            .collect();
        Summary {
            connection: self.connection.clone(),
            session_id: self.session().map(|s| format!("{:016x}", s.id)),
            process: self
                .session()
                .map_or_else(String::new, |s| s.process_name.clone()),
            restarts: self.restarts(),
            notice: self.notice.clone(),
            lanes,
            tick_rate_hz: tick_rate,
            tick_p50_ms: pick(0.5),
            tick_p99_ms: pick(0.99),
            tick_max_ms: durations.last().map(|&d| self.seconds(d) * 1e3),
            overruns: self.ticks.iter().filter(|t| t.3).count() as u64,
            top_spans: top,
            open_spans: open,
            gauges,
            events: counted.events,
            events_per_second: per_second(counted.events.saturating_sub(e0)),
            bytes_per_second: per_second(counted.bytes.saturating_sub(b0)),
            bytes_per_event: if counted.block_records > 0 {
                counted.block_bytes as f64 / counted.block_records as f64
            } else {
                0.0
            },
            frames: counted.frames,
            frames_dropped: counted.frames_missed,
            unknown_frames: counted.frames_unknown,
            events_dropped: counted.events_dropped,
            frames_damaged: counted.frames_damaged,
            events_damaged: counted.events_damaged,
            first_damage: self.first_damage.clone(),
            reconnects: counted.reconnects as u32,
            refused,
            limits: LIMITS,
            history: self.history_summary(),
            span_stats: self.span_stats(),
        }
    }
}

/// One lane in a summary.
#[derive(Clone, Debug, Serialize)]
pub struct LaneSummary {
    /// The lane's slot.
    pub id: u16,
    /// Its name (`#id` until defined).
    pub name: String,
    /// Its kind: `main`, `worker` or `other`.
    pub kind: &'static str,
    /// Events read on it.
    pub events: u64,
    /// Events lost on it.
    pub dropped: u64,
}

/// A span name's total time over the window.
#[derive(Clone, Debug, Serialize)]
pub struct SpanTotal {
    /// The span's name.
    pub name: String,
    /// Time in it over the window, in milliseconds.
    pub total_ms: f64,
    /// How many ended in the window.
    pub count: u64,
}

/// A span open right now.
#[derive(Clone, Debug, Serialize)]
pub struct OpenSummary {
    /// The lane's name.
    pub lane: String,
    /// The span's name.
    pub span: String,
    /// How long it has been open, in milliseconds.
    pub open_ms: f64,
}

/// A gauge's latest value and recent history.
#[derive(Clone, Debug, Serialize)]
pub struct GaugeSummary {
    /// The gauge's name.
    pub name: String,
    /// Its latest reading.
    pub value: f64,
    /// Its recent readings, oldest first.
    pub history: Vec<f64>,
}

/// Everything a view shows.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The connection's state.
    pub connection: Connection,
    /// The session id, in hex.
    pub session_id: Option<String>,
    /// The process name.
    pub process: String,
    /// Restarts seen.
    pub restarts: u32,
    /// The latest notice.
    pub notice: Option<String>,
    /// Every lane.
    pub lanes: Vec<LaneSummary>,
    /// Ticks per second over the window (0 before the Init).
    pub tick_rate_hz: f64,
    /// Tick duration percentiles and maximum over the window.
    pub tick_p50_ms: Option<f64>,
    /// See `tick_p50_ms`.
    pub tick_p99_ms: Option<f64>,
    /// See `tick_p50_ms`.
    pub tick_max_ms: Option<f64>,
    /// Ticks flagged as overrunning in the window.
    pub overruns: u64,
    /// Span names by total time over the window, most first.
    pub top_spans: Vec<SpanTotal>,
    /// Spans open now, longest first.
    pub open_spans: Vec<OpenSummary>,
    /// Every gauge.
    pub gauges: Vec<GaugeSummary>,
    /// Events read.
    pub events: u64,
    /// Events per second, over the last two seconds.
    pub events_per_second: f64,
    /// Bytes per second, over the last two seconds.
    pub bytes_per_second: f64,
    /// Encoded bytes per event in Blocks, envelope excluded.
    pub bytes_per_event: f64,
    /// Frames read.
    pub frames: u64,
    /// Frames missing by sequence number.
    pub frames_dropped: u64,
    /// Frames of a newer writer's kinds, skipped.
    pub unknown_frames: u64,
    /// Events the stream says were lost.
    pub events_dropped: u64,
    /// Frames that arrived whole and were refused or read only in part.
    pub frames_damaged: u64,
    /// Events such Blocks stated that could not be read.
    pub events_damaged: u64,
    /// The first such frame, and why.
    pub first_damage: Option<String>,
    /// Connections made again after one was lost.
    pub reconnects: u32,
    /// What a cap kept out, and the caps.
    pub refused: Refused,
    /// The caps.
    pub limits: Limits,
    /// What the viewer keeps of the stream.
    pub history: HistorySummary,
    /// Per span name over the history, most total time first.
    pub span_stats: Vec<SpanStats>,
}

/// What the timeline draws from (see [`Model::timeline_inputs`]).
pub struct TimelineInputs {
    /// Chunks, oldest first.
    pub chunks: Vec<Arc<Chunk>>,
    /// Lanes in drawing order: id, name, open spans outermost first.
    pub lanes: Vec<(u16, String, Vec<OpenSpan>)>,
    /// Host time now.
    pub now: u64,
    /// Host ticks per second.
    pub ticks_per_second: u64,
    /// Where the stream lost something or started over, oldest first.
    pub marks: Vec<Mark>,
}

/// What the viewer keeps of the stream, as `--json` reports it.
#[derive(Clone, Debug, Serialize)]
pub struct HistorySummary {
    /// Host seconds from the oldest record held to the newest.
    pub seconds: f64,
    /// Records (spans, instants, gauge readings, ticks) held.
    pub records: usize,
    /// Bytes they take, and the budget.
    pub bytes: usize,
    /// See `bytes`.
    pub budget_bytes: usize,
    /// Records that left it, over its budget or age.
    pub evicted_records: u64,
}

/// One span name's statistics over the history.
#[derive(Clone, Debug, Serialize)]
pub struct SpanStats {
    /// The span's name id.
    #[serde(skip)]
    pub id: u32,
    /// The span's name.
    pub name: String,
    /// Spans that ended.
    pub count: u64,
    /// Their total time, in milliseconds.
    pub total_ms: f64,
    /// Their time outside their child spans, in milliseconds.
    pub self_ms: f64,
    /// The mean duration, in milliseconds.
    pub mean_ms: f64,
    /// The longest, in milliseconds.
    pub max_ms: f64,
    /// Exact nearest-rank percentiles over the history, in milliseconds:
    /// filled in for `--json` ([`Model::fill_percentiles`]) while the
    /// history holds at most [`PERCENTILE_SPANS`] spans, else `null`.
    pub p50_ms: Option<f64>,
    /// See `p50_ms`.
    pub p90_ms: Option<f64>,
    /// See `p50_ms`.
    pub p99_ms: Option<f64>,
}

/// Spans the history may hold for [`Model::fill_percentiles`] to read them
/// all: about 50 ms of sorting once a second at most.
pub const PERCENTILE_SPANS: usize = 1 << 20;

impl Summary {
    /// The one-line form, for a view that is not a terminal.
    pub fn line(&self) -> String {
        let state = match &self.connection {
            Connection::Connecting { attempt } => format!("connecting (attempt {attempt})"),
            Connection::Connected { peer } => format!("connected to {peer}"),
            Connection::Reconnecting { attempt, reason } => {
                format!("reconnecting (attempt {attempt}): {reason}")
            }
            Connection::Waiting {
                reason,
                retry_in_ms,
            } => {
                format!(
                    "lost: {reason}; reconnecting in {:.1} s",
                    *retry_in_ms as f64 / 1e3
                )
            }
            Connection::Ended { reason } => format!("ended: {reason}"),
            Connection::File { path } => format!("file {path}"),
        };
        let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        format!(
            "{state} | {} lanes | tick {:.1} Hz p50 {} p99 {} max {} ms | {:.0} ev/s {:.0} B/s {:.1} B/ev | dropped {} frames {} events{}{}",
            self.lanes.len(),
            self.tick_rate_hz,
            ms(self.tick_p50_ms),
            ms(self.tick_p99_ms),
            ms(self.tick_max_ms),
            self.events_per_second,
            self.bytes_per_second,
            self.bytes_per_event,
            self.frames_dropped,
            self.events_dropped,
            self.damage_text().map_or(String::new(), |t| format!(" | {t}")),
            self.open_spans.first().map_or(String::new(), |s| format!(" | open: {} on {} for {:.0} ms", s.span, s.lane, s.open_ms)),
        ) + &self.refused_text().map_or(String::new(), |t| format!(" | {t}"))
    }

    /// Whether anything was lost: frames missing or damaged, or events the
    /// stream says were dropped. (Not a sum: a peer may claim `u64::MAX`.)
    pub fn lost_any(&self) -> bool {
        self.frames_dropped > 0 || self.events_dropped > 0 || self.frames_damaged > 0
    }

    /// Frames refused or read in part, if any: "damaged 1 frames 3 events".
    pub fn damage_text(&self) -> Option<String> {
        (self.frames_damaged > 0).then(|| {
            format!(
                "damaged {} frames {} events",
                self.frames_damaged, self.events_damaged
            )
        })
    }

    /// What the caps kept out, if anything: "refused 12 names (cap 65536)".
    pub fn refused_text(&self) -> Option<String> {
        if !self.refused.any() {
            return None;
        }
        let (r, l) = (self.refused, self.limits);
        let parts: Vec<String> = [
            (r.names, "names", l.names),
            (r.lanes, "lanes", l.lanes),
            (r.gauges, "gauges", l.gauges),
            (r.ticks, "ticks", l.ticks),
        ]
        .iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, what, cap)| format!("{n} {what} (cap {cap})"))
        .collect();
        Some(format!("refused {}", parts.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use typhon_live_core::init::write_init;
    use typhon_live_core::{Metadata, NameTable};

    use super::*;
    use typhon_live_tests::{each_frame, nested_stream, VecNames};

    /// Every frame of `bytes` into `model`.
    fn feed(model: &mut Model, bytes: &[u8]) {
        each_frame(bytes, |frame| {
            model.on_frame(frame, Duration::ZERO).unwrap()
        });
    }

    fn init(session_id: u64) -> Vec<u8> {
        let names: NameTable<4, 64> = NameTable::new();
        let mut out = vec![0u8; 1024];
        let meta = Metadata {
            session_id,
            ticks_per_second: 1000,
            ..Metadata::default()
        };
        let n = write_init(&mut out, 0, &meta, &names, std::iter::empty()).unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn a_new_session_id_is_a_restart_the_same_one_a_reconnect() {
        let mut model = Model::default();
        feed(&mut model, &init(7));
        feed(&mut model, &init(7));
        assert_eq!(model.restarts(), 0);
        assert_eq!(model.notice, None);
        feed(&mut model, &init(8));
        assert_eq!(model.restarts(), 1);
        assert!(model
            .notice
            .as_deref()
            .is_some_and(|n| n.contains("restarted")));
        assert_eq!(model.session().map(|s| s.id), Some(8));
    }

    fn catchup(seq: u32, time: u64) -> Vec<u8> {
        let lanes = typhon_live_core::Lanes::<1, 16>::new();
        let names: NameTable<4, 64> = NameTable::new();
        let mut out = vec![0u8; 1024];
        let n =
            typhon_live_core::catchup::write_catchup(&mut out, seq, time, u32::MAX, &lanes, &names)
                .unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn the_same_session_id_with_a_clock_that_went_back_is_a_restart() {
        let mut model = Model::default();
        // A device announcing itself again: time goes on.
        for (init_at, time) in [(0, 1_000), (1, 3_000)] {
            feed(&mut model, &init(7));
            feed(&mut model, &catchup(init_at, time));
        }
        assert_eq!(model.restarts(), 0);
        // The same device rebooted: same id, its clock from zero again.
        feed(&mut model, &init(7));
        feed(&mut model, &catchup(0, 40));
        assert_eq!(model.restarts(), 1);
        assert!(model
            .notice
            .as_deref()
            .is_some_and(|n| n.contains("clock went back from 3.000 s to 0.040 s")));
        // Time goes on from there: no second restart.
        feed(&mut model, &catchup(1, 1_040));
        assert_eq!(model.restarts(), 1);
    }

    #[test]
    fn losses_restarts_and_reconnects_are_marked_where_they_happened() {
        let kinds = |model: &Model| -> Vec<(u64, MarkKind, u64)> {
            model
                .marks()
                .iter()
                .map(|m| (m.time, m.kind, m.count))
                .collect()
        };
        let mut model = Model::default();
        feed(&mut model, &init(7));
        // 1 kHz clock: 2 000 ticks are 2 s. Catch-ups 1 and 2 never came.
        feed(&mut model, &catchup(0, 2_000));
        feed(&mut model, &catchup(3, 2_500));
        model.reconnected();
        assert_eq!(
            kinds(&model),
            [
                (2_000_000_000, MarkKind::Gap, 2),
                (2_500_000_000, MarkKind::Reconnect, 1)
            ]
        );
        // A new session: the old marks go, and its restart is placed at
        // its first time.
        feed(&mut model, &init(8));
        assert_eq!(kinds(&model), []);
        feed(&mut model, &catchup(0, 30));
        assert_eq!(kinds(&model), [(30_000_000, MarkKind::Restart, 1)]);
    }

    #[test]
    fn the_history_keeps_every_span_and_knows_self_times() {
        let mut model = Model::default();
        feed(&mut model, &nested_stream(0..100));
        model.close_chunk();
        let stats = model.span_stats();
        let names: Vec<&str> = stats.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["outer", "inner"]);
        let (outer, inner) = (&stats[0], &stats[1]);
        assert_eq!((outer.count, inner.count), (100, 200));
        // 900 µs each, 300 of them in the two inner spans.
        assert!((outer.total_ms - 90.0).abs() < 1e-9, "{outer:?}");
        assert!((outer.self_ms - 60.0).abs() < 1e-9, "{outer:?}");
        assert!((inner.self_ms - inner.total_ms).abs() < 1e-9, "{inner:?}");
        assert!((inner.max_ms - 0.2).abs() < 1e-9, "{inner:?}");
        // For --json: exact percentiles of every name.
        let mut stats = stats;
        model.fill_percentiles(&mut stats);
        let close = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < 1e-9);
        assert!(
            close(stats[1].p50_ms, 0.1) && close(stats[1].p99_ms, 0.2),
            "{stats:?}"
        );
        assert!(close(stats[0].p90_ms, 0.9), "{stats:?}");
        // Exact percentiles over the history: half 100 µs, half 200 (in
        // ns: the model's clock).
        let inner_id = 2;
        let d = model.history().distribution(inner_id);
        assert_eq!(
            (d.count, d.p50, d.p90, d.max),
            (200, 100_000, 200_000, 200_000)
        );
        // Every tick, the flagged one among them.
        let ticks: Vec<_> = model
            .history()
            .chunks()
            .iter()
            .flat_map(|c| c.ticks.iter().copied())
            .collect();
        assert_eq!(ticks.len(), 100);
        assert_eq!(
            ticks
                .iter()
                .filter(|t| t.overrun)
                .map(|t| t.tick)
                .collect::<Vec<_>>(),
            [42]
        );
        assert_eq!(model.history().records(), 400);
    }

    #[test]
    fn a_long_stream_stays_within_the_history_budget() {
        let budget = 64 << 10;
        let mut model = Model::with_history(60.0, budget);
        let mut peak = 0;
        for part in 0..10u64 {
            feed(&mut model, &nested_stream(part * 500..(part + 1) * 500));
            peak = peak.max(model.history().bytes());
        }
        assert!(peak <= budget, "{peak} bytes held, budget {budget}");
        let history = model.history_summary();
        assert!(history.evicted_records > 0);
        // 5 000 ticks of 1 ms were sent; what fits is kept, and said.
        assert!(
            history.seconds > 0.1 && history.seconds < 5.0,
            "{history:?}"
        );
        assert_eq!(model.events(), 5_000 * 5);
    }

    /// FORMAT.md's "Reading a stream", as the live view follows it: a
    /// repeated Init that skips numbers is a gap; a Definitions without a
    /// lanes section keeps the lanes; a Block of an unknown codec is
    /// damage whose drop entries count and whose records are lost.
    #[test]
    fn the_reading_rules_for_repeated_inits_missing_sections_and_unknown_codecs() {
        use typhon_live_core::frame::write_raw_frame;
        let mut model = Model::default();
        let stream = nested_stream(0..3);
        feed(&mut model, &stream);
        let (frames_before, next) = (model.frames_dropped(), 1 + 3);
        assert_eq!(frames_before, 0);
        let mut out = vec![0u8; 1024];
        let meta = Metadata {
            session_id: 9,
            ticks_per_second: 1_000_000,
            ..Metadata::default()
        };
        let names: NameTable<4, 64> = NameTable::new();
        // The repeated Init names 4 more than the next number.
        let n = write_init(&mut out, next + 4, &meta, &names, std::iter::empty()).unwrap();
        feed(&mut model, &out[..n]);
        assert_eq!(model.frames_dropped(), 4);
        let lanes = |model: &Model| model.lanes.len();
        assert_eq!(lanes(&model), 1);
        // Definitions with a names section (no new name) and no lanes.
        let names_only = [7, 2, 0, 0, 0, 0, 0];
        let n = write_raw_frame(&mut out, 3, 0, next + 4, &names_only).unwrap();
        feed(&mut model, &out[..n]);
        assert_eq!(lanes(&model), 1);
        // A Block of codec 0x40: 5 records, 3 dropped on lane 0.
        let mut block = Vec::new();
        block.extend(5u32.to_le_bytes());
        block.extend([0; 16]);
        block.extend(1u16.to_le_bytes());
        block.extend([0, 0, 3, 0, 0, 0, 0xde, 0xad]);
        let n = write_raw_frame(&mut out, 2, 0x40, next + 5, &block).unwrap();
        let dropped = model.events_dropped();
        each_frame(&out[..n], |frame| {
            let error = model.on_frame(frame, Duration::ZERO).unwrap_err();
            assert_eq!(error, DecodeError::UnknownCodec { flags: 0x40 });
        });
        assert_eq!(model.events_dropped() - dropped, 3);
        let counted = model.counted();
        assert_eq!((counted.frames_damaged, counted.events_damaged), (1, 5));
        assert_eq!(model.frames_dropped(), 4);
    }

    #[test]
    fn an_unknown_frame_kind_is_skipped_and_is_not_a_gap() {
        let mut model = Model::default();
        let mut bytes = init(7);
        let mut out = vec![0u8; 256];
        let n = typhon_live_core::frame::write_raw_frame(&mut out, 9, 0, 0, b"new").unwrap();
        bytes.extend_from_slice(&out[..n]);
        let n = typhon_live_core::Shutdown::default()
            .write(&mut out, 1)
            .unwrap();
        bytes.extend_from_slice(&out[..n]);
        feed(&mut model, &bytes);
        assert_eq!(model.counted().frames_unknown, 1);
        assert_eq!(model.frames_dropped(), 0);
        assert!(model.ended_cleanly);
    }

    #[test]
    fn names_past_the_cap_are_refused_and_counted() {
        // The reader's cap, as the summary shows it.
        let mut model = Model::default();
        let mut names: Vec<String> = (0..MAX_NAMES + 10).map(|i| format!("n{i}")).collect();
        names[0] = "first".into();
        let mut out = vec![0u8; 4 << 20];
        let table = VecNames(names);
        let meta = Metadata {
            session_id: 1,
            ..Metadata::default()
        };
        let n = write_init(&mut out, 0, &meta, &table, std::iter::empty()).unwrap();
        feed(&mut model, &out[..n]);
        assert_eq!(model.names().len(), MAX_NAMES);
        assert_eq!(model.summary(Duration::ZERO).refused.names, 10);
        assert_eq!(model.name(0), "first");
    }
}
