//! When a live tab's frame is too late to send.
//!
//! A page that is slower than its stream for good (its thread sharing a
//! core with a software rasterizer, say) would lag further and further:
//! its frames should be dropped, so that what it shows stays live. A
//! page that stalls for a moment (a long frame, a screenshot) and then
//! catches up should lose nothing. So a Block or Catch-up is dropped
//! when it waited over [`MAX_WAIT`] in the tab's queue and the tab has
//! been behind, without catching up, for [`GRACE`]: a tab is behind from
//! the moment its oldest queued frame passed [`MAX_WAIT`], and has caught
//! up when it takes a frame that is not late and leaves its queue empty.

use std::time::{Duration, Instant};

/// The longest a Block or Catch-up waits in the queue of a tab that is
/// behind for good.
pub const MAX_WAIT: Duration = Duration::from_millis(50);

/// How long a tab may be behind before its late frames are dropped: a
/// page may stall this long and lose nothing (within its queue's bound).
pub const GRACE: Duration = Duration::from_secs(1);

/// A tab's lateness: since when it has been behind, if it is.
#[derive(Debug, Default)]
pub(crate) struct Lateness {
    behind_since: Option<Instant>,
}

impl Lateness {
    /// Whether to drop a frame queued at `queued_at` and taken from the
    /// queue at `now`, leaving it `empty` or not; only a `droppable` one
    /// (a Block, or a Catch-up past the start) is.
    pub(crate) fn drops(
        &mut self,
        queued_at: Instant,
        droppable: bool,
        empty: bool,
        now: Instant,
    ) -> bool {
        let late_at = queued_at + MAX_WAIT;
        if now > late_at {
            self.behind_since.get_or_insert(late_at);
        } else if empty {
            self.behind_since = None;
        }
        droppable
            && now > late_at
            && self
                .behind_since
                .is_some_and(|since| now.saturating_duration_since(since) >= GRACE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_tab_that_stalls_for_a_moment_loses_nothing() {
        let (mut lateness, t0) = (Lateness::default(), Instant::now());
        // Frames queued every 10 ms while the tab stalled for 600 ms,
        // then taken at once.
        for i in 0..60 {
            let now = t0 + 600 * MS + i * MS;
            assert!(!lateness.drops(t0 + i * 10 * MS, true, false, now));
        }
        // It caught up: a frame taken in time leaves its queue empty.
        assert!(!lateness.drops(t0 + 660 * MS, true, true, t0 + 661 * MS));
        // Late frames again, for less than the grace, are still sent.
        let t1 = t0 + 2 * GRACE;
        assert!(!lateness.drops(t1, true, false, t1 + GRACE - 10 * MS));
    }

    #[test]
    fn a_tab_behind_for_good_has_its_late_frames_dropped_and_no_others() {
        let (mut lateness, t0) = (Lateness::default(), Instant::now());
        // Behind since t0 + MAX_WAIT; past the grace, the late go.
        let now = t0 + MAX_WAIT + GRACE + MS;
        assert!(lateness.drops(t0, true, false, now));
        // Not an Init, nor the start: those are never dropped.
        assert!(!lateness.drops(t0, false, false, now));
        // A frame that is not late is sent, and the tab is still behind
        // while its queue holds more.
        assert!(!lateness.drops(now - MS, true, false, now));
        assert!(lateness.drops(now - 2 * MAX_WAIT, true, false, now + MS));
        // Once it takes a frame in time and empties its queue, it is
        // caught up, and has its grace again.
        assert!(!lateness.drops(now, true, true, now + MS));
        assert!(!lateness.drops(now, true, false, now + 2 * MAX_WAIT));
    }
}
