//! Span statistics: per-name totals that add up chunk by chunk (and
//! subtract when a chunk leaves the history), and the exact distribution
//! of one name's durations, computed on demand.

use foldhash::HashMap;

use serde::{Deserialize, Serialize};

/// One span name's totals over a stretch of the stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NameTotals {
    /// Spans that ended.
    pub count: u64,
    /// Their durations, summed.
    pub total: u64,
    /// Their self times (duration minus their children's), summed.
    pub self_time: u64,
    /// The time they ran, summed: a span's duration, a task span's polls;
    /// `total - busy` is the time task spans waited between polls.
    pub busy: u64,
    /// The longest duration.
    pub max: u64,
    /// The start of the longest span.
    pub max_at: u64,
    /// The bytes they allocated themselves, their children's left out
    /// (FORMAT.md, "Allocated bytes"), summed.
    pub allocated: u64,
}

impl NameTotals {
    /// Counts one span of `duration` starting at `start`, `self_time` of it
    /// outside its children.
    pub fn add_span(&mut self, start: u64, duration: u64, self_time: u64) {
        self.add_task(start, duration, duration, self_time);
    }

    /// Counts one task span created at `start`, of `wall` from its
    /// creation to its close, `busy` of it in its polls, and `self_time`
    /// of those outside the spans inside them.
    pub fn add_task(&mut self, start: u64, wall: u64, busy: u64, self_time: u64) {
        self.count += 1;
        self.total = self.total.saturating_add(wall);
        self.busy = self.busy.saturating_add(busy);
        self.self_time = self.self_time.saturating_add(self_time);
        if wall > self.max || self.count == 1 {
            self.max = wall;
            self.max_at = start;
        }
    }
}

/// Totals per span name id.
pub type Totals = HashMap<u32, NameTotals>;

/// Adds `part` into `sum`: counts and sums add, the maximum is the larger.
pub fn add(sum: &mut Totals, part: &Totals) {
    for (&name, t) in part {
        let s = sum.entry(name).or_default();
        s.count += t.count;
        s.total = s.total.saturating_add(t.total);
        s.self_time = s.self_time.saturating_add(t.self_time);
        s.busy = s.busy.saturating_add(t.busy);
        s.allocated = s.allocated.saturating_add(t.allocated);
        if t.max > s.max || s.count == t.count {
            s.max = t.max;
            s.max_at = t.max_at;
        }
    }
}

/// Takes `part` out of `sum` (a chunk leaving the window). Counts and sums
/// subtract; a maximum cannot, so `max` is left as it was: ask the history
/// for a window's maximum ([`crate::history::History::distribution`]).
pub fn subtract(sum: &mut Totals, part: &Totals) {
    for (name, t) in part {
        if let Some(s) = sum.get_mut(name) {
            s.count = s.count.saturating_sub(t.count);
            s.total = s.total.saturating_sub(t.total);
            s.self_time = s.self_time.saturating_sub(t.self_time);
            s.busy = s.busy.saturating_sub(t.busy);
            s.allocated = s.allocated.saturating_sub(t.allocated);
            if s.count == 0 {
                sum.remove(name);
            }
        }
    }
}

/// The exact distribution of one span name's durations, in host ticks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// Spans counted.
    pub count: u64,
    /// Durations summed.
    pub total: u64,
    /// Self times summed.
    pub self_time: u64,
    /// Time run, summed (task spans: their polls); `total - busy` waited.
    /// [`Distribution::of`] counts every duration as run; the history's
    /// distribution takes it from its totals.
    pub busy: u64,
    /// The bytes they allocated themselves, summed ([`NameTotals`]);
    /// [`Distribution::of`] knows none, the history's distribution takes
    /// it from its totals.
    pub allocated: u64,
    /// Mean duration.
    pub mean: f64,
    /// Nearest-rank percentiles: the smallest duration with at least that
    /// share of the spans at or below it.
    pub p50: u64,
    /// See `p50`.
    pub p90: u64,
    /// See `p50`.
    pub p99: u64,
    /// The longest duration, and where that span started.
    pub max: u64,
    /// See `max`.
    pub max_at: u64,
    /// Counts of durations in [`HISTOGRAM_BUCKETS`] buckets from the
    /// shortest to the longest, on a log scale (each bucket a fixed
    /// multiple of the one before): a stall 1 000 times the usual keeps
    /// the usual visible.
    pub histogram: Vec<u64>,
    /// The shortest duration: where the histogram starts.
    pub min: u64,
}

/// Buckets of [`Distribution::histogram`].
pub const HISTOGRAM_BUCKETS: usize = 32;

impl Distribution {
    /// The distribution of `durations` (reordered in place), whose self
    /// times sum to `self_time` and whose longest started at `max_at`.
    pub fn of(durations: &mut [u64], self_time: u64, max_at: u64) -> Distribution {
        let count = durations.len();
        if count == 0 {
            return Distribution::default();
        }
        durations.sort_unstable();
        let rank = |q: f64| durations[((q * count as f64).ceil() as usize).clamp(1, count) - 1];
        let total = durations.iter().fold(0u64, |a, &d| a.saturating_add(d));
        let (min, max) = (durations[0], durations[count - 1]);
        let mut histogram = vec![0u64; HISTOGRAM_BUCKETS];
        // Bucket of d: where ln(d) lies between ln(min) and ln(max), from 1.
        let (low, high) = ((min.max(1) as f64).ln(), (max.max(1) as f64).ln());
        let span = (high - low).max(f64::EPSILON);
        for &d in durations.iter() {
            let at = ((d.max(1) as f64).ln() - low) / span * HISTOGRAM_BUCKETS as f64;
            histogram[(at as usize).min(HISTOGRAM_BUCKETS - 1)] += 1;
        }
        Distribution {
            count: count as u64,
            total,
            self_time,
            busy: total,
            allocated: 0,
            mean: total as f64 / count as f64,
            p50: rank(0.5),
            p90: rank(0.9),
            p99: rank(0.99),
            max,
            max_at,
            histogram,
            min,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_distribution_has_exact_percentiles() {
        // 1..=1000 in a scrambled order.
        let mut durations: Vec<u64> = (1..=1000).map(|i| (i * 7919) % 1000 + 1).collect();
        let d = Distribution::of(&mut durations, 123, 42);
        assert_eq!((d.count, d.min, d.max), (1000, 1, 1000));
        assert_eq!((d.p50, d.p90, d.p99), (500, 900, 990));
        assert_eq!(d.total, 500_500);
        assert_eq!(d.mean, 500.5);
        assert_eq!((d.self_time, d.max_at), (123, 42));
        assert_eq!(d.histogram.iter().sum::<u64>(), 1000);
        // Log buckets: 1 alone in the first, ever more per bucket after.
        assert_eq!(d.histogram[0], 1, "{:?}", d.histogram);
        assert!(d.histogram[31] > d.histogram[16], "{:?}", d.histogram);
    }

    #[test]
    fn one_value_and_none() {
        let d = Distribution::of(&mut [7], 7, 3);
        assert_eq!((d.p50, d.p99, d.max, d.histogram[0]), (7, 7, 7, 1));
        assert_eq!(Distribution::of(&mut [], 0, 0).count, 0);
    }

    #[test]
    fn totals_add_and_subtract() {
        let mut a = Totals::default();
        a.entry(1).or_default().add_span(0, 10, 4);
        a.entry(1).or_default().add_span(20, 30, 30);
        let mut b = Totals::default();
        b.entry(1).or_default().add_span(100, 5, 5);
        let mut sum = Totals::default();
        add(&mut sum, &a);
        add(&mut sum, &b);
        assert_eq!(sum[&1].count, 3);
        assert_eq!((sum[&1].total, sum[&1].self_time), (45, 39));
        assert_eq!((sum[&1].max, sum[&1].max_at), (30, 20));
        subtract(&mut sum, &a);
        assert_eq!((sum[&1].count, sum[&1].total), (1, 5));
        subtract(&mut sum, &b);
        assert!(sum.is_empty());
    }
}
