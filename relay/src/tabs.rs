//! Browser tabs as viewers of the merged stream, each over a WebSocket
//! of its own: a tab is a viewer like any other ([`crate::fanout`]): its
//! own start (the shared Init and a Catch-up), its own sequence numbers,
//! its own drops past the same queue bound, the same deadlines.
//!
//! Each binary message carries the next bytes of the tab's stream: a
//! frame is sent as its header, its payload (shared by every viewer, not
//! copied) and its trailer, three messages. The page feeds them, in
//! order, to its streaming decoder (docs/FORMAT.md, "Carrying a stream").
//! What the tab sends is read and dropped, but for its close.

use std::sync::mpsc::SyncSender;
use std::sync::Arc;

use bytes::Bytes;
use typhon_live_http::axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use typhon_live_http::axum::routing::get;
use typhon_live_http::axum::Router;

use crate::fanout::{Ending, Input, Queue, TabQueue, WRITE_TIMEOUT};
use crate::merge::MergedFrame;

/// The route of the tabs' stream, `GET /stream` (a WebSocket), whose
/// tabs join the merging thread's `inbox`. Serve it behind a
/// [`typhon_live_http::Guard`].
pub fn routes(inbox: SyncSender<Input>) -> Router {
    Router::new().route(
        "/stream",
        get(move |upgrade: WebSocketUpgrade| {
            let inbox = inbox.clone();
            async move { upgrade.on_upgrade(move |socket| serve_tab(socket, inbox)) }
        }),
    )
}

/// Writes a tab's queue to its WebSocket until either goes away.
async fn serve_tab(mut socket: WebSocket, inbox: SyncSender<Input>) {
    let queue = Arc::new(Queue::default());
    let tab = TabQueue(Arc::clone(&queue));
    // The inbox is bounded, and the merging thread may be busy: waited
    // for off the runtime's thread.
    let joined = tokio::task::spawn_blocking(move || inbox.send(Input::Tab(tab)).is_ok()).await;
    if !matches!(joined, Ok(true)) {
        return;
    }
    loop {
        let next = tokio::select! {
            next = queue.next() => next,
            said = socket.recv() => match said {
                Some(Ok(Message::Close(_)) | Err(_)) | None => return queue.end(Ending::Left),
                // Pings are answered by the socket itself; anything else
                // a tab sends is not asked for.
                Some(Ok(_)) => continue,
            },
        };
        // None: let go by the merging thread (refused, or its start not
        // taken in time).
        let Some(queued) = next else {
            return;
        };
        let sent = tokio::select! {
            sent = tokio::time::timeout(WRITE_TIMEOUT, send(&mut socket, &queued.frame, queued.seq)) => sent,
            () = queue.let_go() => return,
        };
        match sent {
            Ok(Ok(())) if queued.ends_start() => queue.set_started(),
            Ok(Ok(())) => {}
            Ok(Err(_)) => return queue.end(Ending::Left),
            Err(_) => return queue.end(Ending::Stalled),
        }
    }
}

/// Sends `frame`, sealed with `seq`: header, shared payload, trailer.
async fn send(
    socket: &mut WebSocket,
    frame: &MergedFrame,
    seq: u32,
) -> Result<(), typhon_live_http::axum::Error> {
    let (header, trailer) = frame.seal(seq);
    socket
        .send(Message::Binary(Bytes::copy_from_slice(&header)))
        .await?;
    socket.send(Message::Binary(frame.payload.clone())).await?;
    socket
        .send(Message::Binary(Bytes::copy_from_slice(&trailer)))
        .await
}
