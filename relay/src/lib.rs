//! The relay behind `typhon-live relay`: many processes' streams in,
//! merged into one session on one clock for any number of viewers.
//!
//! - [`source`]: each source attached to for as long as the relay runs,
//!   reconnecting, its frames read once
//!   ([`typhon_live_reader::owned`]);
//! - [`merge`]: the sources' updates as one session (names, lanes and
//!   clocks mapped);
//! - [`fanout`]: the merged stream for every viewer, each from its own
//!   start with its own sequence numbers, within the same bounds;
//! - [`remote`]: the viewers' port over TLS with a token (beyond loopback
//!   always);
//! - [`browser`]: the browser viewer's page and its tabs' streams;
//! - [`capture`]: the flight recorder per source;
//! - [`serve`]: all of it run from a [`RelayConfig`] ([`config`]: flags
//!   over a JSON file over defaults), with the metrics served and
//!   exported by `typhon-live-monitoring`.
#![deny(missing_docs)]

mod announce;
pub mod browser;
pub mod capture;
pub mod config;
mod error;
pub mod fanout;
mod ids;
pub mod merge;
pub mod remote;
pub mod serve;
pub mod source;
mod stacks;

pub use config::RelayConfig;
pub use error::RelayError;
