//! Each lane's thread's context switches, one by one, where the system
//! allows it (FORMAT.md, "Samples", tag 2): on Linux, a `perf_event_open`
//! event per thread with `context_switch` records, read from its ring
//! buffer by the exporter thread. The recording thread pays nothing but
//! the kernel's writing of a record at each of its switches.
//!
//! Refused (`perf_event_paranoid` above 2, seccomp, a container), it is
//! said once and counted by the caller, and each lane's CPU comes from
//! its samples alone. Elsewhere than Linux it is not done.

use std::io;

use typhon_live_core::Switch;

/// One thread's switches, recorded by the kernel since the last drain.
#[derive(Debug)]
pub(crate) struct ThreadSwitches {
    #[cfg(target_os = "linux")]
    sampler: linux::Switches,
}

impl ThreadSwitches {
    /// Starts recording thread `thread`'s switches (a thread of this
    /// process).
    pub(crate) fn open(thread: u64) -> io::Result<ThreadSwitches> {
        #[cfg(target_os = "linux")]
        {
            linux::Switches::open(thread).map(|sampler| ThreadSwitches { sampler })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = thread;
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "switches are traced on Linux only",
            ))
        }
    }

    /// Hands each switch recorded since the last drain to `each`, in the
    /// order they happened, with its time on [`monotonic_ns`]'s clock;
    /// returns the records the kernel said it lost (its buffer was full).
    pub(crate) fn drain(&mut self, each: impl FnMut(u64, Switch)) -> u64 {
        #[cfg(target_os = "linux")]
        {
            self.sampler.drain(each)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = each;
            0
        }
    }
}

/// The clock the switches' times are on, ns (CLOCK_MONOTONIC); `None`
/// where switches are not traced.
pub(crate) fn monotonic_ns() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        let ns = u64::try_from(now.tv_sec).ok()? * 1_000_000_000;
        Some(ns + u64::try_from(now.tv_nsec).ok()?)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;

    use perf_event::events::Software;
    use perf_event::{Builder, Clock, SampleFlag, Sampler};
    use typhon_live_core::Switch;

    /// Bytes of ring buffer per thread: 1 024 records of 16 bytes, 10 ms
    /// of a thread switching 100 000 times a second. Past it the kernel
    /// counts what it lost.
    const RING_BYTES: usize = 16 << 10;

    /// `PERF_RECORD_LOST`, `PERF_RECORD_SWITCH`.
    const RECORD_LOST: u32 = 2;
    const RECORD_SWITCH: u32 = 14;
    /// `PERF_RECORD_MISC_SWITCH_OUT` and `…_SWITCH_OUT_PREEMPT`.
    const SWITCH_OUT: u16 = 1 << 13;
    const SWITCH_OUT_PREEMPT: u16 = 1 << 14;

    pub(super) struct Switches {
        sampler: Sampler,
    }

    impl std::fmt::Debug for Switches {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Switches")
        }
    }

    impl Switches {
        pub(super) fn open(thread: u64) -> io::Result<Switches> {
            let tid = i32::try_from(thread)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "not a thread id"))?;
            // A software event that counts nothing: only the switch
            // records are wanted, each with its time (sample_id_all).
            let sampler = Builder::new(Software::DUMMY)
                .observe_pid(tid)
                .any_cpu()
                .exclude_kernel(true)
                .exclude_hv(true)
                .context_switch(true)
                .sample_id_all(true)
                .sample(SampleFlag::TIME)
                .clockid(Clock::MONOTONIC)
                .enabled(true)
                .build()?
                .sampled(RING_BYTES)?;
            Ok(Switches { sampler })
        }

        pub(super) fn drain(&mut self, mut each: impl FnMut(u64, Switch)) -> u64 {
            let mut lost = 0;
            while let Some(record) = self.sampler.next_record() {
                let body = record.to_contiguous();
                match record.ty() {
                    // Its body: the sample id, which is its time alone.
                    RECORD_SWITCH => {
                        let Some(time) = u64_at(&body, 0) else {
                            continue;
                        };
                        let misc = record.misc();
                        let what = match (misc & SWITCH_OUT, misc & SWITCH_OUT_PREEMPT) {
                            (0, _) => Switch::In,
                            (_, 0) => Switch::OutWaiting,
                            _ => Switch::OutPreempted,
                        };
                        each(time, what);
                    }
                    // Its body: an id, then the count lost.
                    RECORD_LOST => lost += u64_at(&body, 8).unwrap_or(0),
                    _ => {}
                }
            }
            lost
        }
    }

    fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
        let raw = bytes.get(at..at + 8)?;
        Some(u64::from_ne_bytes(raw.try_into().ok()?))
    }
}

/// For the tests of `perf_event_open`: its refusal `e` must be what the
/// system's setting says (`perf_event_paranoid` above 2), never a bug;
/// then the test says it skipped, and passes.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn refused_here(e: &io::Error) {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid");
    assert!(
        paranoid.is_ok_and(|p| p.trim().parse::<i32>().is_ok_and(|p| p > 2)),
        "refused where perf_event_paranoid allows it: {e}"
    );
    eprintln!("skipped: perf_event_open refused here ({e})");
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::thread_times::current_thread_id;

    /// A thread that sleeps ten times leaves the CPU to wait and comes
    /// back ten times, each in order, within the time it ran; one that
    /// spins barely switches. Where the system refuses (a container),
    /// the test says so and passes: the samples stand in then.
    #[test]
    fn a_sleeping_thread_switches_out_to_wait_and_back_in_order() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tx.send(current_thread_id().unwrap()).unwrap();
            wait.recv().unwrap();
            for _ in 0..10 {
                std::thread::sleep(Duration::from_millis(2));
            }
            wait.recv().unwrap();
        });
        let thread = rx.recv().unwrap();
        let mut switches = match ThreadSwitches::open(thread) {
            Ok(switches) => switches,
            Err(e) => return refused_here(&e),
        };
        let from = monotonic_ns().unwrap();
        go.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let to = monotonic_ns().unwrap();
        let mut seen = Vec::new();
        let lost = switches.drain(|time, what| seen.push((time, what)));
        go.send(()).unwrap();
        worker.join().unwrap();
        assert_eq!(lost, 0);
        let waits = seen.iter().filter(|s| s.1 == Switch::OutWaiting).count();
        let ins = seen.iter().filter(|s| s.1 == Switch::In).count();
        assert!(waits >= 10 && ins >= 10, "{seen:?}");
        assert!(
            seen.windows(2).all(|w| w[0].0 <= w[1].0),
            "in order: {seen:?}"
        );
        assert!(
            seen.iter().all(|s| (from..=to).contains(&s.0)),
            "within {from}..{to}: {seen:?}"
        );
        // Drained: what comes next (its last wait, and its end) is new.
        let last = seen.last().map_or(0, |s| s.0);
        let mut later = Vec::new();
        switches.drain(|time, _| later.push(time));
        assert!(later.iter().all(|&t| t > last), "{last} then {later:?}");
    }
}
