//! What one client may take of the server.

use std::time::Duration;

/// The bounds every connection is held to. [`Limits::default`] is what
/// the relay serves with; each field says why its default is what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Connections held at once; when full, the idlest is evicted for a
    /// new one. 1 024 by default: beyond what a scraper and a few dozen
    /// browser tabs need, with room for as many idle attackers.
    pub max_connections: usize,
    /// Time for a request's whole head, from its first byte. 5 s by
    /// default: a scraper sends its head in one packet; Prometheus's
    /// scrape timeout is 10 s.
    pub header_timeout: Duration,
    /// Bytes of a request head. 16 KiB by default (hyper's least is
    /// 8 KiB); a larger head is answered 431 and the connection closed.
    pub max_head: usize,
    /// Bytes of a request body. 64 KiB by default: nothing served reads
    /// more; a larger body is answered 413.
    pub max_body: usize,
    /// Time to read a request body, once a handler reads it. 5 s.
    pub body_timeout: Duration,
    /// Time a connection may move no byte either way before it is closed:
    /// a client that stops reading its answer, or sits between requests.
    /// 10 s by default.
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            header_timeout: Duration::from_secs(5),
            max_head: 16 << 10,
            max_body: 64 << 10,
            body_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(10),
        }
    }
}
