//! Memory by lane (issue 40, its first part): an allocator wrapper that
//! counts each lane's allocated and freed bytes, over any `GlobalAlloc`.
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
//! loads. A thread without one (not recording, or past the lanes) counts
//! in one of [`SHARDS`] process-wide counters, picked by where its
//! thread-local data lives. Nothing here allocates, so it never recurses
//! into itself; a thread's lane is a `const` thread-local without a
//! destructor, readable from another destructor, after its lane is gone.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use typhon_live_core::LaneId;

use crate::runtime::MAX_LANES;

/// Process-wide counters for threads without a lane.
pub const SHARDS: usize = 16;

/// A lane's, or a shard's, bytes allocated and freed, on a cache line of
/// its own so that two writers never share one.
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
static UNLANED: [Bytes; SHARDS] = [const { Bytes::zero() }; SHARDS];

/// No lane.
const NONE: u16 = u16::MAX;

thread_local! {
    // `const` and without a destructor: no allocation to set it up, and
    // readable while other thread-locals are being destroyed.
    static LANE: Cell<u16> = const { Cell::new(NONE) };
}

/// The calling thread took lane slot `lane`: its allocations count there
/// from now on.
pub(crate) fn claimed(lane: LaneId) {
    let _ = LANE.try_with(|l| l.set(lane));
}

/// The calling thread is giving its lane slot back: its allocations
/// count in the shards from now on, so that they never land in a slot
/// another thread has taken.
pub(crate) fn released() {
    let _ = LANE.try_with(|l| l.set(NONE));
}

/// The counters the calling thread writes: its lane's, or its shard's.
#[inline]
fn counters() -> Result<&'static Bytes, &'static Bytes> {
    let lane = LANE.try_with(Cell::get).unwrap_or(NONE);
    match LANES.get(usize::from(lane)) {
        Some(bytes) => Ok(bytes),
        None => {
            // A thread's thread-locals live apart from another's: their
            // address spreads threads over the shards.
            let at = LANE
                .try_with(|l| l as *const Cell<u16> as usize)
                .unwrap_or(0);
            Err(&UNLANED[(at >> 6) % SHARDS])
        }
    }
}

#[inline]
fn allocated(n: usize) {
    match counters() {
        Ok(lane) => Bytes::add_owned(&lane.allocated, n),
        Err(shard) => {
            shard.allocated.fetch_add(n as u64, Ordering::Relaxed);
        }
    }
}

#[inline]
fn freed(n: usize) {
    match counters() {
        Ok(lane) => Bytes::add_owned(&lane.freed, n),
        Err(shard) => {
            shard.freed.fetch_add(n as u64, Ordering::Relaxed);
        }
    }
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

/// The process's totals, every lane's and shard's summed.
pub fn memory_totals() -> MemoryTotals {
    let mut totals = MemoryTotals::default();
    for (allocated, freed) in LANES.iter().chain(UNLANED.iter()).map(Bytes::read) {
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
            allocated(layout.size());
        }
        ptr
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let ptr = unsafe { self.inner.alloc_zeroed(layout) };
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's block, allocated by this allocator (so by
        // `inner`) with `layout`.
        unsafe { self.inner.dealloc(ptr, layout) };
        freed(layout.size());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's block, layout and size, as `realloc`
        // requires.
        let moved = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            freed(layout.size());
            allocated(new_size);
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
    fn a_lane_thread_counts_in_its_lane_and_a_laneless_one_in_the_shards() {
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

        // A thread without a lane: the process's totals move by as much.
        let totals = memory_totals();
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
        let now = memory_totals();
        // Other tests' threads may count too: at least ours.
        assert!(
            now.allocated - totals.allocated >= 1000,
            "{totals:?} {now:?}"
        );
        assert!(now.freed - totals.freed >= 1000, "{totals:?} {now:?}");
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
}
