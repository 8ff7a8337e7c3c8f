//! The relay's settings: flags over an optional JSON file over defaults.
//!
//! ```json
//! {
//!   "sources": { "server": "10.0.0.5:9100", "client": "127.0.0.1:9101" },
//!   "listen": 9200,
//!   "bind_address": "127.0.0.1",
//!   "metrics": "127.0.0.1:9464",
//!   "otlp": "https://collector.example:4318",
//!   "otlp_headers": { "authorization": "Bearer ..." },
//!   "otlp_ca": "/etc/typhon/collector-ca.pem",
//!   "otlp_compression": "gzip",
//!   "otlp_timeout_s": 10,
//!   "slow_tick_ms": 100,
//!   "otlp_interval_s": 5,
//!   "web": 9300,
//!   "capture": "captures",
//!   "capture_on": ["tick > 100ms"],
//!   "capture_options": { "before": "5s" },
//!   "capture_memory": "512MiB"
//! }
//! ```
//!
//! Every key is optional; an unknown key is an error naming it. A source
//! given by flag replaces the file's of the same name. OpenTelemetry's
//! `OTEL_EXPORTER_OTLP_*` variables come between the file and the flags
//! ([`otlp::settings`](typhon_live_monitoring::otlp::settings)).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::capture::{CaptureConfig, DEFAULT_MEMORY};
use crate::error::RelayError;
use crate::source::Source;
use typhon_live_monitoring::otlp::settings::{Collector, OtelEnv, OtlpLayer};
use typhon_live_recorder::Options;

/// Ticks longer than this are exported over OTLP, by default.
pub const DEFAULT_SLOW_TICK: Duration = Duration::from_millis(100);
/// OTLP metric exports are this far apart, by default.
pub const DEFAULT_OTLP_INTERVAL: Duration = Duration::from_secs(5);
/// Sources one relay merges at most: the merged stream tells them apart
/// by 8 bits above each source's allocation site ids.
pub const MAX_SOURCES: usize = 255;

/// One layer of settings: a file's, or the flags'. `None` leaves the
/// setting to the layer below.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    /// Sources by name.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// Viewers' port.
    pub listen: Option<u16>,
    /// The address viewers are served on.
    pub bind_address: Option<IpAddr>,
    /// Prometheus's `/metrics` address.
    pub metrics: Option<String>,
    /// The OTLP/HTTP collector: the URL the signals' paths go under.
    pub otlp: Option<String>,
    /// Headers sent with every export (a collector's credentials).
    #[serde(default)]
    pub otlp_headers: BTreeMap<String, String>,
    /// A PEM file of the certificates to trust for an `https://`
    /// collector, instead of the Web PKI's.
    pub otlp_ca: Option<PathBuf>,
    /// `gzip` or `none`.
    pub otlp_compression: Option<String>,
    /// Seconds an export may take, retries included.
    pub otlp_timeout_s: Option<f64>,
    /// The slow-tick threshold, ms.
    pub slow_tick_ms: Option<f64>,
    /// Seconds between OTLP metric exports.
    pub otlp_interval_s: Option<f64>,
    /// The browser viewer's port.
    pub web: Option<u16>,
    /// Serve viewers over TLS with a token, on loopback too (beyond it
    /// they always are).
    pub tls: Option<bool>,
    /// The TLS certificate chain, PEM (else one is made at start).
    pub tls_cert: Option<PathBuf>,
    /// The TLS certificate's key, PEM.
    pub tls_key: Option<PathBuf>,
    /// A file whose first line is the viewers' token (else
    /// `TYPHON_LIVE_TOKEN`, else one is drawn at start and printed).
    pub token_file: Option<PathBuf>,
    /// Names viewers reach the relay by, for a certificate made at start.
    #[serde(default)]
    pub public_hosts: Vec<String>,
    /// The token from the environment (`TYPHON_LIVE_TOKEN`): never from
    /// the file.
    #[serde(skip)]
    pub token: Option<String>,
    /// The flight recorder's directory: set, each source is recorded
    /// (docs/RECORDER.md).
    pub capture: Option<PathBuf>,
    /// Its triggers.
    #[serde(default)]
    pub capture_on: Vec<String>,
    /// Its other options by key (`keep`, `before`, ...).
    #[serde(default)]
    pub capture_options: BTreeMap<String, String>,
    /// The memory every source's recorder may hold together (`512MiB`).
    pub capture_memory: Option<String>,
}

impl Layer {
    /// The layer's OTLP settings, checked; an error names the setting.
    fn otlp(&self) -> Result<OtlpLayer, String> {
        Ok(OtlpLayer {
            endpoint: self
                .otlp
                .as_deref()
                .map(|url| OtlpLayer::endpoint("otlp", url))
                .transpose()?,
            headers: self
                .otlp_headers
                .iter()
                .map(|(name, value)| OtlpLayer::header("otlp_headers", &format!("{name}={value}")))
                .collect::<Result<_, _>>()?,
            timeout: self
                .otlp_timeout_s
                .map(|s| OtlpLayer::seconds("otlp_timeout_s", s))
                .transpose()?,
            compression: self
                .otlp_compression
                .as_deref()
                .map(|c| c.parse().map_err(|e| format!("otlp_compression: {e}")))
                .transpose()?,
            ca: self.otlp_ca.clone(),
        })
    }

    /// The layer of a JSON file; an error names the file and what is
    /// wrong, where.
    pub fn read(path: &Path) -> Result<Layer, RelayError> {
        let text = std::fs::read_to_string(path).map_err(|e| RelayError::ConfigUnreadable {
            path: path.into(),
            reason: e.to_string(),
        })?;
        serde_json::from_str(&text).map_err(|e| RelayError::BadConfig {
            path: path.into(),
            reason: e.to_string(),
        })
    }
}

/// `text` as the address to serve on: `HOST:PORT`, the host a name or an
/// IP address; an error says what is wrong.
pub fn socket_address(text: &str) -> Result<SocketAddr, String> {
    let mut resolved = text
        .to_socket_addrs()
        .map_err(|e| format!("{text:?} is not HOST:PORT ({e})"))?;
    resolved
        .next()
        .ok_or_else(|| format!("{text:?} resolves to no address"))
}

/// How the viewers' port is served beyond loopback (or on it, if asked):
/// TLS, then a token (typhon_live_remote).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tls {
    /// The certificate chain and key files; `None` makes a self-signed
    /// certificate at start.
    pub identity: Option<(PathBuf, PathBuf)>,
    /// Where the token comes from.
    pub token: TokenFrom,
    /// Names for a certificate made at start, besides the bound address,
    /// `localhost` and `127.0.0.1`.
    pub public_hosts: Vec<String>,
}

/// Where the viewers' token comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum TokenFrom {
    /// The first line of a file.
    File(PathBuf),
    /// `TYPHON_LIVE_TOKEN`.
    Environment(String),
    /// Drawn at start, and printed.
    Generated,
}

impl std::fmt::Debug for TokenFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenFrom::File(path) => write!(f, "File({path:?})"),
            // The token itself never goes into a log.
            TokenFrom::Environment(_) => f.write_str("Environment(..)"),
            TokenFrom::Generated => f.write_str("Generated"),
        }
    }
}

/// What the relay runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct RelayConfig {
    /// The sources, by name.
    pub sources: Vec<Source>,
    /// Viewers' port (0 picks one), if viewers are served.
    pub listen: Option<u16>,
    /// The address viewers are served on.
    pub bind_address: IpAddr,
    /// Prometheus's `/metrics` address, if served.
    pub metrics: Option<SocketAddr>,
    /// What is exported over OTLP/HTTP, and where, if anything.
    pub otlp: Option<Collector>,
    /// Ticks longer than this are exported as traces (overruns always).
    pub slow_tick: Duration,
    /// How often the metrics go to the collector.
    pub otlp_interval: Duration,
    /// The browser viewer's port (0 picks one), if it is served (beyond
    /// loopback over HTTPS).
    pub web: Option<u16>,
    /// TLS and a token on the viewers' port, if they are served so.
    pub tls: Option<Tls>,
    /// Lanes and gauges named as their source names them, not
    /// `SOURCE/NAME`: for one source shown as itself (`typhon-live web`,
    /// `demo --web`).
    pub unprefixed: bool,
    /// What the relay calls itself in what it prints.
    pub who: String,
    /// The flight recorder per source, if asked for.
    pub capture: Option<CaptureConfig>,
}

impl RelayConfig {
    /// `top` over the OpenTelemetry environment `env` over `below` over
    /// the defaults; an error says which setting is wrong and why.
    pub fn layered(below: Layer, env: &OtelEnv, top: Layer) -> Result<RelayConfig, String> {
        let otlp = Collector::layered(&below.otlp()?, env, &top.otlp()?)?;
        let bind_address = top
            .bind_address
            .or(below.bind_address)
            .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let tls = tls(&below, &top, bind_address)?;
        let capture = capture(&below, &top)?;
        let mut sources = below.sources;
        sources.extend(top.sources);
        if sources.is_empty() {
            return Err(
                "no source: give --source NAME=HOST:PORT, or sources in a --config file".into(),
            );
        }
        if sources.len() > MAX_SOURCES {
            return Err(format!(
                "{} sources: a relay merges at most {MAX_SOURCES}; relay the rest through a second relay",
                sources.len()
            ));
        }
        let sources = sources
            .into_iter()
            .map(|(name, addr)| format!("{name}={addr}").parse())
            .collect::<Result<Vec<Source>, String>>()?;
        // `value` in units of `seconds` each.
        let positive = |what: &str, value: Option<f64>, seconds: f64, default| match value {
            None => Ok(default),
            Some(v) if v > 0.0 && v.is_finite() => Ok(Duration::from_secs_f64(v * seconds)),
            Some(v) => Err(format!("{what} {v} is not a positive number")),
        };
        // Beyond loopback the browser viewer is served over HTTPS (TLS is
        // on there).
        let web = top.web.or(below.web);
        Ok(RelayConfig {
            sources,
            listen: top.listen.or(below.listen),
            bind_address,
            metrics: top
                .metrics
                .or(below.metrics)
                .map(|text| socket_address(&text).map_err(|e| format!("metrics: {e}")))
                .transpose()?,
            otlp,
            slow_tick: positive(
                "slow_tick_ms",
                top.slow_tick_ms.or(below.slow_tick_ms),
                1e-3,
                DEFAULT_SLOW_TICK,
            )?,
            otlp_interval: match (top.otlp_interval_s, env.interval) {
                (None, Some(interval)) => interval,
                (top_s, _) => positive(
                    "otlp_interval_s",
                    top_s.or(below.otlp_interval_s),
                    1.0,
                    DEFAULT_OTLP_INTERVAL,
                )?,
            },
            web,
            tls,
            unprefixed: false,
            who: "typhon-live relay".into(),
            capture,
        })
    }
}

/// The flight recorder's settings, `top` over `below`: a layer's
/// triggers replace the lower one's, its options replace theirs key by
/// key. An error names the option and where in its value it went wrong.
fn capture(below: &Layer, top: &Layer) -> Result<Option<CaptureConfig>, String> {
    let Some(dir) = top.capture.clone().or_else(|| below.capture.clone()) else {
        if !top.capture_on.is_empty() || !below.capture_on.is_empty() {
            return Err("capture_on: the triggers need a directory (--capture DIR)".into());
        }
        return Ok(None);
    };
    let mut options = Options::default();
    let triggers = if top.capture_on.is_empty() {
        &below.capture_on
    } else {
        &top.capture_on
    };
    for (key, value) in below.capture_options.iter().chain(&top.capture_options) {
        options.set(key, value).map_err(|e| e.to_string())?;
    }
    for trigger in triggers {
        options.set("on", trigger).map_err(|e| e.to_string())?;
    }
    options.check().map_err(|e| e.to_string())?;
    let memory = match top
        .capture_memory
        .as_ref()
        .or(below.capture_memory.as_ref())
    {
        Some(text) => typhon_live_recorder::options::size(text)
            .map_err(|e| format!("capture_memory:\n{}", e.pointed(text)))?,
        None => DEFAULT_MEMORY,
    };
    Ok(Some(CaptureConfig {
        dir,
        options,
        memory,
    }))
}

/// TLS on the viewers' port: asked for, implied by a certificate or a
/// token file, and always beyond loopback (`"tls": false` there is an
/// error).
fn tls(below: &Layer, top: &Layer, bind_address: IpAddr) -> Result<Option<Tls>, String> {
    let cert = top.tls_cert.clone().or_else(|| below.tls_cert.clone());
    let key = top.tls_key.clone().or_else(|| below.tls_key.clone());
    let token_file = top.token_file.clone().or_else(|| below.token_file.clone());
    let asked = top.tls.or(below.tls);
    let beyond = !bind_address.is_loopback();
    if beyond && asked == Some(false) {
        return Err(format!(
            "tls false with --bind-address {bind_address}: beyond loopback, viewers are served \
             over TLS with a token only"
        ));
    }
    let identity = match (cert, key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => return Err("--tls-cert and --tls-key go together".into()),
    };
    let on = asked.unwrap_or(false) || beyond || identity.is_some() || token_file.is_some();
    if !on {
        return Ok(None);
    }
    let token = match (
        token_file,
        top.token.clone().or_else(|| below.token.clone()),
    ) {
        (Some(path), _) => TokenFrom::File(path),
        (None, Some(token)) => TokenFrom::Environment(token),
        (None, None) => TokenFrom::Generated,
    };
    let mut public_hosts = below.public_hosts.clone();
    public_hosts.extend(top.public_hosts.iter().cloned());
    Ok(Some(Tls {
        identity,
        token,
        public_hosts,
    }))
}

/// A browser viewer served without the relay's TLS (`typhon-live web`,
/// `view --web`, `demo --web`) is served on loopback only: beyond it, the
/// page and its stream would go unencrypted to anyone on the network,
/// with the token in every URL. An error says so, and what to do instead.
pub fn web_on_loopback(address: IpAddr) -> Result<(), String> {
    if address.is_loopback() {
        Ok(())
    } else {
        Err(format!(
            "--bind-address {address}: this browser viewer is served on loopback only; from \
             another machine, run typhon-live relay --web PORT --bind-address {address} (HTTPS, \
             with a token), or forward the port (ssh -L PORT:127.0.0.1:PORT)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(json: &str) -> Layer {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_the_defaults() {
        let below = file(
            r#"{"sources": {"a": "127.0.0.1:1", "b": "127.0.0.1:2"}, "listen": 9200,
                "metrics": "127.0.0.1:9464", "slow_tick_ms": 250, "otlp": "http://127.0.0.1:4318"}"#,
        );
        let top = Layer {
            sources: [("b".to_owned(), "127.0.0.1:3".to_owned())].into(),
            listen: Some(0),
            ..Layer::default()
        };
        let config = RelayConfig::layered(below, &OtelEnv::default(), top).unwrap();
        let sources: Vec<(&str, &str)> = config
            .sources
            .iter()
            .map(|s| (s.name.as_str(), s.addr.as_str()))
            .collect();
        assert_eq!(sources, [("a", "127.0.0.1:1"), ("b", "127.0.0.1:3")]);
        assert_eq!(config.listen, Some(0));
        assert_eq!(config.metrics, Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(config.slow_tick, Duration::from_millis(250));
        assert_eq!(config.otlp_interval, DEFAULT_OTLP_INTERVAL);
        assert_eq!(config.bind_address, IpAddr::V4(Ipv4Addr::LOCALHOST));
        let metrics = config.otlp.unwrap().metrics.unwrap();
        assert_eq!(metrics.url, "http://127.0.0.1:4318/v1/metrics");
    }

    #[test]
    fn what_is_wrong_is_named() {
        let unknown = serde_json::from_str::<Layer>(r#"{"sources": {}, "listne": 1}"#);
        assert!(unknown.unwrap_err().to_string().contains("listne"));
        let none = RelayConfig::layered(Layer::default(), &OtelEnv::default(), Layer::default());
        assert!(none.unwrap_err().contains("no source"));
        let slow = file(r#"{"sources": {"a": "127.0.0.1:1"}, "slow_tick_ms": -1}"#);
        let slow = RelayConfig::layered(slow, &OtelEnv::default(), Layer::default()).unwrap_err();
        assert!(slow.contains("slow_tick_ms"), "{slow}");
        let port_only = file(r#"{"sources": {"a": "127.0.0.1:1"}, "metrics": "9464"}"#);
        let port_only =
            RelayConfig::layered(port_only, &OtelEnv::default(), Layer::default()).unwrap_err();
        assert!(
            port_only.contains("metrics: \"9464\" is not HOST:PORT"),
            "{port_only}"
        );
        let crowd: BTreeMap<String, String> = (0..=MAX_SOURCES)
            .map(|i| (format!("s{i}"), format!("127.0.0.1:{}", 1000 + i)))
            .collect();
        let crowded = Layer {
            sources: crowd,
            ..Layer::default()
        };
        let crowded = RelayConfig::layered(Layer::default(), &OtelEnv::default(), crowded);
        assert!(crowded
            .unwrap_err()
            .contains("256 sources: a relay merges at most 255"));
        let source_port = file(r#"{"sources": {"a": "9100"}}"#);
        let source_port =
            RelayConfig::layered(source_port, &OtelEnv::default(), Layer::default()).unwrap_err();
        assert!(
            source_port.contains("\"a=9100\" is not NAME=HOST:PORT"),
            "{source_port}"
        );
        for good in ["a=localhost:9100", "a=10.0.0.5:9100", "a=[::1]:9100"] {
            assert!(good.parse::<Source>().is_ok(), "{good}");
        }
        for bad in ["a", "=h:1", "a=:1", "a=h:", "a=h:65536", "a=h:x"] {
            assert!(bad.parse::<Source>().is_err(), "{bad}");
        }
        let web = file(r#"{"sources": {"a": "127.0.0.1:1"}, "web": 0, "bind_address": "0.0.0.0"}"#);
        // Beyond loopback the relay's browser viewer is served over HTTPS.
        let web = RelayConfig::layered(web, &OtelEnv::default(), Layer::default()).unwrap();
        assert!(web.web.is_some() && web.tls.is_some());
        let alone = web_on_loopback("0.0.0.0".parse().unwrap()).unwrap_err();
        assert!(
            alone
                .contains("--bind-address 0.0.0.0: this browser viewer is served on loopback only"),
            "{alone}"
        );
        let web = file(r#"{"sources": {"a": "127.0.0.1:1"}, "web": 0, "bind_address": "::1"}"#);
        assert_eq!(
            RelayConfig::layered(web, &OtelEnv::default(), Layer::default())
                .unwrap()
                .web,
            Some(0)
        );
        let otlp = file(r#"{"sources": {"a": "127.0.0.1:1"}, "otlp": "x:4318"}"#);
        let otlp = RelayConfig::layered(otlp, &OtelEnv::default(), Layer::default()).unwrap_err();
        assert!(
            otlp.contains("otlp \"x:4318\": give http:// or https://"),
            "{otlp}"
        );
        let gzip = file(r#"{"sources": {"a": "127.0.0.1:1"}, "otlp_compression": "zip"}"#);
        let gzip = RelayConfig::layered(gzip, &OtelEnv::default(), Layer::default()).unwrap_err();
        assert!(gzip.contains("otlp_compression: \"zip\""), "{gzip}");
    }

    #[test]
    fn viewers_beyond_loopback_are_served_over_tls_with_a_token() {
        let source = r#""sources": {"a": "127.0.0.1:1"}"#;
        let layered = |json: &str, top: Layer| {
            RelayConfig::layered(
                file(&format!("{{{source}, {json}}}")),
                &OtelEnv::default(),
                top,
            )
        };
        // Loopback: plain unless asked.
        assert_eq!(
            layered(r#""listen": 0"#, Layer::default()).unwrap().tls,
            None
        );
        let asked = layered(r#""tls": true"#, Layer::default())
            .unwrap()
            .tls
            .unwrap();
        assert_eq!(asked.token, TokenFrom::Generated);
        assert_eq!(asked.identity, None);
        // Beyond it: always, the token from the environment if no file.
        let env = Layer {
            token: Some("from-env".into()),
            ..Layer::default()
        };
        let beyond = layered(r#""bind_address": "0.0.0.0""#, env)
            .unwrap()
            .tls
            .unwrap();
        assert_eq!(beyond.token, TokenFrom::Environment("from-env".into()));
        let file_wins = layered(
            r#""bind_address": "0.0.0.0", "token_file": "/etc/token""#,
            Layer {
                token: Some("from-env".into()),
                ..Layer::default()
            },
        );
        assert_eq!(
            file_wins.unwrap().tls.unwrap().token,
            TokenFrom::File("/etc/token".into())
        );
        let refused = layered(
            r#""bind_address": "0.0.0.0", "tls": false"#,
            Layer::default(),
        );
        assert!(refused
            .unwrap_err()
            .contains("beyond loopback, viewers are served over TLS"));
        let half = layered(r#""tls_cert": "/etc/cert.pem""#, Layer::default());
        assert!(half
            .unwrap_err()
            .contains("--tls-cert and --tls-key go together"));
        // The token never shows in a debug print.
        assert_eq!(
            format!("{:?}", TokenFrom::Environment("s3cret".into())),
            "Environment(..)"
        );
    }
}
