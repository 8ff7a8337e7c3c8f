//! The recording side: process-wide lanes and names, a lane per thread
//! claimed on first use, and the calls and macros that record through it.
//!
//! Everything here costs one relaxed atomic load when no profiler runs.

use std::cell::OnceCell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::tracking::{self, SpanMark};
use typhon_live_core::{
    Event, FieldOwner, FieldValue, GaugeValue, LaneHandle, LaneKind, Lanes, NameId, NameTable,
    SpanToken, TaskId, DEFAULT_RING_EVENTS as CORE_DEFAULT_RING_EVENTS,
};

/// Lane slots: threads that can record at once.
pub const MAX_LANES: usize = 64;
/// Events a lane's ring holds between drains unless configured
/// (`RingEvents`): 16384 (640 KiB, paged in by threads that record). Four
/// times the core's default because the exporter thread of a loaded
/// machine misses its 1 ms deadline by several ms: in `typhon-live-bench`'s
/// end-to-end run on the 2-core CI machine, 4096-event rings overflowed at
/// 2 M events/s on one thread, 16384-event rings did not (they overflow
/// from 4 M/s; 65536-event rings carried 8 M/s).
pub const DEFAULT_RING_EVENTS: usize = 4 * CORE_DEFAULT_RING_EVENTS;
/// The largest `RingEvents`: each lane's storage, 2.5 MiB of zeroed
/// `static` of which a thread touches only the capacity it uses.
pub const MAX_RING_EVENTS: usize = 65_536;
/// Whether `events` is a ring capacity `RingEvents` may name: a power of
/// two from 1024 to [`MAX_RING_EVENTS`].
pub fn valid_ring_events(events: usize) -> bool {
    events.is_power_of_two() && (1024..=MAX_RING_EVENTS).contains(&events)
}

/// The rings' storage, in events.
pub(crate) const RING_EVENTS: usize = MAX_RING_EVENTS;
/// Distinct names a process can intern.
pub const MAX_NAMES: usize = 16_384;
/// Bytes of name text a process can intern.
pub const NAME_BYTES: usize = 1 << 20;

/// The process's lanes. Zero-initialised, so its 160 MiB of storage cost
/// only the pages that recording threads actually touch: at most each
/// ring's configured capacity (`RingEvents` × 40 bytes per recording
/// thread).
pub(crate) static LANES: Lanes<MAX_LANES, RING_EVENTS> = Lanes::new();

/// The process's interned names.
pub(crate) type Names = NameTable<MAX_NAMES, NAME_BYTES>;
static NAMES: Mutex<Names> = Mutex::new(NameTable::new());

static ENABLED: AtomicBool = AtomicBool::new(false);
/// Events lost because every lane slot was taken or a name could not be
/// interned.
static UNRECORDED: AtomicU64 = AtomicU64::new(0);

pub(crate) fn names() -> MutexGuard<'static, Names> {
    // A panic while holding the lock cannot leave the append-only table
    // half-written in a way that matters: keep using it.
    NAMES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Release);
}

/// Whether a profiler is running and recording.
#[inline]
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Events that could not be recorded at all: no free lane or no room for a
/// name (ring overflow is counted per lane and reaches the viewer instead).
pub fn unrecorded_events() -> u64 {
    UNRECORDED.load(Ordering::Relaxed)
}

/// The monotonic clock: nanoseconds since the first use, read through the
/// TSC where `quanta` can calibrate it (x86_64), the OS clock elsewhere.
///
/// Why quanta rather than `std::time::Instant`: `cargo bench -p
/// typhon-live-std --bench recording` reads 10.5 to 10.6 ns per call against
/// 28 to 29 ns for `Instant` (medians, same run, two runs), and a span reads
/// it twice.
pub(crate) struct Clock {
    clock: quanta::Clock,
    origin: u64,
}

static CLOCK: OnceLock<Clock> = OnceLock::new();

pub(crate) fn clock() -> &'static Clock {
    CLOCK.get_or_init(|| {
        let clock = quanta::Clock::new();
        let origin = clock.raw();
        Clock { clock, origin }
    })
}

impl Clock {
    /// Nanoseconds since the clock was first used.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.clock.delta_as_nanos(self.origin, self.clock.raw())
    }
}

/// Nanoseconds on the profiler's clock: the timestamps every event carries.
#[inline]
pub fn now() -> u64 {
    clock().now()
}

/// Interns `name` and returns its id; the same string always gets the same
/// id in a process. Cache the id: interning takes a lock.
pub fn intern(name: &str) -> Option<NameId> {
    match names().intern(name) {
        Ok(id) => Some(id),
        Err(e) => {
            log::warn!("typhon-live: cannot intern {name:?}: {e}");
            None
        }
    }
}

/// This thread's lane: claimed on first use (`None` if every slot was
/// taken then), released when the thread ends. A `OnceCell` rather than a
/// `RefCell`: the hot path is one initialised-check, no borrow counting.
type ThreadLane = OnceCell<Option<Claimed>>;

/// A thread's lane, held until the thread ends. Dropped, it first stops
/// the thread's allocations counting there ([`crate::tracking`]), then
/// gives the slot back.
struct Claimed(LaneHandle<'static, RING_EVENTS>);

impl Drop for Claimed {
    fn drop(&mut self) {
        crate::tracking::released();
    }
}

thread_local! {
    // Dropped when the thread ends, which releases the lane.
    static LANE: ThreadLane = const { OnceCell::new() };
}

/// Names the calling thread's lane (before it records anything; later
/// calls are ignored). Threads that never call this get their thread name,
/// and the kind `Main` for the thread called "main", `Other` otherwise.
pub fn register_thread(name: &str, kind: LaneKind) -> bool {
    LANE.with(|lane| {
        let mut claimed_here = false;
        lane.get_or_init(|| {
            claimed_here = true;
            claim(name, kind)
        });
        claimed_here && lane.get().is_some_and(Option::is_some)
    })
}

fn claim(name: &str, kind: LaneKind) -> Option<Claimed> {
    let name = intern(name)?;
    let handle = LANES.claim(name, kind);
    if let Some(lane) = &handle {
        crate::texts::claimed(lane.id());
        crate::thread_times::claimed(lane.id());
        crate::tracking::claimed(lane.id());
    }
    if handle.is_none() {
        log::warn!("typhon-live: all {MAX_LANES} lanes are taken; this thread records nothing");
    }
    handle.map(Claimed)
}

#[inline]
pub(crate) fn with_lane<R>(f: impl FnOnce(&LaneHandle<'static, RING_EVENTS>) -> R) -> Option<R> {
    LANE.try_with(|lane| {
        lane.get_or_init(claim_for_this_thread)
            .as_ref()
            .map(|c| f(&c.0))
    })
    .ok()
    .flatten()
}

/// A thread's first record: claims its lane, named after the thread.
#[cold]
fn claim_for_this_thread() -> Option<Claimed> {
    let thread = std::thread::current();
    match thread.name() {
        Some("main") => claim("main", LaneKind::Main),
        Some(name) => claim(name, LaneKind::Other),
        None => claim(&format!("{:?}", thread.id()), LaneKind::Other),
    }
}

#[inline]
fn recorded(ok: Option<bool>) {
    if ok.is_none() {
        UNRECORDED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Records through this thread's lane with `f`, and wakes the exporter if
/// that took the lane's ring past half full.
#[inline]
pub(crate) fn record(f: impl FnOnce(&LaneHandle<'static, RING_EVENTS>) -> bool) {
    recorded(with_lane(|lane| {
        let ok = f(lane);
        if lane.passed_half() {
            wake_exporter();
        }
        ok
    }));
}

/// Records `fields` of `owner`, which began at `start`, on `lane`, right
/// after the owner's record; whether all were recorded.
pub(crate) fn record_fields(
    lane: &LaneHandle<'static, RING_EVENTS>,
    owner: FieldOwner,
    start: u64,
    fields: &[(NameId, FieldValue)],
) -> bool {
    fields.iter().all(|&(key, value)| {
        lane.record(&Event::Field {
            time: start,
            key,
            value,
            owner,
        })
    })
}

/// The running exporter thread, woken early when a ring passes half full.
static EXPORTER: Mutex<Option<std::thread::Thread>> = Mutex::new(None);
/// Early wakes asked for since the start.
static WAKES: AtomicU64 = AtomicU64::new(0);

/// Registers the exporter thread (or none, when it ends).
pub(crate) fn set_exporter(thread: Option<std::thread::Thread>) {
    *EXPORTER.lock().unwrap_or_else(|p| p.into_inner()) = thread;
}

/// Times a recording thread woke the exporter early.
pub(crate) fn early_wakes() -> u64 {
    WAKES.load(Ordering::Relaxed)
}

/// At most once per half ring of a lane's events: a lock and an unpark,
/// off the common path.
#[cold]
fn wake_exporter() {
    WAKES.fetch_add(1, Ordering::Relaxed);
    if let Some(thread) = EXPORTER.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        thread.unpark();
    }
}

/// An open span; it is recorded whole when dropped. Not `Send`: a span
/// begins and ends on the same thread.
#[must_use = "a span ends when this guard is dropped"]
pub struct SpanGuard {
    token: Option<SpanToken>,
    arg: Option<u64>,
    /// Where it began in its thread's allocations.
    allocations: SpanMark,
    _same_thread: PhantomData<*const ()>,
}

impl SpanGuard {
    /// A guard that records nothing.
    #[inline]
    pub fn inert() -> Self {
        SpanGuard {
            token: None,
            arg: None,
            allocations: SpanMark::default(),
            _same_thread: PhantomData,
        }
    }

    /// Attaches an argument (entity count, bytes, query id...) to the span.
    pub fn set_arg(&mut self, arg: u64) {
        self.arg = Some(arg);
    }

    /// Ends the span now without recording it yet: whoever holds the
    /// [`Ended`] records it, on this thread, as a span or as a task's
    /// poll. `None` for a guard that records nothing.
    #[inline]
    pub fn end_later(mut self) -> Option<Ended> {
        let token = self.token.take()?;
        let arg = self.arg;
        let event = with_lane(|lane| lane.close(token, now(), arg))?;
        Some(Ended {
            event,
            allocated: tracking::own_bytes(self.allocations),
            _same_thread: PhantomData,
        })
    }
}

/// A span ended on this thread's lane and not yet recorded
/// ([`SpanGuard::end_later`]). Dropping it loses the span. Not `Send`:
/// it is recorded on the lane it ran on.
#[derive(Debug)]
pub struct Ended {
    event: Event,
    /// The bytes it allocated while it was its lane's innermost span.
    allocated: u64,
    _same_thread: PhantomData<*const ()>,
}

impl Ended {
    /// When it began, on the profiler's clock.
    pub fn start(&self) -> u64 {
        self.event.time()
    }

    /// How long it ran.
    pub fn duration(&self) -> u64 {
        match self.event {
            Event::Span { duration, .. } => duration,
            _ => 0,
        }
    }

    /// Records it as the span it was.
    #[inline]
    pub fn record(self) {
        record(|lane| {
            lane.record(&self.event) && record_allocated(lane, &self.event, self.allocated)
        });
    }

    /// Records it as the span it was, with its fields (key and value;
    /// FORMAT.md, "Fields") right after it.
    pub fn record_with(self, fields: &[(NameId, FieldValue)]) {
        let Event::Span { id, start, .. } = self.event else {
            return self.record();
        };
        record(|lane| {
            lane.record(&self.event)
                && record_fields(lane, FieldOwner::Span(id), start, fields)
                && record_allocated(lane, &self.event, self.allocated)
        });
    }

    /// Records it as a poll of `task` (a task span's time on this lane),
    /// named `name`.
    #[inline]
    pub fn record_poll(self, task: TaskId, name: NameId) {
        let poll = self.event.into_poll(task, name);
        record(|lane| lane.record(&poll) && record_allocated(lane, &poll, self.allocated));
    }
}

/// Records the bytes `span`, just recorded on `lane`, allocated itself
/// (FORMAT.md, "Allocated bytes"), if any; whether it was recorded.
#[inline]
fn record_allocated(lane: &LaneHandle<'static, RING_EVENTS>, span: &Event, bytes: u64) -> bool {
    if bytes == 0 {
        return true;
    }
    match *span {
        Event::Span { id, start, .. } | Event::Poll { id, start, .. } => {
            lane.record(&Event::Allocated {
                time: start,
                span: id,
                bytes,
            })
        }
        _ => true,
    }
}

impl Drop for SpanGuard {
    #[inline]
    fn drop(&mut self) {
        if let Some(token) = self.token.take() {
            let arg = self.arg;
            // Taken whether or not the span fits its ring, so that its
            // bytes are never its parent's.
            let own = tracking::own_bytes(self.allocations);
            record(|lane| {
                let span = lane.close(token, now(), arg);
                lane.record(&span) && record_allocated(lane, &span, own)
            });
        }
    }
}

/// Begins a span named by `name` (from [`intern`]) on this thread's lane.
#[inline]
pub fn span(name: NameId) -> SpanGuard {
    let token = if is_enabled() {
        with_lane(|lane| lane.begin(name, now()))
    } else {
        None
    };
    SpanGuard {
        allocations: match token {
            Some(_) => tracking::span_began(),
            None => SpanMark::default(),
        },
        token,
        arg: None,
        _same_thread: PhantomData,
    }
}

/// Records a point event.
#[inline]
pub fn instant(name: NameId, payload: u64) {
    if is_enabled() {
        record(|lane| lane.instant(name, now(), payload));
    }
}

/// Records a point event at `time` (from [`now`]): for a caller that
/// stamps something else with the same time (a log text, [`texts`]).
///
/// [`texts`]: crate::texts
#[inline]
pub fn instant_at(name: NameId, time: u64, payload: u64) {
    if is_enabled() {
        record(|lane| lane.instant(name, time, payload));
    }
}

/// Records an integer gauge reading (bytes in use, queue length...).
#[inline]
pub fn gauge(name: NameId, value: i64) {
    if is_enabled() {
        record(|lane| lane.gauge(name, now(), GaugeValue::Int(value)));
    }
}

/// Records a floating-point gauge reading.
#[inline]
pub fn gauge_f64(name: NameId, value: f64) {
    if is_enabled() {
        record(|lane| lane.gauge(name, now(), GaugeValue::Float(value)));
    }
}

/// Records the start of simulation tick `tick`.
#[inline]
pub fn tick_start(tick: u64) {
    if is_enabled() {
        record(|lane| lane.tick_start(tick, now()));
    }
}

/// Records the end of simulation tick `tick`.
#[inline]
pub fn tick_end(tick: u64, overrun: bool) {
    if is_enabled() {
        record(|lane| lane.tick_end(tick, now(), overrun));
    }
}

/// A call site's cached name id, for the macros.
#[doc(hidden)]
pub struct CachedName(std::sync::atomic::AtomicU32);

impl CachedName {
    #[doc(hidden)]
    #[inline]
    pub const fn new() -> Self {
        CachedName(std::sync::atomic::AtomicU32::new(u32::MAX))
    }

    #[doc(hidden)]
    #[inline]
    pub fn get(&self, name: &str) -> Option<NameId> {
        match self.0.load(Ordering::Relaxed) {
            u32::MAX => {
                let id = intern(name)?;
                self.0.store(id, Ordering::Relaxed);
                Some(id)
            }
            id => Some(id),
        }
    }
}

impl Default for CachedName {
    fn default() -> Self {
        Self::new()
    }
}

/// Opens a span named by a string literal until the end of the scope:
/// `let _span = typhon_live_std::span!("Physics");`. Interns the name once
/// per call site; costs one atomic load when no profiler runs.
#[macro_export]
macro_rules! span {
    ($name:expr) => {{
        static NAME: $crate::runtime::CachedName = $crate::runtime::CachedName::new();
        match $crate::runtime::is_enabled()
            .then(|| NAME.get($name))
            .flatten()
        {
            Some(id) => $crate::runtime::span(id),
            None => $crate::runtime::SpanGuard::inert(),
        }
    }};
}

/// Records an instant named by a string literal, with a payload.
#[macro_export]
macro_rules! instant {
    ($name:expr, $payload:expr) => {{
        static NAME: $crate::runtime::CachedName = $crate::runtime::CachedName::new();
        if $crate::runtime::is_enabled() {
            if let Some(id) = NAME.get($name) {
                $crate::runtime::instant(id, $payload);
            }
        }
    }};
}

/// Records an integer gauge named by a string literal.
#[macro_export]
macro_rules! gauge {
    ($name:expr, $value:expr) => {{
        static NAME: $crate::runtime::CachedName = $crate::runtime::CachedName::new();
        if $crate::runtime::is_enabled() {
            if let Some(id) = NAME.get($name) {
                $crate::runtime::gauge(id, $value);
            }
        }
    }};
}
