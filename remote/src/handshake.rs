//! The exchange on a stream's port beyond loopback, both ends (set out
//! byte by byte in docs/REMOTE.md): TLS; then the viewer sends
//! `TOKEN <token>\n`; then the server answers `OK\n` and the stream's
//! frames follow, or `NO <reason>\n` and it closes. Nothing of the stream
//! is sent before the token is accepted, and every step is bounded by
//! one deadline for the whole exchange.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;

use crate::deadline::Deadlined;
use crate::token::{Token, MAX_TOKEN};
use crate::{ClientStream, RemoteError, ServerStream};

/// What the viewer's line starts with.
pub const TOKEN_PREFIX: &[u8] = b"TOKEN ";
/// The most bytes the viewer's line may have, its newline included.
pub const MAX_LINE: usize = TOKEN_PREFIX.len() + MAX_TOKEN + 1;
/// The server's answer to the right token.
pub const ACCEPTED: &[u8] = b"OK\n";
/// What the server's answer to anything else starts with.
pub const REFUSED_PREFIX: &[u8] = b"NO ";
/// How long a whole exchange may take, TLS included, by default.
pub const DEADLINE: Duration = Duration::from_secs(5);

/// Why the server's end refused a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The exchange did not end in time.
    TimedOut,
    /// TLS failed (not TLS at all, say), as rustls says.
    Tls(String),
    /// The viewer closed before its token.
    Closed,
    /// The viewer's line was not `TOKEN <token>\n` within [`MAX_LINE`].
    BadLine,
    /// The token is not the server's.
    WrongToken,
    /// Other handshakes came while this one was the oldest in progress
    /// and the gate was full ([`crate::gate`]).
    Crowded,
}

impl Refusal {
    /// A short label for a metric.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::TimedOut => "timed_out",
            Refusal::Tls(_) => "tls",
            Refusal::Closed => "closed",
            Refusal::BadLine => "bad_line",
            Refusal::WrongToken => "wrong_token",
            Refusal::Crowded => "crowded",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::TimedOut => write!(f, "the handshake took over its {} s", DEADLINE.as_secs()),
            Refusal::Tls(why) => write!(f, "TLS failed: {why}"),
            Refusal::Closed => f.write_str("the viewer closed before its token"),
            Refusal::BadLine => write!(
                f,
                "the viewer did not send TOKEN <token> in a line of at most {MAX_LINE} bytes"
            ),
            Refusal::WrongToken => f.write_str("wrong token"),
            Refusal::Crowded => {
                f.write_str("newer handshakes came while it was the oldest of a full gate")
            }
        }
    }
}

impl std::error::Error for Refusal {}

fn io_refusal(e: std::io::Error) -> Refusal {
    match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => Refusal::TimedOut,
        std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset => Refusal::Closed,
        _ => Refusal::Tls(e.to_string()),
    }
}

/// The server's end: TLS with `config`, then the viewer's token checked
/// against `token`, all by `deadline`. The accepted stream has the
/// socket's timeouts as they were.
pub fn accept(
    socket: TcpStream,
    config: Arc<rustls::ServerConfig>,
    token: &Token,
    deadline: Instant,
) -> Result<ServerStream, Refusal> {
    let timeouts = timeouts(&socket);
    // Small writes each waiting for an answer: without this, Nagle's
    // algorithm and a delayed ACK add 40 ms.
    let _ = socket.set_nodelay(true);
    let mut connection =
        rustls::ServerConnection::new(config).map_err(|e| Refusal::Tls(e.to_string()))?;
    let mut io = Deadlined {
        socket: &socket,
        deadline,
    };
    let mut tls = rustls::Stream::new(&mut connection, &mut io);
    let line = read_line(&mut tls).map_err(io_refusal)?;
    let answer = match line.as_deref() {
        None => Err(Refusal::BadLine),
        Some(line) => match line.strip_prefix(TOKEN_PREFIX) {
            Some(given) if token.matches(given) => Ok(()),
            Some(_) => Err(Refusal::WrongToken),
            None => Err(Refusal::BadLine),
        },
    };
    match &answer {
        Ok(()) => tls
            .write_all(ACCEPTED)
            .and_then(|()| tls.flush())
            .map_err(io_refusal)?,
        Err(refusal) => {
            let said = format!("NO {refusal}\n");
            let _ = tls.write_all(said.as_bytes()).and_then(|()| tls.flush());
            connection.send_close_notify();
            let _ = connection.complete_io(&mut io);
        }
    }
    answer?;
    restore(&socket, timeouts);
    Ok(rustls::StreamOwned::new(connection, socket))
}

/// The viewer's end: TLS with `config` to `host` (the name its
/// certificate must have, for a CA's trust), then `token`, all by
/// `deadline`; an error says what failed, or why the server refused.
pub fn open(
    socket: TcpStream,
    host: &str,
    config: Arc<rustls::ClientConfig>,
    token: &Token,
    deadline: Instant,
) -> Result<ClientStream, RemoteError> {
    let timeouts = timeouts(&socket);
    let _ = socket.set_nodelay(true);
    let name = ServerName::try_from(
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
    )
    .map_err(|e| RemoteError::Tls(format!("{host:?} is not a server name: {e}")))?;
    let mut connection =
        rustls::ClientConnection::new(config, name).map_err(|e| RemoteError::Tls(e.to_string()))?;
    let mut io = Deadlined {
        socket: &socket,
        deadline,
    };
    let mut tls = rustls::Stream::new(&mut connection, &mut io);
    let failed = |e: std::io::Error| RemoteError::Handshake(e.to_string());
    let mut line = Vec::with_capacity(MAX_LINE);
    line.extend_from_slice(TOKEN_PREFIX);
    line.extend_from_slice(token.as_str().as_bytes());
    line.push(b'\n');
    tls.write_all(&line)
        .and_then(|()| tls.flush())
        .map_err(failed)?;
    match read_line(&mut tls).map_err(failed)? {
        Some(answer) if answer == ACCEPTED[..ACCEPTED.len() - 1] => {}
        Some(answer) => {
            let said = answer.strip_prefix(REFUSED_PREFIX).unwrap_or(&answer);
            return Err(RemoteError::Refused(
                String::from_utf8_lossy(said).into_owned(),
            ));
        }
        None => {
            return Err(RemoteError::Handshake(
                "the server's answer is not a line".into(),
            ))
        }
    }
    restore(&socket, timeouts);
    Ok(rustls::StreamOwned::new(connection, socket))
}

/// A socket's read and write timeouts, as they were before the
/// exchange's deadline set its own.
type Timeouts = (
    std::io::Result<Option<Duration>>,
    std::io::Result<Option<Duration>>,
);

fn timeouts(socket: &TcpStream) -> Timeouts {
    (socket.read_timeout(), socket.write_timeout())
}

fn restore(socket: &TcpStream, (read, write): Timeouts) {
    let _ = socket.set_read_timeout(read.ok().flatten());
    let _ = socket.set_write_timeout(write.ok().flatten());
}

/// A line of at most [`MAX_LINE`] bytes, without its newline; `None` if
/// no newline came within them. Reads a byte at a time, so that nothing
/// after the line is taken.
fn read_line(stream: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::with_capacity(MAX_LINE);
    let mut byte = [0u8; 1];
    while line.len() < MAX_LINE {
        if stream.read(&mut byte)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if byte[0] == b'\n' {
            return Ok(Some(line));
        }
        line.push(byte[0]);
    }
    Ok(None)
}
