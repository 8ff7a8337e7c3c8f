//! What a view shows, computed from the model on demand: the summary
//! (the screen's panels, the summary lines, `--json`), per-name
//! statistics over the history, and what the timeline draws from.

use crate::profile::{Profile, Selection};
use std::sync::Arc;
use std::time::Duration;

use foldhash::HashMap;
use serde::Serialize;
use typhon_live_core::{LaneKind, OpenSpan};
use typhon_live_reader::{OffCpu, Tally};

use crate::cpu::{CpuIndex, CpuShare};
use crate::history::Chunk;
use crate::limits::{Limits, Refused, LIMITS};
use crate::marks::Mark;
use crate::memory::MemorySummary;
use crate::session::Connection;
use crate::tasks::OpenTask;
use crate::triggers::Trigger;
use crate::{ns, stats, Model, NS_PER_SECOND, WINDOW_SECONDS};

impl Model {
    /// The figures a view shows, as of wall-clock `now`.
    pub fn summary(&mut self, now: Duration) -> Summary {
        let counted = self.counted();
        self.rates.push_back((now, counted.events, counted.bytes));
        while self.rates.len() > 2 && now.saturating_sub(self.rates[0].0) > Duration::from_secs(2) {
            self.rates.pop_front();
        }
        self.summarise(now)
    }

    /// The summary as of `now` as one line: JSON (with the span
    /// percentiles) for `--json`, else the text form.
    pub fn summary_line(&mut self, now: Duration, json: bool) -> String {
        let mut summary = self.summary(now);
        if json {
            self.fill_exact(&mut summary.span_stats);
            summary.code = self.hottest_code(HOTTEST_FUNCTIONS);
            serde_json::to_string(&summary).unwrap_or_default()
        } else {
            summary.line()
        }
    }

    /// Per name over the history: the totals add up as chunks come and go;
    /// the maximum is the largest of the chunks' held.
    pub fn span_stats(&self) -> Vec<SpanStats> {
        let chunks = self.history.chunks().iter().map(|c| &**c);
        self.stats_of(self.history.totals(), chunks)
    }

    /// Per name over `chunks`, as [`Model::span_stats`] over the history:
    /// what a paused view lists, over the history it pinned, so that its
    /// list and its selected name's statistics are over the same spans.
    pub fn span_stats_over(&self, chunks: &[Arc<Chunk>]) -> Vec<SpanStats> {
        let mut totals = stats::Totals::default();
        for chunk in chunks {
            stats::add(&mut totals, &chunk.totals);
        }
        self.stats_of(&totals, chunks.iter().map(|c| &**c))
    }

    /// `totals`, summed over `chunks`, as each name's statistics, most
    /// total time first.
    fn stats_of<'a>(
        &self,
        totals: &stats::Totals,
        chunks: impl Iterator<Item = &'a Chunk>,
    ) -> Vec<SpanStats> {
        let mut max: HashMap<u32, u64> = HashMap::default();
        for chunk in chunks {
            for (&name, t) in &chunk.totals {
                let m = max.entry(name).or_default();
                *m = (*m).max(t.max);
            }
        }
        let ms = |ticks: u64| self.seconds(ticks) * 1e3;
        let mut stats: Vec<SpanStats> = totals
            .iter()
            .map(|(&name, t)| SpanStats {
                id: name,
                name: self.name(name),
                count: t.count,
                total_ms: ms(t.total),
                self_ms: ms(t.self_time),
                busy_ms: ms(t.busy),
                idle_ms: ms(t.total.saturating_sub(t.busy)),
                mean_ms: ms(t.total) / t.count.max(1) as f64,
                max_ms: ms(max.get(&name).copied().unwrap_or(0)),
                allocated_bytes: t.allocated,
                p50_ms: None,
                p90_ms: None,
                p99_ms: None,
                cpu: None,
            })
            .collect();
        stats.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms).then(a.name.cmp(&b.name)));
        stats
    }

    /// Fills in what needs every span of the history read, in one pass,
    /// unless it holds more than [`PERCENTILE_SPANS`] (then they stay
    /// `None`: the screen computes them for the selected name only):
    /// every name's exact percentiles, and its share of CPU where
    /// samples cover it.
    pub fn fill_exact(&self, stats: &mut [SpanStats]) {
        let chunks = self.history.chunks();
        let held = chunks.iter().map(|c| c.spans.len() + c.tasks.len());
        if held.sum::<usize>() > PERCENTILE_SPANS {
            return;
        }
        let mut durations: HashMap<u32, Vec<u64>> = HashMap::default();
        for (name, duration) in chunks.iter().flat_map(|c| c.named_durations()) {
            durations.entry(name).or_default().push(duration);
        }
        let cpu = CpuIndex::of(chunks.iter().map(|c| &**c));
        let mut cpu = cpu.by_name(chunks.iter().flat_map(|c| c.spans.iter()));
        let ms = |ticks: u64| self.seconds(ticks) * 1e3;
        for s in stats {
            if let Some(d) = durations.get_mut(&s.id) {
                let d = stats::Distribution::of(d, 0, 0);
                (s.p50_ms, s.p90_ms, s.p99_ms) =
                    (Some(ms(d.p50)), Some(ms(d.p90)), Some(ms(d.p99)));
            }
            s.cpu = cpu.remove(&s.id).map(|name| {
                let (span, longest) = name.longest;
                SpanCpu {
                    all: name.all,
                    longest,
                    longest_ns: span.duration,
                    says: longest.sentence(&s.name, span.duration),
                }
            });
        }
    }

    /// The CPU intervals since the earliest of `starts` that is a stall
    /// at `now` ([`STALL_MS`] or longer), read once for every open span;
    /// `None` when none is.
    fn stall_cpu(&self, starts: impl Iterator<Item = u64>, now: u64) -> Option<CpuIndex> {
        let stall = |start: &u64| now.saturating_sub(*start) >= STALL_MS * 1_000_000;
        let earliest = starts.filter(stall).min()?;
        let held = self.history.chunks().iter().map(|c| &**c);
        let chunks = held.chain([&self.chunk]).filter(|c| c.last >= earliest);
        Some(CpuIndex::of(chunks).with_off_cpu_open(self.off_cpu_now(now)))
    }

    /// The threads switched out now, as slices ending `now`: a stalled
    /// thread asleep since its stall began has no slice yet.
    fn off_cpu_now(&self, now: u64) -> impl Iterator<Item = OffCpu> + '_ {
        let open = self.reader.state().off_cpu_open();
        open.map(move |open| open.until(now))
    }

    /// How lane `lane` spent `[start, now)` on the CPU, if that is a
    /// stall ([`STALL_MS`] or longer) and samples cover it.
    fn open_cpu(index: &CpuIndex, lane: u16, start: u64, now: u64) -> Option<String> {
        if now.saturating_sub(start) < STALL_MS * 1_000_000 {
            return None;
        }
        let share = index.share(lane, start, now)?;
        Some(share.text(now - start))
    }

    /// The function that ran most in lane `lane`'s `[start, now)`, if
    /// that is a stall ([`STALL_MS`] or longer) and stacks were sampled in
    /// it.
    fn open_hottest(&self, lane: u16, start: u64, now: u64) -> Option<String> {
        if now.saturating_sub(start) < STALL_MS * 1_000_000 {
            return None;
        }
        let held = self.history.chunks().iter().map(|c| &**c);
        let chunks = held.chain([&self.chunk]).filter(|c| c.last >= start);
        let span = Selection::Span {
            lane,
            start,
            end: now,
        };
        let profile = Profile::of(chunks, self.reader.state().stacks(), span);
        let names = self.reader.state().names();
        let (frame, share) = profile.hottest_of_program(names)?;
        let function = frame.function(names);
        Some(format!(
            "{function}: {:.0} % of {} samples",
            share * 100.0,
            profile.samples
        ))
    }

    /// What the timeline draws from, as of `now`: the history's chunks
    /// and a copy of the one being filled, the lanes (main first, then
    /// workers and pools, then the rest) with their open spans, the host
    /// clock.
    pub fn timeline_inputs(&self, now: Duration) -> TimelineInputs {
        let mut chunks: Vec<Arc<Chunk>> = self.history.chunks().iter().cloned().collect();
        let host_now = self.host_time(now);
        let mut open = self.off_cpu_now(host_now).peekable();
        if self.chunk.records() > 0 || open.peek().is_some() {
            // The chunk being filled, as of now: with the threads
            // switched out now, so that both timelines' strips show them.
            let mut filling = self.chunk.clone();
            open.for_each(|slice| filling.push_off_cpu(slice));
            chunks.push(Arc::new(filling));
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
            now: host_now,
            ticks_per_second: NS_PER_SECOND,
            marks: self.marks.iter().copied().collect(),
            open_tasks: self.open_tasks.iter().map(|(id, t)| (id, *t)).collect(),
            triggers: self.triggers.iter().copied().collect(),
        }
    }

    pub(crate) fn history_summary(&self) -> HistorySummary {
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

    /// The session's ticks: counted by the reader, measured over the
    /// history and the chunk being filled.
    fn tick_tally(&self, counted: &Tally) -> TickTally {
        let held = self.history.chunks().iter().map(|c| &**c);
        let held = held.chain(std::iter::once(&self.chunk));
        let durations = held.flat_map(|c| c.ticks.iter().map(|t| t.duration()));
        let (mut count, mut total, mut max) = (0u64, 0u64, None::<u64>);
        for duration in durations {
            count += 1;
            total = total.saturating_add(duration);
            max = max.max(Some(duration));
        }
        TickTally {
            whole: counted.ticks,
            without_start: counted.ticks_without_start,
            without_end: counted.ticks_without_end,
            overruns: counted.ticks_overrun,
            held: count,
            held_total_ms: self.seconds(total) * 1e3,
            held_max_ms: max.map(|d| self.seconds(d) * 1e3),
        }
    }

    pub(crate) fn summarise(&self, now: Duration) -> Summary {
        let (t0, e0, b0) = self.rates[0];
        let elapsed = now.saturating_sub(t0).as_secs_f64();
        let counted = self.counted();
        let init_seen = self.session().is_some();
        let refused = Refused {
            names: counted.refused.names,
            ticks: self.refused.ticks + counted.refused.ticks,
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
        let lanes_open = self.reader.state().lanes().values();
        let spans_open = lanes_open.flat_map(|lane| lane.open.iter().map(move |s| (lane, s)));
        let stalls = self.stall_cpu(spans_open.clone().map(|(_, s)| s.start), host_time);
        let mut open: Vec<OpenSummary> = spans_open
            .map(|(lane, span)| OpenSummary {
                lane: self.name(lane.info.name),
                span: self.name(span.name),
                open_ms: self.seconds(host_time.saturating_sub(span.start)) * 1e3,
                cpu: stalls
                    .as_ref()
                    .and_then(|index| Self::open_cpu(index, lane.info.id, span.start, host_time)),
                hottest: self.open_hottest(lane.info.id, span.start, host_time),
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
            ticks: self.tick_tally(&counted),
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
            memory: self.memory.summary(self.reader.state().names()),
            code: Vec::new(),
        }
    }

    /// The `count` functions that ran most over the history.
    pub fn hottest_code(&self, count: usize) -> Vec<HotFunction> {
        let state = self.reader.state();
        let chunks = self.history.chunks().iter().map(|c| &**c);
        let everything = Selection::Range {
            from: 0,
            to: u64::MAX,
        };
        let profile = Profile::of(chunks, state.stacks(), everything);
        let share = |n: u64| n as f64 / profile.samples.max(1) as f64;
        (profile.functions.iter().filter(|f| f.own > 0))
            .take(count)
            .map(|f| HotFunction {
                frame: f.frame.text(state.names()),
                own_samples: f.own,
                own_share: share(f.own),
                total_share: share(f.total),
            })
            .collect()
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
    /// A stall's share of CPU so far, where samples cover it: "0.02 s on
    /// CPU, 1.18 s off-CPU (voluntary)". Only for spans open
    /// [`STALL_MS`] or longer.
    pub cpu: Option<String>,
    /// A stall's hottest function so far, where its stacks were sampled:
    /// "demo::plan_paths: 84 % of 118 samples". Only for spans open
    /// [`STALL_MS`] or longer.
    pub hottest: Option<String>,
}

/// How long a span must have been open for its summary to say how it
/// spent its time on the CPU: what a view shows as a stall.
pub const STALL_MS: u64 = 100;

/// Ticks this session as the reader paired them (FORMAT.md, "Reading a
/// stream": ticks), and the whole ones the history holds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TickTally {
    /// Ticks whose start and end both arrived.
    pub whole: u64,
    /// Ticks whose start was lost.
    pub without_start: u64,
    /// Ticks whose end was lost.
    pub without_end: u64,
    /// Ticks flagged as overrunning (whole, or without a start).
    pub overruns: u64,
    /// Whole ticks the history holds.
    pub held: u64,
    /// Their durations added up, in milliseconds.
    pub held_total_ms: f64,
    /// The longest of them, in milliseconds.
    pub held_max_ms: Option<f64>,
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
    /// Ticks this session, as the reader paired them.
    pub ticks: TickTally,
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
    /// The process's memory and its allocation sites, where the stream
    /// tells them.
    pub memory: Option<MemorySummary>,
    /// Which code ran over the history, where stacks were sampled: the
    /// functions that ran most (only in `--json`'s line, which reads
    /// every sample).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub code: Vec<HotFunction>,
}

/// Functions `--json`'s summary names at most in [`Summary::code`].
pub const HOTTEST_FUNCTIONS: usize = 10;

/// A function's share of the stacks sampled.
#[derive(Clone, Debug, Serialize)]
pub struct HotFunction {
    /// Its name (`function (file:line)`), or its address while it has
    /// none.
    pub frame: String,
    /// Samples in which it ran (innermost).
    pub own_samples: u64,
    /// Share of every sample in which it ran.
    pub own_share: f64,
    /// Share of every sample in which it was on the stack.
    pub total_share: f64,
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
    /// Task spans begun and not ended: id and what is known of them.
    pub open_tasks: Vec<(u64, OpenTask)>,
    /// A capture's triggers, in the order read.
    pub triggers: Vec<Trigger>,
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
    /// The time they ran, in milliseconds: all of a span's, a task
    /// span's polls (FORMAT.md, "Tasks").
    pub busy_ms: f64,
    /// The time task spans waited between their polls, in milliseconds:
    /// `total_ms - busy_ms`.
    pub idle_ms: f64,
    /// The mean duration, in milliseconds.
    pub mean_ms: f64,
    /// The longest, in milliseconds.
    pub max_ms: f64,
    /// The bytes they allocated themselves, their child spans' left out
    /// (FORMAT.md, "Allocated bytes"): 0 unless the process counts its
    /// allocations.
    pub allocated_bytes: u64,
    /// Exact nearest-rank percentiles over the history, in milliseconds:
    /// filled in for `--json` ([`Model::fill_exact`]) while the
    /// history holds at most [`PERCENTILE_SPANS`] spans, else `null`.
    pub p50_ms: Option<f64>,
    /// See `p50_ms`.
    pub p90_ms: Option<f64>,
    /// See `p50_ms`.
    pub p99_ms: Option<f64>,
    /// Its spans' share of CPU, where samples cover them: filled in
    /// with the percentiles, else `null`.
    pub cpu: Option<SpanCpu>,
}

/// A span name's share of CPU over the history, estimated from samples.
#[derive(Clone, Debug, Serialize)]
pub struct SpanCpu {
    /// Its spans', summed (ns), as far as samples cover them.
    pub all: CpuShare,
    /// Its longest span's, and that span's length (ns).
    pub longest: CpuShare,
    /// See `longest`.
    pub longest_ns: u64,
    /// The longest as a sentence: "Sim.AI: 1.20 s, of which 0.02 s on
    /// CPU, 1.18 s off-CPU (voluntary)".
    pub says: String,
}

/// Spans the history may hold for [`Model::fill_exact`] to read them
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
            self.open_spans.first().map_or(String::new(), |s| format!(
                " | open: {} on {} for {:.0} ms{}",
                s.span,
                s.lane,
                s.open_ms,
                s.cpu.as_ref().map_or(String::new(), |cpu| format!(" ({cpu})"))
            )),
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
    use typhon_live_core::Event;

    use super::*;
    use crate::history;

    /// A paused view's list is over the history it pinned, as its
    /// selected name's statistics are: the two agree whatever came since.
    #[test]
    fn a_paused_views_list_and_its_selected_names_statistics_agree() {
        let mut model = Model::default();
        let read = |model: &mut Model, from: u32, to: u32| {
            for i in from..to {
                let span = Event::Span {
                    start: u64::from(i) * 1_000_000,
                    duration: 500_000,
                    name: 7,
                    id: i + 1,
                    parent: 0,
                    arg: None,
                };
                model.on_event(0, &span, Duration::ZERO);
            }
            model.close_chunk();
        };
        read(&mut model, 0, 100);
        let pinned = model.timeline_inputs(Duration::ZERO).chunks;
        read(&mut model, 100, 250);
        let paused = model.span_stats_over(&pinned);
        let selected = history::distribution(pinned.iter().map(|c| &**c), 7);
        assert_eq!((paused[0].count, selected.count), (100, 100));
        assert_eq!(paused[0].total_ms, selected.total as f64 / 1e6);
        assert_eq!(paused[0].max_ms, 0.5);
        assert_eq!(model.span_stats()[0].count, 250, "live, all of it");
    }
}
