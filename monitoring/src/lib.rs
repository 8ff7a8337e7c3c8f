//! typhon-live streams as the monitoring systems a fleet already runs
//! read them, for the relay (`typhon-live relay`).
//!
//! - [`metrics`]: per source, span durations by name, tick durations and
//!   overruns, every gauge's last value, losses and the connection's
//!   state, with the relay's own counters, in a Prometheus registry that
//!   a source's [`owned::Update`](typhon_live_reader::owned::Update)s
//!   feed.
//! - [`scrape`]: `/metrics` served over `typhon-live-http`, in the text
//!   format the scraper asks for.
//! - [`otlp`]: the same metrics, and the span tree of every slow tick,
//!   posted to an OpenTelemetry collector.
//! - [`failures`]: a failure that repeats (a collector that is down, a
//!   port being scanned), told on stderr once, then counted.
#![deny(missing_docs)]

pub mod failures;
pub mod metrics;
pub mod otlp;
pub mod scrape;
