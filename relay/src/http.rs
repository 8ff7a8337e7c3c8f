//! The `/metrics` endpoint: just enough HTTP/1.1 for a scraper. One
//! request per connection, answered and closed; a request head over 8 KiB
//! or slower than 2 s is refused, so a client cannot hold memory or the
//! endpoint.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::metrics::Metrics;

/// The largest request head read.
const MAX_HEAD: usize = 8 << 10;
/// How long a client has to send its request and take the answer.
const CLIENT_TIME: Duration = Duration::from_secs(2);
/// OpenMetrics text, which Prometheus asks for and reads.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Answers scrapes on `listener` until the process ends.
pub fn serve(listener: TcpListener, metrics: Arc<Metrics>) {
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => answer(stream, &metrics),
            // A client that gave up between its connect and our accept.
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn answer(mut stream: TcpStream, metrics: &Metrics) {
    let _ = stream.set_read_timeout(Some(CLIENT_TIME));
    let _ = stream.set_write_timeout(Some(CLIENT_TIME));
    let (status, body) = match read_head(&mut stream) {
        Ok(head) => route(&head, metrics),
        Err(why) => ("400 Bad Request", format!("{why}\n")),
    };
    let content_type = if status.starts_with("200") {
        CONTENT_TYPE
    } else {
        "text/plain; charset=utf-8"
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()));
    // Closing with unread request bytes would reset the connection and
    // could lose the answer: take what is left first, within bounds.
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut rest = [0u8; 4096];
    for _ in 0..16 {
        if matches!(stream.read(&mut rest), Ok(0) | Err(_)) {
            break;
        }
    }
}

/// The request line and headers, up to the blank line.
fn read_head(stream: &mut TcpStream) -> Result<String, &'static str> {
    let started = Instant::now();
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return Err("request head over 8 KiB");
        }
        if started.elapsed() > CLIENT_TIME {
            return Err("request not sent within 2 s");
        }
        match stream.read(&mut buf) {
            Ok(0) => return Err("connection closed before the request ended"),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(_) => return Err("request not sent within 2 s"),
        }
    }
    String::from_utf8(head).map_err(|_| "request head is not UTF-8")
}

fn route(head: &str, metrics: &Metrics) -> (&'static str, String) {
    let mut words = head.lines().next().unwrap_or("").split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET", "/metrics") => ("200 OK", metrics.encode()),
        ("GET", _) => ("404 Not Found", "the metrics are at /metrics\n".into()),
        _ => (
            "405 Method Not Allowed",
            "only GET /metrics is served\n".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(request: &[u8]) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let metrics = Arc::new(Metrics::new());
        std::thread::spawn(move || serve(listener, metrics));
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
        let ok = ask(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains(CONTENT_TYPE) && ok.ends_with("# EOF\n"), "{ok}");
        assert!(ask(b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(ask(b"POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        let mut huge = b"GET /metrics HTTP/1.1\r\n".to_vec();
        huge.extend(std::iter::repeat_n(b'x', 10_000));
        assert!(ask(&huge).starts_with("HTTP/1.1 400"));
    }
}
