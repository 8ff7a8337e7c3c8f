//! `typhon-live record HOST:PORT --on TRIGGER -o DIR`: the flight
//! recorder from the viewer's side, for a process that is already
//! running. It keeps the stream's recent past and writes a capture into
//! the directory each time a trigger fires (docs/RECORDER.md); SIGUSR1
//! asks for one at once.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use typhon_live_core::{DecodeError, Frame, FrameKind};
use typhon_live_recorder::store::{Limits, Store, DEFAULT_PREFIX};
use typhon_live_recorder::{Options, Recorder};
use typhon_live_std::attach::{self, Consumer, Flow};

use crate::cmd::record;
use crate::cmd::remote::RemoteOptions;
use crate::error::CliError;

/// The recorder's flags, beside `--on`; each is the recorder option of
/// the same name (docs/RECORDER.md has their defaults).
#[derive(clap::Args, Debug, Default, PartialEq, Eq)]
pub struct CaptureFlags {
    /// The recent past kept, a duration (`30s`).
    #[arg(long, value_name = "DURATION")]
    pub keep: Option<String>,
    /// The recent past kept, a size (`64MiB`).
    #[arg(long, value_name = "SIZE")]
    pub keep_bytes: Option<String>,
    /// A capture's window before its trigger (`10s`).
    #[arg(long, value_name = "DURATION")]
    pub before: Option<String>,
    /// A capture's window after its trigger (`5s`).
    #[arg(long, value_name = "DURATION")]
    pub after: Option<String>,
    /// A trigger's quiet time after it fired (`30s`).
    #[arg(long, value_name = "DURATION")]
    pub cooldown: Option<String>,
    /// The quiet time after a capture (`2s`).
    #[arg(long, value_name = "DURATION")]
    pub spacing: Option<String>,
    /// A capture's length at most (`60s`).
    #[arg(long, value_name = "DURATION")]
    pub max_capture: Option<String>,
    /// A capture's size at most (`128MiB`).
    #[arg(long, value_name = "SIZE")]
    pub max_capture_bytes: Option<String>,
    /// Capture files kept in the directory at most (`20`); the oldest
    /// go first.
    #[arg(long, value_name = "N")]
    pub max_files: Option<String>,
    /// Their bytes at most (`1GiB`).
    #[arg(long, value_name = "SIZE")]
    pub max_bytes: Option<String>,
}

impl CaptureFlags {
    /// The options these flags and `triggers` set.
    pub fn options(&self, triggers: &[String]) -> Result<Options, CliError> {
        let mut options = Options::default();
        let flags = [
            ("keep", &self.keep),
            ("keep_bytes", &self.keep_bytes),
            ("before", &self.before),
            ("after", &self.after),
            ("cooldown", &self.cooldown),
            ("spacing", &self.spacing),
            ("max_capture", &self.max_capture),
            ("max_capture_bytes", &self.max_capture_bytes),
            ("max_files", &self.max_files),
            ("max_bytes", &self.max_bytes),
        ];
        let values = flags
            .iter()
            .filter_map(|(key, value)| value.as_deref().map(|v| (*key, v)));
        let triggers = triggers.iter().map(|t| ("on", t.as_str()));
        for (key, value) in triggers.chain(values) {
            options
                .set(key, value)
                .map_err(|e| CliError::BadSettings(e.to_string()))?;
        }
        options
            .check()
            .map_err(|e| CliError::BadSettings(e.to_string()))?;
        Ok(options)
    }
}

/// Unix time now, ns: a frame's arrival as the recorder takes it.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A recorder beside a stream's reader, and the directory its captures
/// go to (opened, made if missing, at the first capture).
pub struct Keeper {
    /// The recorder.
    pub recorder: Recorder,
    dir: PathBuf,
    limits: Limits,
    store: Option<Store>,
}

impl Keeper {
    /// A recorder of `options` writing into `dir`.
    pub fn new(dir: &Path, options: Options) -> Keeper {
        Keeper {
            limits: options.limits,
            recorder: Recorder::new(options.settings, options.triggers),
            dir: dir.into(),
            store: None,
        }
    }

    /// Every capture made whole goes to the directory; each, and each
    /// older one removed for the limits, is said to `say`.
    pub fn write(&mut self, mut say: impl FnMut(String)) {
        while let Some(capture) = self.recorder.take() {
            if self.store.is_none() {
                match Store::open(&self.dir, DEFAULT_PREFIX, self.limits) {
                    Ok(store) => self.store = Some(store),
                    Err(e) => {
                        say(e.to_string());
                        continue;
                    }
                }
            }
            let Some(store) = self.store.as_mut() else {
                continue;
            };
            let written = store.write(&capture, |old| {
                say(format!(
                    "removed {} (the directory's limits)",
                    old.display()
                ));
            });
            match written {
                Ok(path) => {
                    let why: Vec<String> = capture
                        .fired
                        .iter()
                        .map(|f| match f.trigger {
                            Some(i) => format!("{}: {}", self.recorder.triggers()[i], f.what),
                            None => format!("on demand: {}", f.what),
                        })
                        .collect();
                    let cut = if capture.cut {
                        ", cut at its bounds"
                    } else {
                        ""
                    };
                    say(format!(
                        "captured {} ({} bytes, {:.1} s{cut}): {}",
                        path.display(),
                        capture.bytes.len(),
                        (capture.end - capture.begin) as f64 / 1e9,
                        why.join("; ")
                    ));
                }
                // Said and counted; recording goes on.
                Err(e) => say(e.to_string()),
            }
        }
    }

    /// Where its captures go.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Captures written, and not written.
    fn counts(&self) -> (u64, u64) {
        self.store
            .as_ref()
            .map_or((0, 0), |s| (s.stats().written, s.stats().failed))
    }
}

struct Capturing {
    keeper: Keeper,
    /// SIGUSR1 arrived: a capture is asked for.
    asked: Arc<AtomicBool>,
    deadline: Option<Instant>,
    last_progress: Instant,
    shutdown: bool,
}

impl Capturing {
    fn write_captures(&mut self) {
        self.keeper.write(|line| eprintln!("\r{line}"));
    }

    fn progress(&self, end: &str) {
        let (frames, bytes) = self.keeper.recorder.kept();
        let stats = self.keeper.recorder.stats();
        let (written, failed) = self.keeper.counts();
        eprint!(
            "\rkept {frames} frames, {bytes} bytes; {} fired ({} in cooldown, {} spaced, {} merged); \
             {written} captures written, {failed} failed{end}",
            stats.fired, stats.cooled, stats.spaced, stats.merged
        );
    }
}

impl Consumer for Capturing {
    fn frame(&mut self, frame: &Frame<'_>) -> Flow {
        self.keeper.recorder.frame(frame, unix_now());
        self.write_captures();
        if frame.kind == FrameKind::Shutdown.to_byte() {
            self.shutdown = true;
            return Flow::Stop;
        }
        Flow::Continue
    }

    fn damage(&mut self, _error: DecodeError) {}

    fn tick(&mut self) -> Flow {
        if self.asked.swap(false, Ordering::Relaxed) {
            eprintln!("\rSIGUSR1: capturing");
            self.keeper.recorder.demand("SIGUSR1");
        }
        self.keeper.recorder.now(unix_now());
        self.write_captures();
        if self.last_progress.elapsed() >= Duration::from_secs(1) {
            self.last_progress = Instant::now();
            self.progress("");
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Flow::Stop;
        }
        Flow::Continue
    }
}

/// SIGUSR1 sets the flag (Unix; elsewhere nothing does).
fn on_sigusr1() -> Arc<AtomicBool> {
    let asked = Arc::new(AtomicBool::new(false));
    #[cfg(unix)]
    if let Err(e) = signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&asked)) {
        eprintln!("SIGUSR1 will not ask for a capture: {e}");
    }
    asked
}

/// Keeps `addr`'s recent past and writes captures into `dir` until
/// Shutdown, `duration`, or interruption.
pub fn run(
    addr: &str,
    remote: &RemoteOptions,
    dir: &Path,
    options: Options,
    duration: Option<Duration>,
) -> Result<(), CliError> {
    // The directory is refused now, not at the first capture.
    Store::open(dir, DEFAULT_PREFIX, options.limits).map_err(|e| CliError::File {
        path: dir.into(),
        reason: e.to_string(),
    })?;
    let deadline = duration.map(|d| Instant::now() + d);
    let Some(mut stream) = record::connect(addr, remote, deadline)? else {
        return Ok(());
    };
    let triggers: Vec<String> = options.triggers.iter().map(ToString::to_string).collect();
    eprintln!(
        "recording {addr}: a capture into {} when {}",
        dir.display(),
        triggers.join(", or ")
    );
    let mut capturing = Capturing {
        keeper: Keeper::new(dir, options),
        asked: on_sigusr1(),
        deadline,
        last_progress: Instant::now(),
        shutdown: false,
    };
    let end = attach::read_frames(&mut stream, &mut capturing);
    // The window being gathered ends with the stream.
    capturing.keeper.recorder.end();
    capturing.write_captures();
    let why = if capturing.shutdown {
        " (session ended)"
    } else {
        ""
    };
    capturing.progress(&format!("{why}\n"));
    record::ended(addr, end)
}
