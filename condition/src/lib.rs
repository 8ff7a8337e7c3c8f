//! One small grammar for conditions on a typhon-live stream, shared by
//! every place that takes one: the flight recorder's triggers (in the
//! process, `record`, the relay) and budget assertions.
//!
//! ```text
//! condition  := subject [ comparison quantity ]
//! subject    := word [ "(" name ")" ]
//! word       := letter { letter | digit | "_" }
//! name       := any text but ")", trimmed | '"' text with \" and \\ '"'
//! comparison := "<" | "<=" | ">" | ">=" | "==" | "!="
//! quantity   := [ "-" ] digits [ "." digits ] [ unit ]
//! unit       := ns | us | µs | ms | s | min | h      (a duration)
//!             | B | KB | MB | GB | KiB | MiB | GiB  (bytes)
//!             | %                                   (a share)
//! ```
//!
//! Spaces between the parts are free. The grammar knows no subject's
//! meaning: each consumer reads [`Condition::subject`] with its own words
//! (`tick`, `span(NAME)`, `gauge(NAME)`, `p99(NAME)`) and refuses the
//! others with [`ConditionError::UnknownSubject`], so that every error
//! names its position in the text ([`ConditionError::at`],
//! [`ConditionError::pointed`]).
//!
//! ```
//! use typhon_live_condition::{Comparison, Condition, Unit};
//!
//! let c: Condition = "span(GET /checkout) > 1.5ms".parse().unwrap();
//! assert_eq!(c.subject.word, "span");
//! assert_eq!(c.subject.argument.as_deref(), Some("GET /checkout"));
//! let test = c.test.unwrap();
//! assert_eq!(test.comparison, Comparison::Greater);
//! assert_eq!((test.quantity.value, test.quantity.unit), (1_500_000.0, Unit::Duration));
//!
//! let error = "tick > 100 xs".parse::<Condition>().unwrap_err();
//! assert_eq!(error.at(), 11);
//! assert_eq!(error.pointed("tick > 100 xs"), "tick > 100 xs\n           ^ unknown unit \"xs\"");
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

mod error;
mod parse;

use alloc::string::String;
use core::fmt;

pub use error::ConditionError;

/// A parsed condition: what it is about and, unless it is bare, the test
/// its value must pass.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    /// What it is about.
    pub subject: Subject,
    /// The comparison, or `None` for a bare subject (`overrun`, `loss`):
    /// true whenever the subject happens.
    pub test: Option<Test>,
}

/// What a condition is about: a word, and a name in parentheses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// The word (`tick`, `span`, `p99`).
    pub word: String,
    /// The name in parentheses, trimmed (quotes removed).
    pub argument: Option<String>,
    /// Byte offset of the word in the text.
    pub at: usize,
}

/// A comparison against a quantity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Test {
    /// How the value compares.
    pub comparison: Comparison,
    /// Byte offset of the comparison in the text.
    pub comparison_at: usize,
    /// With what.
    pub quantity: Quantity,
    /// Byte offset of the quantity in the text.
    pub at: usize,
}

impl Test {
    /// Whether `value` (in the quantity's base unit: ns, bytes, or a
    /// share as a fraction) passes.
    pub fn holds(&self, value: f64) -> bool {
        self.comparison.holds(value, self.quantity.value)
    }
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// `<`
    Less,
    /// `<=`
    LessOrEqual,
    /// `>`
    Greater,
    /// `>=`
    GreaterOrEqual,
    /// `==`
    Equal,
    /// `!=`
    NotEqual,
}

impl Comparison {
    /// Whether `value` compares so with `bound`.
    pub fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Comparison::Less => value < bound,
            Comparison::LessOrEqual => value <= bound,
            Comparison::Greater => value > bound,
            Comparison::GreaterOrEqual => value >= bound,
            Comparison::Equal => value == bound,
            Comparison::NotEqual => value != bound,
        }
    }

    /// As written.
    pub fn symbol(self) -> &'static str {
        match self {
            Comparison::Less => "<",
            Comparison::LessOrEqual => "<=",
            Comparison::Greater => ">",
            Comparison::GreaterOrEqual => ">=",
            Comparison::Equal => "==",
            Comparison::NotEqual => "!=",
        }
    }
}

/// A number with what it measures, in that measure's base unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantity {
    /// The value: ns for a duration, bytes, a fraction for a share, or the
    /// number as written.
    pub value: f64,
    /// What it measures.
    pub unit: Unit,
}

/// What a quantity measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A plain number (a count, a gauge's value).
    Number,
    /// A duration, in ns.
    Duration,
    /// A size, in bytes.
    Bytes,
    /// A share (`%`), as a fraction.
    Share,
}

impl Unit {
    /// What a quantity of this unit is, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Unit::Number => "a plain number",
            Unit::Duration => "a duration (ns, us, ms, s, min, h)",
            Unit::Bytes => "a size (B, KB, MB, GB, KiB, MiB, GiB)",
            Unit::Share => "a share (%)",
        }
    }
}

impl core::str::FromStr for Quantity {
    type Err = ConditionError;

    /// A quantity alone, by the grammar's rule (`30s`, `64MiB`): the
    /// configuration's durations and sizes are read as conditions' are.
    fn from_str(text: &str) -> Result<Quantity, ConditionError> {
        parse::quantity_alone(text)
    }
}

impl core::str::FromStr for Condition {
    type Err = ConditionError;

    fn from_str(text: &str) -> Result<Condition, ConditionError> {
        parse::condition(text)
    }
}

impl Condition {
    /// The subject's argument, or the error a consumer gives when its
    /// word needs one (`span` without a name).
    pub fn argument(&self) -> Result<&str, ConditionError> {
        self.subject
            .argument
            .as_deref()
            .ok_or_else(|| ConditionError::NeedsName {
                at: self.subject.at + self.subject.word.len(),
                word: self.subject.word.clone(),
            })
    }

    /// The error a consumer gives when its word takes no name but was
    /// given one (`overrun(x)`).
    pub fn no_argument(&self) -> Result<(), ConditionError> {
        match self.subject.argument {
            Some(_) => Err(ConditionError::TakesNoName {
                at: self.subject.at + self.subject.word.len(),
                word: self.subject.word.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The test, or the error a consumer gives when its word needs one.
    pub fn comparison(&self) -> Result<&Test, ConditionError> {
        self.test
            .as_ref()
            .ok_or_else(|| ConditionError::NeedsComparison {
                at: self.subject.at,
                word: self.subject.word.clone(),
            })
    }

    /// The test's quantity in `unit`, or the error saying which unit its
    /// word takes. A plain number passes for any unit but a duration
    /// (`gauge(x) > 3` compares with 3 whatever the gauge measures; a
    /// duration without its unit is ambiguous).
    pub fn quantity_in(&self, unit: Unit) -> Result<&Test, ConditionError> {
        let test = self.comparison()?;
        let plain_ok = unit != Unit::Duration && test.quantity.unit == Unit::Number;
        if test.quantity.unit == unit || plain_ok {
            Ok(test)
        } else {
            Err(ConditionError::WrongUnit {
                at: test.at,
                expected: unit.describe(),
            })
        }
    }
}

impl fmt::Display for Condition {
    /// The condition in its canonical spelling, which parses back the same.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.subject.word)?;
        if let Some(name) = &self.subject.argument {
            if name.contains(')') || name.contains('"') || name.trim() != name {
                f.write_str("(\"")?;
                for c in name.chars() {
                    if c == '"' || c == '\\' {
                        f.write_str("\\")?;
                    }
                    write!(f, "{c}")?;
                }
                f.write_str("\")")?;
            } else {
                write!(f, "({name})")?;
            }
        }
        if let Some(test) = &self.test {
            write!(f, " {} ", test.comparison.symbol())?;
            let q = test.quantity;
            match q.unit {
                Unit::Number => write!(f, "{}", q.value),
                Unit::Duration => write!(f, "{}ns", q.value),
                Unit::Bytes => write!(f, "{}B", q.value),
                Unit::Share => write!(f, "{}%", q.value * 100.0),
            }?;
        }
        Ok(())
    }
}
