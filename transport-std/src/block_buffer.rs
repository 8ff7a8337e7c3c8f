//! A reader's buffer for compressed Blocks: grows to the largest Block's
//! packed events it has met, never past the format's 8 MiB bound.

use typhon_live_core::{BlockEvents, BlockView, Codec, DecodeError};

/// Where a reader decompresses Blocks: one per reader, reused for every
/// Block, so that reading allocates only when a Block is larger than any
/// before it.
#[derive(Debug, Default)]
pub struct BlockBuffer {
    bytes: Vec<u8>,
}

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
        if block.codec == Codec::Lz4 && self.bytes.len() < block.packed_len() {
            self.bytes.resize(block.packed_len(), 0);
        }
        block.events_in(&mut self.bytes)
    }
}
