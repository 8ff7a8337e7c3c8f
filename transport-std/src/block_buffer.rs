//! A reader's buffer for compressed Blocks: grows to the largest Block's
//! packed events it has met, never past the format's 8 MiB bound.

use std::fmt;

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

impl std::error::Error for BlockDamage {}

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

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_live_core::block::{max_block_frame_len, write_block};
    use typhon_live_core::{BlockBuilder, Decoder, Payload};

    /// A packed Block of `n` tick starts on lane 0, as its payload.
    fn block_payload(n: u64) -> Vec<u8> {
        let mut scratch = vec![0u8; 4096];
        let mut builder = BlockBuilder::new(&mut scratch);
        for tick in 0..n {
            builder.push(
                0,
                &Event::TickStart {
                    time: tick * 10,
                    tick,
                },
            );
        }
        let mut out = vec![0u8; max_block_frame_len(4096, 0)];
        let len = write_block(&mut out, 0, &builder, &[]).unwrap();
        out[16..len - 4].to_vec()
    }

    fn read(payload: &[u8], flags: u8) -> (u32, Result<(), BlockDamage>) {
        let block = BlockView::parse(payload, flags).unwrap();
        let mut got = 0;
        let result = BlockBuffer::new().each_event(&block, |_, _| got += 1);
        (got, result)
    }

    #[test]
    fn unread_records_are_counted_whatever_stopped_the_reading() {
        let payload = block_payload(5);
        assert_eq!(read(&payload, 0), (5, Ok(())));
        // An unknown codec: nothing read, all five unread.
        let (got, result) = read(&payload, 0x40);
        assert_eq!((got, result.unwrap_err().unread), (0, 5));
        // A record count above what the columns hold: the five read, then
        // the error, with the two more stated unread.
        let mut overstated = payload.clone();
        overstated[..4].copy_from_slice(&7u32.to_le_bytes());
        let (got, result) = read(&overstated, 0);
        assert_eq!(got, 5);
        assert_eq!(result.unwrap_err().unread, 2);
        // Decoded from a real frame, as a reader meets it.
        let mut buf = vec![0u8; 4096];
        let mut frame = vec![0u8; payload.len() + 20];
        let n = typhon_live_core::frame::write_raw_frame(&mut frame, 2, 0x40, 0, &payload).unwrap();
        let mut decoder = Decoder::new(&mut buf);
        decoder.feed(&frame[..n]);
        let frame = decoder.next().unwrap().unwrap();
        let Ok(Payload::Block(block)) = frame.parse() else {
            panic!("a Block whose header reads is accepted")
        };
        assert_eq!(block.drops().count(), 0);
        assert_eq!(
            block.codec(),
            Err(DecodeError::UnknownCodec { flags: 0x40 })
        );
    }
}
