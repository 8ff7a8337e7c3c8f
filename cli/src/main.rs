//! `typhon-live`: run the demo, watch a live process, record, inspect and
//! convert traces.

mod cmd;
mod error;
mod trace_file;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::cmd::{
    attach, capture, check, compare, convert, demo, inspect, record, relay, remote, verdict, view,
    web,
};
use crate::error::CliError;

/// The command's memory counted by lane and its allocation sites sampled
/// (transport-std's `tracking`): the demo shows its own, and its leak.
#[global_allocator]
static ALLOCATOR: typhon_live_std::Tracking<std::alloc::System> =
    typhon_live_std::Tracking::new(std::alloc::System);

#[derive(Parser)]
#[command(
    name = "typhon-live",
    version,
    about = "Watch a running process's profiler telemetry live, record and convert traces"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an instrumented sample runtime, export it live and watch it.
    Demo(demo::DemoOptions),
    /// Show a live view of a running process.
    Attach {
        /// Where the process exports.
        #[arg(default_value = "127.0.0.1:9100")]
        addr: String,
        #[command(flatten)]
        remote: remote::RemoteOptions,
        /// One JSON summary per line instead of the view.
        #[arg(long)]
        json: bool,
        /// Stop after this many seconds.
        #[arg(long, value_parser = seconds)]
        duration: Option<Duration>,
        /// Seconds of the stream kept for scroll-back and statistics
        /// (within 512 MiB).
        #[arg(long, default_value_t = 60.0, value_parser = positive)]
        history: f64,
        /// Where the `c` key's captures go (docs/RECORDER.md).
        #[arg(long, default_value = "captures")]
        capture_dir: PathBuf,
        /// With --assert, no view: the stream is read for --duration and
        /// the assertions judged when it ends (as `check` does a file).
        #[command(flatten)]
        assertions: check::Assertions,
        #[command(flatten)]
        flags: verdict::Flags,
    },
    /// Did a change make it slower? Compares two traces (or folders of
    /// runs) name by name; a regression exits 8.
    Compare(Box<compare::CompareOptions>),
    /// Judges budget assertions on a trace; a broken one exits 8.
    Check(check::CheckOptions),
    /// Watch a running process in a browser: serves the viewer and
    /// prints the URL to open.
    Web(web::WebOptions),
    /// Write a live stream to a trace file; with --on, keep its recent
    /// past and write a capture into a directory each time a trigger
    /// fires.
    Record {
        /// Where the process exports.
        addr: String,
        #[command(flatten)]
        remote: remote::RemoteOptions,
        /// The trace file to write (with --on: the directory of captures).
        #[arg(short, long)]
        output: PathBuf,
        /// A trigger (repeatable; docs/RECORDER.md): `tick > 100ms`,
        /// `span(NAME) > 20ms`, `gauge(NAME) > 2GiB`, `overrun`, `loss`.
        /// SIGUSR1 asks for a capture at once.
        #[arg(long = "on", value_name = "TRIGGER")]
        on: Vec<String>,
        #[command(flatten)]
        capture: Box<capture::CaptureFlags>,
        /// What to write [default: perfetto for a .pftrace or
        /// .perfetto-trace file, else tlt].
        #[arg(long, value_enum)]
        format: Option<record::Format>,
        /// Stop after this many seconds.
        #[arg(long, value_parser = seconds)]
        duration: Option<Duration>,
    },
    /// Open a trace file in the live view's screen, paused at its end.
    View {
        /// The trace file.
        file: PathBuf,
        /// One JSON summary of the file instead of the screen.
        #[arg(long)]
        json: bool,
        /// Serve it to the browser viewer instead, on this port of
        /// loopback (`--web` alone picks one); the URL to open is printed.
        #[arg(long, value_name = "PORT", num_args = 0..=1, default_missing_value = "0")]
        web: Option<u16>,
        /// Name the sampled stacks' code from the debug files under this
        /// directory (unstripped binaries, `.debug` files or a
        /// `.build-id` tree), found by each module's build id: for a
        /// trace of a stripped binary or firmware.
        #[arg(long, value_name = "DIR")]
        symbols: Option<PathBuf>,
    },
    /// Attach to many processes at once and serve their metrics to
    /// Prometheus.
    Relay(Box<relay::RelayOptions>),
    /// Describe a trace file: header, metadata, counts, lanes, damage.
    Inspect {
        /// The trace file.
        file: PathBuf,
    },
    /// Convert a trace file for other viewers.
    Convert {
        /// The trace file.
        file: PathBuf,
        /// Output format.
        #[arg(long, value_enum)]
        to: convert::Format,
        /// Where to write it.
        #[arg(short, long)]
        output: PathBuf,
    },
}

pub(crate) fn positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("{text:?} is not a positive number")),
    }
}

pub(crate) fn seconds(text: &str) -> Result<Duration, String> {
    positive(text).map(Duration::from_secs_f64)
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Demo(options) => demo::run(options),
        Command::Attach {
            addr,
            remote,
            json,
            duration,
            history,
            capture_dir,
            assertions,
            flags,
        } => match (assertions.assert.is_empty(), duration) {
            (true, _) if flags != verdict::Flags::default() => Err(CliError::BadSettings(
                "--warm-up, --markdown, --junit and --allow-damage are for a verdict: give --assert".into(),
            )),
            (true, _) => attach::run(&addr, &remote, json, duration, history, &capture_dir),
            (false, Some(duration)) => {
                check::live(&addr, &remote, duration, &assertions.assert, json, &flags)
            }
            (false, None) => Err(CliError::BadSettings(
                "--assert on a live stream needs --duration: the verdict comes when it ends".into(),
            )),
        },
        Command::Compare(options) => compare::run(*options),
        Command::Check(options) => check::run(options),
        Command::Record {
            addr,
            remote,
            output,
            format,
            duration,
            on,
            capture,
        } => {
            if !on.is_empty() {
                if format.is_some_and(|f| f != record::Format::Tlt) {
                    return Err(CliError::BadSettings(
                        "captures are typhon-live trace files: --format tlt only with --on".into(),
                    ));
                }
                let options = capture.options(&on)?;
                return capture::run(&addr, &remote, &output, options, duration);
            }
            if *capture != capture::CaptureFlags::default() {
                return Err(CliError::BadSettings(
                    "the recorder's flags (--keep, --before, ...) need a trigger: --on".into(),
                ));
            }
            let format = format.unwrap_or_else(|| record::Format::for_path(&output));
            record::run(&addr, &remote, &output, format, duration)
        }
        Command::Web(options) => web::run(options),
        Command::View {
            file,
            web: Some(port),
            symbols,
            ..
        } => view::serve(&file, port, symbols.as_deref()),
        Command::View {
            file,
            json,
            symbols,
            ..
        } => view::run(&file, json, symbols.as_deref()),
        Command::Relay(options) => relay::run(*options),
        Command::Inspect { file } => inspect::run(&file),
        Command::Convert { file, to, output } => convert::run(&file, to, &output),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("typhon-live: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
