//! Clients that try to hold an HTTP server, for the tests and the bench:
//! slowloris (a request head one byte at a time), clients that ask for an
//! answer and never read it, and a 1 MiB request head; and a scraper that
//! times how long a normal request waits for its whole answer meanwhile.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How many of each attacker to run.
#[derive(Clone, Copy, Debug)]
pub struct Attack {
    /// Clients sending a request head a byte at a time, for ever.
    pub slowloris: usize,
    /// Clients asking for `path` and never reading the answer.
    pub non_readers: usize,
    /// Clients sending a 1 MiB head, again and again.
    pub huge_heads: usize,
}

/// The attackers, running until dropped.
pub struct Attackers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Attackers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// A client of `addr` that has sent `first`.
fn open(addr: SocketAddr, first: &[u8]) -> Option<TcpStream> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_millis(200)))
        .ok()?;
    stream.write_all(first).ok()?;
    Some(stream)
}

/// A slowloris client's start: a request head that never ends.
const SLOW_HEAD: &[u8] = b"GET /metrics HTTP/1.1\r\nX-Slow: ";

impl Attack {
    /// Starts the attack on `addr`; the non-readers ask for `path`.
    /// Returns once every attacker has connected (or failed to).
    pub fn start(self, addr: SocketAddr, path: &str) -> Attackers {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        // Slowloris: a byte of a never-ending header per client every
        // 500 ms; a client the server closed is replaced.
        let mut slow: Vec<Option<TcpStream>> =
            (0..self.slowloris).map(|_| open(addr, SLOW_HEAD)).collect();
        {
            let stop = Arc::clone(&stop);
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    for slot in &mut slow {
                        let alive = slot.as_mut().is_some_and(|s| s.write_all(b"x").is_ok());
                        if !alive {
                            *slot = open(addr, SLOW_HEAD);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }));
        }
        // Non-readers: the request whole, the answer never read; replaced
        // when the server lets one go.
        let request = format!("GET {path} HTTP/1.1\r\nHost: attacker\r\n\r\n").into_bytes();
        let mut idle: Vec<Option<TcpStream>> = (0..self.non_readers)
            .map(|_| open(addr, &request))
            .collect();
        {
            let stop = Arc::clone(&stop);
            threads.push(std::thread::spawn(move || {
                let mut probe = [0u8; 1];
                while !stop.load(Ordering::Acquire) {
                    for slot in &mut idle {
                        // Peeking reads nothing, but tells a closed one.
                        let closed = slot.as_ref().is_none_or(|s| {
                            s.set_nonblocking(true).is_ok() && matches!(s.peek(&mut probe), Ok(0))
                        });
                        if closed {
                            *slot = open(addr, &request);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }));
        }
        for _ in 0..self.huge_heads {
            let stop = Arc::clone(&stop);
            threads.push(std::thread::spawn(move || {
                let mut head = b"GET /metrics HTTP/1.1\r\nX-Huge: ".to_vec();
                head.resize(1 << 20, b'x');
                while !stop.load(Ordering::Acquire) {
                    drop(open(addr, &head));
                    std::thread::sleep(Duration::from_millis(50));
                }
            }));
        }
        Attackers { stop, threads }
    }
}

/// A normal request for `path` on a new connection, as a scraper sends
/// it: the status line and how long the whole answer took, or why it
/// failed within `wait`.
pub fn scrape(addr: SocketAddr, path: &str, wait: Duration) -> Result<(String, Duration), String> {
    let started = Instant::now();
    let mut stream =
        TcpStream::connect_timeout(&addr, wait).map_err(|e| format!("connect: {e}"))?;
    let _ = stream.set_read_timeout(Some(wait));
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: scraper\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .map_err(|e| format!("send: {e}"))?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .map_err(|e| format!("answer: {e} after {:?}", started.elapsed()))?;
    let status = String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned();
    Ok((status, started.elapsed()))
}
