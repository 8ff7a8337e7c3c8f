//! The two error types of the core: one for writing frames, one for reading.
//!
//! Reading separates "need more bytes" (not an error: the decoder answers
//! `Ok(None)`) from damage, which names what was wrong and where.

use core::fmt;

/// Why a frame could not be written into the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum EncodeError {
    /// The output buffer is too small; `needed` bytes would have fitted the frame.
    BufferTooSmall {
        /// Size of buffer that would have been enough.
        needed: usize,
    },
    /// The payload is larger than a frame can carry (`u32::MAX` bytes).
    PayloadTooLarge {
        /// Length of the payload in bytes.
        len: usize,
    },
    /// A table or string does not fit its length field on the wire.
    TooManyItems {
        /// Which table or field overflowed.
        what: &'static str,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EncodeError::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            EncodeError::PayloadTooLarge { len } => {
                write!(f, "payload of {len} bytes exceeds the frame limit")
            }
            EncodeError::TooManyItems { what } => write!(f, "{what} does not fit its length field"),
        }
    }
}

impl core::error::Error for EncodeError {}

/// What was wrong with the bytes being decoded.
///
/// Stream-level variants carry `offset`, the byte position in the stream
/// (counted from the first byte ever fed) at which the damage starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes at a frame boundary are not the frame magic.
    BadMagic {
        /// Stream offset of the bad bytes.
        offset: u64,
    },
    /// The frame header's own checksum does not match: the header is damaged.
    HeaderChecksum {
        /// Stream offset of the header.
        offset: u64,
    },
    /// The frame's checksum over header and payload does not match.
    ChecksumMismatch {
        /// Sequence number the (intact) header claims.
        seq: u32,
        /// Stream offset of the frame.
        offset: u64,
    },
    /// The frame is longer than the decoder accepts; it was skipped whole.
    FrameTooLarge {
        /// Total frame length the header claims.
        len: u64,
        /// Largest frame this decoder accepts.
        max: u64,
        /// Stream offset of the frame.
        offset: u64,
    },
    /// The input ended inside a frame.
    Truncated {
        /// Stream offset of the incomplete frame.
        offset: u64,
        /// Bytes of it that were present.
        have: u64,
        /// Bytes the frame needs (0 if even its header was incomplete).
        need: u64,
    },
    /// A frame kind this version does not know; skip the frame.
    UnknownKind {
        /// The kind byte.
        kind: u8,
    },
    /// A payload field is inconsistent: `what` names it.
    Malformed {
        /// The field or rule that was violated.
        what: &'static str,
    },
    /// The Init frame has a format version this decoder cannot read.
    UnsupportedVersion {
        /// The version found.
        version: u16,
    },
    /// A Block's frame flags name a codec this version does not know (a
    /// newer writer's); the Block is skipped, its sequence number counts.
    UnknownCodec {
        /// The frame's flags byte.
        flags: u8,
    },
    /// A compressed Block's events need a buffer of `needed` bytes to be
    /// decompressed into, and the caller's is smaller (or absent: see
    /// [`BlockView::events_in`](crate::BlockView::events_in)).
    BufferTooSmall {
        /// Bytes the Block's events take once decompressed.
        needed: usize,
    },
    /// A compressed Block's LZ4 data does not decompress to what its
    /// header states: `what` says how (cut, damaged, too long, too short).
    Decompression {
        /// How the LZ4 data failed.
        what: &'static str,
    },
    /// A count or size the peer states is past the bound the format sets
    /// for it (FORMAT.md, "Bounds"), so that nothing is read or allocated
    /// by it.
    OverBound {
        /// The count or size, as FORMAT.md names it.
        what: &'static str,
        /// The value the peer stated.
        stated: u64,
        /// The largest value the format allows.
        bound: u64,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::BadMagic { offset } => write!(f, "bad frame magic at byte {offset}"),
            DecodeError::HeaderChecksum { offset } => {
                write!(f, "frame header checksum mismatch at byte {offset}")
            }
            DecodeError::ChecksumMismatch { seq, offset } => {
                write!(f, "checksum mismatch in frame seq {seq} at byte {offset}")
            }
            DecodeError::FrameTooLarge { len, max, offset } => write!(
                f,
                "frame at byte {offset} is {len} bytes, larger than the {max}-byte limit"
            ),
            DecodeError::Truncated { offset, have, need } => write!(
                f,
                "stream ends inside the frame at byte {offset} ({have} of {need} bytes present)"
            ),
            DecodeError::UnknownKind { kind } => write!(f, "unknown frame kind {kind:#04x}"),
            DecodeError::Malformed { what } => write!(f, "malformed payload: {what}"),
            DecodeError::UnsupportedVersion { version } => {
                write!(f, "unsupported format version {version}")
            }
            DecodeError::UnknownCodec { flags } => {
                write!(f, "block flags {flags:#04x} name an unknown codec")
            }
            DecodeError::BufferTooSmall { needed } => write!(
                f,
                "a compressed block needs a {needed}-byte buffer to decompress into"
            ),
            DecodeError::Decompression { what } => write!(f, "block LZ4 data: {what}"),
            DecodeError::OverBound {
                what,
                stated,
                bound,
            } => write!(f, "{what} {stated} is over the format's bound of {bound}"),
        }
    }
}

impl DecodeError {
    /// `Ok` when `stated`, a count or size a peer gave for `what`, is
    /// within the format's `bound`; else [`DecodeError::OverBound`].
    pub(crate) fn at_most(what: &'static str, stated: u64, bound: u64) -> Result<(), DecodeError> {
        if stated > bound {
            return Err(DecodeError::OverBound {
                what,
                stated,
                bound,
            });
        }
        Ok(())
    }
}

impl core::error::Error for DecodeError {}
