//! Browser tabs as viewers of the merged stream, each over a WebSocket
//! of its own: a tab is a viewer like any other ([`crate::fanout`]): its
//! own start (the shared Init and a Catch-up), its own sequence numbers,
//! its own drops past the same queue bound, the same deadlines.
//!
//! Each binary message carries the next bytes of the tab's stream: a
//! frame is sent as its header, its payload (shared by every viewer, not
//! copied) and its trailer, three messages. The page feeds them, in
//! order, to its streaming decoder (docs/FORMAT.md, "Carrying a stream").
//!
//! A tab's lag is bounded in time, not only in bytes. A browser takes in
//! whatever arrives, so a page that falls behind (its thread waiting for
//! the rasterizer, say) would otherwise see its lag grow without end
//! while its queue here stayed empty. So:
//! - frames go out only while the tab has less than
//!   [`LIVE_WINDOW`] bytes unread ([`super::in_flight`]); the rest wait
//!   in its queue;
//! - once a tab is behind for good, a Block or Catch-up that waited
//!   there too long ([`super::late`]) is dropped whole, its number
//!   skipped, as the queue's byte bound drops them: the page counts the
//!   gap and marks it where it happened.

use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use typhon_live_http::axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use typhon_live_http::axum::routing::get;
use typhon_live_http::axum::Router;

use super::in_flight::{Heard, InFlight, LIVE_WINDOW, MAX_MESSAGE};
use super::late::Lateness;
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
            async move {
                upgrade
                    .max_message_size(MAX_MESSAGE)
                    .max_frame_size(MAX_MESSAGE)
                    .on_upgrade(move |socket| serve_tab(socket, inbox))
            }
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
    let mut in_flight = InFlight::new(LIVE_WINDOW);
    let mut lateness = Lateness::default();
    loop {
        let next = tokio::select! {
            next = queue.next(), if in_flight.has_room() => next,
            said = socket.recv() => match in_flight.hear(&mut socket, said).await {
                Heard::Nothing => continue,
                Heard::Gone => return queue.end(Ending::Left),
                Heard::Misspoke => return queue.end(Ending::Misspoke),
            },
        };
        // None: let go by the merging thread (refused, or its start not
        // taken in time).
        let Some((queued, empty)) = next else {
            return;
        };
        if lateness.drops(
            queued.queued_at(),
            queued.droppable(),
            empty,
            Instant::now(),
        ) {
            queue.dropped_late();
            continue;
        }
        let sent = tokio::select! {
            sent = tokio::time::timeout(WRITE_TIMEOUT, send(&mut socket, &queued.frame, queued.seq)) => sent,
            () = queue.let_go() => return,
        };
        match sent {
            Ok(Ok(bytes)) => {
                in_flight.sent(bytes);
                if queued.ends_start() {
                    queue.set_started();
                }
            }
            Ok(Err(_)) => return queue.end(Ending::Left),
            Err(_) => return queue.end(Ending::Stalled),
        }
    }
}

/// Sends `frame`, sealed with `seq`: header, shared payload, trailer.
/// Returns the bytes sent.
async fn send(
    socket: &mut WebSocket,
    frame: &MergedFrame,
    seq: u32,
) -> Result<usize, typhon_live_http::axum::Error> {
    let (header, trailer) = frame.seal(seq);
    socket
        .send(Message::Binary(Bytes::copy_from_slice(&header)))
        .await?;
    socket.send(Message::Binary(frame.payload.clone())).await?;
    socket
        .send(Message::Binary(Bytes::copy_from_slice(&trailer)))
        .await?;
    Ok(header.len() + frame.payload.len() + trailer.len())
}
