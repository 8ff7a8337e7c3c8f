//! A profiling session: `Profiler::start` opens the sinks and starts the
//! exporter thread, which drains every lane each drain interval. The trace
//! file and the live viewer are two readers of the core's exporter: the
//! same events, each in a stream of its own (sequence numbers, names and
//! lanes told, drops reported), so what the viewer misses is the viewer's
//! loss alone and the file stays complete.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use typhon_live_core::block::{block_scratch_len, encoding_buffer_len};
use typhon_live_core::text::TEXT_RECORD_HEADER;
use typhon_live_core::{
    Compression, Emitted, EncodeError, Exporter, Lz4Table, Metadata, ReaderId, SamplesBatch,
    TextBatch, MAX_TEXT_BYTES,
};

use crate::allocation_sites;
use crate::config::ProfilerConfig;
use crate::cpu_samples::CpuSamples;
use crate::file::TraceFile;
use crate::flight::{self, Flight};
use crate::memory_samples::MemorySamples;
use crate::metadata::OwnedMetadata;
use crate::runtime::{self, LANES, MAX_LANES};
use crate::sampling;
use crate::stack_tree::{Interned, StackTree};
use crate::symbolizer::{Answer, Symbolizer};
use crate::tcp::{self, Delivery, TcpSink};
use crate::texts;

/// How long `stop` waits for the last frames to reach a viewer. `stop`
/// returns within this plus one exporter cycle, whatever the viewer does
/// (reads slowly, never reads, floods the socket).
pub const SHUTDOWN_WAIT: Duration = Duration::from_millis(500);
/// Scratch bytes of one Block: 8192 events, 8 ms of a 1 M events/s stream.
const BLOCK_SCRATCH: usize = block_scratch_len(8192);

static RUNNING: AtomicBool = AtomicBool::new(false);

/// Why a profiler could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// Another profiler runs in this process (lanes and names are
    /// process-wide).
    AlreadyRunning,
    /// The live listener could not be opened on `address`.
    Listen {
        /// The address asked for.
        address: SocketAddr,
        /// Why (address in use, permission denied, not a local address...).
        source: io::Error,
    },
    /// The trace file could not be created.
    Trace {
        /// The file asked for.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The exporter thread could not be started.
    Thread(io::Error),
    /// `ring_events` is not a power of two from 1024 to
    /// [`MAX_RING_EVENTS`](crate::runtime::MAX_RING_EVENTS).
    RingEvents {
        /// The capacity asked for.
        events: usize,
    },
    /// The flight recorder's options do not make sense together, or its
    /// directory cannot be made.
    Recorder(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::AlreadyRunning => write!(
                f,
                "a typhon-live profiler is already running in this process"
            ),
            StartError::Listen { address, source } => {
                write!(f, "cannot listen on {address}: {source}")
            }
            StartError::Trace { path, source } => {
                write!(f, "cannot create trace file {}: {source}", path.display())
            }
            StartError::Thread(source) => write!(f, "cannot start the exporter thread: {source}"),
            StartError::RingEvents { events } => write!(
                f,
                "ring capacity {events} is not a power of two from 1024 to {}",
                runtime::MAX_RING_EVENTS
            ),
            StartError::Recorder(why) => write!(f, "the flight recorder cannot start: {why}"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::AlreadyRunning
            | StartError::RingEvents { .. }
            | StartError::Recorder(_) => None,
            StartError::Listen { source, .. }
            | StartError::Trace { source, .. }
            | StartError::Thread(source) => Some(source),
        }
    }
}

/// Counters of a session, readable while it runs. The live counters add
/// up every viewer the session had.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames handed to a viewer's socket.
    pub live_frames_sent: u64,
    /// Frames dropped whole because the viewer was behind.
    pub live_frames_dropped: u64,
    /// Events inside those dropped frames: lost to the viewer only (the
    /// trace file, if any, has them).
    pub live_events_dropped: u64,
    /// Viewers that attached.
    pub viewers: u64,
    /// Events refused by full rings: lost to every reader.
    pub events_refused: u64,
    /// Worst time one send call spent on the socket, in microseconds.
    pub worst_send_us: u64,
    /// Worst time one exporter cycle took, in microseconds.
    pub worst_cycle_us: u64,
    /// Exporter cycles run (one per drain interval): frames per cycle is
    /// what a stalled viewer must not inflate.
    pub cycles: u64,
    /// Times a recording thread woke the exporter before its interval was
    /// up, because its ring passed half full.
    pub early_wakes: u64,
    /// The flight recorder's triggers that fired (on demand included).
    pub triggers_fired: u64,
    /// Its captures written whole.
    pub captures_written: u64,
    /// Its captures not written (a full disk, the disk too slow).
    pub captures_failed: u64,
    /// Lanes' threads whose context switches the system would not let be
    /// traced: their CPU comes from their samples alone.
    pub switches_refused: u64,
    /// Context switches lost before they were sent: the kernel's buffer
    /// for a thread filled between two samples, or a frame's bound.
    pub switches_lost: u64,
    /// Lanes' threads whose call stacks the system would not let be
    /// sampled.
    pub stacks_refused: u64,
    /// Call stacks sampled and not sent: the kernel's buffer for a thread
    /// filled between two reads, the session's stack nodes ran out, or a
    /// frame's bound.
    pub stacks_lost: u64,
    /// Stack nodes the session defined.
    pub stack_nodes: u64,
}

#[derive(Default)]
struct Control {
    stop: AtomicBool,
    viewer_seen: Mutex<bool>,
    viewer_arrived: Condvar,
    live_frames_sent: AtomicU64,
    live_frames_dropped: AtomicU64,
    live_events_dropped: AtomicU64,
    viewers: AtomicU64,
    events_refused: AtomicU64,
    worst_send_us: AtomicU64,
    worst_cycle_us: AtomicU64,
    cycles: AtomicU64,
    switches_refused: AtomicU64,
    switches_lost: AtomicU64,
    stacks_refused: AtomicU64,
    stacks_lost: AtomicU64,
    stack_nodes: AtomicU64,
    /// The process's early-wake count when this session started.
    wakes_at_start: u64,
    /// The flight recorder's.
    flight: Arc<flight::Counters>,
}

/// A running profiler. Dropping it stops it.
pub struct Profiler {
    control: Arc<Control>,
    thread: Option<JoinHandle<io::Result<()>>>,
    live_addr: Option<SocketAddr>,
}

/// Releases the one-profiler-per-process slot when dropped.
struct RunningSlot;

impl RunningSlot {
    fn take() -> Option<RunningSlot> {
        (!RUNNING.swap(true, Ordering::AcqRel)).then_some(RunningSlot)
    }
}

impl Drop for RunningSlot {
    fn drop(&mut self) {
        RUNNING.store(false, Ordering::Release);
    }
}

impl Profiler {
    /// Starts profiling with `config`; `metadata` names what the process
    /// is (its clock and session fields are filled in here). With
    /// `config.live_wait` > 0 and a live port, waits for the first viewer
    /// at most that long.
    pub fn start(config: &ProfilerConfig, metadata: &Metadata<'_>) -> Result<Profiler, StartError> {
        let control = Arc::new(Control {
            wakes_at_start: runtime::early_wakes(),
            ..Control::default()
        });
        if !config.enabled {
            return Ok(Profiler {
                control,
                thread: None,
                live_addr: None,
            });
        }
        if !runtime::valid_ring_events(config.ring_events) {
            return Err(StartError::RingEvents {
                events: config.ring_events,
            });
        }
        let slot = RunningSlot::take().ok_or(StartError::AlreadyRunning)?;
        let live = match config.live {
            Some(port) => {
                let address = SocketAddr::new(config.bind_address, port);
                if !address.ip().is_loopback() {
                    log::warn!(
                        "typhon-live: listening on {address}, beyond loopback: the stream is unauthenticated \
                         and carries system, component and query names"
                    );
                }
                let listener =
                    tcp::bind(address).map_err(|source| StartError::Listen { address, source })?;
                Some(TcpSink::new(listener))
            }
            None => None,
        };
        let trace = match config.trace.as_ref() {
            Some(path) => Some(TraceFile::create(path).map_err(|source| StartError::Trace {
                path: path.clone(),
                source,
            })?),
            None => None,
        };
        let flight = match config.recorder_options() {
            Ok(Some((dir, options))) => Some(
                Flight::start(dir, options, Arc::clone(&control.flight))
                    .map_err(|e| StartError::Recorder(e.to_string()))?,
            ),
            Ok(None) => None,
            Err(e) => return Err(StartError::Recorder(e.to_string())),
        };
        let live_addr = live.as_ref().and_then(TcpSink::local_addr);
        let clock = runtime::clock();
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let meta =
            OwnedMetadata::for_session(metadata, 1_000_000_000, session_id(created), created);
        let pacing = Pacing {
            interval: config.drain_interval.max(Duration::from_micros(100)),
            // Timestamps are nanoseconds, so the age is too.
            block_max_age: config.block_max_age.as_nanos() as u64,
            compression: config.compression,
            cpu_samples: config.cpu_samples,
            cpu_switches: config.cpu_switches,
            stack_sample_hz: config.stack_sample_hz,
            stack_copies: config.stack_copies,
        };
        // Before the exporter thread runs: nothing drains while rings resize.
        let sized = runtime::LANES.set_ring_capacity(config.ring_events);
        if sized < runtime::LANES.slots() {
            // Events a previous session left: those rings keep their size
            // until they are drained and the next session starts.
            log::warn!(
                "typhon-live: {} of {} rings still hold events and keep their capacity",
                runtime::LANES.slots() - sized,
                runtime::LANES.slots()
            );
        }
        let thread = {
            let control = Arc::clone(&control);
            std::thread::Builder::new()
                .name("typhon-live-exporter".into())
                .spawn(move || {
                    // The slot is free again once the thread has let go of
                    // the lanes, however the session ends.
                    let _slot = slot;
                    export(&meta, live, trace, flight, pacing, &control, clock)
                })
                .map_err(StartError::Thread)?
        };
        runtime::set_enabled(true);
        allocation_sites::set_sampling_mean(config.allocation_sample_bytes);
        let profiler = Profiler {
            control,
            thread: Some(thread),
            live_addr,
        };
        if live_addr.is_some() && !config.live_wait.is_zero() {
            profiler.wait_for_viewer(config.live_wait);
        }
        Ok(profiler)
    }

    /// Waits at most `timeout` for a viewer to attach; whether one has.
    /// What `start` does with `config.live_wait`, for a process that must
    /// first tell its port (asked for port 0) to whoever will attach: start
    /// with `live_wait` zero, print [`Profiler::live_addr`], then wait.
    pub fn wait_for_viewer(&self, timeout: Duration) -> bool {
        let seen = self
            .control
            .viewer_seen
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let (seen, _) = self
            .control
            .viewer_arrived
            .wait_timeout_while(seen, timeout, |seen| !*seen)
            .unwrap_or_else(|p| p.into_inner());
        *seen
    }

    /// The address the live listener is bound to (with the real port when
    /// the configuration asked for port 0).
    pub fn live_addr(&self) -> Option<SocketAddr> {
        self.live_addr
    }

    /// Whether a viewer ever attached to this session.
    pub fn viewer_ever_connected(&self) -> bool {
        *self
            .control
            .viewer_seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        let c = &self.control;
        Stats {
            live_frames_sent: c.live_frames_sent.load(Ordering::Relaxed),
            live_frames_dropped: c.live_frames_dropped.load(Ordering::Relaxed),
            live_events_dropped: c.live_events_dropped.load(Ordering::Relaxed),
            viewers: c.viewers.load(Ordering::Relaxed),
            events_refused: c.events_refused.load(Ordering::Relaxed),
            worst_send_us: c.worst_send_us.load(Ordering::Relaxed),
            worst_cycle_us: c.worst_cycle_us.load(Ordering::Relaxed),
            cycles: c.cycles.load(Ordering::Relaxed),
            early_wakes: runtime::early_wakes().saturating_sub(c.wakes_at_start),
            triggers_fired: c.flight.fired.load(Ordering::Relaxed),
            captures_written: c.flight.written.load(Ordering::Relaxed),
            captures_failed: c.flight.failed.load(Ordering::Relaxed),
            switches_refused: c.switches_refused.load(Ordering::Relaxed),
            switches_lost: c.switches_lost.load(Ordering::Relaxed),
            stacks_refused: c.stacks_refused.load(Ordering::Relaxed),
            stacks_lost: c.stacks_lost.load(Ordering::Relaxed),
            stack_nodes: c.stack_nodes.load(Ordering::Relaxed),
        }
    }

    /// Asks the flight recorder for a capture now, as SIGUSR1 does (no
    /// effect without one).
    pub fn capture(&self) {
        self.control.flight.asked.store(true, Ordering::Relaxed);
    }

    /// Ends the session: drains what is left, sends Shutdown to the viewer
    /// (waiting at most [`SHUTDOWN_WAIT`]) and the trace file, and closes
    /// both. Returns the trace file's write error, if any.
    pub fn stop(mut self) -> io::Result<Stats> {
        self.finish()?;
        Ok(self.stats())
    }

    fn finish(&mut self) -> io::Result<()> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        runtime::set_enabled(false);
        // Blocks sampled before are still recognized when freed.
        allocation_sites::set_sampling_mean(0);
        self.control.stop.store(true, Ordering::Release);
        // It may be parked for the rest of its drain interval.
        thread.thread().unpark();
        thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("exporter thread panicked")))
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            log::error!("typhon-live: trace file could not be completed: {e}");
        }
    }
}

/// A session id that differs across restarts: time, process id and a
/// per-process counter, mixed.
fn session_id(created_unix_ns: u64) -> u64 {
    static STARTS: AtomicU64 = AtomicU64::new(0);
    let mut x = created_unix_ns
        ^ (u64::from(std::process::id()) << 32)
        ^ STARTS.fetch_add(1, Ordering::Relaxed);
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn store_max(cell: &AtomicU64, value: u64) {
    cell.fetch_max(value, Ordering::Relaxed);
}

/// The next frame of `exporter` in `out`, growing `out` as needed; the
/// session's stacks are defined from `stacks`.
fn poll(
    exporter: &mut SessionExporter<'_>,
    out: &mut Vec<u8>,
    clock: &runtime::Clock,
    stacks: Option<&StackTree>,
) -> Option<Emitted> {
    loop {
        let polled = {
            let names = runtime::names();
            let interned = Interned {
                names: &names,
                stacks,
            };
            exporter.poll(clock.now(), &LANES, &interned, out)
        };
        match polled {
            Ok(frame) => return frame,
            Err(EncodeError::BufferTooSmall { needed }) => out.resize(needed, 0),
            Err(e) => {
                log::error!("typhon-live: cannot encode a frame: {e}");
                return None;
            }
        }
    }
}

/// The session's exporter: three readers, the trace file, the live viewer
/// and the flight recorder.
type SessionExporter<'a> = Exporter<'a, MAX_LANES, 3>;

/// How the exporter thread paces and shapes its Blocks.
#[derive(Clone, Copy)]
struct Pacing {
    /// Time between drains.
    interval: Duration,
    /// How long a Block may collect drains, in nanoseconds.
    block_max_age: u64,
    compression: Compression,
    /// How often each lane's thread is sampled; `None`: not at all.
    cpu_samples: Option<Duration>,
    /// Its switches traced too, where the system allows.
    cpu_switches: bool,
    /// Each lane's thread's call stack sampled this often a second on a
    /// CPU; 0: never.
    stack_sample_hz: u32,
    /// Each sample copies the top of its thread's stack.
    stack_copies: bool,
}

/// Where frames go: the trace file, the live viewer and the flight
/// recorder, each a reader of the exporter.
struct Sinks {
    live: Option<TcpSink>,
    live_reader: Option<ReaderId>,
    trace: Option<TraceFile>,
    file_reader: Option<ReaderId>,
    flight: Option<Flight>,
    flight_reader: Option<ReaderId>,
}

impl Sinks {
    /// Hands `bytes`, a frame the exporter made, to the reader it is for,
    /// and tells the exporter what became of it.
    fn deliver(
        &mut self,
        exporter: &mut SessionExporter<'_>,
        frame: Emitted,
        bytes: &[u8],
        control: &Control,
    ) {
        if Some(frame.reader) == self.file_reader {
            let Some(file) = self.trace.as_mut().filter(|f| f.is_open()) else {
                return;
            };
            file.write(bytes);
            if !file.is_open() {
                // Failed and closed: nothing more is encoded for it.
                exporter.detach(frame.reader);
                self.file_reader = None;
            }
        } else if Some(frame.reader) == self.flight_reader {
            // In memory: never behind, never dropped.
            if let Some(flight) = self.flight.as_mut() {
                flight.frame(bytes);
            }
        } else if Some(frame.reader) == self.live_reader {
            let Some(sink) = self.live.as_mut() else {
                return;
            };
            match sink.send(bytes, frame.kind.is_droppable()) {
                Delivery::Accepted => {
                    control.live_frames_sent.fetch_add(1, Ordering::Relaxed);
                }
                Delivery::Dropped => {
                    control.live_frames_dropped.fetch_add(1, Ordering::Relaxed);
                    control
                        .live_events_dropped
                        .fetch_add(u64::from(frame.events), Ordering::Relaxed);
                    exporter.frame_dropped();
                }
                Delivery::NoViewer => {
                    exporter.detach(frame.reader);
                    self.live_reader = None;
                }
            }
        }
    }

    /// Every frame due, then the texts taken this cycle, the lanes' CPU
    /// samples and the memory: after the frames, so that each reader has
    /// been told the names and lanes they use.
    fn pump(
        &mut self,
        exporter: &mut SessionExporter<'_>,
        out: &mut Vec<u8>,
        alongside: &mut Alongside,
        clock: &runtime::Clock,
        control: &Control,
    ) {
        let stacks = alongside.cpu.as_ref().map(|cpu| &cpu.tree);
        while let Some(frame) = poll(exporter, out, clock, stacks) {
            self.deliver(exporter, frame, &out[..frame.len], control);
        }
        let refused = alongside.taken.take_refused();
        if refused > 0 {
            exporter.texts_refused(refused);
        }
        let mut batch = TextBatch::new(&mut alongside.batch);
        // Once even with no texts: a reader may have losses to be told.
        let mut first = true;
        while first || alongside.taken.has_more() {
            first = false;
            alongside.taken.fill(&mut batch);
            if out.len() < batch.frame_len() {
                out.resize(batch.frame_len(), 0);
            }
            let readers = [self.file_reader, self.live_reader, self.flight_reader];
            for reader in readers.into_iter().flatten() {
                match exporter.write_texts(reader, &batch, out) {
                    Ok(Some(frame)) => self.deliver(exporter, frame, &out[..frame.len], control),
                    Ok(None) => {}
                    Err(e) => log::error!("typhon-live: cannot encode a Text frame: {e}"),
                }
            }
        }
        // After the frames, as the texts: each reader knows the lanes.
        // Their time is taken before they are read, as close to each as
        // one time for all can be.
        let time = clock.now();
        let took = (alongside.cpu.as_mut())
            .is_some_and(|cpu| cpu.take(Instant::now(), time, || clock.now()));
        let memory_due = alongside.memory.due();
        let cpu = alongside.cpu.as_ref();
        let lanes_due = cpu.filter(|_| took).map(CpuSamples::due);
        if lanes_due.is_some() || memory_due.is_some() {
            let sites = memory_due.as_ref().map_or(&[][..], |m| m.sites.as_slice());
            let batch = SamplesBatch {
                time,
                lanes: lanes_due.as_ref().map_or(&[], |d| d.lanes),
                switches: lanes_due.as_ref().map_or(&[], |d| d.switches),
                memory: memory_due.as_ref().map(|m| m.memory),
                sites,
                stacks: lanes_due.as_ref().map_or(&[], |d| d.stacks),
            };
            if !batch.is_empty() {
                // Its lanes were read after the frames above: a thread
                // that claimed one since, a site frame's name interned
                // since, or a stack node, is defined first (FORMAT.md,
                // "Samples").
                let stacks = cpu.map(|cpu| &cpu.tree);
                while let Some(frame) = poll(exporter, out, clock, stacks) {
                    self.deliver(exporter, frame, &out[..frame.len], control);
                }
                let need = batch.max_frame_len();
                if out.len() < need {
                    out.resize(need, 0);
                }
                let readers = [self.file_reader, self.live_reader, self.flight_reader];
                for reader in readers.into_iter().flatten() {
                    match exporter.write_samples(reader, &batch, out) {
                        Ok(Some(frame)) => {
                            self.deliver(exporter, frame, &out[..frame.len], control)
                        }
                        Ok(None) => {}
                        Err(e) => log::error!("typhon-live: cannot encode a Samples frame: {e}"),
                    }
                }
            }
        }
        if let Some(cpu) = &alongside.cpu {
            (control.switches_refused).store(cpu.switches_refused, Ordering::Relaxed);
            (control.switches_lost).store(cpu.switches_lost, Ordering::Relaxed);
            (control.stacks_refused).store(cpu.stacks_refused, Ordering::Relaxed);
            (control.stacks_lost).store(cpu.stacks_lost, Ordering::Relaxed);
            (control.stack_nodes).store(cpu.tree.len() as u64, Ordering::Relaxed);
        }
    }
}

/// What goes out beside the Blocks each cycle: the texts taken, the
/// buffer their Text frames are built in, the lanes' CPU samples and the
/// memory.
struct Alongside {
    taken: texts::Taken,
    batch: Vec<u8>,
    cpu: Option<CpuSamples>,
    memory: MemorySamples,
    symbolizer: Symbolizer,
}

impl Alongside {
    /// Hands the symbolizer's answers to who asked, and asks about the
    /// stacks' new addresses.
    fn symbolize(&mut self) {
        for answer in self.symbolizer.answers() {
            match answer {
                Answer::Site(site, stack) => self.memory.symbolized(site, stack),
                Answer::Code(frames) => {
                    if let Some(cpu) = self.cpu.as_mut() {
                        cpu.tree.symbolized(frames);
                    }
                }
            }
        }
        if let Some(cpu) = self.cpu.as_mut() {
            self.symbolizer.ask_code(cpu.tree.take_unasked());
        }
    }
}

/// Bytes of text records in one Text frame: the largest record 32 times.
const TEXT_BATCH_BYTES: usize = 32 * (TEXT_RECORD_HEADER + MAX_TEXT_BYTES);

/// The exporter thread: each cycle it accepts or notices a viewer, drains
/// the lanes, and hands every frame to the reader it is for.
fn export(
    meta: &OwnedMetadata,
    live: Option<TcpSink>,
    trace: Option<TraceFile>,
    flight: Option<Flight>,
    pacing: Pacing,
    control: &Control,
    clock: &runtime::Clock,
) -> io::Result<()> {
    let Pacing {
        interval,
        block_max_age,
        compression,
        cpu_samples,
        cpu_switches,
        stack_sample_hz,
        stack_copies,
    } = pacing;
    runtime::set_exporter(Some(std::thread::current()));
    let result = meta.with(|meta| {
        let mut scratch = vec![0u8; BLOCK_SCRATCH];
        // Each Block is packed and compressed once, for the file and a
        // viewer alike.
        let mut work = vec![0u8; encoding_buffer_len(BLOCK_SCRATCH, compression)];
        let mut table = Box::new(Lz4Table::large());
        let mut exporter: SessionExporter<'_> = Exporter::new(meta, &mut scratch);
        exporter.set_encoding_buffer(&mut work);
        exporter.set_compression(compression, &mut table);
        exporter.set_block_max_age(block_max_age);
        let mut out = vec![0u8; exporter.min_block_buffer().max(1 << 16)];
        // The file reads from the first event to the last; a viewer from
        // when it connects until it goes.
        let mut sinks = Sinks {
            file_reader: trace.as_ref().and_then(|_| exporter.attach()),
            live,
            live_reader: None,
            trace,
            flight_reader: flight.as_ref().and_then(|_| exporter.attach()),
            flight,
        };
        let mut alongside = Alongside {
            taken: texts::Taken::default(),
            batch: vec![0u8; TEXT_BATCH_BYTES],
            cpu: cpu_samples
                .map(|every| CpuSamples::new(every, cpu_switches, (stack_sample_hz, stack_copies))),
            memory: MemorySamples::new(),
            symbolizer: Symbolizer::default(),
        };
        let mut stop_deadline = None;
        loop {
            let cycle = Instant::now();
            let stopping = control.stop.load(Ordering::Acquire);
            // Before the drain: a text's lane and name are then told
            // before the text is.
            alongside.taken.take();
            // Before the drain too: the sites' and the stacks' frames are
            // names.
            alongside.symbolize();
            alongside
                .memory
                .take(Instant::now(), &mut alongside.symbolizer);
            if let Some(sink) = sinks.live.as_mut() {
                // A viewer that went away first, so that one connecting
                // in the same cycle takes its place instead of being refused.
                if !sink.check_viewer() {
                    if let Some(gone) = sinks.live_reader.take() {
                        exporter.detach(gone);
                    }
                }
                if !stopping && sink.accept().is_some() {
                    if let Some(old) = sinks.live_reader.take() {
                        exporter.detach(old);
                    }
                    sinks.live_reader = exporter.attach();
                    control.viewers.fetch_add(1, Ordering::Relaxed);
                    let mut seen = control
                        .viewer_seen
                        .lock()
                        .unwrap_or_else(|p| p.into_inner());
                    *seen = true;
                    control.viewer_arrived.notify_all();
                }
            }
            if stopping {
                if stop_deadline.is_none() {
                    // One bound for everything stopping does, whatever the
                    // viewer does meanwhile.
                    stop_deadline = Some(Instant::now() + SHUTDOWN_WAIT);
                    // The last events and texts, before the Shutdown.
                    exporter.request_drain();
                    sinks.pump(&mut exporter, &mut out, &mut alongside, clock, control);
                }
                exporter.stop();
            } else {
                // Before the drain, so that a reading goes out this cycle.
                sampling::run_due(cycle);
                exporter.request_drain();
            }
            sinks.pump(&mut exporter, &mut out, &mut alongside, clock, control);
            let mut live_flushed = true;
            if let Some(sink) = sinks.live.as_mut() {
                live_flushed = sink.flush();
                store_max(&control.worst_send_us, sink.worst_send.as_micros() as u64);
            }
            if let Some(file) = sinks.trace.as_mut() {
                // A crash loses at most this cycle.
                file.flush();
            }
            if let Some(flight) = sinks.flight.as_mut() {
                flight.cycle();
            }
            control
                .events_refused
                .store(exporter.events_refused(), Ordering::Relaxed);
            store_max(&control.worst_cycle_us, cycle.elapsed().as_micros() as u64);
            control.cycles.fetch_add(1, Ordering::Relaxed);
            if let Some(deadline) = stop_deadline {
                if (exporter.is_finished() && live_flushed) || Instant::now() >= deadline {
                    break;
                }
            }
            // A recording thread whose ring passes half full unparks us
            // before the interval is up.
            if let Some(rest) = interval.checked_sub(cycle.elapsed()) {
                std::thread::park_timeout(rest);
            }
        }
        let Sinks {
            mut live,
            trace,
            flight,
            ..
        } = sinks;
        if let Some(sink) = live.as_mut() {
            // Whatever is still queued had its chance until the deadline.
            sink.close();
        }
        if let Some(flight) = flight {
            flight.finish();
        }
        trace.map_or(Ok(()), TraceFile::finish)
    });
    runtime::set_exporter(None);
    result
}
