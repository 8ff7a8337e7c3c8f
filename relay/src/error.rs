//! Why the relay could not start.

use std::fmt;
use std::path::PathBuf;

/// Why the relay could not start; once running, a source or viewer that
/// fails is counted and retried, never an error of the relay's.
#[derive(Debug)]
#[non_exhaustive]
pub enum RelayError {
    /// The configuration file could not be read.
    ConfigUnreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The configuration file is not what it must be.
    BadConfig {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        reason: String,
    },
    /// A setting refused (what is wrong, and what to do instead).
    BadSettings(String),
    /// A port to serve on could not be bound.
    CannotListen {
        /// The address asked.
        addr: String,
        /// The bind error.
        reason: String,
    },
    /// The captures' directory could not be made or read, or its
    /// writer started.
    Capture {
        /// The directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for RelayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RelayError::ConfigUnreadable { path, reason } => {
                write!(f, "{}: {reason}", path.display())
            }
            RelayError::BadConfig { path, reason } => write!(
                f,
                "{} is not a relay configuration: {reason}",
                path.display()
            ),
            RelayError::BadSettings(reason) => f.write_str(reason),
            RelayError::CannotListen { addr, reason } => {
                write!(f, "cannot listen on {addr}: {reason}")
            }
            RelayError::Capture { dir, reason } => {
                write!(f, "captures cannot go to {}: {reason}", dir.display())
            }
        }
    }
}

impl std::error::Error for RelayError {}
