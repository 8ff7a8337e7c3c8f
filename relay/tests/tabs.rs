//! Browser tabs as viewers, through the real server and a real WebSocket
//! client (tungstenite's): each tab gets its start, then every frame with
//! its own sequence numbers, and reads the same events as the others.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use tungstenite::client::IntoClientRequest;
use tungstenite::Message;
use typhon_live_core::{Decoder, Event, LaneInfo, LaneKind};
use typhon_live_http::{guard, serve, Guard, Limits};
use typhon_live_relay::fanout::{self, Input};
use typhon_live_relay::merge::Merger;
use typhon_live_relay::tabs;
use typhon_live_relay::update::Update;
use typhon_live_tests::{own, Owned};

/// What a tab's stream held: its frame kinds in order, sequence gaps
/// after its Init, the spans of its Blocks, and decode errors.
#[derive(Debug, Default)]
struct Seen {
    kinds: Vec<&'static str>,
    gaps: u64,
    spans: usize,
    errors: usize,
}

fn read_stream(bytes: &[u8]) -> Seen {
    let mut buf = vec![0u8; 16 << 20];
    let mut decoder = Decoder::new(&mut buf);
    let mut seen = Seen::default();
    let mut expected = None;
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = decoder.feed(rest);
        rest = &rest[n..];
        loop {
            match decoder.next() {
                Ok(Some(frame)) => {
                    let kind = match own(&frame) {
                        Ok(Owned::Init { .. }) => "Init",
                        Ok(Owned::Block { events, .. }) => {
                            seen.spans += events
                                .iter()
                                .filter(|(_, e)| matches!(e, Event::Span { .. }))
                                .count();
                            "Block"
                        }
                        Ok(Owned::Definitions { .. }) => "Definitions",
                        Ok(Owned::CatchUp { .. }) => "CatchUp",
                        Ok(_) => "other",
                        Err(_) => {
                            seen.errors += 1;
                            "damaged"
                        }
                    };
                    if frame.is_sequenced() {
                        if let Some(want) = expected {
                            seen.gaps += u64::from(frame.seq.wrapping_sub(want));
                        }
                        expected = Some(frame.seq.wrapping_add(1));
                    } else {
                        expected = Some(frame.seq);
                    }
                    seen.kinds.push(kind);
                }
                Ok(None) => break,
                Err(_) => seen.errors += 1,
            }
        }
    }
    seen
}

/// A relay's merging thread with the tabs' route behind a guard: the
/// inbox, the address and the token.
fn start() -> (std::sync::mpsc::SyncSender<Input>, SocketAddr, String) {
    let (inbox, inputs) = fanout::inbox();
    let merger = Merger::new(&["s".into()], 1, 0);
    std::thread::spawn(move || fanout::merge(merger, inputs, Default::default()));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let token = guard::new_token().unwrap();
    let app = Guard::new(&token, addr).protect(tabs::routes(inbox.clone()));
    std::thread::spawn(move || serve(listener, app, Limits::default()));
    (inbox, addr, token)
}

fn tab(addr: SocketAddr, token: &str) -> tungstenite::WebSocket<TcpStream> {
    let mut request = format!("ws://{addr}/{token}/stream")
        .into_client_request()
        .unwrap();
    let origin = format!("http://{addr}").parse().unwrap();
    request.headers_mut().insert("Origin", origin);
    let stream = TcpStream::connect(addr).unwrap();
    let (socket, _) = tungstenite::client(request, stream).unwrap();
    socket
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    socket
}

/// Every byte a tab received until `done` holds for it (at most 20 s).
fn read_until(
    socket: &mut tungstenite::WebSocket<TcpStream>,
    done: impl Fn(&Seen) -> bool,
) -> Vec<u8> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut bytes = Vec::new();
    while Instant::now() < deadline && !done(&read_stream(&bytes)) {
        match socket.read() {
            Ok(Message::Binary(data)) => bytes.extend_from_slice(&data),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("{e}"),
        }
    }
    bytes
}

#[test]
fn each_tab_gets_its_start_then_every_frame_with_its_own_numbers() {
    let (inbox, addr, token) = start();
    let send = |update| inbox.send(Input::Update { source: 0, update }).unwrap();
    send(Update::Session {
        id: 5,
        names: vec![(0, "main".into()), (1, "work".into())],
        lanes: vec![LaneInfo {
            id: 0,
            name: 0,
            kind: LaneKind::Main,
        }],
    });
    let mut first = tab(addr, &token);
    let started = read_until(&mut first, |seen| seen.kinds.contains(&"CatchUp"));
    assert_eq!(read_stream(&started).kinds[..2], ["Init", "CatchUp"]);
    // The second joins later: its start holds what the first was told.
    let spans = |from: u64| Update::Events {
        events: (from..from + 1000)
            .map(|i| {
                let span = Event::Span {
                    start: i * 1000,
                    duration: 500,
                    name: 1,
                    id: (i + 1) as u32,
                    parent: 0,
                    arg: None,
                };
                (0, span)
            })
            .collect(),
        drops: Vec::new(),
        unread: 0,
        unix_offset: 0,
    };
    send(spans(0));
    let mut second = tab(addr, &token);
    let second_start = read_until(&mut second, |seen| seen.kinds.contains(&"CatchUp"));
    for batch in 1..20 {
        send(spans(batch * 1000));
    }
    let all = |seen: &Seen| seen.spans >= 20_000;
    let mut first_bytes = started;
    first_bytes.extend(read_until(&mut first, |seen| seen.spans >= 20_000));
    let first_seen = read_stream(&first_bytes);
    assert!(all(&first_seen), "{first_seen:?}");
    assert_eq!((first_seen.gaps, first_seen.errors), (0, 0));

    let mut second_bytes = second_start;
    second_bytes.extend(read_until(&mut second, |seen| seen.spans >= 19_000));
    let second_seen = read_stream(&second_bytes);
    assert_eq!(second_seen.kinds[..2], ["Init", "CatchUp"]);
    assert_eq!(second_seen.spans, 19_000, "every Block after it joined");
    assert_eq!((second_seen.gaps, second_seen.errors), (0, 0));
}
