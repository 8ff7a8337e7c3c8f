//! Budget assertions on one side, in typhon-live-condition's grammar (the
//! flight recorder's triggers' grammar, one parser):
//!
//! | assertion | is about |
//! |---|---|
//! | `p50(NAME) OP D` … `p99(NAME)`, `p999(NAME)`, any `pNN` | a quantile of the span name's durations (`ticks`: the ticks') |
//! | `max(NAME) OP D`, `min(NAME) OP D`, `mean(NAME) OP D` | the longest, shortest, mean |
//! | `count(NAME) OP N` | how many spans of that name ended |
//! | `ticks OP N`, `overruns OP N` | ticks ended, and those over their budget |
//! | `dropped OP N` | events the stream says were lost |
//! | `damaged OP N` | frames that could not be read |
//!
//! `D` is a duration with its unit (`2ms`); `OP` is `<`, `<=`, `>`, `>=`,
//! `==` or `!=`. A name with no spans fails its assertion: a misspelt
//! name must not pass.

use core::fmt;
use core::str::FromStr;

use serde::Serialize;
use typhon_live_condition::{Condition, ConditionError, Test, Unit};

use crate::samples::{Reading, Side};
use crate::stats;

/// The words an assertion may use, for errors.
const KNOWN: &str =
    "pNN(NAME), max(NAME), min(NAME), mean(NAME), count(NAME), ticks, overruns, dropped, damaged";

/// A budget assertion, parsed and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Assertion {
    text: String,
    measure: Measure,
    test: Test,
}

#[derive(Clone, Debug, PartialEq)]
enum Measure {
    Quantile { share: f64, name: String },
    Max(String),
    Min(String),
    Mean(String),
    Count(String),
    Ticks,
    Overruns,
    Dropped,
    Damaged,
}

impl FromStr for Assertion {
    type Err = ConditionError;

    fn from_str(text: &str) -> Result<Assertion, ConditionError> {
        let condition: Condition = text.parse()?;
        let subject = &condition.subject;
        let word = subject.word.as_str();
        let no_name = || condition.no_argument();
        let name = || condition.argument().map(String::from);
        let (measure, unit) = match word {
            "max" => (Measure::Max(name()?), Unit::Duration),
            "min" => (Measure::Min(name()?), Unit::Duration),
            "mean" => (Measure::Mean(name()?), Unit::Duration),
            "count" => (Measure::Count(name()?), Unit::Number),
            "ticks" | "overruns" | "dropped" | "damaged" => {
                no_name()?;
                let measure = match word {
                    "ticks" => Measure::Ticks,
                    "overruns" => Measure::Overruns,
                    "dropped" => Measure::Dropped,
                    _ => Measure::Damaged,
                };
                (measure, Unit::Number)
            }
            _ => match percentile(word) {
                Some(share) => (
                    Measure::Quantile {
                        share,
                        name: name()?,
                    },
                    Unit::Duration,
                ),
                None => {
                    return Err(ConditionError::UnknownSubject {
                        at: subject.at,
                        word: subject.word.clone(),
                        known: KNOWN,
                    })
                }
            },
        };
        let test = *condition.quantity_in(unit)?;
        Ok(Assertion {
            text: text.trim().into(),
            measure,
            test,
        })
    }
}

/// `pNN`'s share: `p50` 0.5, `p99` 0.99, `p999` 0.999.
fn percentile(word: &str) -> Option<f64> {
    let digits = word.strip_prefix('p')?;
    if digits.is_empty() || digits.len() > 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let share: f64 = format!("0.{digits}").parse().ok()?;
    (share > 0.0).then_some(share)
}

impl fmt::Display for Assertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Assertion {
    /// Its value in `side`: ns for a duration, else a count; `None` when
    /// the name has no spans there.
    pub fn value(&self, side: &Side) -> Option<f64> {
        let values = |name: &str| side.get(name).map(|s| s.values.as_slice());
        let r = &side.reading;
        Some(match &self.measure {
            Measure::Quantile { share, name } => stats::quantile(values(name)?, *share),
            Measure::Max(name) => *values(name)?.last()? as f64,
            Measure::Min(name) => *values(name)?.first()? as f64,
            Measure::Mean(name) => stats::mean(values(name)?),
            Measure::Count(name) => values(name).map_or(0, <[u64]>::len) as f64,
            Measure::Ticks => r.ticks as f64,
            Measure::Overruns => r.overruns as f64,
            Measure::Dropped => r.dropped as f64,
            Measure::Damaged => r.frames_damaged as f64,
        })
    }

    /// Whether its value is a duration.
    pub fn is_duration(&self) -> bool {
        self.test.quantity.unit == Unit::Duration
    }

    /// Judged on `side`.
    pub fn judge(&self, side: &Side) -> Outcome {
        let value = self.value(side);
        Outcome {
            assertion: self.text.clone(),
            duration: self.is_duration(),
            value,
            bound: self.test.quantity.value,
            passed: value.is_some_and(|v| self.test.holds(v)),
        }
    }
}

/// An assertion judged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    /// As written.
    pub assertion: String,
    /// Whether the value and bound are durations (ns), else counts.
    pub duration: bool,
    /// Its value; `None` when the name has no spans.
    pub value: Option<f64>,
    /// The bound it was compared with.
    pub bound: f64,
    /// Whether it held.
    pub passed: bool,
}

/// A side's assertions judged: the verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// Each assertion, in the order given.
    pub outcomes: Vec<Outcome>,
    /// How many did not hold.
    pub failed: usize,
    /// What was read.
    pub reading: Reading,
}

impl Check {
    /// Whether an assertion did not hold.
    pub fn broken(&self) -> bool {
        self.failed > 0
    }
}

/// Judges `assertions` on `side`.
pub fn check(side: &Side, assertions: &[Assertion]) -> Check {
    let outcomes: Vec<Outcome> = assertions.iter().map(|a| a.judge(side)).collect();
    Check {
        failed: outcomes.iter().filter(|o| !o.passed).count(),
        outcomes,
        reading: side.reading.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::Samples;
    use typhon_live_tests::ticks_trace;

    fn side() -> Side {
        let ticks: Vec<_> = (0..100u64)
            .map(|t| {
                (
                    t == 7,
                    vec![("Physics", 1_000_000 + t * 10_000), ("AI", 50_000)],
                )
            })
            .collect();
        let mut samples = Samples::new();
        samples.read_trace("t", &ticks_trace(&ticks));
        samples.finish()
    }

    fn holds(text: &str) -> bool {
        let a: Assertion = text.parse().unwrap();
        a.judge(&side()).passed
    }

    #[test]
    fn assertions_are_judged_on_the_side() {
        assert!(holds("p99(Physics) < 2ms"));
        assert!(!holds("p99(Physics) < 1.9ms"));
        assert!(holds("max(Physics) <= 1.99ms"));
        assert!(holds("min(Physics) == 1ms"));
        assert!(holds("p50(Physics) < 1.5ms"));
        assert!(holds("mean(AI) == 50us"));
        assert!(holds("count(AI) == 100"));
        assert!(holds("overruns == 1"));
        assert!(holds("ticks == 100"));
        assert!(holds("dropped == 0"));
        assert!(holds("damaged == 0"));
        assert!(holds("max(ticks) < 3ms"));
        // A name with no spans fails, whatever the bound.
        assert!(!holds("max(Phyiscs) < 1h"));
        assert!(holds("count(Phyiscs) == 0"));
    }

    #[test]
    fn a_bad_assertion_names_its_position() {
        let error = "p99(Physics) < 2".parse::<Assertion>().unwrap_err();
        assert_eq!(error.at(), 15, "{error}");
        let error = "p99(Physics) < 2 MB".parse::<Assertion>().unwrap_err();
        assert_eq!(error.at(), 15);
        let error = "median(Physics) < 2ms".parse::<Assertion>().unwrap_err();
        assert_eq!(error.at(), 0);
        assert!(error.to_string().contains("pNN(NAME)"), "{error}");
        let error = "overruns(Sim) == 0".parse::<Assertion>().unwrap_err();
        assert_eq!(error.at(), 8);
        let error = "max(Tick)".parse::<Assertion>().unwrap_err();
        assert!(error.to_string().contains("comparison"), "{error}");
    }
}
