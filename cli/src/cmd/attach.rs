//! `typhon-live attach`: the live view of a running process.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use typhon_live_core::{DecodeError, Frame};
use typhon_live_model::history::DEFAULT_HISTORY_BYTES;
use typhon_live_model::{Connection, Model};
use typhon_live_recorder::{Options, Settings};
use typhon_live_std::attach::{self, Backoff, Consumer, End, Flow};
use typhon_live_tui::app::Screen;

use crate::cmd::capture::{self, Keeper};
use crate::cmd::remote::{self, RemoteOptions, Secure, Stream};
use crate::error::CliError;

/// How often the view is redrawn.
const REFRESH: Duration = Duration::from_millis(250);
/// The shortest time between two redraws that keys ask for.
const KEY_REDRAW: Duration = Duration::from_millis(33);

/// Where the view goes.
enum Output {
    /// Full-screen terminal UI.
    Terminal(Box<Screen>),
    /// One line a second, text or JSON.
    Lines { json: bool, last: Option<Instant> },
}

impl Output {
    fn new(json: bool) -> Result<Output, CliError> {
        if !json && std::io::stdout().is_terminal() {
            Ok(Output::Terminal(Box::new(
                Screen::open().map_err(|e| CliError::Terminal(e.to_string()))?,
            )))
        } else {
            Ok(Output::Lines { json, last: None })
        }
    }

    fn show(&mut self, model: &mut Model, force: bool) {
        match self {
            Output::Terminal(screen) => screen.draw(model, Instant::now()),
            Output::Lines { json, last } => {
                if !force && last.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
                    return;
                }
                *last = Some(Instant::now());
                let line = model.summary_line(typhon_live_tui::uptime::now(), *json);
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
        }
    }

    /// The keys pressed since the last call, done (see `tui::keymap`):
    /// whether one asked to quit, and whether any changed the view.
    fn keys(&mut self, model: &Model) -> (bool, bool) {
        match self {
            Output::Terminal(screen) => screen.keys(model, Duration::ZERO),
            Output::Lines { .. } => (false, false),
        }
    }

    /// Whether the user asked to quit; other keys act as usual.
    fn quit_requested(&mut self, model: &Model) -> bool {
        self.keys(model).0
    }

    fn finish(self) {
        if let Output::Terminal(screen) = self {
            screen.close();
        }
    }
}

struct Viewer {
    model: Model,
    /// The flight recorder the view keeps: `c` asks it for a capture.
    keeper: Keeper,
    output: Output,
    last_draw: Instant,
    /// A key changed the view since the last draw.
    dirty: bool,
    deadline: Option<Instant>,
    quit: bool,
}

impl Consumer for Viewer {
    fn frame(&mut self, frame: &Frame<'_>) -> Flow {
        // A damaged frame is in the model's notice.
        let _ = self.model.on_frame(frame, typhon_live_tui::uptime::now());
        // The model's reading, kept: no second one.
        self.keeper.recorder.keep(frame, self.model.state());
        if self.model.ended_cleanly {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }

    fn damage(&mut self, error: DecodeError) {
        self.model.notice = Some(format!("stream damage: {error}"));
    }

    fn tick(&mut self) -> Flow {
        let (quit, changed) = self.output.keys(&self.model);
        if quit || self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.quit = true;
            return Flow::Stop;
        }
        // A key redraws at once (at most ~30 times a second: a held key
        // must not starve the reading); otherwise every REFRESH.
        self.dirty |= changed;
        if let Output::Terminal(screen) = &mut self.output {
            if std::mem::take(&mut screen.ui.capture_asked) {
                self.keeper
                    .recorder
                    .demand_with("the c key of the terminal view", self.model.state());
                self.model.notice = Some(format!(
                    "capturing the past and the next {:.0} s, into {}",
                    Settings::default().after_ns as f64 / 1e9,
                    self.keeper.dir().display()
                ));
            }
        }
        self.keeper
            .recorder
            .now_with(capture::unix_now(), self.model.state());
        let model = &mut self.model;
        self.keeper.write(|line| model.notice = Some(line));
        let since = self.last_draw.elapsed();
        if (self.dirty && since >= KEY_REDRAW) || since >= REFRESH {
            self.last_draw = Instant::now();
            self.dirty = false;
            self.output.show(&mut self.model, false);
        }
        Flow::Continue
    }
}

/// Watches `addr` until its session ends, the user quits or `duration`
/// passes. Reconnects after a drop and says so.
pub fn run(
    addr: &str,
    remote: &RemoteOptions,
    json: bool,
    duration: Option<Duration>,
    history_seconds: f64,
    capture_dir: &Path,
) -> Result<(), CliError> {
    let secure = remote.secure()?;
    let mut viewer = Viewer {
        model: Model::with_history(history_seconds, DEFAULT_HISTORY_BYTES),
        keeper: Keeper::new(capture_dir, Options::default()),
        output: Output::new(json)?,
        last_draw: Instant::now(),
        dirty: false,
        deadline: duration.map(|d| Instant::now() + d),
        quit: false,
    };
    let result = watch(addr, secure.as_ref(), &mut viewer);
    viewer.output.show(&mut viewer.model, true);
    let Viewer { output, model, .. } = viewer;
    output.finish();
    if result.is_ok() && model.ended_cleanly {
        eprintln!("typhon-live: {addr}: the session ended");
    }
    result
}

/// Connects, reads until the connection ends, and reconnects on the
/// [`Backoff`] schedule; every wait ends at the viewer's deadline.
fn watch(addr: &str, secure: Option<&Secure>, viewer: &mut Viewer) -> Result<(), CliError> {
    let deadline = viewer.deadline;
    let connected = connect(addr, secure, viewer, |attempt| Connection::Connecting {
        attempt,
    })?;
    let Some(mut stream) = connected else {
        return Ok(());
    };
    let mut backoff = Backoff::default();
    loop {
        viewer.model.connection = Connection::Connected {
            peer: stream.peer(addr),
        };
        let since = Instant::now();
        match attach::read_frames(&mut stream, viewer) {
            End::Done => return Ok(()),
            End::NotTyphon(reason) => {
                return Err(CliError::NotTyphon {
                    addr: addr.into(),
                    reason,
                })
            }
            End::Lost(reason) => {
                let wait = backoff.after(since.elapsed());
                viewer.model.connection = Connection::Waiting {
                    reason: reason.clone(),
                    retry_in_ms: wait.as_millis() as u64,
                };
                viewer.output.show(&mut viewer.model, true);
                if !attach::pause(wait, deadline, || {
                    !viewer.output.quit_requested(&viewer.model)
                }) {
                    return Ok(());
                }
                let state = |attempt| Connection::Reconnecting {
                    attempt,
                    reason: reason.clone(),
                };
                let reconnected = connect(addr, secure, viewer, state).map_err(|e| match e {
                    // A server that is there but refuses is told as such.
                    CliError::Remote { .. } => e,
                    _ => CliError::ConnectionLost {
                        addr: addr.into(),
                        reason: reason.clone(),
                    },
                })?;
                let Some(reconnected) = reconnected else {
                    return Ok(());
                };
                stream = reconnected;
                viewer.model.reconnected();
                // A new Init tells a restart (new session id) from a
                // transient drop (same id); the model notices which.
                viewer.model.notice = Some("reconnected after a dropped connection".into());
            }
        }
        if viewer.quit {
            return Ok(());
        }
    }
}

/// [`attach::connect`] within the viewer's deadline, showing each attempt
/// once as `state(attempt)` and stopping when the user quits; then
/// opened as `secure` says.
fn connect(
    addr: &str,
    secure: Option<&Secure>,
    viewer: &mut Viewer,
    state: impl Fn(u32) -> Connection,
) -> Result<Option<Stream>, CliError> {
    let mut shown = 0;
    let socket = attach::connect(addr, viewer.deadline, |attempt| {
        if attempt != shown {
            shown = attempt;
            viewer.model.connection = state(attempt);
            viewer.output.show(&mut viewer.model, true);
        }
        !viewer.output.quit_requested(&viewer.model)
    })?;
    socket
        .map(|socket| remote::open(socket, addr, secure))
        .transpose()
}
