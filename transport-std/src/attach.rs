//! The viewer's end of a live stream: connecting with retries,
//! reconnecting on a schedule, and turning socket bytes into frames for a
//! consumer (`typhon-live attach` and `record`, the relay's sources).

use std::io::{ErrorKind, Read};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use core::fmt;

use typhon_live_core::{DecodeError, Decoder, Frame};

/// Connect attempts in a row (refused, unreachable, timed out) before
/// giving up, and the pause between them.
pub const ATTEMPTS: u32 = 3;
/// The pause between two connect attempts.
pub const RETRY_PAUSE: Duration = Duration::from_secs(2);
/// After a lost connection the viewer waits before connecting again: first
/// this long, then twice as long after each connection that did not stay
/// up for [`HEALTHY_FOR`], up to [`RECONNECT_MAX`]. A peer that accepts and
/// hangs up at once is asked again at 0.1, 0.3, 0.7, 1.5, 3.1 s, ...,
/// then every 5 s, not in a tight loop.
pub const RECONNECT_FIRST: Duration = Duration::from_millis(100);
/// The longest wait before reconnecting.
pub const RECONNECT_MAX: Duration = Duration::from_secs(5);
/// A connection that lasted this long resets the reconnect schedule.
pub const HEALTHY_FOR: Duration = Duration::from_secs(2);
/// A typhon-live peer sends its Init at once; silence this long means the
/// peer is something else.
pub const FIRST_FRAME_WAIT: Duration = Duration::from_secs(5);
/// Bytes a stream may start with before its first whole frame. A serial
/// link (a UART behind QEMU's or a terminal server's TCP port) has no
/// connection of its own: a viewer joins it inside a frame and skips to
/// the next. Firmware frames are a few KiB at most; a peer that sends more
/// than this without one frame does not speak typhon-live.
pub const MAX_LEADING_GARBAGE: u64 = 64 << 10;
/// Bytes fed to the decoder at a time before the first frame, so that
/// [`MAX_LEADING_GARBAGE`] is overrun by at most this much.
const LEADING_STEP: usize = 4 << 10;

/// Waits for `pause`, but not past `deadline`, asking `go_on` every
/// 100 ms (a user may quit meanwhile); `false` if the deadline came first
/// or `go_on` said stop.
pub fn pause(pause: Duration, deadline: Option<Instant>, mut go_on: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + pause;
    let end = deadline.map_or(until, |d| d.min(until));
    loop {
        let now = Instant::now();
        if now >= end {
            return end == until;
        }
        if !go_on() {
            return false;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(100)));
    }
}

/// The reconnect schedule: how long to wait before the next connection.
#[derive(Debug)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: RECONNECT_FIRST,
        }
    }
}

impl Backoff {
    /// The pause before reconnecting after a connection that lasted
    /// `lasted`.
    pub fn after(&mut self, lasted: Duration) -> Duration {
        if lasted >= HEALTHY_FOR {
            self.next = RECONNECT_FIRST;
        }
        let pause = self.next;
        self.next = (self.next * 2).min(RECONNECT_MAX);
        pause
    }
}

/// Connects to `addr`, trying [`ATTEMPTS`] times; `progress` hears of each
/// attempt, and is asked every 100 ms between them whether to go on.
/// `Ok(None)`: `deadline` came, or `progress` said stop, before a
/// connection did.
pub fn connect(
    addr: &str,
    deadline: Option<Instant>,
    mut progress: impl FnMut(u32) -> bool,
) -> Result<Option<TcpStream>, ConnectError> {
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        if !progress(attempt) {
            return Ok(None);
        }
        let timeout = deadline.map_or(Duration::from_secs(2), |d| {
            d.saturating_duration_since(Instant::now())
                .clamp(Duration::from_millis(1), Duration::from_secs(2))
        });
        match resolve(addr)
            .and_then(|sock| TcpStream::connect_timeout(&sock, timeout).map_err(|e| e.to_string()))
        {
            Ok(stream) => {
                let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
                let _ = stream.set_nodelay(true);
                return Ok(Some(stream));
            }
            Err(e) => last = e,
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
        if attempt < ATTEMPTS && !pause(RETRY_PAUSE, deadline, || progress(attempt)) {
            return Ok(None);
        }
    }
    Err(ConnectError::Unreachable {
        addr: addr.into(),
        reason: last,
    })
}

/// Why [`connect`] gave up.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectError {
    /// Nothing answered at the address in [`ATTEMPTS`] attempts.
    Unreachable {
        /// The address asked.
        addr: String,
        /// The last attempt's error.
        reason: String,
    },
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Unreachable { addr, reason } => {
                write!(f, "cannot connect to {addr}: {reason}")
            }
        }
    }
}

impl core::error::Error for ConnectError {}

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
    /// Go on reading.
    Continue,
    /// Stop reading this connection.
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

/// Reads `stream` (a socket, or TLS over one, with a read timeout of at
/// most 100 ms) into `consumer` until it says stop or the connection ends.
pub fn read_frames(stream: &mut impl Read, consumer: &mut impl Consumer) -> End {
    let mut buf = vec![0u8; 16 << 20];
    let mut decoder = Decoder::new(&mut buf);
    let mut chunk = vec![0u8; 256 << 10];
    // A frame, or a frame header whose check holds: the peer speaks
    // typhon-live, whatever damage follows.
    let mut any_frame = false;
    // What was wrong with the bytes before the first frame, if anything.
    let mut leading: Option<String> = None;
    let connected = Instant::now();
    let mut last_tick = Instant::now();
    loop {
        if !any_frame && connected.elapsed() > FIRST_FRAME_WAIT {
            let seconds = FIRST_FRAME_WAIT.as_secs();
            return End::NotTyphon(match leading {
                Some(why) => format!("no frame within {seconds} s: {why}"),
                None => format!("no frame within {seconds} s"),
            });
        }
        let n = match stream.read(&mut chunk) {
            Ok(0) if !any_frame && leading.is_some() => {
                return End::NotTyphon(leading.unwrap_or_default());
            }
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
            // Until the first frame, a step at a time: a peer that does not
            // speak typhon-live is told by the bytes past
            // MAX_LEADING_GARBAGE, not by a whole chunk more.
            let step = if any_frame {
                rest.len()
            } else {
                rest.len().min(LEADING_STEP)
            };
            let taken = decoder.feed(&rest[..step]);
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
                        let garbage = matches!(
                            e,
                            DecodeError::BadMagic { .. } | DecodeError::HeaderChecksum { .. }
                        );
                        if !any_frame && garbage {
                            // Not typhon-live, or joined inside a frame:
                            // what follows tells.
                            leading.get_or_insert_with(|| e.to_string());
                            continue;
                        }
                        // A damaged Init is still typhon-live: the frames
                        // after it are read (names unknown until the next).
                        any_frame = true;
                        consumer.damage(e);
                    }
                }
            }
            // The decoder skips garbage quietly after its first error: the
            // bytes it passed over tell, not the errors.
            if !any_frame && decoder.position() > MAX_LEADING_GARBAGE {
                return End::NotTyphon(format!(
                    "{} bytes without a frame ({})",
                    decoder.position(),
                    leading.unwrap_or_else(|| "no frame header".into())
                ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    /// Counts frames, and never stops.
    struct Count(u64);

    impl Consumer for Count {
        fn frame(&mut self, _frame: &Frame<'_>) -> Flow {
            self.0 += 1;
            Flow::Continue
        }
        fn damage(&mut self, _error: DecodeError) {}
        fn tick(&mut self) -> Flow {
            Flow::Continue
        }
    }

    #[test]
    fn a_peer_sending_garbage_is_dropped_just_past_the_leading_garbage_limit() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            // Bytes below 61: never the magic "TL", so the decoder skips
            // them all quietly after its first error.
            let noise: Vec<u8> = (0..1u32 << 20).map(|i| (i % 61) as u8).collect();
            // Refused once the reader hangs up.
            let _ = stream.write_all(&noise);
        });
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut count = Count(0);
        let end = read_frames(&mut stream, &mut count);
        drop(stream);
        peer.join().unwrap();
        let End::NotTyphon(why) = end else {
            panic!("{end:?}");
        };
        // "N bytes without a frame (...)", N just past the limit: not the
        // 1 MiB sent, nor the first-frame wait's worth of it.
        let read: u64 = why.split(' ').next().unwrap().parse().unwrap();
        assert!(
            read > MAX_LEADING_GARBAGE && read <= MAX_LEADING_GARBAGE + LEADING_STEP as u64,
            "{why}"
        );
        assert_eq!(count.0, 0);
    }
}
