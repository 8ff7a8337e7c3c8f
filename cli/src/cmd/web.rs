//! `typhon-live web`: the browser viewer of one process. Internally the
//! relay's fan-out over that one source, its lanes named as the process
//! names them: every tab is a reader of its own, and the process sees
//! one viewer however many tabs are open.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use typhon_live_relay::config::{self, RelayConfig, DEFAULT_OTLP_INTERVAL, DEFAULT_SLOW_TICK};
use typhon_live_relay::source::Source;

use crate::error::CliError;

/// The `web` subcommand's arguments.
#[derive(clap::Args)]
pub struct WebOptions {
    /// Where the process exports.
    #[arg(default_value = "127.0.0.1:9100")]
    pub addr: String,
    /// The port to serve the viewer on (0 picks one; the URL to open is
    /// printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The address to serve it on: loopback only, until the viewer has
    /// HTTPS [default: 127.0.0.1].
    #[arg(long)]
    pub bind_address: Option<IpAddr>,
    /// Stop after this many seconds.
    #[arg(long, value_parser = crate::seconds)]
    pub duration: Option<Duration>,
}

/// Serves the browser viewer of the process at `addr` on `port` until
/// `duration` passes (for ever without one).
pub fn serve(
    addr: &str,
    port: u16,
    bind_address: Option<IpAddr>,
    duration: Option<Duration>,
) -> Result<(), CliError> {
    let bind_address = bind_address.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    config::web_on_loopback(bind_address).map_err(CliError::BadSettings)?;
    let source: Source = format!("process={addr}")
        .parse()
        .map_err(|e: String| CliError::BadSettings(e.replace("process=", "")))?;
    let relay = RelayConfig {
        sources: vec![source],
        listen: None,
        bind_address,
        metrics: None,
        otlp: None,
        slow_tick: DEFAULT_SLOW_TICK,
        otlp_interval: DEFAULT_OTLP_INTERVAL,
        web: Some(port),
        tls: None,
        unprefixed: true,
        who: "typhon-live web".into(),
        capture: None,
    };
    Ok(typhon_live_relay::serve::run(&relay, duration)?)
}

/// Runs `typhon-live web`.
pub fn run(options: WebOptions) -> Result<(), CliError> {
    serve(
        &options.addr,
        options.port,
        options.bind_address,
        options.duration,
    )
}
