//! The exporter thread samples each lane's thread ([`ThreadTimes`]) every
//! so often, and the session writes what it read as Samples frames
//! (FORMAT.md, "Samples"). A lane whose thread cannot be read (it ended,
//! the system does not say) is left out; that it cannot is said once.

use std::time::{Duration, Instant};

use typhon_live_core::LaneSample;

use crate::runtime::{LANES, MAX_LANES};
use crate::thread_times::{thread_of, ThreadTimes};

/// How often each lane's thread is sampled, unless configured.
pub(crate) const DEFAULT_EVERY: Duration = Duration::from_millis(10);

/// Each lane's thread, kept open between samples.
pub(crate) struct CpuSamples {
    every: Duration,
    next: Option<Instant>,
    /// Per lane slot: its thread's id and counters, open.
    open: Vec<Option<(u64, ThreadTimes)>>,
    /// Per lane slot: the thread id that could not be read, not tried
    /// again.
    failed: Vec<u64>,
    samples: Vec<LaneSample>,
    said: bool,
}

impl CpuSamples {
    /// Sampling every `every`.
    pub(crate) fn new(every: Duration) -> CpuSamples {
        CpuSamples {
            every,
            next: None,
            open: (0..MAX_LANES).map(|_| None).collect(),
            failed: vec![0; MAX_LANES],
            samples: Vec::with_capacity(MAX_LANES),
            said: false,
        }
    }

    /// When a sample is due at `now`: each lane's counters, read now.
    pub(crate) fn due(&mut self, now: Instant) -> Option<&[LaneSample]> {
        if self.next.is_some_and(|next| now < next) {
            return None;
        }
        // Late cycles do not bunch samples up.
        self.next = Some(now + self.every);
        self.samples.clear();
        for info in LANES.iter() {
            let id = usize::from(info.id);
            let thread = thread_of(info.id);
            if thread == 0 || self.failed[id] == thread {
                continue;
            }
            if self.open[id].as_ref().is_none_or(|(t, _)| *t != thread) {
                match ThreadTimes::open(thread) {
                    Ok(times) => self.open[id] = Some((thread, times)),
                    Err(e) => {
                        self.failed[id] = thread;
                        self.open[id] = None;
                        if !self.said {
                            self.said = true;
                            log::info!("typhon-live: a lane's CPU time is not sampled: {e}");
                        }
                        continue;
                    }
                }
            }
            let Some((thread, times)) = self.open[id].as_mut() else {
                continue;
            };
            match times.read(now) {
                Ok(counters) => self.samples.push(LaneSample {
                    lane: info.id,
                    thread: *thread,
                    switches_traced: false,
                    counters,
                }),
                // The thread ended: its lane is released or soon will be.
                Err(_) => {
                    self.failed[id] = *thread;
                    self.open[id] = None;
                }
            }
        }
        Some(&self.samples)
    }
}
