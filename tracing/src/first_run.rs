//! Spans whose first run waits, unrecorded, on some thread (see
//! `thread.rs`), so that another thread entering one of them knows it is
//! a task span's second poll, not an ordinary span's only run.
//!
//! A fixed table of slots, each holding one span id: a store when a
//! span's first run ends, a load when a span is entered, a
//! compare-and-swap when it closes; no lock, no allocation. Two spans
//! whose ids share a slot at once make the later one go unmarked: if
//! that one is then entered on another thread before its first thread
//! moves on, its two runs are recorded as two spans. With this many
//! slots that takes thousands of spans waiting at once.

use std::sync::atomic::{AtomicU64, Ordering};

use tracing_core::span::Id;

const SLOTS: usize = 4096;
/// Set on a slot's id once another thread made the span a task.
const PROMOTED: u64 = 1 << 63;

static TABLE: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

fn slot(id: &Id) -> &'static AtomicU64 {
    let key = id.into_u64();
    // Fibonacci hashing: ids of one registry shard differ in low bits.
    let at = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize % SLOTS;
    &TABLE[at]
}

/// The span's first run ended and waits on this thread.
#[inline]
pub(crate) fn mark(id: &Id) {
    slot(id).store(id.into_u64() & !PROMOTED, Ordering::Relaxed);
}

/// Whether the span's first run waits on some thread.
#[inline]
pub(crate) fn is_marked(id: &Id) -> bool {
    slot(id).load(Ordering::Relaxed) == id.into_u64() & !PROMOTED
}

/// Another thread made the span a task: its waiting first run is a poll.
pub(crate) fn promote(id: &Id) {
    let key = id.into_u64() & !PROMOTED;
    // Release: a thread that sees it sees the task made before it.
    let _ = slot(id).compare_exchange(key, key | PROMOTED, Ordering::Release, Ordering::Relaxed);
}

/// Forgets the span; whether another thread had made it a task. No
/// other thread can touch its slot meanwhile (it closes, or its first
/// run is being recorded, so nobody enters it), unless another span's id
/// shares the slot, which at worst loses that one's mark.
#[inline]
pub(crate) fn clear(id: &Id) -> bool {
    let key = id.into_u64() & !PROMOTED;
    let slot = slot(id);
    let held = slot.load(Ordering::Acquire);
    if held & !PROMOTED == key {
        slot.store(0, Ordering::Relaxed);
    }
    held == key | PROMOTED
}
