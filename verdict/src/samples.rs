//! A side's samples: every span's and task span's duration by name, every
//! tick's, and what the stream says it lost, read from trace files or a
//! live stream through the one reader (typhon-live-reader).
//!
//! Each sample keeps its start, so that [`Samples::finish`] can give it
//! the tick it ran in, and the run (source) that tick belongs to: the
//! bootstrap resamples whole runs, then whole ticks within them, as
//! neither the spans of one tick nor the ticks of one run are independent
//! of one another.

use std::collections::HashMap;
use std::ops::Range;

use serde::Serialize;
use typhon_live_core::{DecodeError, Event, Frame, NameId};
use typhon_live_reader::{Loss, Reader, State, Tick, Update};

/// The name of the ticks' own row: their durations, from the stream's
/// tick marks (`TickStart`, `TickEnd`), beside the spans' names. A span
/// of this name is counted under [`Reading::shadowed`] instead.
pub const TICKS: &str = "ticks";

/// Names kept, at most: a peer's stream cannot grow the tables past it.
pub const MAX_NAMES: usize = 4096;

/// Samples kept, at most, a side: 16 bytes each, 256 MiB in all.
pub const MAX_SAMPLES: usize = 16 << 20;

/// Without tick marks, the bootstrap resamples windows of host time this
/// long instead of ticks.
pub const WINDOW_NS: u64 = 10_000_000;

/// What was read of a side besides its samples: its sources, and what
/// they lost or could not be read of.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Reading {
    /// The traces (or live streams) read, as named by the caller.
    pub sources: Vec<String>,
    /// Events read.
    pub events: u64,
    /// Ticks whose start and end were both read, as the reader pairs them
    /// (FORMAT.md, "Reading a stream": ticks), ended after their run's
    /// warm-up.
    pub ticks: u64,
    /// Ticks whose start was lost, ended after their run's warm-up.
    pub ticks_without_start: u64,
    /// Ticks whose end was lost, started after their run's warm-up.
    pub ticks_without_end: u64,
    /// Ticks that ended over their budget (after their run's warm-up),
    /// whole or without a start.
    pub overruns: u64,
    /// Events the stream says were dropped (full rings, Blocks dropped on
    /// the way, lost at shutdown).
    pub dropped: u64,
    /// Frames missing by sequence number.
    pub frames_missed: u64,
    /// Frames that could not be read: damaged, or cut off at the end.
    pub frames_damaged: u64,
    /// Each damage: which source, the byte, and what was wrong.
    pub damage: Vec<String>,
    /// Spans not kept because the side held its most samples already.
    pub samples_not_kept: u64,
    /// Spans not kept because their name came after the most names.
    pub names_not_kept: u64,
    /// Spans named like the ticks' row ([`TICKS`]), not counted.
    pub shadowed: u64,
    /// Spans and ticks not counted because they started in their run's
    /// warm-up ([`Samples::with_warm_up`]).
    pub warm_up: u64,
}

impl Reading {
    /// Whether anything could not be read.
    pub fn damaged(&self) -> bool {
        self.frames_damaged > 0
    }

    /// Whether the side holds less than it read, past a cap.
    pub fn capped(&self) -> bool {
        self.samples_not_kept > 0 || self.names_not_kept > 0
    }
}

/// One name's durations as read, with their starts.
#[derive(Default)]
struct Series {
    name: String,
    /// (start on the side's timeline, duration), ns.
    samples: Vec<(u64, u64)>,
}

/// What a side keeps, at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Span names (the ticks' row besides).
    pub names: usize,
    /// Samples, all names together.
    pub samples: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            names: MAX_NAMES,
            samples: MAX_SAMPLES,
        }
    }
}

/// A side being read: trace files, or a live stream, one after another.
pub struct Samples {
    limits: Limits,
    series: Vec<Series>,
    by_text: HashMap<String, usize>,
    /// The current session's ids, as resolved: forgotten when a name is
    /// given new text or a new session starts.
    by_id: HashMap<NameId, usize>,
    /// The ticks' starts on the side's timeline: the clusters.
    tick_starts: Vec<u64>,
    /// Added to the stream's times so that sources, sessions and
    /// restarts follow one another on the side's timeline.
    base: u64,
    latest: u64,
    /// Where each source (run) starts on the side's timeline.
    run_starts: Vec<u64>,
    /// The current run's first time, and how long its warm-up is (ns).
    run_first: Option<u64>,
    warm_up: u64,
    kept: usize,
    reading: Reading,
}

impl Default for Samples {
    fn default() -> Self {
        Samples::new()
    }
}

impl Samples {
    /// An empty side, within the default [`Limits`].
    pub fn new() -> Samples {
        Samples::with_limits(Limits::default())
    }

    /// An empty side that keeps at most `limits`.
    pub fn with_limits(limits: Limits) -> Samples {
        let mut samples = Samples {
            limits,
            series: Vec::new(),
            by_text: HashMap::new(),
            by_id: HashMap::new(),
            tick_starts: Vec::new(),
            base: 0,
            latest: 0,
            run_starts: Vec::new(),
            run_first: None,
            warm_up: 0,
            kept: 0,
            reading: Reading::default(),
        };
        samples.series_of(TICKS);
        samples
    }

    /// The same side, not counting what starts in each run's first
    /// `nanos` (from the run's first time read): a warm-up, such as
    /// caches, a JIT or a symbolizer filling, that is not the steady
    /// state compared.
    pub fn with_warm_up(mut self, nanos: u64) -> Samples {
        self.warm_up = nanos;
        self
    }

    /// What was read so far besides the samples.
    pub fn reading(&self) -> &Reading {
        &self.reading
    }

    /// Starts a new source (a trace, a connection) called `label`: a run
    /// of its own, whose times follow the last source's.
    pub fn start_source(&mut self, label: &str) {
        self.reading.sources.push(label.into());
        self.new_epoch();
        self.run_starts.push(self.base);
        self.run_first = None;
    }

    /// Reads a trace file's bytes as source `label`, as far as they go:
    /// returns the frames read (0: not a trace at all). Damage is counted
    /// in the reading and read past.
    pub fn read_trace(&mut self, label: &str, bytes: &[u8]) -> u64 {
        self.start_source(label);
        let mut reader = Reader::new();
        let mut read = 0u64;
        let damage = typhon_live_reader::frames(bytes, |frame| {
            read += 1;
            self.read_frame(&mut reader, frame)
        });
        for d in damage {
            self.damage(label, Some(d.offset), &d.error);
        }
        reader.ended(|state, update| self.update(state, &update));
        read
    }

    /// Reads one frame of a live stream with its reader.
    pub fn read_frame(
        &mut self,
        reader: &mut Reader,
        frame: &Frame<'_>,
    ) -> Result<(), DecodeError> {
        reader.read(frame, |state, update| self.update(state, &update))
    }

    /// Counts a damage of source `label`, at `offset` when known.
    pub fn damage(&mut self, label: &str, offset: Option<u64>, error: &DecodeError) {
        self.reading.frames_damaged += 1;
        // The first damages name where; a stream of them is counted.
        if self.reading.damage.len() < 16 {
            self.reading.damage.push(match offset {
                Some(offset) => format!("{label}: byte {offset}: {error}"),
                None => format!("{label}: {error}"),
            });
        }
    }

    /// Takes one update of the reader.
    pub fn update(&mut self, state: &State, update: &Update<'_>) {
        match *update {
            Update::NewSession { previous: Some(_) } | Update::Restarted { .. } => {
                self.new_epoch();
                self.by_id.clear();
            }
            Update::NewSession { previous: None } => self.by_id.clear(),
            Update::Name { id, .. } => {
                self.by_id.remove(&id);
            }
            Update::Event { event, .. } => self.event(state, event),
            Update::Tick(tick) => self.tick(tick),
            Update::Lost(loss) => match loss {
                Loss::Gap { frames } => self.reading.frames_missed += frames,
                Loss::Dropped { events, .. } | Loss::Damaged { events } => {
                    self.reading.dropped += u64::from(events)
                }
                Loss::AtShutdown { events } => self.reading.dropped += events,
                _ => {}
            },
            _ => {}
        }
    }

    fn event(&mut self, state: &State, event: Event) {
        self.reading.events += 1;
        let (name, start, duration) = match event {
            Event::Span {
                name,
                start,
                duration,
                ..
            } => (name, start, duration),
            // A task span's duration is from its creation to its close.
            Event::TaskEnd {
                name, time, wall, ..
            } => (name, time.saturating_sub(wall), wall),
            _ => return,
        };
        let series = match self.by_id.get(&name) {
            Some(&series) => series,
            None => {
                let text = state.names().show(name);
                if text == TICKS {
                    self.reading.shadowed += 1;
                    return;
                }
                let Some(series) = self.series_of(&text) else {
                    self.reading.names_not_kept += 1;
                    return;
                };
                self.by_id.insert(name, series);
                series
            }
        };
        let start = self.at(start);
        if self.warming_up(start) {
            self.reading.warm_up += 1;
            return;
        }
        self.keep(series, start, duration);
    }

    /// A tick the reader paired. Its start, wherever it ends, bounds a
    /// cluster. One that ends in the warm-up is not counted at all; one
    /// that started in it is counted, without its duration.
    fn tick(&mut self, tick: Tick) {
        let start = tick.start.map(|t| self.at(t));
        let end = tick.end.map(|t| self.at(t));
        let started_warm = start.is_some_and(|s| self.warming_up(s));
        match start {
            Some(_) if started_warm => self.reading.warm_up += 1,
            Some(at) if self.tick_starts.len() < self.limits.samples => self.tick_starts.push(at),
            _ => {}
        }
        let Some(end) = end else {
            self.reading.ticks_without_end += u64::from(!started_warm);
            return;
        };
        if self.warming_up(end) {
            return;
        }
        self.reading.overruns += u64::from(tick.overrun);
        match start {
            Some(start) => {
                self.reading.ticks += 1;
                if !started_warm {
                    self.keep(0, start, end.saturating_sub(start));
                }
            }
            None => self.reading.ticks_without_start += 1,
        }
    }

    /// Time `t` of the stream on the side's timeline.
    fn at(&mut self, t: u64) -> u64 {
        let at = self.base.saturating_add(t);
        self.latest = self.latest.max(at);
        self.run_first.get_or_insert(at);
        at
    }

    /// Whether `at` is in the current run's warm-up.
    fn warming_up(&self, at: u64) -> bool {
        self.warm_up > 0
            && self
                .run_first
                .is_some_and(|first| at < first.saturating_add(self.warm_up))
    }

    fn keep(&mut self, series: usize, start: u64, duration: u64) {
        if self.kept >= self.limits.samples {
            self.reading.samples_not_kept += 1;
            return;
        }
        self.kept += 1;
        self.series[series].samples.push((start, duration));
    }

    /// The series of `name`, made if new and there is room.
    fn series_of(&mut self, name: &str) -> Option<usize> {
        if let Some(&index) = self.by_text.get(name) {
            return Some(index);
        }
        if self.series.len() > self.limits.names {
            return None;
        }
        let index = self.series.len();
        self.series.push(Series {
            name: name.into(),
            samples: Vec::new(),
        });
        self.by_text.insert(name.into(), index);
        Some(index)
    }

    /// A new session, restart or source: its times start after all so
    /// far, and its ticks are its own.
    fn new_epoch(&mut self) {
        self.base = self.latest.saturating_add(1);
    }

    /// The side, read: each name's durations sorted, with the cluster
    /// (tick, or window of host time) each ran in, and the clusters of
    /// each run.
    pub fn finish(self) -> Side {
        let mut starts = self.tick_starts;
        starts.sort_unstable();
        let by_tick = !starts.is_empty();
        let mut run_starts = self.run_starts;
        if run_starts.first() != Some(&0) {
            run_starts.insert(0, 0); // what came before any source
        }
        let run_of = |at: u64| run_starts.partition_point(|&s| s <= at) - 1;
        // A window's key: (run, window of the run).
        let window = |start: u64| -> (usize, u64) {
            let run = run_of(start);
            (run, (start - run_starts[run]) / WINDOW_NS)
        };
        // The clusters in order, keyed by run: the ticks, or the windows
        // that hold a sample, so that a stream's clock (a window key can
        // be anything) never sizes a table.
        let mut keys: Vec<(usize, u64)> = if by_tick {
            (0..starts.len() as u64)
                .map(|t| (run_of(starts[t as usize]), t))
                .collect()
        } else {
            (self.series.iter())
                .flat_map(|s| s.samples.iter().map(|&(start, _)| window(start)))
                .collect()
        };
        keys.sort_unstable();
        keys.dedup();
        let cluster = |start: u64| -> usize {
            if by_tick {
                // A tick is its own index. A span before its run's first
                // tick joins that tick; one of a run without ticks, beside
                // runs with them, a neighbouring one.
                let tick = starts.partition_point(|&s| s <= start).saturating_sub(1);
                let first = starts.partition_point(|&s| s < run_starts[run_of(start)]);
                tick.max(first).min(starts.len() - 1)
            } else {
                keys.partition_point(|&x| x < window(start))
            }
        };
        let mut series = Vec::new();
        for s in self.series {
            if s.samples.is_empty() {
                continue;
            }
            let mut pairs: Vec<(u64, u32)> = (s.samples.iter())
                .map(|&(start, duration)| (duration, cluster(start) as u32))
                .collect();
            pairs.sort_unstable();
            series.push(Sorted {
                name: s.name,
                values: pairs.iter().map(|p| p.0).collect(),
                clusters: pairs.iter().map(|p| p.1).collect(),
            });
        }
        // Each run's clusters: keys are ordered by run.
        let mut runs: Vec<Range<u32>> = Vec::new();
        for (i, &(run, _)) in keys.iter().enumerate() {
            match runs.last_mut() {
                Some(last) if run == keys[last.start as usize].0 => last.end = i as u32 + 1,
                _ => runs.push(i as u32..i as u32 + 1),
            }
        }
        if runs.is_empty() {
            runs.push(0..1);
        }
        Side {
            series,
            clusters: keys.len().max(1),
            runs,
            by_tick,
            reading: self.reading,
        }
    }
}

/// One name's durations, sorted, each with its cluster.
#[derive(Clone, Debug)]
pub struct Sorted {
    /// The span name, or [`TICKS`].
    pub name: String,
    /// Durations, ns, ascending.
    pub values: Vec<u64>,
    /// The cluster of each value (an index below [`Side::clusters`]).
    pub clusters: Vec<u32>,
}

/// A side read whole.
#[derive(Clone, Debug)]
pub struct Side {
    /// Its names, in the order first seen ([`TICKS`] first, when the
    /// stream marks ticks).
    pub series: Vec<Sorted>,
    /// Clusters the bootstrap resamples.
    pub clusters: usize,
    /// Each run's clusters, in order, together `0..clusters`: a run is a
    /// source (a trace file, a connection), and the bootstrap resamples
    /// runs before their clusters.
    pub runs: Vec<Range<u32>>,
    /// Whether the clusters are ticks (else windows of [`WINDOW_NS`]).
    pub by_tick: bool,
    /// What was read besides.
    pub reading: Reading,
}

impl Side {
    /// The series named `name`.
    pub fn get(&self, name: &str) -> Option<&Sorted> {
        self.series.iter().find(|s| s.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_live_tests::ticks_trace;

    #[test]
    fn spans_and_ticks_are_kept_by_name_and_clustered_by_tick() {
        let ticks: Vec<_> = (0..10u64)
            .map(|t| (t == 3, vec![("Work", 200_000 + t), ("Work", 300_000)]))
            .collect();
        let mut samples = Samples::new();
        assert!(samples.read_trace("t", &ticks_trace(&ticks)) > 0);
        let side = samples.finish();
        assert!(side.by_tick);
        assert_eq!(side.clusters, 10);
        let work = side.get("Work").unwrap();
        assert_eq!(work.values.len(), 20);
        // Tick 0's first span is the shortest, and in tick 0; tick 9's in 9.
        assert_eq!((work.values[0], work.clusters[0]), (200_000, 0));
        assert_eq!((work.values[9], work.clusters[9]), (200_009, 9));
        let ticks = side.get(TICKS).unwrap();
        assert_eq!(ticks.values.len(), 10);
        assert_eq!(ticks.values[0], 500_000);
        assert_eq!((side.reading.ticks, side.reading.overruns), (10, 1));
        assert!(!side.reading.damaged());
    }

    #[test]
    fn a_cut_trace_is_read_as_far_as_it_goes_and_says_so() {
        let ticks: Vec<_> = (0..50u64).map(|_| (false, vec![("Work", 1_000)])).collect();
        let bytes = ticks_trace(&ticks);
        let mut samples = Samples::new();
        samples.read_trace("cut.tlt", &bytes[..bytes.len() * 2 / 3]);
        let side = samples.finish();
        let kept = side.get("Work").unwrap().values.len();
        assert!(kept > 10 && kept < 50, "{kept}");
        assert!(side.reading.damaged());
        assert!(
            side.reading.damage[0].starts_with("cut.tlt: byte "),
            "{:?}",
            side.reading.damage
        );
    }

    #[test]
    fn past_its_limits_a_side_counts_what_it_did_not_keep() {
        let names = ["a", "b", "c", "d", "e"];
        let ticks: Vec<_> = (0..10)
            .map(|_| (false, names.map(|n| (n, 1_000)).to_vec()))
            .collect();
        let mut samples = Samples::with_limits(Limits {
            names: 3,
            samples: 25,
        });
        samples.read_trace("many", &ticks_trace(&ticks));
        let side = samples.finish();
        // The ticks' row and three names; d and e not kept.
        assert_eq!(side.series.len(), 4);
        assert!(side.get("d").is_none());
        let r = &side.reading;
        assert!(r.capped());
        assert_eq!(r.names_not_kept, 20);
        let kept: usize = side.series.iter().map(|s| s.values.len()).sum();
        assert_eq!(kept, 25);
        assert_eq!(r.samples_not_kept, 10 * 3 + 10 - 25);
    }

    #[test]
    fn two_sources_follow_one_another() {
        let bytes = ticks_trace(&vec![(false, vec![("Work", 1_000)]); 5]);
        let mut samples = Samples::new();
        samples.read_trace("a", &bytes);
        samples.read_trace("b", &bytes);
        let side = samples.finish();
        assert_eq!(side.clusters, 10);
        let work = side.get("Work").unwrap();
        let mut clusters = work.clusters.clone();
        clusters.sort_unstable();
        assert_eq!(clusters, (0..10).collect::<Vec<_>>());
        assert_eq!(side.reading.sources, ["a", "b"]);
        // Each source is a run of its own ticks.
        assert_eq!(side.runs, [0..5, 5..10]);
    }

    #[test]
    fn a_runs_warm_up_is_not_counted_and_each_run_has_its_own() {
        // Ticks of 1 ms, one after another from 1 ms: the first 2 ms of
        // each run (from its first event, tick 0's start) hold the starts
        // and spans of ticks 0 and 1.
        let bytes = ticks_trace(&vec![(false, vec![("Work", 1_000_000)]); 6]);
        let mut samples = Samples::new().with_warm_up(2_000_000);
        samples.read_trace("a", &bytes);
        samples.read_trace("b", &bytes);
        let side = samples.finish();
        assert_eq!(side.get("Work").unwrap().values.len(), 2 * 4);
        assert_eq!(side.get(TICKS).unwrap().values.len(), 2 * 4);
        assert_eq!(side.reading.warm_up, 2 * (2 + 2));
        assert_eq!(side.runs, [0..4, 4..8]);
        // Tick 0 ends in the warm-up and is not counted; tick 1 ends
        // after it and is, without its duration.
        assert_eq!(side.reading.ticks, 2 * 5);
    }

    #[test]
    fn without_ticks_the_windows_are_counted_only_where_spans_are() {
        // Two spans a whole second apart, far from the stream's start:
        // two windows, not the hundred between them nor the 500 000
        // before them.
        let state = State::default();
        let mut samples = Samples::new();
        samples.start_source("far");
        for start in [5_000_000_000_000u64, 5_001_000_000_000] {
            let event = Event::Span {
                start,
                duration: 10,
                name: 1,
                id: 1,
                parent: 0,
                arg: None,
            };
            samples.update(&state, &Update::Event { lane: 0, event });
        }
        let side = samples.finish();
        assert!(!side.by_tick);
        assert_eq!(side.clusters, 2);
        assert_eq!(side.runs, vec![0..2]);
    }
}
