//! When an export is tried again: after a 429, 502, 503 or 504 (the
//! answers OTLP/HTTP calls retryable), as soon as the collector's
//! `Retry-After` says, or else after an exponential backoff with jitter,
//! and only while the export's deadline allows. Anything else, a refused
//! connection included, fails the export at once: the next export tries
//! again, and a collector that is down does not hold the queue for the
//! whole deadline of every export.

use std::hash::BuildHasher;
use std::time::{Duration, SystemTime};

/// The first backoff, before jitter.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest backoff, before jitter.
pub const MAX_BACKOFF: Duration = Duration::from_secs(4);

/// Whether an answer with this status may be tried again.
pub fn retryable(status: u16) -> bool {
    matches!(status, 429 | 502 | 503 | 504)
}

/// The wait a `Retry-After` value asks for at `now`: delay-seconds or an
/// HTTP date (a date past is no wait); `None` if it is neither.
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Exponential backoff: each wait twice the last, up to
/// [`MAX_BACKOFF`], each drawn from its upper half so that relays that
/// failed together do not come back together.
#[derive(Debug)]
pub struct Backoff {
    next: Duration,
    random: std::hash::RandomState,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            next: FIRST_BACKOFF,
            random: std::hash::RandomState::new(),
        }
    }
}

impl Backoff {
    /// The next wait.
    pub fn next_wait(&mut self) -> Duration {
        let ceiling = self.next;
        self.next = (self.next * 2).min(MAX_BACKOFF);
        let half = ceiling / 2;
        let jitter = self.random.hash_one(ceiling) % (half.as_nanos() as u64 + 1);
        half + Duration::from_nanos(jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_answers_otlp_calls_retryable_are_retried() {
        for status in [429, 502, 503, 504] {
            assert!(retryable(status), "{status}");
        }
        for status in [200, 400, 401, 404, 413, 500, 501] {
            assert!(!retryable(status), "{status}");
        }
    }

    #[test]
    fn retry_after_is_seconds_or_a_date() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT").unwrap();
        assert_eq!(retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            retry_after("Wed, 21 Oct 2026 07:28:05 GMT", now),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            retry_after("Wed, 21 Oct 2026 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(retry_after("-1", now), None);
    }

    #[test]
    fn the_backoff_doubles_up_to_its_ceiling_within_its_upper_half() {
        let mut backoff = Backoff::default();
        let mut ceiling = FIRST_BACKOFF;
        for _ in 0..10 {
            let wait = backoff.next_wait();
            assert!(
                wait >= ceiling / 2 && wait <= ceiling,
                "{wait:?} for {ceiling:?}"
            );
            ceiling = (ceiling * 2).min(MAX_BACKOFF);
        }
        assert_eq!(ceiling, MAX_BACKOFF);
    }
}
