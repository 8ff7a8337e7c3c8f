//! The flight recorder in the process (docs/RECORDER.md): one more reader
//! of the exporter, with no viewer at all. Its frames go to a
//! [`Recorder`] on the exporter thread, which keeps them as they are (the
//! wire's bytes, about 5 an event) and watches the triggers; a capture
//! made whole goes to a thread of its own that writes it, so that the
//! exporter never waits on the disk.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use typhon_live_recorder::store::{Store, Writer, Written, DEFAULT_PREFIX, WAITING};
use typhon_live_recorder::{Options, Recorder};

/// What the recorder did, readable while the session runs.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// A capture is asked for (SIGUSR1, `Profiler::capture`).
    pub asked: Arc<AtomicBool>,
    pub fired: AtomicU64,
    pub written: AtomicU64,
    pub failed: AtomicU64,
}

/// The recorder and the thread that writes its captures.
pub(crate) struct Flight {
    recorder: Recorder,
    writer: Writer,
    counters: Arc<Counters>,
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Flight {
    /// The recorder of `options`, writing into `dir`: the directory is
    /// opened (made) now, so that a bad one fails the start.
    pub(crate) fn start(
        dir: PathBuf,
        options: Options,
        counters: Arc<Counters>,
    ) -> io::Result<Flight> {
        let store = Store::open(&dir, DEFAULT_PREFIX, options.limits).map_err(io::Error::other)?;
        let told = Arc::clone(&counters);
        let writer = Writer::start(store, move |written| match written {
            Written::Whole(path, capture) => {
                told.written.fetch_add(1, Ordering::Relaxed);
                let why: Vec<&str> = capture.fired.iter().map(|f| f.what.as_str()).collect();
                log::info!(
                    "typhon-live: captured {} ({})",
                    path.display(),
                    why.join("; ")
                );
            }
            Written::Removed(old) => {
                log::info!(
                    "typhon-live: removed capture {} (the directory's limits)",
                    old.display()
                );
            }
            Written::Failed(e) => {
                // Said and counted; recording goes on.
                told.failed.fetch_add(1, Ordering::Relaxed);
                log::warn!("typhon-live: {e}");
            }
        })?;
        #[cfg(unix)]
        if let Err(e) =
            signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&counters.asked))
        {
            log::warn!("typhon-live: SIGUSR1 will not ask for a capture: {e}");
        }
        Ok(Flight {
            recorder: Recorder::new(options.settings, options.triggers),
            writer,
            counters,
        })
    }

    /// A frame the exporter wrote for the recorder.
    pub(crate) fn frame(&mut self, bytes: &[u8]) {
        let now = unix_now();
        let recorder = &mut self.recorder;
        // Whole frames the exporter just wrote: no damage to report.
        let _ = typhon_live_reader::frames(bytes, |frame| {
            recorder.frame(frame, now);
            Ok(())
        });
        self.send();
    }

    /// Once a cycle: a capture asked for, open ticks past their bound,
    /// windows that ended.
    pub(crate) fn cycle(&mut self) {
        if self.counters.asked.swap(false, Ordering::Relaxed) {
            self.recorder.demand("asked (SIGUSR1 or Profiler::capture)");
        }
        self.recorder.now(unix_now());
        self.send();
    }

    /// The captures made whole, to the writer.
    fn send(&mut self) {
        self.counters
            .fired
            .store(self.recorder.stats().fired, Ordering::Relaxed);
        while let Some(capture) = self.recorder.take() {
            if self.writer.send(capture).is_err() {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                log::warn!(
                    "typhon-live: a capture was not written: {WAITING} were still waiting for the disk"
                );
            }
        }
    }

    /// The session ended: the window being gathered is made whole, and
    /// every capture written before this returns.
    pub(crate) fn finish(mut self) {
        self.recorder.end();
        while let Some(capture) = self.recorder.take() {
            if self.writer.send_waiting(capture).is_err() {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.writer.finish();
    }
}
