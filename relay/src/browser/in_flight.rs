//! What a WebSocket reader has been sent and has not yet said it read
//! (docs/FORMAT.md, "Carrying a stream"; [`typhon_live_reader::carry`]).
//! A browser takes in every message as it comes, whether its page keeps
//! up or not, so the socket's own backpressure never reaches the sender:
//! the reader's `read N` messages do. A sender sends only while fewer
//! than its window of bytes are unread: [`LIVE_WINDOW`] for the tabs'
//! writer, whose frames wait in its queue and may be dropped there
//! (the tabs' stream), and [`FILE_WINDOW`] for a recorded file's.

use std::time::Duration;

use typhon_live_http::axum::extract::ws::{CloseFrame, Message, WebSocket};
use typhon_live_reader::carry::{said_read, MAX_SAID, SAY_READ_EVERY};

/// A live tab's window. Bytes in flight wait in the browser, out of the
/// relay's reach: a page that reads slowly (its thread sharing a core
/// with the rasterizer, say) is this much behind, and no more: about
/// 50 ms of a stream of 1 M spans a second (about 5.4 bytes a span).
pub const LIVE_WINDOW: u64 = 256 << 10;

/// A recorded file's window: no frame is late, and a page that reads a
/// file fast never waits for its own receipts; a page that does not
/// holds no more than this of it.
pub const FILE_WINDOW: u64 = 4 << 20;

const _: () = assert!(LIVE_WINDOW >= 4 * SAY_READ_EVERY);

/// The largest message a reader may send, `read N` or a close with its
/// reason (a control frame holds at most 125 bytes): anything larger
/// ends the connection before it is held.
pub(crate) const MAX_MESSAGE: usize = 128;

const _: () = assert!(MAX_SAID <= MAX_MESSAGE);

/// The bytes sent on one connection, those its reader said it read, and
/// how many may be in flight.
#[derive(Debug)]
pub(crate) struct InFlight {
    sent: u64,
    read: u64,
    window: u64,
}

/// What a reader's message meant.
pub(crate) enum Heard {
    /// It said what it read, or sent something not asked for (ignored).
    Nothing,
    /// It closed the connection, or the connection failed.
    Gone,
    /// It said something no reader says; the connection was closed,
    /// saying why.
    Misspoke,
}

impl InFlight {
    /// Nothing sent yet, and no more than `window` bytes to be in flight.
    pub(crate) fn new(window: u64) -> InFlight {
        InFlight {
            sent: 0,
            read: 0,
            window,
        }
    }

    /// Whether the sender may send more.
    pub(crate) fn has_room(&self) -> bool {
        self.sent - self.read < self.window
    }

    /// `bytes` more were sent.
    pub(crate) fn sent(&mut self, bytes: usize) {
        self.sent += bytes as u64;
    }

    /// Takes what `socket` received (`socket.recv()`): a count of the
    /// bytes read, which must lie between the last one and what was sent,
    /// opens room; a text that is not one, or a count out of those
    /// bounds, closes the connection with code 1008 and says which.
    pub(crate) async fn hear(
        &mut self,
        socket: &mut WebSocket,
        received: Option<Result<Message, typhon_live_http::axum::Error>>,
    ) -> Heard {
        let text = match received {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Close(_)) | Err(_)) | None => return Heard::Gone,
            // Pings are answered by the socket itself; binary messages
            // are not asked for.
            Some(Ok(_)) => return Heard::Nothing,
        };
        let why = match said_read(&text) {
            Some(read) if (self.read..=self.sent).contains(&read) => {
                self.read = read;
                return Heard::Nothing;
            }
            Some(read) => format!(
                "read {read} is outside {}..={} (said before, sent)",
                self.read, self.sent
            ),
            None => "a reader sends only `read N`".to_owned(),
        };
        // Policy violation.
        close(socket, 1008, &why).await;
        Heard::Misspoke
    }
}

/// How long a closing socket waits for its reader's close.
const CLOSING: Duration = Duration::from_secs(5);

/// Closes `socket` with `code` and `reason` (cut to what a close holds),
/// then reads until the reader closes too, for at most [`CLOSING`]. A
/// socket dropped while the reader's `read N` messages sit unread in it
/// is reset, and a reset can lose the close, with its reason, on the way
/// to the reader.
pub(crate) async fn close(socket: &mut WebSocket, code: u16, reason: &str) {
    // A control frame holds 125 bytes: the code's two, then the reason.
    let mut cut = reason.len().min(123);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    let frame = CloseFrame {
        code,
        reason: reason[..cut].into(),
    };
    if socket.send(Message::Close(Some(frame))).await.is_err() {
        return;
    }
    let _ = tokio::time::timeout(CLOSING, async {
        while let Some(Ok(_)) = socket.recv().await {}
    })
    .await;
}
