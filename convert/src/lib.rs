//! typhon-live traces in other viewers' formats: [`perfetto`] (Perfetto's
//! native protobuf trace, written packet by packet as frames arrive) and
//! [`chrome`] (Chrome Trace Event JSON). Both read through the one stream
//! reader (`typhon-live-reader`), so names, clocks, sessions and losses
//! mean the same in either as in the live view.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod chrome;
pub mod perfetto;

use typhon_live_reader::Damage;

/// A conversion's result, and what it met on the way.
pub struct Converted<T> {
    /// The converted trace, or what was written.
    pub output: T,
    /// The damage met, with byte offsets.
    pub damage: Vec<Damage>,
    /// Frames read.
    pub frames: u64,
}
