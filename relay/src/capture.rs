//! The flight recorder per source (docs/RECORDER.md): each source's
//! stream kept and captured on its own, its captures named by the source
//! (`NAME-UNIXMS.tlt`), its memory bounded per source and in total, its
//! triggers and captures counted in `/metrics`. `POST /capture/NAME` (or
//! `/capture`, every source) to the relay's metrics port, with the
//! bearer token, asks for one at once.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use typhon_live_core::Frame;
use typhon_live_http::axum::extract::Path;
use typhon_live_http::axum::http::StatusCode;
use typhon_live_http::axum::routing::post;
use typhon_live_http::axum::Router;
use typhon_live_monitoring::metrics::{CaptureCounts, SourceMetrics};
use typhon_live_recorder::store::{Store, Writer, Written};
use typhon_live_recorder::{Options, Recorder};

/// The memory every source's recorder may hold together, by default.
pub const DEFAULT_MEMORY: u64 = 512 << 20;

/// The relay's recorder settings.
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureConfig {
    /// Where every source's captures go.
    pub dir: PathBuf,
    /// The recorder's options, for each source (before the memory is
    /// shared out).
    pub options: Options,
    /// Bytes every source's recorder may hold together: a source's past
    /// and its capture being gathered each take at most their share.
    pub memory: u64,
}

impl CaptureConfig {
    /// The options of one source of `sources`: its past kept and its
    /// capture each within half its share of the memory.
    pub fn per_source(&self, sources: usize) -> Options {
        let share = (self.memory / (2 * sources.max(1) as u64)) as usize;
        let mut options = self.options.clone();
        options.settings.keep_bytes = options.settings.keep_bytes.min(share);
        options.settings.max_capture_bytes = options.settings.max_capture_bytes.min(share);
        options
    }
}

/// Which sources a capture is asked of, by name.
pub type Asked = Arc<BTreeMap<String, Arc<AtomicBool>>>;

/// A file prefix from a source's name: its letters, digits, `-` and `_`,
/// anything else `_`.
fn prefix(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One source's recorder, and the thread writing its captures.
pub struct SourceCapture {
    recorder: Recorder,
    writer: Writer,
    asked: Arc<AtomicBool>,
    /// Triggers already counted in the metrics.
    fired_counted: u64,
}

impl SourceCapture {
    /// The recorder of source `name`, writing into `config`'s directory
    /// (made now) with `options`; `counts` counts its captures, `asked`
    /// asks it for one.
    pub fn start(
        config: &CaptureConfig,
        options: Options,
        name: &str,
        counts: CaptureCounts,
        asked: Arc<AtomicBool>,
    ) -> io::Result<SourceCapture> {
        let store =
            Store::open(&config.dir, &prefix(name), options.limits).map_err(io::Error::other)?;
        let source = name.to_owned();
        let writer = Writer::start(store, move |written| match written {
            Written::Whole(path, capture) => {
                counts.written.inc();
                let why: Vec<&str> = capture.fired.iter().map(|f| f.what.as_str()).collect();
                eprintln!(
                    "relay: source {source}: captured {} ({})",
                    path.display(),
                    why.join("; ")
                );
            }
            Written::Removed(old) => {
                eprintln!(
                    "relay: source {source}: removed {} (the directory's limits)",
                    old.display()
                );
            }
            Written::Failed(e) => {
                // Said and counted; recording goes on.
                counts.failed.inc();
                eprintln!("relay: source {source}: {e}");
            }
        })?;
        Ok(SourceCapture {
            recorder: Recorder::new(options.settings, options.triggers),
            writer,
            asked,
            fired_counted: 0,
        })
    }

    /// A frame of the source's, which arrived at Unix time `arrival` (ns).
    pub fn frame(&mut self, frame: &Frame<'_>, arrival: u64, metrics: &SourceMetrics) {
        self.recorder.frame(frame, arrival);
        self.send(metrics);
    }

    /// Time passes (Unix ns): a capture asked for, open ticks past their
    /// bound, windows that ended.
    pub fn tick(&mut self, now: u64, metrics: &SourceMetrics) {
        if self.asked.swap(false, Ordering::Relaxed) {
            self.recorder.demand("POST /capture");
        }
        self.recorder.now(now);
        self.send(metrics);
    }

    /// A new connection to the source.
    pub fn reconnected(&mut self) {
        self.recorder.reconnected();
    }

    fn send(&mut self, metrics: &SourceMetrics) {
        let fired = self.recorder.stats().fired;
        metrics.capture_triggers(fired - self.fired_counted);
        self.fired_counted = fired;
        while let Some(capture) = self.recorder.take() {
            if self.writer.send(capture).is_err() {
                metrics.capture_counts().failed.inc();
            }
        }
    }
}

/// `POST /capture` (every source) and `POST /capture/NAME`: the route the
/// metrics port serves, behind its bearer token.
pub fn routes(asked: Asked) -> Router {
    let every = Arc::clone(&asked);
    Router::new()
        .route(
            "/capture",
            post(move || async move {
                for flag in every.values() {
                    flag.store(true, Ordering::Relaxed);
                }
                (StatusCode::ACCEPTED, "capturing every source\n")
            }),
        )
        .route(
            "/capture/{name}",
            post(move |Path(name): Path<String>| async move {
                match asked.get(&name) {
                    Some(flag) => {
                        flag.store(true, Ordering::Relaxed);
                        (StatusCode::ACCEPTED, format!("capturing source {name}\n"))
                    }
                    None => (StatusCode::NOT_FOUND, format!("no source {name:?}\n")),
                }
            }),
        )
}
