//! typhon-live's flight recorder: the stall that happened when nobody was
//! watching, kept.
//!
//! A [`Recorder`] is one more reader of a stream, wherever one is read:
//! in the process (the exporter's own reader), in `typhon-live record`,
//! per source in the relay, in both viewers. It keeps the stream's recent
//! past as the frames it received, bounded by time and bytes (so the
//! cost is the wire's, about 5 bytes an event), and watches its
//! [`Trigger`]s. When one fires, it gathers a [`Capture`]: a trace file
//! that starts with an Init and a Catch-up written from the reader's
//! state at the window's start (every name resolves, the spans open then
//! are known), then the frames of the window before and after the
//! trigger. Triggers in a window being gathered merge into it; a
//! cooldown per trigger and a spacing between captures keep a trigger
//! that fires every tick from making a capture a tick.
//!
//! - `recorder`: [`Recorder`], frames in, time passing, captures out;
//! - `trigger`: [`Trigger`], the conditions (typhon-live-condition's
//!   grammar) that fire, and [`Fired`];
//! - `ring`: the frames kept and the checkpoints a capture starts from;
//! - `capture`: a capture gathered, then written whole;
//! - [`options`]: the options by key, as every configuration sets them;
//! - [`store`] (with `std`): captures on disk, bounded in files and
//!   bytes, each written under a temporary name and renamed when whole.
//!
//! It is `no_std` with `alloc` (and builds for wasm32), reads no clock:
//! frames come with their arrival time, and time passing is told.
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

mod capture;
pub mod options;
mod recorder;
mod ring;
#[cfg(feature = "std")]
pub mod store;
mod trigger;

pub use capture::{Capture, MAX_FIRED_PER_CAPTURE};
pub use options::{Limits, OptionError, Options};
pub use recorder::{Recorder, Stats, CHECKPOINT_EVERY_NS};
pub use trigger::{Fired, FiredSpan, Trigger};

use core::fmt;

/// How much a recorder keeps and captures. Times in ns of the stream's
/// clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The recent past kept, by time.
    pub keep_ns: u64,
    /// The recent past kept, by bytes on the wire.
    pub keep_bytes: usize,
    /// A capture's window before its trigger (at most `keep_ns`).
    pub before_ns: u64,
    /// A capture's window after its trigger.
    pub after_ns: u64,
    /// A trigger that fired does not fire again for this long.
    pub cooldown_ns: u64,
    /// After a capture, no trigger starts another for this long (on
    /// demand does).
    pub spacing_ns: u64,
    /// A capture is cut at this length, however many windows merge.
    pub max_capture_ns: u64,
    /// A capture is cut at this many bytes.
    pub max_capture_bytes: usize,
}

impl Default for Settings {
    /// 30 s and 64 MiB of past; 10 s before a trigger and 5 s after; a
    /// trigger's cooldown 30 s, 2 s between captures; a capture at most
    /// 60 s and 128 MiB.
    fn default() -> Settings {
        const S: u64 = 1_000_000_000;
        Settings {
            keep_ns: 30 * S,
            keep_bytes: 64 << 20,
            before_ns: 10 * S,
            after_ns: 5 * S,
            cooldown_ns: 30 * S,
            spacing_ns: 2 * S,
            max_capture_ns: 60 * S,
            max_capture_bytes: 128 << 20,
        }
    }
}

impl Settings {
    /// Whether they make sense together.
    pub fn check(&self) -> Result<(), SettingsError> {
        if self.before_ns > self.keep_ns {
            return Err(SettingsError::BeforeOverKeep);
        }
        if self.before_ns.saturating_add(self.after_ns) > self.max_capture_ns {
            return Err(SettingsError::WindowOverCapture);
        }
        if self.keep_bytes > self.max_capture_bytes {
            return Err(SettingsError::KeepOverCapture);
        }
        Ok(())
    }
}

/// Settings that do not make sense together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingsError {
    /// The window before a trigger is longer than the past kept.
    BeforeOverKeep,
    /// The windows before and after a trigger are longer than a capture
    /// may be.
    WindowOverCapture,
    /// More past is kept than a capture may hold.
    KeepOverCapture,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SettingsError::BeforeOverKeep => {
                "the window before a trigger is longer than the past kept"
            }
            SettingsError::WindowOverCapture => {
                "the windows before and after a trigger are longer than a capture's length"
            }
            SettingsError::KeepOverCapture => "more past is kept than a capture's bytes",
        })
    }
}

impl core::error::Error for SettingsError {}
