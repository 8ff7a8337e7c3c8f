//! The frame envelope shared by every frame kind (see `docs/FORMAT.md`).
//!
//! ```text
//! 0   2  magic "TL"
//! 2   1  kind
//! 3   1  flags: a Block's codec (`codec.rs`); reserved in other kinds
//! 4   4  sequence number, u32 LE
//! 8   4  payload length, u32 LE
//! 12  4  header check: CRC-32 of bytes 0..12, u32 LE
//! 16  n  payload
//! 16+n 4 frame check: CRC-32 of bytes 0..16+n, u32 LE
//! ```
//! The header check lets a reader reject a false magic at once, before
//! waiting for a payload length that garbage made up.

use crate::cursor::Writer;
use crate::error::{DecodeError, EncodeError};

/// First two bytes of every frame.
pub const MAGIC: [u8; 2] = *b"TL";
/// Bytes before the payload.
pub const HEADER_LEN: usize = 16;
/// Bytes after the payload.
pub const TRAILER_LEN: usize = 4;
/// Header plus trailer.
pub const OVERHEAD: usize = HEADER_LEN + TRAILER_LEN;

/// The frame kinds: version 1's five, and the Samples and Text frames
/// version 4 added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FrameKind {
    /// Session header and metadata; first frame of every connection or file.
    Init,
    /// A compressed batch of events. Droppable.
    Block,
    /// Names and lanes created after the Init. Never dropped.
    Definitions,
    /// Claimed lanes and their open spans, about once a second. Droppable.
    CatchUp,
    /// The clean end of a session, with totals. Never dropped.
    Shutdown,
    /// What the system measured of each lane's thread (CPU time,
    /// switches). Droppable.
    Samples,
    /// Log events' text, beside the spans. Droppable.
    Text,
}

impl FrameKind {
    /// The wire byte of this kind.
    pub const fn to_byte(self) -> u8 {
        match self {
            FrameKind::Init => 1,
            FrameKind::Block => 2,
            FrameKind::Definitions => 3,
            FrameKind::CatchUp => 4,
            FrameKind::Shutdown => 5,
            FrameKind::Samples => 6,
            FrameKind::Text => 7,
        }
    }

    /// The kind for a wire byte.
    pub const fn from_byte(byte: u8) -> Result<Self, DecodeError> {
        Ok(match byte {
            1 => FrameKind::Init,
            2 => FrameKind::Block,
            3 => FrameKind::Definitions,
            4 => FrameKind::CatchUp,
            5 => FrameKind::Shutdown,
            6 => FrameKind::Samples,
            7 => FrameKind::Text,
            kind => return Err(DecodeError::UnknownKind { kind }),
        })
    }

    /// Whether a sender may drop this frame when the reader is slow.
    pub const fn is_droppable(self) -> bool {
        matches!(
            self,
            FrameKind::Block | FrameKind::CatchUp | FrameKind::Samples | FrameKind::Text
        )
    }

    /// Whether the frame takes a sequence number. Init does not: it is sent
    /// to one reader and names the number the next frame will carry.
    pub const fn is_sequenced(self) -> bool {
        !matches!(self, FrameKind::Init)
    }
}

/// CRC-32 (IEEE 802.3, as in zlib and PNG) of `bytes`.
///
/// Why this CRC and crc32fast: with the `std` feature it runs on the CPU's
/// carry-less multiply at tens of GB/s, where a table-driven CRC-32C ran at
/// 4.8 GB/s, about 1.2 ns of every decoded event's 10 (format version 1
/// used CRC-32C); both detect every burst of up to 32 bits.
#[cfg(any(target_pointer_width = "64", target_family = "wasm"))]
pub fn checksum(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// [`checksum`] of `first` followed by `then`, without joining them.
#[cfg(any(target_pointer_width = "64", target_family = "wasm"))]
fn checksum_of_two(first: &[u8], then: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(first);
    hasher.update(then);
    hasher.finalize()
}

/// CRC-32 (IEEE 802.3, as in zlib and PNG) of `bytes`, from a 256-entry
/// table: 1 KiB of flash on a 32-bit microcontroller.
#[cfg(not(any(target_pointer_width = "64", target_family = "wasm")))]
pub fn checksum(bytes: &[u8]) -> u32 {
    CRC32.checksum(bytes)
}

#[cfg(not(any(target_pointer_width = "64", target_family = "wasm")))]
const CRC32: crc::Crc<u32, crc::Table<1>> =
    crc::Crc::<u32, crc::Table<1>>::new(&crc::CRC_32_ISO_HDLC);

/// [`checksum`] of `first` followed by `then`, without joining them.
#[cfg(not(any(target_pointer_width = "64", target_family = "wasm")))]
fn checksum_of_two(first: &[u8], then: &[u8]) -> u32 {
    let mut digest = CRC32.digest();
    digest.update(first);
    digest.update(then);
    digest.finalize()
}

/// Whether `stored` is the checksum of `bytes`. Always true when built for
/// fuzzing, so the fuzzer reaches the code behind the check.
pub(crate) fn checksum_ok(bytes: &[u8], stored: u32) -> bool {
    if cfg!(fuzzing) {
        return true;
    }
    checksum(bytes) == stored
}

/// A parsed, checked frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub kind: u8,
    pub flags: u8,
    pub seq: u32,
    pub payload_len: u32,
}

impl Header {
    /// Total length of the frame this header starts.
    pub fn frame_len(&self) -> u64 {
        u64::from(self.payload_len) + OVERHEAD as u64
    }

    /// Parses a header; the caller has checked the magic.
    pub fn parse(bytes: &[u8; HEADER_LEN]) -> Option<Header> {
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        if !checksum_ok(&bytes[..12], word(12)) {
            return None;
        }
        Some(Header {
            kind: bytes[2],
            flags: bytes[3],
            seq: word(4),
            payload_len: word(8),
        })
    }
}

/// Writes one whole frame into `out`: header, the payload that `payload`
/// writes, trailer. Returns the frame length, or how large `out` must be.
pub(crate) fn write_frame(
    out: &mut [u8],
    kind: FrameKind,
    seq: u32,
    payload: impl FnOnce(&mut Writer<'_>) -> Result<(), EncodeError>,
) -> Result<usize, EncodeError> {
    write_frame_with_kind(out, kind.to_byte(), 0, seq, payload)
}

/// [`write_frame`] with a flags byte (a Block's codec).
pub(crate) fn write_frame_with_flags(
    out: &mut [u8],
    kind: FrameKind,
    flags: u8,
    seq: u32,
    payload: impl FnOnce(&mut Writer<'_>) -> Result<(), EncodeError>,
) -> Result<usize, EncodeError> {
    write_frame_with_kind(out, kind.to_byte(), flags, seq, payload)
}

/// Writes a frame with any kind and flags bytes around an already encoded
/// payload: for tools that relay or record frames (pass the flags on: a
/// Block's say how its events are stored) and for tests that forge them.
pub fn write_raw_frame(
    out: &mut [u8],
    kind: u8,
    flags: u8,
    seq: u32,
    payload: &[u8],
) -> Result<usize, EncodeError> {
    write_frame_with_kind(out, kind, flags, seq, |w| {
        w.bytes(payload);
        Ok(())
    })
}

/// The header and trailer that make `payload` a frame of `kind`, `flags`
/// and `seq`: the bytes [`write_raw_frame`] writes around it. For a
/// writer that sends a payload from where it lies, such as one payload
/// shared by many streams, each sealing it with its own sequence number.
pub fn frame_around(
    kind: u8,
    flags: u8,
    seq: u32,
    payload: &[u8],
) -> Result<([u8; HEADER_LEN], [u8; TRAILER_LEN]), EncodeError> {
    let len = u32::try_from(payload.len())
        .map_err(|_| EncodeError::PayloadTooLarge { len: payload.len() })?;
    let mut header = [0u8; HEADER_LEN];
    header[..2].copy_from_slice(&MAGIC);
    header[2] = kind;
    header[3] = flags;
    header[4..8].copy_from_slice(&seq.to_le_bytes());
    header[8..12].copy_from_slice(&len.to_le_bytes());
    let header_check = checksum(&header[..12]);
    header[12..16].copy_from_slice(&header_check.to_le_bytes());
    let trailer = checksum_of_two(&header, payload).to_le_bytes();
    Ok((header, trailer))
}

fn write_frame_with_kind(
    out: &mut [u8],
    kind: u8,
    flags: u8,
    seq: u32,
    payload: impl FnOnce(&mut Writer<'_>) -> Result<(), EncodeError>,
) -> Result<usize, EncodeError> {
    let mut w = Writer::new(out);
    w.bytes(&MAGIC);
    w.u8(kind);
    w.u8(flags);
    w.u32(seq);
    w.u32(0); // payload length, patched below
    w.u32(0); // header check, patched below
    payload(&mut w)?;
    let payload_len = w.position() - HEADER_LEN;
    let payload_len = u32::try_from(payload_len)
        .map_err(|_| EncodeError::PayloadTooLarge { len: payload_len })?;
    if w.overflowed() {
        return Err(EncodeError::BufferTooSmall {
            needed: w.position() + TRAILER_LEN,
        });
    }
    w.patch_u32(8, payload_len);
    let header_check = w.written().map_or(0, |b| checksum(&b[..12]));
    w.patch_u32(12, header_check);
    let frame_check = w.written().map_or(0, checksum);
    w.u32(frame_check);
    w.finish()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_frame_around_a_payload_is_the_frame_written_whole() {
        let payload: [u8; 300] = core::array::from_fn(|i| (i * 13 + 1) as u8);
        for len in [0, 1, 300] {
            let mut whole = [0u8; 300 + super::OVERHEAD];
            let n = super::write_raw_frame(&mut whole, 2, 1, 0xdead_beef, &payload[..len]).unwrap();
            let (header, trailer) =
                super::frame_around(2, 1, 0xdead_beef, &payload[..len]).unwrap();
            assert_eq!(&whole[..super::HEADER_LEN], &header);
            assert_eq!(
                &whole[super::HEADER_LEN..n - super::TRAILER_LEN],
                &payload[..len]
            );
            assert_eq!(&whole[n - super::TRAILER_LEN..n], &trailer);
        }
    }

    /// The two implementations (64-bit targets, microcontrollers) agree.
    #[test]
    fn both_checksums_are_the_same_crc32() {
        const SMALL: crc::Crc<u32, crc::Table<1>> =
            crc::Crc::<u32, crc::Table<1>>::new(&crc::CRC_32_ISO_HDLC);
        let bytes: [u8; 300] = core::array::from_fn(|i| (i * 7 + 3) as u8);
        for len in [0, 1, 12, 16, 299, 300] {
            assert_eq!(
                super::checksum(&bytes[..len]),
                SMALL.checksum(&bytes[..len])
            );
        }
        // The check value of the catalogue ("123456789").
        assert_eq!(super::checksum(b"123456789"), 0xcbf4_3926);
    }
}
