//! Reading a live stream: connecting with retries, and turning socket
//! bytes into frames for a consumer.

use std::io::{ErrorKind, Read};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use typhon_live_core::{DecodeError, Decoder, Frame};

use crate::error::CliError;

/// Connection attempts before giving up, and the pause between them.
pub const ATTEMPTS: u32 = 3;
pub const RETRY_PAUSE: Duration = Duration::from_secs(2);
/// A typhon-live peer sends its Init at once; silence this long means the
/// peer is something else.
pub const FIRST_FRAME_WAIT: Duration = Duration::from_secs(5);

/// Connects to `addr`, trying [`ATTEMPTS`] times; `on_attempt` hears of each.
pub fn connect(addr: &str, mut on_attempt: impl FnMut(u32)) -> Result<TcpStream, CliError> {
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        on_attempt(attempt);
        match resolve(addr).and_then(|sock| {
            TcpStream::connect_timeout(&sock, Duration::from_secs(2)).map_err(|e| e.to_string())
        }) {
            Ok(stream) => {
                let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) => last = e,
        }
        if attempt < ATTEMPTS {
            std::thread::sleep(RETRY_PAUSE);
        }
    }
    Err(CliError::Unreachable {
        addr: addr.into(),
        reason: last,
    })
}

fn resolve(addr: &str) -> Result<std::net::SocketAddr, String> {
    addr.to_socket_addrs()
        .map_err(|e| format!("bad address: {e}"))?
        .next()
        .ok_or_else(|| "the address resolves to nothing".into())
}

/// How reading a connection ended.
#[derive(Debug)]
pub enum End {
    /// The consumer said stop (Shutdown seen, `q` pressed, time is up).
    Done,
    /// The peer closed or reset the connection.
    Lost(String),
    /// The first bytes were not a typhon-live stream.
    NotTyphon(String),
}

/// What the consumer of frames says after each one, and between them.
pub enum Flow {
    Continue,
    Stop,
}

/// What takes the frames of a connection.
pub trait Consumer {
    /// A whole frame arrived.
    fn frame(&mut self, frame: &Frame<'_>) -> Flow;
    /// Damage in the stream (the frames after it still arrive).
    fn damage(&mut self, error: DecodeError);
    /// Called at least every 100 ms, frames or not.
    fn tick(&mut self) -> Flow;
}

/// Reads `stream` into `consumer` until it says stop or the connection ends.
pub fn read_frames(stream: &mut TcpStream, consumer: &mut impl Consumer) -> End {
    let mut buf = vec![0u8; 16 << 20];
    let mut decoder = Decoder::new(&mut buf);
    let mut chunk = vec![0u8; 256 << 10];
    let mut any_frame = false;
    let connected = Instant::now();
    let mut last_tick = Instant::now();
    loop {
        if !any_frame && connected.elapsed() > FIRST_FRAME_WAIT {
            return End::NotTyphon(format!("no frame within {} s", FIRST_FRAME_WAIT.as_secs()));
        }
        let n = match stream.read(&mut chunk) {
            Ok(0) => {
                let reason = match decoder.finish() {
                    Err(e) => format!("the peer closed the connection mid-frame ({e})"),
                    Ok(()) => "the peer closed the connection".into(),
                };
                return End::Lost(reason);
            }
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                0
            }
            Err(e) => return End::Lost(e.to_string()),
        };
        let mut rest = &chunk[..n];
        loop {
            let taken = decoder.feed(rest);
            rest = &rest[taken..];
            loop {
                match decoder.next() {
                    Ok(Some(frame)) => {
                        any_frame = true;
                        if let Flow::Stop = consumer.frame(&frame) {
                            return End::Done;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        if !any_frame {
                            return End::NotTyphon(e.to_string());
                        }
                        consumer.damage(e);
                    }
                }
            }
            if rest.is_empty() {
                break;
            }
        }
        if last_tick.elapsed() >= Duration::from_millis(100) || n == 0 {
            last_tick = Instant::now();
            if let Flow::Stop = consumer.tick() {
                return End::Done;
            }
        }
    }
}
