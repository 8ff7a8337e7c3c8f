//! What was wrong with a condition, and where.

use alloc::format;
use alloc::string::String;
use core::fmt;

/// A condition that does not parse, or that its consumer cannot take.
/// Every variant names the byte offset in the text where it went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConditionError {
    /// Nothing was written.
    Empty,
    /// Something else was expected here.
    Expected {
        /// Byte offset.
        at: usize,
        /// What would have been right.
        expected: &'static str,
        /// What was there (a character, or "the end").
        found: String,
    },
    /// A name in parentheses that is not closed, or a quote not closed.
    Unclosed {
        /// Byte offset of the opening parenthesis or quote.
        at: usize,
    },
    /// A number that does not read as one, or is not finite.
    BadNumber {
        /// Byte offset.
        at: usize,
    },
    /// A unit this grammar does not know.
    UnknownUnit {
        /// Byte offset.
        at: usize,
        /// The unit as written.
        unit: String,
    },
    /// A word its consumer does not know.
    UnknownSubject {
        /// Byte offset.
        at: usize,
        /// The word.
        word: String,
        /// The words it knows, for the message.
        known: &'static str,
    },
    /// A word that needs a name in parentheses (`span(NAME)`).
    NeedsName {
        /// Byte offset, after the word.
        at: usize,
        /// The word.
        word: String,
    },
    /// A word that takes no name in parentheses.
    TakesNoName {
        /// Byte offset of the parenthesis.
        at: usize,
        /// The word.
        word: String,
    },
    /// A word that needs a comparison (`tick > 100ms`).
    NeedsComparison {
        /// Byte offset of the word.
        at: usize,
        /// The word.
        word: String,
    },
    /// A word that takes no comparison (`overrun`).
    TakesNoComparison {
        /// Byte offset of the comparison.
        at: usize,
        /// The word.
        word: String,
    },
    /// A quantity of the wrong measure (`tick > 5MB`).
    WrongUnit {
        /// Byte offset of the quantity.
        at: usize,
        /// What it should have been.
        expected: &'static str,
    },
}

impl ConditionError {
    /// The byte offset in the text where it went wrong.
    pub fn at(&self) -> usize {
        match self {
            ConditionError::Empty => 0,
            ConditionError::Expected { at, .. }
            | ConditionError::Unclosed { at }
            | ConditionError::BadNumber { at }
            | ConditionError::UnknownUnit { at, .. }
            | ConditionError::UnknownSubject { at, .. }
            | ConditionError::NeedsName { at, .. }
            | ConditionError::TakesNoName { at, .. }
            | ConditionError::NeedsComparison { at, .. }
            | ConditionError::TakesNoComparison { at, .. }
            | ConditionError::WrongUnit { at, .. } => *at,
        }
    }

    /// `text` with a caret under the error's position, and the message:
    /// what a command prints for a usage error.
    pub fn pointed(&self, text: &str) -> String {
        let column = text
            .get(..self.at())
            .map_or(self.at(), |s| s.chars().count());
        format!("{text}\n{:column$}^ {self}", "")
    }
}

impl fmt::Display for ConditionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConditionError::Empty => f.write_str("empty condition"),
            ConditionError::Expected {
                expected, found, ..
            } => write!(f, "expected {expected}, found {found}"),
            ConditionError::Unclosed { .. } => f.write_str("not closed"),
            ConditionError::BadNumber { .. } => f.write_str("not a number"),
            ConditionError::UnknownUnit { unit, .. } => write!(f, "unknown unit \"{unit}\""),
            ConditionError::UnknownSubject { word, known, .. } => {
                write!(f, "unknown \"{word}\" (known: {known})")
            }
            ConditionError::NeedsName { word, .. } => {
                write!(f, "\"{word}\" needs a name: {word}(NAME)")
            }
            ConditionError::TakesNoName { word, .. } => {
                write!(f, "\"{word}\" takes no name")
            }
            ConditionError::NeedsComparison { word, .. } => {
                write!(f, "\"{word}\" needs a comparison, as in {word} > 100ms")
            }
            ConditionError::TakesNoComparison { word, .. } => {
                write!(f, "\"{word}\" takes no comparison")
            }
            ConditionError::WrongUnit { expected, .. } => write!(f, "expected {expected}"),
        }
    }
}

impl core::error::Error for ConditionError {}
