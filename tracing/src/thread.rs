//! What one thread holds between the layer's calls: the spans it has
//! entered, and the one span it exited whose close has not come yet.
//!
//! Why a span waits here: whether a span is an ordinary span or a task
//! span (one that crosses an `.await`) is known only after its first
//! exit. If it closes next on this thread, it was ordinary, and it is
//! recorded as a span, at no more cost than recording it at its exit. If
//! this thread moves on first (enters or exits another span, or the span
//! is entered again), the span is a task span: its first run becomes its
//! first poll, and its call site's spans are task spans from then on.

use std::cell::RefCell;

use tracing_core::span::Id;
use typhon_live_std::runtime::{Ended, SpanGuard};

use crate::site::{NameId, Site};

/// A span entered on this thread and not yet exited.
pub(crate) struct Entered {
    pub(crate) id: Id,
    pub(crate) guard: SpanGuard,
    /// Its task, if it is known to be a task span.
    pub(crate) task: Option<u64>,
    pub(crate) name: NameId,
    pub(crate) site: &'static Site,
    /// It has fields to record after it.
    pub(crate) has_fields: bool,
}

/// A span exited on this thread whose close has not come yet.
pub(crate) struct Pending {
    pub(crate) id: Id,
    pub(crate) ended: Ended,
    pub(crate) name: NameId,
    pub(crate) site: &'static Site,
    /// It has fields to record after it.
    pub(crate) has_fields: bool,
}

#[derive(Default)]
pub(crate) struct Thread {
    /// Innermost last.
    pub(crate) entered: Vec<Entered>,
    pub(crate) pending: Option<Pending>,
}

impl Drop for Thread {
    fn drop(&mut self) {
        // The thread ends before the span closed: it ran once, here.
        if let Some(pending) = self.pending.take() {
            pending.ended.record();
        }
    }
}

thread_local! {
    static THREAD: RefCell<Thread> = RefCell::new(Thread::default());
}

/// Runs `f` on this thread's state, unless it is already borrowed (a
/// hook called from inside a hook) or gone (the thread is ending).
#[inline]
pub(crate) fn with<R>(f: impl FnOnce(&mut Thread) -> R) -> Option<R> {
    THREAD
        .try_with(|thread| thread.try_borrow_mut().ok().map(|mut t| f(&mut t)))
        .ok()
        .flatten()
}
