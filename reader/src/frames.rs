//! Every whole frame of a byte slice (a trace file read whole, a test's
//! stream), and the damage between them with its byte offset; bytes cut
//! off by a crash read up to their last whole frame.

use alloc::vec;
use alloc::vec::Vec;

use typhon_live_core::{DecodeError, Decoder, Frame};

/// The largest frame [`frames`] reads whole: the decoder's buffer, as a
/// live connection's.
const MAX_FRAME: usize = 16 << 20;

/// A damage found in the bytes: where, and what.
#[derive(Clone, Debug, PartialEq)]
pub struct Damage {
    /// Byte offset from the start of the bytes.
    pub offset: u64,
    /// What was wrong there.
    pub error: DecodeError,
}

/// Hands every frame of `bytes` to `on_frame` (with its payload errors
/// reported as damage at the frame's offset) and returns the damage found.
pub fn frames(
    bytes: &[u8],
    mut on_frame: impl FnMut(&Frame<'_>) -> Result<(), DecodeError>,
) -> Vec<Damage> {
    let mut buf = vec![0u8; MAX_FRAME.min(bytes.len().max(64))];
    let mut decoder = Decoder::new(&mut buf);
    let mut damage = Vec::new();
    let mut rest = bytes;
    loop {
        let n = decoder.feed(rest);
        rest = &rest[n..];
        loop {
            match decoder.next() {
                Ok(Some(frame)) => {
                    if let Err(error) = on_frame(&frame) {
                        damage.push(Damage {
                            offset: frame.offset,
                            error,
                        });
                    }
                }
                Ok(None) => break,
                Err(error) => damage.push(Damage {
                    offset: offset_of(&error).unwrap_or(decoder.position()),
                    error,
                }),
            }
        }
        if rest.is_empty() {
            break;
        }
    }
    if let Err(error) = decoder.finish() {
        damage.push(Damage {
            offset: offset_of(&error).unwrap_or(decoder.position()),
            error,
        });
    }
    damage
}

fn offset_of(error: &DecodeError) -> Option<u64> {
    match *error {
        DecodeError::BadMagic { offset }
        | DecodeError::HeaderChecksum { offset }
        | DecodeError::ChecksumMismatch { offset, .. }
        | DecodeError::FrameTooLarge { offset, .. }
        | DecodeError::Truncated { offset, .. } => Some(offset),
        _ => None,
    }
}
