//! Reading a trace file: every whole frame in order, and every damage with
//! its byte offset; a file cut off by a crash reads up to its last frame.

use std::path::Path;

use typhon_live_core::{DecodeError, Decoder, Frame};

use crate::error::CliError;

/// A damage found in a file: where, and what.
pub struct Damage {
    /// Byte offset in the file.
    pub offset: u64,
    /// What was wrong there.
    pub error: DecodeError,
}

/// Reads `path` whole.
pub fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| CliError::File {
        path: path.into(),
        reason: e.to_string(),
    })
}

/// A file of which not one frame could be read is not a trace: the error
/// names its first damage.
pub fn require_frames(path: &Path, frames_read: u64, damage: &[Damage]) -> Result<(), CliError> {
    if frames_read > 0 {
        return Ok(());
    }
    let reason = damage.first().map_or("no frame".into(), |d| {
        format!("byte {}: {}", d.offset, d.error)
    });
    Err(CliError::BadTrace {
        path: path.into(),
        reason,
    })
}

/// Hands every frame of `bytes` to `on_frame` (with its payload errors
/// reported as damage) and returns the damage found.
pub fn frames(
    bytes: &[u8],
    mut on_frame: impl FnMut(&Frame<'_>) -> Result<(), DecodeError>,
) -> Vec<Damage> {
    let mut buf = vec![0u8; (16 << 20).min(bytes.len().max(64))];
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
