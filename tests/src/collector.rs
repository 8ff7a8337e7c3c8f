//! An OTLP/HTTP collector for the tests, on 127.0.0.1: plain or TLS
//! (rustls), HTTP/1.1 with keep-alive, gzip bodies unpacked, and each
//! request answered as the test scripts it (a 503 with `Retry-After`, say).
//! It keeps every request with the time it came; the tests decode the
//! bodies with `opentelemetry-proto`'s types.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the collector answers the `n`th request (from 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// 200.
    Ok,
    /// 200 with this body (an export's partial success, say).
    OkWith(Vec<u8>),
    /// 503, with this `Retry-After` value if any.
    Unavailable(Option<&'static str>),
}

/// A request the collector got.
#[derive(Clone, Debug)]
pub struct Request {
    /// When it had come whole.
    pub at: Instant,
    /// The request target (`/v1/metrics`).
    pub path: String,
    /// The headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body, unpacked if it came gzipped.
    pub body: Vec<u8>,
    /// Whether it came with `Content-Encoding: gzip`.
    pub gzipped: bool,
}

impl Request {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Script = dyn Fn(usize) -> Answer + Send + Sync;

/// The collector: its port, and what it got.
pub struct Collector {
    /// Its port on 127.0.0.1.
    pub port: u16,
    received: Arc<Mutex<Vec<Request>>>,
}

impl Collector {
    /// A collector answering every request 200.
    pub fn start(tls: Option<Arc<rustls::ServerConfig>>) -> Collector {
        Collector::scripted(tls, |_| Answer::Ok)
    }

    /// A collector answering as `script` says.
    pub fn scripted(
        tls: Option<Arc<rustls::ServerConfig>>,
        script: impl Fn(usize) -> Answer + Send + Sync + 'static,
    ) -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let (store, script): (_, Arc<Script>) = (Arc::clone(&received), Arc::new(script));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (store, script, tls) = (Arc::clone(&store), Arc::clone(&script), tls.clone());
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    match tls {
                        None => serve(stream, &store, &*script),
                        Some(config) => {
                            let Ok(connection) = rustls::ServerConnection::new(config) else {
                                return;
                            };
                            serve(
                                rustls::StreamOwned::new(connection, stream),
                                &store,
                                &*script,
                            )
                        }
                    }
                });
            }
        });
        Collector { port, received }
    }

    /// What it got so far.
    pub fn received(&self) -> Vec<Request> {
        self.received.lock().unwrap().clone()
    }

    /// Forgets what it got (a benchmark's requests would fill memory).
    pub fn forget(&self) {
        self.received.lock().unwrap().clear();
    }

    /// What it got, once `enough` says so, within `wait`.
    pub fn wait_for(&self, wait: Duration, enough: impl Fn(&[Request]) -> bool) -> Vec<Request> {
        let deadline = Instant::now() + wait;
        loop {
            let got = self.received();
            if enough(&got) {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "the collector did not get what was awaited within {wait:?}: {} requests, to {:?}",
                got.len(),
                got.iter().map(|r| &r.path).collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Requests on one connection until it closes.
fn serve(stream: impl Read + Write, store: &Mutex<Vec<Request>>, script: &Script) {
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader) {
        let answer = {
            let mut store = store.lock().unwrap();
            store.push(request);
            script(store.len() - 1)
        };
        let (head, body) = match answer {
            Answer::Ok => ("HTTP/1.1 200 OK\r\n".to_owned(), Vec::new()),
            Answer::OkWith(body) => ("HTTP/1.1 200 OK\r\n".to_owned(), body),
            Answer::Unavailable(None) => (
                "HTTP/1.1 503 Service Unavailable\r\n".to_owned(),
                Vec::new(),
            ),
            Answer::Unavailable(Some(after)) => (
                format!("HTTP/1.1 503 Service Unavailable\r\nRetry-After: {after}\r\n"),
                Vec::new(),
            ),
        };
        let mut answer = format!(
            "{head}Content-Type: application/x-protobuf\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        answer.extend(body);
        let stream = reader.get_mut();
        if stream
            .write_all(&answer)
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
    }
}

fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok().filter(|&n| n > 0)?;
    let path = line.split(' ').nth(1)?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())?;
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    let gzipped = headers
        .iter()
        .any(|(n, v)| n == "content-encoding" && v.eq_ignore_ascii_case("gzip"));
    if gzipped {
        let mut unpacked = Vec::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_end(&mut unpacked)
            .expect("a gzip body that unpacks");
        body = unpacked;
    }
    Some(Request {
        at: Instant::now(),
        path,
        headers,
        body,
        gzipped,
    })
}
