//! A session's clock: its ticks in nanoseconds, exactly.

/// Converts a session's ticks to nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    ticks_per_second: u64,
    /// When a tick is a whole number of ns, the cheap way (a multiply:
    /// the reader converts every event time).
    ns_per_tick: Option<u64>,
}

impl Clock {
    /// Nanoseconds: the clock a reader assumes before any Init says
    /// otherwise (FORMAT.md, "Reading damaged or cut streams").
    pub const NS: Clock = Clock {
        ticks_per_second: 1_000_000_000,
        ns_per_tick: Some(1),
    };

    /// A clock of `ticks_per_second` (0 is read as 1).
    pub fn new(ticks_per_second: u64) -> Self {
        let ticks_per_second = ticks_per_second.max(1);
        Clock {
            ticks_per_second,
            ns_per_tick: (1_000_000_000 % ticks_per_second == 0)
                .then_some(1_000_000_000 / ticks_per_second),
        }
    }

    /// Its rate, as the Init stated it (at least 1).
    pub fn ticks_per_second(&self) -> u64 {
        self.ticks_per_second
    }

    /// `ticks` in ns, saturating at `u64::MAX` (584 years).
    pub fn ns(&self, ticks: u64) -> u64 {
        match self.ns_per_tick {
            // A ns clock's times as they are: on wasm32, `saturating_mul`'s
            // overflow check is a 128-bit multiply in a library call, for
            // every time the page reads (5 % of its reading).
            Some(1) => ticks,
            Some(k) => ticks.saturating_mul(k),
            None => {
                u64::try_from(u128::from(ticks) * 1_000_000_000 / u128::from(self.ticks_per_second))
                    .unwrap_or(u64::MAX)
            }
        }
    }

    /// `ns` in ticks: the first tick that [`Clock::ns`] reads as `ns`
    /// (when one does), so that a time read, written back and read again
    /// is the same. Saturates at `u64::MAX`.
    pub fn ticks(&self, ns: u64) -> u64 {
        match self.ns_per_tick {
            Some(k) => ns.div_ceil(k),
            None => u64::try_from(
                (u128::from(ns) * u128::from(self.ticks_per_second)).div_ceil(1_000_000_000),
            )
            .unwrap_or(u64::MAX),
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::NS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_and_fractional_ticks_convert_exactly_and_saturate() {
        assert_eq!(Clock::new(1_000_000).ns(3), 3_000);
        assert_eq!(Clock::new(3).ns(1), 333_333_333);
        assert_eq!(Clock::new(3).ns(3), 1_000_000_000);
        assert_eq!(Clock::new(0).ns(1), 1_000_000_000);
        assert_eq!(Clock::new(1_000).ns(u64::MAX), u64::MAX);
        assert_eq!(Clock::new(7).ns(u64::MAX), u64::MAX);
        assert_eq!(Clock::NS.ns(42), 42);
    }

    #[test]
    fn a_time_written_back_in_ticks_reads_the_same() {
        for tps in [
            1,
            3,
            7,
            1_000,
            1_000_000,
            24_000_000,
            1_000_000_000,
            3_000_000_007,
        ] {
            let clock = Clock::new(tps);
            for ticks in [0u64, 1, 2, 3, 999, 123_456_789, 1 << 40] {
                let ns = clock.ns(ticks);
                assert_eq!(clock.ns(clock.ticks(ns)), ns, "{tps} ticks/s, {ticks}");
            }
        }
    }
}
