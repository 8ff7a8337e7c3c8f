//! A failure that repeats, told once, then counted: a collector that is
//! down fails every export (about 57 a second, metrics and traces), and
//! a line for each would bury everything else on stderr. The first
//! failure is told at once; the ones after it are counted and told, with
//! the last reason, at most every [`TELL_EVERY`]; a success after
//! failures is told with what was left untold.

use std::time::{Duration, Instant};

/// The shortest time between two lines about the same failing thing.
pub const TELL_EVERY: Duration = Duration::from_secs(10);

/// The failures of one thing (`what`, as in "OTLP exports to HOST"), and
/// what of them was told.
#[derive(Debug)]
pub struct Failures {
    what: String,
    /// When a line was last told, while failing.
    told_at: Option<Instant>,
    /// Failures since that line.
    untold: u64,
    /// The reason of the last of them.
    last_why: String,
}

impl Failures {
    /// No failure yet of `what`.
    pub fn new(what: impl Into<String>) -> Failures {
        Failures {
            what: what.into(),
            told_at: None,
            untold: 0,
            last_why: String::new(),
        }
    }

    /// It failed at `now` for `why`: the line to print, when one is due.
    pub fn failed(&mut self, why: &str, now: Instant) -> Option<String> {
        let Some(told_at) = self.told_at else {
            self.told_at = Some(now);
            return Some(format!("{} failed: {why}", self.what));
        };
        self.untold += 1;
        self.last_why.clear();
        self.last_why.push_str(why);
        if now.saturating_duration_since(told_at) < TELL_EVERY {
            return None;
        }
        self.told_at = Some(now);
        Some(self.told_untold())
    }

    /// It worked: the line saying so after failures, with what of them
    /// was not yet told.
    pub fn worked(&mut self) -> Option<String> {
        self.told_at.take()?;
        let line = match self.untold {
            0 => format!("{} work again", self.what),
            _ => format!("{}; they work again", self.told_untold()),
        };
        Some(line)
    }

    fn told_untold(&mut self) -> String {
        let line = format!(
            "{} failed {} more times, the last: {}",
            self.what, self.untold, self.last_why
        );
        self.untold = 0;
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collector_down_for_a_minute_is_told_in_a_few_lines() {
        let (mut failures, t0) = (Failures::new("OTLP exports to c:4318"), Instant::now());
        let mut lines = Vec::new();
        // 57 failures a second for 60 s.
        for i in 0..57 * 60 {
            let now = t0 + Duration::from_millis(i * 1000 / 57);
            lines.extend(failures.failed(&format!("refused {i}"), now));
        }
        lines.extend(failures.worked());
        assert_eq!(lines[0], "OTLP exports to c:4318 failed: refused 0");
        assert!(lines.len() <= 8, "{lines:#?}");
        // Every failure is in a line, by itself or counted.
        let counted: u64 = lines[1..]
            .iter()
            .map(|l| {
                let n = l.split(" failed ").nth(1).unwrap();
                n.split(' ').next().unwrap().parse::<u64>().unwrap()
            })
            .sum();
        assert_eq!(counted + 1, 57 * 60);
        assert!(lines
            .last()
            .unwrap()
            .ends_with("the last: refused 3419; they work again"));
        // Working on, nothing more to tell; a new failure is told at once.
        assert_eq!(failures.worked(), None);
        let later = t0 + Duration::from_secs(61);
        assert_eq!(
            failures.failed("timed out", later).as_deref(),
            Some("OTLP exports to c:4318 failed: timed out")
        );
        assert_eq!(
            failures.worked().as_deref(),
            Some("OTLP exports to c:4318 work again")
        );
    }
}
