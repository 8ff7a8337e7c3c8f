//! Where on the timeline the stream lost something or started over:
//! gaps, drops, damage, restarts and reconnects, each at the host time
//! the model had reached when it learned of it, with its count. A view
//! draws them where they happened; the counters say how many in all.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// The name of an instant that carries, as its payload, the Unix time in
/// ns at which it was recorded: a viewer that draws one knows how long it
/// took from the event to the screen (the browser viewer records it, and
/// typhon-live-bench reads it back). Recorded on the same machine as the
/// viewer, or on clocks kept in step.
pub const LATENCY_MARK: &str = "typhon.latency";

/// Marks kept at most; the oldest go first. A mark of the same kind at the
/// same time adds to the one before instead of taking a place.
pub const MAX_MARKS: usize = 4096;

/// What a mark tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkKind {
    /// Frames missing by sequence number (count: frames).
    Gap,
    /// Events the writer could not deliver (count: events).
    Dropped,
    /// A frame that broke a rule of the format (count: events lost in it).
    Damaged,
    /// The process restarted: a new session, or the clock went back
    /// (count: 1).
    Restart,
    /// The connection was made again (count: 1).
    Reconnect,
}

/// One mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// Host time, ns.
    pub time: u64,
    /// What it tells.
    pub kind: MarkKind,
    /// How many.
    pub count: u64,
}

/// The marks, oldest first.
#[derive(Clone, Debug, Default)]
pub struct Marks {
    marks: VecDeque<Mark>,
}

impl Marks {
    /// Adds `count` of `kind` at `time`.
    pub fn add(&mut self, time: u64, kind: MarkKind, count: u64) {
        if let Some(last) = self.marks.back_mut() {
            if last.time == time && last.kind == kind {
                last.count = last.count.saturating_add(count);
                return;
            }
        }
        if self.marks.len() >= MAX_MARKS {
            self.marks.pop_front();
        }
        self.marks.push_back(Mark { time, kind, count });
    }

    /// The marks, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Mark> {
        self.marks.iter()
    }

    /// Forgets every mark before host time `time` (the history starts
    /// over there).
    pub fn forget_before(&mut self, time: u64) {
        while self.marks.front().is_some_and(|m| m.time < time) {
            self.marks.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_kind_at_the_same_time_adds_up_and_the_oldest_go_past_the_cap() {
        let mut marks = Marks::default();
        marks.add(10, MarkKind::Gap, 2);
        marks.add(10, MarkKind::Gap, 3);
        marks.add(10, MarkKind::Dropped, 7);
        let all: Vec<_> = marks.iter().copied().collect();
        assert_eq!(
            all,
            [
                Mark {
                    time: 10,
                    kind: MarkKind::Gap,
                    count: 5
                },
                Mark {
                    time: 10,
                    kind: MarkKind::Dropped,
                    count: 7
                },
            ]
        );
        for t in 0..MAX_MARKS as u64 {
            marks.add(100 + t, MarkKind::Reconnect, 1);
        }
        assert_eq!(marks.iter().count(), MAX_MARKS);
        assert_eq!(marks.iter().next().map(|m| m.time), Some(100));
        marks.forget_before(150);
        assert_eq!(marks.iter().next().map(|m| m.time), Some(150));
    }
}
