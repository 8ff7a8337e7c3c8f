//! How a lane's spans nest (FORMAT.md, "Reading a stream": nesting), once
//! for every viewer: a span sits one deeper than its parent; a span whose
//! parent was lost (a dropped Block, a full ring, sent before the reader
//! attached) sits inside the innermost span that holds it in time.
//!
//! A span arrives when it ends, after its children, so a viewer that
//! reads its spans newest first meets each parent before its children:
//! one stack of the spans that may still hold the next gives every depth
//! in one pass, seeded with the spans still open.

use alloc::vec::Vec;

use typhon_live_core::{OpenSpan, SpanId};

/// Depths deeper than this are told as this, whatever a peer sends: as
/// deep as a writer counts a lane's open spans (it lists the outermost
/// `MAX_OPEN_SPANS` of them, and counts 4095 at most).
pub const MAX_DEPTH: usize = 4095;

/// The depths of one lane's spans, given newest-ended first.
#[derive(Clone, Debug, Default)]
pub struct Nesting {
    /// The spans that may hold the next one, outermost first: (id, start,
    /// end), an open span's end `u64::MAX`.
    stack: Vec<(SpanId, u64, u64)>,
}

impl Nesting {
    /// A lane whose open spans are `open`, outermost first (a Catch-up's,
    /// less those ended since: [`Lane::open`](crate::Lane)), at depths 0,
    /// 1, and so on.
    pub fn with_open(open: &[OpenSpan]) -> Nesting {
        let open = open.iter().take(MAX_DEPTH);
        Nesting {
            stack: open.map(|span| (span.id, span.start, u64::MAX)).collect(),
        }
    }

    /// The depth of span `id` (of parent `parent`, 0 for a root) from
    /// `start` to `end`, ns, the next of the lane's spans newest-ended
    /// first: its parent's depth plus one when its parent is among those
    /// that hold it; else, its parent lost, one deeper than the innermost
    /// span that holds it in time; 0 for a root.
    pub fn depth(&mut self, id: SpanId, parent: SpanId, start: u64, end: u64) -> usize {
        self.place(id, parent, start, end).depth
    }

    /// [`Nesting::depth`], with the span it sits in.
    pub fn place(&mut self, id: SpanId, parent: SpanId, start: u64, end: u64) -> Place {
        // What ended before it began, or began after it, holds nothing
        // read from now on (they come in ending order, latest first).
        while self
            .stack
            .last()
            .is_some_and(|&(_, from, to)| from > start || to < end)
        {
            self.stack.pop();
        }
        if parent == 0 {
            self.stack.clear();
        } else if let Some(at) = self.stack.iter().rposition(|&(held, ..)| held == parent) {
            // A sibling's subtree that holds it in time is not its own.
            self.stack.truncate(at + 1);
        }
        let place = Place {
            depth: self.stack.len().min(MAX_DEPTH),
            within: self.stack.last().map(|&(held, ..)| held),
        };
        if self.stack.len() < MAX_DEPTH {
            self.stack.push((id, start, end));
        }
        place
    }
}

/// Where a span sits on its lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// Its depth: 0 for a root.
    pub depth: usize,
    /// The span it sits in: its parent, or (its parent lost) the
    /// innermost that holds it in time; `None` at depth 0.
    pub within: Option<SpanId>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn open(id: SpanId, start: u64) -> OpenSpan {
        OpenSpan { id, name: 0, start }
    }

    #[test]
    fn parents_first_then_time_then_the_open_stack() {
        let mut nesting = Nesting::with_open(&[open(1, 0), open(2, 10)]);
        // Newest first: 5 (parent 2, open) holds 6 and 8; 7's parent 99
        // was lost, and 5 holds it in time; 9 is a root.
        assert_eq!(nesting.depth(5, 2, 20, 90), 2);
        assert_eq!(nesting.depth(8, 5, 60, 80), 3);
        assert_eq!(nesting.depth(7, 99, 62, 70), 4, "inside 8 in time");
        assert_eq!(nesting.depth(6, 5, 30, 50), 3, "its parent, not 8");
        assert_eq!(nesting.depth(9, 0, 95, 99), 0);
        // A span whose parent was lost and nothing holds: a root.
        let mut nesting = Nesting::default();
        assert_eq!(nesting.depth(3, 42, 0, 10), 0);
    }

    #[test]
    fn depth_is_bounded_whatever_a_peer_nests() {
        let mut nesting = Nesting::default();
        let n = MAX_DEPTH as u64 + 10;
        for id in 1..=n {
            let depth = nesting.depth(id as u32, id as u32 - 1, id, 2 * n - id);
            assert_eq!(depth, (id as usize - 1).min(MAX_DEPTH));
        }
    }

    /// A span as a writer recorded it, with its ancestors' ids.
    struct Written {
        id: SpanId,
        parent: SpanId,
        start: u64,
        end: u64,
        ancestors: Vec<SpanId>,
    }

    /// A lane's spans in the order they end, as a writer with one stack
    /// records them: each action opens a child of the innermost (`true`)
    /// or ends it; every action takes a tick, so no two times tie.
    fn written(actions: &[bool]) -> Vec<Written> {
        let (mut now, mut next) = (0u64, 1 as SpanId);
        let mut stack: Vec<(SpanId, u64)> = Vec::new();
        let mut ended = Vec::new();
        let mut end = |stack: &mut Vec<(SpanId, u64)>, now: u64| {
            let (id, start) = stack.pop().unwrap();
            let ancestors: Vec<SpanId> = stack.iter().map(|s| s.0).collect();
            let parent = ancestors.last().copied().unwrap_or(0);
            ended.push(Written {
                id,
                parent,
                start,
                end: now,
                ancestors,
            });
        };
        for &open in actions {
            now += 1;
            if open || stack.is_empty() {
                stack.push((next, now));
                next += 1;
            } else {
                end(&mut stack, now);
            }
        }
        while !stack.is_empty() {
            now += 1;
            end(&mut stack, now);
        }
        ended
    }

    proptest! {
        /// A well-formed lane's spans, some lost: each sits as deep as it
        /// has ancestors that arrived, whichever were lost.
        #[test]
        fn a_span_sits_as_deep_as_its_ancestors_that_arrived(
            actions in proptest::collection::vec(any::<bool>(), 1..120),
            lost in proptest::collection::vec(any::<bool>(), 120),
        ) {
            let spans = written(&actions);
            let kept = |id: SpanId| !lost[id as usize % lost.len()];
            let mut nesting = Nesting::default();
            for span in spans.iter().rev().filter(|s| kept(s.id)) {
                let depth = nesting.depth(span.id, span.parent, span.start, span.end);
                let arrived = span.ancestors.iter().filter(|&&a| kept(a)).count();
                prop_assert_eq!(depth, arrived, "span {}", span.id);
            }
        }
    }
}
