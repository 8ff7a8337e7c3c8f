//! A reader's buffer for compressed Blocks: grows to the largest Block's
//! packed events it has met, never past the format's 8 MiB bound.

use alloc::vec::Vec;
use core::fmt;

use typhon_live_core::{BlockEvents, BlockView, Codec, DecodeError, Event, LaneId};

/// Where a reader decompresses Blocks: one per reader, reused for every
/// Block, so that reading allocates only when a Block is larger than any
/// before it.
#[derive(Debug, Default)]
pub struct BlockBuffer {
    bytes: Vec<u8>,
}

/// A Block whose events could not all be read: why, and how many of the
/// records it states were not (FORMAT.md, "Reading a stream": they are
/// events lost to damage; the ones before were read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockDamage {
    /// What was wrong with the events.
    pub error: DecodeError,
    /// Records the Block states that were not read.
    pub unread: u32,
}

impl fmt::Display for BlockDamage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} events unread)", self.error, self.unread)
    }
}

impl core::error::Error for BlockDamage {}

impl BlockBuffer {
    /// An empty buffer; it grows on the first compressed Block.
    pub fn new() -> Self {
        BlockBuffer::default()
    }

    /// `block`'s events, in either codec (`BlockView::events_in`).
    pub fn events<'b, 'a: 'b>(
        &'b mut self,
        block: &BlockView<'a>,
    ) -> Result<BlockEvents<'b>, DecodeError> {
        // The view checked packed_len against the format's bound.
        if block.codec() == Ok(Codec::Lz4) && self.bytes.len() < block.packed_len() {
            self.bytes.resize(block.packed_len(), 0);
        }
        block.events_in(&mut self.bytes)
    }

    /// Hands `block`'s events to `take` in record order, until the end or
    /// the first that cannot be read: then says why and how many records
    /// were left unread.
    pub fn each_event(
        &mut self,
        block: &BlockView<'_>,
        mut take: impl FnMut(LaneId, Event),
    ) -> Result<(), BlockDamage> {
        let mut read = 0u32;
        let result = self.events(block).and_then(|events| {
            for item in events {
                let (lane, event) = item?;
                read += 1;
                take(lane, event);
            }
            Ok(())
        });
        result.map_err(|error| BlockDamage {
            error,
            unread: block.records.saturating_sub(read),
        })
    }
}
