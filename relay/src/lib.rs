//! The relay behind `typhon-live relay`: many processes in, many viewers
//! and the monitoring systems a fleet already runs out.
//!
//! It attaches as the viewer of every source ([`source`]), reconnecting
//! for as long as it runs, reads each source's frames once ([`update`]),
//! merges them into one session on one clock ([`merge`]) for any number of
//! viewers ([`fanout`]; beyond loopback over TLS with a token, [`remote`]), serves their metrics to Prometheus ([`metrics`],
//! over [`http`]), and exports the metrics and slow ticks' span trees over
//! OTLP ([`otlp`]). [`serve::run`] runs it all with a [`RelayConfig`]
//! ([`config`]: flags over a JSON file over defaults).
#![deny(missing_docs)]

pub mod config;
mod error;
pub mod failures;
pub mod fanout;
pub mod http;
pub mod in_flight;
pub mod late;
pub mod merge;
pub mod metrics;
pub mod otlp;
pub mod page;
pub mod remote;
pub mod replay;
pub mod serve;
pub mod source;
pub mod tabs;
pub mod update;

pub use config::RelayConfig;
pub use error::RelayError;
