//! Where a session's time lies on another clock, and back (FORMAT.md,
//! "Reading a stream": Unix time), once for every consumer: the Unix
//! clock (OTLP's spans, a flight recorder's "now"), or a clock that began
//! at a Unix time (the relay's merged stream).

/// A session's clock placed on another: a session time `t` (ns) lies at
/// `t + shift` there. Built from the reader's estimate of the Unix
/// offset ([`State::unix`](crate::State::unix)); every consumer places
/// and holds times through it alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    shift: i128,
}

impl Placement {
    /// Session times on the Unix clock: `offset` is Unix ns less session
    /// ns ([`State::unix_offset`](crate::State::unix_offset)).
    #[inline]
    pub const fn unix(offset: i128) -> Placement {
        Placement { shift: offset }
    }

    /// The same times on a clock that began at Unix time `start` (ns):
    /// the relay's, whose 0 is when it started.
    #[inline]
    pub const fn since(self, start: u64) -> Placement {
        Placement {
            shift: self.shift - start as i128,
        }
    }

    /// Every time `ns` later: a source moved on, so that what it sent
    /// before the clock began lies on it whole.
    #[inline]
    pub const fn later(self, ns: u64) -> Placement {
        Placement {
            shift: self.shift + ns as i128,
        }
    }

    /// `t` on the clock, held to it: a time before its 0 is 0 (a span
    /// that began before the relay did starts at its start), one past its
    /// end is `u64::MAX`.
    #[inline]
    pub fn place(self, t: u64) -> u64 {
        u64::try_from((i128::from(t) + self.shift).max(0)).unwrap_or(u64::MAX)
    }

    /// `t` on the clock, if it lies on it as it is.
    #[inline]
    pub fn exactly(self, t: u64) -> Option<u64> {
        u64::try_from(i128::from(t) + self.shift).ok()
    }

    /// How far before the clock's 0 `t` lies, ns: 0 when it lies on it.
    #[inline]
    pub fn before_start(self, t: u64) -> u64 {
        let before = -(i128::from(t) + self.shift);
        u64::try_from(before.max(0)).unwrap_or(u64::MAX)
    }

    /// The session time of `at`, a time on this clock: `None` before the
    /// session's clock began (or past its end).
    #[inline]
    pub fn back(self, at: u64) -> Option<u64> {
        u64::try_from(i128::from(at) - self.shift).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_time_before_the_clock_is_held_to_its_start_and_said_how_far() {
        // A session that began 5 s after the epoch's 0, on a relay that
        // started 7 s after it.
        let relay = Placement::unix(5_000).since(7_000);
        assert_eq!(relay.place(2_500), 500);
        assert_eq!(relay.place(1_000), 0);
        assert_eq!(relay.exactly(1_000), None);
        assert_eq!(relay.before_start(1_000), 1_000);
        assert_eq!(relay.before_start(2_000), 0);
        assert_eq!(relay.later(1_000).place(1_000), 0);
        assert_eq!(relay.later(1_000).exactly(1_500), Some(500));
        assert_eq!(Placement::unix(i128::from(u64::MAX)).place(1), u64::MAX);
        assert_eq!(Placement::unix(-10).back(5), Some(15));
        assert_eq!(Placement::unix(10).back(5), None, "before the session");
    }

    proptest! {
        /// Placing and placing back are one another's inverse wherever a
        /// time lies on both clocks; a time off the clock is held to it.
        #[test]
        fn back_undoes_place_on_the_clock(
            t in any::<u64>(), offset in any::<i64>(), start in any::<u64>(), lead in 0u64..1 << 40
        ) {
            let placement = Placement::unix(i128::from(offset)).since(start).later(lead);
            match placement.exactly(t) {
                Some(at) => {
                    prop_assert_eq!(placement.back(at), Some(t));
                    prop_assert_eq!(placement.place(t), at);
                    prop_assert_eq!(placement.before_start(t), 0);
                }
                None => {
                    let held = placement.place(t);
                    prop_assert!(held == 0 || held == u64::MAX);
                    prop_assert_eq!(held == 0, placement.before_start(t) > 0);
                }
            }
        }
    }
}
