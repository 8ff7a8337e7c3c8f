//! Each lane's thread's call stack, sampled by the kernel where the
//! system allows it (FORMAT.md, "Stacks"): on Linux, a `perf_event_open`
//! task-clock event per thread, which samples it every 1/hz s of its time
//! on a CPU. Each sample holds the kernel's frame-pointer chain of the
//! thread's user frames and, where asked, its user registers and a copy
//! of the top of its stack, which [`unwinding`](crate::unwinding) walks
//! with the modules' unwind tables. The exporter thread reads the ring:
//! the recording thread pays the kernel's sampling, and no signal, no
//! unwinding, nothing of ours runs on it.
//!
//! Refused (`perf_event_paranoid` above 2, seccomp, a container), it is
//! said once and counted by the caller. A ring for copies that the
//! system's locked-memory limit refuses falls back to frame pointers
//! alone. Elsewhere than Linux it is not done (the issue "Stacks
//! everywhere" brings Windows and macOS).

use std::io;

/// The highest rate asked for: a sample every 100 µs of a thread's time
/// on a CPU.
pub const MAX_HZ: u32 = 10_000;
/// Bytes of a thread's stack copied with each sample (as `perf record
/// --call-graph dwarf` does by default): frames past it are not reached,
/// and the stack is marked cut.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) const STACK_COPY_BYTES: u32 = 8 << 10;
/// Ring bytes per thread with copies: about 30 samples, 30 ms of a busy
/// thread at 1 kHz, while the exporter reads it every millisecond or so.
/// The kernel counts what it could not fit.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) const RING_BYTES_COPYING: usize = 256 << 10;
/// Ring bytes per thread with frame-pointer chains alone: a sample is at
/// most about 1 KiB (127 frames).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) const RING_BYTES_CHAINS: usize = 32 << 10;
/// Frames the kernel walks at most (its default `perf_event_max_stack`
/// is 127).
pub(crate) const MAX_CHAIN: u16 = 127;

/// One sample, as the kernel wrote it. Its registers and stack are read
/// where the unwinder walks copies (Linux on x86_64 and aarch64).
#[derive(Debug)]
#[cfg_attr(
    not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )),
    allow(dead_code)
)]
pub(crate) struct RawStack<'a> {
    /// When, on CLOCK_MONOTONIC (see [`monotonic_ns`](crate::switches::monotonic_ns)).
    pub(crate) time: u64,
    /// The user frames the kernel walked by frame pointers, innermost
    /// (the sampled instruction) first.
    pub(crate) chain: &'a [u64],
    /// The thread's instruction, stack and frame pointers, where copies
    /// are on.
    pub(crate) registers: Option<Registers>,
    /// The top of its stack, from the stack pointer up.
    pub(crate) stack: &'a [u8],
}

/// The registers an unwinder starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Registers {
    pub(crate) ip: u64,
    pub(crate) sp: u64,
    /// The frame pointer (rbp, x29).
    pub(crate) fp: u64,
    /// The link register (aarch64); 0 elsewhere.
    pub(crate) lr: u64,
}

/// One thread's sampled stacks, since the last drain.
#[derive(Debug)]
pub(crate) struct ThreadStacks {
    #[cfg(target_os = "linux")]
    sampler: linux::Stacks,
}

impl ThreadStacks {
    /// Starts sampling thread `thread` (a thread of this process) `hz`
    /// times a second of its time on a CPU, with stack copies if `copy`
    /// and the system allows their ring.
    pub(crate) fn open(thread: u64, hz: u32, copy: bool) -> io::Result<ThreadStacks> {
        #[cfg(target_os = "linux")]
        {
            let copy = copy && linux::COPIES;
            let sampler = match linux::Stacks::open(thread, hz, copy) {
                // The ring of copies past the locked-memory limit: chains
                // alone fit in one an eighth its size.
                Err(e) if copy && e.raw_os_error() == Some(linux::EPERM) => {
                    linux::Stacks::open(thread, hz, false)?
                }
                opened => opened?,
            };
            Ok(ThreadStacks { sampler })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (thread, hz, copy);
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "stacks are sampled on Linux only",
            ))
        }
    }

    /// Hands each sample taken since the last drain to `each`, in the
    /// order they were taken; returns the samples the kernel said it lost
    /// (its ring was full).
    pub(crate) fn drain(&mut self, each: impl FnMut(&RawStack<'_>)) -> u64 {
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

#[cfg(target_os = "linux")]
mod linux {
    use std::io;

    use perf_event::data::Record;
    use perf_event::events::Software;
    use perf_event::{Builder, Clock, SampleFlag, Sampler};

    use super::{
        RawStack, Registers, MAX_CHAIN, RING_BYTES_CHAINS, RING_BYTES_COPYING, STACK_COPY_BYTES,
    };

    pub(super) const EPERM: i32 = 1;

    /// `PERF_CONTEXT_USER`: the chain's user frames follow it.
    const CONTEXT_USER: u64 = -512i64 as u64;
    /// Marks at or above this are contexts, not frames.
    const CONTEXT_MAX: u64 = -4095i64 as u64;

    /// Copies are walked on the architectures the unwinder knows; their
    /// registers, by `perf_regs.h` number, in the order the kernel writes
    /// them (ascending).
    #[cfg(target_arch = "x86_64")]
    mod regs {
        pub(crate) const MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8); // bp, sp, ip
        pub(crate) fn read(r: &[u64]) -> Option<super::Registers> {
            let [fp, sp, ip] = *r else { return None };
            Some(super::Registers { ip, sp, fp, lr: 0 })
        }
    }
    #[cfg(target_arch = "aarch64")]
    mod regs {
        pub(crate) const MASK: u64 = (1 << 29) | (1 << 30) | (1 << 31) | (1 << 32); // x29, lr, sp, pc
        pub(crate) fn read(r: &[u64]) -> Option<super::Registers> {
            let [fp, lr, sp, ip] = *r else { return None };
            Some(super::Registers { ip, sp, fp, lr })
        }
    }
    pub(super) const COPIES: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

    pub(super) struct Stacks {
        sampler: Sampler,
        chain: Vec<u64>,
    }

    impl std::fmt::Debug for Stacks {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Stacks")
        }
    }

    impl Stacks {
        pub(super) fn open(thread: u64, hz: u32, copy: bool) -> io::Result<Stacks> {
            let tid = i32::try_from(thread)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "not a thread id"))?;
            // The task clock counts the thread's ns on a CPU.
            let period = 1_000_000_000 / u64::from(hz.max(1));
            let mut builder = Builder::new(Software::TASK_CLOCK);
            builder
                .observe_pid(tid)
                .any_cpu()
                .exclude_kernel(true)
                .exclude_hv(true)
                .exclude_callchain_kernel(true)
                .sample_period(period)
                .sample_max_stack(MAX_CHAIN)
                .clockid(Clock::MONOTONIC)
                .enabled(true);
            let mut flags = SampleFlag::TIME | SampleFlag::CALLCHAIN;
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            if copy {
                flags |= SampleFlag::REGS_USER | SampleFlag::STACK_USER;
                builder
                    .sample_regs_user(regs::MASK)
                    .sample_stack_user(STACK_COPY_BYTES);
            }
            builder.sample(flags);
            let ring = if copy {
                RING_BYTES_COPYING
            } else {
                RING_BYTES_CHAINS
            };
            let sampler = builder.build()?.sampled(ring)?;
            Ok(Stacks {
                sampler,
                chain: Vec::with_capacity(usize::from(MAX_CHAIN)),
            })
        }

        pub(super) fn drain(&mut self, mut each: impl FnMut(&RawStack<'_>)) -> u64 {
            let mut lost = 0;
            while let Some(record) = self.sampler.next_record() {
                let Ok(parsed) = record.parse_record() else {
                    continue;
                };
                match parsed {
                    Record::Sample(sample) => {
                        let Some(time) = sample.time() else { continue };
                        // The user part of the chain, past its context mark.
                        self.chain.clear();
                        let mut user = false;
                        for &frame in sample.callchain().unwrap_or(&[]) {
                            if frame >= CONTEXT_MAX {
                                user = frame == CONTEXT_USER;
                            } else if user {
                                self.chain.push(frame);
                            }
                        }
                        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
                        let registers = sample.regs_user().and_then(|r| regs::read(&r.regs));
                        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
                        let registers = None;
                        each(&RawStack {
                            time,
                            chain: &self.chain,
                            registers,
                            stack: sample.stack_user().unwrap_or(&[]),
                        });
                    }
                    Record::Lost(l) => lost += l.lost,
                    _ => {}
                }
            }
            lost
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::thread_times::current_thread_id;

    /// A thread that spins is sampled about as often as asked, with its
    /// registers and stack where copies are on, and its chain's innermost
    /// frame is where it ran. Where the system refuses (a container), the
    /// test says so and passes.
    #[test]
    fn a_spinning_thread_is_sampled_with_its_chain_registers_and_stack() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tx.send(current_thread_id().unwrap()).unwrap();
            wait.recv().unwrap();
            let start = Instant::now();
            let mut x = 0u64;
            while start.elapsed() < Duration::from_millis(200) {
                x = black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            wait.recv().unwrap();
            x
        });
        let thread = rx.recv().unwrap();
        let mut stacks = match ThreadStacks::open(thread, 1000, true) {
            Ok(stacks) => stacks,
            Err(e) => return crate::switches::refused_here(&e),
        };
        go.send(()).unwrap();
        let (mut samples, mut with_copies, mut times, mut lost) = (0, 0, Vec::new(), 0);
        let started = Instant::now();
        // Read as the exporter does, every few ms: the ring holds about
        // 30 samples with copies.
        while started.elapsed() < Duration::from_millis(250) {
            std::thread::sleep(Duration::from_millis(5));
            lost += stacks.drain(|raw| {
                samples += 1;
                times.push(raw.time);
                assert!(!raw.chain.is_empty(), "{raw:?}");
                if let Some(registers) = raw.registers {
                    with_copies += 1;
                    assert_eq!(registers.ip, raw.chain[0], "the chain starts where it ran");
                    assert!(!raw.stack.is_empty() && raw.stack.len() <= STACK_COPY_BYTES as usize);
                }
            });
        }
        go.send(()).unwrap();
        worker.join().unwrap();
        // 200 ms on a CPU at 1 kHz, on a loaded 2-core machine: at least
        // a quarter of them, each in order.
        assert!(samples >= 50, "{samples} samples, {lost} lost");
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        // Copies in every sample, or (their ring refused) in none.
        assert!(
            with_copies == samples || with_copies == 0,
            "{with_copies} of {samples}"
        );
    }
}
