//! A recorded trace for the browser viewer (`view FILE --web`): each tab
//! that opens the stream gets the file's bytes over its WebSocket, a
//! chunk at a time as the tab takes them, then a close that says the
//! file ended ([`END_OF_FILE`], docs/FORMAT.md "Carrying a stream"). The page reads them as it reads a live
//! stream (a trace file is the same byte stream), then stops there,
//! paused at the end, instead of connecting again.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use typhon_live_http::axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use typhon_live_http::axum::routing::get;
use typhon_live_http::axum::Router;

use crate::fanout::WRITE_TIMEOUT;

use typhon_live_reader::carry::END_OF_FILE;
/// Bytes per message: the server holds one chunk per tab.
const CHUNK: usize = 1 << 20;

/// The route of the file's stream, `GET /stream` (a WebSocket). Serve it
/// behind a [`typhon_live_http::Guard`], beside [`crate::page::routes`].
pub fn routes(path: PathBuf) -> Router {
    let path = Arc::new(path);
    Router::new().route(
        "/stream",
        get(move |upgrade: WebSocketUpgrade| {
            let path = Arc::clone(&path);
            async move { upgrade.on_upgrade(move |socket| send_file(socket, path)) }
        }),
    )
}

/// Sends the file at `path` to `socket`, then closes it. A blocking
/// thread reads it ahead by one chunk; a tab that stops taking them is
/// let go after [`WRITE_TIMEOUT`], and the reading stops with it.
async fn send_file(mut socket: WebSocket, path: Arc<PathBuf>) {
    let (chunks, mut read) = tokio::sync::mpsc::channel::<Result<Vec<u8>, String>>(1);
    let reading = Arc::clone(&path);
    tokio::task::spawn_blocking(move || {
        let mut file = match std::fs::File::open(&*reading) {
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
    while let Some(next) = read.recv().await {
        let chunk = match next {
            Ok(chunk) => chunk,
            Err(why) => return close(socket, 1011, format!("{}: {why}", path.display())).await,
        };
        let sent = socket.send(Message::Binary(Bytes::from(chunk)));
        if !matches!(tokio::time::timeout(WRITE_TIMEOUT, sent).await, Ok(Ok(()))) {
            return;
        }
    }
    close(socket, 1000, END_OF_FILE.into()).await;
}

async fn close(mut socket: WebSocket, code: u16, reason: String) {
    let frame = CloseFrame {
        code,
        reason: reason.chars().take(100).collect::<String>().into(),
    };
    let _ = socket.send(Message::Close(Some(frame))).await;
}
