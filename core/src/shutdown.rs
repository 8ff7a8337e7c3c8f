//! The Shutdown frame: the clean end of a session, with its totals.
//!
//! Payload: four u64 LE: host time, frames sent, frames dropped, events
//! dropped (ring overflow plus events in dropped Blocks).

use crate::cursor::Reader;
use crate::error::{DecodeError, EncodeError};
use crate::frame::{write_frame, FrameKind};

/// Session totals carried by Shutdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Shutdown {
    /// Host clock at shutdown.
    pub time: u64,
    /// Sequenced frames delivered to the stream (this one excluded).
    pub frames_sent: u64,
    /// Sequenced frames the transport reported dropped.
    pub frames_dropped: u64,
    /// Events lost: refused by full rings or inside dropped Blocks.
    pub events_dropped: u64,
}

impl Shutdown {
    /// Writes this Shutdown as a frame.
    pub fn write(&self, out: &mut [u8], seq: u32) -> Result<usize, EncodeError> {
        write_frame(out, FrameKind::Shutdown, seq, |w| {
            w.u64(self.time);
            w.u64(self.frames_sent);
            w.u64(self.frames_dropped);
            w.u64(self.events_dropped);
            Ok(())
        })
    }

    /// Parses a Shutdown payload.
    pub fn parse(payload: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let shutdown = Shutdown {
            time: r.u64("shutdown time")?,
            frames_sent: r.u64("frames sent")?,
            frames_dropped: r.u64("frames dropped")?,
            events_dropped: r.u64("events dropped")?,
        };
        r.expect_end("shutdown has trailing bytes")?;
        Ok(shutdown)
    }
}
