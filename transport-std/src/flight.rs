//! The flight recorder in the process (docs/RECORDER.md): one more reader
//! of the exporter, with no viewer at all. Its frames go to a
//! [`Recorder`] on the exporter thread, which keeps them as they are (the
//! wire's bytes, about 5 an event) and watches the triggers; a capture
//! made whole goes to a thread of its own that writes it, so that the
//! exporter never waits on the disk.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use typhon_live_recorder::store::{Limits, Store, DEFAULT_PREFIX};
use typhon_live_recorder::{Capture, Options, Recorder};

/// Captures made whole and not yet written, at most: a disk slower than
/// the triggers loses captures (counted), never the exporter's time.
const WAITING: usize = 2;

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
    captures: Option<SyncSender<Capture>>,
    writer: Option<JoinHandle<()>>,
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
        let limits = Limits {
            files: options.max_files,
            bytes: options.max_bytes,
        };
        let mut store = Store::open(&dir, DEFAULT_PREFIX, limits).map_err(io::Error::other)?;
        let (captures, waiting) = mpsc::sync_channel::<Capture>(WAITING);
        let written = Arc::clone(&counters);
        let writer = std::thread::Builder::new()
            .name("typhon-live-captures".into())
            .spawn(move || {
                for capture in waiting {
                    let result = store.write(&capture, |old| {
                        log::info!(
                            "typhon-live: removed capture {} (the directory's limits)",
                            old.display()
                        );
                    });
                    match result {
                        Ok(path) => {
                            written.written.fetch_add(1, Ordering::Relaxed);
                            let why: Vec<&str> =
                                capture.fired.iter().map(|f| f.what.as_str()).collect();
                            log::info!(
                                "typhon-live: captured {} ({})",
                                path.display(),
                                why.join("; ")
                            );
                        }
                        Err(e) => {
                            // Said and counted; recording goes on.
                            written.failed.fetch_add(1, Ordering::Relaxed);
                            log::warn!("typhon-live: {e}");
                        }
                    }
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
            captures: Some(captures),
            writer: Some(writer),
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
            let Some(captures) = &self.captures else {
                return;
            };
            match captures.try_send(capture) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                    log::warn!(
                        "typhon-live: a capture was not written: {WAITING} were still waiting for the disk"
                    );
                }
                Err(TrySendError::Disconnected(_)) => {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// The session ended: the window being gathered is made whole, and
    /// every capture written before this returns.
    pub(crate) fn finish(mut self) {
        self.recorder.end();
        if let Some(captures) = self.captures.take() {
            while let Some(capture) = self.recorder.take() {
                if captures.send(capture).is_err() {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}
