//! The recorder's options by key, one reading for every place that sets
//! them: `typhon.telemetry.json` and `TYPHON__RECORDER__*` in a process,
//! `typhon-live record`'s and the relay's flags.
//!
//! | key | value | default |
//! |---|---|---|
//! | `on` | a trigger (docs/RECORDER.md); several | none |
//! | `keep` | the past kept, a duration | `30s` |
//! | `keep_bytes` | the past kept, a size | `64MiB` |
//! | `before` | the window before a trigger | `10s` |
//! | `after` | the window after a trigger | `5s` |
//! | `cooldown` | a trigger's quiet time after it fired | `30s` |
//! | `spacing` | the quiet time after a capture | `2s` |
//! | `max_capture` | a capture's length at most | `60s` |
//! | `max_capture_bytes` | a capture's size at most | `128MiB` |
//! | `max_files` | capture files kept, a number | `20` |
//! | `max_bytes` | their bytes, a size | `1GiB` |

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use typhon_live_condition::{ConditionError, Quantity, Unit};

use crate::{Settings, SettingsError, Trigger};

/// Every key, for messages.
pub const KEYS: &str = "on, keep, keep_bytes, before, after, cooldown, spacing, max_capture, \
                        max_capture_bytes, max_files, max_bytes";

/// What a recorder is set to do: its settings, its triggers, and the
/// bounds of its directory.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// What it keeps and captures.
    pub settings: Settings,
    /// When it captures.
    pub triggers: Vec<Trigger>,
    /// What its directory holds at most.
    pub limits: Limits,
}

impl Default for Options {
    /// [`Settings::default`], no trigger, [`Limits::default`].
    fn default() -> Options {
        Options {
            settings: Settings::default(),
            triggers: Vec::new(),
            limits: Limits::default(),
        }
    }
}

/// How many capture files and bytes a directory holds at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Files.
    pub files: usize,
    /// Bytes, over every file.
    pub bytes: u64,
}

impl Default for Limits {
    /// 20 files, 1 GiB.
    fn default() -> Limits {
        Limits {
            files: 20,
            bytes: 1 << 30,
        }
    }
}

/// A key or value the recorder cannot take.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionError {
    /// No such key.
    UnknownKey {
        /// The key.
        key: String,
    },
    /// A value that does not read for its key: a trigger, a duration, a
    /// size or a number, with where it went wrong.
    Value {
        /// The key.
        key: String,
        /// The value as given.
        value: String,
        /// What was wrong, and where.
        error: ConditionError,
    },
    /// Values that do not make sense together.
    Settings(SettingsError),
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionError::UnknownKey { key } => {
                write!(f, "no recorder option \"{key}\" (known: {KEYS})")
            }
            OptionError::Value { key, value, error } => {
                write!(f, "recorder option {key}:\n{}", error.pointed(value))
            }
            OptionError::Settings(error) => write!(f, "recorder options: {error}"),
        }
    }
}

impl core::error::Error for OptionError {}

impl Options {
    /// Sets `key` to `value` (`on` adds a trigger).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        let bad = |error| OptionError::Value {
            key: key.into(),
            value: value.into(),
            error,
        };
        let s = &mut self.settings;
        match key {
            "on" => self.triggers.push(value.parse().map_err(bad)?),
            "keep" => s.keep_ns = duration(value).map_err(bad)?,
            "keep_bytes" => s.keep_bytes = size(value).map_err(bad)? as usize,
            "before" => s.before_ns = duration(value).map_err(bad)?,
            "after" => s.after_ns = duration(value).map_err(bad)?,
            "cooldown" => s.cooldown_ns = duration(value).map_err(bad)?,
            "spacing" => s.spacing_ns = duration(value).map_err(bad)?,
            "max_capture" => s.max_capture_ns = duration(value).map_err(bad)?,
            "max_capture_bytes" => s.max_capture_bytes = size(value).map_err(bad)? as usize,
            "max_files" => self.limits.files = number(value).map_err(bad)? as usize,
            "max_bytes" => self.limits.bytes = size(value).map_err(bad)?,
            _ => return Err(OptionError::UnknownKey { key: key.into() }),
        }
        Ok(())
    }

    /// Whether they make sense together.
    pub fn check(&self) -> Result<(), OptionError> {
        self.settings.check().map_err(OptionError::Settings)
    }
}

/// A duration, in ns, by the condition grammar's rule (`30s`).
pub fn duration(text: &str) -> Result<u64, ConditionError> {
    whole(text, Unit::Duration)
}

/// A size, in bytes (`64MiB`; a plain number is bytes).
pub fn size(text: &str) -> Result<u64, ConditionError> {
    whole(text, Unit::Bytes)
}

/// A plain count.
fn number(text: &str) -> Result<u64, ConditionError> {
    whole(text, Unit::Number)
}

fn whole(text: &str, unit: Unit) -> Result<u64, ConditionError> {
    let quantity: Quantity = text.parse()?;
    let at = text.len() - text.trim_start().len();
    let plain_ok = unit == Unit::Bytes && quantity.unit == Unit::Number;
    if quantity.unit != unit && !plain_ok {
        return Err(ConditionError::WrongUnit {
            at,
            expected: unit.describe(),
        });
    }
    if quantity.value < 0.0 || quantity.value > u64::MAX as f64 {
        return Err(ConditionError::BadNumber { at });
    }
    Ok(quantity.value as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn every_key_reads_and_bad_values_say_where() {
        let mut options = Options::default();
        for (key, value) in [
            ("on", "tick > 100ms"),
            ("on", "loss"),
            ("keep", "20s"),
            ("keep_bytes", "32MiB"),
            ("before", "2s"),
            ("after", "1.5s"),
            ("cooldown", "1min"),
            ("spacing", "500ms"),
            ("max_capture", "30s"),
            ("max_capture_bytes", "100MB"),
            ("max_files", "5"),
            ("max_bytes", "1000000"),
        ] {
            options.set(key, value).unwrap();
        }
        options.check().unwrap();
        assert_eq!(options.triggers.len(), 2);
        assert_eq!(options.settings.after_ns, 1_500_000_000);
        assert_eq!(options.settings.keep_bytes, 32 << 20);
        assert_eq!(
            options.limits,
            Limits {
                files: 5,
                bytes: 1_000_000
            }
        );

        let error = options.set("keep", "20 MB").unwrap_err();
        assert_eq!(
            error.to_string(),
            "recorder option keep:\n20 MB\n^ expected a duration (ns, us, ms, s, min, h)"
        );
        let error = options.set("on", "tick >> 5ms").unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("tick >> 5ms\n      ^ expected a number, found \">\""),
            "{error}"
        );
        assert!(matches!(
            options.set("kept", "1s"),
            Err(OptionError::UnknownKey { .. })
        ));
        options.set("before", "40s").unwrap();
        assert_eq!(
            options.check(),
            Err(OptionError::Settings(SettingsError::BeforeOverKeep))
        );
    }
}
