//! `typhon-live relay`: its flags over its configuration file, run by
//! `typhon-live-relay`.

use std::path::PathBuf;
use std::time::Duration;

use typhon_live_monitoring::otlp::settings::OtelEnv;
use typhon_live_relay::config::{socket_address, Layer, RelayConfig};

use crate::cmd::remote::TOKEN_VARIABLE;
use crate::error::CliError;
use crate::seconds;

/// The relay's flags; each, when given, wins over the `--config` file's.
#[derive(clap::Args)]
pub struct RelayOptions {
    /// A process to attach to, as NAME=HOST:PORT (NAME labels it);
    /// repeat for each.
    #[arg(long = "source", value_name = "NAME=HOST:PORT")]
    pub sources: Vec<typhon_live_relay::source::Source>,
    /// A JSON file of settings (the same names; see docs/RELAY.md); the
    /// flags win over it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Serve the sources, merged into one session, to any number of
    /// viewers on this port (0 picks one and prints it).
    #[arg(long, value_name = "PORT")]
    pub listen: Option<u16>,
    /// The address viewers are served on [default: 127.0.0.1].
    #[arg(long)]
    pub bind_address: Option<std::net::IpAddr>,
    /// Where to serve /metrics for Prometheus (port 0 picks one and
    /// prints it).
    #[arg(long, value_name = "HOST:PORT", value_parser = metrics_address)]
    pub metrics: Option<String>,
    /// Export the metrics, and slow ticks' span trees, to this
    /// OTLP/HTTP collector (protobuf), e.g. http://127.0.0.1:4318, or
    /// https:// with a name its certificate is for;
    /// OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_EXPORTER_OTLP_*
    /// variables are read too, and the flags win over them.
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// A header to send with every OTLP export, e.g.
    /// "authorization=Bearer ..."; repeat for each.
    #[arg(long = "otlp-header", value_name = "NAME=VALUE")]
    pub otlp_headers: Vec<String>,
    /// A PEM file of the certificates to trust for an https:// collector
    /// (else the Web PKI's).
    #[arg(long, value_name = "FILE")]
    pub otlp_ca: Option<PathBuf>,
    /// How OTLP bodies are sent: gzip or none [default: none].
    #[arg(long, value_name = "HOW")]
    pub otlp_compression: Option<String>,
    /// Seconds an OTLP export may take, retries included [default: 10].
    #[arg(long, value_name = "SECS")]
    pub otlp_timeout: Option<f64>,
    /// Export ticks longer than this many milliseconds as traces
    /// (overrunning ticks always are) [default: 100].
    #[arg(long, value_name = "MS")]
    pub slow_tick: Option<f64>,
    /// Seconds between two OTLP metric exports [default: 5].
    #[arg(long, value_name = "SECS")]
    pub otlp_interval: Option<f64>,
    /// Serve the browser viewer of the merged session on this port of
    /// loopback (0 picks one); the URL to open is printed.
    #[arg(long, value_name = "PORT")]
    pub web: Option<u16>,
    /// Serve viewers over TLS with a token on loopback too (beyond it
    /// they always are); a viewer connects with attach --fingerprint or
    /// --ca, and --token-file.
    #[arg(long)]
    pub tls: bool,
    /// The TLS certificate chain, PEM [default: a self-signed one made at
    /// start, its fingerprint printed].
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The TLS certificate's private key, PEM.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The file whose first line is the viewers' access token [default:
    /// the TYPHON_LIVE_TOKEN variable, else one drawn at start and
    /// printed once].
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// A name viewers reach the relay by, for the certificate made at
    /// start; repeat for each.
    #[arg(long = "public-host", value_name = "NAME")]
    pub public_hosts: Vec<String>,
    /// Record each source with the flight recorder, its captures into
    /// this directory, named by the source (docs/RECORDER.md).
    #[arg(long, value_name = "DIR")]
    pub capture: Option<PathBuf>,
    /// A trigger (repeatable), for every source: `tick > 100ms`,
    /// `span(NAME) > 20ms`, `gauge(NAME) > 2GiB`, `overrun`, `loss`.
    /// With --tls, POST /capture[/NAME] to --metrics with the token asks
    /// for a capture at once.
    #[arg(long = "on", value_name = "TRIGGER")]
    pub on: Vec<String>,
    /// A recorder option for every source, KEY=VALUE (keep=30s,
    /// before=10s, after=5s, cooldown=30s, ...); repeat for each.
    #[arg(long = "capture-option", value_name = "KEY=VALUE")]
    pub capture_options: Vec<String>,
    /// The memory every source's recorder may hold together [default:
    /// 512MiB].
    #[arg(long, value_name = "SIZE")]
    pub capture_memory: Option<String>,
    /// Stop after this many seconds.
    #[arg(long, value_parser = seconds)]
    pub duration: Option<Duration>,
}

/// `--metrics` is checked as the flag is parsed, so that a bad address is
/// a usage error naming the flag; the file's `metrics` is checked with the
/// other settings.
fn metrics_address(text: &str) -> Result<String, String> {
    socket_address(text).map(|_| text.to_owned())
}

/// Runs the relay until `--duration` passes (for ever without one).
pub fn run(options: RelayOptions) -> Result<(), CliError> {
    let file = options.config.as_deref().map(Layer::read).transpose()?;
    let flags = Layer {
        sources: options
            .sources
            .into_iter()
            .map(|s| (s.name, s.addr))
            .collect(),
        listen: options.listen,
        bind_address: options.bind_address,
        metrics: options.metrics,
        otlp: options.otlp,
        otlp_headers: options
            .otlp_headers
            .iter()
            .map(|text| {
                let (name, value) = text.split_once('=').ok_or_else(|| {
                    CliError::BadSettings(format!("--otlp-header {text:?} is not NAME=VALUE"))
                })?;
                Ok((name.trim().to_owned(), value.trim().to_owned()))
            })
            .collect::<Result<_, CliError>>()?,
        otlp_ca: options.otlp_ca,
        otlp_compression: options.otlp_compression,
        otlp_timeout_s: options.otlp_timeout,
        slow_tick_ms: options.slow_tick,
        otlp_interval_s: options.otlp_interval,
        web: options.web,
        tls: options.tls.then_some(true),
        tls_cert: options.tls_cert,
        tls_key: options.tls_key,
        token_file: options.token_file,
        public_hosts: options.public_hosts,
        token: std::env::var(TOKEN_VARIABLE).ok(),
        capture: options.capture,
        capture_on: options.on,
        capture_options: options
            .capture_options
            .iter()
            .map(|text| {
                let (key, value) = text.split_once('=').ok_or_else(|| {
                    CliError::BadSettings(format!("--capture-option {text:?} is not KEY=VALUE"))
                })?;
                Ok((key.trim().to_owned(), value.trim().to_owned()))
            })
            .collect::<Result<_, CliError>>()?,
        capture_memory: options.capture_memory,
    };
    let env = OtelEnv::of_process().map_err(CliError::BadSettings)?;
    let config = RelayConfig::layered(file.unwrap_or_default(), &env, flags)
        .map_err(CliError::BadSettings)?;
    Ok(typhon_live_relay::serve::run(&config, options.duration)?)
}
