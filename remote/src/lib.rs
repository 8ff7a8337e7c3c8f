//! typhon-live beyond loopback. A stream's port that leaves loopback is
//! served over TLS ([`identity`]: a certificate given, or one made at
//! start and known by its [`fingerprint`]), and a viewer must present an
//! access [`token`] before any frame is sent. [`handshake`] is that
//! exchange, both ends, as docs/REMOTE.md sets it out byte by byte;
//! [`gate`] runs the server's end for every connection with bounds on
//! time and number, so that nothing before authentication can hold the
//! server; [`trust`] is how a viewer checks the server: a CA file, or the
//! fingerprint pinned.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod error;
pub mod fingerprint;
pub mod gate;
pub mod handshake;
pub mod identity;
pub mod token;
pub mod trust;

mod deadline;

pub use error::RemoteError;
/// The TLS library, for the types of the streams this crate makes.
pub use rustls;

/// The server's end of an authenticated connection.
pub type ServerStream = rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>;
/// The viewer's end of an authenticated connection.
pub type ClientStream = rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>;

/// The crypto every TLS config of this crate is built on.
fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}
