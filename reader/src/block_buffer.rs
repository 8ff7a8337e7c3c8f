//! A reader's buffer for compressed Blocks: grows to the largest Block's
//! packed events it has met, never past the format's 8 MiB bound.

use alloc::vec::Vec;
use core::fmt;

use typhon_live_core::{BlockEvents, BlockView, Codec, DecodeError, Event, EventKinds, LaneId};

/// Where a reader decompresses Blocks, and decodes their events a batch
/// at a time: one per reader, reused for every Block, so that reading
/// allocates only when a Block is larger than any before it.
#[derive(Debug, Default)]
pub struct BlockBuffer {
    bytes: Vec<u8>,
    /// Events decoded and not yet handed on: a batch goes through the
    /// decoder's fast path (a group of spans of one shape decoded without
    /// reading each record's kind), where one at a time would not.
    batch: Vec<(LaneId, Event)>,
}

/// Events decoded at a time.
const BATCH: usize = 256;

/// A Block whose events could not all be read: why, and how many of the
/// records it states were not (FORMAT.md, "Reading a stream": they are
/// events lost to damage; the ones before were read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockDamage {
    /// What was wrong with the events.
    pub error: DecodeError,
    /// Records the Block states that were not read.
    pub unread: u32,
    /// Records passed over, undamaged as far as anyone looked, before the
    /// fault (a skimming reader's: [`BlockBuffer::each_event_of`]).
    pub skipped: u32,
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
        unpack(&mut self.bytes, block)
    }

    /// `block`'s packed events: where they lie in its payload, or, for a
    /// compressed Block, in this buffer, where reading it decompressed
    /// them. Only for the Block this buffer read last: the next read of a
    /// compressed Block overwrites them.
    pub fn packed<'b, 'a: 'b>(&'b self, block: &BlockView<'a>) -> Option<&'b [u8]> {
        match block.codec() {
            Ok(Codec::Packed) => block.packed(),
            Ok(Codec::Lz4) => self.bytes.get(..block.packed_len()),
            _ => None,
        }
    }

    /// Hands `block`'s events to `take` in record order, until the end or
    /// the first that cannot be read: then says why and how many records
    /// were left unread.
    pub fn each_event(
        &mut self,
        block: &BlockView<'_>,
        take: impl FnMut(LaneId, Event),
    ) -> Result<(), BlockDamage> {
        self.each_event_of(block, EventKinds::ALL, take).map(drop)
    }

    /// [`BlockBuffer::each_event`] for a reader that wants only the kinds
    /// `wanted`: lane groups with none of them are passed over
    /// ([`BlockEvents::skim`]). Returns the records passed over.
    pub fn each_event_of(
        &mut self,
        block: &BlockView<'_>,
        wanted: EventKinds,
        mut take: impl FnMut(LaneId, Event),
    ) -> Result<u32, BlockDamage> {
        let mut read = 0u32;
        let mut skipped = 0u32;
        if self.batch.len() < BATCH {
            self.batch
                .resize(BATCH, (0, Event::TickStart { time: 0, tick: 0 }));
        }
        let batch = &mut self.batch;
        let result = unpack(&mut self.bytes, block).and_then(|events| {
            let mut events = events.skim(wanted);
            loop {
                let n = events.read(batch);
                skipped = events.skipped();
                let n = n?;
                if n == 0 {
                    return Ok(skipped);
                }
                for &(lane, event) in &batch[..n] {
                    read += 1;
                    take(lane, event);
                }
            }
        });
        result.map_err(|error| BlockDamage {
            error,
            unread: block.records.saturating_sub(read).saturating_sub(skipped),
            skipped,
        })
    }
}

/// `block`'s events, decompressed into `bytes` if they are compressed.
fn unpack<'b, 'a: 'b>(
    bytes: &'b mut Vec<u8>,
    block: &BlockView<'a>,
) -> Result<BlockEvents<'b>, DecodeError> {
    // The view checked packed_len against the format's bound.
    if block.codec() == Ok(Codec::Lz4) && bytes.len() < block.packed_len() {
        bytes.resize(block.packed_len(), 0);
    }
    block.events_in(bytes)
}
