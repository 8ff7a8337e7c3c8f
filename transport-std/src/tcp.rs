//! The live TCP sink: one viewer at a time, non-blocking sends, frames sent
//! whole or dropped whole.
//!
//! A frame the kernel took only part of is finished before anything else;
//! droppable frames (Block, Catch-up) that arrive meanwhile are dropped,
//! frames that must not be dropped (Init, Definitions, Shutdown) are queued
//! behind it. No call here blocks: every socket is non-blocking, so the
//! exporter thread's time on the socket is the time of a few `send`/`recv`
//! system calls on buffers that are ready.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// Kernel send buffer asked for on each viewer's socket: room for a few
/// drain intervals of Blocks, small enough that a stalled viewer is
/// noticed (and its Blocks dropped) within milliseconds, not seconds.
pub const SEND_BUFFER_BYTES: usize = 256 << 10;
/// Frames that must not be dropped are queued behind a stalled viewer up
/// to this many bytes; past it the viewer is disconnected.
pub const MAX_QUEUED_BYTES: usize = 16 << 20;
/// Connections the kernel holds until the exporter's next cycle accepts
/// them: a burst of connects (a viewer's reconnect loop, a port scanner)
/// is taken at once instead of waiting a second for a SYN retry. The
/// kernel caps it at its `somaxconn`.
pub const LISTEN_BACKLOG: i32 = 128;
/// Connections accepted per exporter cycle at most: all that a full
/// backlog holds and then some, so a connect flood cannot hold the
/// exporter in `accept`.
const ACCEPTS_PER_CYCLE: usize = 4 * LISTEN_BACKLOG as usize;

/// What became of a frame handed to [`TcpSink::send`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Written, or queued to follow what is already on its way.
    Accepted,
    /// Dropped whole: the viewer is behind.
    Dropped,
    /// No viewer (or it went away).
    NoViewer,
}

struct Viewer {
    stream: TcpStream,
    peer: SocketAddr,
    /// Bytes accepted for sending but not yet taken by the kernel.
    queued: Vec<u8>,
}

/// The listener and the one attached viewer.
pub(crate) struct TcpSink {
    listener: TcpListener,
    viewer: Option<Viewer>,
    /// Worst time one `send` call spent in the kernel.
    pub worst_send: Duration,
}

/// Why the listener could not be opened.
pub(crate) fn bind(address: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(
        Domain::for_address(address),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.bind(&SockAddr::from(address))?;
    socket.listen(LISTEN_BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

impl TcpSink {
    pub(crate) fn new(listener: TcpListener) -> Self {
        TcpSink {
            listener,
            viewer: None,
            worst_send: Duration::ZERO,
        }
    }

    pub(crate) fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Accepts every pending connection. Returns the new viewer's address if
    /// one attached; a connection while a viewer is attached is closed at
    /// once.
    pub(crate) fn accept(&mut self) -> Option<SocketAddr> {
        let mut attached = None;
        for _ in 0..ACCEPTS_PER_CYCLE {
            let (stream, peer) = match self.listener.accept() {
                Ok(conn) => conn,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => {
                    log::debug!("typhon-live: accept failed: {e}");
                    break;
                }
            };
            if self.viewer.is_some() {
                log::info!("typhon-live: refusing {peer}: a viewer is already attached");
                let _ = stream.shutdown(Shutdown::Both);
                continue;
            }
            match configure(stream) {
                Ok(stream) => {
                    self.viewer = Some(Viewer {
                        stream,
                        peer,
                        queued: Vec::new(),
                    });
                    // One that hung up while it waited in the backlog gives
                    // its place to the next in line, not refuses it.
                    if self.check_viewer() {
                        log::info!("typhon-live: viewer {peer} attached");
                        attached = Some(peer);
                    }
                }
                Err(e) => log::warn!("typhon-live: cannot set up the connection from {peer}: {e}"),
            }
        }
        attached
    }

    /// Reads and discards what the viewer sent; notices a viewer that went
    /// away. Returns `false` if the viewer was dropped.
    pub(crate) fn check_viewer(&mut self) -> bool {
        let Some(viewer) = &mut self.viewer else {
            return false;
        };
        let mut scratch = [0u8; 4096];
        // Bounded, so a flooding client cannot hold the exporter here.
        for _ in 0..16 {
            match viewer.stream.read(&mut scratch) {
                Ok(0) => {
                    self.drop_viewer("closed the connection");
                    return false;
                }
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.drop_viewer(&e.to_string());
                    return false;
                }
            }
        }
        true
    }

    fn drop_viewer(&mut self, why: &str) {
        if let Some(viewer) = self.viewer.take() {
            log::info!("typhon-live: viewer {} detached: {why}", viewer.peer);
            let _ = viewer.stream.shutdown(Shutdown::Both);
        }
    }

    /// Pushes queued bytes to the kernel; `true` when nothing is left.
    pub(crate) fn flush(&mut self) -> bool {
        let Some(viewer) = &mut self.viewer else {
            return true;
        };
        while !viewer.queued.is_empty() {
            let started = Instant::now();
            let result = viewer.stream.write(&viewer.queued);
            self.worst_send = self.worst_send.max(started.elapsed());
            match result {
                Ok(0) => {
                    self.drop_viewer("connection closed while sending");
                    return true;
                }
                Ok(n) => {
                    viewer.queued.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.drop_viewer(&e.to_string());
                    return true;
                }
            }
        }
        true
    }

    /// Sends one whole frame, or drops it whole if it may be dropped and the
    /// viewer is behind. Frames that must not be dropped are queued.
    pub(crate) fn send(&mut self, frame: &[u8], droppable: bool) -> Delivery {
        if self.viewer.is_none() {
            return Delivery::NoViewer;
        }
        let drained = self.flush();
        let Some(viewer) = &mut self.viewer else {
            return Delivery::NoViewer;
        };
        if !drained {
            if droppable {
                return Delivery::Dropped;
            }
            if viewer.queued.len() + frame.len() > MAX_QUEUED_BYTES {
                self.drop_viewer("too far behind to receive the frames it must not miss");
                return Delivery::NoViewer;
            }
            viewer.queued.extend_from_slice(frame);
            return Delivery::Accepted;
        }
        let started = Instant::now();
        let result = viewer.stream.write(frame);
        self.worst_send = self.worst_send.max(started.elapsed());
        match result {
            Ok(n) if n == frame.len() => Delivery::Accepted,
            Ok(0) => {
                self.drop_viewer("connection closed while sending");
                Delivery::NoViewer
            }
            Ok(n) => {
                // The rest goes before anything else: the stream stays whole.
                viewer.queued.extend_from_slice(&frame[n..]);
                Delivery::Accepted
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                if droppable {
                    Delivery::Dropped
                } else {
                    viewer.queued.extend_from_slice(frame);
                    Delivery::Accepted
                }
            }
            Err(e) => {
                self.drop_viewer(&e.to_string());
                Delivery::NoViewer
            }
        }
    }

    /// Pushes what the kernel takes now of what is queued, then closes.
    pub(crate) fn close(&mut self) {
        self.flush();
        // Closing with unread bytes from the viewer would reset the
        // connection, and a reset can discard the Shutdown in flight.
        self.check_viewer();
        self.drop_viewer("profiler stopped");
    }
}

fn configure(stream: TcpStream) -> io::Result<TcpStream> {
    stream.set_nonblocking(true)?;
    stream.set_nodelay(true)?;
    let socket = Socket::from(stream);
    socket.set_send_buffer_size(SEND_BUFFER_BYTES)?;
    Ok(socket.into())
}
