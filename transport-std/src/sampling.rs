//! Samplers: readings no thread of the program records by itself (a
//! runtime's queue depth, its number of live tasks), taken by the
//! exporter thread at a set period while a profiler runs.
//!
//! A sampler is a function that records gauges ([`gauge`](crate::runtime::gauge),
//! [`gauge_f64`](crate::runtime::gauge_f64)). The exporter thread calls
//! each one that is due at the start of its cycle, before it drains the
//! lanes, so a reading reaches a viewer in the same cycle; its gauges are
//! on the exporter thread's lane. Samplers are process-wide, like names
//! and lanes, and outlive a profiler: one registered before a profiler
//! starts is sampled once it runs.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Samplers registered at once, at most: each runs on the exporter
/// thread, whose cycle every viewer waits on.
pub const MAX_SAMPLERS: usize = 16;

/// The shortest period a sampler may ask for. A reading more often than
/// this would cost the exporter's cycle more than it tells.
pub const MIN_PERIOD: Duration = Duration::from_millis(1);

/// Why a sampler was not registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SamplingError {
    /// [`MAX_SAMPLERS`] samplers are registered already.
    Full,
    /// The period asked for is shorter than [`MIN_PERIOD`].
    PeriodTooShort {
        /// The period asked for.
        period: Duration,
    },
}

impl fmt::Display for SamplingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SamplingError::Full => {
                write!(f, "{MAX_SAMPLERS} samplers are registered already")
            }
            SamplingError::PeriodTooShort { period } => write!(
                f,
                "a sampling period of {period:?} is shorter than the minimum, {MIN_PERIOD:?}"
            ),
        }
    }
}

impl std::error::Error for SamplingError {}

type Sample = Box<dyn FnMut() + Send>;

struct Sampler {
    id: u64,
    period: Duration,
    /// When it is next due; `None` until the exporter first sees it.
    next: Option<Instant>,
    sample: Sample,
}

static SAMPLERS: Mutex<Vec<Sampler>> = Mutex::new(Vec::new());
static LAST_ID: AtomicU64 = AtomicU64::new(0);

/// A registered sampler; dropping it unregisters it (waiting for a
/// reading in progress to finish).
#[must_use = "the sampler is unregistered when this is dropped"]
pub struct Sampling {
    id: u64,
}

impl fmt::Debug for Sampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sampling").field("id", &self.id).finish()
    }
}

/// Registers `sample` to be called by the exporter thread every `period`
/// while a profiler runs, the first time at its next cycle. It should
/// record its readings and return: every viewer waits for it. It must
/// not register or drop a [`Sampling`] itself (the registry is locked
/// while it runs). A sampler that panics is unregistered, and the
/// exporter goes on.
pub fn every(
    period: Duration,
    sample: impl FnMut() + Send + 'static,
) -> Result<Sampling, SamplingError> {
    if period < MIN_PERIOD {
        return Err(SamplingError::PeriodTooShort { period });
    }
    let mut samplers = lock();
    if samplers.len() >= MAX_SAMPLERS {
        return Err(SamplingError::Full);
    }
    let id = LAST_ID.fetch_add(1, Ordering::Relaxed) + 1;
    samplers.push(Sampler {
        id,
        period,
        next: None,
        sample: Box::new(sample),
    });
    Ok(Sampling { id })
}

impl Drop for Sampling {
    fn drop(&mut self) {
        lock().retain(|sampler| sampler.id != self.id);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Sampler>> {
    // A sampler's panic is caught inside the lock, so a poisoned lock
    // holds nothing half done.
    SAMPLERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Calls every sampler that is due at `now`: the exporter thread, once
/// a cycle. A sampler due several periods ago is called once, and then
/// counts its period from `now`, so a late cycle makes no burst.
pub(crate) fn run_due(now: Instant) {
    let mut samplers = lock();
    samplers.retain_mut(|sampler| {
        let due = sampler.next.is_none_or(|next| next <= now);
        if !due {
            return true;
        }
        sampler.next = Some(now + sampler.period);
        let kept = catch_unwind(AssertUnwindSafe(&mut sampler.sample)).is_ok();
        if !kept {
            log::warn!("typhon-live: a sampler panicked; it is sampled no more");
        }
        kept
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// One test, so that no other test's samplers share the registry.
    #[test]
    fn samplers_run_when_due_are_bounded_and_a_panic_removes_only_its_own() {
        assert_eq!(
            every(Duration::from_micros(10), || {}).unwrap_err(),
            SamplingError::PeriodTooShort {
                period: Duration::from_micros(10)
            }
        );

        let calls = Arc::new(AtomicU64::new(0));
        let counted = {
            let calls = Arc::clone(&calls);
            every(Duration::from_millis(100), move || {
                calls.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap()
        };
        let panicking = every(Duration::from_millis(100), || panic!("a sampler's bug")).unwrap();
        let start = Instant::now();
        run_due(start);
        assert_eq!(calls.load(Ordering::Relaxed), 1, "due at the first cycle");
        run_due(start + Duration::from_millis(50));
        assert_eq!(calls.load(Ordering::Relaxed), 1, "not due again yet");
        // Ten periods late: one call, not ten.
        run_due(start + Duration::from_secs(1));
        assert_eq!(calls.load(Ordering::Relaxed), 2);
        assert_eq!(lock().len(), 1, "the panicking sampler is gone");
        drop(panicking);

        let mut held = Vec::new();
        while held.len() < MAX_SAMPLERS - 1 {
            held.push(every(Duration::from_secs(1), || {}).unwrap());
        }
        assert_eq!(
            every(Duration::from_secs(1), || {}).unwrap_err(),
            SamplingError::Full
        );
        drop(held);
        drop(counted);
        assert!(lock().is_empty(), "dropping a Sampling unregisters it");
        run_due(start + Duration::from_secs(2));
        assert_eq!(calls.load(Ordering::Relaxed), 2);
    }
}
