//! The server's end of [`handshake`] for every
//! connection to a port, bounded so that nothing before authentication
//! can hold the server: each exchange has [`handshake::DEADLINE`]
//! (bytes trickled or not), and at most [`MAX_HANDSHAKES`] are in
//! progress at once. One more closes the oldest in progress, not the
//! newcomer: a viewer's own exchange takes milliseconds, so a flood of
//! connections that never finish cannot keep it out.

use std::collections::VecDeque;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::handshake::{self, Refusal};
use crate::token::Token;
use crate::ServerStream;

/// Exchanges in progress at once, each a thread with its socket and a
/// TLS connection's buffers (tens of KiB).
pub const MAX_HANDSHAKES: usize = 128;

/// What a gate does with what it lets in and what it refuses.
pub struct Gate {
    /// The TLS server.
    pub tls: Arc<rustls::ServerConfig>,
    /// The token a viewer must present.
    pub token: Token,
    /// How long an exchange may take.
    pub deadline: Duration,
}

/// An exchange in progress, as the gate keeps it.
struct InProgress {
    id: u64,
    socket: TcpStream,
    crowded: Arc<AtomicBool>,
}

impl Gate {
    /// Takes connections from `listener` for as long as it has them:
    /// `admit` gets each that presented the token, `refused` hears why
    /// each other was closed.
    pub fn serve(
        self,
        listener: TcpListener,
        admit: impl Fn(ServerStream) + Send + Sync + 'static,
        refused: impl Fn(Refusal) + Send + Sync + 'static,
    ) {
        let gate = Arc::new(self);
        let (admit, refused) = (Arc::new(admit), Arc::new(refused));
        let in_progress: Arc<Mutex<VecDeque<InProgress>>> = Arc::default();
        for (id, socket) in (0u64..).zip(listener.incoming()) {
            let Ok(socket) = socket else { continue };
            let Ok(kept) = socket.try_clone() else {
                continue;
            };
            let crowded = Arc::new(AtomicBool::new(false));
            {
                let mut table = in_progress.lock().unwrap_or_else(|p| p.into_inner());
                if table.len() >= MAX_HANDSHAKES {
                    if let Some(oldest) = table.pop_front() {
                        oldest.crowded.store(true, Ordering::Release);
                        let _ = oldest.socket.shutdown(Shutdown::Both);
                    }
                }
                table.push_back(InProgress {
                    id,
                    socket: kept,
                    crowded: Arc::clone(&crowded),
                });
            }
            let (gate, admit, refused, table) = (
                Arc::clone(&gate),
                Arc::clone(&admit),
                Arc::clone(&refused),
                Arc::clone(&in_progress),
            );
            let spawned = std::thread::Builder::new()
                .name("handshake".into())
                .spawn(move || {
                    let deadline = Instant::now() + gate.deadline;
                    let outcome =
                        handshake::accept(socket, Arc::clone(&gate.tls), &gate.token, deadline);
                    table
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .retain(|h| h.id != id);
                    match outcome {
                        Ok(stream) => admit(stream),
                        Err(_) if crowded.load(Ordering::Acquire) => refused(Refusal::Crowded),
                        Err(refusal) => refused(refusal),
                    }
                });
            if spawned.is_err() {
                // No thread to spare: the connection goes, with its entry.
                in_progress
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .retain(|h| h.id != id);
            }
        }
    }
}
