//! Sequence numbers as a reader counts them (FORMAT.md, "Reading a
//! stream"), so that every reader counts the frames it missed alike.
//!
//! The frames a reader missed are the gaps in the numbers it sees. A
//! repeated Init of the same session goes on with the numbers, so the
//! numbers it skipped were missed too. A number behind the one expected
//! is no gap: the writer started its stream over (a device that rebooted)
//! and this reader did not see its Init, so the count starts again there.

/// One reader's count of the frames it missed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SequenceCheck {
    expected: Option<u32>,
    session: Option<u64>,
}

impl SequenceCheck {
    /// A reader that has seen nothing yet.
    pub const fn new() -> Self {
        SequenceCheck {
            expected: None,
            session: None,
        }
    }

    /// A new connection: a new stream, numbered afresh from its Init.
    pub fn reconnected(&mut self) {
        self.expected = None;
    }

    /// Frames missed before the sequenced frame numbered `seq` (every kind
    /// but Init, known or not).
    pub fn sequenced(&mut self, seq: u32) -> u32 {
        let missed = self.missed_before(seq);
        self.expected = Some(seq.wrapping_add(1));
        missed
    }

    /// Frames missed before an Init of `session` naming `next_seq`: on a
    /// stream that goes on (the same session), the numbers it skipped; an
    /// Init of another session starts the count.
    pub fn init(&mut self, next_seq: u32, session: u64) -> u32 {
        let missed = if self.session == Some(session) {
            self.missed_before(next_seq)
        } else {
            0
        };
        self.session = Some(session);
        self.expected = Some(next_seq);
        missed
    }

    fn missed_before(&self, seq: u32) -> u32 {
        let ahead = self
            .expected
            .map_or(0, |expected| seq.wrapping_sub(expected));
        // Half the number space behind is "behind": a new stream.
        if ahead < 1 << 31 {
            ahead
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_count_across_a_repeated_init_and_a_new_stream_starts_afresh() {
        let mut check = SequenceCheck::new();
        assert_eq!(check.init(0, 7), 0);
        assert_eq!(check.sequenced(0), 0);
        assert_eq!(check.sequenced(3), 2);
        // A repeated Init naming 10: frames 4 to 9 were missed.
        assert_eq!(check.init(10, 7), 6);
        assert_eq!(check.sequenced(10), 0);
        // The same session's Init naming 0: a rebooted device's new
        // stream, no gap; nor for another session's.
        assert_eq!(check.init(0, 7), 0);
        assert_eq!(check.sequenced(1), 1);
        assert_eq!(check.init(50, 8), 0);
        // Numbers going back without an Init: no gap, counted from there.
        assert_eq!(check.sequenced(20), 0);
        assert_eq!(check.sequenced(22), 1);
        // Wrapping at 2^32 is going on.
        check.sequenced(u32::MAX);
        assert_eq!(check.sequenced(1), 1);
        // A new connection's first frame is no gap.
        check.reconnected();
        assert_eq!(check.sequenced(900), 0);
    }
}
