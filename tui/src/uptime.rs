//! The clock the command's front ends read for the view model, which
//! reads none (it runs where there is no clock, in a browser): time since
//! this process first asked.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

static START: OnceLock<Instant> = OnceLock::new();

/// Time since the first call (of this or [`at`]).
pub fn now() -> Duration {
    at(Instant::now())
}

/// `instant` as time since the first call.
pub fn at(instant: Instant) -> Duration {
    instant.saturating_duration_since(*START.get_or_init(Instant::now))
}
