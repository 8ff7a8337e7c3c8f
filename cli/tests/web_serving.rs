//! The browser viewer's server, through the real binary: its rules
//! refusing what breaks them (the token, `Host`, the WebSocket's
//! `Origin`, an address beyond loopback), and sixteen readers of its
//! stream at once, each reading as the page does (its feed and the view
//! model): each gets the whole stream, and the source loses nothing more.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{relay_value, spawn_demo_with, wait_for, Killed, BIN};
use tungstenite::client::IntoClientRequest;
use tungstenite::Message;
use typhon_live_model::Model;
use typhon_live_web::feed::Feed;

/// `relay --web 0 --metrics 127.0.0.1:0` of the demo at `demo`: the
/// relay, its metrics port, the viewer's address and token.
fn relay_with_web(demo: &str) -> (Killed, u16, SocketAddr, String) {
    let mut relay = Command::new(BIN)
        .args([
            "relay",
            "--web",
            "0",
            "--metrics",
            "127.0.0.1:0",
            "--duration",
            "90",
        ])
        .args(["--source", &format!("demo={demo}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(relay.stdout.take().unwrap()).lines();
    let relay = Killed(relay);
    let (mut metrics, mut page) = (None, None);
    while metrics.is_none() || page.is_none() {
        let line = lines
            .next()
            .expect("the relay tells where it serves")
            .unwrap();
        if let Some(rest) = line.strip_prefix("typhon-live relay: metrics on http://") {
            let addr: SocketAddr = rest.trim_end_matches("/metrics").parse().unwrap();
            metrics = Some(addr.port());
        }
        if let Some(url) = line.strip_prefix("typhon-live relay: browser viewer at http://") {
            let (addr, token) = url.trim_end_matches('/').split_once('/').unwrap();
            page = Some((addr.parse().unwrap(), token.to_owned()));
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    let (addr, token) = page.unwrap();
    (relay, metrics.unwrap(), addr, token)
}

/// The answer to `GET path` with `headers`, head and body.
fn ask(addr: SocketAddr, path: &str, headers: &str) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let at = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(answer.len());
    let head = String::from_utf8_lossy(&answer[..at]).to_ascii_lowercase();
    (head, answer[(at + 4).min(answer.len())..].to_vec())
}

/// A WebSocket to the viewer's stream, sending `origin`.
fn socket(
    addr: SocketAddr,
    token: &str,
    origin: &str,
) -> Result<tungstenite::WebSocket<TcpStream>, tungstenite::Error> {
    let mut request = format!("ws://{addr}/{token}/stream").into_client_request()?;
    request
        .headers_mut()
        .insert("Origin", origin.parse().unwrap());
    let stream = TcpStream::connect(addr)?;
    // The handshake within 10 s (sixteen at once, on a loaded machine or
    // under wine); then short reads, so that a reader sees its deadline.
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let (socket, _) = tungstenite::client(request, stream).map_err(|e| match e {
        tungstenite::HandshakeError::Failure(e) => e,
        tungstenite::HandshakeError::Interrupted(_) => tungstenite::Error::ConnectionClosed,
    })?;
    socket
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(200)))?;
    Ok(socket)
}

#[test]
fn each_rule_of_the_viewers_server_refuses_what_breaks_it() {
    let (_demo, demo) = spawn_demo_with(&["--duration", "60", "--threads", "2"]);
    let (_relay, _, addr, token) = relay_with_web(&demo);
    let host = format!("Host: {addr}\r\nAccept-Encoding: gzip\r\n");

    let (ok, body) = ask(addr, &format!("/{token}/"), &host);
    assert!(ok.starts_with("http/1.1 200"), "{ok}");
    assert!(
        ok.contains("content-encoding: gzip") && body.starts_with(&[0x1f, 0x8b]),
        "{ok}"
    );
    assert!(
        ok.contains("content-security-policy: default-src 'self'"),
        "{ok}"
    );
    let (wasm, _) = ask(addr, &format!("/{token}/typhon_live_web_bg.wasm"), &host);
    assert!(wasm.contains("content-type: application/wasm"), "{wasm}");

    let wrong = "0".repeat(token.len());
    let (refused, _) = ask(addr, &format!("/{wrong}/"), &host);
    assert!(
        refused.starts_with("http/1.1 404"),
        "a wrong token: {refused}"
    );
    let rebound = format!(
        "Host: evil.example:{}\r\nAccept-Encoding: gzip\r\n",
        addr.port()
    );
    let (refused, _) = ask(addr, &format!("/{token}/"), &rebound);
    assert!(
        refused.starts_with("http/1.1 421"),
        "a wrong Host: {refused}"
    );

    let foreign = socket(addr, &token, "http://evil.example");
    match foreign {
        Err(tungstenite::Error::Http(answer)) => assert_eq!(answer.status(), 403),
        other => panic!("a foreign Origin was not refused: {:?}", other.map(|_| ())),
    }
    let mut own = socket(addr, &token, &format!("http://{addr}")).expect("the page's own Origin");
    let _ = own.close(None);

    for args in [
        &["web", "127.0.0.1:9", "--bind-address", "0.0.0.0"][..],
        &[
            "relay",
            "--source",
            "a=127.0.0.1:9",
            "--web",
            "0",
            "--bind-address",
            "0.0.0.0",
        ],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains("--bind-address 0.0.0.0: the browser viewer is served on loopback only"),
            "{args:?}: {said}"
        );
    }
}

/// What one reader saw in `for_how_long`: events, frames missed, and
/// whether it had its start (an Init).
fn read_as_a_page(addr: SocketAddr, token: &str, for_how_long: Duration) -> (u64, u64, bool) {
    let mut socket = socket(addr, token, &format!("http://{addr}")).unwrap();
    let (mut feed, mut model) = (Feed::new(), Model::default());
    let began = Instant::now();
    while began.elapsed() < for_how_long {
        match socket.read() {
            Ok(Message::Binary(bytes)) => {
                feed.push(&bytes, &mut model, began.elapsed());
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("the stream ended: {e}"),
        }
    }
    (
        model.events(),
        model.frames_dropped(),
        model.session().is_some(),
    )
}

#[test]
fn sixteen_readers_each_get_the_whole_stream_and_the_source_loses_nothing_more() {
    let (_demo, demo) =
        spawn_demo_with(&["--duration", "60", "--threads", "4", "--tick-rate", "240"]);
    let (_relay, metrics, addr, token) = relay_with_web(&demo);
    wait_for(metrics, "typhon_source_up{source=\"demo\"}", |v| v == 1.0);
    let lost = || {
        let series =
            |s: &str| relay_value(metrics, &format!("typhon_{s}_total{{source=\"demo\"}}"));
        (series("frames_dropped"), series("events_dropped"))
    };
    let before = lost();
    let readers: Vec<_> = (0..16)
        .map(|_| {
            let token = token.clone();
            std::thread::spawn(move || read_as_a_page(addr, &token, Duration::from_secs(4)))
        })
        .collect();
    for (i, reader) in readers.into_iter().enumerate() {
        let (events, missed, started) = reader.join().unwrap();
        assert!(started, "reader {i} had no Init");
        assert!(events > 1_000, "reader {i} read {events} events");
        assert_eq!(missed, 0, "reader {i} missed frames");
    }
    assert_eq!(
        lost(),
        before,
        "the source lost events while sixteen tabs read"
    );
}
