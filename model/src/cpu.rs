//! Each lane's CPU, read from the intervals the history keeps
//! ([`Chunk::cpu`]): how a span's time divides into on a CPU, waiting
//! for one and off one, and the strip a timeline draws under a lane.
//!
//! The intervals come from samples (FORMAT.md, "Samples"), about 10 ms
//! apart: what a thread did inside one is known as sums, not moments. A
//! range that covers part of an interval takes that part of its sums,
//! which is an estimate, and says so. Where the thread's switches were
//! traced one by one, a range is read from the reader's off-CPU slices
//! instead ([`Chunk::off_cpu`], and the threads switched out now): exact.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use typhon_live_reader::{CpuInterval, OffCpu};

use crate::history::{Chunk, SpanRecord};

/// How a stretch of a lane's time divides, in ns, as far as its samples
/// cover it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CpuShare {
    /// The stretch's time that samples cover.
    pub covered: u64,
    /// Of it, on a CPU.
    pub on_cpu: u64,
    /// Of it, runnable and waiting for a CPU; `None` where the system
    /// does not measure it.
    pub waiting: Option<u64>,
    /// Switches away because the thread waited (a lock, I/O, a sleep),
    /// and because it was preempted; `None` where not measured.
    pub voluntary: Option<u64>,
    /// See `voluntary`.
    pub involuntary: Option<u64>,
    /// Read from the thread's switches, one by one: exact. Otherwise
    /// estimated from its samples.
    pub exact: bool,
}

impl CpuShare {
    /// Off a CPU and not waiting for one (asleep, blocked): what the
    /// covered time leaves.
    pub fn off_cpu(&self) -> u64 {
        let busy = self.on_cpu.saturating_add(self.waiting.unwrap_or(0));
        self.covered.saturating_sub(busy)
    }

    /// Adds `other`'s time and switches: the share of several spans.
    pub fn add(&mut self, other: &CpuShare) {
        fn sum(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            Some(a?.saturating_add(b?))
        }
        // A side with nothing covered does not make a counter unknown.
        if self.covered == 0 {
            *self = *other;
            return;
        }
        if other.covered == 0 {
            return;
        }
        self.covered = self.covered.saturating_add(other.covered);
        self.on_cpu = self.on_cpu.saturating_add(other.on_cpu);
        self.waiting = sum(self.waiting, other.waiting);
        self.voluntary = sum(self.voluntary, other.voluntary);
        self.involuntary = sum(self.involuntary, other.involuntary);
        self.exact &= other.exact;
    }

    /// Where it was read from: "from switches" or "from samples".
    pub fn source(&self) -> &'static str {
        if self.exact {
            "from switches"
        } else {
            "from samples"
        }
    }

    /// Why the thread was off a CPU: "voluntary" when it switched out of
    /// its own accord (it slept, blocked on a lock or I/O). A preempted
    /// thread is not off a CPU but waiting for one, and counted there.
    pub fn off_cause(&self) -> Option<&'static str> {
        self.voluntary
            .filter(|&v| v > 0 && self.off_cpu().saturating_mul(200) >= self.covered.max(1))
            .map(|_| "voluntary")
    }

    /// "0.02 s on CPU, 1.18 s off-CPU (voluntary)", in the unit that
    /// suits `length` (the whole stretch, ns), with the time waiting for a
    /// core where there was some, and how much the samples cover where
    /// they miss a tenth or more.
    pub fn text(&self, length: u64) -> String {
        let show = |ns: u64| duration_as(ns, length);
        let mut text = self.parts(show);
        if self.covered.saturating_mul(10) < length.saturating_mul(9) {
            text += &format!("; samples cover {}", show(self.covered));
        }
        text
    }

    /// "2 % on CPU, 98 % off-CPU (voluntary)": shares of the time
    /// covered.
    pub fn percent_text(&self) -> String {
        let covered = self.covered.max(1) as f64;
        self.parts(|ns| format!("{:.0} %", ns as f64 * 100.0 / covered))
    }

    /// On a CPU, waiting (where there was some), off a CPU and why, each
    /// as `show` says it.
    fn parts(&self, show: impl Fn(u64) -> String) -> String {
        let mut parts = vec![format!("{} on CPU", show(self.on_cpu))];
        let shown = |w: &u64| w.saturating_mul(200) >= self.covered.max(1);
        if let Some(waiting) = self.waiting.filter(shown) {
            parts.push(format!("{} waiting for a core", show(waiting)));
        }
        let cause = self
            .off_cause()
            .map_or(String::new(), |c| format!(" ({c})"));
        parts.push(format!("{} off-CPU{cause}", show(self.off_cpu())));
        parts.join(", ")
    }

    /// "NAME: 1.20 s, of which 0.02 s on CPU, 1.18 s off-CPU
    /// (voluntary)": a span of `length` ns.
    pub fn sentence(&self, name: &str, length: u64) -> String {
        format!(
            "{name}: {}, of which {}",
            duration_as(length, length),
            self.text(length)
        )
    }
}

/// `ns` in the unit that suits `scale`: seconds from 1 s, else
/// milliseconds from 1 ms, else microseconds.
fn duration_as(ns: u64, scale: u64) -> String {
    let ns = ns as f64;
    match scale {
        1_000_000_000.. => format!("{:.2} s", ns / 1e9),
        1_000_000.. => format!("{:.1} ms", ns / 1e6),
        _ => format!("{:.1} µs", ns / 1e3),
    }
}

/// Each lane's intervals and off-CPU slices over some chunks, in time
/// order, to read many ranges from.
#[derive(Clone, Debug, Default)]
pub struct CpuIndex {
    lanes: HashMap<u16, Vec<CpuInterval>>,
    off_cpu: HashMap<u16, Vec<OffCpu>>,
}

impl CpuIndex {
    /// The intervals of `chunks`, oldest first.
    pub fn of<'a>(chunks: impl Iterator<Item = &'a Chunk> + Clone) -> CpuIndex {
        let chunks_again = chunks.clone();
        let mut lanes: HashMap<u16, Vec<CpuInterval>> = HashMap::new();
        for interval in chunks.flat_map(|c| c.cpu.iter()) {
            lanes.entry(interval.lane).or_default().push(*interval);
        }
        // A lane's intervals follow one another as its samples do; a
        // thread that started over on it may overlap its last one.
        for intervals in lanes.values_mut() {
            intervals.sort_by_key(|i| (i.to, i.from));
        }
        let mut index = CpuIndex {
            lanes,
            off_cpu: HashMap::new(),
        };
        index.add_off_cpu(chunks_again.flat_map(|c| c.off_cpu.iter().copied()));
        index
    }

    /// With the threads switched out now too (the reader's
    /// [`State::off_cpu_open`], each as of now): a live stall's thread
    /// asleep since it began has no slice in the chunks yet.
    ///
    /// [`State::off_cpu_open`]: typhon_live_reader::State::off_cpu_open
    pub fn with_off_cpu_open(mut self, open: impl IntoIterator<Item = OffCpu>) -> CpuIndex {
        self.add_off_cpu(open);
        self
    }

    /// Adds `slices`, each lane they join kept in order of start.
    fn add_off_cpu(&mut self, slices: impl IntoIterator<Item = OffCpu>) {
        let mut joined = Vec::new();
        for slice in slices {
            self.off_cpu.entry(slice.lane).or_default().push(slice);
            if !joined.contains(&slice.lane) {
                joined.push(slice.lane);
            }
        }
        for lane in joined {
            if let Some(slices) = self.off_cpu.get_mut(&lane) {
                slices.sort_by_key(|s| s.from);
            }
        }
    }

    /// Whether any lane has an interval.
    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }

    /// How `[from, to)` of lane `lane` divides: from its switches where
    /// every interval it overlaps had them traced, else prorated from the
    /// intervals; `None` when none overlaps.
    pub fn share(&self, lane: u16, from: u64, to: u64) -> Option<CpuShare> {
        let intervals = self.lanes.get(&lane)?;
        let first = intervals.partition_point(|i| i.to <= from);
        let overlapping = || intervals[first..].iter().take_while(|i| i.from < to);
        let mut sums = Sums::default();
        for interval in overlapping() {
            sums.add(interval, from, to);
        }
        let estimate = sums.finish()?;
        if !overlapping().all(|i| i.switches_traced) {
            return Some(estimate);
        }
        // What the switches cover: the intervals' stretch of the range.
        let covered_from = overlapping().map(|i| i.from).min()?.max(from);
        let covered_to = overlapping().map(|i| i.to).max()?.min(to);
        let slices = self.off_cpu.get(&lane).map_or(&[][..], Vec::as_slice);
        Some(exact(slices, covered_from, covered_to))
    }

    /// The share of every span of name `name` in `spans`, summed, and of
    /// the longest of them on its own.
    pub fn of_name<'a>(
        &self,
        spans: impl Iterator<Item = &'a SpanRecord>,
        name: u32,
    ) -> Option<NameCpu> {
        self.by_name(spans.filter(|s| s.name == name)).remove(&name)
    }

    /// [`CpuIndex::of_name`] of every name in `spans`, in one pass.
    pub fn by_name<'a>(
        &self,
        spans: impl Iterator<Item = &'a SpanRecord>,
    ) -> HashMap<u32, NameCpu> {
        let mut names: HashMap<u32, NameCpu> = HashMap::new();
        for span in spans.filter(|s| !s.poll) {
            let end = span.start.saturating_add(span.duration);
            let Some(share) = self.share(span.lane, span.start, end) else {
                continue;
            };
            let name = names.entry(span.name).or_insert(NameCpu {
                all: CpuShare::default(),
                longest: (*span, share),
            });
            name.all.add(&share);
            if span.duration > name.longest.0.duration {
                name.longest = (*span, share);
            }
        }
        names
    }
}

/// How `[from, to)` divides, from a thread's off-CPU `slices` (by their
/// start; one lane's do not overlap): waiting for a core where it was
/// preempted, off a CPU where it waited of its own accord, on a CPU
/// elsewhere (a span begins on a running thread). The switches out
/// counted are those after `from`: one at `from` left before the range.
fn exact(slices: &[OffCpu], from: u64, to: u64) -> CpuShare {
    // The last slice that began at or before `from` may reach into it.
    let first = slices.partition_point(|s| s.from <= from).saturating_sub(1);
    let (mut off, mut waiting, mut voluntary, mut involuntary) = (0, 0, 0, 0);
    for slice in slices[first..].iter().take_while(|s| s.from < to) {
        let spent = slice.to.min(to).saturating_sub(slice.from.max(from));
        let began_inside = slice.from > from;
        if slice.preempted {
            waiting += spent;
            involuntary += u64::from(began_inside);
        } else {
            off += spent;
            voluntary += u64::from(began_inside);
        }
    }
    let covered = to.saturating_sub(from);
    CpuShare {
        covered,
        on_cpu: covered.saturating_sub(off + waiting),
        waiting: Some(waiting),
        voluntary: Some(voluntary),
        involuntary: Some(involuntary),
        exact: true,
    }
}

/// A span name's CPU share over a history.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NameCpu {
    /// All its spans' that samples cover, summed.
    pub all: CpuShare,
    /// Its longest span that samples cover, and that span's share.
    pub longest: (SpanRecord, CpuShare),
}

impl NameCpu {
    /// What a view says of it, as two lines: "CPU, from switches: 2 % on
    /// CPU, 98 % off-CPU (voluntary)" (or "from samples"), and "longest:
    /// NAME: 1.20 s, of which …".
    pub fn lines(&self, name: &str) -> [String; 2] {
        let (span, longest) = &self.longest;
        [
            format!("CPU, {}: {}", self.all.source(), self.all.percent_text()),
            format!("longest: {}", longest.sentence(name, span.duration)),
        ]
    }
}

/// A share being summed: fractions of intervals, rounded once at the end.
#[derive(Default)]
struct Sums {
    covered: u64,
    on_cpu: f64,
    waiting: Option<f64>,
    voluntary: Option<f64>,
    involuntary: Option<f64>,
    any: bool,
}

impl Sums {
    /// The part of `interval` inside `[from, to)`.
    fn add(&mut self, interval: &CpuInterval, from: u64, to: u64) {
        let Some(on_cpu) = interval.spent.on_cpu_ns else {
            return;
        };
        let overlap = interval.to.min(to).saturating_sub(interval.from.max(from));
        let length = interval.to.saturating_sub(interval.from);
        if overlap == 0 || length == 0 {
            return;
        }
        let part = overlap as f64 / length as f64;
        let first = !self.any;
        // A counter is known if every interval read has it.
        let add = |sum: &mut Option<f64>, value: Option<u64>| {
            *sum = match (first, *sum, value) {
                (true, _, Some(v)) => Some(v as f64 * part),
                (false, Some(s), Some(v)) => Some(s + v as f64 * part),
                _ => None,
            };
        };
        add(&mut self.waiting, interval.spent.waiting_ns);
        add(&mut self.voluntary, interval.spent.voluntary);
        add(&mut self.involuntary, interval.spent.involuntary);
        self.covered = self.covered.saturating_add(overlap);
        // Not clamped to the overlap here: a sample's time is taken a
        // little before its counters are read, so one interval may show
        // more than its length and the next less; summed, that evens out.
        self.on_cpu += on_cpu as f64 * part;
        self.any = true;
    }

    fn finish(self) -> Option<CpuShare> {
        let round = |v: f64| v.round() as u64;
        self.any.then(|| CpuShare {
            covered: self.covered,
            on_cpu: round(self.on_cpu).min(self.covered),
            waiting: self.waiting.map(round),
            voluntary: self.voluntary.map(round),
            involuntary: self.involuntary.map(round),
            exact: false,
        })
    }
}

/// One column of a lane's CPU strip: how the time its samples cover
/// there divides, as fractions that add up to 1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuCell {
    /// On a CPU.
    pub on_cpu: f32,
    /// Runnable and waiting for a CPU.
    pub waiting: f32,
    /// Off a CPU (asleep, blocked).
    pub off_cpu: f32,
}

impl CpuCell {
    /// The colour both viewers draw it in, so that they agree: green on
    /// a CPU, yellow waiting for one, grey off it, mixed by share.
    pub fn rgb(&self) -> [u8; 3] {
        const ON: [f32; 3] = [60.0, 200.0, 80.0];
        const WAITING: [f32; 3] = [230.0, 190.0, 40.0];
        const OFF: [f32; 3] = [90.0, 90.0, 90.0];
        let mix = |i: usize| {
            let v = self.on_cpu * ON[i] + self.waiting * WAITING[i] + self.off_cpu * OFF[i];
            v.round().clamp(0.0, 255.0) as u8
        };
        [mix(0), mix(1), mix(2)]
    }
}

impl CpuIndex {
    /// Lane `lane`'s strip over `[start, end)` in `columns` equal
    /// columns: each column's [`CpuCell`], `None` where nothing covers
    /// it; `None` in all when the lane has no interval in the window (no
    /// strip to draw).
    pub fn strip(
        &self,
        lane: u16,
        (start, end): (u64, u64),
        columns: usize,
    ) -> Option<Vec<Option<CpuCell>>> {
        if columns == 0 || end <= start {
            return None;
        }
        let intervals = self.lanes.get(&lane)?;
        let first = intervals.partition_point(|i| i.to <= start);
        if intervals.get(first).is_none_or(|i| i.from >= end) {
            return None;
        }
        let width = (end - start) as f64 / columns as f64;
        let cells = (0..columns).map(|at| {
            let from = start + (at as f64 * width) as u64;
            let to = start + ((at + 1) as f64 * width) as u64;
            let share = self.share(lane, from, to).filter(|s| s.covered > 0)?;
            let covered = share.covered as f32;
            let on_cpu = (share.on_cpu as f32 / covered).min(1.0);
            let waiting = (share.waiting.unwrap_or(0) as f32 / covered).min(1.0 - on_cpu);
            Some(CpuCell {
                on_cpu,
                waiting,
                off_cpu: (1.0 - on_cpu - waiting).max(0.0),
            })
        });
        Some(cells.collect())
    }
}

#[cfg(test)]
mod tests {
    use typhon_live_core::Counters;

    use super::*;

    const MS: u64 = 1_000_000;

    /// Lane 1's 10 ms intervals from `from` ms, each with `on` ms on a
    /// CPU, `waiting` ms waiting, and one voluntary switch.
    fn chunk(from: u64, on: &[u64], waiting: u64) -> Chunk {
        let mut chunk = Chunk::default();
        for (i, &on) in on.iter().enumerate() {
            let at = (from + 10 * i as u64) * MS;
            chunk.push_cpu(CpuInterval {
                lane: 1,
                thread: 7,
                from: at,
                to: at + 10 * MS,
                spent: Counters {
                    on_cpu_ns: Some(on * MS),
                    waiting_ns: Some(waiting * MS),
                    voluntary: Some(1),
                    involuntary: Some(0),
                    ..Counters::default()
                },
                switches_traced: false,
            });
        }
        chunk
    }

    #[test]
    fn a_range_takes_its_part_of_each_interval_it_overlaps() {
        let chunks = [chunk(0, &[10, 0, 2], 0), chunk(30, &[4], 6)];
        let index = CpuIndex::of(chunks.iter());
        // 5..35 ms: half of the first (5 ms on), all the second and
        // third (2 ms on, 2 switches), half the fourth (2 on, 3 waiting).
        let share = index.share(1, 5 * MS, 35 * MS).unwrap();
        assert_eq!(share.covered, 30 * MS);
        assert_eq!(share.on_cpu, 9 * MS);
        assert_eq!(share.waiting, Some(3 * MS));
        assert_eq!(share.off_cpu(), 18 * MS);
        assert_eq!(share.voluntary, Some(3));
        assert_eq!(share.off_cause(), Some("voluntary"));
        // Past the samples: covered in part, and said.
        let share = index.share(1, 30 * MS, 60 * MS).unwrap();
        assert_eq!(share.covered, 10 * MS);
        assert_eq!(
            share.sentence("Sim.AI", 30 * MS),
            "Sim.AI: 30.0 ms, of which 4.0 ms on CPU, 6.0 ms waiting for a core, \
             0.0 ms off-CPU; samples cover 10.0 ms"
        );
        assert_eq!(index.share(2, 0, 60 * MS), None);
        assert_eq!(index.share(1, 40 * MS, 60 * MS), None);
    }

    #[test]
    fn where_switches_were_traced_a_range_is_read_from_them_exactly() {
        let mut chunk = Chunk::default();
        chunk.push_cpu(CpuInterval {
            lane: 1,
            thread: 7,
            from: 0,
            to: 100 * MS,
            // The samples' sums, which the switches make exact.
            spent: Counters {
                on_cpu_ns: Some(60 * MS),
                waiting_ns: Some(10 * MS),
                voluntary: Some(1),
                involuntary: Some(1),
                ..Counters::default()
            },
            switches_traced: true,
        });
        // Out to wait 20..50 ms, preempted 70..80.
        for (from, to, preempted) in [(20, 50, false), (70, 80, true)] {
            chunk.push_off_cpu(OffCpu {
                lane: 1,
                from: from * MS,
                to: to * MS,
                preempted,
            });
        }
        let index = CpuIndex::of([chunk].iter());
        let share = index.share(1, 0, 100 * MS).unwrap();
        assert_eq!(
            share,
            CpuShare {
                covered: 100 * MS,
                on_cpu: 60 * MS,
                waiting: Some(10 * MS),
                voluntary: Some(1),
                involuntary: Some(1),
                exact: true,
            }
        );
        assert_eq!(share.off_cpu(), 30 * MS);
        // From inside the wait: off until 50, then on; where prorating
        // would have said 6 ms on of the 30.
        let share = index.share(1, 30 * MS, 60 * MS).unwrap();
        assert_eq!((share.on_cpu, share.off_cpu()), (10 * MS, 20 * MS));
        assert_eq!(share.source(), "from switches");
        // The strip's columns too: 10 ms each.
        let cells = index.strip(1, (0, 100 * MS), 10).unwrap();
        let on: Vec<f32> = cells.iter().map(|c| c.unwrap().on_cpu).collect();
        assert_eq!(on, [1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]);
        assert_eq!(cells[7].unwrap().waiting, 1.0);
    }

    #[test]
    fn a_thread_switched_out_now_is_off_cpu_up_to_now() {
        let mut chunk = chunk(0, &[3; 10], 0);
        chunk.cpu.iter_mut().for_each(|i| i.switches_traced = true);
        chunk.push_off_cpu(OffCpu {
            lane: 1,
            from: 10 * MS,
            to: 20 * MS,
            preempted: false,
        });
        let open = typhon_live_reader::OpenOffCpu {
            lane: 1,
            since: 70 * MS,
            preempted: false,
        };
        // Without it, the stretch since its switch out reads as on a CPU.
        let index = CpuIndex::of([chunk.clone()].iter());
        let share = index.share(1, 50 * MS, 100 * MS).unwrap();
        assert_eq!((share.on_cpu, share.off_cpu()), (50 * MS, 0));
        let index = CpuIndex::of([chunk].iter()).with_off_cpu_open([open.until(120 * MS)]);
        let share = index.share(1, 50 * MS, 100 * MS).unwrap();
        assert_eq!((share.on_cpu, share.off_cpu()), (20 * MS, 30 * MS));
        assert_eq!(share.voluntary, Some(1));
        let share = index.share(1, 0, 100 * MS).unwrap();
        assert_eq!((share.on_cpu, share.off_cpu()), (60 * MS, 40 * MS));
    }

    #[test]
    fn a_sleep_reads_as_off_cpu_and_a_spin_as_on() {
        let sleep = CpuIndex::of([chunk(0, &[0; 120], 0)].iter());
        let share = sleep.share(1, 0, 1_200 * MS).unwrap();
        assert_eq!(
            share.sentence("Sim.AI", 1_200 * MS),
            "Sim.AI: 1.20 s, of which 0.00 s on CPU, 1.20 s off-CPU (voluntary)"
        );
        let spin = CpuIndex::of([chunk(0, &[10; 120], 0)].iter());
        let share = spin.share(1, 0, 1_200 * MS).unwrap();
        assert_eq!((share.on_cpu, share.off_cpu()), (1_200 * MS, 0));
    }

    #[test]
    fn a_names_share_sums_its_spans_and_keeps_its_longest() {
        let chunks = [chunk(0, &[10, 0, 0, 0], 0)];
        let index = CpuIndex::of(chunks.iter());
        let span = |start: u64, duration: u64, name: u32| SpanRecord {
            start: start * MS,
            duration: duration * MS,
            arg: 0,
            id: 0,
            parent: 0,
            name,
            lane: 1,
            has_arg: false,
            poll: false,
        };
        let spans = [span(0, 10, 5), span(10, 30, 5), span(0, 40, 6)];
        let cpu = index.of_name(spans.iter(), 5).unwrap();
        assert_eq!((cpu.all.covered, cpu.all.on_cpu), (40 * MS, 10 * MS));
        assert_eq!(cpu.longest.0, spans[1]);
        assert_eq!(cpu.longest.1.on_cpu, 0);
        assert_eq!(
            cpu.lines("AI"),
            [
                "CPU, from samples: 25 % on CPU, 75 % off-CPU (voluntary)",
                "longest: AI: 30.0 ms, of which 0.0 ms on CPU, 30.0 ms off-CPU (voluntary)"
            ]
        );
        assert_eq!(index.of_name(spans.iter(), 9), None);
    }

    #[test]
    fn the_strip_divides_each_column_and_leaves_the_unsampled_empty() {
        let chunks = [chunk(0, &[10, 0, 5], 5)];
        // 0..40 ms in four columns: running, asleep, half and half
        // waiting, then nothing.
        let index = CpuIndex::of(chunks.iter());
        let cells = index.strip(1, (0, 40 * MS), 4).unwrap();
        let on = |c: &Option<CpuCell>| c.map(|c| (c.on_cpu, c.waiting));
        assert_eq!(
            cells.iter().map(on).collect::<Vec<_>>(),
            [Some((1.0, 0.0)), Some((0.0, 0.5)), Some((0.5, 0.5)), None]
        );
        assert_eq!(index.strip(2, (0, 40 * MS), 4), None);
        assert_eq!(index.strip(1, (50 * MS, 60 * MS), 4), None);
    }
}
