//! The browser viewer's server, through the real binary: its rules
//! refusing what breaks them (the token, `Host`, the WebSocket's
//! `Origin`, an address beyond loopback), and sixteen readers of its
//! stream at once, each reading as the page does (its feed and the view
//! model): each gets the whole stream, and the source loses nothing more.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{relay_value, serve_web, spawn_demo_with, typhon, wait_for, Killed};
use tungstenite::client::IntoClientRequest;
use tungstenite::Message;
use typhon_live_model::Model;
use typhon_live_reader::carry::END_OF_FILE;
use typhon_live_relay::browser::in_flight::{FILE_WINDOW, LIVE_WINDOW};
use typhon_live_relay::browser::late::GRACE;
use typhon_live_web::feed::Feed;

/// `relay --web 0 --metrics 127.0.0.1:0` of the demo at `demo`: the
/// relay, its metrics port, the viewer's address and token.
fn relay_with_web(demo: &str) -> (Killed, u16, SocketAddr, String) {
    let mut command = typhon();
    command
        .args([
            "relay",
            "--web",
            "0",
            "--metrics",
            "127.0.0.1:0",
            "--duration",
            "90",
        ])
        .args(["--source", &format!("demo={demo}")]);
    let (relay, told) = common::spawn_telling(
        command,
        &[
            "typhon-live relay: metrics on http://",
            "typhon-live relay: browser viewer at http://",
        ],
    );
    let metrics: SocketAddr = told[0].trim_end_matches("/metrics").parse().unwrap();
    let (addr, token) = told[1].trim_end_matches('/').split_once('/').unwrap();
    (
        relay,
        metrics.port(),
        addr.parse().unwrap(),
        token.to_owned(),
    )
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
    // The page's worker, served beside it, and allowed from there only.
    let (worker, _) = ask(addr, &format!("/{token}/worker.js"), &host);
    assert!(
        worker.starts_with("http/1.1 200") && worker.contains("content-type: text/javascript"),
        "{worker}"
    );
    assert!(ok.contains("worker-src 'self';"), "{ok}");
    // No Accept-Encoding: any coding is acceptable (RFC 9110, 12.5.3).
    let bare = format!("Host: {addr}\r\n");
    let (any, body) = ask(addr, &format!("/{token}/"), &bare);
    assert!(any.starts_with("http/1.1 200"), "{any}");
    assert!(body.starts_with(&[0x1f, 0x8b]), "{any}");
    // Identity only: the file unpacked.
    let identity = format!("Host: {addr}\r\nAccept-Encoding: identity\r\n");
    let (plain, body) = ask(addr, &format!("/{token}/"), &identity);
    assert!(plain.starts_with("http/1.1 200"), "{plain}");
    assert!(!plain.contains("content-encoding"), "{plain}");
    assert!(String::from_utf8_lossy(&body).contains("<html"), "{plain}");
    let neither = format!("Host: {addr}\r\nAccept-Encoding: gzip;q=0, identity;q=0\r\n");
    let (refused, _) = ask(addr, &format!("/{token}/"), &neither);
    assert!(refused.starts_with("http/1.1 406"), "{refused}");

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

    // Without the relay's TLS, a browser viewer stays on loopback.
    let args = ["web", "127.0.0.1:9", "--bind-address", "0.0.0.0"];
    let out = typhon().args(args).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
    assert!(
        said.contains("--bind-address 0.0.0.0: this browser viewer is served on loopback only"),
        "{args:?}: {said}"
    );
}

/// A reader of the viewer's stream that reads as the page does: its feed
/// and view model.
struct Tab {
    socket: tungstenite::WebSocket<TcpStream>,
    feed: Feed,
    model: Model,
    recorder: typhon_live_recorder::Recorder,
}

/// Why a [`Tab`] stopped reading.
#[derive(Debug)]
enum Stopped {
    /// Its time was up.
    Time,
    /// Nothing came for as long as it was told to wait.
    Quiet,
    /// The stream was closed, with this close.
    Closed(Option<tungstenite::protocol::CloseFrame>),
}

impl Tab {
    fn open(addr: SocketAddr, token: &str) -> Tab {
        Tab {
            socket: socket(addr, token, &format!("http://{addr}")).unwrap(),
            feed: Feed::new(),
            model: Model::default(),
            recorder: typhon_live_recorder::Recorder::new(
                typhon_live_web::source::recorder_settings(),
                Vec::new(),
            ),
        }
    }

    /// Reads for at most `for_how_long`, until nothing came for `quiet`,
    /// or until the stream closed; says what it read, as a page does,
    /// unless `mute`.
    fn read(&mut self, for_how_long: Duration, quiet: Duration, mute: bool) -> Stopped {
        let began = Instant::now();
        let mut last = began;
        while began.elapsed() < for_how_long {
            if last.elapsed() > quiet {
                return Stopped::Quiet;
            }
            match self.socket.read() {
                Ok(Message::Binary(bytes)) => {
                    last = Instant::now();
                    let (model, recorder) = (&mut self.model, &mut self.recorder);
                    self.feed
                        .push(&bytes, model, recorder, began.elapsed(), None);
                    match self.feed.say_read() {
                        // The last may find the stream closed after a
                        // file's end.
                        Some(said) if !mute => drop(self.socket.send(Message::text(said))),
                        _ => {}
                    }
                }
                Ok(Message::Close(close)) => return Stopped::Closed(close),
                Ok(_) => {}
                Err(tungstenite::Error::Io(e)) if typhon_live_tests::timed_out(&e) => {}
                Err(e) => panic!("the stream failed: {e}"),
            }
        }
        Stopped::Time
    }

    /// Says `text` to the server.
    fn say(&mut self, text: String) {
        self.socket.send(Message::text(text)).unwrap();
    }

    /// Says something no page says, and expects the stream closed for
    /// it, with code 1008 and a reason.
    fn misspeak(&mut self, text: String) {
        self.say(text.clone());
        match self.read(Duration::from_secs(10), Duration::from_secs(10), true) {
            Stopped::Closed(Some(close)) => {
                assert_eq!(u16::from(close.code), 1008, "{text:?}: {close:?}");
                assert!(!close.reason.is_empty(), "{text:?}: no reason given");
            }
            other => panic!("{text:?} did not close the stream: {other:?}"),
        }
    }
}

/// What one reader saw in `for_how_long`: events, frames missed (each
/// a gap in the sequence numbers), frames damaged, and whether it had its
/// start (an Init). It leaves then.
fn read_as_a_page(addr: SocketAddr, token: &str, for_how_long: Duration) -> (u64, u64, u64, bool) {
    let mut tab = Tab::open(addr, token);
    let stopped = tab.read(for_how_long, for_how_long, false);
    assert!(matches!(stopped, Stopped::Time), "{stopped:?}");
    let damaged = tab.model.summary(for_how_long).frames_damaged;
    let _ = tab.socket.close(None);
    (
        tab.model.events(),
        tab.model.frames_dropped(),
        damaged,
        tab.model.session().is_some(),
    )
}

#[test]
fn sixteen_readers_each_get_the_whole_stream_or_count_what_they_lost_and_the_source_loses_nothing()
{
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
    let dropped_before = relay_value(metrics, "typhon_viewer_frames_dropped_total").unwrap();
    let readers: Vec<_> = (0..16)
        .map(|_| {
            let token = token.clone();
            std::thread::spawn(move || read_as_a_page(addr, &token, Duration::from_secs(4)))
        })
        .collect();
    let mut missed = 0;
    for (i, reader) in readers.into_iter().enumerate() {
        let (events, lost, damaged, started) = reader.join().unwrap();
        assert!(started, "reader {i} had no Init");
        assert!(events > 1_000, "reader {i} read {events} events");
        // A loss is whole frames, their numbers skipped: nothing is cut.
        assert_eq!(damaged, 0, "reader {i} read damaged frames");
        missed += lost;
    }
    assert_eq!(
        lost(),
        before,
        "the source lost events while sixteen tabs read"
    );
    // Every frame a reader missed is one the relay dropped for it, and
    // counted; it may have dropped more after a reader's last frame.
    wait_for(metrics, "typhon_viewers", |v| v == 0.0);
    let dropped = relay_value(metrics, "typhon_viewer_frames_dropped_total").unwrap();
    assert!(
        dropped - dropped_before >= missed as f64,
        "the readers missed {missed} frames, the relay dropped {}",
        dropped - dropped_before
    );
    eprintln!(
        "sixteen readers: {missed} frames missed, {} dropped",
        dropped - dropped_before
    );
}

/// `view FILE --web`: the process, the viewer's address and token.
fn view_with_web(file: &std::path::Path) -> (Killed, SocketAddr, String) {
    let (view, url) = serve_web(&["view", file.to_str().unwrap(), "--web"]);
    let url = url.strip_prefix("http://").unwrap().trim_end_matches('/');
    let (addr, token) = url.split_once('/').unwrap();
    (view, addr.parse().unwrap(), token.to_owned())
}

#[test]
fn a_file_comes_whole_to_a_reader_that_says_what_it_read_and_waits_for_one_that_does_not() {
    let stream =
        typhon_live_tests::exporter_stream(40_000, 1 << 20, typhon_live_core::Compression::Auto);
    assert!(
        stream.len() as u64 > 3 * FILE_WINDOW,
        "{} bytes",
        stream.len()
    );
    let file = common::temp("web-file.tlt");
    std::fs::write(&file, &stream).unwrap();
    let (_view, addr, token) = view_with_web(&file);

    // A page: it says what it read, and gets the whole file, then the
    // close that says the file ended.
    let mut page = Tab::open(addr, &token);
    let forever = Duration::from_secs(60);
    match page.read(forever, forever, false) {
        Stopped::Closed(Some(close)) => assert_eq!(close.reason.as_str(), END_OF_FILE),
        other => panic!("the file did not end: {other:?}"),
    }
    assert_eq!(page.feed.bytes(), stream.len() as u64);
    assert_eq!(page.model.frames_dropped(), 0);

    // A reader that says nothing gets no more than what may be in flight,
    // and more once it says what it read.
    let mut mute = Tab::open(addr, &token);
    let stopped = mute.read(forever, Duration::from_secs(2), true);
    assert!(matches!(stopped, Stopped::Quiet), "{stopped:?}");
    let held = mute.feed.bytes();
    assert!(
        (FILE_WINDOW..2 * FILE_WINDOW).contains(&held),
        "{held} bytes went out unread"
    );
    mute.say(format!("read {held}"));
    mute.read(forever, Duration::from_secs(2), true);
    let more = mute.feed.bytes() - held;
    assert!(more >= FILE_WINDOW, "{more} bytes more after saying");

    // Saying it read more than it was sent, or anything but a count,
    // ends the connection with a reason.
    for said in [format!("read {}", stream.len() * 2), "hello".to_owned()] {
        let mut liar = Tab::open(addr, &token);
        liar.read(forever, Duration::from_millis(500), true);
        liar.misspeak(said);
    }
    let _ = std::fs::remove_file(&file);
}

#[test]
fn a_tab_that_stops_reading_is_sent_no_more_than_its_window_then_counts_what_it_lost() {
    let (_demo, demo) =
        spawn_demo_with(&["--duration", "60", "--threads", "4", "--tick-rate", "240"]);
    let (_relay, metrics, addr, token) = relay_with_web(&demo);
    wait_for(metrics, "typhon_source_up{source=\"demo\"}", |v| v == 1.0);
    let lost = || relay_value(metrics, "typhon_frames_dropped_total{source=\"demo\"}");
    let before = lost();

    let mut tab = Tab::open(addr, &token);
    let second = Duration::from_secs(1);
    let stopped = tab.read(second, second, false);
    assert!(matches!(stopped, Stopped::Time), "{stopped:?}");
    assert_eq!(tab.model.frames_dropped(), 0, "a page that keeps up");

    // Unsaid, no more than the window (and the frame that filled it).
    let read = tab.feed.bytes();
    let stopped = tab.read(Duration::from_secs(30), second, true);
    assert!(matches!(stopped, Stopped::Quiet), "{stopped:?}");
    let held = tab.feed.bytes() - read;
    assert!(
        held < LIVE_WINDOW + (64 << 10),
        "{held} bytes went out unread"
    );

    // Behind for longer than its grace: said, frames come again; those
    // that waited too long were dropped whole, and the page counts them
    // from their numbers.
    std::thread::sleep(GRACE);
    tab.say(format!("read {}", tab.feed.bytes()));
    let (events, frames) = (tab.model.events(), tab.feed.frames());
    let stopped = tab.read(second, second, false);
    assert!(matches!(stopped, Stopped::Time), "{stopped:?}");
    assert!(tab.feed.frames() > frames && tab.model.events() > events);
    assert!(tab.model.frames_dropped() > 0, "no loss counted");
    assert_eq!(lost(), before, "the source lost frames for a tab");

    // A count below one said before is a lie: let go, and counted so.
    tab.misspeak("read 1".into());
    wait_for(
        metrics,
        "typhon_viewers_let_go_total{reason=\"misspoke\"}",
        |v| v == 1.0,
    );
}
