//! The streaming decoder, for live viewers and file readers alike.
//!
//! Feed it arbitrary chunks ([`Decoder::feed`]) and take whole frames out
//! ([`Decoder::next`]) as borrowed views over the caller's buffer. It never
//! panics, never loops without consuming input, never reads out of bounds and
//! never needs more memory than the buffer it was given.
//!
//! Damage is reported once, as an error naming what was wrong and where;
//! the decoder then resynchronises on the next frame whose header checksum
//! holds, and that frame tells how many bytes were skipped before it. When a
//! header is intact but its frame is too large or fails its checksum, the
//! frame is skipped whole and the stream stays in step.

use defmt_or_log::debug;

use crate::block::BlockView;
use crate::catchup::CatchUpView;
use crate::definitions::DefinitionsView;
use crate::error::DecodeError;
use crate::frame::{checksum_ok, FrameKind, Header, HEADER_LEN, MAGIC, OVERHEAD, TRAILER_LEN};
use crate::init::InitView;
use crate::samples::SamplesView;
use crate::shutdown::Shutdown;
use crate::text::TextsView;

/// The default largest frame a decoder accepts: 8 MiB.
pub const DEFAULT_MAX_FRAME: usize = 8 << 20;

/// One whole, checksum-verified frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Kind byte; see [`Frame::kind`].
    pub kind: u8,
    /// Flags byte: a Block's codec, reserved in other kinds.
    pub flags: u8,
    /// Sequence number (for Init: the number the next frame carries).
    pub seq: u32,
    /// The payload.
    pub payload: &'a [u8],
    /// Stream offset of the frame's first byte.
    pub offset: u64,
    /// Bytes discarded as damage just before this frame.
    pub skipped: u64,
}

/// A frame's payload, parsed and checked according to its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload<'a> {
    /// Session header and metadata.
    Init(InitView<'a>),
    /// A batch of events.
    Block(BlockView<'a>),
    /// Names and lanes defined since the Init.
    Definitions(DefinitionsView<'a>),
    /// Lanes with names and open spans.
    CatchUp(CatchUpView<'a>),
    /// End of session.
    Shutdown(Shutdown),
    /// What the system measured of each lane's thread.
    Samples(SamplesView<'a>),
    /// Log events' text.
    Texts(TextsView<'a>),
}

impl<'a> Frame<'a> {
    /// The frame kind, or [`DecodeError::UnknownKind`] for a newer writer's
    /// frame, which a reader skips.
    pub fn kind(&self) -> Result<FrameKind, DecodeError> {
        FrameKind::from_byte(self.kind)
    }

    /// Whether the frame takes a sequence number: every kind but Init,
    /// including kinds this reader does not know, so that skipping one is
    /// not mistaken for a gap.
    pub fn is_sequenced(&self) -> bool {
        self.kind != FrameKind::Init.to_byte()
    }

    /// Total length of the frame on the wire.
    pub fn wire_len(&self) -> usize {
        HEADER_LEN + self.payload.len() + TRAILER_LEN
    }

    /// Parses the payload according to the kind.
    pub fn parse(&self) -> Result<Payload<'a>, DecodeError> {
        Ok(match self.kind()? {
            FrameKind::Init => Payload::Init(InitView::parse(self.payload, self.seq)?),
            FrameKind::Block => Payload::Block(BlockView::parse(self.payload, self.flags)?),
            FrameKind::Definitions => Payload::Definitions(DefinitionsView::parse(self.payload)?),
            FrameKind::CatchUp => Payload::CatchUp(CatchUpView::parse(self.payload)?),
            FrameKind::Shutdown => Payload::Shutdown(Shutdown::parse(self.payload)?),
            FrameKind::Samples => Payload::Samples(SamplesView::parse(self.payload)?),
            FrameKind::Text => Payload::Texts(TextsView::parse(self.payload)?),
        })
    }
}

/// Turns a byte stream, in chunks of any size, into frames.
pub struct Decoder<'b> {
    buf: &'b mut [u8],
    /// Unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Stream offset of `buf[start]`.
    offset: u64,
    max_frame: usize,
    /// Bytes of a rejected frame still to discard.
    skip: u64,
    /// Looking for the next valid header after damage.
    resync: bool,
    /// Bytes discarded since the last frame handed out.
    skipped: u64,
    /// An error was reported and no frame handed out since: further false
    /// headers inside the same damage are skipped silently.
    in_damage: bool,
    skipped_total: u64,
    /// A whole, checked frame at `buf[start..]`, found by
    /// [`Decoder::ready`] and not yet handed out.
    pending: Option<Located>,
}

/// A frame found in the buffer, at `start`.
#[derive(Clone, Copy)]
struct Located {
    header: Header,
    len: usize,
    offset: u64,
}

impl<'b> Decoder<'b> {
    /// A decoder over `buf` accepting frames up to [`DEFAULT_MAX_FRAME`]
    /// or the buffer's length, whichever is smaller. A buffer shorter than
    /// a frame header ([`HEADER_LEN`]) holds no frame: every byte fed to
    /// it is skipped, reported once as [`DecodeError::FrameTooLarge`].
    pub fn new(buf: &'b mut [u8]) -> Self {
        Self::with_max_frame(buf, DEFAULT_MAX_FRAME)
    }

    /// A decoder accepting frames up to `max_frame` bytes (at most `buf.len()`).
    pub fn with_max_frame(buf: &'b mut [u8], max_frame: usize) -> Self {
        let max_frame = max_frame.min(buf.len());
        Decoder {
            buf,
            start: 0,
            end: 0,
            offset: 0,
            max_frame,
            skip: 0,
            resync: false,
            skipped: 0,
            in_damage: false,
            skipped_total: 0,
            pending: None,
        }
    }

    /// The largest frame accepted.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Bytes discarded as damage since the decoder was made.
    pub fn skipped_total(&self) -> u64 {
        self.skipped_total
    }

    /// Stream offset of the next unread byte.
    pub fn position(&self) -> u64 {
        self.offset
    }

    /// Forgets every byte fed and any damage being skipped, as a decoder
    /// new over the same buffer: a new connection's stream starts here,
    /// and the last one's unfinished frame is not damage of it.
    pub fn restart(&mut self) {
        let max_frame = self.max_frame;
        let buf = core::mem::take(&mut self.buf);
        *self = Decoder::with_max_frame(buf, max_frame);
    }

    /// Bytes fed and not yet consumed.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Takes as many of `bytes` as fit and returns how many it took; feed
    /// the rest after taking frames out with [`Decoder::next`].
    pub fn feed(&mut self, bytes: &[u8]) -> usize {
        if self.buf.len() < HEADER_LEN {
            // No frame fits: every byte is damage, reported once by `next`.
            // Holding bytes that can never be read would stall the caller.
            self.discard_counted(bytes.len() as u64);
            return bytes.len();
        }
        let mut taken = 0;
        if self.skip > 0 && self.start == self.end {
            // Discard a rejected frame's tail without copying it.
            let n = (bytes.len() as u64).min(self.skip) as usize;
            self.skip -= n as u64;
            self.discard_counted(n as u64);
            taken = n;
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let room = self.buf.len() - self.end;
        let n = room.min(bytes.len() - taken);
        self.buf[self.end..self.end + n].copy_from_slice(&bytes[taken..taken + n]);
        self.end += n;
        taken + n
    }

    fn discard_counted(&mut self, n: u64) {
        self.offset += n;
        self.skipped += n;
        self.skipped_total += n;
    }

    fn advance(&mut self, n: usize, counted_as_skipped: bool) {
        self.start += n;
        if counted_as_skipped {
            self.discard_counted(n as u64);
        } else {
            self.offset += n as u64;
        }
    }

    /// The next whole frame: `Ok(None)` when more bytes are needed, `Err`
    /// once per damage (call again to go on past it).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Frame<'_>>, DecodeError> {
        let located = match self.pending.take() {
            Some(located) => located,
            None => match self.locate()? {
                Some(located) => located,
                None => return Ok(None),
            },
        };
        let skipped = core::mem::take(&mut self.skipped);
        if skipped > 0 {
            debug!(
                "resynchronised at byte {} after skipping {} bytes",
                located.offset, skipped
            );
        }
        self.in_damage = false;
        let payload_at = self.start + HEADER_LEN;
        self.advance(located.len, false);
        Ok(Some(Frame {
            kind: located.header.kind,
            flags: located.header.flags,
            seq: located.header.seq,
            payload: &self.buf[payload_at..payload_at + located.len - OVERHEAD],
            offset: located.offset,
            skipped,
        }))
    }

    /// Whether [`Decoder::next`] has a frame to hand out now, without
    /// taking it: `Ok(false)` when more bytes are needed, `Err` as `next`
    /// reports it. For readers that pull bytes until a frame is whole.
    pub fn ready(&mut self) -> Result<bool, DecodeError> {
        if self.pending.is_none() {
            self.pending = self.locate()?;
        }
        Ok(self.pending.is_some())
    }

    /// Skips damage and finds the next whole, checked frame at `start`.
    fn locate(&mut self) -> Result<Option<Located>, DecodeError> {
        if self.buf.len() < HEADER_LEN {
            // `feed` discarded everything: say so once.
            if self.skipped > 0 && !core::mem::replace(&mut self.in_damage, true) {
                return Err(DecodeError::FrameTooLarge {
                    len: HEADER_LEN as u64,
                    max: self.max_frame as u64,
                    offset: self.offset - self.skipped,
                });
            }
            return Ok(None);
        }
        loop {
            if self.skip > 0 {
                let n = ((self.end - self.start) as u64).min(self.skip) as usize;
                self.skip -= n as u64;
                self.advance(n, true);
                if self.skip > 0 {
                    return Ok(None);
                }
            }
            let avail = &self.buf[self.start..self.end];
            if self.resync {
                // Keep a lone trailing magic byte: it may start a frame.
                let found = avail.windows(2).position(|w| w == MAGIC);
                let keep_tail = usize::from(avail.last() == Some(&MAGIC[0]));
                match found {
                    Some(i) => {
                        self.advance(i, true);
                        self.resync = false;
                    }
                    None => {
                        self.advance(avail.len() - keep_tail, true);
                        return Ok(None);
                    }
                }
            }
            let avail = &self.buf[self.start..self.end];
            if avail.len() < 2 {
                return Ok(None);
            }
            let offset = self.offset;
            if avail[..2] != MAGIC {
                self.resync = true;
                self.in_damage = true;
                self.advance(1, true);
                return Err(DecodeError::BadMagic { offset });
            }
            // The buffer holds a header (`feed` sees to it): wait for one.
            let Some(head) = avail.first_chunk::<HEADER_LEN>() else {
                return Ok(None);
            };
            let Some(header) = Header::parse(head) else {
                self.resync = true;
                self.advance(1, true);
                if !core::mem::replace(&mut self.in_damage, true) {
                    return Err(DecodeError::HeaderChecksum { offset });
                }
                // A false magic inside damage already reported: keep looking.
                continue;
            };
            let frame_len = header.frame_len();
            if frame_len > self.max_frame as u64 {
                self.skip = frame_len;
                return Err(DecodeError::FrameTooLarge {
                    len: frame_len,
                    max: self.max_frame as u64,
                    offset,
                });
            }
            let frame_len = frame_len as usize;
            let Some(bytes) = avail.get(..frame_len) else {
                return Ok(None);
            };
            let body = frame_len - TRAILER_LEN;
            let stored = u32::from_le_bytes([
                bytes[body],
                bytes[body + 1],
                bytes[body + 2],
                bytes[body + 3],
            ]);
            if !checksum_ok(&bytes[..body], stored) {
                self.skip = frame_len as u64;
                return Err(DecodeError::ChecksumMismatch {
                    seq: header.seq,
                    offset,
                });
            }
            return Ok(Some(Located {
                header,
                len: frame_len,
                offset,
            }));
        }
    }

    /// Call at end of input: `Err(Truncated)` if it ended inside a frame.
    /// A trace file cut off by a crash reads up to its last whole frame and
    /// then reports this.
    pub fn finish(&self) -> Result<(), DecodeError> {
        let have = (self.end - self.start) as u64;
        // Inside damage already reported, the end of input says nothing new.
        if have == 0 || self.resync || self.skip > 0 {
            return Ok(());
        }
        let avail = &self.buf[self.start..self.end];
        let need = avail
            .first_chunk::<HEADER_LEN>()
            .and_then(Header::parse)
            .map_or(0, |h| h.frame_len());
        Err(DecodeError::Truncated {
            offset: self.offset,
            have,
            need,
        })
    }
}
