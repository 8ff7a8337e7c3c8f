//! What can keep a stream from being symbolized.

use std::fmt;
use std::path::PathBuf;

/// Why the debug files could not be looked at.
#[derive(Debug)]
#[non_exhaustive]
pub enum SymbolsError {
    /// The directory of debug files cannot be read.
    Directory {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        reason: String,
    },
}

impl fmt::Display for SymbolsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SymbolsError::Directory { path, reason } => write!(
                f,
                "the debug files' directory {} cannot be read: {reason}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for SymbolsError {}
