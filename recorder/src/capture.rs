//! A capture: gathered from a checkpoint while its window lasts, then
//! written whole as a trace file.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use typhon_live_core::block::{block_scratch_len, max_block_frame_len, write_block, BlockBuilder};
use typhon_live_core::definitions::write_names;
use typhon_live_core::frame::frame_around;
use typhon_live_core::{Event, FrameKind, LaneId, NameId, NameSource};
use typhon_live_reader::{Clock, Start};

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
    /// Per fired trigger: its mark, and the frame it comes after.
    marks: Vec<(Marked, usize)>,
    fired_more: u64,
    cut: bool,
    /// The largest name id the stream had defined while this capture
    /// gathered: its marks' labels take the ids after it.
    last_name: Option<NameId>,
}

/// What a mark needs besides its [`Fired`]: its label, the lane to put it
/// on, and the clock of its session (marks are written in its ticks).
#[derive(Clone, Debug)]
pub(crate) struct Marked {
    pub label: String,
    pub lane: LaneId,
    pub clock: Clock,
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
        marked: Marked,
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
            marks: Vec::new(),
            fired_more: 0,
            cut: false,
            last_name: None,
        };
        gathering.fired(fired, marked, end);
        gathering
    }

    /// Bytes gathered.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// One more trigger in the window: it ends at `end` now, unless that
    /// is past the capture's limit.
    pub(crate) fn fired(&mut self, fired: Fired, marked: Marked, end: u64) {
        if end > self.limit {
            self.cut = true;
        }
        self.end = self.end.max(end.min(self.limit));
        if self.fired.len() < MAX_FIRED_PER_CAPTURE {
            self.marks.push((marked, self.frames.len()));
            self.fired.push(fired);
        } else {
            self.fired_more += 1;
        }
    }

    pub(crate) fn push(&mut self, kept: Kept) {
        self.bytes += kept.bytes.len();
        self.frames.push(kept);
    }

    /// The stream has defined names up to `last` (none: `None`).
    pub(crate) fn names_defined(&mut self, last: Option<NameId>) {
        self.last_name = self.last_name.max(last);
    }

    /// It reached a bound before its window's end.
    pub(crate) fn cut(&mut self) {
        self.cut = true;
    }

    /// The trace file: the start; the marks' labels; then every frame
    /// sealed again with its number in the capture, each mark in a Block
    /// of its own after the frame it fired on. Gaps stay gaps; an Init (a
    /// new session, a new connection) names the number the next frame
    /// takes, and the labels are defined again after it.
    pub(crate) fn finish(self) -> Capture {
        let labels = Labels::of(&self.marks, self.last_name);
        let mut out = Vec::with_capacity(self.bytes + 256 * self.marks.len());
        out.extend_from_slice(&self.start.bytes);
        let mut next = self.start.next_seq;
        next = labels.write(&mut out, next);
        // The number the stream's next sequenced frame would carry.
        let mut expected: Option<u32> = None;
        let mut marks = self.marks.iter().zip(&self.fired).peekable();
        for (index, kept) in self.frames.iter().enumerate() {
            while let Some(((marked, _), fired)) = marks.next_if(|((_, at), _)| *at <= index) {
                next = write_mark(&mut out, next, fired, marked, labels.id(&marked.label));
            }
            let seq = kept.seq();
            let is_init = kept.kind() == FrameKind::Init.to_byte();
            let numbered = if is_init {
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
            if is_init {
                next = labels.write(&mut out, next);
            }
        }
        for ((marked, _), fired) in marks {
            next = write_mark(&mut out, next, fired, marked, labels.id(&marked.label));
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

/// The marks' labels, each once, and the ids they take.
struct Labels {
    texts: Vec<String>,
    first: NameId,
}

impl NameSource for Labels {
    fn count(&self) -> u32 {
        self.first + self.texts.len() as u32
    }

    fn get(&self, id: NameId) -> Option<&str> {
        let at = id.checked_sub(self.first)?;
        self.texts.get(at as usize).map(String::as_str)
    }
}

impl Labels {
    fn of(marks: &[(Marked, usize)], last_name: Option<NameId>) -> Labels {
        let mut texts: Vec<String> = Vec::new();
        for (marked, _) in marks {
            if !texts.contains(&marked.label) {
                texts.push(marked.label.clone());
            }
        }
        // Ids past every one the stream defined; a stream that reached the
        // top of the id space leaves the labels as numbers.
        let first = last_name.map_or(0, |last| last.saturating_add(1));
        Labels { texts, first }
    }

    fn id(&self, label: &str) -> NameId {
        let at = self.texts.iter().position(|t| t == label).unwrap_or(0);
        self.first.saturating_add(at as u32)
    }

    /// A Definitions frame of the labels, numbered `seq`; the next number.
    fn write(&self, out: &mut Vec<u8>, seq: u32) -> u32 {
        if self.texts.is_empty() {
            return seq;
        }
        let len = self.texts.iter().map(|t| t.len() + 10).sum::<usize>() + 64;
        let mut frame = vec![0u8; len];
        match write_names(&mut frame, seq, self, self.first, self.texts.len() as u32) {
            Ok(n) => {
                out.extend_from_slice(&frame[..n]);
                seq.wrapping_add(1)
            }
            Err(_) => seq,
        }
    }
}

/// A Block of the one mark of `fired`, numbered `seq`; the next number.
fn write_mark(out: &mut Vec<u8>, seq: u32, fired: &Fired, marked: &Marked, label: NameId) -> u32 {
    let mut scratch = vec![0u8; block_scratch_len(1)];
    let mut block = BlockBuilder::new(&mut scratch);
    let mark = Event::Mark {
        time: marked.clock.ticks(fired.time),
        label,
        span: fired.span.map(|s| (s.name, marked.clock.ticks(s.start))),
    };
    block.push(marked.lane, &mark);
    let mut frame = vec![0u8; max_block_frame_len(block.capacity(), 0)];
    match write_block(&mut frame, seq, &block, &[]) {
        Ok(n) => {
            out.extend_from_slice(&frame[..n]);
            seq.wrapping_add(1)
        }
        Err(_) => seq,
    }
}
