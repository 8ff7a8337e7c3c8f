//! `typhon-live`: run the demo, watch a live process, record, inspect and
//! convert traces.

mod cmd;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use crate::cmd::{attach, convert, demo, inspect, record, relay, view};
use typhon_live_cli::error::CliError;
use typhon_live_cli::source::file;

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
    },
    /// Write a live stream to a trace file.
    Record {
        /// Where the process exports.
        addr: String,
        /// The trace file to write.
        #[arg(short, long)]
        output: PathBuf,
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
    },
    /// Attach to many processes at once and serve their metrics to
    /// Prometheus.
    Relay {
        /// A process to attach to, as NAME=HOST:PORT (NAME labels it);
        /// repeat for each.
        #[arg(long = "source", value_name = "NAME=HOST:PORT")]
        sources: Vec<typhon_live_cli::relay::source::Source>,
        /// A JSON file of settings (the same names; see README, "Many
        /// processes"); the flags win over it.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Serve the sources, merged into one session, to any number of
        /// viewers on this port (0 picks one and prints it).
        #[arg(long, value_name = "PORT")]
        listen: Option<u16>,
        /// The address viewers are served on [default: 127.0.0.1].
        #[arg(long)]
        bind_address: Option<std::net::IpAddr>,
        /// Where to serve /metrics for Prometheus (port 0 picks one and
        /// prints it).
        #[arg(long, value_name = "HOST:PORT")]
        metrics: Option<String>,
        /// Export the metrics, and slow ticks' span trees, to this
        /// OTLP/HTTP collector (protobuf), e.g. http://127.0.0.1:4318.
        #[arg(long, value_name = "URL")]
        otlp: Option<String>,
        /// Export ticks longer than this many milliseconds as traces
        /// (overrunning ticks always are) [default: 100].
        #[arg(long, value_name = "MS")]
        slow_tick: Option<f64>,
        /// Seconds between two OTLP metric exports [default: 5].
        #[arg(long, value_name = "SECS")]
        otlp_interval: Option<f64>,
        /// Stop after this many seconds.
        #[arg(long, value_parser = seconds)]
        duration: Option<Duration>,
    },
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
        to: Format,
        /// Where to write it.
        #[arg(short, long)]
        output: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// Perfetto's protobuf trace, .pftrace (ui.perfetto.dev,
    /// trace_processor).
    Perfetto,
    /// Chrome Trace Event JSON (ui.perfetto.dev, chrome://tracing).
    Chrome,
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

fn damaged(path: &std::path::Path, damage: &[file::Damage]) -> CliError {
    let first = &damage[0];
    CliError::BadTrace {
        path: path.into(),
        reason: format!(
            "{} damaged places, the first at byte {}: {} (the rest was read)",
            damage.len(),
            first.offset,
            first.error
        ),
    }
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Demo(options) => demo::run(options),
        Command::Attach {
            addr,
            json,
            duration,
            history,
        } => attach::run(&addr, json, duration, history),
        Command::Record {
            addr,
            output,
            format,
            duration,
        } => {
            let format = format.unwrap_or_else(|| record::Format::for_path(&output));
            record::run(&addr, &output, format, duration)
        }
        Command::View { file, json } => view::run(&file, json),
        Command::Relay {
            sources,
            config,
            listen,
            bind_address,
            metrics,
            otlp,
            slow_tick,
            otlp_interval,
            duration,
        } => {
            use typhon_live_cli::relay::config::{Layer, RelayConfig};
            let file = config.as_deref().map(Layer::read).transpose()?;
            let flags = Layer {
                sources: sources.into_iter().map(|s| (s.name, s.addr)).collect(),
                listen,
                bind_address,
                metrics,
                otlp,
                slow_tick_ms: slow_tick,
                otlp_interval_s: otlp_interval,
            };
            let config = RelayConfig::layered(file.unwrap_or_default(), flags)
                .map_err(CliError::BadSettings)?;
            relay::run(&config, duration)
        }
        Command::Inspect { file } => {
            let (report, was_damaged) = inspect::report(&file)?;
            print!("{report}");
            if was_damaged {
                return Err(CliError::BadTrace {
                    path: file,
                    reason: "damaged; see the damage section above".into(),
                });
            }
            Ok(())
        }
        Command::Convert {
            file,
            to: Format::Chrome,
            output,
        } => {
            let (json, damage) = convert::to_chrome(&file)?;
            let text = serde_json::to_string(&json).map_err(|e| CliError::File {
                path: output.clone(),
                reason: e.to_string(),
            })?;
            std::fs::write(&output, text).map_err(|e| CliError::File {
                path: output.clone(),
                reason: e.to_string(),
            })?;
            if !damage.is_empty() {
                return Err(damaged(&file, &damage));
            }
            Ok(())
        }
        Command::Convert {
            file,
            to: Format::Perfetto,
            output,
        } => {
            let (stats, damage) = convert::to_perfetto(&file, &output)?;
            eprintln!(
                "wrote {}: {}",
                output.display(),
                typhon_live_cli::formats::perfetto::summary(&stats)
            );
            if !damage.is_empty() {
                return Err(damaged(&file, &damage));
            }
            Ok(())
        }
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
