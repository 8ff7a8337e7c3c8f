//! The parts of the `typhon-live` command that need neither a terminal nor
//! a command line, as a library: where frames come from ([`source`]), what
//! a viewer knows ([`model`]), and its errors. The benchmarks measure the
//! viewer through it; the relay will reuse it.
#![deny(missing_docs)]

pub mod error;
pub mod model;
pub mod source;
pub mod tui;

#[cfg(test)]
mod testing;
