//! The std transport of typhon-live: the profiler runtime, the live TCP
//! exporter, the trace-file sink and the zero-code launch configuration;
//! and the other end, a viewer attaching to a live stream ([`attach`]).
//!
//! Byte work and protocol state belong to `typhon-live-core` and its
//! sans-IO exporter; this crate supplies threads, sockets, files, time and
//! configuration. The flight recorder (`typhon-live-recorder`) is one more
//! reader of the exporter when its directory is configured.
//!
//! ```no_run
//! use typhon_live_std::{config::ProfilerConfig, Profiler};
//! use typhon_live_core::Metadata;
//!
//! let config = ProfilerConfig::load(None, std::env::args()).expect("configuration");
//! let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
//! for tick in 0..600 {
//!     typhon_live_std::runtime::tick_start(tick);
//!     {
//!         let _span = typhon_live_std::span!("Physics");
//!         // ... work ...
//!     }
//!     typhon_live_std::runtime::tick_end(tick, false);
//! }
//! profiler.stop().expect("trace file written");
//! ```
#![deny(missing_docs)]

pub mod allocation_sites;
pub mod attach;
pub mod config;
mod cpu_samples;
mod file;
mod flight;
mod memory_samples;
pub mod metadata;
#[cfg(target_os = "linux")]
mod modules;
pub mod runtime;
pub mod sampling;
mod session;
mod stack_samples;
mod stack_tree;
mod switches;
mod symbolizer;
pub mod tasks;
mod tcp;
pub mod texts;
mod thread_times;
pub mod tracking;
mod unwinding;

pub use session::{Profiler, StartError, Stats, SHUTDOWN_WAIT};
pub use tcp::{MAX_QUEUED_BYTES, SEND_BUFFER_BYTES};
pub use tracking::Tracking;
