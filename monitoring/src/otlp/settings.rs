//! Where and how the OTLP exports go: the config file's settings, under
//! OpenTelemetry's `OTEL_EXPORTER_OTLP_*` environment variables, under
//! the flags.
//!
//! Each layer is checked as it is read, so that an error names the file
//! key, variable or flag that is wrong. Within the environment a signal's
//! own variable (`OTEL_EXPORTER_OTLP_TRACES_HEADERS`) wins over the
//! generic one, as the OpenTelemetry specification says; the flags win
//! over both. A signal is exported when some layer gives it an endpoint:
//! `OTEL_EXPORTER_OTLP_ENDPOINT` alone is enough.

use std::path::PathBuf;
use std::time::Duration;

/// How long an export may take, retries included, by default (the
/// specification's 10 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How a request body is sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// As it is.
    #[default]
    None,
    /// gzip, with `Content-Encoding: gzip`.
    Gzip,
}

impl std::str::FromStr for Compression {
    type Err = String;

    fn from_str(text: &str) -> Result<Compression, String> {
        match text {
            "gzip" => Ok(Compression::Gzip),
            "none" => Ok(Compression::None),
            _ => Err(format!("{text:?} is neither gzip nor none")),
        }
    }
}

/// One layer's OTLP settings, checked; `None` leaves a setting to the
/// layers below.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OtlpLayer {
    /// The URL that signal paths go under (`/v1/metrics`), or, for a
    /// signal's own layer, the signal's whole URL.
    pub endpoint: Option<String>,
    /// Request headers, added to the lower layers' (a name given again
    /// replaces theirs).
    pub headers: Vec<(String, String)>,
    /// How long an export may take, retries included.
    pub timeout: Option<Duration>,
    /// How bodies are sent.
    pub compression: Option<Compression>,
    /// A PEM file of the certificates to trust, instead of the Web PKI's.
    pub ca: Option<PathBuf>,
}

impl OtlpLayer {
    /// `endpoint`, checked: an error names `what` gave it.
    pub fn endpoint(what: &str, endpoint: &str) -> Result<String, String> {
        let uri: ureq::http::Uri = endpoint
            .parse()
            .map_err(|e| format!("{what} {endpoint:?} is not a URL ({e})"))?;
        match uri.scheme_str() {
            Some("http" | "https") if uri.host().is_some_and(|h| !h.is_empty()) => {
                Ok(endpoint.to_owned())
            }
            Some("http" | "https") => Err(format!("{what} {endpoint:?} has no host")),
            _ => Err(format!(
                "{what} {endpoint:?}: give http:// or https:// (OTLP/HTTP; its port is 4318)"
            )),
        }
    }

    /// A header given as `NAME=VALUE`, checked.
    pub fn header(what: &str, text: &str) -> Result<(String, String), String> {
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| format!("{what} {text:?} is not NAME=VALUE"))?;
        checked_header(what, name.trim(), value.trim())
    }

    /// Seconds as a timeout, checked.
    pub fn seconds(what: &str, seconds: f64) -> Result<Duration, String> {
        if seconds > 0.0 && seconds.is_finite() {
            Ok(Duration::from_secs_f64(seconds))
        } else {
            Err(format!("{what} {seconds} is not a positive number"))
        }
    }
}

/// A header that HTTP can carry; an error names `what` gave it.
fn checked_header(what: &str, name: &str, value: &str) -> Result<(String, String), String> {
    ureq::http::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{what}: {name:?} is not a header name"))?;
    ureq::http::HeaderValue::from_str(value)
        .map_err(|_| format!("{what}: the value of {name} is not a header value"))?;
    Ok((name.to_owned(), value.to_owned()))
}

/// The signals the relay exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// The relay's metrics, every interval.
    Metrics,
    /// Slow ticks' span trees.
    Traces,
}

impl Signal {
    /// Its name in OpenTelemetry's terms: `metrics`, `traces`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Metrics => "metrics",
            Signal::Traces => "traces",
        }
    }

    /// Where the signal goes under a generic endpoint.
    pub fn path(self) -> &'static str {
        match self {
            Signal::Metrics => "/v1/metrics",
            Signal::Traces => "/v1/traces",
        }
    }

    /// Its part of a signal's variable names.
    fn variable(self) -> &'static str {
        match self {
            Signal::Metrics => "METRICS_",
            Signal::Traces => "TRACES_",
        }
    }
}

/// The OpenTelemetry environment, as far as the relay's exports go.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OtelEnv {
    /// `OTEL_EXPORTER_OTLP_*`.
    pub all: OtlpLayer,
    /// `OTEL_EXPORTER_OTLP_METRICS_*`.
    pub metrics: OtlpLayer,
    /// `OTEL_EXPORTER_OTLP_TRACES_*`.
    pub traces: OtlpLayer,
    /// `OTEL_METRIC_EXPORT_INTERVAL`.
    pub interval: Option<Duration>,
    /// Protocol variables that name other than `http/protobuf`, as
    /// `(variable, value, its signal if not both)`: an error only if
    /// that signal is exported.
    pub protocols: Vec<(String, String, Option<Signal>)>,
}

impl OtelEnv {
    /// The process's environment.
    pub fn of_process() -> Result<OtelEnv, String> {
        OtelEnv::read(|name| std::env::var(name).ok())
    }

    /// The variables `var` gives; an error names the variable and what
    /// is wrong with it.
    pub fn read(var: impl Fn(&str) -> Option<String>) -> Result<OtelEnv, String> {
        let mut env = OtelEnv::default();
        for signal in [None, Some(Signal::Metrics), Some(Signal::Traces)] {
            let prefix = format!("OTEL_EXPORTER_OTLP_{}", signal.map_or("", Signal::variable));
            let get = |name: &str| {
                let name = format!("{prefix}{name}");
                var(&name)
                    .filter(|v| !v.trim().is_empty())
                    .map(|v| (name, v.trim().to_owned()))
            };
            let mut layer = OtlpLayer::default();
            if let Some((name, value)) = get("ENDPOINT") {
                layer.endpoint = Some(OtlpLayer::endpoint(&name, &value)?);
            }
            if let Some((name, value)) = get("HEADERS") {
                layer.headers = headers(&name, &value)?;
            }
            if let Some((name, value)) = get("TIMEOUT") {
                layer.timeout = Some(milliseconds(&name, &value)?);
            }
            if let Some((name, value)) = get("COMPRESSION") {
                layer.compression = Some(value.parse().map_err(|e| format!("{name}: {e}"))?);
            }
            if let Some((_, value)) = get("CERTIFICATE") {
                layer.ca = Some(value.into());
            }
            if let Some((name, value)) = get("PROTOCOL") {
                if value != "http/protobuf" {
                    env.protocols.push((name, value, signal));
                }
            }
            match signal {
                None => env.all = layer,
                Some(Signal::Metrics) => env.metrics = layer,
                Some(Signal::Traces) => env.traces = layer,
            }
        }
        if let Some(value) = var("OTEL_METRIC_EXPORT_INTERVAL").filter(|v| !v.trim().is_empty()) {
            env.interval = Some(milliseconds("OTEL_METRIC_EXPORT_INTERVAL", value.trim())?);
        }
        Ok(env)
    }

    fn signal(&self, signal: Signal) -> &OtlpLayer {
        match signal {
            Signal::Metrics => &self.metrics,
            Signal::Traces => &self.traces,
        }
    }
}

/// `OTEL_EXPORTER_OTLP_HEADERS`: `name=value,name=value`, each value
/// percent-decoded (the W3C Baggage format the specification uses).
fn headers(what: &str, text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("{what}: {pair:?} is not name=value"))?;
            let value = percent_decoded(value.trim()).ok_or_else(|| {
                format!(
                    "{what}: the value of {} is not percent-encoded UTF-8",
                    name.trim()
                )
            })?;
            checked_header(what, name.trim(), &value)
        })
        .collect()
}

fn percent_decoded(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

fn milliseconds(what: &str, text: &str) -> Result<Duration, String> {
    match text.parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(format!(
            "{what}={text:?} is not a positive whole number of milliseconds"
        )),
    }
}

/// Where and how one signal is exported.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The signal's whole URL.
    pub url: String,
    /// Request headers besides the content's.
    pub headers: Vec<(String, String)>,
    /// How long an export may take, retries included.
    pub timeout: Duration,
    /// How bodies are sent.
    pub compression: Compression,
    /// The certificates to trust, if not the Web PKI's.
    pub ca: Option<PathBuf>,
}

/// What the relay exports, and where.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Collector {
    /// The metrics' target, if they are exported.
    pub metrics: Option<Target>,
    /// The slow ticks' target, if they are exported.
    pub traces: Option<Target>,
}

impl Collector {
    /// The file's settings under the environment's under the flags';
    /// `None` if no layer gives an endpoint. An error names a protocol
    /// variable the relay cannot speak, for a signal it would export.
    pub fn layered(
        file: &OtlpLayer,
        env: &OtelEnv,
        flags: &OtlpLayer,
    ) -> Result<Option<Collector>, String> {
        let target = |signal: Signal| -> Result<Option<Target>, String> {
            // Highest first; `true` for a signal's own layer, whose
            // endpoint is the whole URL.
            let layers = [
                (flags, false),
                (env.signal(signal), true),
                (&env.all, false),
                (file, false),
            ];
            let Some(url) = layers.iter().find_map(|(layer, own)| {
                let endpoint = layer.endpoint.as_deref()?;
                Some(if *own {
                    endpoint.to_owned()
                } else {
                    format!("{}{}", endpoint.trim_end_matches('/'), signal.path())
                })
            }) else {
                return Ok(None);
            };
            if let Some((name, value, _)) = env
                .protocols
                .iter()
                .find(|(_, _, only)| only.is_none_or(|only| only == signal))
            {
                return Err(format!(
                    "{name}={value:?}: the relay exports OTLP/HTTP with protobuf bodies \
                     (http/protobuf) only"
                ));
            }
            let mut headers: Vec<(String, String)> = Vec::new();
            for (layer, _) in layers.iter().rev() {
                for (name, value) in &layer.headers {
                    headers.retain(|(known, _)| !known.eq_ignore_ascii_case(name));
                    headers.push((name.clone(), value.clone()));
                }
            }
            Ok(Some(Target {
                url,
                headers,
                timeout: layers
                    .iter()
                    .find_map(|(layer, _)| layer.timeout)
                    .unwrap_or(DEFAULT_TIMEOUT),
                compression: layers
                    .iter()
                    .find_map(|(layer, _)| layer.compression)
                    .unwrap_or_default(),
                ca: layers.iter().find_map(|(layer, _)| layer.ca.clone()),
            }))
        };
        let collector = Collector {
            metrics: target(Signal::Metrics)?,
            traces: target(Signal::Traces)?,
        };
        Ok((collector.metrics.is_some() || collector.traces.is_some()).then_some(collector))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Result<OtelEnv, String> {
        OtelEnv::read(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_endpoint_variable_alone_exports_both_signals_with_the_defaults() {
        let env = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example:4318/")]).unwrap();
        let collector = Collector::layered(&OtlpLayer::default(), &env, &OtlpLayer::default())
            .unwrap()
            .unwrap();
        let metrics = collector.metrics.unwrap();
        assert_eq!(metrics.url, "https://otel.example:4318/v1/metrics");
        assert_eq!(metrics.timeout, DEFAULT_TIMEOUT);
        assert_eq!(metrics.compression, Compression::None);
        assert_eq!(
            collector.traces.unwrap().url,
            "https://otel.example:4318/v1/traces"
        );
        let nothing = OtelEnv::default();
        let none = Collector::layered(&OtlpLayer::default(), &nothing, &OtlpLayer::default());
        assert_eq!(none, Ok(None));
    }

    #[test]
    fn a_signals_variables_win_over_the_generic_ones_and_flags_over_both() {
        let env = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:4318/custom",
            ),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20a,x-team=core",
            ),
            (
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                "Authorization=Bearer b",
            ),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "gzip"),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ca.pem"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "15000"),
        ])
        .unwrap();
        assert_eq!(env.interval, Some(Duration::from_secs(15)));
        let file = OtlpLayer {
            endpoint: Some("http://file:4318".into()),
            compression: Some(Compression::None),
            ..OtlpLayer::default()
        };
        let collector = Collector::layered(&file, &env, &OtlpLayer::default())
            .unwrap()
            .unwrap();
        let (metrics, traces) = (collector.metrics.unwrap(), collector.traces.unwrap());
        assert_eq!(metrics.url, "http://generic:4318/v1/metrics");
        assert_eq!(traces.url, "http://traces:4318/custom");
        assert_eq!(metrics.compression, Compression::Gzip);
        assert_eq!(traces.compression, Compression::None);
        assert_eq!(metrics.timeout, Duration::from_millis(2500));
        assert_eq!(metrics.ca, Some("/etc/ca.pem".into()));
        let header = |target: &Target, name: &str| {
            target
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(header(&metrics, "authorization").unwrap(), "Bearer a");
        assert_eq!(header(&traces, "authorization").unwrap(), "Bearer b");
        assert_eq!(header(&traces, "x-team").unwrap(), "core");

        let flags = OtlpLayer {
            endpoint: Some("https://flag:4318".into()),
            headers: vec![OtlpLayer::header("--otlp-header", "x-team=edge").unwrap()],
            timeout: Some(Duration::from_secs(1)),
            ..OtlpLayer::default()
        };
        let collector = Collector::layered(&file, &env, &flags).unwrap().unwrap();
        let traces = collector.traces.unwrap();
        assert_eq!(traces.url, "https://flag:4318/v1/traces");
        assert_eq!(traces.timeout, Duration::from_secs(1));
        assert_eq!(header(&traces, "x-team").unwrap(), "edge");
        assert_eq!(header(&traces, "authorization").unwrap(), "Bearer b");
    }

    #[test]
    fn what_is_wrong_is_named() {
        let wrong = |vars: &[(&str, &str)]| env(vars).unwrap_err();
        let timeout = wrong(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "10s")]);
        assert!(
            timeout.contains("OTEL_EXPORTER_OTLP_TIMEOUT=\"10s\""),
            "{timeout}"
        );
        let endpoint = wrong(&[("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "grpc://x:4317")]);
        assert!(
            endpoint.contains("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT \"grpc://x:4317\""),
            "{endpoint}"
        );
        let headers = wrong(&[("OTEL_EXPORTER_OTLP_HEADERS", "a=1,novalue")]);
        assert!(
            headers.contains("\"novalue\" is not name=value"),
            "{headers}"
        );
        let encoded = wrong(&[("OTEL_EXPORTER_OTLP_HEADERS", "a=%zz")]);
        assert!(encoded.contains("the value of a"), "{encoded}");
        let compression = wrong(&[("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd")]);
        assert!(
            compression.contains("\"zstd\" is neither gzip nor none"),
            "{compression}"
        );
        let header = OtlpLayer::header("--otlp-header", "bad name=1").unwrap_err();
        assert!(
            header.contains("\"bad name\" is not a header name"),
            "{header}"
        );
        let no_host = OtlpLayer::endpoint("--otlp", "http:///v1").unwrap_err();
        assert!(
            no_host.contains("is not a URL") || no_host.contains("no host"),
            "{no_host}"
        );

        // A protocol the relay cannot speak is an error for the signals it
        // would export, and nothing otherwise.
        let grpc = env(&[
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
            (
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                "http://m:4318/v1/metrics",
            ),
        ])
        .unwrap();
        let metrics_only = Collector::layered(&OtlpLayer::default(), &grpc, &OtlpLayer::default());
        assert!(metrics_only.unwrap().unwrap().traces.is_none());
        let grpc = env(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://m:4317"),
        ])
        .unwrap();
        let refused = Collector::layered(&OtlpLayer::default(), &grpc, &OtlpLayer::default());
        assert!(refused
            .unwrap_err()
            .contains("OTEL_EXPORTER_OTLP_PROTOCOL=\"grpc\": the relay exports OTLP/HTTP"),);
    }
}
