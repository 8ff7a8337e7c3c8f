//! Gauges of a tokio runtime, for typhon-live: how many workers it has,
//! how many tasks are alive, how deep its global queue is, and how busy
//! each worker was, sampled by the profiler's exporter thread
//! ([`typhon_live_std::sampling`]) beside the spans of the service.
//!
//! Only tokio's stable metrics are read: no `tokio_unstable` is needed.
//!
//! ```no_run
//! # async fn serve() {}
//! let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
//! // Sampled every 100 ms while a profiler runs, until dropped.
//! let _gauges = typhon_live_tokio::RuntimeGauges::watch(runtime.handle()).expect("a sampler slot");
//! runtime.block_on(serve());
//! ```
//!
//! The gauges, each name beginning with the prefix (`tokio` unless
//! [`RuntimeGauges::watch_as`] names another, for a second runtime):
//!
//! | gauge | reading |
//! |---|---|
//! | `tokio.workers` | worker threads |
//! | `tokio.alive_tasks` | tasks spawned and not yet finished |
//! | `tokio.global_queue_depth` | tasks waiting in the queue every worker takes from |
//! | `tokio.busy_ratio` | the share of the last period the workers spent running tasks, 0 to 1, all workers together |
//! | `tokio.worker.N.busy_ratio` | the same for worker N (the first [`MAX_NAMED_WORKERS`]) |
//! | `tokio.worker.N.parks` | times worker N parked (went to sleep for want of work) in the last period |
//!
//! The busy and park readings need 64-bit atomics, as tokio's own do;
//! on other targets only the first three are sampled.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::fmt;
use std::time::Duration;

use tokio::runtime::{Handle, RuntimeMetrics};
use typhon_live_std::runtime::{gauge, gauge_f64, intern};
use typhon_live_std::sampling::{self, Sampling, SamplingError};

/// How often [`RuntimeGauges::watch`] samples.
pub const DEFAULT_PERIOD: Duration = Duration::from_millis(100);

/// Workers that get gauges of their own; the busy ratio of all of them
/// counts every worker. A name per worker is interned once and kept for
/// the process, so their number is bounded.
pub const MAX_NAMED_WORKERS: usize = 64;

/// The longest prefix [`RuntimeGauges::watch_as`] takes, in bytes.
pub const MAX_PREFIX: usize = 64;

/// Why a runtime's gauges were not set up.
#[derive(Debug)]
#[non_exhaustive]
pub enum WatchError {
    /// The exporter's samplers are all taken, or the period is too short.
    Sampling(SamplingError),
    /// The prefix is empty or longer than [`MAX_PREFIX`] bytes.
    Prefix {
        /// Its length in bytes.
        len: usize,
    },
    /// The profiler's name table is full: a gauge has no name to go by.
    Names {
        /// The name that could not be interned.
        name: String,
    },
}

impl fmt::Display for WatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchError::Sampling(e) => write!(f, "cannot sample the tokio runtime: {e}"),
            WatchError::Prefix { len } => write!(
                f,
                "a gauge prefix of {len} bytes is not between 1 and {MAX_PREFIX}"
            ),
            WatchError::Names { name } => {
                write!(f, "cannot name the gauge {name:?}: the name table is full")
            }
        }
    }
}

impl std::error::Error for WatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WatchError::Sampling(e) => Some(e),
            WatchError::Prefix { .. } | WatchError::Names { .. } => None,
        }
    }
}

impl From<SamplingError> for WatchError {
    fn from(e: SamplingError) -> Self {
        WatchError::Sampling(e)
    }
}

/// A tokio runtime's gauges, sampled while this is held.
#[must_use = "the runtime is sampled no more once this is dropped"]
#[derive(Debug)]
pub struct RuntimeGauges {
    _sampling: Sampling,
}

impl RuntimeGauges {
    /// Samples `handle`'s runtime every [`DEFAULT_PERIOD`], under the
    /// prefix `tokio`.
    pub fn watch(handle: &Handle) -> Result<RuntimeGauges, WatchError> {
        Self::watch_as(handle, "tokio", DEFAULT_PERIOD)
    }

    /// Samples `handle`'s runtime every `period`, its gauges named
    /// `PREFIX.workers` and so on.
    pub fn watch_as(
        handle: &Handle,
        prefix: &str,
        period: Duration,
    ) -> Result<RuntimeGauges, WatchError> {
        if prefix.is_empty() || prefix.len() > MAX_PREFIX {
            return Err(WatchError::Prefix { len: prefix.len() });
        }
        let mut sampler = Sampler::new(handle.metrics(), prefix)?;
        let sampling = sampling::every(period, move || sampler.sample())?;
        Ok(RuntimeGauges {
            _sampling: sampling,
        })
    }
}

fn name(name: String) -> Result<u32, WatchError> {
    intern(&name).ok_or(WatchError::Names { name })
}

/// The names and the previous readings of one runtime.
struct Sampler {
    metrics: RuntimeMetrics,
    workers: u32,
    alive_tasks: u32,
    global_queue: u32,
    #[cfg(target_has_atomic = "64")]
    busy: Busy,
}

impl Sampler {
    fn new(metrics: RuntimeMetrics, prefix: &str) -> Result<Sampler, WatchError> {
        Ok(Sampler {
            workers: name(format!("{prefix}.workers"))?,
            alive_tasks: name(format!("{prefix}.alive_tasks"))?,
            global_queue: name(format!("{prefix}.global_queue_depth"))?,
            #[cfg(target_has_atomic = "64")]
            busy: Busy::new(&metrics, prefix)?,
            metrics,
        })
    }

    fn sample(&mut self) {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        gauge(self.workers, count(self.metrics.num_workers()));
        gauge(self.alive_tasks, count(self.metrics.num_alive_tasks()));
        gauge(self.global_queue, count(self.metrics.global_queue_depth()));
        #[cfg(target_has_atomic = "64")]
        self.busy.sample(&self.metrics);
    }
}

/// Each worker's busy time and parks, read as the change since the
/// previous sample.
#[cfg(target_has_atomic = "64")]
struct Busy {
    all: u32,
    /// Per named worker: its busy ratio's name and its parks' name.
    named: Vec<(u32, u32)>,
    /// Per worker: total busy time and parks at the previous sample.
    previous: Vec<(Duration, u64)>,
    at: std::time::Instant,
}

#[cfg(target_has_atomic = "64")]
impl Busy {
    fn new(metrics: &RuntimeMetrics, prefix: &str) -> Result<Busy, WatchError> {
        let workers = metrics.num_workers();
        let named = (0..workers.min(MAX_NAMED_WORKERS))
            .map(|i| {
                Ok((
                    name(format!("{prefix}.worker.{i}.busy_ratio"))?,
                    name(format!("{prefix}.worker.{i}.parks"))?,
                ))
            })
            .collect::<Result<_, WatchError>>()?;
        Ok(Busy {
            all: name(format!("{prefix}.busy_ratio"))?,
            named,
            previous: Self::read(metrics),
            at: std::time::Instant::now(),
        })
    }

    fn read(metrics: &RuntimeMetrics) -> Vec<(Duration, u64)> {
        (0..metrics.num_workers())
            .map(|i| {
                (
                    metrics.worker_total_busy_duration(i),
                    metrics.worker_park_count(i),
                )
            })
            .collect()
    }

    fn sample(&mut self, metrics: &RuntimeMetrics) {
        let now = std::time::Instant::now();
        let wall = now.duration_since(self.at).as_secs_f64();
        let current = Self::read(metrics);
        if wall <= 0.0 || current.is_empty() {
            return;
        }
        let mut busy_all = 0.0;
        for (i, (&(busy, parks), &(busy_before, parks_before))) in
            current.iter().zip(&self.previous).enumerate()
        {
            let busy = busy.saturating_sub(busy_before).as_secs_f64();
            busy_all += busy;
            if let Some(&(ratio_name, parks_name)) = self.named.get(i) {
                gauge_f64(ratio_name, (busy / wall).min(1.0));
                let parks = parks.saturating_sub(parks_before);
                gauge(parks_name, i64::try_from(parks).unwrap_or(i64::MAX));
            }
        }
        gauge_f64(
            self.all,
            (busy_all / (wall * current.len() as f64)).min(1.0),
        );
        self.previous = current;
        self.at = now;
    }
}
