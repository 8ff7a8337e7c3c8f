//! The stream over `embedded-io` (feature `embedded-io`): the exporter's
//! frames into any [`embedded_io::Write`] (a UART, an RTT channel, a USB
//! CDC endpoint) and frames out of any [`embedded_io::Read`] (the same
//! links from the host side, or a std socket or file through
//! `embedded-io-adapters`).

use core::fmt;

use embedded_io::{Read, Write};

use crate::decode::{Decoder, Frame};
use crate::error::{DecodeError, EncodeError};
use crate::exporter::Exporter;
use crate::lane::Lanes;
use crate::names::NameSource;

/// Why [`pump`] stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum PumpError<E> {
    /// The output buffer cannot hold the next frame; nothing was lost:
    /// call again with a buffer of at least `needed` bytes.
    Encode(EncodeError),
    /// The writer failed; the frame it was writing counts as dropped.
    Write(E),
}

impl<E: fmt::Debug> fmt::Display for PumpError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PumpError::Encode(e) => write!(f, "cannot encode the next frame: {e}"),
            PumpError::Write(e) => write!(f, "the writer failed: {e:?}"),
        }
    }
}

impl<E: fmt::Debug> core::error::Error for PumpError<E> {}

/// Polls `exporter` at host time `now` and writes each frame it hands out
/// whole to `writer` (`write_all`), until it has nothing more; returns the
/// frames written. A blocking writer makes this the whole transport: a
/// frame that fails to write is reported to the exporter as dropped (a
/// Definitions or Init is then written again), and the reader resyncs past
/// its partial bytes.
pub fn pump<W: Write, const L: usize, const N: usize>(
    exporter: &mut Exporter<'_, L>,
    now: u64,
    lanes: &Lanes<L, N>,
    names: &impl NameSource,
    out: &mut [u8],
    writer: &mut W,
) -> Result<u32, PumpError<W::Error>> {
    let mut written = 0;
    while let Some(frame) = exporter
        .poll(now, lanes, names, out)
        .map_err(PumpError::Encode)?
    {
        let bytes = out.get(..frame.len).unwrap_or_default();
        if let Err(e) = writer.write_all(bytes) {
            exporter.frame_dropped();
            return Err(PumpError::Write(e));
        }
        written += 1;
    }
    writer.flush().map_err(PumpError::Write)?;
    Ok(written)
}

/// Why [`FrameReader::next`] could not hand out a frame.
#[derive(Debug, PartialEq)]
#[non_exhaustive]
pub enum ReadError<E> {
    /// The stream is damaged; call again to go on past the damage.
    Decode(DecodeError),
    /// The reader failed.
    Read(E),
}

impl<E: fmt::Debug> fmt::Display for ReadError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Decode(e) => write!(f, "{e}"),
            ReadError::Read(e) => write!(f, "the reader failed: {e:?}"),
        }
    }
}

impl<E: fmt::Debug> core::error::Error for ReadError<E> {}

/// Frames pulled from an [`embedded_io::Read`]: reads into `chunk`, feeds
/// the [`Decoder`], and hands out whole frames.
pub struct FrameReader<'b, 'c, R> {
    reader: R,
    decoder: Decoder<'b>,
    chunk: &'c mut [u8],
    /// Read and not yet fed: `chunk[fed..read]`.
    fed: usize,
    read: usize,
    /// The reader reported its end.
    ended: bool,
    /// The end was reported to the caller.
    done: bool,
}

impl<'b, 'c, R: Read> FrameReader<'b, 'c, R> {
    /// A reader decoding into `buf` (which bounds the frame size) and
    /// reading up to `chunk.len()` bytes at a time. `chunk` must not be
    /// empty: an empty read means the end of the stream.
    pub fn new(reader: R, buf: &'b mut [u8], chunk: &'c mut [u8]) -> Self {
        FrameReader {
            reader,
            decoder: Decoder::new(buf),
            chunk,
            fed: 0,
            read: 0,
            ended: false,
            done: false,
        }
    }

    /// The decoder, for its counters.
    pub fn decoder(&self) -> &Decoder<'b> {
        &self.decoder
    }

    /// The next frame, reading as much as it takes; `Ok(None)` once the
    /// reader reports its end (an end inside a frame is a
    /// [`DecodeError::Truncated`] first).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Frame<'_>>, ReadError<R::Error>> {
        loop {
            let mut took = 0;
            if self.fed < self.read {
                took = self.decoder.feed(&self.chunk[self.fed..self.read]);
                self.fed += took;
            }
            if self.decoder.ready().map_err(ReadError::Decode)? {
                break;
            }
            if self.fed < self.read {
                if took == 0 {
                    // The decoder neither takes bytes nor has a frame: its
                    // buffer is full of one frame's start. `ready` reports
                    // frames larger than the buffer, so this cannot happen;
                    // report it rather than spin.
                    return Err(ReadError::Decode(DecodeError::FrameTooLarge {
                        len: self.decoder.buffered() as u64,
                        max: self.decoder.max_frame() as u64,
                        offset: self.decoder.position(),
                    }));
                }
                continue;
            }
            if self.done {
                return Ok(None);
            }
            if self.ended {
                // The end is reported once: a cut-off frame first.
                self.done = true;
                return match self.decoder.finish() {
                    Ok(()) => Ok(None),
                    Err(e) => Err(ReadError::Decode(e)),
                };
            }
            let n = self.reader.read(self.chunk).map_err(ReadError::Read)?;
            (self.fed, self.read) = (0, n);
            self.ended = n == 0;
        }
        self.decoder.next().map_err(ReadError::Decode)
    }
}
