//! Log texts: a log event's message and fields, kept beside the spans.
//!
//! A recording thread formats its text and [`record`]s it: the text goes
//! in a process-wide queue, bounded in texts and bytes, which the exporter
//! thread takes once a cycle and sends in Text frames (FORMAT.md, "Text
//! frames"). A text that finds the queue full is counted, and every reader
//! is told how many were lost.
//!
//! Why a queue beside the lanes rather than in them: a lane's ring holds
//! fixed-size events, and a text has any length up to
//! [`MAX_TEXT_BYTES`](typhon_live_core::MAX_TEXT_BYTES). Why one queue
//! under a lock: a text is formatted first, which costs far more than an
//! uncontended lock, and one queue keeps the texts of all threads in the
//! order they were recorded.
//!
//! A text names its lane by slot. A thread that logs and ends can have its
//! slot given to a new thread before its texts are sent; each slot's claims
//! are counted, so such a text is sent without a lane rather than on the
//! new thread's.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

use typhon_live_core::text::within_bound;
use typhon_live_core::{LaneId, Level, NameId, Text, TextBatch};

use crate::runtime::{self, MAX_LANES};

/// Texts the queue holds between two exporter cycles.
pub const QUEUE_TEXTS: usize = 16_384;
/// Bytes of text the queue holds between two exporter cycles.
pub const QUEUE_BYTES: usize = 1 << 20;

/// One queued text; its bytes are in the queue's arena.
#[derive(Clone, Copy)]
struct Queued {
    time: u64,
    lane: LaneId,
    claim: u32,
    level: Level,
    site: NameId,
    start: u32,
    len: u16,
    cut: bool,
}

/// The texts recorded since the exporter last took them.
#[derive(Default)]
pub(crate) struct Queue {
    texts: Vec<Queued>,
    arena: String,
    refused: u32,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    texts: Vec::new(),
    arena: String::new(),
    refused: 0,
});

/// Per lane slot: how many times it was claimed.
static CLAIMS: [AtomicU32; MAX_LANES] = [const { AtomicU32::new(0) }; MAX_LANES];

fn queue() -> MutexGuard<'static, Queue> {
    // Plain data, consistent after every push: keep using it after a panic.
    QUEUE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A thread claimed lane slot `lane`.
pub(crate) fn claimed(lane: LaneId) {
    if let Some(claims) = CLAIMS.get(usize::from(lane)) {
        claims.fetch_add(1, Ordering::Release);
    }
}

fn claims(lane: LaneId) -> u32 {
    CLAIMS
        .get(usize::from(lane))
        .map_or(0, |c| c.load(Ordering::Acquire))
}

/// Records `text` of call site `site` (a name) at `level`, on this
/// thread's lane, now. A text longer than
/// [`MAX_TEXT_BYTES`](typhon_live_core::MAX_TEXT_BYTES) is cut, and the cut
/// is said. Does nothing when no profiler records; counted as lost when
/// the queue is full.
pub fn record(site: NameId, level: Level, text: &str) {
    record_at(runtime::now(), site, level, text);
}

/// [`record`] at `time` (from [`runtime::now`]): for a caller that records
/// an instant of the same moment ([`runtime::instant_at`]).
pub fn record_at(time: u64, site: NameId, level: Level, text: &str) {
    if !runtime::is_enabled() {
        return;
    }
    let Some(lane) = runtime::with_lane(|lane| lane.id()) else {
        return;
    };
    let (body, cut) = within_bound(text);
    let claim = claims(lane);
    let mut queue = queue();
    if queue.texts.len() >= QUEUE_TEXTS || queue.arena.len() + body.len() > QUEUE_BYTES {
        queue.refused = queue.refused.saturating_add(1);
        return;
    }
    let start = queue.arena.len() as u32;
    queue.arena.push_str(body);
    queue.texts.push(Queued {
        time,
        lane,
        claim,
        level,
        site,
        start,
        len: body.len() as u16,
        cut,
    });
}

/// The texts the exporter took in one cycle, sent batch by batch.
#[derive(Default)]
pub(crate) struct Taken {
    queue: Queue,
    /// The next text to put in a batch.
    next: usize,
}

impl Taken {
    /// Takes what the queue holds, leaving it this one's emptied storage.
    pub(crate) fn take(&mut self) {
        self.queue.texts.clear();
        self.queue.arena.clear();
        self.queue.refused = 0;
        self.next = 0;
        std::mem::swap(&mut self.queue, &mut queue());
    }

    /// Texts refused since the last take, told once.
    pub(crate) fn take_refused(&mut self) -> u32 {
        std::mem::take(&mut self.queue.refused)
    }

    /// Whether a batch is still to be filled.
    pub(crate) fn has_more(&self) -> bool {
        self.next < self.queue.texts.len()
    }

    /// Fills `batch` with the next texts, as many as fit. A text's lane is
    /// dropped if its slot was claimed again since it was recorded.
    pub(crate) fn fill(&mut self, batch: &mut TextBatch<'_>) {
        batch.clear();
        while let Some(q) = self.queue.texts.get(self.next) {
            let start = q.start as usize;
            let body = self
                .queue
                .arena
                .get(start..start + usize::from(q.len))
                .unwrap_or_default();
            let text = Text {
                time: q.time,
                lane: (claims(q.lane) == q.claim).then_some(q.lane),
                level: q.level,
                site: q.site,
                text: body,
                cut: q.cut,
            };
            if !batch.push(&text) {
                return;
            }
            self.next += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_of_a_slot_claimed_again_loses_its_lane() {
        let mut taken = Taken::default();
        taken.queue.arena.push_str("ab");
        let queued = Queued {
            time: 1,
            lane: 5,
            claim: claims(5),
            level: Level::Info,
            site: 1,
            start: 0,
            len: 2,
            cut: false,
        };
        taken.queue.texts.extend([queued, queued]);
        let mut buf = vec![0u8; 1024];
        let mut batch = TextBatch::new(&mut buf);
        taken.fill(&mut batch);
        assert_eq!(batch.len(), 2);
        taken.next = 0;
        claimed(5);
        taken.fill(&mut batch);
        assert_eq!(batch.len(), 2);
        let mut out = vec![0u8; batch.frame_len()];
        let len = typhon_live_core::text::write_texts(&mut out, 0, 0, &batch).unwrap();
        let view = typhon_live_core::TextsView::parse(&out[16..len - 4]).unwrap();
        assert!(view.texts().all(|t| t.lane.is_none() && t.text == "ab"));
    }
}
