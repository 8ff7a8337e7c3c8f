//! The recent past: the stream's frames as received, bounded by time and
//! bytes, and the checkpoints a capture can start from.

use alloc::collections::VecDeque;
use alloc::sync::Arc;

use typhon_live_reader::Checkpoint;

/// A frame kept: its bytes, as received, and when it came.
#[derive(Clone, Debug)]
pub(crate) struct Kept {
    /// The whole frame, header to trailer.
    pub bytes: Arc<[u8]>,
    /// The stream's latest time once it was read, ns.
    pub time: u64,
}

impl Kept {
    pub(crate) fn kind(&self) -> u8 {
        self.bytes[2]
    }

    pub(crate) fn flags(&self) -> u8 {
        self.bytes[3]
    }

    pub(crate) fn seq(&self) -> u32 {
        let b = &self.bytes;
        u32::from_le_bytes([b[4], b[5], b[6], b[7]])
    }

    pub(crate) fn payload(&self) -> &[u8] {
        use typhon_live_core::frame::{HEADER_LEN, TRAILER_LEN};
        &self.bytes[HEADER_LEN..self.bytes.len() - TRAILER_LEN]
    }
}

/// Frames kept, oldest first, with checkpoints by frame index.
#[derive(Debug, Default)]
pub(crate) struct Ring {
    frames: VecDeque<Kept>,
    /// The index of `frames[0]` since the recorder began.
    first: u64,
    bytes: usize,
    /// `(index, state)`: the reader's state before frame `index`.
    checkpoints: VecDeque<(u64, Checkpoint)>,
}

impl Ring {
    pub(crate) fn push(&mut self, kept: Kept) {
        self.bytes += kept.bytes.len();
        self.frames.push_back(kept);
    }

    /// The index the next frame pushed takes.
    pub(crate) fn next_index(&self) -> u64 {
        self.first + self.frames.len() as u64
    }

    /// The reader's state now, before the next frame.
    pub(crate) fn checkpoint(&mut self, checkpoint: Checkpoint) {
        let index = self.next_index();
        if let Some(last) = self.checkpoints.back_mut().filter(|(at, _)| *at == index) {
            last.1 = checkpoint;
        } else {
            self.checkpoints.push_back((index, checkpoint));
        }
    }

    /// The time of the latest checkpoint.
    pub(crate) fn last_checkpoint(&self) -> Option<u64> {
        self.checkpoints.back().map(|(_, c)| c.time())
    }

    /// Drops the oldest frames until at most `bytes` are kept, none older
    /// than `oldest` (ns), and the checkpoints before them.
    pub(crate) fn evict(&mut self, bytes: usize, oldest: u64) {
        while let Some(front) = self.frames.front() {
            if self.bytes <= bytes && front.time >= oldest {
                break;
            }
            self.bytes -= front.bytes.len();
            self.frames.pop_front();
            self.first += 1;
        }
        while self
            .checkpoints
            .front()
            .is_some_and(|(at, _)| *at < self.first)
        {
            self.checkpoints.pop_front();
        }
    }

    /// Where a capture of the window from `time` starts, in session
    /// `session`: the latest checkpoint at or before it, or else the
    /// earliest kept.
    pub(crate) fn start_for(&self, time: u64, session: u64) -> Option<(u64, &Checkpoint)> {
        let same = self
            .checkpoints
            .iter()
            .filter(|(_, c)| c.session().map(|s| s.id) == Some(session));
        let earliest = same.clone().next();
        same.rev()
            .find(|(_, c)| c.time() <= time)
            .or(earliest)
            .map(|(at, c)| (*at, c))
    }

    /// The frames from `index` on.
    pub(crate) fn from(&self, index: u64) -> impl Iterator<Item = &Kept> {
        let skip = index.saturating_sub(self.first) as usize;
        self.frames.iter().skip(skip)
    }

    /// Bytes kept.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Frames kept.
    pub(crate) fn len(&self) -> usize {
        self.frames.len()
    }
}
