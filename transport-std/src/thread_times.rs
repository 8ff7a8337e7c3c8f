//! What the system says of a lane's thread: its time on a CPU, its time
//! waiting for one, its context switches (FORMAT.md, "Samples"). The
//! recording thread pays for none of it: it notes its thread id once, when
//! it claims its lane, and the exporter thread reads the rest.
//!
//! One small interface, [`ThreadTimes`], per system:
//! - **Linux:** `/proc/self/task/TID/schedstat` (time on a CPU and waiting
//!   in the run queue, ns) and `status` (voluntary and involuntary
//!   switches), each kept open and read with one `pread`. A file kept
//!   open names its task, not its number: once the thread ends it reads
//!   nothing, even if the system gives the number to another thread, so a
//!   lane never shows another thread's time.
//! - **Windows:** `GetThreadTimes` on a handle opened once per thread:
//!   its kernel and user time, on a CPU (the system counts it in clock
//!   ticks of about 15.6 ms). Time waiting and switches are not measured
//!   there. A handle names the thread, not its id: once the thread has
//!   ended it reads nothing.
//! - Elsewhere (macOS), not measured yet: [`ThreadTimes::open`] says so.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use typhon_live_core::{Counters, LaneId};

use crate::runtime::MAX_LANES;

/// Each lane slot's thread id, as the system names it (0: unknown), set
/// by the thread that claims the slot.
static THREADS: [AtomicU64; MAX_LANES] = [const { AtomicU64::new(0) }; MAX_LANES];

/// The calling thread claimed lane slot `lane`: its id is noted for the
/// exporter thread.
pub(crate) fn claimed(lane: LaneId) {
    if let Some(slot) = THREADS.get(usize::from(lane)) {
        slot.store(current_thread_id().unwrap_or(0), Ordering::Release);
    }
}

/// The thread id noted for lane slot `lane` (0: unknown).
pub(crate) fn thread_of(lane: LaneId) -> u64 {
    THREADS
        .get(usize::from(lane))
        .map_or(0, |slot| slot.load(Ordering::Acquire))
}

/// The calling thread's id, as the system names it.
#[cfg(target_os = "linux")]
pub(crate) fn current_thread_id() -> Option<u64> {
    // "/proc/thread-self" links to "PID/task/TID": the id without libc.
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// The calling thread's id, as the system names it.
#[cfg(windows)]
pub(crate) fn current_thread_id() -> Option<u64> {
    Some(windows::current_thread_id())
}

/// The calling thread's id, as the system names it.
#[cfg(not(any(target_os = "linux", windows)))]
pub(crate) fn current_thread_id() -> Option<u64> {
    None
}

/// One thread's counters, kept open to be read again and again.
#[derive(Debug)]
pub(crate) struct ThreadTimes {
    #[cfg(target_os = "linux")]
    linux: linux::Files,
    #[cfg(windows)]
    windows: windows::Thread,
}

impl ThreadTimes {
    /// Opens thread `thread`'s counters (a thread of this process).
    pub(crate) fn open(thread: u64) -> io::Result<ThreadTimes> {
        #[cfg(target_os = "linux")]
        {
            linux::Files::open(thread).map(|linux| ThreadTimes { linux })
        }
        #[cfg(windows)]
        {
            windows::Thread::open(thread).map(|windows| ThreadTimes { windows })
        }
        #[cfg(not(any(target_os = "linux", windows)))]
        {
            let _ = thread;
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "CPU samples are not measured on this system yet",
            ))
        }
    }

    /// Its counters now (on Linux, the switch counts are read again only
    /// when the last reading is 100 ms old). An error says the thread has
    /// ended (or its files cannot be read): open no more of it.
    pub(crate) fn read(&mut self, now: Instant) -> io::Result<Counters> {
        #[cfg(target_os = "linux")]
        {
            self.linux.read(now)
        }
        #[cfg(windows)]
        {
            let _ = now;
            self.windows.read()
        }
        #[cfg(not(any(target_os = "linux", windows)))]
        {
            let _ = now;
            Err(io::ErrorKind::Unsupported.into())
        }
    }
}

#[cfg(windows)]
mod windows {
    //! The system's calls have no safe wrapper in a well-kept crate for
    //! another thread's times (`cpu-time` reads the calling thread's
    //! only), hence the `unsafe` blocks: each a plain call with values
    //! and pointers to our own locals. The test below runs them, under
    //! wine in CI.

    use std::io;

    use typhon_live_core::Counters;
    use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, HANDLE, WAIT_OBJECT_0};
    use windows_sys::Win32::System::Threading::{
        GetCurrentThreadId, GetThreadTimes, OpenThread, WaitForSingleObject,
        THREAD_QUERY_LIMITED_INFORMATION, THREAD_SYNCHRONIZE,
    };

    pub(super) fn current_thread_id() -> u64 {
        // SAFETY: no arguments and no preconditions: it returns the
        // calling thread's id.
        u64::from(unsafe { GetCurrentThreadId() })
    }

    /// A thread's handle, open until dropped. Kept as the number the
    /// system gave, not as a pointer: it is not memory of ours, and the
    /// exporter thread that reads it is not the one that opened it.
    #[derive(Debug)]
    pub(super) struct Thread {
        handle: usize,
    }

    impl Thread {
        pub(super) fn open(thread: u64) -> io::Result<Thread> {
            let id = u32::try_from(thread)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "not a thread id"))?;
            let access = THREAD_QUERY_LIMITED_INFORMATION | THREAD_SYNCHRONIZE;
            // SAFETY: plain values in; a handle or null out, checked.
            let handle = unsafe { OpenThread(access, 0, id) };
            if handle.is_null() {
                return Err(io::Error::last_os_error());
            }
            Ok(Thread {
                handle: handle as usize,
            })
        }

        pub(super) fn read(&mut self) -> io::Result<Counters> {
            let handle = self.handle as HANDLE;
            // SAFETY: the handle is open (closed only on drop), with the
            // right to wait on it; a zero timeout only asks.
            if unsafe { WaitForSingleObject(handle, 0) } == WAIT_OBJECT_0 {
                return Err(io::Error::other("the thread has ended"));
            }
            let zero = FILETIME {
                dwLowDateTime: 0,
                dwHighDateTime: 0,
            };
            let [mut created, mut exited, mut kernel, mut user] = [zero; 4];
            // SAFETY: the handle is open with the right to query it; each
            // pointer is to a local of ours that outlives the call.
            let ok = unsafe {
                GetThreadTimes(handle, &mut created, &mut exited, &mut kernel, &mut user)
            };
            if ok == 0 {
                return Err(io::Error::last_os_error());
            }
            // 100 ns units.
            let ns = |t: FILETIME| {
                (u64::from(t.dwHighDateTime) << 32 | u64::from(t.dwLowDateTime)).saturating_mul(100)
            };
            Ok(Counters {
                on_cpu_ns: Some(ns(kernel).saturating_add(ns(user))),
                ..Counters::default()
            })
        }
    }

    impl Drop for Thread {
        fn drop(&mut self) {
            // SAFETY: our handle, open, closed here once.
            unsafe { CloseHandle(self.handle as HANDLE) };
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::fs::File;
    use std::io;
    use std::os::unix::fs::FileExt;
    use std::time::{Duration, Instant};

    use typhon_live_core::Counters;

    /// `status` is read at most this often: its switch counts cost a
    /// longer read than `schedstat` (about 7 µs against 2 here), and they
    /// change less.
    pub(super) const STATUS_EVERY: Duration = Duration::from_millis(100);

    #[derive(Debug)]
    pub(super) struct Files {
        schedstat: File,
        status: File,
        /// The last switch counts read, and when.
        switches: Option<(Instant, u64, u64)>,
        buf: Vec<u8>,
    }

    impl Files {
        pub(super) fn open(thread: u64) -> io::Result<Files> {
            let dir = format!("/proc/self/task/{thread}");
            Ok(Files {
                schedstat: File::open(format!("{dir}/schedstat"))?,
                status: File::open(format!("{dir}/status"))?,
                switches: None,
                buf: vec![0; 4096],
            })
        }

        pub(super) fn read(&mut self, now: Instant) -> io::Result<Counters> {
            let n = self.schedstat.read_at(&mut self.buf, 0)?;
            let (on_cpu, waiting) = parse_schedstat(&self.buf[..n])?;
            let due = self
                .switches
                .is_none_or(|(at, _, _)| now.duration_since(at) >= STATUS_EVERY);
            if due {
                let n = self.status.read_at(&mut self.buf, 0)?;
                let (voluntary, involuntary) = parse_status(&self.buf[..n])?;
                self.switches = Some((now, voluntary, involuntary));
            }
            let switches = self.switches.map(|(_, v, i)| (v, i));
            Ok(Counters {
                on_cpu_ns: Some(on_cpu),
                waiting_ns: Some(waiting),
                voluntary: switches.map(|s| s.0),
                involuntary: switches.map(|s| s.1),
                ..Counters::default()
            })
        }
    }

    fn unreadable(what: &str) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, format!("unreadable {what}"))
    }

    /// `schedstat`: "ON_CPU_NS WAITING_NS TIMESLICES". Empty once the
    /// thread has ended.
    pub(super) fn parse_schedstat(bytes: &[u8]) -> io::Result<(u64, u64)> {
        let text = std::str::from_utf8(bytes).map_err(|_| unreadable("schedstat"))?;
        let mut fields = text.split_ascii_whitespace().map(str::parse::<u64>);
        match (fields.next(), fields.next()) {
            (Some(Ok(on_cpu)), Some(Ok(waiting))) => Ok((on_cpu, waiting)),
            _ => Err(unreadable("schedstat")),
        }
    }

    /// `status`'s `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches`.
    pub(super) fn parse_status(bytes: &[u8]) -> io::Result<(u64, u64)> {
        let text = std::str::from_utf8(bytes).map_err(|_| unreadable("status"))?;
        let field = |key: &str| -> Option<u64> {
            let line = text.lines().find_map(|l| l.strip_prefix(key))?;
            line.trim_start_matches(':').trim().parse().ok()
        };
        match (
            field("voluntary_ctxt_switches"),
            field("nonvoluntary_ctxt_switches"),
        ) {
            (Some(voluntary), Some(involuntary)) => Ok((voluntary, involuntary)),
            _ => Err(unreadable("status")),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn schedstat_and_status_parse_and_an_ended_threads_empty_files_do_not() {
            assert_eq!(parse_schedstat(b"1234 56 7\n").unwrap(), (1234, 56));
            assert!(parse_schedstat(b"").is_err());
            assert!(parse_schedstat(b"12 x 3").is_err());
            let status =
                b"Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
            assert_eq!(parse_status(status).unwrap(), (12, 3));
            assert!(parse_status(b"Name:\tx\n").is_err());
        }
    }
}

#[cfg(all(test, any(target_os = "linux", windows)))]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Read again at least this much later, for a reading that is not the
    /// last one's (Linux reads its switch counts every 100 ms).
    const LATER: Duration = Duration::from_millis(100);

    /// A thread that spins, then sleeps: its time on a CPU grows by the
    /// spin and, where they are counted, its voluntary switches by the
    /// sleeps; once it has ended, it reads nothing.
    #[test]
    fn a_spinning_then_sleeping_thread_reads_as_such_and_an_ended_one_errs() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let (finished, done) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tx.send(current_thread_id().unwrap()).unwrap();
            wait.recv().unwrap();
            // Spins until it has run 150 ms on a CPU by its own count (a
            // loaded machine gives it less than the wall time), 10 s at
            // most.
            let own = current_thread_id().unwrap();
            let mut times = ThreadTimes::open(own).unwrap();
            let ran = |times: &mut ThreadTimes| times.read(Instant::now()).unwrap().on_cpu_ns;
            let from = ran(&mut times).unwrap();
            let spin = Instant::now();
            while ran(&mut times).unwrap() - from < 150_000_000
                && spin.elapsed() < Duration::from_secs(10)
            {
                for _ in 0..10_000 {
                    std::hint::spin_loop();
                }
            }
            for _ in 0..10 {
                std::thread::sleep(Duration::from_millis(10));
            }
            finished.send(()).unwrap();
            wait.recv().unwrap();
        });
        let thread = rx.recv().unwrap();
        assert_ne!(thread, u64::from(std::process::id()), "a thread's own id");
        let mut times = ThreadTimes::open(thread).unwrap();
        let before = times.read(Instant::now()).unwrap();
        go.send(()).unwrap();
        // Past the spin and the sleeps: the worker says when.
        done.recv().unwrap();
        // Read past LATER: the switch counts are read again.
        let after = times.read(Instant::now()).unwrap();
        let grew = |a: Option<u64>, b: Option<u64>| b.unwrap() - a.unwrap();
        // At least most of the spin, on a loaded machine too.
        let on_cpu = grew(before.on_cpu_ns, after.on_cpu_ns);
        assert!(on_cpu >= 100_000_000, "on a CPU {on_cpu} ns");
        if cfg!(target_os = "linux") {
            let voluntary = grew(before.voluntary, after.voluntary);
            assert!(voluntary >= 10, "{voluntary} voluntary switches");
        } else {
            assert_eq!((after.waiting_ns, after.voluntary), (None, None));
        }
        go.send(()).unwrap();
        worker.join().unwrap();
        // A joined thread's task is reaped a moment after the join
        // returns (Linux clears its id before it is gone from /proc):
        // its times stop reading within a bounded wait.
        let deadline = Instant::now() + Duration::from_secs(5);
        while times.read(Instant::now() + LATER).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(times.read(Instant::now() + LATER).is_err());
        // Opened again by its id: nothing to read (on Windows the id may
        // still open, while a handle holds the ended thread).
        let again = ThreadTimes::open(thread).and_then(|mut t| t.read(Instant::now()));
        assert!(again.is_err(), "{again:?}");
    }
}
