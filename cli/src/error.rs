//! The command's errors: one line each, naming the thing that was wrong,
//! with an exit code per kind.

use std::fmt;
use std::path::PathBuf;

use typhon_live_relay::RelayError;
use typhon_live_std::attach::ConnectError;

/// Why a subcommand failed.
#[derive(Debug)]
pub enum CliError {
    /// Nothing answered at the address.
    Connect(ConnectError),
    /// The peer answered, but not with a typhon-live stream.
    NotTyphon {
        /// The peer's address.
        addr: String,
        /// What it sent instead.
        reason: String,
    },
    /// The connection went away and did not come back.
    ConnectionLost {
        /// The peer's address.
        addr: String,
        /// How it went away.
        reason: String,
    },
    /// A file could not be read or written.
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// A trace file is not a typhon-live stream, or is damaged.
    BadTrace {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The relay could not start.
    Relay(RelayError),
    /// The settings contradict each other or are out of range.
    BadSettings(String),
    /// The profiler of the demo could not start.
    Profiler(String),
    /// The terminal could not be driven.
    Terminal(String),
    /// A verdict was made on damaged input (`--allow-damage` judges it
    /// anyway).
    Damaged,
    /// The verdict failed: a regression, or a broken assertion.
    Verdict(String),
    /// A stream served over TLS could not be trusted, or refused the
    /// token.
    Remote {
        /// The server's address.
        addr: String,
        /// What failed.
        error: typhon_live_remote::RemoteError,
    },
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Connect(_) => 3,
            CliError::NotTyphon { .. } | CliError::BadTrace { .. } => 4,
            CliError::ConnectionLost { .. } => 5,
            CliError::File { .. } => 6,
            CliError::BadSettings(_) => 2,
            CliError::Relay(RelayError::CannotListen { .. }) => 3,
            CliError::Relay(RelayError::ConfigUnreadable { .. }) => 6,
            CliError::Relay(_) => 2,
            CliError::Profiler(_) | CliError::Terminal(_) => 1,
            CliError::Remote { .. } => 7,
            CliError::Damaged => 4,
            CliError::Verdict(_) => 8,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Connect(e) => write!(f, "{e}"),
            CliError::NotTyphon { addr, reason } => {
                write!(f, "{addr} is not a typhon-live stream: {reason}")
            }
            CliError::ConnectionLost { addr, reason } => {
                write!(f, "lost the connection to {addr}: {reason}")
            }
            CliError::File { path, reason } => write!(f, "{}: {reason}", path.display()),
            CliError::BadTrace { path, reason } => write!(
                f,
                "{} is not a readable typhon-live trace: {reason}",
                path.display()
            ),
            CliError::Relay(e) => write!(f, "{e}"),
            CliError::BadSettings(reason) => write!(f, "{reason}"),
            CliError::Profiler(reason) => write!(f, "cannot start the demo's profiler: {reason}"),
            CliError::Terminal(reason) => write!(f, "terminal error: {reason}"),
            CliError::Remote { addr, error } => write!(f, "{addr}: {error}"),
            CliError::Damaged => write!(
                f,
                "the input is damaged: judged as far as it reads (--allow-damage to let the verdict decide)"
            ),
            CliError::Verdict(what) => write!(f, "{what}"),
        }
    }
}

impl std::error::Error for CliError {}

impl From<ConnectError> for CliError {
    fn from(e: ConnectError) -> Self {
        CliError::Connect(e)
    }
}

impl From<RelayError> for CliError {
    fn from(e: RelayError) -> Self {
        CliError::Relay(e)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// One error of every kind the command returns.
    fn every_kind() -> Vec<CliError> {
        let (addr, reason, path) = (String::new(), String::new(), PathBuf::new());
        vec![
            CliError::Connect(ConnectError::Unreachable {
                addr: addr.clone(),
                reason: reason.clone(),
            }),
            CliError::NotTyphon {
                addr: addr.clone(),
                reason: reason.clone(),
            },
            CliError::ConnectionLost {
                addr: addr.clone(),
                reason: reason.clone(),
            },
            CliError::File {
                path: path.clone(),
                reason: reason.clone(),
            },
            CliError::BadTrace {
                path: path.clone(),
                reason: reason.clone(),
            },
            CliError::Relay(RelayError::ConfigUnreadable {
                path: path.clone(),
                reason: reason.clone(),
            }),
            CliError::Relay(RelayError::BadConfig {
                path,
                reason: reason.clone(),
            }),
            CliError::Relay(RelayError::BadSettings(reason.clone())),
            CliError::Relay(RelayError::CannotListen {
                addr: addr.clone(),
                reason: reason.clone(),
            }),
            CliError::BadSettings(reason.clone()),
            CliError::Profiler(reason.clone()),
            CliError::Terminal(reason.clone()),
            CliError::Damaged,
            CliError::Verdict(reason.clone()),
            CliError::Remote {
                addr,
                error: typhon_live_remote::RemoteError::Refused(reason),
            },
        ]
    }

    #[test]
    fn the_exit_code_table_is_complete() {
        let doc = include_str!("../../README.md");
        let table = doc
            .split("### Exit codes")
            .nth(1)
            .expect("an exit codes section");
        let documented: BTreeSet<u8> = table
            .lines()
            .filter_map(|line| line.strip_prefix("| `")?.split('`').next()?.parse().ok())
            .collect();
        // 0 is success, and 2 is also clap's code for a usage error.
        let returned: BTreeSet<u8> = [0, 2]
            .into_iter()
            .chain(every_kind().iter().map(CliError::exit_code))
            .collect();
        assert_eq!(documented, returned);
    }
}
