//! Two sides compared name by name.
//!
//! For each name on both sides (and the ticks' row): each side's count,
//! p50, p90, p99 and mean; the relative change of one statistic with a
//! bootstrap interval over runs and ticks; Mann–Whitney's p-value,
//! Holm-adjusted over all the names tested. A name regressed when the
//! test is significant at `alpha`, its durations tend to be longer, the
//! statistic grew by more than `threshold`, and the interval lies above
//! no change. Names on one side only are listed, never failed.
//!
//! The interval is what sees runs: when a side is several runs of a
//! program, a whole run can be slower than another, which the rank test
//! over their pooled spans takes for a change. The bootstrap resamples
//! runs first, so a shift no larger than the runs of one side show among
//! themselves keeps "no change" inside the interval. With one run a side
//! it resamples ticks, and agrees with the rank test.

use core::fmt;

use serde::Serialize;

use crate::samples::{Reading, Side, Sorted};
use crate::stats::{self, Bootstrap, Interval, Stat};

/// How two sides are compared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// The statistic whose change is judged.
    pub stat: Stat,
    /// The relative change above which a significant one is a regression
    /// (0.05 is 5 %).
    pub threshold: f64,
    /// The chance of any false alarm among the names tested, when
    /// nothing changed (Holm's correction): the test's level.
    pub alpha: f64,
    /// Samples a side needs of a name for the name to be tested.
    pub min_samples: usize,
    /// The bootstrap's settings.
    pub bootstrap: Bootstrap,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            stat: Stat::P50,
            threshold: 0.05,
            alpha: 0.01,
            min_samples: 8,
            bootstrap: Bootstrap::default(),
        }
    }
}

/// Why two sides could not be compared.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompareError {
    /// A side holds no span and no tick.
    Empty {
        /// `base` or `new`.
        side: &'static str,
    },
    /// The sides share no name: traces of different programs.
    NothingInCommon {
        /// A few of the base's names.
        base: Vec<String>,
        /// A few of the new side's names.
        new: Vec<String>,
    },
}

impl fmt::Display for CompareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompareError::Empty { side } => {
                write!(f, "the {side} side holds no span and no tick to compare")
            }
            CompareError::NothingInCommon { base, new } => write!(
                f,
                "the two sides share no span name: traces of different programs? \
                 base has {}; new has {}",
                base.join(", "),
                new.join(", ")
            ),
        }
    }
}

impl std::error::Error for CompareError {}

/// A name's figures on one side, ns.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Figures {
    /// Samples.
    pub count: usize,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Mean.
    pub mean: f64,
}

impl Figures {
    fn of(sorted: &Sorted) -> Figures {
        let v = &sorted.values;
        Figures {
            count: v.len(),
            p50: Stat::P50.of(v),
            p90: Stat::P90.of(v),
            p99: Stat::P99.of(v),
            mean: Stat::Mean.of(v),
        }
    }

    /// The figure of `stat`.
    pub fn get(&self, stat: Stat) -> f64 {
        match stat {
            Stat::P50 => self.p50,
            Stat::P90 => self.p90,
            Stat::P99 => self.p99,
            Stat::Mean => self.mean,
        }
    }
}

/// What a name's comparison found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Significantly longer, by more than the threshold: a failure.
    Regression,
    /// Significantly shorter, by more than the threshold.
    Improvement,
    /// No significant change above the threshold.
    Unchanged,
    /// Too few samples on a side to test.
    TooFew,
    /// On the base side only.
    OnlyBase,
    /// On the new side only.
    OnlyNew,
}

impl Verdict {
    /// As reports write it.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regression => "REGRESSION",
            Verdict::Improvement => "improvement",
            Verdict::Unchanged => "unchanged",
            Verdict::TooFew => "too few to test",
            Verdict::OnlyBase => "only in base",
            Verdict::OnlyNew => "only in new",
        }
    }
}

/// One name compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The span name, or the ticks' row.
    pub name: String,
    /// Its figures on the base side.
    pub base: Option<Figures>,
    /// On the new side.
    pub new: Option<Figures>,
    /// The statistic's relative change (0.1 is 10 % longer).
    pub change: Option<f64>,
    /// The bootstrap's interval of that change.
    pub interval: Option<Interval>,
    /// Mann–Whitney's two-sided p-value.
    pub p: Option<f64>,
    /// Holm-adjusted over the names tested: compared with `alpha`.
    pub p_adjusted: Option<f64>,
    /// The chance a new duration is longer than a base one (0.5: neither
    /// side tends to be longer).
    pub longer: Option<f64>,
    /// What was found.
    pub verdict: Verdict,
}

/// A side as the comparison read it.
#[derive(Clone, Debug, Serialize)]
pub struct SideSummary {
    /// What was read.
    pub reading: Reading,
    /// Clusters the bootstrap resampled.
    pub clusters: usize,
    /// Runs the bootstrap resampled before their clusters.
    pub runs: usize,
    /// Whether they are ticks, or windows of host time.
    pub by_tick: bool,
}

impl SideSummary {
    fn of(side: &Side) -> SideSummary {
        SideSummary {
            reading: side.reading.clone(),
            clusters: side.clusters,
            runs: side.runs.len(),
            by_tick: side.by_tick,
        }
    }
}

/// Two sides compared: the verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The statistic judged.
    pub stat: Stat,
    /// The threshold, as a fraction.
    pub threshold: f64,
    /// The test's level.
    pub alpha: f64,
    /// The bootstrap's resamples, and its interval's confidence.
    pub rounds: usize,
    /// The interval's confidence.
    pub confidence: f64,
    /// The base side.
    pub base: SideSummary,
    /// The new side.
    pub new: SideSummary,
    /// Every name: regressions first, then improvements, then the rest.
    pub rows: Vec<Row>,
    /// Names that regressed.
    pub regressions: usize,
    /// Names that improved.
    pub improvements: usize,
    /// Names tested (on both sides with enough samples).
    pub tested: usize,
}

impl Comparison {
    /// Whether a name regressed.
    pub fn regressed(&self) -> bool {
        self.regressions > 0
    }

    /// Whether a side could not be read whole.
    pub fn damaged(&self) -> bool {
        self.base.reading.damaged() || self.new.reading.damaged()
    }
}

/// Compares `base` with `new`.
pub fn compare(base: &Side, new: &Side, options: &Options) -> Result<Comparison, CompareError> {
    for (side, label) in [(base, "base"), (new, "new")] {
        if side.series.is_empty() {
            return Err(CompareError::Empty { side: label });
        }
    }
    let mut rows = Vec::new();
    let mut tested: Vec<(&Sorted, &Sorted)> = Vec::new();
    for b in &base.series {
        let Some(n) = new.get(&b.name) else {
            rows.push(one_sided(b, Verdict::OnlyBase));
            continue;
        };
        if b.values.len() < options.min_samples || n.values.len() < options.min_samples {
            let mut row = one_sided(b, Verdict::TooFew);
            row.new = Some(Figures::of(n));
            rows.push(row);
        } else {
            tested.push((b, n));
        }
    }
    let common = tested.len() + rows.iter().filter(|r| r.verdict == Verdict::TooFew).count();
    // The ticks' row is common to every program that marks ticks.
    let spans_common = (tested.iter().map(|p| p.0.name.as_str()))
        .chain(
            rows.iter()
                .filter(|r| r.verdict == Verdict::TooFew)
                .map(|r| r.name.as_str()),
        )
        .any(|name| name != crate::samples::TICKS);
    if common == 0 || !spans_common {
        let few = |side: &Side| -> Vec<String> {
            let mut names: Vec<String> = (side.series.iter())
                .filter(|s| s.name != crate::samples::TICKS)
                .take(5)
                .map(|s| s.name.clone())
                .collect();
            if side.series.len() > names.len() + 1 {
                names.push("…".into());
            }
            names
        };
        return Err(CompareError::NothingInCommon {
            base: few(base),
            new: few(new),
        });
    }
    for n in &new.series {
        if base.get(&n.name).is_none() {
            let mut row = one_sided(n, Verdict::OnlyNew);
            row.new = row.base.take();
            rows.push(row);
        }
    }

    let tests: Vec<stats::RankTest> = (tested.iter())
        .map(|(b, n)| stats::mann_whitney(&b.values, &n.values))
        .collect();
    let adjusted = stats::holm(&tests.iter().map(|t| t.p).collect::<Vec<_>>());
    let intervals = options
        .bootstrap
        .changes(options.stat, &tested, &base.runs, &new.runs);
    for (i, (b, n)) in tested.iter().enumerate() {
        let (fb, fn_) = (Figures::of(b), Figures::of(n));
        let (from, to) = (fb.get(options.stat), fn_.get(options.stat));
        let change = (from > 0.0).then(|| to / from - 1.0);
        let significant = adjusted[i] < options.alpha;
        let longer = tests[i].longer;
        let interval = intervals[i];
        let above = interval.is_some_and(|i| i.low > 0.0);
        let below = interval.is_some_and(|i| i.high < 0.0);
        let verdict = match change {
            Some(c) if significant && above && c > options.threshold && longer > 0.5 => {
                Verdict::Regression
            }
            Some(c) if significant && below && c < -options.threshold && longer < 0.5 => {
                Verdict::Improvement
            }
            _ => Verdict::Unchanged,
        };
        rows.push(Row {
            name: b.name.clone(),
            base: Some(fb),
            new: Some(fn_),
            change,
            interval,
            p: Some(tests[i].p),
            p_adjusted: Some(adjusted[i]),
            longer: Some(longer),
            verdict,
        });
    }
    // Regressions first, the largest first; then the rest by name.
    rows.sort_by(|x, y| {
        let by_change = || {
            let c = |r: &Row| -r.change.unwrap_or(0.0).abs();
            c(x).total_cmp(&c(y))
        };
        x.verdict
            .cmp(&y.verdict)
            .then_with(|| match x.verdict {
                Verdict::Regression | Verdict::Improvement => by_change(),
                _ => core::cmp::Ordering::Equal,
            })
            .then_with(|| x.name.cmp(&y.name))
    });
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    Ok(Comparison {
        stat: options.stat,
        threshold: options.threshold,
        alpha: options.alpha,
        rounds: options.bootstrap.rounds,
        confidence: options.bootstrap.confidence,
        base: SideSummary::of(base),
        new: SideSummary::of(new),
        regressions: count(Verdict::Regression),
        improvements: count(Verdict::Improvement),
        tested: tested.len(),
        rows,
    })
}

/// A row with only `sorted`'s figures, as the base's.
fn one_sided(sorted: &Sorted, verdict: Verdict) -> Row {
    Row {
        name: sorted.name.clone(),
        base: Some(Figures::of(sorted)),
        new: None,
        change: None,
        interval: None,
        p: None,
        p_adjusted: None,
        longer: None,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::{Samples, TICKS};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use typhon_live_tests::ticks_trace;

    /// `ticks` ticks of three spans, their durations drawn with `seed`,
    /// `Physics` scaled by `slow`.
    fn side(seed: u64, ticks: usize, slow: f64) -> Side {
        runs(seed, ticks, &[1.0], slow, false)
    }

    /// A run of `ticks` ticks for each of `runs`, each run's durations
    /// scaled by its factor (a run slower as a whole), `Physics` by
    /// `slow` besides: read as runs, or as one trace that pools them.
    fn runs(seed: u64, ticks: usize, runs: &[f64], slow: f64, pooled: bool) -> Side {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut draw = |median: f64| {
            let u: f64 = rng.random_range(0.0..1.0);
            // Right-skewed, with a heavy tail: 2 % of them 4x as long.
            let tail = if rng.random_range(0..50) == 0 {
                4.0
            } else {
                1.0
            };
            (median * (0.7 + 0.6 * u) * tail) as u64
        };
        let each: Vec<Vec<_>> = (runs.iter())
            .map(|&run| {
                (0..ticks)
                    .map(|_| {
                        let spans = vec![
                            ("Input", draw(20_000.0 * run)),
                            ("Physics", (draw(200_000.0 * run) as f64 * slow) as u64),
                            ("AI", draw(80_000.0 * run)),
                        ];
                        (false, spans)
                    })
                    .collect()
            })
            .collect();
        let mut samples = Samples::new();
        if pooled {
            samples.read_trace("pooled", &ticks_trace(&each.concat()));
        } else {
            for (i, ticks) in each.iter().enumerate() {
                samples.read_trace(&format!("seed {seed}, run {i}"), &ticks_trace(ticks));
            }
        }
        samples.finish()
    }

    #[test]
    fn a_ten_percent_slower_system_is_the_one_regression() {
        let (base, new) = (side(1, 600, 1.0), side(2, 600, 1.10));
        let c = compare(&base, &new, &Options::default()).unwrap();
        assert!(c.regressions >= 1, "{:#?}", c.rows);
        let physics = &c.rows[0];
        assert_eq!(
            (physics.name.as_str(), physics.verdict),
            ("Physics", Verdict::Regression)
        );
        let change = physics.change.unwrap();
        assert!(change > 0.06 && change < 0.14, "{change}");
        let interval = physics.interval.unwrap();
        assert!(
            interval.low < change && change < interval.high,
            "{interval:?}"
        );
        // Only what holds Physics may regress with it: the ticks.
        for row in &c.rows[1..] {
            assert!(
                row.verdict != Verdict::Regression || row.name == TICKS,
                "{row:?}"
            );
        }
    }

    /// Kalibera and Jones's case: runs of one program differ as wholes.
    /// New's runs are 7 % slower on average, no more than base's runs
    /// differ among themselves: pooled, the spans say "regression";
    /// seen as runs, nothing is, and each such name's interval holds 0.
    #[test]
    fn a_shift_within_the_runs_own_spread_is_no_regression_when_they_are_runs() {
        let (base, new) = ([0.93, 1.0, 1.07], [1.0, 1.07, 1.14]);
        let pooled = compare(
            &runs(1, 300, &base, 1.0, true),
            &runs(2, 300, &new, 1.0, true),
            &Options::default(),
        )
        .unwrap();
        let regressed: Vec<&Row> = (pooled.rows.iter())
            .filter(|r| r.verdict == Verdict::Regression)
            .collect();
        assert!(regressed.len() >= 2, "{:#?}", pooled.rows);
        let c = compare(
            &runs(1, 300, &base, 1.0, false),
            &runs(2, 300, &new, 1.0, false),
            &Options::default(),
        )
        .unwrap();
        assert_eq!((c.base.runs, c.new.runs), (3, 3));
        assert_eq!(c.regressions, 0, "{:#?}", c.rows);
        for was in regressed {
            let row = c.rows.iter().find(|r| r.name == was.name).unwrap();
            // The same figures, and as significant to the rank test...
            assert_eq!((row.change, row.p), (was.change, was.p));
            // ...but the runs' own spread holds no change.
            assert!(row.interval.unwrap().low < 0.0, "{row:?}");
        }
    }

    /// A change larger than the runs' spread is found through it.
    #[test]
    fn a_ten_percent_slower_system_is_found_across_runs() {
        let c = compare(
            &runs(1, 300, &[0.98, 1.0, 1.02], 1.0, false),
            &runs(2, 300, &[0.99, 1.01, 1.0], 1.10, false),
            &Options::default(),
        )
        .unwrap();
        let regressed: Vec<&str> = (c.rows.iter())
            .filter(|r| r.verdict == Verdict::Regression)
            .map(|r| r.name.as_str())
            .collect();
        assert!(regressed.contains(&"Physics"), "{:#?}", c.rows);
        assert!(
            regressed.iter().all(|&n| n == "Physics" || n == TICKS),
            "{regressed:?}"
        );
    }

    #[test]
    fn the_same_program_twice_is_no_regression() {
        for seed in 0..10 {
            let c = compare(
                &side(seed, 300, 1.0),
                &side(seed + 100, 300, 1.0),
                &Options::default(),
            )
            .unwrap();
            assert_eq!(c.regressions, 0, "seed {seed}: {:#?}", c.rows);
            assert_eq!(c.tested, 4);
        }
    }

    #[test]
    fn names_on_one_side_are_listed_not_failed_and_different_programs_are_an_error() {
        let base = side(1, 100, 1.0);
        let ticks: Vec<_> = (0..100)
            .map(|_| (false, vec![("Input", 20_000), ("Audio", 5_000)]))
            .collect();
        let mut samples = Samples::new();
        samples.read_trace("other", &ticks_trace(&ticks));
        let new = samples.finish();
        let c = compare(&base, &new, &Options::default()).unwrap();
        let verdict = |name: &str| c.rows.iter().find(|r| r.name == name).unwrap().verdict;
        assert_eq!(verdict("Physics"), Verdict::OnlyBase);
        assert_eq!(verdict("Audio"), Verdict::OnlyNew);
        assert!(!c.regressed());

        let ticks: Vec<_> = (0..100).map(|_| (false, vec![("Audio", 5_000)])).collect();
        let mut samples = Samples::new();
        samples.read_trace("other", &ticks_trace(&ticks));
        let error = compare(&base, &samples.finish(), &Options::default()).unwrap_err();
        assert!(matches!(error, CompareError::NothingInCommon { .. }));
        assert!(
            error.to_string().contains("base has Input, Physics, AI"),
            "{error}"
        );
    }
}
