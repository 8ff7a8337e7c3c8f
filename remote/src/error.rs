//! Why a certificate, a key, a token or a connection could not be used.

use std::fmt;
use std::path::PathBuf;

/// Why a certificate, a key, a token or a connection could not be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum RemoteError {
    /// A file could not be read.
    Unreadable {
        /// What the file was to hold ("the TLS certificate").
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// A file holds no usable certificate, key or token.
    BadFile {
        /// What the file was to hold.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A token that is not 1 to 128 visible ASCII characters.
    BadToken(String),
    /// A fingerprint that is not 32 bytes of hex.
    BadFingerprint(String),
    /// The certificate and key do not make a TLS server, or a client
    /// could not be set up (the reason says why).
    Tls(String),
    /// No certificate could be made, or no token drawn.
    Generate(String),
    /// The connection failed before the server accepted the token: TLS
    /// (an untrusted certificate, a fingerprint not the pinned one), a
    /// time-out, or the peer closing.
    Handshake(String),
    /// The server refused the token, saying why.
    Refused(String),
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::Unreadable { what, path, reason } => {
                write!(f, "{what} {}: {reason}", path.display())
            }
            RemoteError::BadFile { what, path, reason } => {
                write!(f, "{what} {}: {reason}", path.display())
            }
            RemoteError::BadToken(why) => write!(f, "the token {why}"),
            RemoteError::BadFingerprint(text) => write!(
                f,
                "{text:?} is not a SHA-256 fingerprint (64 hex digits, colons allowed)"
            ),
            RemoteError::Tls(why) => write!(f, "TLS: {why}"),
            RemoteError::Generate(why) => write!(f, "cannot generate: {why}"),
            RemoteError::Handshake(why) => write!(f, "handshake failed: {why}"),
            RemoteError::Refused(why) => write!(f, "the server refused the connection: {why}"),
        }
    }
}

impl std::error::Error for RemoteError {}
