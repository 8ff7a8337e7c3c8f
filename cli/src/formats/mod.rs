//! A trace file in other viewers' formats: [`perfetto`] (native protobuf)
//! and [`chrome`] (Trace Event JSON).

pub mod chrome;
pub mod perfetto;

use crate::source::file::Damage;

/// A conversion's result, and what it met on the way.
pub struct Converted<T> {
    /// The converted trace, or what was written.
    pub output: T,
    /// The damage met, with byte offsets.
    pub damage: Vec<Damage>,
    /// Frames read.
    pub frames: u64,
}
