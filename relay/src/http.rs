//! What the relay serves over HTTP: `/metrics`, for a scraper, as an
//! [`axum`](typhon_live_http::axum) router. The server itself, with its bounds on every
//! connection, is `typhon-live-http`'s ([`serve`]).

use std::net::TcpListener;
use std::sync::Arc;

use typhon_live_http::axum::http::{header, StatusCode};
use typhon_live_http::axum::response::IntoResponse;
use typhon_live_http::axum::routing::get;
use typhon_live_http::axum::Router;
use typhon_live_http::{bearer, Limits};
use typhon_live_remote::rustls;
use typhon_live_remote::token::Token;

use crate::metrics::Metrics;

/// OpenMetrics text, which Prometheus asks for and reads.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The relay's routes: `GET /metrics`; any other path is 404, any other
/// method 405.
pub fn app(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(move || async move {
                // Encoding many sources' series takes a while: off the
                // thread that serves every other connection.
                let metrics = Arc::clone(&metrics);
                match tokio::task::spawn_blocking(move || metrics.encode()).await {
                    Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
                    Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                }
            }),
        )
        .fallback(|| async { (StatusCode::NOT_FOUND, "the metrics are at /metrics\n") })
}

/// Serves [`app`] on `listener` until the process ends: over TLS, to
/// scrapers that give the token as a bearer token, if `security` is
/// given.
pub fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    security: Option<(Arc<rustls::ServerConfig>, Token)>,
) {
    let (app, tls) = match security {
        None => (app(metrics), None),
        Some((tls, token)) => (bearer::require(app(metrics), token), Some(tls)),
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
        std::thread::spawn(move || serve(listener, metrics, None));
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let _ = stream.write_all(request);
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    }

    #[test]
    fn metrics_are_served_and_anything_else_is_named() {
        let ok = ask(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains(CONTENT_TYPE) && ok.ends_with("# EOF\n"), "{ok}");
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
}
