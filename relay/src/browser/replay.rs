//! A recorded trace for the browser viewer (`view FILE --web`): each tab
//! that opens the stream gets the file's bytes over its WebSocket, a
//! chunk at a time as the tab reads them (no more than
//! [`FILE_WINDOW`] unread, [`super::in_flight`]),
//! then a close that says the file ended ([`END_OF_FILE`], docs/FORMAT.md
//! "Carrying a stream"). The page reads them as it reads a live stream (a
//! trace file is the same byte stream), then stops there, paused at the
//! end, instead of connecting again.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use typhon_live_http::axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use typhon_live_http::axum::routing::get;
use typhon_live_http::axum::Router;

use typhon_live_reader::carry::END_OF_FILE;

use super::in_flight::{close, Heard, InFlight, FILE_WINDOW, MAX_MESSAGE};
use crate::fanout::WRITE_TIMEOUT;

/// Bytes per message: the server holds one chunk per tab, read ahead.
const CHUNK: usize = 1 << 20;

/// What a recorded stream is replayed from.
pub enum Replayed {
    /// A file, read again for each tab.
    File(PathBuf),
    /// A stream held in memory (a file given again with more in it, such
    /// as names found in debug files), and what to call it.
    Bytes {
        /// The stream.
        bytes: Arc<[u8]>,
        /// What it is, as an error names it.
        name: String,
    },
}

impl Replayed {
    fn name(&self) -> String {
        match self {
            Replayed::File(path) => path.display().to_string(),
            Replayed::Bytes { name, .. } => name.clone(),
        }
    }

    fn open(&self) -> std::io::Result<Box<dyn Read + Send>> {
        Ok(match self {
            Replayed::File(path) => Box::new(std::fs::File::open(path)?),
            Replayed::Bytes { bytes, .. } => Box::new(std::io::Cursor::new(Arc::clone(bytes))),
        })
    }
}

/// The route of the file's stream, `GET /stream` (a WebSocket). Serve it
/// behind a [`typhon_live_http::Guard`], beside the page's routes ([`super::page::routes`]).
pub fn routes(path: PathBuf) -> Router {
    routes_of(Replayed::File(path))
}

/// [`routes`] of a stream from a file or from memory.
pub fn routes_of(replayed: Replayed) -> Router {
    let path = Arc::new(replayed);
    Router::new().route(
        "/stream",
        get(move |upgrade: WebSocketUpgrade| {
            let path = Arc::clone(&path);
            async move {
                upgrade
                    .max_message_size(MAX_MESSAGE)
                    .max_frame_size(MAX_MESSAGE)
                    .on_upgrade(move |socket| send_file(socket, path))
            }
        }),
    )
}

/// Sends the stream `path` names to `socket`, then closes it. A blocking
/// thread reads it ahead by one chunk; a tab that stops taking them is
/// let go after [`WRITE_TIMEOUT`], and the reading stops with it.
async fn send_file(mut socket: WebSocket, path: Arc<Replayed>) {
    let (chunks, mut read) = tokio::sync::mpsc::channel::<Result<Vec<u8>, String>>(1);
    let reading = Arc::clone(&path);
    tokio::task::spawn_blocking(move || {
        let mut file = match reading.open() {
            Ok(file) => file,
            Err(e) => return chunks.blocking_send(Err(format!("cannot open it: {e}"))),
        };
        loop {
            let mut chunk = Vec::with_capacity(CHUNK);
            match (&mut file).take(CHUNK as u64).read_to_end(&mut chunk) {
                Ok(0) => return Ok(()),
                Ok(_) => chunks.blocking_send(Ok(chunk))?,
                Err(e) => return chunks.blocking_send(Err(format!("cannot read it: {e}"))),
            }
        }
    });
    let mut in_flight = InFlight::new(FILE_WINDOW);
    loop {
        let next = tokio::select! {
            next = read.recv(), if in_flight.has_room() => next,
            said = socket.recv() => match in_flight.hear(&mut socket, said).await {
                Heard::Nothing => continue,
                Heard::Gone | Heard::Misspoke => return,
            },
        };
        let chunk = match next {
            None => break,
            Some(Ok(chunk)) => chunk,
            Some(Err(why)) => {
                let why = format!("{}: {why}", path.name());
                return close(&mut socket, 1011, &why).await;
            }
        };
        let bytes = chunk.len();
        let sent = socket.send(Message::Binary(Bytes::from(chunk)));
        if !matches!(tokio::time::timeout(WRITE_TIMEOUT, sent).await, Ok(Ok(()))) {
            return;
        }
        in_flight.sent(bytes);
    }
    close(&mut socket, 1000, END_OF_FILE).await;
}
