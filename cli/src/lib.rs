//! The `typhon-live` command's viewer as a library: where frames come from
//! ([`source`]), what a viewer knows and keeps ([`model`]), the terminal
//! screen ([`tui`]), other viewers' formats ([`formats`]), the relay to
//! monitoring systems ([`relay`]), and its errors. The subcommands (`src/cmd/`) drive it;
//! the benchmarks measure it; the relay will reuse the model.
#![deny(missing_docs)]

pub mod error;
pub mod formats;
pub mod model;
pub mod relay;
pub mod source;
pub mod tui;
pub mod uptime;

#[cfg(test)]
mod testing;
