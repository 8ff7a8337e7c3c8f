//! The exporter thread samples each lane's thread ([`ThreadTimes`]) every
//! so often, and the session writes what it read as Samples frames
//! (FORMAT.md, "Samples"). A lane whose thread cannot be read (it ended,
//! the system does not say) is left out; that it cannot is said once.
//!
//! Where the system allows it ([`ThreadSwitches`]), each lane's thread's
//! switches go in the same frame, one by one, placed on the session's
//! clock; refused, that is said once and counted, and the samples stand
//! alone.
//!
//! Where asked ([`ThreadStacks`], `StackSampleHz`), each lane's thread's
//! stacks sampled since go in the same frame too: walked by the
//! [`Unwinder`], interned in the session's [`StackTree`], placed on the
//! session's clock.
//!
//! A lane whose counters did not move since it was last sent (a thread
//! asleep, waiting for work) is sent again only after [`QUIET_EVERY`]:
//! its counters are cumulative, so the reader's next interval covers the
//! time between, and an idle process's samples cost a tenth of the bytes.

use std::time::{Duration, Instant};

use typhon_live_core::samples::MAX_SWITCHES_PER_FRAME;
use typhon_live_core::stacks::MAX_STACK_SAMPLES_PER_FRAME;
use typhon_live_core::{Counters, LaneSample, StackSample, SwitchRecord};

use crate::runtime::{LANES, MAX_LANES};
use crate::stack_samples::ThreadStacks;
use crate::stack_tree::StackTree;
use crate::switches::{monotonic_ns, ThreadSwitches};
use crate::thread_times::{thread_of, ThreadTimes};
use crate::tracking;
use crate::unwinding::Unwinder;

/// How often each lane's thread is sampled, unless configured.
pub(crate) const DEFAULT_EVERY: Duration = Duration::from_millis(10);
/// A lane whose counters did not move is sent at most this often: a
/// viewer still sees a thread asleep while it sleeps.
pub(crate) const QUIET_EVERY: Duration = Duration::from_millis(100);

/// A lane's thread, open: its counters, its switches traced and its
/// stacks sampled where allowed.
struct OpenThread {
    thread: u64,
    times: ThreadTimes,
    switches: Option<ThreadSwitches>,
    stacks: Option<ThreadStacks>,
}

/// Each lane's thread, kept open between samples.
pub(crate) struct CpuSamples {
    every: Duration,
    next: Option<Instant>,
    /// Per lane slot: its thread, open.
    open: Vec<Option<OpenThread>>,
    /// Per lane slot: the thread id that could not be read, not tried
    /// again.
    failed: Vec<u64>,
    /// Per lane slot: the counters last sent, and when.
    sent: Vec<Option<(Counters, Instant)>>,
    samples: Vec<LaneSample>,
    switches: Vec<SwitchRecord>,
    said: bool,
    /// Switches are traced: on until the system refuses.
    trace_switches: bool,
    /// Stacks are sampled this often a second on a CPU: 0, or off once
    /// the system refuses; with copies of the threads' stacks.
    stack_hz: u32,
    stack_copies: bool,
    unwinder: Unwinder,
    /// The session's stacks.
    pub(crate) tree: StackTree,
    stacks: Vec<StackSample>,
    addresses: Vec<u64>,
    /// Threads whose stacks could not be sampled, and samples lost (the
    /// kernel's ring full, the tree full, or past a frame's bound).
    pub(crate) stacks_refused: u64,
    pub(crate) stacks_lost: u64,
    /// Threads whose switches could not be traced, and switches lost (the
    /// kernel's buffer full, or past a frame's bound).
    pub(crate) switches_refused: u64,
    pub(crate) switches_lost: u64,
}

/// What one sample holds: each lane's counters, and the switches and
/// stacks since the last.
pub(crate) struct Due<'a> {
    pub(crate) lanes: &'a [LaneSample],
    pub(crate) switches: &'a [SwitchRecord],
    pub(crate) stacks: &'a [StackSample],
}

impl CpuSamples {
    /// Sampling every `every`, each lane's switches traced too if
    /// `switches`, and its stacks sampled `hz` times a second of its time
    /// on a CPU, with copies of its stack if `copies`.
    pub(crate) fn new(every: Duration, switches: bool, (hz, copies): (u32, bool)) -> CpuSamples {
        CpuSamples {
            every,
            next: None,
            open: (0..MAX_LANES).map(|_| None).collect(),
            failed: vec![0; MAX_LANES],
            sent: vec![None; MAX_LANES],
            samples: Vec::with_capacity(MAX_LANES),
            switches: Vec::new(),
            said: false,
            trace_switches: switches,
            stack_hz: hz,
            stack_copies: copies,
            unwinder: Unwinder::default(),
            tree: StackTree::default(),
            stacks: Vec::new(),
            addresses: Vec::new(),
            stacks_refused: 0,
            stacks_lost: 0,
            switches_refused: 0,
            switches_lost: 0,
        }
    }

    /// Whether a sample is due at `now`; taken if so ([`CpuSamples::due`]):
    /// each lane's counters, read now, and the switches and stacks since,
    /// placed on the session's clock (`session` reads it, ns), whose time
    /// for the frame is `time`: none later than it.
    pub(crate) fn take(&mut self, now: Instant, time: u64, session: impl Fn() -> u64) -> bool {
        if self.next.is_some_and(|next| now < next) {
            return false;
        }
        // Late cycles do not bunch samples up.
        self.next = Some(now + self.every);
        self.samples.clear();
        self.switches.clear();
        self.stacks.clear();
        let offset = clock_offset(monotonic_ns, session);
        // Each lane's bytes, where `Tracking` counts them.
        let memory = tracking::counting();
        for info in LANES.iter() {
            let id = usize::from(info.id);
            let thread = thread_of(info.id);
            if thread == 0 || self.failed[id] == thread {
                continue;
            }
            if self.open[id].as_ref().is_none_or(|o| o.thread != thread) {
                match ThreadTimes::open(thread) {
                    Ok(times) => {
                        let switches = self.open_switches(thread);
                        let stacks = self.open_stacks(thread);
                        self.open[id] = Some(OpenThread {
                            thread,
                            times,
                            switches,
                            stacks,
                        });
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
            let Some(OpenThread {
                thread,
                times,
                switches,
                stacks,
            }) = self.open[id].as_mut()
            else {
                continue;
            };
            if let (Some(stacks), Some(offset)) = (stacks.as_mut(), offset) {
                let (out, tree) = (&mut self.stacks, &mut self.tree);
                let (unwinder, addresses) = (&mut self.unwinder, &mut self.addresses);
                let mut not_sent = 0;
                let kernel_lost = stacks.drain(|raw| {
                    let (unwinding, cut) = unwinder.walk(raw, addresses);
                    let node = tree.intern(addresses);
                    let (Some(node), true) = (node, out.len() < MAX_STACK_SAMPLES_PER_FRAME) else {
                        not_sent += 1;
                        return;
                    };
                    // On the session's clock, as the switches are.
                    let at = (i128::from(raw.time) - offset).clamp(0, i128::from(time));
                    out.push(StackSample {
                        lane: info.id,
                        time: u64::try_from(at).unwrap_or(time),
                        node,
                        unwinding,
                        cut,
                    });
                });
                self.stacks_lost += kernel_lost + not_sent;
                self.tree.map_modules();
            }
            match times.read(now) {
                Ok(mut counters) => {
                    if let Some((allocated, freed)) =
                        tracking::lane_bytes(info.id).filter(|_| memory)
                    {
                        // The slot's, across its threads: a reader reads
                        // their growth over each thread's samples.
                        counters.allocated_bytes = Some(allocated);
                        counters.freed_bytes = Some(freed);
                    }
                    if let (Some(switches), Some(offset)) = (switches.as_mut(), offset) {
                        let out = &mut self.switches;
                        let mut over_bound = 0;
                        let kernel_lost = switches.drain(|at, what| {
                            if out.len() >= MAX_SWITCHES_PER_FRAME {
                                over_bound += 1;
                                return;
                            }
                            // On the session's clock; one read after the
                            // frame's time is placed at it.
                            let at = (i128::from(at) - offset).clamp(0, i128::from(time));
                            out.push(SwitchRecord {
                                lane: info.id,
                                time: u64::try_from(at).unwrap_or(time),
                                what,
                            });
                        });
                        self.switches_lost += kernel_lost + over_bound;
                    }
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
                        switches_traced: switches.is_some(),
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
        // In the order they happened: each lane's are, lanes interleave.
        self.switches.sort_by_key(|s| s.time);
        true
    }

    /// What the last [`CpuSamples::take`] took.
    pub(crate) fn due(&self) -> Due<'_> {
        Due {
            lanes: &self.samples,
            switches: &self.switches,
            stacks: &self.stacks,
        }
    }

    /// Thread `thread`'s stacks, sampled if asked and the system allows;
    /// refused, said once and counted, and not asked again when it was
    /// for want of permission.
    fn open_stacks(&mut self, thread: u64) -> Option<ThreadStacks> {
        if self.stack_hz == 0 {
            return None;
        }
        match ThreadStacks::open(thread, self.stack_hz, self.stack_copies) {
            Ok(stacks) => Some(stacks),
            Err(e) => {
                self.stacks_refused += 1;
                const ESRCH: i32 = 3;
                if e.raw_os_error() != Some(ESRCH) {
                    self.stack_hz = 0;
                    log::info!("typhon-live: call stacks are not sampled ({e})");
                }
                None
            }
        }
    }

    /// Thread `thread`'s switches, traced if the system allows; refused,
    /// said once and counted, and not asked again when it was for want of
    /// permission.
    fn open_switches(&mut self, thread: u64) -> Option<ThreadSwitches> {
        if !self.trace_switches {
            return None;
        }
        match ThreadSwitches::open(thread) {
            Ok(switches) => Some(switches),
            // Not done on this system (Linux only): nothing refused.
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported && !cfg!(target_os = "linux") => {
                self.trace_switches = false;
                None
            }
            Err(e) => {
                self.switches_refused += 1;
                // ESRCH: the thread has just ended. Anything else (no
                // permission, no such event, no such call) holds for
                // every thread.
                const ESRCH: i32 = 3;
                if e.raw_os_error() != Some(ESRCH) {
                    self.trace_switches = false;
                    log::info!(
                        "typhon-live: context switches are not traced ({e}): each lane's CPU comes from its samples alone"
                    );
                }
                None
            }
        }
    }
}

/// The switches' clock (`switches`) less the session's (`session`), ns.
/// The two are read side by side, three times, and the pair whose two
/// session reads lie closest around the switches' read is taken: a
/// thread preempted between two reads (a loaded machine) would skew the
/// offset by as long as it waited, and place a switch in before the out
/// it follows. `None` where switches are not traced.
fn clock_offset(switches: impl Fn() -> Option<u64>, session: impl Fn() -> u64) -> Option<i128> {
    let mut best: Option<(u64, i128)> = None;
    for _ in 0..3 {
        let before = session();
        let at = switches()?;
        let after = session();
        let gap = after.saturating_sub(before);
        let middle = before + gap / 2;
        if best.is_none_or(|(tightest, _)| gap < tightest) {
            best = Some((gap, i128::from(at) - i128::from(middle)));
        }
    }
    best.map(|(_, offset)| offset)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn the_offset_is_read_where_the_two_clocks_were_read_closest() {
        // The switches' clock runs 1 000 ahead of the session's. The first
        // try is preempted 4 ms between its reads, the second 2 ns, the
        // third 10 ns.
        let session_reads = [0, 4_000_000, 5_000_000, 5_000_002, 6_000_000, 6_000_010];
        let switch_reads = [4_001_000, 5_001_001, 6_001_005];
        let (s, w) = (Cell::new(0), Cell::new(0));
        let session = || {
            s.set(s.get() + 1);
            session_reads[s.get() - 1]
        };
        let switches = || {
            w.set(w.get() + 1);
            Some(switch_reads[w.get() - 1])
        };
        assert_eq!(clock_offset(switches, session), Some(1_000));
        // Where switches are not traced, none.
        assert_eq!(clock_offset(|| None, || 0), None);
    }
}
