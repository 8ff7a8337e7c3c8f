//! What a scraper is served over HTTP: `/metrics`, as an
//! [`axum`](typhon_live_http::axum) router, in the text format its
//! `Accept` header asks for ([`negotiate`]). The server itself, with its
//! bounds on every connection, is `typhon-live-http`'s ([`serve`]).

use std::net::TcpListener;
use std::sync::Arc;

use typhon_live_http::axum::http::{header, HeaderMap, StatusCode};
use typhon_live_http::axum::response::IntoResponse;
use typhon_live_http::axum::routing::get;
use typhon_live_http::axum::Router;
use typhon_live_http::{bearer, Limits};
use typhon_live_remote::rustls;
use typhon_live_remote::token::Token;

use crate::metrics::{Format, Metrics};

/// The routes: `GET /metrics`; any other path is 404, any other method
/// 405.
pub fn app(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(move |headers: HeaderMap| async move {
                let accepted = headers.get_all(header::ACCEPT).iter();
                let format = negotiate(accepted.filter_map(|value| value.to_str().ok()));
                // Encoding many sources' series takes a while: off the
                // thread that serves every other connection.
                let metrics = Arc::clone(&metrics);
                match tokio::task::spawn_blocking(move || metrics.encode_as(format)).await {
                    Ok(text) => {
                        ([(header::CONTENT_TYPE, format.content_type())], text).into_response()
                    }
                    Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                }
            }),
        )
        .fallback(|| async { (StatusCode::NOT_FOUND, "the metrics are at /metrics\n") })
}

/// The format that `Accept` header values ask for: OpenMetrics when one
/// names it (version 1.0.0, or none) with a weight at least that of
/// Prometheus's text format 0.0.4 (`text/plain`, `text/*`, `*/*`), as
/// Prometheus's client libraries choose; otherwise, and for no header or
/// one that names neither, the text format, which every scraper reads.
pub fn negotiate<'a>(accept: impl IntoIterator<Item = &'a str>) -> Format {
    let (mut openmetrics, mut text) = (0.0f32, 0.0f32);
    for range in accept.into_iter().flat_map(|value| value.split(',')) {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let (mut version, mut weight) = (None, 1.0f32);
        for parameter in parts {
            let Some((key, value)) = parameter.split_once('=') else {
                continue;
            };
            let value = value.trim().trim_matches('"');
            match key.trim().to_ascii_lowercase().as_str() {
                "version" => version = Some(value.to_owned()),
                // An unreadable weight counts as none: not chosen for it.
                "q" => weight = value.parse::<f32>().map_or(0.0, |q| q.clamp(0.0, 1.0)),
                _ => {}
            }
        }
        let version = version.as_deref();
        match media.as_str() {
            "application/openmetrics-text" if matches!(version, None | Some("1.0.0")) => {
                openmetrics = openmetrics.max(weight)
            }
            "text/plain" if matches!(version, None | Some("0.0.4")) => text = text.max(weight),
            "text/*" | "*/*" => text = text.max(weight),
            _ => {}
        }
    }
    if openmetrics > 0.0 && openmetrics >= text {
        Format::OpenMetrics
    } else {
        Format::Text004
    }
}

/// Serves [`app`] on `listener` until the process ends: over TLS, to
/// scrapers that give the token as a bearer token, if `security` is
/// given; `secured_routes` too (the relay's `POST /capture`), only then.
pub fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    security: Option<(Arc<rustls::ServerConfig>, Token)>,
    secured_routes: Option<Router>,
) {
    let (app, tls) = match security {
        None => (app(metrics), None),
        Some((tls, token)) => {
            let app = match secured_routes {
                Some(routes) => app(metrics).merge(routes),
                None => app(metrics),
            };
            (bearer::require(app, token), Some(tls))
        }
    };
    if let Err(e) = typhon_live_http::serve(listener, app, Limits::default(), tls) {
        eprintln!("typhon-live relay: /metrics is not served: {e}");
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    use super::*;

    fn ask(request: &[u8]) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let metrics = Arc::new(Metrics::new());
        std::thread::spawn(move || serve(listener, metrics, None, None));
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let _ = stream.write_all(request);
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    }

    /// What Prometheus 2.42 sends.
    const PROMETHEUS: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

    #[test]
    fn metrics_are_served_and_anything_else_is_named() {
        let asked = |accept: &str| {
            let request =
                format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{accept}Connection: close\r\n\r\n");
            ask(request.as_bytes())
        };
        let ok = asked(&format!("Accept: {PROMETHEUS}\r\n"));
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        let openmetrics = Format::OpenMetrics.content_type();
        assert!(ok.contains(openmetrics) && ok.ends_with("# EOF\n"), "{ok}");
        // A counter's family is named with its `_total` in the text
        // format, without it in OpenMetrics.
        assert!(ok.contains("# TYPE typhon_otlp_dropped counter\n"), "{ok}");
        for plain in [asked(""), asked("Accept: */*\r\n")] {
            assert!(plain.starts_with("HTTP/1.1 200 OK\r\n"), "{plain}");
            assert!(plain.contains("text/plain; version=0.0.4"), "{plain}");
            assert!(!plain.contains("# EOF"), "{plain}");
            assert!(
                plain.contains("# TYPE typhon_otlp_dropped_total counter\n"),
                "{plain}"
            );
        }
        let lost = ask(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(
            lost.starts_with("HTTP/1.1 404") && lost.ends_with("/metrics\n"),
            "{lost}"
        );
        let post = b"POST /metrics HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert!(ask(post).starts_with("HTTP/1.1 405"));
        let mut huge = b"GET /metrics HTTP/1.1\r\n".to_vec();
        huge.extend(std::iter::repeat_n(b'x', 100_000));
        assert!(ask(&huge).starts_with("HTTP/1.1 431"));
    }

    #[test]
    fn the_format_is_the_one_asked_for() {
        let of = |accept: &[&str]| negotiate(accept.iter().copied());
        assert_eq!(of(&[PROMETHEUS]), Format::OpenMetrics);
        assert_eq!(of(&[]), Format::Text004);
        assert_eq!(of(&["*/*"]), Format::Text004);
        assert_eq!(of(&["text/plain"]), Format::Text004);
        assert_eq!(of(&["application/json"]), Format::Text004);
        assert_eq!(of(&["Application/OpenMetrics-Text"]), Format::OpenMetrics);
        // Weights decide, and a tie goes to OpenMetrics.
        let weighed = ["text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5"];
        assert_eq!(of(&weighed), Format::Text004);
        assert_eq!(
            of(&["text/plain, application/openmetrics-text"]),
            Format::OpenMetrics
        );
        // Only the OpenMetrics version encoded here; an unreadable weight
        // or a zero one does not choose it.
        assert_eq!(
            of(&["application/openmetrics-text;version=0.0.1"]),
            Format::Text004
        );
        assert_eq!(of(&["application/openmetrics-text;q=x"]), Format::Text004);
        assert_eq!(of(&["application/openmetrics-text;q=0"]), Format::Text004);
        // Several headers are one list; junk is passed over.
        assert_eq!(
            of(&[";;,=", "application/openmetrics-text; q=\"1\""]),
            Format::OpenMetrics
        );
    }
}
