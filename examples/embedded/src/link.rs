//! The firmware's end of a serial link: frames go whole into a byte queue
//! that the UART's transmit interrupt drains, so the main loop never waits
//! for the line.
//!
//! A UART at 115 200 baud carries about 11.5 kB/s; a blocking write of
//! one 600-byte frame would stop the main loop for 52 ms. Here `pump`
//! copies each frame into the queue and returns; the interrupt sends it at
//! the line's pace. When the line is slower than the events, the queue
//! fills and the next frame that does not fit is refused whole
//! ([`LinkError::Full`]): `typhon_live_core::io::pump` reports it to the
//! exporter as dropped, the reader sees a sequence gap, and the Block's
//! events are counted as lost in the next Block that gets through. No
//! frame is ever cut, so the reader never has to resync on a live link.

use core::fmt;

use heapless::spsc::{Consumer, Producer};

/// Bytes of the transmit queue (it holds one less): two seconds of the
/// example's output, several of its largest frames.
pub const LINK_QUEUE: usize = 4096;

/// The transmit queue of [`LINK_QUEUE`] bytes, for a `static`.
pub type LinkQueue = heapless::spsc::Queue<u8, LINK_QUEUE>;

/// Why a frame was not queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkError {
    /// The queue has `free` bytes, fewer than the frame's `frame`: the
    /// line is behind. The frame is dropped whole.
    Full {
        /// The frame's length.
        frame: usize,
        /// Bytes free in the queue.
        free: usize,
    },
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::Full { frame, free } => write!(
                f,
                "the link is behind: a {frame}-byte frame does not fit in {free} free bytes"
            ),
        }
    }
}

impl core::error::Error for LinkError {}

impl embedded_io::Error for LinkError {
    fn kind(&self) -> embedded_io::ErrorKind {
        embedded_io::ErrorKind::OutOfMemory
    }
}

/// The main loop's side of the queue: an [`embedded_io::Write`] that takes
/// each `write` whole or not at all. `typhon_live_core::io::pump` writes a
/// frame with one `write_all`, which is one `write` here.
pub struct FrameQueue<'q> {
    producer: Producer<'q, u8>,
    refused: u32,
}

impl<'q> FrameQueue<'q> {
    /// The writer over the producer half of a split [`LinkQueue`].
    pub fn new(producer: Producer<'q, u8>) -> Self {
        FrameQueue {
            producer,
            refused: 0,
        }
    }

    /// Bytes waiting for the line.
    pub fn backlog(&self) -> usize {
        self.producer.len()
    }

    /// Frames refused because the queue was full, since start.
    pub fn refused(&self) -> u32 {
        self.refused
    }
}

impl embedded_io::ErrorType for FrameQueue<'_> {
    type Error = LinkError;
}

impl embedded_io::Write for FrameQueue<'_> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, LinkError> {
        let free = self.producer.capacity() - self.producer.len();
        if buf.len() > free {
            self.refused = self.refused.wrapping_add(1);
            return Err(LinkError::Full {
                frame: buf.len(),
                free,
            });
        }
        for &byte in buf {
            // Cannot fail: only this producer adds, and there was room.
            let _ = self.producer.enqueue(byte);
        }
        Ok(buf.len())
    }

    /// Nothing to do: the interrupt sends what is queued, and waiting for
    /// it here is what the queue is for not to do.
    fn flush(&mut self) -> Result<(), LinkError> {
        Ok(())
    }
}

/// Moves up to `max` queued bytes to the UART while `ready()` says its
/// transmit buffer has room, writing each with `send`; returns the bytes
/// moved. The transmit interrupt's whole job.
pub fn drain(
    consumer: &mut Consumer<'_, u8>,
    max: usize,
    mut ready: impl FnMut() -> bool,
    mut send: impl FnMut(u8),
) -> usize {
    let mut moved = 0;
    while moved < max && ready() {
        let Some(byte) = consumer.dequeue() else {
            break;
        };
        send(byte);
        moved += 1;
    }
    moved
}
