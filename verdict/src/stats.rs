//! The statistics of a verdict, on sorted durations.
//!
//! - A quantile is a value that was measured: the smallest with at least
//!   that share of the samples at or below it (no interpolation), so that
//!   a bootstrap's weighted quantile is the same rule.
//! - The rank test is Mann–Whitney's, with the normal approximation
//!   corrected for ties: it assumes no shape, so durations' skew and
//!   heavy tails do not make it lie.
//! - Holm's step-down correction keeps the chance of any false alarm
//!   among all the names compared at the level asked.
//! - The bootstrap resamples clusters (ticks): the spans of one tick
//!   share its conditions and are not independent of one another. When a
//!   side is several runs it resamples the runs first, then the ticks of
//!   each run drawn (a two-stage bootstrap): a whole run can be slower
//!   than another of the same program, and its ticks cannot tell.

use core::ops::Range;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::samples::Sorted;

/// The statistic a comparison is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stat {
    /// The median.
    P50,
    /// The 90th percentile.
    P90,
    /// The 99th percentile.
    P99,
    /// The mean.
    Mean,
}

impl Stat {
    /// Every statistic, as reports list them.
    pub const ALL: [Stat; 4] = [Stat::P50, Stat::P90, Stat::P99, Stat::Mean];

    /// As written on the command line and in reports.
    pub fn label(self) -> &'static str {
        match self {
            Stat::P50 => "p50",
            Stat::P90 => "p90",
            Stat::P99 => "p99",
            Stat::Mean => "mean",
        }
    }

    /// Of `sorted` durations (ascending, not empty).
    pub fn of(self, sorted: &[u64]) -> f64 {
        match self {
            Stat::P50 => quantile(sorted, 0.5),
            Stat::P90 => quantile(sorted, 0.9),
            Stat::P99 => quantile(sorted, 0.99),
            Stat::Mean => mean(sorted),
        }
    }

    fn share(self) -> Option<f64> {
        match self {
            Stat::P50 => Some(0.5),
            Stat::P90 => Some(0.9),
            Stat::P99 => Some(0.99),
            Stat::Mean => None,
        }
    }
}

impl core::str::FromStr for Stat {
    type Err = String;

    fn from_str(text: &str) -> Result<Stat, String> {
        Stat::ALL
            .into_iter()
            .find(|s| s.label() == text)
            .ok_or_else(|| format!("{text:?} is not a statistic: p50, p90, p99 or mean"))
    }
}

/// The smallest of `sorted` with at least `share` of them at or below it.
pub fn quantile(sorted: &[u64], share: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (share * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64
}

/// The mean of `values`.
pub fn mean(values: &[u64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64
}

/// Mann–Whitney's test of two samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RankTest {
    /// The two-sided p-value (normal approximation, corrected for ties).
    pub p: f64,
    /// The chance that a duration of the second sample is longer than
    /// one of the first, ties counted half: 0.5 when neither tends to be
    /// longer.
    pub longer: f64,
}

/// Mann–Whitney's U test of `a` against `b`, both sorted ascending and
/// not empty.
pub fn mann_whitney(a: &[u64], b: &[u64]) -> RankTest {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let n = n1 + n2;
    // The ranks of b's values in the merged order, ties at their mean
    // rank; and the ties' correction, sum of t^3 - t over tied groups.
    let (mut i, mut j) = (0, 0);
    let (mut rank_b, mut ties) = (0.0f64, 0.0f64);
    let mut rank = 0.0f64;
    while i < a.len() || j < b.len() {
        let v = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => break,
        };
        let from_a = a[i..].iter().take_while(|&&x| x == v).count();
        let from_b = b[j..].iter().take_while(|&&y| y == v).count();
        let t = (from_a + from_b) as f64;
        let mean_rank = rank + (t + 1.0) / 2.0;
        rank_b += mean_rank * from_b as f64;
        ties += t * t * t - t;
        rank += t;
        i += from_a;
        j += from_b;
    }
    let u = rank_b - n2 * (n2 + 1.0) / 2.0;
    let mean_u = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)).max(1.0));
    let p = if variance <= 0.0 {
        1.0
    } else {
        // Continuity-corrected.
        let z = ((u - mean_u).abs() - 0.5).max(0.0) / variance.sqrt();
        libm::erfc(z / core::f64::consts::SQRT_2).min(1.0)
    };
    RankTest {
        p,
        longer: u / (n1 * n2),
    }
}

/// Holm's adjusted p-values of `p`, in the same order: each compared
/// with the level asked keeps the chance of any false alarm among them
/// at that level.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&x, &y| p[x].total_cmp(&p[y]));
    let m = p.len();
    let mut adjusted = vec![1.0; m];
    let mut running = 0.0f64;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// One name's samples as the bootstrap reads them: its clusters' counts
/// and sums, for the weights' total and the mean.
struct Clustered<'a> {
    sorted: &'a Sorted,
    /// (cluster, count, sum of durations) for each cluster it has.
    clusters: Vec<(u32, u32, u64)>,
}

impl<'a> Clustered<'a> {
    fn new(sorted: &'a Sorted) -> Clustered<'a> {
        let mut pairs: Vec<(u32, u64)> = (sorted.clusters.iter().copied())
            .zip(sorted.values.iter().copied())
            .collect();
        pairs.sort_unstable_by_key(|p| p.0);
        let mut clusters: Vec<(u32, u32, u64)> = Vec::new();
        for (c, v) in pairs {
            match clusters.last_mut() {
                Some(last) if last.0 == c => {
                    last.1 += 1;
                    last.2 += v;
                }
                _ => clusters.push((c, 1, v)),
            }
        }
        Clustered { sorted, clusters }
    }

    /// `stat` of the samples, each counted as often as its cluster's
    /// weight says; `None` when every cluster it has weighs 0.
    fn weighted(&self, stat: Stat, weights: &[u32]) -> Option<f64> {
        let (mut total, mut sum) = (0u64, 0f64);
        for &(c, count, s) in &self.clusters {
            let w = u64::from(weights[c as usize]);
            total += w * u64::from(count);
            sum += w as f64 * s as f64;
        }
        if total == 0 {
            return None;
        }
        let Some(share) = stat.share() else {
            return Some(sum / total as f64);
        };
        let (values, clusters) = (&self.sorted.values, &self.sorted.clusters);
        // Scanned from the nearer end.
        let rank = ((share * total as f64).ceil() as u64).clamp(1, total);
        if share <= 0.5 {
            let mut seen = 0u64;
            for (v, &c) in values.iter().zip(clusters) {
                seen += u64::from(weights[c as usize]);
                if seen >= rank {
                    return Some(*v as f64);
                }
            }
        } else {
            // The value with more than total - rank above it.
            let above = total - rank;
            let mut seen = 0u64;
            for (v, &c) in values.iter().zip(clusters).rev() {
                seen += u64::from(weights[c as usize]);
                if seen > above {
                    return Some(*v as f64);
                }
            }
        }
        values.last().map(|&v| v as f64)
    }
}

/// A bootstrap's interval of a relative change.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// Its low end, as a fraction (-0.02 is 2 % less).
    pub low: f64,
    /// Its high end.
    pub high: f64,
}

/// How a bootstrap runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bootstrap {
    /// Resamples of each side.
    pub rounds: usize,
    /// The interval's confidence (0.95).
    pub confidence: f64,
    /// The resampling's seed: a verdict is the same each time it is made.
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            rounds: 1000,
            confidence: 0.95,
            seed: 0x7970_686f_6e21,
        }
    }
}

impl Bootstrap {
    /// The interval of `stat`'s relative change from `base[i]` to
    /// `new[i]`, for each pair, resampling each side's runs and then
    /// their clusters with replacement (`base_runs`, `new_runs`: each
    /// run's clusters, together all of the side's). One resample of a side
    /// serves all its names, as ticks are resampled whole. `None` where a
    /// side's statistic is 0.
    pub fn changes(
        &self,
        stat: Stat,
        pairs: &[(&Sorted, &Sorted)],
        base_runs: &[Range<u32>],
        new_runs: &[Range<u32>],
    ) -> Vec<Option<Interval>> {
        let base: Vec<Clustered> = pairs.iter().map(|p| Clustered::new(p.0)).collect();
        let new: Vec<Clustered> = pairs.iter().map(|p| Clustered::new(p.1)).collect();
        let mut rng = SmallRng::seed_from_u64(self.seed);
        let mut changes: Vec<Vec<f64>> = vec![Vec::with_capacity(self.rounds); pairs.len()];
        let clusters = |runs: &[Range<u32>]| runs.iter().map(|r| r.end as usize).max().unwrap_or(0);
        let (mut wb, mut wn) = (
            vec![0u32; clusters(base_runs)],
            vec![0u32; clusters(new_runs)],
        );
        for _ in 0..self.rounds {
            resample(&mut rng, base_runs, &mut wb);
            resample(&mut rng, new_runs, &mut wn);
            for (i, (b, n)) in base.iter().zip(&new).enumerate() {
                if let (Some(b), Some(n)) = (b.weighted(stat, &wb), n.weighted(stat, &wn)) {
                    if b > 0.0 {
                        changes[i].push(n / b - 1.0);
                    }
                }
            }
        }
        let tail = (1.0 - self.confidence) / 2.0;
        changes
            .into_iter()
            .map(|mut c| {
                // A name seen in too few resamples has no interval.
                if c.len() < self.rounds / 2 {
                    return None;
                }
                c.sort_unstable_by(f64::total_cmp);
                let at = |share: f64| c[((share * c.len() as f64) as usize).min(c.len() - 1)];
                Some(Interval {
                    low: at(tail),
                    high: at(1.0 - tail),
                })
            })
            .collect()
    }
}

/// Draws as many runs as there are, with replacement, and for each run
/// drawn as many of its clusters as it has, with replacement: each weight
/// is how often its cluster was drawn. One run: its clusters are drawn.
fn resample(rng: &mut SmallRng, runs: &[Range<u32>], weights: &mut [u32]) {
    weights.fill(0);
    if runs.is_empty() {
        return;
    }
    for _ in 0..runs.len() {
        let run = &runs[rng.random_range(0..runs.len())];
        if run.is_empty() {
            continue;
        }
        for _ in run.clone() {
            weights[rng.random_range(run.clone()) as usize] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut values: Vec<u64>) -> Sorted {
        values.sort_unstable();
        Sorted {
            name: "x".into(),
            clusters: (0..values.len() as u32).collect(),
            values,
        }
    }

    #[test]
    fn quantiles_are_measured_values() {
        let v = [10, 20, 30, 40];
        assert_eq!(quantile(&v, 0.5), 20.0);
        assert_eq!(quantile(&v, 0.9), 40.0);
        assert_eq!(quantile(&v, 0.0), 10.0);
        assert_eq!(quantile(&[7], 0.99), 7.0);
        assert_eq!(mean(&v), 25.0);
    }

    /// Worked by hand: U = 87.5 for b; 5 tied pairs, so the variance is
    /// 100/12 * (21 - 30/380) = 174.342; z = (37.5 - 0.5)/13.204 =
    /// 2.8022; p = 2 (1 - Phi(2.8022)) = 0.005075.
    #[test]
    fn the_rank_test_agrees_with_a_worked_example() {
        let a = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
        let b = [6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
        let t = mann_whitney(&a, &b);
        assert!((t.longer - 0.875).abs() < 1e-12, "{t:?}");
        assert!((t.p - 0.005_075).abs() < 1e-6, "{t:?}");
        // The same samples: no evidence either way.
        let same = mann_whitney(&a, &a);
        assert!((same.longer - 0.5).abs() < 1e-12);
        assert!(same.p > 0.99, "{same:?}");
        // All tied: variance 0, p 1.
        assert_eq!(mann_whitney(&[5, 5], &[5, 5, 5]).p, 1.0);
    }

    #[test]
    fn holm_steps_down_and_stays_monotone() {
        let adjusted = holm(&[0.01, 0.04, 0.03, 0.5]);
        assert_eq!(adjusted, vec![0.04, 0.09, 0.09, 0.5]);
        assert_eq!(holm(&[]), Vec::<f64>::new());
    }

    #[test]
    fn the_weighted_quantile_with_unit_weights_is_the_quantile() {
        let s = sorted((1..=101).map(|v| v * 3).collect());
        let c = Clustered::new(&s);
        let ones = vec![1u32; 101];
        for stat in Stat::ALL {
            assert_eq!(
                c.weighted(stat, &ones),
                Some(stat.of(&s.values)),
                "{stat:?}"
            );
        }
        // Weights count a value as often as its cluster is drawn.
        let mut w = vec![0u32; 101];
        w[100] = 3;
        w[0] = 1;
        assert_eq!(c.weighted(Stat::P50, &w), Some(303.0));
        assert_eq!(c.weighted(Stat::Mean, &w), Some((3.0 + 3.0 * 303.0) / 4.0));
    }

    #[test]
    fn the_bootstrap_covers_a_known_shift_and_excludes_none_where_there_is_one() {
        // Lognormal-ish durations from a fixed generator; new is 10 % longer.
        let mut rng = SmallRng::seed_from_u64(3);
        let draw = |rng: &mut SmallRng| {
            let u: f64 = rng.random_range(0.0..1.0);
            (100_000.0 * (1.0 + 2.0 * u * u)) as u64
        };
        let base = sorted((0..2000).map(|_| draw(&mut rng)).collect());
        let new = sorted((0..2000).map(|_| draw(&mut rng) * 11 / 10).collect());
        let same = sorted((0..2000).map(|_| draw(&mut rng)).collect());
        let boot = Bootstrap::default();
        let all = core::slice::from_ref(&(0..2000));
        let ci = boot.changes(Stat::P50, &[(&base, &new), (&base, &same)], all, all);
        let shifted = ci[0].unwrap();
        assert!(
            shifted.low > 0.03 && shifted.low < 0.10 && shifted.high > 0.10,
            "{shifted:?}"
        );
        let unchanged = ci[1].unwrap();
        assert!(unchanged.low < 0.0 && unchanged.high > 0.0, "{unchanged:?}");
    }
}
