//! The relay's downstream viewers, any number: one thread merges the
//! sources' updates ([`Merger`]) and hands each frame to every viewer's
//! queue. A thread per TCP viewer writes its queue to its socket; a
//! browser tab's queue is written to its WebSocket by a task
//! (the browser module's tabs). Both kinds are held to the same rules.
//!
//! A viewer connecting gets its start: the merged Init, built once and
//! shared by every viewer that connects before a name or lane changes
//! ([`Merger::init`]), and a Catch-up of what is open. Then every frame,
//! with its own sequence numbers. Frames are shared, never copied per
//! viewer: each is sealed with the viewer's number as it is written.
//!
//! What a viewer may hold of the relay's memory is bounded:
//! - its start, at most one Init (which fits the 8 MiB frame readers
//!   accept) and one Catch-up, which it must take within
//!   [`START_DEADLINE`] or be let go;
//! - besides its start, [`MAX_QUEUED`] bytes of frames. Past that its
//!   Blocks and Catch-ups are dropped whole, each drop a gap in its
//!   sequence numbers, as the std exporter does for its viewer;
//!   Definitions are never dropped. The start does not count against
//!   this: a viewer that reads loses nothing while its start goes out.
//!
//! The merging never waits for a viewer, so a slow one slows neither the
//! relay nor the others. At most [`MAX_VIEWERS`] are served at once.

use std::collections::VecDeque;
use std::io::{IoSlice, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use typhon_live_core::FrameKind;

use crate::merge::{MergedFrame, Merger};
use typhon_live_monitoring::metrics::Metrics;
use typhon_live_reader::owned::Update;

/// Bytes of frames a viewer's queue holds, besides its start, before its
/// Blocks and Catch-ups are dropped.
pub const MAX_QUEUED: usize = 8 << 20;
/// Viewers served at once; the next is refused (its connection closed,
/// and said so on stderr), so that viewers cannot grow the relay past
/// `MAX_VIEWERS × (8 MiB start + MAX_QUEUED)`.
pub const MAX_VIEWERS: usize = 64;
/// How long a viewer has to take its start (Init and Catch-up) before it
/// is let go: an Init near its 8 MiB bound takes well under a second on
/// any link a live view is usable over.
pub const START_DEADLINE: Duration = Duration::from_secs(10);
/// Updates waiting for the merger; a source's reader waits when it is
/// full (so the source's own exporter drops for it, and says so).
pub const UPDATES_QUEUED: usize = 256;
/// How long a viewer's socket may refuse to take a frame before the
/// viewer is let go.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often an idle viewer's socket is looked at for its leaving, and
/// the viewers for their start deadline.
const IDLE_CHECK: Duration = Duration::from_millis(500);

/// What the merging thread takes in.
pub enum Input {
    /// An update of source `source`.
    Update {
        /// The source's index.
        source: usize,
        /// What it said.
        update: Update,
    },
    /// A viewer connected (over TLS, beyond loopback).
    Viewer(Box<dyn Connection>),
    /// A browser tab connected; its writer takes frames from the queue.
    Tab(TabQueue),
}

/// A TCP viewer's connection: its socket, or TLS over it
/// ([`typhon_live_remote`]).
pub trait Connection: Read + Write + Send + 'static {
    /// The socket under it: its timeouts, blocking mode and shutdown.
    fn socket(&self) -> &TcpStream;
}

impl Connection for TcpStream {
    fn socket(&self) -> &TcpStream {
        self
    }
}

impl Connection for typhon_live_remote::ServerStream {
    fn socket(&self) -> &TcpStream {
        self.get_ref()
    }
}

/// A browser tab's queue, as its writer (a task of the browser module's
/// tabs) holds it.
pub struct TabQueue(pub(crate) Arc<Queue>);

/// The merging thread's inbox: sources and the listener send here.
pub fn inbox() -> (SyncSender<Input>, Receiver<Input>) {
    std::sync::mpsc::sync_channel(UPDATES_QUEUED)
}

/// Why a viewer was let go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Ending {
    /// Still served.
    Open = 0,
    /// It closed its side.
    Left,
    /// Its socket took nothing for [`WRITE_TIMEOUT`].
    Stalled,
    /// It did not take its start within [`START_DEADLINE`].
    StartNotTaken,
    /// Refused on connecting: [`MAX_VIEWERS`] are served already.
    OverCap,
    /// A tab said something other than what it read (the browser
    /// module's window of bytes in flight).
    Misspoke,
}

impl Ending {
    fn from_u8(code: u8) -> Self {
        match code {
            1 => Ending::Left,
            2 => Ending::Stalled,
            3 => Ending::StartNotTaken,
            4 => Ending::OverCap,
            5 => Ending::Misspoke,
            _ => Ending::Open,
        }
    }

    /// As the metrics' `reason` label says it.
    fn reason(self) -> &'static str {
        match self {
            Ending::Open => "open",
            Ending::Left => "left",
            Ending::Stalled => "stalled",
            Ending::StartNotTaken => "start_not_taken",
            Ending::OverCap => "over_cap",
            Ending::Misspoke => "misspoke",
        }
    }
}

/// A viewer's frames waiting to be written.
#[derive(Default)]
pub(crate) struct Queue {
    frames: Mutex<Pending>,
    /// Wakes a writer thread.
    ready: Condvar,
    /// Wakes a writer task.
    woken: Notify,
    /// Tells a writer task, blocked on its socket, that it is let go.
    ended: Notify,
    /// Why the viewer is let go ([`Ending`]); the first reason stays.
    ending: AtomicU8,
    /// Its start is written whole.
    started: AtomicBool,
    /// Frames its writer dropped for waiting too long (a browser tab's
    /// writer).
    dropped_late: AtomicU64,
}

impl Queue {
    pub(crate) fn end(&self, why: Ending) {
        let _ = self.ending.compare_exchange(
            Ending::Open as u8,
            why as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        let mut pending = self.frames.lock().unwrap_or_else(|p| p.into_inner());
        pending.frames.clear();
        pending.bytes = 0;
        drop(pending);
        self.ready.notify_all();
        // Permits are kept for a task not waiting yet.
        self.woken.notify_one();
        self.ended.notify_one();
    }

    pub(crate) fn ending(&self) -> Ending {
        Ending::from_u8(self.ending.load(Ordering::Acquire))
    }

    fn wake(&self) {
        self.ready.notify_one();
        self.woken.notify_one();
    }

    /// The next frame, if any is queued, and whether it was the last.
    fn pop(&self) -> Option<(Queued, bool)> {
        let mut pending = self.frames.lock().unwrap_or_else(|p| p.into_inner());
        let next = pending.pop()?;
        Some((next, pending.frames.is_empty()))
    }

    /// The next frame, waiting at most `wait` for one (a writer thread).
    fn next_within(&self, wait: Duration) -> Option<Queued> {
        let mut pending = self.frames.lock().unwrap_or_else(|p| p.into_inner());
        if pending.frames.is_empty() {
            pending = self
                .ready
                .wait_timeout(pending, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        pending.pop()
    }

    /// The next frame, once there is one, and whether it left the queue
    /// empty; `None` once the viewer is let go (a writer task).
    pub(crate) async fn next(&self) -> Option<(Queued, bool)> {
        loop {
            if self.ending() != Ending::Open {
                return None;
            }
            if let Some(next) = self.pop() {
                return Some(next);
            }
            self.woken.notified().await;
        }
    }

    /// Returns once the viewer is let go.
    pub(crate) async fn let_go(&self) {
        while self.ending() == Ending::Open {
            self.ended.notified().await;
        }
    }

    /// Its start has been written whole.
    pub(crate) fn set_started(&self) {
        self.started.store(true, Ordering::Release);
    }

    /// Its writer dropped a frame that waited too long.
    pub(crate) fn dropped_late(&self) {
        self.dropped_late.fetch_add(1, Ordering::Relaxed);
    }
}

/// A queued frame: its sequence number, whether it is part of the
/// viewer's start (not counted against [`MAX_QUEUED`]), and when it was
/// queued.
pub(crate) struct Queued {
    pub(crate) seq: u32,
    pub(crate) frame: Arc<MergedFrame>,
    pub(crate) start: bool,
    queued_at: Instant,
}

impl Queued {
    /// Whether this frame ends the viewer's start (its Catch-up).
    pub(crate) fn ends_start(&self) -> bool {
        self.start && self.frame.kind != FrameKind::Init.to_byte()
    }

    /// Whether it may be dropped for a slow viewer: a Block or a Text
    /// frame, or a Catch-up past the start (the next one tells; FORMAT.md).
    pub(crate) fn droppable(&self) -> bool {
        !self.start && droppable(self.frame.kind)
    }

    /// When it was queued.
    pub(crate) fn queued_at(&self) -> Instant {
        self.queued_at
    }
}

/// Whether a frame of `kind` may be dropped for a slow viewer.
fn droppable(kind: u8) -> bool {
    FrameKind::from_byte(kind).is_ok_and(FrameKind::is_droppable)
}

#[derive(Default)]
struct Pending {
    frames: VecDeque<Queued>,
    /// Bytes of the frames queued past the start.
    bytes: usize,
}

impl Pending {
    fn pop(&mut self) -> Option<Queued> {
        let next = self.frames.pop_front()?;
        if !next.start {
            self.bytes -= next.frame.payload.len();
        }
        Some(next)
    }
}

/// A viewer, as the merging thread sees it.
struct Viewer {
    queue: Arc<Queue>,
    /// A TCP viewer's socket, to end its writer's blocked write when the
    /// start deadline passes (a tab's writer is told by its queue).
    socket: Option<TcpStream>,
    joined: Instant,
    next_seq: u32,
    /// Frames dropped because its queue was full.
    dropped_frames: u64,
    /// Frames dropped for it, as last counted in the metrics.
    counted_dropped: u64,
}

impl Viewer {
    /// Frames dropped for it: its queue full, or (a tab) too late.
    fn dropped(&self) -> u64 {
        self.dropped_frames + self.queue.dropped_late.load(Ordering::Relaxed)
    }

    /// Queues `frame` with the viewer's next number; a Block or Catch-up
    /// is dropped (its number skipped) when the queue is full. An Init (a
    /// source shown as itself restarted) carries the number of the frame
    /// after it, and takes none.
    fn offer(&mut self, frame: &Arc<MergedFrame>) {
        let seq = self.next_seq;
        if frame.kind != FrameKind::Init.to_byte() {
            self.next_seq = seq.wrapping_add(1);
        }
        if self.queue.ending() != Ending::Open {
            return;
        }
        let mut pending = self.queue.frames.lock().unwrap_or_else(|p| p.into_inner());
        if droppable(frame.kind) && pending.bytes + frame.payload.len() > MAX_QUEUED {
            self.dropped_frames += 1;
            return;
        }
        pending.bytes += frame.payload.len();
        pending.frames.push_back(Queued {
            seq,
            frame: Arc::clone(frame),
            start: false,
            queued_at: Instant::now(),
        });
        drop(pending);
        self.queue.wake();
    }

    /// Queues the viewer's start: `init`, which carries the number of the
    /// frame after it, then `catch_up`.
    fn start(&mut self, init: Arc<MergedFrame>, catch_up: Arc<MergedFrame>) {
        let mut pending = self.queue.frames.lock().unwrap_or_else(|p| p.into_inner());
        for frame in [init, catch_up] {
            pending.frames.push_back(Queued {
                seq: self.next_seq,
                frame,
                start: true,
                queued_at: Instant::now(),
            });
        }
        self.next_seq = self.next_seq.wrapping_add(1);
        drop(pending);
        self.queue.wake();
    }
}

/// Writes `frame`, sealed with `seq`, without copying its payload.
fn write_frame(stream: &mut dyn Connection, frame: &MergedFrame, seq: u32) -> std::io::Result<()> {
    let (header, trailer) = frame.seal(seq);
    let mut parts = [
        IoSlice::new(&header),
        IoSlice::new(&frame.payload),
        IoSlice::new(&trailer),
    ];
    let mut parts = &mut parts[..];
    while !parts.is_empty() {
        match stream.write_vectored(parts) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut parts, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    // TLS holds what the socket did not take yet until it is flushed
    // (a socket's flush does nothing).
    stream.flush()
}

/// Writes a viewer's queue to its socket until either goes away.
fn write_viewer(mut stream: Box<dyn Connection>, queue: Arc<Queue>) {
    let _ = stream.socket().set_write_timeout(Some(WRITE_TIMEOUT));
    let _ = stream.socket().set_nodelay(true);
    loop {
        if queue.ending() != Ending::Open {
            return;
        }
        let ending = match queue.next_within(IDLE_CHECK) {
            Some(queued) => match write_frame(&mut *stream, &queued.frame, queued.seq) {
                Ok(()) => {
                    if queued.ends_start() {
                        queue.set_started();
                    }
                    None
                }
                Err(e) if is_timeout(&e) => Some(Ending::Stalled),
                Err(_) => Some(Ending::Left),
            },
            // Nothing to write: a viewer that left is noticed all the same.
            None => gone(&mut *stream).then_some(Ending::Left),
        };
        if let Some(why) = ending {
            return queue.end(why);
        }
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Whether the viewer closed its side. A viewer sends nothing; what it
/// sends anyway is read and dropped (a bounded amount each time).
fn gone(stream: &mut dyn Connection) -> bool {
    if stream.socket().set_nonblocking(true).is_err() {
        return true;
    }
    let mut junk = [0u8; 4096];
    let mut gone = false;
    for _ in 0..16 {
        match stream.read(&mut junk) {
            Ok(0) => {
                gone = true;
                break;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(_) => {
                gone = true;
                break;
            }
        }
    }
    gone || stream.socket().set_nonblocking(false).is_err()
}

/// Counts the frames dropped for viewers since the last call, and lets
/// go the viewers that left, stalled, or did not take their start in
/// time, saying so and counting them.
fn let_go(viewers: &mut Vec<Viewer>, metrics: &Metrics) {
    viewers.retain_mut(|v| {
        let dropped = v.dropped();
        metrics.viewer_frames_dropped(dropped - v.counted_dropped);
        v.counted_dropped = dropped;
        if v.queue.ending() == Ending::Open
            && !v.queue.started.load(Ordering::Acquire)
            && v.joined.elapsed() > START_DEADLINE
        {
            v.queue.end(Ending::StartNotTaken);
            // Its writer may be blocked in a write: this ends it.
            if let Some(socket) = &v.socket {
                let _ = socket.shutdown(Shutdown::Both);
            }
        }
        let ending = v.queue.ending();
        if ending == Ending::Open {
            return true;
        }
        metrics.viewer_let_go(ending.reason());
        let why = match ending {
            Ending::StartNotTaken => format!(
                "did not take its start within {} s, and was let go",
                START_DEADLINE.as_secs()
            ),
            Ending::Stalled => format!(
                "took nothing for {} s, and was let go",
                WRITE_TIMEOUT.as_secs()
            ),
            Ending::Misspoke => "said something other than what it read, and was let go".to_owned(),
            _ => "left".to_owned(),
        };
        eprintln!("relay: a viewer {why} ({dropped} frames were dropped for it)");
        false
    });
    metrics.set_viewers(viewers.len());
}

/// Accepts viewers on `listener` and hands them to the merging thread.
pub fn listen(listener: TcpListener, inbox: SyncSender<Input>) {
    for stream in listener.incoming().flatten() {
        if inbox.send(Input::Viewer(Box::new(stream))).is_err() {
            return;
        }
    }
}

/// Serves a new viewer whose frames go to `queue`, starting it with the
/// merged stream as it is now; or refuses it when [`MAX_VIEWERS`] are
/// served already, saying so, and ending its queue.
fn admit(
    viewers: &mut Vec<Viewer>,
    merger: &mut Merger,
    metrics: &Metrics,
    queue: &Arc<Queue>,
    socket: Option<TcpStream>,
) -> bool {
    if viewers.len() >= MAX_VIEWERS {
        eprintln!("relay: a viewer refused: {MAX_VIEWERS} are served already");
        metrics.viewer_let_go(Ending::OverCap.reason());
        queue.end(Ending::OverCap);
        return false;
    }
    let mut viewer = Viewer {
        queue: Arc::clone(queue),
        socket,
        joined: Instant::now(),
        next_seq: 0,
        dropped_frames: 0,
        counted_dropped: 0,
    };
    viewer.start(merger.init(), Arc::new(merger.catch_up()));
    viewers.push(viewer);
    metrics.set_viewers(viewers.len());
    true
}

/// The merging thread: takes updates and viewers until every sender is
/// gone; counts its viewers in `metrics`.
pub fn merge(mut merger: Merger, inputs: Receiver<Input>, metrics: Arc<Metrics>) {
    let mut viewers: Vec<Viewer> = Vec::new();
    let mut checked = Instant::now();
    loop {
        let input = match inputs.recv_timeout(IDLE_CHECK) {
            Ok(input) => input,
            Err(RecvTimeoutError::Timeout) => {
                let_go(&mut viewers, &metrics);
                checked = Instant::now();
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if checked.elapsed() > IDLE_CHECK {
            let_go(&mut viewers, &metrics);
            checked = Instant::now();
        }
        match input {
            Input::Viewer(stream) => {
                let_go(&mut viewers, &metrics);
                let queue = Arc::new(Queue::default());
                let Ok(socket) = stream.socket().try_clone() else {
                    continue;
                };
                if admit(&mut viewers, &mut merger, &metrics, &queue, Some(socket)) {
                    std::thread::spawn(move || write_viewer(stream, queue));
                }
            }
            Input::Tab(TabQueue(queue)) => {
                let_go(&mut viewers, &metrics);
                admit(&mut viewers, &mut merger, &metrics, &queue, None);
            }
            Input::Update { source, update } => {
                merger.update(source, &update, |frame| {
                    let frame = Arc::new(frame);
                    for viewer in &mut viewers {
                        viewer.offer(&frame);
                    }
                });
                for moved in merger.take_moved() {
                    metrics.source_moved(&moved.label, moved.events, moved.lead);
                    if moved.first {
                        eprintln!(
                            "typhon-live relay: {}: records lay {:.3} s before the relay's clock \
                             began (its Catch-ups ran ahead of its Blocks, or they predate the \
                             relay); its times are placed that much later, whole, from now on \
                             (typhon_events_moved_total, typhon_moved_by_seconds)",
                            moved.label,
                            moved.lead as f64 / 1e9
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::sync::atomic::AtomicUsize;
    use std::time::Instant;

    use typhon_live_core::{Decoder, Event, LaneInfo, LaneKind};

    use super::*;

    /// What a viewer's bytes hold: frames (Init excluded), missing
    /// sequence numbers, and damage.
    fn frames_and_gaps(bytes: &[u8]) -> (u64, u64, u64) {
        let mut buf = vec![0u8; 1 << 20];
        let mut decoder = Decoder::new(&mut buf);
        let (mut frames, mut gaps, mut damage) = (0, 0, 0);
        let mut expected: Option<u32> = None;
        let mut rest = bytes;
        while !rest.is_empty() {
            let n = decoder.feed(rest);
            rest = &rest[n..];
            loop {
                match decoder.next() {
                    Ok(Some(frame)) if frame.is_sequenced() => {
                        frames += 1;
                        if let Some(e) = expected {
                            gaps += u64::from(frame.seq.wrapping_sub(e));
                        }
                        expected = Some(frame.seq.wrapping_add(1));
                    }
                    Ok(Some(_)) => expected = Some(0),
                    Ok(None) => break,
                    Err(_) => damage += 1,
                }
            }
        }
        (frames, gaps, damage)
    }

    #[test]
    fn viewers_past_the_cap_are_refused_and_the_others_kept() {
        let (inbox, inputs) = inbox();
        std::thread::spawn(move || merge(Merger::new(&["s".into()], 1, 0), inputs, Arc::default()));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || listen(listener, inbox));
        let read_init = |stream: &mut TcpStream| {
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut buf = [0u8; 16];
            stream.read(&mut buf).unwrap_or(0)
        };
        let mut kept: Vec<TcpStream> = (0..MAX_VIEWERS)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        for viewer in &mut kept {
            assert!(
                read_init(viewer) > 0,
                "a viewer within the cap gets its Init"
            );
        }
        let mut refused = TcpStream::connect(addr).unwrap();
        assert_eq!(read_init(&mut refused), 0, "closed without an Init");
        // One leaves: there is room again.
        drop(kept.pop());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut next = TcpStream::connect(addr).unwrap();
            if read_init(&mut next) > 0 {
                break;
            }
            assert!(Instant::now() < deadline, "no room after a viewer left");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    #[test]
    fn a_viewer_that_stops_reading_loses_whole_blocks_and_slows_no_one() {
        let (inbox, inputs) = inbox();
        std::thread::spawn(move || merge(Merger::new(&["s".into()], 1, 0), inputs, Arc::default()));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let viewers = inbox.clone();
        std::thread::spawn(move || listen(listener, viewers));

        // The slow viewer connects first, so it is registered once the
        // fast one has its Init.
        // A small receive buffer: what the kernel holds for it does not
        // hide the queue's bound.
        let slow = {
            use socket2::{Domain, Socket, Type};
            let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
            socket.set_recv_buffer_size(64 << 10).unwrap();
            socket.connect(&addr.into()).unwrap();
            TcpStream::from(socket)
        };
        // It reads, but far slower than the sources write (32 KiB every
        // half second), so that its writer is never stuck for the relay's
        // write timeout (a viewer that reads nothing for 10 s is let go,
        // and the merging of this test took longer than that under wine).
        let slow_go = Arc::new(AtomicBool::new(false));
        let slow_reader = {
            let go = Arc::clone(&slow_go);
            std::thread::spawn(move || {
                let mut slow = slow;
                slow.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
                let (mut all, mut buf) = (Vec::new(), vec![0u8; 1 << 16]);
                while !go.load(Ordering::Acquire) {
                    if let Ok(n) = slow.read(&mut buf[..32 << 10]) {
                        all.extend_from_slice(&buf[..n]);
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
                while let Ok(n @ 1..) = slow.read(&mut buf) {
                    all.extend_from_slice(&buf[..n]);
                }
                all
            })
        };
        let mut fast = TcpStream::connect(addr).unwrap();
        let read = Arc::new(AtomicUsize::new(0));
        let fast_reader = {
            let read = Arc::clone(&read);
            std::thread::spawn(move || {
                fast.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let (mut all, mut buf) = (Vec::new(), vec![0u8; 1 << 16]);
                while let Ok(n @ 1..) = fast.read(&mut buf) {
                    all.extend_from_slice(&buf[..n]);
                    read.store(all.len(), Ordering::Release);
                }
                all
            })
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while read.load(Ordering::Acquire) == 0 {
            assert!(Instant::now() < deadline, "no Init for the fast viewer");
            std::thread::sleep(Duration::from_millis(10));
        }

        let send = |update| inbox.send(Input::Update { source: 0, update }).unwrap();
        send(Update::Session {
            process: String::new(),
            id: 5,
            names: vec![(0, "lane".into()), (1, "span".into())],
            lanes: vec![LaneInfo {
                id: 0,
                name: 0,
                kind: LaneKind::Main,
            }],
        });
        // About 25 MB of Blocks (arguments that do not pack: 8 bytes a
        // span), well past a queue and a socket's buffers, paced so that
        // a reading viewer keeps up on a loaded machine.
        for batch in 0..150u64 {
            let events = (0..20_000u64)
                .map(|i| {
                    let at = (batch * 20_000 + i) * 100;
                    let span = Event::Span {
                        start: at,
                        duration: 50 + i % 7,
                        name: 1,
                        id: (i + 1) as u32,
                        parent: 0,
                        arg: Some((batch * 20_000 + i).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                    };
                    (0, span)
                })
                .collect();
            send(Update::Events {
                events,
                drops: Vec::new(),
                unread: 0,
                unix_offset: 0,
                packed: None,
            });
            std::thread::sleep(Duration::from_millis(5));
        }

        // Once the merger is through (the fast viewer has had everything
        // for a second), the slow viewer reads all it can; a frame after
        // its drops shows them as a gap.
        let mut seen = (read.load(Ordering::Acquire), Instant::now());
        while seen.1.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(50));
            let now = read.load(Ordering::Acquire);
            if now != seen.0 {
                seen = (now, Instant::now());
            }
        }
        slow_go.store(true, Ordering::Release);
        std::thread::sleep(Duration::from_secs(1));
        send(Update::Events {
            events: vec![(0, Event::TickStart { time: 1, tick: 1 })],
            drops: Vec::new(),
            unread: 0,
            unix_offset: 0,
            packed: None,
        });
        let (fast, late) = (fast_reader.join().unwrap(), slow_reader.join().unwrap());
        let (fast_frames, fast_gaps, fast_damage) = frames_and_gaps(&fast);
        let (slow_frames, slow_gaps, slow_damage) = frames_and_gaps(&late);
        assert_eq!((fast_gaps, fast_damage, slow_damage), (0, 0, 0));
        assert!(fast.len() > 20 << 20, "{} bytes", fast.len());
        assert!(slow_gaps > 100, "the slow viewer lost {slow_gaps} frames");
        // Every frame it did not get is a gap in its numbers: exact.
        assert_eq!(slow_frames + slow_gaps, fast_frames);
    }
}
