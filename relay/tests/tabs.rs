//! Browser tabs as viewers, through the real server and a real WebSocket
//! client (tungstenite's): each tab gets its start, then every frame with
//! its own sequence numbers, and reads the same events as the others.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tungstenite::client::IntoClientRequest;
use tungstenite::Message;
use typhon_live_core::{Decoder, Event, LaneInfo, LaneKind};
use typhon_live_http::{guard, serve, Guard, Limits};
use typhon_live_reader::carry::ReadReceipt;
use typhon_live_reader::owned::Update;
use typhon_live_relay::browser::tabs;
use typhon_live_relay::fanout::{self, Input};
use typhon_live_relay::merge::Merger;
use typhon_live_tests::{own, Owned};

/// What a tab's stream held: its frame kinds in order, sequence gaps
/// after its Init, the spans of its Blocks, and decode errors; read as
/// the bytes come, and said read as a page says it.
#[derive(Debug)]
struct Seen {
    receipt: ReadReceipt,
    kinds: Vec<&'static str>,
    gaps: u64,
    spans: usize,
    errors: usize,
    expected: Option<u32>,
    /// Bytes not yet a whole frame.
    pending: Vec<u8>,
    buf: Vec<u8>,
}

/// A frame, as far as [`Seen`] counts it.
struct Counted {
    kind: &'static str,
    seq: u32,
    sequenced: bool,
    spans: usize,
}

impl Seen {
    fn new() -> Self {
        Seen {
            receipt: ReadReceipt::default(),
            kinds: Vec::new(),
            gaps: 0,
            spans: 0,
            errors: 0,
            expected: None,
            pending: Vec::new(),
            buf: vec![0u8; 16 << 20],
        }
    }

    /// Takes in the next bytes of the stream; returns what to tell the
    /// server, when it is due.
    fn take(&mut self, bytes: &[u8]) -> Option<String> {
        self.receipt.took(bytes.len());
        self.pending.extend_from_slice(bytes);
        let mut counted = Vec::new();
        let mut decoder = Decoder::new(&mut self.buf);
        let fed = decoder.feed(&self.pending);
        let mut used = 0;
        loop {
            match decoder.next() {
                Ok(Some(frame)) => {
                    used = frame.offset as usize + frame.wire_len();
                    counted.push(count(&frame));
                }
                Ok(None) => break,
                Err(_) => self.errors += 1,
            }
        }
        assert_eq!(fed, self.pending.len(), "less than two frames pending");
        self.pending.drain(..used);
        for frame in counted {
            if frame.kind == "damaged" {
                self.errors += 1;
            }
            self.spans += frame.spans;
            if frame.sequenced {
                if let Some(want) = self.expected {
                    self.gaps += u64::from(frame.seq.wrapping_sub(want));
                }
                self.expected = Some(frame.seq.wrapping_add(1));
            } else {
                self.expected = Some(frame.seq);
            }
            self.kinds.push(frame.kind);
        }
        self.receipt.due()
    }

    fn blocks(&self) -> u64 {
        self.kinds.iter().filter(|k| **k == "Block").count() as u64
    }
}

fn count(frame: &typhon_live_core::Frame<'_>) -> Counted {
    let (kind, spans) = match own(frame) {
        Ok(Owned::Init { .. }) => ("Init", 0),
        Ok(Owned::Block { events, .. }) => (
            "Block",
            events
                .iter()
                .filter(|(_, e)| matches!(e, Event::Span { .. }))
                .count(),
        ),
        Ok(Owned::Definitions { .. }) => ("Definitions", 0),
        Ok(Owned::CatchUp { .. }) => ("CatchUp", 0),
        Ok(_) => ("other", 0),
        Err(_) => ("damaged", 0),
    };
    Counted {
        kind,
        seq: frame.seq,
        sequenced: frame.is_sequenced(),
        spans,
    }
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
    std::thread::spawn(move || serve(listener, app, Limits::default(), None));
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

/// Reads a tab into `seen`, saying what it read, until `done` holds for
/// it (at most 20 s).
fn read_until(
    socket: &mut tungstenite::WebSocket<TcpStream>,
    seen: &mut Seen,
    done: impl Fn(&Seen) -> bool,
) {
    // Bounded by silence, not by the whole read: a debug build under
    // wine on a loaded machine reads 25 MB in over 20 s, still reading.
    const SILENCE: Duration = Duration::from_secs(20);
    let mut deadline = Instant::now() + SILENCE;
    while Instant::now() < deadline && !done(seen) {
        match socket.read() {
            Ok(Message::Binary(data)) => {
                deadline = Instant::now() + SILENCE;
                if let Some(said) = seen.take(&data) {
                    socket.send(Message::text(said)).unwrap();
                }
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if typhon_live_tests::timed_out(&e) => {}
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn each_tab_gets_its_start_then_every_frame_with_its_own_numbers() {
    let (inbox, addr, token) = start();
    let send = |update| inbox.send(Input::Update { source: 0, update }).unwrap();
    send(session());
    let mut first = tab(addr, &token);
    let mut first_seen = Seen::new();
    read_until(&mut first, &mut first_seen, |seen| {
        seen.kinds.contains(&"CatchUp")
    });
    assert_eq!(first_seen.kinds[..2], ["Init", "CatchUp"]);
    // The second joins after a Block: it gets every Block after it.
    send(spans(0, 1000, false));
    let mut second = tab(addr, &token);
    let mut second_seen = Seen::new();
    read_until(&mut second, &mut second_seen, |seen| {
        seen.kinds.contains(&"CatchUp")
    });
    for batch in 1..20 {
        send(spans(batch, 1000, false));
    }
    read_until(&mut first, &mut first_seen, |seen| seen.spans >= 20_000);
    assert_eq!(first_seen.spans, 20_000);
    assert_eq!((first_seen.gaps, first_seen.errors), (0, 0));
    read_until(&mut second, &mut second_seen, |seen| seen.spans >= 19_000);
    assert_eq!(second_seen.kinds[..2], ["Init", "CatchUp"]);
    assert_eq!(second_seen.spans, 19_000, "every Block after it joined");
    assert_eq!((second_seen.gaps, second_seen.errors), (0, 0));
}

fn session() -> Update {
    Update::Session {
        process: String::new(),
        id: 5,
        names: vec![(0, "main".into()), (1, "work".into())],
        lanes: vec![LaneInfo {
            id: 0,
            name: 0,
            kind: LaneKind::Main,
        }],
    }
}

/// Batch `batch` of `count` spans of name 1; with `args` that do not
/// pack (8 bytes a span on the wire), or none.
fn spans(batch: u64, count: u64, args: bool) -> Update {
    let events = (0..count)
        .map(|i| {
            let n = batch * count + i;
            let span = Event::Span {
                start: n * 100,
                duration: 50 + i % 7,
                name: 1,
                id: (i + 1) as u32,
                parent: 0,
                arg: args.then(|| n.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            };
            (0, span)
        })
        .collect();
    Update::Events {
        events,
        drops: Vec::new(),
        unread: 0,
        unix_offset: 0,
        packed: None,
    }
}

#[test]
fn a_tab_that_falls_behind_loses_whole_blocks_counted_exactly_and_no_other_does() {
    let (inbox, addr, token) = start();
    let send = |update| inbox.send(Input::Update { source: 0, update }).unwrap();
    send(session());
    let (mut slow, mut fast) = (tab(addr, &token), tab(addr, &token));
    let (mut slow_seen, mut fast_seen) = (Seen::new(), Seen::new());
    read_until(&mut slow, &mut slow_seen, |seen| {
        seen.kinds.contains(&"CatchUp")
    });
    read_until(&mut fast, &mut fast_seen, |seen| {
        seen.kinds.contains(&"CatchUp")
    });
    // About 25 MB of Blocks, well past a queue and the sockets' buffers:
    // the fast tab reads them as they come, the slow one not at all. Each
    // batch (one Block) waits until the fast tab has read the ones before
    // it, so that it is never behind however slow its reading is (a debug
    // build under wine reads about 130 000 spans a second).
    const BATCHES: u64 = 600;
    const BATCH: u64 = 5_000;
    let read = Arc::new(AtomicUsize::new(0));
    let reader = {
        let read = Arc::clone(&read);
        std::thread::spawn(move || {
            let all = (BATCHES * BATCH) as usize;
            read_until(&mut fast, &mut fast_seen, |seen| {
                read.store(seen.spans, Ordering::Release);
                seen.spans >= all
            });
            fast_seen
        })
    };
    for batch in 0..BATCHES {
        let sent = (batch * BATCH) as usize;
        let deadline = Instant::now() + Duration::from_secs(20);
        while read.load(Ordering::Acquire) < sent && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        send(spans(batch, BATCH, true));
    }
    let fast_seen = reader.join().unwrap();
    assert_eq!(
        fast_seen.spans,
        (BATCHES * BATCH) as usize,
        "the fast tab got all"
    );
    assert_eq!((fast_seen.gaps, fast_seen.errors), (0, 0));
    // The slow one reads now: what was dropped for it shows as gaps once
    // a frame after the drops arrives.
    send(Update::Events {
        events: vec![(0, Event::TickStart { time: 1, tick: 1 })],
        drops: Vec::new(),
        unread: 0,
        unix_offset: 0,
        packed: None,
    });
    let blocks = fast_seen.blocks();
    read_until(&mut slow, &mut slow_seen, |seen| {
        seen.blocks() + seen.gaps > blocks
    });
    assert_eq!(slow_seen.errors, 0, "whole frames only");
    assert!(slow_seen.gaps > 100, "it lost {} frames", slow_seen.gaps);
    // Every frame it did not get is a gap in its numbers: exact.
    assert_eq!(slow_seen.blocks() + slow_seen.gaps, blocks + 1);
}
