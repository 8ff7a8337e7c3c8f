//! Reading a trace file: its bytes, for [`typhon_live_reader::frames`],
//! and the error when not one frame of it could be read.

use std::path::Path;

use typhon_live_reader::Damage;

use crate::error::CliError;

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
