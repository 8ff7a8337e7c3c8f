//! Ticks as the stream pairs them (FORMAT.md, "Reading a stream": ticks),
//! once for every consumer: a tick start and the next tick end of its
//! lane with the same number are one tick; a start or an end that finds
//! no partner is a tick of which only that half arrived.

use alloc::vec::Vec;

use typhon_live_core::LaneId;

use crate::state::MAX_LANES;

/// A tick, with as much of it as the stream told: both ends, or the one
/// that arrived. Handed on as [`Update::Tick`](crate::Update::Tick) once
/// it is known whole or known to have lost a half.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tick {
    /// The lane it was recorded on.
    pub lane: LaneId,
    /// Its number, as the writer counted.
    pub tick: u64,
    /// When it started, ns: `None` when its start was lost.
    pub start: Option<u64>,
    /// When it ended, ns: `None` when its end was lost.
    pub end: Option<u64>,
    /// It took longer than its budget, as its end says (`false` when its
    /// end was lost: nothing says it overran).
    pub overrun: bool,
}

impl Tick {
    /// From its start to its end, ns, when both arrived (an end before
    /// its start, a peer's clock that went back, is 0 long).
    pub fn duration(&self) -> Option<u64> {
        Some(self.end?.saturating_sub(self.start?))
    }

    /// Both its start and its end arrived.
    pub fn is_whole(&self) -> bool {
        self.start.is_some() && self.end.is_some()
    }
}

/// A tick started and not ended yet: a stall while it happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenTick {
    /// The lane it was started on.
    pub lane: LaneId,
    /// Its number.
    pub tick: u64,
    /// When it started, ns.
    pub start: u64,
}

/// Each lane's open tick: a few lanes tick, so a list searched through
/// costs less than a map (the reader pairs every tick of a stream).
#[derive(Clone, Debug, Default)]
pub(crate) struct Ticks {
    open: Vec<OpenTick>,
}

impl Ticks {
    /// Ticks open now, in the order they started.
    pub(crate) fn open(&self) -> impl Iterator<Item = &OpenTick> {
        self.open.iter()
    }

    /// Where lane `lane`'s open tick is in the list.
    fn of(&self, lane: LaneId) -> Option<usize> {
        self.open.iter().position(|open| open.lane == lane)
    }

    /// Tick `tick` started on `lane` at `time`. The lane's open tick, if
    /// any, lost its end: it is returned, as a tick without one. `Err`
    /// when [`MAX_LANES`] lanes have a tick open already (its end will
    /// read as a tick without a start).
    pub(crate) fn start(&mut self, lane: LaneId, tick: u64, time: u64) -> Result<Option<Tick>, ()> {
        let started = OpenTick {
            lane,
            tick,
            start: time,
        };
        match self.of(lane) {
            Some(at) => Ok(Some(unended(core::mem::replace(
                &mut self.open[at],
                started,
            )))),
            None if self.open.len() >= MAX_LANES => Err(()),
            None => {
                self.open.push(started);
                Ok(None)
            }
        }
    }

    /// Tick `tick` ended on `lane` at `time`: the tick it ends (whole
    /// when the lane's open tick has its number, without a start
    /// otherwise), and first the lane's open tick of another number,
    /// which lost its end.
    pub(crate) fn end(
        &mut self,
        lane: LaneId,
        tick: u64,
        time: u64,
        overrun: bool,
    ) -> (Option<Tick>, Tick) {
        let open = self.of(lane).map(|at| self.open.swap_remove(at));
        let (start, unended) = match open {
            Some(open) if open.tick == tick => (Some(open.start), None),
            other => (None, other.map(unended)),
        };
        let ended = Tick {
            lane,
            tick,
            start,
            end: Some(time),
            overrun,
        };
        (unended, ended)
    }

    /// Forgets the open ticks of the lanes `keep` refuses (every lane's, a
    /// new session or a restart): each lost its end, and is returned.
    pub(crate) fn forget(&mut self, mut keep: impl FnMut(LaneId) -> bool) -> Vec<Tick> {
        let mut lost = Vec::new();
        self.open.retain(|open| {
            let kept = keep(open.lane);
            if !kept {
                lost.push(unended(*open));
            }
            kept
        });
        lost
    }
}

/// `open`, whose end was lost.
fn unended(open: OpenTick) -> Tick {
    Tick {
        lane: open.lane,
        tick: open.tick,
        start: Some(open.start),
        end: None,
        overrun: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn whole(lane: LaneId, tick: u64, start: u64, end: u64) -> Tick {
        Tick {
            lane,
            tick,
            start: Some(start),
            end: Some(end),
            overrun: false,
        }
    }

    #[test]
    fn a_lost_start_and_a_lost_end_each_make_one_half_tick_and_the_rest_pair() {
        let mut ticks = Ticks::default();
        assert_eq!(ticks.start(0, 1, 10), Ok(None));
        assert_eq!(ticks.end(0, 1, 20, false), (None, whole(0, 1, 10, 20)));
        // Tick 2's start lost.
        let (unended, ended) = ticks.end(0, 2, 40, true);
        assert_eq!(unended, None);
        assert_eq!(
            (ended.start, ended.end, ended.overrun),
            (None, Some(40), true)
        );
        // Tick 3's end lost: tick 4's start tells.
        assert_eq!(ticks.start(0, 3, 50), Ok(None));
        let lost = ticks.start(0, 4, 70).unwrap().unwrap();
        assert_eq!((lost.tick, lost.start, lost.end), (3, Some(50), None));
        assert_eq!(ticks.end(0, 4, 80, false).1, whole(0, 4, 70, 80));
        // Another lane's tick of the same number is its own.
        assert_eq!(ticks.start(1, 5, 90), Ok(None));
        assert_eq!(ticks.start(2, 5, 91), Ok(None));
        assert_eq!(ticks.end(2, 5, 95, false).1, whole(2, 5, 91, 95));
        assert_eq!(ticks.open().count(), 1);
        // An end of another number: the open one lost its end, this one
        // its start.
        let (unended, ended) = ticks.end(1, 6, 99, false);
        assert_eq!(unended.map(|t| (t.tick, t.end)), Some((5, None)));
        assert_eq!((ended.tick, ended.start), (6, None));
    }

    #[test]
    fn forgetting_a_lane_tells_its_open_tick_as_one_without_an_end() {
        let mut ticks = Ticks::default();
        ticks.start(0, 1, 10).unwrap();
        ticks.start(1, 1, 12).unwrap();
        let lost = ticks.forget(|lane| lane == 0);
        assert_eq!(lost.len(), 1);
        assert_eq!((lost[0].lane, lost[0].end), (1, None));
        assert_eq!(ticks.open().map(|t| t.lane).collect::<Vec<_>>(), [0]);
    }

    #[test]
    fn open_ticks_are_bounded_by_the_lanes_kept() {
        let mut ticks = Ticks::default();
        for lane in 0..MAX_LANES as u16 {
            assert_eq!(ticks.start(lane, 0, 1), Ok(None));
        }
        assert_eq!(ticks.start(MAX_LANES as u16, 0, 1), Err(()));
        assert!(ticks.start(0, 1, 2).is_ok(), "a lane with one open already");
        assert_eq!(ticks.open().count(), MAX_LANES);
    }

    proptest! {
        /// Ticks 0..n on a few lanes, each half lost or not: every tick
        /// with a half that arrived is told once, whole exactly when both
        /// did, and no tick is left open that had its end.
        #[test]
        fn every_tick_is_told_once_whole_exactly_when_both_halves_arrived(
            kept in proptest::collection::vec((0u16..3, any::<bool>(), any::<bool>()), 0..200)
        ) {
            let mut ticks = Ticks::default();
            let mut told = Vec::new();
            for (n, &(lane, start_kept, end_kept)) in kept.iter().enumerate() {
                let (n, time) = (n as u64, 100 * n as u64);
                if start_kept {
                    told.extend(ticks.start(lane, n, time).unwrap());
                }
                if end_kept {
                    let (unended, ended) = ticks.end(lane, n, time + 50, n % 7 == 0);
                    told.extend(unended);
                    told.push(ended);
                }
            }
            told.extend(ticks.forget(|_| false));
            let expected: Vec<(u64, bool, bool)> = kept
                .iter()
                .enumerate()
                .filter(|(_, k)| k.1 || k.2)
                .map(|(n, k)| (n as u64, k.1, k.2))
                .collect();
            let mut seen: Vec<(u64, bool, bool)> = told
                .iter()
                .map(|t| (t.tick, t.start.is_some(), t.end.is_some()))
                .collect();
            seen.sort_unstable();
            prop_assert_eq!(seen, expected);
            for tick in &told {
                if tick.is_whole() {
                    prop_assert_eq!(tick.duration(), Some(50));
                    prop_assert_eq!(tick.overrun, tick.tick % 7 == 0);
                }
                if tick.end.is_none() {
                    prop_assert!(!tick.overrun);
                }
            }
        }
    }
}
