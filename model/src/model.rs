//! The model: what a viewer knows of a session, and the one way in,
//! [`Model::on_frame`], which hands the reader's updates to the modules
//! that keep them.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

// Seeded and fast: SipHash was a tenth of the model's time per event.
use typhon_live_core::{DecodeError, Frame, OpenSpan};
use typhon_live_reader::{FieldOwners, Loss, Names, Reader, Session, State, Tally, Update};

use crate::fields::Owner;
use crate::history::{self, Chunk, History};
use crate::lanes::Lane;
use crate::limits::Refused;
use crate::logs::Logs;
use crate::marks::{MarkKind, Marks};
use crate::memory::{MemoryReading, MemoryState};
use crate::session::Connection;
use crate::tasks::OpenTasks;
use crate::triggers::Triggers;
use crate::{ns, NS_PER_SECOND};

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
    pub(crate) reader: Reader,
    /// The reader's tally when this session began: a session's figures
    /// count from there.
    pub(crate) base: Tally,
    pub(crate) lanes: BTreeMap<u16, Lane>,
    /// What the model's own caps kept out (names are the reader's).
    pub(crate) refused: Refused,
    /// The first frame that broke a rule of the format, and why: kept
    /// when later notices replace it.
    pub(crate) first_damage: Option<String>,
    /// Latest host time seen (ns), and when it arrived: the view
    /// extrapolates from there while no event comes (a stall), so an open
    /// span's age keeps growing on screen.
    pub(crate) host_now: u64,
    pub(crate) host_now_at: Option<Duration>,
    /// Task spans begun and not yet ended.
    pub(crate) open_tasks: OpenTasks,
    /// Each lane's last span or task end: what its next field belongs to.
    pub(crate) field_owners: FieldOwners<Owner>,
    /// (tick, start, duration, overrun), newest last.
    pub(crate) ticks: VecDeque<(u64, u64, u64, bool)>,
    pub(crate) gauges: BTreeMap<u32, VecDeque<f64>>,
    pub(crate) rates: VecDeque<(Duration, u64, u64)>,
    /// Every record of the last stretch of the stream.
    pub(crate) history: History,
    /// The chunk being filled.
    pub(crate) chunk: Chunk,
    /// Seconds and bytes of history to keep.
    pub(crate) history_seconds: f64,
    pub(crate) history_bytes: usize,
    /// Where the stream lost something or started over.
    pub(crate) marks: Marks,
    /// A mark to place at the next host time seen (a new session's
    /// clock is not known before its first event).
    pub(crate) mark_pending: Option<MarkKind>,
    /// Log events' texts.
    pub(crate) logs: Logs,
    /// A capture's triggers.
    pub(crate) triggers: Triggers,
    /// The process's memory and its allocation sites.
    pub(crate) memory: MemoryState,
    /// The time of the Samples frame being read: its memory's and its
    /// sites'.
    pub(crate) samples_time: u64,
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
            open_tasks: OpenTasks::default(),
            field_owners: FieldOwners::default(),
            ticks: VecDeque::new(),
            gauges: BTreeMap::new(),
            rates: VecDeque::new(),
            history: History::new(ns(seconds), bytes),
            chunk: Chunk::default(),
            history_seconds: seconds,
            history_bytes: bytes,
            marks: Marks::default(),
            mark_pending: None,
            logs: Logs::default(),
            triggers: Triggers::default(),
            memory: MemoryState::default(),
            samples_time: 0,
        }
    }

    /// Takes in one frame, which arrived at `now`. Errors name a
    /// malformed payload; the model keeps what it had, and says so in its
    /// notice.
    pub fn on_frame(&mut self, frame: &Frame<'_>, now: Duration) -> Result<(), DecodeError> {
        self.on_frame_at(frame, now, None)
    }

    /// [`Model::on_frame`] of a frame that arrived at Unix time
    /// `received` (ns), where the caller reads that clock: the stream's
    /// times are then placed on it too (the reader's
    /// [`State::unix`](typhon_live_reader::State::unix)).
    pub fn on_frame_at(
        &mut self,
        frame: &Frame<'_>,
        now: Duration,
        received: Option<u64>,
    ) -> Result<(), DecodeError> {
        // Taken out while its updates go into the model.
        let mut reader = std::mem::take(&mut self.reader);
        let take = |state: &State, update: Update<'_>| match update {
            // The one update of every event, straight to its handling.
            Update::Event { lane, event } => self.on_event(lane, &event, now),
            other => self.update(state, other, now),
        };
        let result = match received {
            Some(received) => reader.read_at(frame, received, take),
            None => reader.read(frame, take),
        };
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

    pub(crate) fn update(&mut self, state: &State, update: Update<'_>, now: Duration) {
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
            Update::Samples { time } => {
                // A process that only samples (idle, or between events)
                // still moves the view on.
                self.samples_time = time;
                self.advance_host_now(time, now);
            }
            Update::Memory(memory) => {
                let time = self.samples_time;
                self.memory.read(time, memory);
                self.chunk.push_memory(MemoryReading {
                    time,
                    live: memory.live(),
                });
            }
            Update::Site(site) => self.memory.read_site(self.samples_time, &site),
            Update::Cpu(interval) => self.chunk.push_cpu(interval),
            Update::OffCpu(slice) => self.chunk.push_off_cpu(slice),
            Update::StackSample(sample) => self.chunk.push_stack(sample),
            Update::Text(text) => self.logs.push(&text),
            Update::Tick(tick) => self.tick_read(tick),
            Update::Lost(Loss::Texts { texts }) => {
                self.logs.lost = self.logs.lost.saturating_add(u64::from(texts));
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

    /// Log events' texts, the latest within their budget.
    pub fn logs(&self) -> &Logs {
        &self.logs
    }

    /// A capture's triggers, in the order read.
    pub fn triggers(&self) -> &Triggers {
        &self.triggers
    }

    /// Where the stream lost something or started over, oldest first.
    pub fn marks(&self) -> &Marks {
        &self.marks
    }

    /// What the model keeps of the stream.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// What the model's reader knows of the stream (a flight recorder
    /// that keeps the frames the model reads checkpoints it).
    pub fn state(&self) -> &State {
        self.reader.state()
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
    pub(crate) fn counted(&self) -> Tally {
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

    /// The spans open on lane `id`, as the reader keeps them.
    pub(crate) fn open_spans(&self, id: u16) -> &[OpenSpan] {
        self.reader
            .state()
            .lanes()
            .get(&id)
            .map_or(&[], |lane| lane.open.as_slice())
    }

    /// The name of lane `lane` (kept after its thread ended), if the
    /// stream said it.
    pub fn lane_name(&self, lane: u16) -> Option<String> {
        let id = match self.lanes.get(&lane) {
            Some(row) => row.name,
            None => self.reader.state().lanes().get(&lane)?.info.name,
        };
        Some(self.name(id))
    }

    /// The name of id `id`, or a placeholder until its definition arrives.
    pub fn name(&self, id: u32) -> String {
        self.names().show(id).into_owned()
    }

    pub(crate) fn seconds(&self, ns: u64) -> f64 {
        ns as f64 / NS_PER_SECOND as f64
    }
}

#[cfg(test)]
mod tests {
    use typhon_live_core::init::write_init;
    use typhon_live_core::{Metadata, NameTable};

    use super::*;
    use crate::limits::MAX_NAMES;
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
        model.fill_exact(&mut stats);
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
