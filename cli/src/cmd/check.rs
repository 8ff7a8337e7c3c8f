//! `typhon-live check FILE --assert …`, and `attach … --duration D
//! --assert …`: budget assertions judged on a trace, or on a live stream
//! once its duration ends (no file written). A broken one exits 8.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use typhon_live_core::{DecodeError, Frame};
use typhon_live_reader::{Reader, Update};
use typhon_live_std::attach::{self, Consumer, End, Flow};
use typhon_live_verdict::check::{self, Assertion};
use typhon_live_verdict::report;
use typhon_live_verdict::samples::{Samples, Side};

use crate::cmd::compare::read_side;
use crate::cmd::remote::{self, RemoteOptions};
use crate::cmd::verdict::{self, Flags, Written};
use crate::error::CliError;

/// `check`'s arguments.
#[derive(clap::Args)]
pub struct CheckOptions {
    /// The trace file, or a folder of runs (its *.tlt files).
    pub file: PathBuf,
    #[command(flatten)]
    pub assertions: Assertions,
    /// Print the verdict as JSON instead of the table.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    #[command(flatten)]
    pub flags: Flags,
}

/// The `--assert` flags, as `check` and `attach` take them.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct Assertions {
    /// A budget assertion (repeatable; docs/COMMANDS.md, "check"):
    /// `p99(Sim.Physics) < 2ms`, `max(Tick) < 50ms`, `overruns == 0`,
    /// `dropped == 0`.
    #[arg(long = "assert", value_name = "ASSERTION", value_parser = assertion)]
    pub assert: Vec<Assertion>,
}

/// An assertion, or the error pointing at where it went wrong.
fn assertion(text: &str) -> Result<Assertion, String> {
    text.parse::<Assertion>()
        .map_err(|e| format!("\n{}", e.pointed(text)))
}

/// Runs `check` on a file.
pub fn run(opts: CheckOptions) -> Result<(), CliError> {
    if opts.assertions.assert.is_empty() {
        return Err(CliError::BadSettings(
            "nothing to check: give at least one --assert".into(),
        ));
    }
    let side = read_side(&opts.file, &opts.flags)?;
    judge(&side, &opts.assertions.assert, opts.json, &opts.flags)
}

/// Judges `assertions` on `side` and delivers the verdict.
fn judge(side: &Side, assertions: &[Assertion], json: bool, flags: &Flags) -> Result<(), CliError> {
    let verdict = check::check(side, assertions);
    let written = Written {
        table: report::check_table(&verdict),
        markdown: report::check_markdown(&verdict),
        junit: report::check_junit(&verdict, flags.allow_damage),
    };
    let failed = verdict.broken().then(|| {
        let broken: Vec<&str> = (verdict.outcomes.iter())
            .filter(|o| !o.passed)
            .map(|o| o.assertion.as_str())
            .collect();
        format!("broken: {}", broken.join("; "))
    });
    let damaged = verdict.reading.damaged();
    verdict::deliver(flags, json, &verdict, written, failed, damaged)
}

/// Reads a live stream into samples until its deadline or its Shutdown.
struct Live {
    label: String,
    reader: Reader,
    samples: Samples,
    deadline: Instant,
    ended: bool,
}

impl Consumer for Live {
    fn frame(&mut self, frame: &Frame<'_>) -> Flow {
        let mut ended = false;
        let (samples, reader) = (&mut self.samples, &mut self.reader);
        let read = reader.read(frame, |state, update| {
            ended |= matches!(update, Update::Shutdown { .. });
            samples.update(state, &update);
        });
        if let Err(error) = read {
            self.samples.damage(&self.label, Some(frame.offset), &error);
        }
        self.ended |= ended;
        if self.ended {
            Flow::Stop
        } else {
            self.tick()
        }
    }

    fn damage(&mut self, error: DecodeError) {
        self.samples.damage(&self.label, None, &error);
    }

    fn tick(&mut self) -> Flow {
        if Instant::now() >= self.deadline {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
}

/// `attach ADDR --duration D --assert …`: reads the stream for `duration`
/// (or until it ends), then judges.
pub fn live(
    addr: &str,
    remote_options: &RemoteOptions,
    duration: Duration,
    assertions: &[Assertion],
    json: bool,
    flags: &Flags,
) -> Result<(), CliError> {
    let secure = remote_options.secure()?;
    let deadline = Instant::now() + duration;
    let socket = attach::connect(addr, Some(deadline), |_| true)?.ok_or_else(|| {
        CliError::Connect(attach::ConnectError::Unreachable {
            addr: addr.into(),
            reason: "nothing answered before the duration ended".into(),
        })
    })?;
    let mut stream = remote::open(socket, addr, secure.as_ref())?;
    let mut live = Live {
        label: addr.into(),
        reader: Reader::new(),
        samples: verdict::samples(flags),
        deadline,
        ended: false,
    };
    live.samples.start_source(addr);
    match attach::read_frames(&mut stream, &mut live) {
        End::Done => {}
        End::NotTyphon(reason) => {
            return Err(CliError::NotTyphon {
                addr: addr.into(),
                reason,
            })
        }
        // A stream that ends before its time, without its Shutdown, is
        // not judged: what was not seen cannot pass.
        End::Lost(reason) => {
            return Err(CliError::ConnectionLost {
                addr: addr.into(),
                reason,
            })
        }
    }
    judge(&live.samples.finish(), assertions, json, flags)
}
