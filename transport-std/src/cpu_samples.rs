//! The exporter thread samples each lane's thread ([`ThreadTimes`]) every
//! so often, and the session writes what it read as Samples frames
//! (FORMAT.md, "Samples"). A lane whose thread cannot be read (it ended,
//! the system does not say) is left out; that it cannot is said once.
//!
//! A lane whose counters did not move since it was last sent (a thread
//! asleep, waiting for work) is sent again only after [`QUIET_EVERY`]:
//! its counters are cumulative, so the reader's next interval covers the
//! time between, and an idle process's samples cost a tenth of the bytes.

use std::time::{Duration, Instant};

use typhon_live_core::{Counters, LaneSample};

use crate::runtime::{LANES, MAX_LANES};
use crate::thread_times::{thread_of, ThreadTimes};

/// How often each lane's thread is sampled, unless configured.
pub(crate) const DEFAULT_EVERY: Duration = Duration::from_millis(10);
/// A lane whose counters did not move is sent at most this often: a
/// viewer still sees a thread asleep while it sleeps.
pub(crate) const QUIET_EVERY: Duration = Duration::from_millis(100);

/// Each lane's thread, kept open between samples.
pub(crate) struct CpuSamples {
    every: Duration,
    next: Option<Instant>,
    /// Per lane slot: its thread's id and counters, open.
    open: Vec<Option<(u64, ThreadTimes)>>,
    /// Per lane slot: the thread id that could not be read, not tried
    /// again.
    failed: Vec<u64>,
    /// Per lane slot: the counters last sent, and when.
    sent: Vec<Option<(Counters, Instant)>>,
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
            sent: vec![None; MAX_LANES],
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
                    Ok(times) => {
                        self.open[id] = Some((thread, times));
                        self.sent[id] = None;
                    }
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
                Ok(counters) => {
                    let quiet = self.sent[id].is_some_and(|(last, at)| {
                        last == counters && now.duration_since(at) < QUIET_EVERY
                    });
                    if quiet {
                        continue;
                    }
                    self.sent[id] = Some((counters, now));
                    self.samples.push(LaneSample {
                        lane: info.id,
                        thread: *thread,
                        switches_traced: false,
                        counters,
                    });
                }
                // The thread ended: its lane is released or soon will be.
                Err(_) => {
                    self.failed[id] = *thread;
                    self.open[id] = None;
                    self.sent[id] = None;
                }
            }
        }
        Some(&self.samples)
    }
}
