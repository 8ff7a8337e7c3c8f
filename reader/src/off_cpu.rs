//! Off-CPU slices as the stream's switches make them (FORMAT.md, "Reading
//! a stream": off-CPU slices), once for every consumer: a lane's switch
//! out and its next switch in are one slice of its thread off a CPU.

use alloc::vec::Vec;

use typhon_live_core::{LaneId, Switch};

use crate::state::MAX_LANES;

/// A stretch a lane's thread spent off a CPU, from a switch out to the
/// next switch in: asleep or blocked, or preempted and waiting for a
/// core. Handed on as [`Update::OffCpu`](crate::Update::OffCpu) right
/// after its switch in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffCpu {
    /// The lane whose thread it was.
    pub lane: LaneId,
    /// The switch out, ns.
    pub from: u64,
    /// The switch in, ns; never before `from` (a writer whose clocks
    /// were read apart may state an in before its out: it ends where it
    /// began).
    pub to: u64,
    /// The thread was preempted, still runnable, and waited for a core;
    /// otherwise it left the CPU to wait (a lock, I/O, a sleep).
    pub preempted: bool,
}

impl OffCpu {
    /// Its length, ns.
    pub fn duration(&self) -> u64 {
        self.to - self.from
    }

    /// The switch out that began it.
    pub fn switch(&self) -> Switch {
        if self.preempted {
            Switch::OutPreempted
        } else {
            Switch::OutWaiting
        }
    }

    /// How a view names it: "off-CPU (waiting)" or "preempted".
    pub fn label(&self) -> &'static str {
        self.switch().label()
    }
}

/// A lane's thread switched out and not back in yet, as far as the
/// stream has told: asleep or waiting now, in a live stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOffCpu {
    /// The lane.
    pub lane: LaneId,
    /// The switch out, ns.
    pub since: u64,
    /// Preempted, rather than waiting of its own accord.
    pub preempted: bool,
}

impl OpenOffCpu {
    /// The slice it is as of `now` (ns), as if the thread came back then.
    pub fn until(&self, now: u64) -> OffCpu {
        OffCpu {
            lane: self.lane,
            from: self.since,
            to: now.max(self.since),
            preempted: self.preempted,
        }
    }
}

/// What one switch made of a lane's open slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Paired {
    /// A switch out opened a slice, or a switch in closed one.
    Fine(Option<OffCpu>),
    /// A switch found no partner: an in with no slice open (its out
    /// lost, or before the reader joined), an out over an open slice
    /// (its in lost). The out still opens a slice.
    Unpaired,
    /// A switch out on a lane past the [`MAX_LANES`] that have a slice
    /// open: not kept (its in will read as unpaired).
    Refused,
}

/// Each lane's open slice: few lanes at a time, so a list searched
/// through, as the open ticks are.
#[derive(Clone, Debug, Default)]
pub(crate) struct SwitchedOut {
    open: Vec<Open>,
}

#[derive(Clone, Copy, Debug)]
struct Open {
    slice: OpenOffCpu,
    /// Frames were lost since its out: its in may have been in them,
    /// until the lane's next sample says whether the thread ran.
    in_doubt: bool,
}

impl SwitchedOut {
    /// Slices open now, in the order their threads switched out; not
    /// those in doubt after a gap.
    pub(crate) fn open(&self) -> impl Iterator<Item = &OpenOffCpu> {
        self.open.iter().filter(|o| !o.in_doubt).map(|o| &o.slice)
    }

    /// Lane `lane`'s thread switched as `what` says at `time`.
    pub(crate) fn switch(&mut self, lane: LaneId, time: u64, what: Switch) -> Paired {
        let at = self.open.iter().position(|open| open.slice.lane == lane);
        match (what, at) {
            (Switch::In, Some(at)) => {
                let open = self.open.swap_remove(at);
                if open.in_doubt {
                    // Its in may have been lost: this one may be another's.
                    return Paired::Unpaired;
                }
                Paired::Fine(Some(open.slice.until(time)))
            }
            (Switch::In, None) => Paired::Unpaired,
            (out, at) => {
                let opened = Open {
                    slice: OpenOffCpu {
                        lane,
                        since: time,
                        preempted: out == Switch::OutPreempted,
                    },
                    in_doubt: false,
                };
                match at {
                    Some(at) => {
                        self.open[at] = opened;
                        Paired::Unpaired
                    }
                    None if self.open.len() >= MAX_LANES => Paired::Refused,
                    None => {
                        self.open.push(opened);
                        Paired::Fine(None)
                    }
                }
            }
        }
    }

    /// Whether a slice is in doubt, waiting for its lane's next sample.
    pub(crate) fn in_doubt(&self) -> bool {
        self.open.iter().any(|open| open.in_doubt)
    }

    /// Frames were lost: every open slice's in may have been in them.
    pub(crate) fn doubt(&mut self) {
        self.open.iter_mut().for_each(|open| open.in_doubt = true);
    }

    /// A Samples frame was read, and `ran` says of each lane it measured
    /// whether its thread was on a CPU since the lane's last sample read
    /// (`None`: unknown). A slice in doubt stands where its thread did
    /// not run, so its in was not lost; the other slices in doubt are
    /// forgotten.
    pub(crate) fn settle(&mut self, mut ran: impl FnMut(LaneId) -> Option<bool>) {
        self.open.retain_mut(|open| {
            if open.in_doubt {
                open.in_doubt = ran(open.slice.lane) != Some(false);
                return !open.in_doubt;
            }
            true
        });
    }

    /// Forgets the open slices of the lanes `keep` refuses: their ins are
    /// lost or will never come (a restart, a lane freed, the end).
    pub(crate) fn forget(&mut self, mut keep: impl FnMut(LaneId) -> bool) {
        self.open.retain(|open| keep(open.slice.lane));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_out_and_the_next_in_are_one_slice_and_a_lone_half_is_unpaired() {
        let mut lanes = SwitchedOut::default();
        assert_eq!(lanes.switch(1, 10, Switch::OutWaiting), Paired::Fine(None));
        assert_eq!(
            lanes.switch(2, 12, Switch::OutPreempted),
            Paired::Fine(None)
        );
        let slice = OffCpu {
            lane: 1,
            from: 10,
            to: 30,
            preempted: false,
        };
        assert_eq!(lanes.switch(1, 30, Switch::In), Paired::Fine(Some(slice)));
        assert_eq!(lanes.switch(1, 40, Switch::In), Paired::Unpaired);
        // Its in lost: the second out stands.
        assert_eq!(lanes.switch(2, 50, Switch::OutWaiting), Paired::Unpaired);
        let Paired::Fine(Some(slice)) = lanes.switch(2, 45, Switch::In) else {
            panic!("lane 2's slice")
        };
        // An in stated before its out ends where it began.
        assert_eq!((slice.from, slice.to, slice.preempted), (50, 50, false));
        assert_eq!(lanes.open().count(), 0);
    }

    #[test]
    fn forgotten_slices_end_nothing_and_a_full_list_refuses() {
        let mut lanes = SwitchedOut::default();
        for lane in 0..MAX_LANES as u16 {
            assert_eq!(
                lanes.switch(lane, 1, Switch::OutWaiting),
                Paired::Fine(None)
            );
        }
        assert_eq!(
            lanes.switch(MAX_LANES as u16, 1, Switch::OutWaiting),
            Paired::Refused
        );
        lanes.forget(|lane| lane == 3);
        assert_eq!(lanes.open().map(|o| o.lane).collect::<Vec<_>>(), [3]);
        assert_eq!(lanes.switch(4, 9, Switch::In), Paired::Unpaired);
    }

    #[test]
    fn after_a_gap_a_slice_stands_only_where_its_thread_did_not_run() {
        let mut lanes = SwitchedOut::default();
        for lane in 0..3 {
            lanes.switch(lane, 10, Switch::OutWaiting);
        }
        lanes.doubt();
        assert!(lanes.in_doubt());
        assert_eq!(lanes.open().count(), 0, "in doubt: not listed open");
        // Lane 0's thread did not run: its out stands. Lane 1's ran (its
        // in was in the lost frames); lane 2's is not measured.
        lanes.settle(|lane| [Some(false), Some(true), None][usize::from(lane)]);
        assert!(!lanes.in_doubt());
        assert_eq!(lanes.open().map(|o| o.lane).collect::<Vec<_>>(), [0]);
        let slice = OffCpu {
            lane: 0,
            from: 10,
            to: 90,
            preempted: false,
        };
        assert_eq!(lanes.switch(0, 90, Switch::In), Paired::Fine(Some(slice)));
        // A switch in met while in doubt may be another out's: unpaired.
        lanes.switch(1, 100, Switch::OutPreempted);
        lanes.doubt();
        assert_eq!(lanes.switch(1, 120, Switch::In), Paired::Unpaired);
        assert_eq!(lanes.open().count(), 0);
    }

    proptest! {
        /// A few lanes' threads each going out and back in, some switches
        /// lost: every stretch whose out and in both arrived is told,
        /// exactly; every slice told runs from an out that arrived, of its
        /// kind, to an in that arrived, on its lane; and every switch that
        /// arrived is in a slice, unpaired, or still open at the end.
        #[test]
        fn a_stretch_is_told_whole_when_both_its_switches_arrived(
            stretches in proptest::collection::vec(
                (0u16..3, any::<bool>(), any::<bool>(), any::<bool>(), 1u64..50), 0..200)
        ) {
            let mut lanes = SwitchedOut::default();
            let (mut told, mut unpaired, mut arrived) = (Vec::new(), 0, 0);
            let (mut whole, mut outs, mut ins) = (Vec::new(), Vec::new(), Vec::new());
            let mut time = 0;
            for &(lane, preempted, out_kept, in_kept, off) in &stretches {
                let (out, back) = (time + 1, time + 1 + off);
                time = back + 1;
                let what = if preempted { Switch::OutPreempted } else { Switch::OutWaiting };
                for (kept, at, what) in [(out_kept, out, what), (in_kept, back, Switch::In)] {
                    if !kept {
                        continue;
                    }
                    arrived += 1;
                    match lanes.switch(lane, at, what) {
                        Paired::Fine(Some(slice)) => told.push(slice),
                        Paired::Fine(None) => {}
                        Paired::Unpaired => unpaired += 1,
                        Paired::Refused => prop_assert!(false, "3 lanes refused"),
                    }
                }
                if out_kept {
                    outs.push((lane, out, preempted));
                }
                if in_kept {
                    ins.push((lane, back));
                }
                if out_kept && in_kept {
                    whole.push(OffCpu { lane, from: out, to: back, preempted });
                }
            }
            for stretch in &whole {
                prop_assert!(told.contains(stretch), "{:?} not told", stretch);
            }
            for slice in &told {
                prop_assert!(outs.contains(&(slice.lane, slice.from, slice.preempted)));
                prop_assert!(ins.contains(&(slice.lane, slice.to)));
            }
            let open = lanes.open().count();
            prop_assert_eq!(2 * told.len() + unpaired + open, arrived);
        }
    }
}
