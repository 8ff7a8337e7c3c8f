//! A capture: gathered from a checkpoint while its window lasts, then
//! written whole as a trace file.

use alloc::vec::Vec;

use typhon_live_core::frame::frame_around;
use typhon_live_core::FrameKind;
use typhon_live_reader::Start;

use crate::ring::Kept;
use crate::trigger::Fired;

/// Triggers kept per capture, at most; later ones are counted.
pub const MAX_FIRED_PER_CAPTURE: usize = 64;

/// A capture being gathered.
#[derive(Debug)]
pub(crate) struct Gathering {
    start: Start,
    frames: Vec<Kept>,
    bytes: usize,
    /// The window: from the checkpoint's time to the last trigger's plus
    /// the window after, within the capture's bounds.
    begin: u64,
    pub(crate) end: u64,
    limit: u64,
    fired: Vec<Fired>,
    fired_more: u64,
    cut: bool,
}

/// A capture, whole: a trace file's bytes, and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    /// The trace file: an Init and a Catch-up written from the reader's
    /// state at the window's start, then the stream's frames as
    /// received, their sequence numbers counted from the start's.
    pub bytes: Vec<u8>,
    /// Its window, ns of the stream's clock.
    pub begin: u64,
    /// See `begin`.
    pub end: u64,
    /// The triggers that made it, in order (at most
    /// [`MAX_FIRED_PER_CAPTURE`]).
    pub fired: Vec<Fired>,
    /// Triggers past that bound, counted.
    pub fired_more: u64,
    /// It stopped at a bound (its length in time or bytes) before its
    /// window ended.
    pub cut: bool,
}

impl Gathering {
    /// A capture from `start` and the frames after it, for a window
    /// that ends at `end` and may last until `limit`.
    pub(crate) fn new<'a>(
        start: Start,
        begin: u64,
        frames: impl Iterator<Item = &'a Kept>,
        fired: Fired,
        end: u64,
        limit: u64,
    ) -> Gathering {
        let frames: Vec<Kept> = frames.cloned().collect();
        let bytes = start.bytes.len() + frames.iter().map(|f| f.bytes.len()).sum::<usize>();
        let mut gathering = Gathering {
            start,
            frames,
            bytes,
            begin,
            end: 0,
            limit,
            fired: Vec::new(),
            fired_more: 0,
            cut: false,
        };
        gathering.fired(fired, end);
        gathering
    }

    /// Bytes gathered.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// One more trigger in the window: it ends at `end` now, unless that
    /// is past the capture's limit.
    pub(crate) fn fired(&mut self, fired: Fired, end: u64) {
        if end > self.limit {
            self.cut = true;
        }
        self.end = self.end.max(end.min(self.limit));
        if self.fired.len() < MAX_FIRED_PER_CAPTURE {
            self.fired.push(fired);
        } else {
            self.fired_more += 1;
        }
    }

    pub(crate) fn push(&mut self, kept: Kept) {
        self.bytes += kept.bytes.len();
        self.frames.push(kept);
    }

    /// It reached a bound before its window's end.
    pub(crate) fn cut(&mut self) {
        self.cut = true;
    }

    /// The trace file: the start, then every frame sealed again with its
    /// number in the capture. Gaps stay gaps; an Init (a new session, a
    /// new connection) names the number the next frame takes.
    pub(crate) fn finish(self) -> Capture {
        let mut out = Vec::with_capacity(self.bytes);
        out.extend_from_slice(&self.start.bytes);
        let mut next = self.start.next_seq;
        // The number the stream's next sequenced frame would carry.
        let mut expected: Option<u32> = None;
        for kept in &self.frames {
            let seq = kept.seq();
            let numbered = if kept.kind() == FrameKind::Init.to_byte() {
                expected = Some(seq);
                next
            } else {
                // A gap (a number past the expected one, within half the
                // space) stays a gap; anything else takes the next number.
                let gap = expected
                    .map(|e| seq.wrapping_sub(e))
                    .filter(|&g| g < 1 << 31)
                    .unwrap_or(0);
                expected = Some(seq.wrapping_add(1));
                let numbered = next.wrapping_add(gap);
                next = numbered.wrapping_add(1);
                numbered
            };
            let payload = kept.payload();
            // Only a payload over 4 GiB fails here, and none is kept.
            if let Ok((header, trailer)) =
                frame_around(kept.kind(), kept.flags(), numbered, payload)
            {
                out.extend_from_slice(&header);
                out.extend_from_slice(payload);
                out.extend_from_slice(&trailer);
            }
        }
        Capture {
            bytes: out,
            begin: self.begin,
            end: self.end,
            fired: self.fired,
            fired_more: self.fired_more,
            cut: self.cut,
        }
    }
}
