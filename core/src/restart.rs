//! Restarts under the same session id, as a reader tells them (FORMAT.md,
//! "Reading a stream"), so that every reader tells them alike.
//!
//! A process that restarts sends an Init with a new session id. A device
//! without a source of fresh ids (a microcontroller) comes back under the
//! same one: its clock starting over is what tells. After a repeated Init
//! of the session, or a new connection, the first time the stream states
//! (a Catch-up's, or a Block's first event) is compared with the latest
//! time seen: more than a second of the session's clock behind it is a
//! restart. A Block may begin a little before a Catch-up seen earlier, but
//! not that far; a Block without records states no time.

/// One reader's watch for a restart under the same session id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RestartCheck {
    /// The latest time seen this run, in the session's ticks.
    latest: Option<u64>,
    /// The next time read tells whether the writer started over.
    armed: bool,
}

impl RestartCheck {
    /// A check that has seen no time yet.
    pub const fn new() -> Self {
        RestartCheck {
            latest: None,
            armed: false,
        }
    }

    /// A new session (an Init with another id): nothing seen of it yet.
    pub fn new_session(&mut self) {
        *self = RestartCheck::new();
    }

    /// A repeated Init of the session, or a new connection: the next time
    /// read tells whether the writer started over meanwhile.
    pub fn arm(&mut self) {
        self.armed = self.latest.is_some();
    }

    /// A Catch-up's time: `true` if it shows a restart.
    pub fn catch_up(&mut self, time: u64, ticks_per_second: u64) -> bool {
        self.read(time, time, ticks_per_second)
    }

    /// A Block's first and last timestamps and record count: `true` if
    /// it shows a restart. A Block without records states no time.
    pub fn block(&mut self, first: u64, last: u64, records: u32, ticks_per_second: u64) -> bool {
        records > 0 && self.read(first, last, ticks_per_second)
    }

    /// The latest time seen since the session (or its restart) began.
    pub fn latest(&self) -> Option<u64> {
        self.latest
    }

    fn read(&mut self, first: u64, last: u64, ticks_per_second: u64) -> bool {
        let back = first.saturating_add(ticks_per_second.max(1));
        let restarted =
            core::mem::take(&mut self.armed) && self.latest.is_some_and(|latest| back < latest);
        self.latest = match self.latest {
            Some(latest) if !restarted => Some(latest.max(last)),
            _ => Some(last),
        };
        restarted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TPS: u64 = 1_000_000;

    #[test]
    fn only_an_armed_check_tells_and_only_past_a_second_back() {
        let mut check = RestartCheck::new();
        // Nothing seen: arming does nothing.
        check.arm();
        assert!(!check.block(5_000_000, 5_100_000, 10, TPS));
        // Unarmed, the clock going back is no restart.
        assert!(!check.block(0, 10, 10, TPS));
        assert_eq!(check.latest(), Some(5_100_000));
        // Armed: a second back exactly is not one, more is.
        check.arm();
        assert!(!check.catch_up(4_100_000, TPS));
        check.arm();
        assert!(check.block(4_099_999, 4_200_000, 3, TPS));
        assert_eq!(check.latest(), Some(4_200_000));
        // The arm is used up by the first time read.
        assert!(!check.block(0, 1, 1, TPS));
    }

    #[test]
    fn a_block_without_records_states_no_time() {
        // Its timestamps are 0: read as times, every repeated Init
        // followed by a Block of drop entries only was a restart.
        let mut check = RestartCheck::new();
        assert!(!check.block(5_000_000, 5_100_000, 10, TPS));
        check.arm();
        assert!(!check.block(0, 0, 0, TPS));
        assert!(!check.block(5_200_000, 5_300_000, 10, TPS));
        assert_eq!(check.latest(), Some(5_300_000));
    }

    #[test]
    fn a_new_session_forgets_the_old_clock() {
        let mut check = RestartCheck::new();
        assert!(!check.block(5_000_000, 5_100_000, 10, TPS));
        check.new_session();
        check.arm();
        assert!(!check.block(0, 10, 1, TPS));
    }
}
