//! Samples frames read as intervals: what each lane's thread did between
//! two samples (FORMAT.md, "Samples"). The counters are cumulative, so
//! this is where they become time spent, once, for every consumer.

use alloc::collections::BTreeMap;

use typhon_live_core::{Counters, LaneId, LaneSample};

use crate::state::MAX_LANES;

/// How a lane's thread spent an interval between two samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuInterval {
    /// The lane.
    pub lane: LaneId,
    /// Its thread, as the system names it (0: unknown).
    pub thread: u64,
    /// The interval's start and end, ns of the session's clock: the two
    /// samples' times. Samples lost between them make it longer, never
    /// wrong.
    pub from: u64,
    /// See `from`.
    pub to: u64,
    /// What changed over it; `None` where the system does not measure it.
    pub spent: Counters,
    /// Its switches are traced one by one ([`Update::Switch`]): the
    /// exact moments, where the counters give only sums.
    ///
    /// [`Update::Switch`]: crate::Update::Switch
    pub switches_traced: bool,
}

impl CpuInterval {
    /// Time off a CPU and not waiting for one (asleep, blocked), ns: the
    /// interval less its time on a CPU and waiting. `None` without both.
    pub fn off_cpu_ns(&self) -> Option<u64> {
        let busy = self.spent.on_cpu_ns?.saturating_add(self.spent.waiting_ns?);
        Some((self.to - self.from).saturating_sub(busy))
    }
}

/// The last sample of each lane's thread, to measure the next against.
#[derive(Clone, Debug, Default)]
pub(crate) struct LastSamples {
    lanes: BTreeMap<LaneId, (u64, u64, Counters)>,
}

impl LastSamples {
    /// Forgets every lane: a new session, a restart.
    pub(crate) fn clear(&mut self) {
        self.lanes.clear();
    }

    /// `sample`, read at `time` (ns), against the lane's last one: the
    /// interval between them, if there is one. A new thread on the lane,
    /// a counter that went backwards (a thread id the system reused), a
    /// counter that appeared or vanished, or time that did not move on
    /// starts the lane over: no interval, this sample the next one's
    /// base. Lanes past [`MAX_LANES`] are not kept.
    pub(crate) fn interval(&mut self, sample: &LaneSample, time: u64) -> Option<CpuInterval> {
        let now = (sample.thread, time, sample.counters);
        let last = match self.lanes.get_mut(&sample.lane) {
            Some(last) => core::mem::replace(last, now),
            None => {
                if self.lanes.len() < MAX_LANES {
                    self.lanes.insert(sample.lane, now);
                }
                return None;
            }
        };
        let (thread, from, before) = last;
        if thread != sample.thread || time <= from {
            return None;
        }
        let spent = spent(&before, &sample.counters)?;
        Some(CpuInterval {
            lane: sample.lane,
            thread: sample.thread,
            from,
            to: time,
            spent,
            switches_traced: sample.switches_traced,
        })
    }
}

/// Each counter's growth from `before` to `after`; `None` when one went
/// backwards, or is in one and not the other.
fn spent(before: &Counters, after: &Counters) -> Option<Counters> {
    let grew = |a: Option<u64>, b: Option<u64>| -> Option<Option<u64>> {
        match (a, b) {
            (Some(a), Some(b)) => b.checked_sub(a).map(Some),
            (None, None) => Some(None),
            _ => None,
        }
    };
    Some(Counters {
        on_cpu_ns: grew(before.on_cpu_ns, after.on_cpu_ns)?,
        waiting_ns: grew(before.waiting_ns, after.waiting_ns)?,
        voluntary: grew(before.voluntary, after.voluntary)?,
        involuntary: grew(before.involuntary, after.involuntary)?,
        allocated_bytes: grew(before.allocated_bytes, after.allocated_bytes)?,
        freed_bytes: grew(before.freed_bytes, after.freed_bytes)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(thread: u64, cpu: u64, voluntary: u64) -> LaneSample {
        LaneSample {
            lane: 2,
            thread,
            switches_traced: false,
            counters: Counters {
                on_cpu_ns: Some(cpu),
                waiting_ns: Some(cpu / 4),
                voluntary: Some(voluntary),
                involuntary: None,
                allocated_bytes: Some(cpu * 8),
                freed_bytes: None,
            },
        }
    }

    #[test]
    fn intervals_are_the_counters_growth_and_start_over_on_a_new_thread_or_a_counter_back() {
        let mut last = LastSamples::default();
        assert_eq!(last.interval(&sample(7, 100, 1), 1_000), None);
        let interval = last.interval(&sample(7, 400, 3), 2_000).unwrap();
        assert_eq!((interval.from, interval.to), (1_000, 2_000));
        assert_eq!(interval.spent.on_cpu_ns, Some(300));
        assert_eq!(interval.spent.waiting_ns, Some(75));
        assert_eq!(interval.spent.voluntary, Some(2));
        assert_eq!(interval.spent.involuntary, None);
        assert_eq!(interval.spent.allocated_bytes, Some(2_400));
        assert_eq!(interval.spent.freed_bytes, None);
        assert_eq!(interval.off_cpu_ns(), Some(1_000 - 375));
        // Another thread on the lane: its counters are its own.
        assert_eq!(last.interval(&sample(8, 50, 0), 3_000), None);
        assert_eq!(
            last.interval(&sample(8, 80, 0), 4_000)
                .unwrap()
                .spent
                .on_cpu_ns,
            Some(30)
        );
        // Backwards: a reused id. Time standing still: nothing to measure.
        assert_eq!(last.interval(&sample(8, 10, 0), 5_000), None);
        assert_eq!(last.interval(&sample(8, 20, 0), 5_000), None);
        assert!(last.interval(&sample(8, 30, 0), 6_000).is_some());
    }
}
