//! The `typhon-live` command's viewer as a library: where frames come from
//! ([`source`]), the terminal screen ([`tui`]) over the view model
//! (`typhon-live-model`), other viewers' formats ([`formats`]), the relay
//! to monitoring systems ([`relay`]), and its errors. The subcommands
//! (`src/cmd/`) drive it; the benchmarks measure it.
#![deny(missing_docs)]

pub mod error;
pub mod formats;
pub mod relay;
pub mod source;
pub mod tui;
pub mod uptime;

#[cfg(test)]
mod testing;
