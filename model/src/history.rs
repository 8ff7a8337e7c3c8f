//! What the viewer keeps of the stream, for the timeline, pause and
//! scroll-back, and span statistics: a ring of chunks bounded by bytes and
//! by age. Each chunk holds every span, instant, gauge reading, tick and
//! CPU sample of a short stretch of host time, and its per-name totals; the history's
//! totals add a chunk's when it arrives and subtract them when it leaves.
//! Chunks are `Arc`s, so a paused view pins the ones it shows while the
//! stream goes on.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;

use typhon_live_core::StackSample;
use typhon_live_reader::{CpuInterval, OffCpu};

use super::fields::FieldRecord;
use super::memory::MemoryReading;
use super::stats::{self, Distribution, NameTotals, Totals};

/// A chunk closes after this much host time (in seconds) ...
pub const CHUNK_SECONDS: f64 = 0.05;
/// ... or this many records, whichever comes first.
pub const CHUNK_RECORDS: usize = 32_768;
/// The history keeps this many seconds by default (`--history`) ...
pub const DEFAULT_HISTORY_SECONDS: f64 = 60.0;
/// ... within this many bytes: at a rate where 60 s would not fit, it
/// keeps what fits.
pub const DEFAULT_HISTORY_BYTES: usize = 512 << 20;

/// A span kept: 40 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanRecord {
    /// Host tick it began.
    pub start: u64,
    /// Length in host ticks.
    pub duration: u64,
    /// Its argument (meaningful when `has_arg`).
    pub arg: u64,
    /// Its id within its lane, and its parent's (0: a root).
    pub id: u32,
    /// See `id`.
    pub parent: u32,
    /// Name id.
    pub name: u32,
    /// The lane.
    pub lane: u16,
    /// It carries an argument.
    pub has_arg: bool,
    /// It is a poll of a task span (FORMAT.md, "Tasks"): drawn on its
    /// lane like a span, with the task's id in `arg`; it is not a span of
    /// its name in the statistics, its task is.
    pub poll: bool,
}

/// A task span kept, once its end arrived: a span that may have run in
/// several polls on several lanes, from its creation to its close.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRecord {
    /// Host tick it was created.
    pub start: u64,
    /// From its creation to its close, in host ticks.
    pub wall: u64,
    /// The sum of its polls, in host ticks; the rest of `wall` it waited.
    pub busy: u64,
    /// Its id.
    pub task: u64,
    /// Name id.
    pub name: u32,
    /// The lane it closed on.
    pub lane: u16,
}

/// The bytes a span or a task span allocated itself (FORMAT.md,
/// "Allocated bytes"; a task span's, its polls' summed), kept beside the
/// spans of the chunk its bytes were read in: only spans that allocated
/// have one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocationRecord {
    /// Host tick its span began (a task span's creation).
    pub start: u64,
    /// The bytes.
    pub bytes: u64,
    /// Its span's name id.
    pub name: u32,
    /// Its span's lane (a task span's, the one it closed on).
    pub lane: u16,
}

/// An instant kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstantRecord {
    /// Host tick.
    pub time: u64,
    /// Its payload.
    pub payload: u64,
    /// Name id.
    pub name: u32,
    /// The lane.
    pub lane: u16,
}

/// A gauge reading kept.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GaugeRecord {
    /// Host tick.
    pub time: u64,
    /// The reading.
    pub value: f64,
    /// The gauge's name id.
    pub name: u32,
}

/// A tick kept, once its end arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickRecord {
    /// The tick's number.
    pub tick: u64,
    /// Host ticks of its start and end.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// The engine flagged it as overrunning.
    pub overrun: bool,
}

impl TickRecord {
    /// Its length in host ticks.
    pub fn duration(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

/// A stretch of the stream.
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    /// Host time of its first and last record.
    pub first: u64,
    /// See `first`.
    pub last: u64,
    /// The earliest start of its spans (a span lands in the chunk where it
    /// ended, and may have begun long before).
    pub earliest_start: u64,
    /// Its spans, in the order they ended per lane.
    pub spans: Vec<SpanRecord>,
    /// Its instants.
    pub instants: Vec<InstantRecord>,
    /// Its gauge readings.
    pub gauges: Vec<GaugeRecord>,
    /// Its ticks.
    pub ticks: Vec<TickRecord>,
    /// Its task spans, in the order they ended.
    pub tasks: Vec<TaskRecord>,
    /// Fields of its spans and task spans.
    pub fields: Vec<FieldRecord>,
    /// Bytes its spans and task spans allocated, of those that did.
    pub allocations: Vec<AllocationRecord>,
    /// What lanes' threads did between their CPU samples (read by
    /// [`crate::cpu`]).
    pub cpu: Vec<CpuInterval>,
    /// Lanes' threads' stretches off a CPU, from switches traced one by
    /// one (the reader's [`OffCpu`] slices).
    pub off_cpu: Vec<OffCpu>,
    /// Lanes' threads' stacks, sampled (read by [`crate::profile`]).
    pub stacks: Vec<StackSample>,
    /// The process's memory, as read (the memory strip).
    pub memory: Vec<MemoryReading>,
    /// Per span name, its spans' and task spans' totals.
    pub totals: Totals,
    /// The lanes its spans are on, and its longest span: a view zoomed
    /// out so far that the chunk is narrower than a cell draws it as one
    /// mark per lane without reading its spans, unless one is that long.
    pub lanes: Vec<u16>,
    /// See `lanes`.
    pub longest: u64,
}

impl Chunk {
    /// An empty chunk with room for as many records as `like` holds: the
    /// next stretch of a stream is usually much like the last, and a
    /// vector that grows copies what it holds each time.
    pub fn sized_like(like: &Chunk) -> Chunk {
        Chunk {
            spans: Vec::with_capacity(like.spans.len()),
            instants: Vec::with_capacity(like.instants.len()),
            gauges: Vec::with_capacity(like.gauges.len()),
            ticks: Vec::with_capacity(like.ticks.len()),
            tasks: Vec::with_capacity(like.tasks.len()),
            fields: Vec::with_capacity(like.fields.len()),
            allocations: Vec::with_capacity(like.allocations.len()),
            cpu: Vec::with_capacity(like.cpu.len()),
            off_cpu: Vec::with_capacity(like.off_cpu.len()),
            stacks: Vec::with_capacity(like.stacks.len()),
            memory: Vec::with_capacity(like.memory.len()),
            ..Chunk::default()
        }
    }

    /// Records in it.
    pub fn records(&self) -> usize {
        self.spans.len()
            + self.instants.len()
            + self.gauges.len()
            + self.ticks.len()
            + self.tasks.len()
            + self.fields.len()
            + self.allocations.len()
            + self.cpu.len()
            + self.off_cpu.len()
            + self.stacks.len()
            + self.memory.len()
    }

    /// The durations of name `name` the statistics count: its spans' (not
    /// the polls of tasks), and its task spans' wall times.
    pub fn durations(&self, name: u32) -> impl Iterator<Item = u64> + '_ {
        let spans = self.spans.iter().filter(move |s| s.name == name && !s.poll);
        let tasks = self.tasks.iter().filter(move |t| t.name == name);
        spans.map(|s| s.duration).chain(tasks.map(|t| t.wall))
    }

    /// Every counted duration with its name: [`Chunk::durations`] of all
    /// names at once.
    pub fn named_durations(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        let spans = self.spans.iter().filter(|s| !s.poll);
        let spans = spans.map(|s| (s.name, s.duration));
        spans.chain(self.tasks.iter().map(|t| (t.name, t.wall)))
    }

    /// Bytes it holds, its per-name totals counted at a hash map entry's
    /// size (key, value and control byte).
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        size_of::<Chunk>()
            + self.spans.capacity() * size_of::<SpanRecord>()
            + self.instants.capacity() * size_of::<InstantRecord>()
            + self.gauges.capacity() * size_of::<GaugeRecord>()
            + self.ticks.capacity() * size_of::<TickRecord>()
            + self.tasks.capacity() * size_of::<TaskRecord>()
            + self.fields.capacity() * size_of::<FieldRecord>()
            + self.allocations.capacity() * size_of::<AllocationRecord>()
            + self.cpu.capacity() * size_of::<CpuInterval>()
            + self.off_cpu.capacity() * size_of::<OffCpu>()
            + self.stacks.capacity() * size_of::<StackSample>()
            + self.memory.capacity() * size_of::<MemoryReading>()
            + self.totals.capacity() * (size_of::<u32>() + size_of::<NameTotals>() + 1)
            + self.lanes.capacity() * size_of::<u16>()
    }

    fn note_time(&mut self, time: u64) {
        if self.records() == 0 {
            (self.first, self.last) = (time, time);
        } else {
            self.first = self.first.min(time);
            self.last = self.last.max(time);
        }
    }

    /// Adds a span that took `self_time` outside its children.
    pub fn push_span(&mut self, span: SpanRecord, self_time: u64) {
        let end = span.start.saturating_add(span.duration);
        if self.spans.is_empty() || span.start < self.earliest_start {
            self.earliest_start = span.start;
        }
        self.note_time(end);
        if !span.poll {
            self.totals.entry(span.name).or_default().add_span(
                span.start,
                span.duration,
                self_time,
            );
        }
        if !self.lanes.contains(&span.lane) {
            self.lanes.push(span.lane);
        }
        self.longest = self.longest.max(span.duration);
        self.spans.push(span);
    }

    /// Adds an instant.
    pub fn push_instant(&mut self, instant: InstantRecord) {
        self.note_time(instant.time);
        self.instants.push(instant);
    }

    /// Adds a field of the record before it, which began at `time`.
    pub fn push_field(&mut self, field: FieldRecord, time: u64) {
        self.note_time(time);
        self.fields.push(field);
    }

    /// Adds the bytes a span or a task span allocated itself, to its
    /// name's totals as well.
    pub fn push_allocation(&mut self, allocation: AllocationRecord) {
        self.note_time(allocation.start);
        let totals = self.totals.entry(allocation.name).or_default();
        totals.allocated = totals.allocated.saturating_add(allocation.bytes);
        self.allocations.push(allocation);
    }

    /// The bytes the span or task span named `name` that began at
    /// `start` on `lane` allocated itself, if it allocated any and they
    /// were read in this chunk.
    pub fn allocated_by(&self, lane: u16, name: u32, start: u64) -> Option<u64> {
        let mut of = self.allocations.iter();
        let found = of.find(|a| a.lane == lane && a.name == name && a.start == start);
        found.map(|a| a.bytes)
    }

    /// Adds a gauge reading.
    pub fn push_gauge(&mut self, gauge: GaugeRecord) {
        self.note_time(gauge.time);
        self.gauges.push(gauge);
    }

    /// Adds what a lane's thread did between two CPU samples.
    pub fn push_cpu(&mut self, interval: CpuInterval) {
        self.note_time(interval.to);
        self.cpu.push(interval);
    }

    /// Adds a reading of the process's memory.
    pub fn push_memory(&mut self, reading: MemoryReading) {
        self.note_time(reading.time);
        self.memory.push(reading);
    }

    /// Adds a stretch of a lane's thread off a CPU.
    pub fn push_off_cpu(&mut self, slice: OffCpu) {
        self.note_time(slice.to);
        self.off_cpu.push(slice);
    }

    /// Adds a sampled stack.
    pub fn push_stack(&mut self, sample: StackSample) {
        self.note_time(sample.time);
        self.stacks.push(sample);
    }

    /// Adds a tick.
    pub fn push_tick(&mut self, tick: TickRecord) {
        self.note_time(tick.end);
        self.ticks.push(tick);
    }

    /// Adds a task span whose polls took `self_time` outside the spans
    /// inside them.
    pub fn push_task(&mut self, task: TaskRecord, self_time: u64) {
        self.note_time(task.start.saturating_add(task.wall));
        self.totals
            .entry(task.name)
            .or_default()
            .add_task(task.start, task.wall, task.busy, self_time);
        self.tasks.push(task);
    }
}

/// The chunks kept, oldest first, within a byte budget and an age.
#[derive(Debug)]
pub struct History {
    chunks: VecDeque<Arc<Chunk>>,
    bytes: usize,
    budget: usize,
    /// Host ticks kept behind the newest chunk's end.
    max_age: u64,
    totals: Totals,
    /// Records that left the history, and the host time it now starts at.
    evicted_records: u64,
    starts_at: Option<u64>,
}

impl History {
    /// A history keeping `max_age` host ticks within `budget` bytes.
    pub fn new(max_age: u64, budget: usize) -> History {
        History {
            chunks: VecDeque::new(),
            bytes: 0,
            budget,
            max_age,
            totals: Totals::default(),
            evicted_records: 0,
            starts_at: None,
        }
    }

    /// Adds a closed chunk, then lets the oldest go while over the budget
    /// or the age (the newest always stays).
    pub fn push(&mut self, mut chunk: Chunk) {
        // Given back when a quarter or more is unused: a chunk sized from
        // the last one is usually close, and giving back copies it all.
        fn fit<T>(v: &mut Vec<T>) {
            if v.capacity() - v.len() > v.len() / 4 {
                v.shrink_to_fit();
            }
        }
        fit(&mut chunk.spans);
        fit(&mut chunk.instants);
        fit(&mut chunk.gauges);
        fit(&mut chunk.ticks);
        fit(&mut chunk.tasks);
        fit(&mut chunk.fields);
        fit(&mut chunk.allocations);
        fit(&mut chunk.cpu);
        fit(&mut chunk.off_cpu);
        fit(&mut chunk.stacks);
        fit(&mut chunk.memory);
        chunk.totals.shrink_to_fit();
        chunk.lanes.shrink_to_fit();
        self.bytes += chunk.bytes();
        stats::add(&mut self.totals, &chunk.totals);
        let newest_end = chunk.last;
        self.chunks.push_back(Arc::new(chunk));
        while self.chunks.len() > 1 {
            let oldest = &self.chunks[0];
            let too_old = newest_end.saturating_sub(oldest.last) > self.max_age;
            if self.bytes <= self.budget && !too_old {
                break;
            }
            let Some(old) = self.chunks.pop_front() else {
                break;
            };
            self.bytes -= old.bytes();
            stats::subtract(&mut self.totals, &old.totals);
            self.evicted_records += old.records() as u64;
            self.starts_at = self.chunks.front().map(|c| c.first);
        }
    }

    /// Keeps `max_age` host ticks from now on (the clock's rate arrives
    /// with the Init).
    pub fn set_max_age(&mut self, max_age: u64) {
        self.max_age = max_age;
    }

    /// Forgets everything (a new session).
    pub fn clear(&mut self) {
        *self = History::new(self.max_age, self.budget);
    }

    /// The chunks, oldest first.
    pub fn chunks(&self) -> &VecDeque<Arc<Chunk>> {
        &self.chunks
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The byte budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Records held.
    pub fn records(&self) -> usize {
        self.chunks.iter().map(|c| c.records()).sum()
    }

    /// Records that left the history (over its budget or age).
    pub fn evicted_records(&self) -> u64 {
        self.evicted_records
    }

    /// Host time of the oldest record still held, once something left.
    pub fn starts_at(&self) -> Option<u64> {
        self.starts_at
    }

    /// Per-name totals over the history (their `max` only grows: see
    /// [`History::distribution`]).
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// The exact distribution of span name `name`'s durations over the
    /// history.
    pub fn distribution(&self, name: u32) -> Distribution {
        distribution(self.chunks.iter().map(|c| &**c), name)
    }

    /// The longest tick held.
    pub fn worst_tick(&self) -> Option<TickRecord> {
        worst_tick(self.chunks.iter().map(|c| &**c))
    }

    /// The tick that was running at host time `time`, if one is held.
    pub fn tick_at(&self, time: u64) -> Option<TickRecord> {
        tick_at(self.chunks.iter().map(|c| &**c), time)
    }
}

/// The longest tick of `chunks`.
pub fn worst_tick<'a>(chunks: impl Iterator<Item = &'a Chunk>) -> Option<TickRecord> {
    chunks
        .flat_map(|c| c.ticks.iter())
        .max_by_key(|t| t.duration())
        .copied()
}

/// The tick of `chunks` that was running at host time `time`.
pub fn tick_at<'a>(chunks: impl Iterator<Item = &'a Chunk>, time: u64) -> Option<TickRecord> {
    chunks
        .flat_map(|c| c.ticks.iter())
        .find(|t| t.start <= time && time <= t.end)
        .copied()
}

/// The exact distribution of span name `name`'s durations over `chunks`.
pub fn distribution<'a>(chunks: impl Iterator<Item = &'a Chunk>, name: u32) -> Distribution {
    let mut durations = Vec::new();
    let (mut self_time, mut busy, mut max, mut max_at) = (0u64, 0u64, 0u64, 0u64);
    let mut allocated = 0u64;
    for chunk in chunks {
        let Some(t) = chunk.totals.get(&name) else {
            continue;
        };
        self_time = self_time.saturating_add(t.self_time);
        busy = busy.saturating_add(t.busy);
        allocated = allocated.saturating_add(t.allocated);
        if durations.is_empty() || t.max > max {
            (max, max_at) = (t.max, t.max_at);
        }
        durations.extend(chunk.durations(name));
    }
    let mut d = Distribution::of(&mut durations, self_time, max_at);
    d.busy = busy;
    d.allocated = allocated;
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name: u32, start: u64, duration: u64) -> SpanRecord {
        SpanRecord {
            start,
            duration,
            arg: 0,
            id: 1,
            parent: 0,
            name,
            lane: 0,
            has_arg: false,
            poll: false,
        }
    }

    fn chunk(first: u64, spans: u64) -> Chunk {
        let mut chunk = Chunk::default();
        for i in 0..spans {
            chunk.push_span(span(1, first + i, 1 + i % 10), 1);
        }
        chunk
    }

    #[test]
    fn the_budget_bounds_the_bytes_whatever_comes() {
        // A chunk as the history holds it.
        let one = {
            let mut alone = History::new(u64::MAX, usize::MAX);
            alone.push(chunk(0, 1000));
            alone.bytes()
        };
        let mut history = History::new(u64::MAX, 10 * one);
        for i in 0..1000 {
            history.push(chunk(i * 1000, 1000));
            assert!(history.bytes() <= 10 * one, "{} bytes", history.bytes());
        }
        assert_eq!(history.chunks().len(), 10);
        assert_eq!(history.evicted_records(), 990 * 1000);
        // The first record held: the end of the first span of chunk 990.
        assert_eq!(history.starts_at(), Some(990_001));
        // The totals are those of what is held.
        assert_eq!(history.totals()[&1].count, 10_000);
        // 40 bytes a span, and a little for the chunk, its totals and the
        // room left in its vectors (under a quarter).
        let per_span = history.bytes() as f64 / history.records() as f64;
        assert!((40.0..42.0).contains(&per_span), "{per_span} bytes a span");
    }

    #[test]
    fn a_chunk_sized_like_a_bigger_one_gives_the_room_back() {
        let big = chunk(0, 10_000);
        let mut small = Chunk::sized_like(&big);
        assert!(small.spans.capacity() >= 10_000);
        for span in &big.spans[..10] {
            small.push_span(*span, 0);
        }
        let mut history = History::new(u64::MAX, usize::MAX);
        history.push(small);
        assert_eq!(history.chunks()[0].spans.capacity(), 10);
    }

    #[test]
    fn the_age_bounds_the_time_kept() {
        let mut history = History::new(5_000, usize::MAX);
        for i in 0..100 {
            history.push(chunk(i * 1000, 10));
        }
        let held = history.chunks();
        assert_eq!(
            held.back().unwrap().last - held.front().unwrap().last,
            5_000
        );
    }

    #[test]
    fn distribution_and_ticks_over_the_history() {
        let mut history = History::new(u64::MAX, usize::MAX);
        let mut c = Chunk::default();
        for d in 1..=100 {
            c.push_span(span(7, d * 10, d), d / 2);
        }
        c.push_span(span(8, 0, 5), 5);
        c.push_tick(TickRecord {
            tick: 3,
            start: 500,
            end: 520,
            overrun: false,
        });
        c.push_tick(TickRecord {
            tick: 4,
            start: 990,
            end: 1_100,
            overrun: true,
        });
        history.push(c);
        let d = history.distribution(7);
        assert_eq!(
            (d.count, d.p50, d.p99, d.max, d.max_at),
            (100, 50, 99, 100, 1_000)
        );
        assert_eq!(d.self_time, (1..=100u64).map(|d| d / 2).sum::<u64>());
        assert_eq!(history.worst_tick().map(|t| t.tick), Some(4));
        assert_eq!(history.tick_at(d.max_at).map(|t| t.tick), Some(4));
        assert_eq!(history.tick_at(700), None);
    }
}
