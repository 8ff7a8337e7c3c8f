//! One source, attached to for as long as the relay runs: connect (again
//! and again, on the [`Backoff`] schedule, whether it was never up, went
//! away or restarted), read its frames into its [`SourceMetrics`].

use std::sync::mpsc::SyncSender;
use std::time::{Duration, Instant};

use typhon_live_core::{DecodeError, Frame};
use typhon_live_std::attach::{self, Backoff, Consumer, End, Flow};

use crate::fanout::Input;
use crate::merge::Merger;
use typhon_live_monitoring::metrics::SourceMetrics;
use typhon_live_monitoring::otlp::{unix_ns, TickTracer};
use typhon_live_reader::owned::Reader;

use crate::capture::SourceCapture;

/// A source: its name in the metrics, and its address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The `source` label.
    pub name: String,
    /// Where it exports.
    pub addr: String,
}

impl std::str::FromStr for Source {
    type Err = String;

    /// `NAME=HOST:PORT`, the host a name, an IPv4 address or a bracketed
    /// IPv6 one. Only the form is checked: a name that does not resolve
    /// yet is asked again, as a source that is down is.
    fn from_str(text: &str) -> Result<Source, String> {
        let wrong = || format!("{text:?} is not NAME=HOST:PORT");
        let (name, addr) = text.split_once('=').ok_or_else(wrong)?;
        let (host, port) = addr.rsplit_once(':').ok_or_else(wrong)?;
        if name.is_empty() || host.is_empty() || port.parse::<u16>().is_err() {
            return Err(wrong());
        }
        Ok(Source {
            name: name.into(),
            addr: addr.into(),
        })
    }
}

/// A live exporter sends a Catch-up about once a second even when idle
/// (FORMAT.md, "Catch-up"): a connection without a frame for three such
/// periods is a stalled source (stopped, or hung), `up` 0 until frames
/// flow again.
pub const STALL_AFTER: Duration = Duration::from_secs(3);

/// Where a source's updates go besides its metrics: the merging thread
/// of the relay's viewers, with the source's index.
#[derive(Clone)]
pub struct ToMerger {
    /// The merging thread's inbox.
    pub inbox: SyncSender<Input>,
    /// The source's index among the merger's.
    pub source: usize,
}

/// Where a source's updates go.
pub struct Sinks {
    /// Its Prometheus metrics (always).
    pub metrics: SourceMetrics,
    /// The relay's viewers, if it serves any.
    pub merger: Option<ToMerger>,
    /// Its slow ticks, if they are exported over OTLP.
    pub tracer: Option<TickTracer>,
    /// Its flight recorder, if captures are asked for.
    pub capture: Option<SourceCapture>,
}

/// Frames read into updates for the sinks, until the deadline.
struct Feed<'m> {
    /// The source's name, for what is said on stderr.
    name: &'m str,
    reader: &'m mut Reader,
    sinks: &'m mut Sinks,
    /// A frame was refused on this connection, and said so.
    told_damage: bool,
    /// A frame came within [`STALL_AFTER`]: the source is up (a peer that
    /// only accepted the connection, or sends something else, is not).
    up: bool,
    /// `up` went to 0 for want of frames, on this connection.
    stalled: bool,
    /// When the last frame was taken in: a stall is measured from there.
    last_frame: Instant,
    deadline: Option<Instant>,
}

impl Consumer for Feed<'_> {
    fn frame(&mut self, frame: &Frame<'_>) -> Flow {
        if !self.up {
            self.up = true;
            self.sinks.metrics.set_up(true);
            if std::mem::take(&mut self.stalled) {
                eprintln!("relay: source {}: frames flow again", self.name);
            }
        }
        let sinks = &mut *self.sinks;
        if let Some(capture) = &mut sinks.capture {
            capture.frame(frame, unix_ns(), &sinks.metrics);
        }
        // A payload that does not decode (a peer's bug: its checksum
        // held) loses what it held; the frames after it go on.
        let result = self.reader.read(frame, unix_ns(), |update, state| {
            sinks.metrics.update(&update, state.names());
            if let Some(tracer) = &mut sinks.tracer {
                tracer.update(&update, state);
            }
            if let Some(to) = sinks.merger.as_ref().filter(|_| Merger::takes(&update)) {
                // Waits while the merger is behind: the source's exporter
                // then drops for us, and says so.
                let _ = to.inbox.send(Input::Update {
                    source: to.source,
                    update,
                });
            }
        });
        if let Err(error) = result {
            self.sinks.metrics.damaged();
            // Said once a connection: a peer sending nothing else must
            // not flood stderr (the metric counts them all).
            if !std::mem::replace(&mut self.told_damage, true) {
                eprintln!(
                    "relay: source {}: frame seq {} refused: {error} (the next ones are counted in typhon_frames_damaged_total)",
                    self.name, frame.seq
                );
            }
        }
        // From here: the time taken above (a merger that is behind holds
        // the send) is the relay's, not a silence of the source's.
        self.last_frame = Instant::now();
        self.tick()
    }

    // A skipped frame is a gap in the sequence numbers that follow.
    fn damage(&mut self, _error: DecodeError) {}

    fn tick(&mut self) -> Flow {
        if let Some(capture) = &mut self.sinks.capture {
            capture.tick(unix_ns(), &self.sinks.metrics);
        }
        if self.up && self.last_frame.elapsed() > STALL_AFTER {
            (self.up, self.stalled) = (false, true);
            self.sinks.metrics.stalled();
            eprintln!(
                "relay: source {}: no frame for {} s, stalled; up again when frames flow",
                self.name,
                STALL_AFTER.as_secs()
            );
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
}

/// Attaches to `source` until `deadline` (for ever without one), saying
/// on stderr when it connects and why it lost a connection.
pub fn run(source: &Source, sinks: &mut Sinks, deadline: Option<Instant>) {
    let mut backoff = Backoff::default();
    let mut connections = 0u64;
    // One for all the connections: a restart under the same session id
    // shows across them.
    let mut reader = Reader::default();
    loop {
        let mut stream = match attach::connect(&source.addr, deadline, |_| true) {
            Ok(Some(stream)) => stream,
            Ok(None) => return,
            Err(e) => {
                let wait = backoff.after(Duration::ZERO);
                eprintln!(
                    "relay: source {}: {e}; trying again in {wait:?}",
                    source.name
                );
                if !attach::pause(wait, deadline, || true) {
                    return;
                }
                continue;
            }
        };
        connections += 1;
        if connections > 1 {
            sinks.metrics.reconnected();
        }
        eprintln!(
            "relay: source {}: connected to {}",
            source.name, source.addr
        );
        let since = Instant::now();
        reader.reconnected();
        if let Some(capture) = &mut sinks.capture {
            capture.reconnected();
        }
        let mut feed = Feed {
            name: &source.name,
            reader: &mut reader,
            sinks: &mut *sinks,
            told_damage: false,
            up: false,
            stalled: false,
            last_frame: Instant::now(),
            deadline,
        };
        let end = attach::read_frames(&mut stream, &mut feed);
        sinks.metrics.set_up(false);
        let why = match end {
            End::Done => return,
            End::Lost(reason) => reason,
            End::NotTyphon(reason) => format!("not a typhon-live stream: {reason}"),
        };
        let wait = backoff.after(since.elapsed());
        eprintln!(
            "relay: source {}: {why}; connecting again in {wait:?}",
            source.name
        );
        if !attach::pause(wait, deadline, || true) {
            return;
        }
    }
}
