//! The viewer's end of a stream's port beyond loopback, for `attach` and
//! `record`: TLS, trusting a CA file (`--ca`) or a pinned certificate
//! (`--fingerprint`), then the token (`--token-file`, else
//! `TYPHON_LIVE_TOKEN`), as docs/REMOTE.md sets out. Without `--ca` or
//! `--fingerprint` the connection is plain, as loopback's is.

use std::io::Read;
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use typhon_live_remote::fingerprint::Fingerprint;
use typhon_live_remote::handshake;
use typhon_live_remote::token::Token;
use typhon_live_remote::trust::Trust;
use typhon_live_remote::{ClientStream, RemoteError};

use crate::error::CliError;

/// The variable a token may come from.
pub const TOKEN_VARIABLE: &str = "TYPHON_LIVE_TOKEN";

/// How to reach a stream served over TLS with a token.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RemoteOptions {
    /// Connect over TLS, trusting the certificates of this PEM file (the
    /// server's CA, or the certificate itself).
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// Connect over TLS to the server whose certificate has this SHA-256
    /// fingerprint (the relay prints it when it makes its certificate).
    #[arg(long, value_name = "SHA256", conflicts_with = "ca")]
    pub fingerprint: Option<String>,
    /// The file whose first line is the access token [default: the
    /// TYPHON_LIVE_TOKEN variable].
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

/// What a TLS connection is opened with.
pub struct Secure {
    tls: Arc<typhon_live_remote::rustls::ClientConfig>,
    token: Token,
}

impl RemoteOptions {
    /// The TLS settings these options give, if any; an error names the
    /// option that is wrong, or says what is missing.
    pub fn secure(&self) -> Result<Option<Secure>, CliError> {
        let bad = |what: &str, e: RemoteError| CliError::BadSettings(format!("{what}: {e}"));
        let trust = match (&self.ca, &self.fingerprint) {
            (Some(ca), _) => Trust::ca_file(ca).map_err(|e| bad("--ca", e))?,
            (None, Some(text)) => Trust::Pinned(
                text.parse::<Fingerprint>()
                    .map_err(|e| bad("--fingerprint", e))?,
            ),
            (None, None) if self.token_file.is_some() => {
                return Err(CliError::BadSettings(
                    "--token-file: a token is sent over TLS only; give --ca FILE or \
                     --fingerprint SHA256 too"
                        .into(),
                ))
            }
            (None, None) => return Ok(None),
        };
        let token = match &self.token_file {
            Some(path) => Token::from_file(path).map_err(|e| bad("--token-file", e))?,
            None => match std::env::var(TOKEN_VARIABLE) {
                Ok(text) => Token::new(text.trim()).map_err(|e| bad(TOKEN_VARIABLE, e))?,
                Err(_) => {
                    return Err(CliError::BadSettings(format!(
                        "over TLS the server wants its token: give --token-file FILE, or set \
                         {TOKEN_VARIABLE}"
                    )))
                }
            },
        };
        let tls = trust.client().map_err(|e| bad("TLS", e))?;
        Ok(Some(Secure { tls, token }))
    }
}

/// A connection to a stream's port: plain, or TLS after the token.
pub enum Stream {
    /// Loopback's plain TCP.
    Plain(TcpStream),
    /// TLS, the token accepted.
    Tls(Box<ClientStream>),
}

impl Stream {
    /// The peer's address, as `addr` if it cannot be had.
    pub fn peer(&self, addr: &str) -> String {
        let socket = match self {
            Stream::Plain(socket) => socket,
            Stream::Tls(stream) => stream.get_ref(),
        };
        socket
            .peer_addr()
            .map_or_else(|_| addr.to_owned(), |p| p.to_string())
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(socket) => socket.read(buf),
            Stream::Tls(stream) => stream.read(buf),
        }
    }
}

/// `socket`, connected to `addr`, opened as `secure` says; an error says
/// why the server could not be trusted or refused the token.
pub fn open(socket: TcpStream, addr: &str, secure: Option<&Secure>) -> Result<Stream, CliError> {
    let Some(secure) = secure else {
        return Ok(Stream::Plain(socket));
    };
    let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
    let deadline = Instant::now() + handshake::DEADLINE;
    handshake::open(
        socket,
        host,
        Arc::clone(&secure.tls),
        &secure.token,
        deadline,
    )
    .map(|stream| Stream::Tls(Box::new(stream)))
    .map_err(|error| CliError::Remote {
        addr: addr.into(),
        error,
    })
}
