//! Memory by lane: an allocator wrapper that counts each lane's allocated
//! and freed bytes, over any `GlobalAlloc`, and samples allocations for
//! their sites ([`crate::allocation_sites`]).
//!
//! ```no_run
//! #[global_allocator]
//! static ALLOCATOR: typhon_live_std::Tracking<std::alloc::System> =
//!     typhon_live_std::Tracking::new(std::alloc::System);
//! ```
//!
//! A thread with a lane counts in its lane's slot: it is the slot's only
//! writer, so a count is a relaxed load and store (no lock, no
//! read-modify-write), and the exporter thread reads it with relaxed
//! loads. A thread without one (not recording, or past the lanes) takes
//! a slot of its own for good on its first allocation, written the same
//! way, while [`OWN_SLOTS`] last; past them it counts in one of
//! [`SHARDS`] process-wide counters (an atomic add), picked by where its
//! thread-local data lives. Nothing here allocates, so it never recurses
//! into itself; a thread's lane, its countdown to the next sample and
//! whether it is sampling are a `const` thread-local without a
//! destructor, readable from another destructor, after its lane is gone.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use typhon_live_core::LaneId;

use crate::allocation_sites::{self, Countdown};
use crate::runtime::MAX_LANES;

/// Slots that threads without a lane take for good, one each, the first
/// to allocate: their only writer, as a lane's.
pub const OWN_SLOTS: usize = 64;
/// Process-wide counters for threads without a lane past [`OWN_SLOTS`].
pub const SHARDS: usize = 16;

/// A lane's, a lane-less thread's or a shard's bytes allocated and
/// freed, on a cache line of its own so that two writers never share one.
#[repr(align(64))]
struct Bytes {
    allocated: AtomicU64,
    freed: AtomicU64,
}

impl Bytes {
    const fn zero() -> Bytes {
        Bytes {
            allocated: AtomicU64::new(0),
            freed: AtomicU64::new(0),
        }
    }

    /// Adds `n` to `counter`, which only this thread writes.
    #[inline]
    fn add_owned(counter: &AtomicU64, n: usize) {
        let now = counter.load(Ordering::Relaxed).wrapping_add(n as u64);
        counter.store(now, Ordering::Relaxed);
    }

    fn read(&self) -> (u64, u64) {
        (
            self.allocated.load(Ordering::Relaxed),
            self.freed.load(Ordering::Relaxed),
        )
    }
}

static LANES: [Bytes; MAX_LANES] = [const { Bytes::zero() }; MAX_LANES];
/// Some allocation went through [`Tracking`]: it is the global allocator
/// (or in use), so spans have bytes to be charged. Without it a span
/// costs one more relaxed load, not the thread-local's reads.
static COUNTING: AtomicBool = AtomicBool::new(false);
static OWNED: [Bytes; OWN_SLOTS] = [const { Bytes::zero() }; OWN_SLOTS];
/// [`OWNED`] slots taken (may count past them: the rest were refused).
static OWNED_TAKEN: AtomicUsize = AtomicUsize::new(0);
static UNLANED: [Bytes; SHARDS] = [const { Bytes::zero() }; SHARDS];

/// No lane.
const NONE: u16 = u16::MAX;
/// A thread's own slot: not taken yet ...
const UNCLAIMED: u16 = u16::MAX;
/// ... or none to be had (it counts in a shard).
const SHARED: u16 = u16::MAX - 1;

/// What a thread keeps: its lane, its own slot while it has none, its
/// countdown to the next sampled allocation, and whether it is sampling
/// now.
struct Local {
    lane: Cell<u16>,
    own: Cell<u16>,
    countdown: Countdown,
    /// Inside the sampler, or its table's lock: an allocation or a free
    /// meanwhile (the sampler's own, a signal handler's) is only counted.
    busy: Cell<bool>,
    /// The bytes charged to the spans that ended on this thread, plus
    /// the jumps of its lane's count when it took or gave back a slot:
    /// its lane's bytes allocated less this grows only by what spans
    /// have not been charged ([`own_bytes`]).
    charged: Cell<u64>,
}

thread_local! {
    // `const` and without a destructor: no allocation to set it up, and
    // readable while other thread-locals are being destroyed.
    static LOCAL: Local = const {
        Local {
            lane: Cell::new(NONE),
            own: Cell::new(UNCLAIMED),
            countdown: Countdown::new(),
            busy: Cell::new(false),
            charged: Cell::new(0),
        }
    };
}

/// The calling thread took lane slot `lane`: its allocations count there
/// from now on.
pub(crate) fn claimed(lane: LaneId) {
    let _ = LOCAL.try_with(|l| move_to(l, lane));
}

/// The calling thread is giving its lane slot back: its allocations
/// count in its own slot or the shards from now on, so that they never
/// land in a lane slot another thread has taken.
pub(crate) fn released() {
    let _ = LOCAL.try_with(|l| {
        // Ending, most likely: not worth a slot for good.
        if l.own.get() == UNCLAIMED {
            l.own.set(SHARED);
        }
        move_to(l, NONE)
    });
}

/// The thread's allocations count in `lane` from now on; what its spans
/// were not charged stays as it was, whatever the slot counted before.
fn move_to(local: &Local, lane: u16) {
    let before = lane_allocated(local);
    local.lane.set(lane);
    let jump = lane_allocated(local).wrapping_sub(before);
    local.charged.set(local.charged.get().wrapping_add(jump));
}

/// The counters a thread writes: its lane's or its own slot (its own
/// to write), or its shard's.
#[inline]
fn counters(local: &Local) -> Result<&'static Bytes, &'static Bytes> {
    if let Some(bytes) = LANES.get(usize::from(local.lane.get())) {
        return Ok(bytes);
    }
    match local.own.get() {
        UNCLAIMED => claim_own(local),
        // A thread's thread-locals live apart from another's: their
        // address spreads threads over the shards.
        SHARED => Err(&UNLANED[(local as *const Local as usize >> 6) % SHARDS]),
        slot => Ok(&OWNED[usize::from(slot)]),
    }
}

/// The calling thread's first allocation without a lane: a slot of its
/// own if one is left.
#[cold]
fn claim_own(local: &Local) -> Result<&'static Bytes, &'static Bytes> {
    let slot = OWNED_TAKEN.fetch_add(1, Ordering::Relaxed);
    match OWNED.get(slot) {
        Some(bytes) => {
            local.own.set(slot as u16);
            Ok(bytes)
        }
        None => {
            local.own.set(SHARED);
            counters(local)
        }
    }
}

/// Adds `size` to the calling thread's counter that `which` picks: its
/// lane's or own slot's (its own to write) or its shard's; a shard's if
/// its thread-locals are gone (it is ending).
#[inline]
fn count(local: Option<&Local>, which: fn(&Bytes) -> &AtomicU64, size: usize) {
    match local.map(counters) {
        Some(Ok(lane)) => Bytes::add_owned(which(lane), size),
        Some(Err(shard)) => {
            which(shard).fetch_add(size as u64, Ordering::Relaxed);
        }
        None => {
            which(&UNLANED[0]).fetch_add(size as u64, Ordering::Relaxed);
        }
    }
}

fn allocated_bytes(bytes: &Bytes) -> &AtomicU64 {
    &bytes.allocated
}

fn freed_bytes(bytes: &Bytes) -> &AtomicU64 {
    &bytes.freed
}

/// Counts `size` bytes allocated at `address`, and samples the
/// allocation when its thread's countdown says so.
#[inline]
fn allocated(address: *mut u8, size: usize) {
    // Read-mostly: written once.
    if !COUNTING.load(Ordering::Relaxed) {
        COUNTING.store(true, Ordering::Relaxed);
    }
    let counted = LOCAL.try_with(|local| {
        count(Some(local), allocated_bytes, size);
        if local.countdown.allocated(size) && !local.busy.replace(true) {
            allocation_sites::sampled(address as usize, size);
            local.busy.set(false);
        }
    });
    if counted.is_err() {
        count(None, allocated_bytes, size);
    }
}

/// Counts `size` bytes allocated, never sampled.
fn allocated_unsampled(size: usize) {
    if LOCAL
        .try_with(|local| count(Some(local), allocated_bytes, size))
        .is_err()
    {
        count(None, allocated_bytes, size);
    }
}

/// Counts `size` bytes freed at `address`, and forgets the block if it
/// was sampled.
#[inline]
fn freed(address: *mut u8, size: usize) {
    let sampled = allocation_sites::may_be_sampled(address as usize);
    let counted = LOCAL.try_with(|local| {
        count(Some(local), freed_bytes, size);
        // Inside the sampler or the sites' lock (a signal handler's free)
        // it is not looked up: were it sampled, the next sample at its
        // address frees it.
        if sampled && !local.busy.replace(true) {
            allocation_sites::freed(address as usize);
            local.busy.set(false);
        }
    });
    if counted.is_err() {
        count(None, freed_bytes, size);
        if sampled {
            allocation_sites::freed(address as usize);
        }
    }
}

/// The calling thread's allocations are counted and never sampled from
/// now on; its frees are still looked up. For the profiler's own threads
/// whose memory is its own business (the symbolizer's parsed debug
/// information), not a site of the program's.
pub(crate) fn never_sampled() {
    let _ = LOCAL.try_with(|local| local.countdown.stop());
}

/// Runs `f` with the calling thread's sampling held off: what it
/// allocates and frees is counted, never sampled, and never looked up
/// (the exporter, holding the sites' lock, must not take it again).
pub(crate) fn unsampled<R>(f: impl FnOnce() -> R) -> R {
    let was = LOCAL
        .try_with(|local| local.busy.replace(true))
        .unwrap_or(true);
    let result = f();
    if !was {
        let _ = LOCAL.try_with(|local| local.busy.set(false));
    }
    result
}

/// Where a span began in its thread's allocations ([`span_began`]): the
/// bytes its thread had allocated and not charged to a span; none when
/// nothing was counted yet.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SpanMark(Option<u64>);

/// A span begins on the calling thread, which has a lane.
#[inline]
pub(crate) fn span_began() -> SpanMark {
    if !COUNTING.load(Ordering::Relaxed) {
        return SpanMark(None);
    }
    SpanMark(LOCAL.try_with(uncharged).ok())
}

/// The calling thread's bytes allocated and not charged to a span.
#[inline]
fn uncharged(local: &Local) -> u64 {
    lane_allocated(local).wrapping_sub(local.charged.get())
}

/// The span begun at `mark` ends on the calling thread: the bytes it
/// allocated while it was the thread's innermost open span. Spans on a
/// thread nest, so the spans that ended since `mark` are its
/// descendants, and what they allocated themselves is its children's
/// share; it is charged to nothing else.
#[inline]
pub(crate) fn own_bytes(mark: SpanMark) -> u64 {
    let Some(mark) = mark.0 else {
        return 0;
    };
    LOCAL
        .try_with(|local| {
            // What it allocated, less what its descendants were charged.
            let own = uncharged(local).wrapping_sub(mark);
            // Never less than nothing (a mark from before a thread-local
            // was gone).
            let own = if own > i64::MAX as u64 { 0 } else { own };
            local.charged.set(local.charged.get().wrapping_add(own));
            own
        })
        .unwrap_or(0)
}

/// The calling thread's lane's bytes allocated (0 without a lane).
#[inline]
fn lane_allocated(local: &Local) -> u64 {
    LANES
        .get(usize::from(local.lane.get()))
        .map_or(0, |lane| lane.allocated.load(Ordering::Relaxed))
}

/// Lane slot `lane`'s bytes allocated and freed so far, by whichever
/// threads held it (a reader tells them apart by thread id).
pub fn lane_bytes(lane: LaneId) -> Option<(u64, u64)> {
    LANES.get(usize::from(lane)).map(Bytes::read)
}

/// Bytes allocated and freed so far through [`Tracking`], by every
/// thread: what the process holds is their difference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryTotals {
    /// Allocated.
    pub allocated: u64,
    /// Freed.
    pub freed: u64,
}

impl MemoryTotals {
    /// Allocated and not freed.
    pub fn live(&self) -> u64 {
        self.allocated.saturating_sub(self.freed)
    }
}

/// Whether an allocation went through [`Tracking`] yet: whether there is
/// any memory to tell.
pub fn counting() -> bool {
    COUNTING.load(Ordering::Relaxed)
}

/// The process's totals, every lane's, own slot's and shard's summed.
pub fn memory_totals() -> MemoryTotals {
    let mut totals = MemoryTotals::default();
    let all = LANES.iter().chain(OWNED.iter()).chain(UNLANED.iter());
    for (allocated, freed) in all.map(Bytes::read) {
        totals.allocated = totals.allocated.wrapping_add(allocated);
        totals.freed = totals.freed.wrapping_add(freed);
    }
    totals
}

/// A `GlobalAlloc` that counts what it allocates and frees, by lane,
/// over `A`: `System`, mimalloc, jemalloc.
#[derive(Debug, Default)]
pub struct Tracking<A> {
    inner: A,
}

impl<A> Tracking<A> {
    /// Counting over `inner`.
    pub const fn new(inner: A) -> Self {
        Tracking { inner }
    }
}

// SAFETY: every call is passed to `inner`, a `GlobalAlloc`, with the
// caller's own arguments, and its result returned as it is: `Tracking`
// keeps every contract `inner` keeps. The counting beside it neither
// allocates nor unwinds.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Tracking<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        let ptr = unsafe { self.inner.alloc(layout) };
        if !ptr.is_null() {
            allocated(ptr, layout.size());
        }
        ptr
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let ptr = unsafe { self.inner.alloc_zeroed(layout) };
        if !ptr.is_null() {
            allocated(ptr, layout.size());
        }
        ptr
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Before the block is given back: once it is, another thread may
        // be handed the address, and sample it.
        freed(ptr, layout.size());
        // SAFETY: the caller's block, allocated by this allocator (so by
        // `inner`) with `layout`.
        unsafe { self.inner.dealloc(ptr, layout) };
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // As for `dealloc`, before the block may move. Should `inner`
        // fail (the block then stays), its sample is lost, not kept twice.
        freed(ptr, layout.size());
        // SAFETY: the caller's block, layout and size, as `realloc`
        // requires.
        let moved = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if moved.is_null() {
            // Still allocated: counted back.
            allocated_unsampled(layout.size());
        } else {
            allocated(moved, new_size);
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use std::alloc::System;

    use super::*;
    use crate::runtime;

    /// Each test's thread claims a lane of its own; the lanes are
    /// per-process, so each reads its own slot only.
    #[test]
    fn a_lane_thread_counts_in_its_lane_and_laneless_ones_in_their_slots_and_the_shards() {
        let tracking = Tracking::new(System);
        let layout = Layout::from_size_align(1000, 8).unwrap();
        let lane = std::thread::spawn(move || {
            runtime::register_thread("tracked", typhon_live_core::LaneKind::Worker);
            let lane = runtime::with_lane(|l| l.id()).expect("a lane");
            let before = lane_bytes(lane).unwrap();
            // SAFETY: a layout of non-zero size; the block is freed below
            // with it, after a realloc that keeps its alignment.
            unsafe {
                let block = tracking.alloc(layout);
                assert!(!block.is_null());
                let bigger = tracking.realloc(block, layout, 3000);
                assert!(!bigger.is_null());
                tracking.dealloc(bigger, Layout::from_size_align(3000, 8).unwrap());
            }
            let after = lane_bytes(lane).unwrap();
            (before, after)
        })
        .join()
        .unwrap();
        let ((a0, f0), (a1, f1)) = lane;
        // 1000, then 3000 for the realloc; 1000 freed by it, 3000 at the end.
        assert_eq!((a1 - a0, f1 - f0), (4000, 4000));

        // Threads without a lane, more than there are own slots (the
        // last in the shards): the process's totals move by as much.
        let totals = memory_totals();
        let threads = OWN_SLOTS as u64 + 4;
        for _ in 0..threads {
            std::thread::spawn(move || {
                let tracking = Tracking::new(System);
                // SAFETY: as above.
                unsafe {
                    let block = tracking.alloc_zeroed(layout);
                    assert!(!block.is_null());
                    assert_eq!(*block, 0);
                    tracking.dealloc(block, layout);
                }
            })
            .join()
            .unwrap();
        }
        assert!(OWNED_TAKEN.load(Ordering::Relaxed) > OWN_SLOTS);
        let now = memory_totals();
        // Other tests' threads may count too: at least ours.
        let (allocated, freed) = (now.allocated - totals.allocated, now.freed - totals.freed);
        assert!(allocated >= threads * 1000, "{totals:?} {now:?}");
        assert!(freed >= threads * 1000, "{totals:?} {now:?}");
    }

    /// Allocates `count` blocks of `size` bytes through `tracking`, from
    /// a site of its own.
    #[inline(never)]
    fn kept_site(tracking: &Tracking<System>, count: usize, size: usize) -> Vec<usize> {
        let layout = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: a layout of non-zero size; the caller frees each block
        // with it.
        (0..count)
            .map(|_| unsafe { tracking.alloc(layout) } as usize)
            .collect()
    }

    /// As [`kept_site`], on a thread never sampled.
    #[inline(never)]
    fn never_site(tracking: &Tracking<System>, count: usize, size: usize) -> Vec<usize> {
        let layout = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: as above.
        (0..count)
            .map(|_| unsafe { tracking.alloc(layout) } as usize)
            .collect()
    }

    /// As [`kept_site`], another site.
    #[inline(never)]
    fn other_site(tracking: &Tracking<System>, count: usize, size: usize) -> Vec<usize> {
        let layout = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: as above.
        (0..count)
            .map(|_| unsafe { tracking.alloc(layout) } as usize)
            .collect()
    }

    /// As [`kept_site`], a third site, whose blocks the test frees.
    #[inline(never)]
    fn freed_site(tracking: &Tracking<System>, count: usize, size: usize) -> Vec<usize> {
        let layout = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: as above.
        (0..count)
            .map(|_| unsafe { tracking.alloc(layout) } as usize)
            .collect()
    }

    #[test]
    fn sampled_sites_estimate_each_sites_live_bytes_and_a_freed_site_holds_none() {
        let tracking = Tracking::new(System);
        // One sample in 4 KiB: about 2 500 samples for each 10 MB site.
        allocation_sites::set_sampling_mean(4096);
        // A thread of its own: its countdown starts afresh.
        let (kept, other, freed) = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    (
                        kept_site(&tracking, 10_000, 1000),
                        other_site(&tracking, 2_500, 2000),
                        freed_site(&tracking, 10_000, 1000),
                    )
                })
                .join()
                .unwrap()
        });
        // The symbolizer's kind of thread: counted, never sampled.
        let never = std::thread::scope(|scope| {
            let spawned = scope.spawn(|| {
                never_sampled();
                never_site(&tracking, 10_000, 1000)
            });
            spawned.join().unwrap()
        });
        let free = |blocks: &[usize], size| {
            let layout = Layout::from_size_align(size, 8).unwrap();
            for &block in blocks {
                // SAFETY: each block was allocated above with this layout.
                unsafe { tracking.dealloc(block as *mut u8, layout) };
            }
        };
        free(&freed, 1000);
        allocation_sites::set_sampling_mean(0);

        let mut sites = Vec::with_capacity(allocation_sites::MAX_SITES);
        unsampled(|| allocation_sites::take_sites(true, &mut sites));
        let site = |name: &str| {
            let mut found = sites
                .iter()
                .filter(|s| allocation_sites::tests::names_at(&s.addresses).contains(name));
            let totals = found.next().map(|s| s.totals).unwrap_or_default();
            assert!(found.next().is_none(), "one site allocates in {name}");
            totals
        };
        // Each site's stack holds its function, or (a build with line
        // tables only) its closure, named by its path.
        let (kept_totals, other_totals, freed_totals) = (
            site("tests::kept_site"),
            site("tests::other_site"),
            site("tests::freed_site"),
        );
        for (totals, truth) in [(kept_totals, 10_000_000.0), (other_totals, 5_000_000.0)] {
            let error = totals.live() as f64 / truth - 1.0;
            assert!(error.abs() < 0.1, "{totals:?}: {error:+.3} of {truth}");
        }
        assert!(freed_totals.allocations > 1000, "{freed_totals:?}");
        assert_eq!(freed_totals.frees, freed_totals.allocations);
        assert_eq!(freed_totals.live(), 0, "{freed_totals:?}");
        assert_eq!(
            site("tests::never_site"),
            typhon_live_core::SiteTotals::default()
        );
        free(&never, 1000);
        free(&kept, 1000);
        free(&other, 2000);
    }

    #[test]
    fn a_released_lane_no_longer_counts_the_threads_allocations() {
        let tracking = Tracking::new(System);
        let layout = Layout::from_size_align(64, 8).unwrap();
        std::thread::spawn(move || {
            runtime::register_thread("releasing", typhon_live_core::LaneKind::Worker);
            let lane = runtime::with_lane(|l| l.id()).expect("a lane");
            released();
            let before = lane_bytes(lane).unwrap();
            // SAFETY: as above.
            unsafe { tracking.dealloc(tracking.alloc(layout), layout) };
            assert_eq!(lane_bytes(lane).unwrap(), before);
        })
        .join()
        .unwrap();
    }

    /// A span is charged what its thread allocated while it was the
    /// innermost open one: its children's own bytes are theirs; spans
    /// ended out of order never go below nothing; a lane given back and
    /// taken again meanwhile charges only what was counted on the lane.
    #[test]
    fn a_span_is_charged_its_own_bytes() {
        let tracking = Tracking::new(System);
        std::thread::spawn(move || {
            runtime::register_thread("charged", typhon_live_core::LaneKind::Worker);
            let lane = runtime::with_lane(|l| l.id()).expect("a lane");
            let allocate = |size: usize| {
                let layout = Layout::from_size_align(size, 8).unwrap();
                // SAFETY: a layout of non-zero size; the block is freed
                // with it at once (freeing charges nothing).
                unsafe {
                    let block = tracking.alloc(layout);
                    assert!(!block.is_null());
                    tracking.dealloc(block, layout);
                }
            };
            allocate(1000);
            let outer = span_began();
            allocate(300);
            let inner = span_began();
            allocate(500);
            assert_eq!(own_bytes(inner), 500);
            allocate(7);
            assert_eq!(own_bytes(outer), 307, "its child's left out");

            let (first, second) = (span_began(), span_began());
            allocate(10);
            assert_eq!(own_bytes(first), 10);
            assert_eq!(own_bytes(second), 0, "ended after its parent");

            let across = span_began();
            released();
            allocate(100);
            claimed(lane);
            allocate(5);
            assert_eq!(own_bytes(across), 5, "the lane-less bytes are no span's");
        })
        .join()
        .unwrap();
    }
}
