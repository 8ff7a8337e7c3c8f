//! Spans arrive as they end, children before their parent; Perfetto's
//! slices are begin and end events that a reader nests by time. A reader
//! sorts packets by timestamp, so the order in the file matters only
//! where timestamps tie: a parent that begins on the same tick as its
//! first child must begin first. A lane's spans are therefore held until
//! their root span ends, then written as begin/end pairs in nesting
//! order.

use typhon_live_core::{NameId, SpanId};

/// A span waiting for its root, times in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) name: NameId,
    pub(crate) id: SpanId,
    pub(crate) parent: SpanId,
    pub(crate) arg: Option<u64>,
    /// Arrival order: of two spans with the same times, the later to
    /// arrive is the outer one.
    pub(crate) order: u64,
}

/// A begin or an end, in the order to write them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edge {
    /// The span begins.
    Begin(Held),
    /// The innermost open span ends, at this time.
    End(u64),
}

/// Puts `spans` in nesting order and hands each begin and end to `write`.
///
/// Sorted by start, longer first, later arrival first; then a span nests
/// under the innermost open one that is its parent or still open at its
/// start, and every open span that is neither is ended first. For spans
/// that nest (what a lane records) this is their tree; for a span whose
/// parent was lost it is its nearest surviving ancestor; anything else (a
/// peer's overlapping spans) still gets one end per begin.
pub(crate) fn order(spans: &mut [Held], stack: &mut Vec<Held>, mut write: impl FnMut(Edge)) {
    spans.sort_unstable_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then(b.end.cmp(&a.end))
            .then(b.order.cmp(&a.order))
    });
    stack.clear();
    for &span in spans.iter() {
        while let Some(top) = stack.last() {
            if top.id == span.parent || top.end > span.start {
                break;
            }
            write(Edge::End(top.end));
            stack.pop();
        }
        let mut span = span;
        if let Some(top) = stack.last() {
            // A child that ends after its parent (not from a lane) ends
            // with it, so that ends never go back in time on the track.
            span.end = span.end.min(top.end);
        }
        write(Edge::Begin(span));
        stack.push(span);
    }
    while let Some(top) = stack.pop() {
        write(Edge::End(top.end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: u64, end: u64, id: SpanId, parent: SpanId, order: u64) -> Held {
        Held {
            start,
            end,
            name: id,
            id,
            parent,
            arg: None,
            order,
        }
    }

    fn edges(spans: &mut [Held]) -> Vec<(char, u64, SpanId)> {
        let mut out = Vec::new();
        let mut open = Vec::new();
        order(spans, &mut Vec::new(), |edge| match edge {
            Edge::Begin(s) => {
                open.push(s.id);
                out.push(('B', s.start, s.id));
            }
            Edge::End(t) => out.push(('E', t, open.pop().unwrap())),
        });
        out
    }

    #[test]
    fn a_held_span_takes_56_bytes() {
        // PERFORMANCE.md's bound of the writer's memory says so.
        assert_eq!(std::mem::size_of::<Held>(), 56);
    }

    #[test]
    fn a_parent_beginning_with_its_first_child_begins_first() {
        // Arrival order: children first, the root last.
        let mut spans = [
            span(10, 30, 2, 1, 0),
            span(30, 40, 3, 1, 1),
            span(10, 50, 1, 0, 2),
        ];
        assert_eq!(
            edges(&mut spans),
            [
                ('B', 10, 1),
                ('B', 10, 2),
                ('E', 30, 2),
                ('B', 30, 3),
                ('E', 40, 3),
                ('E', 50, 1)
            ]
        );
    }

    #[test]
    fn same_times_nest_by_arrival_and_zero_length_children_stay_inside() {
        // A child with its parent's exact times, and an empty child at
        // the parent's end.
        let mut spans = [
            span(5, 9, 3, 2, 0),
            span(9, 9, 4, 2, 1),
            span(5, 9, 2, 1, 2),
            span(5, 9, 1, 0, 3),
        ];
        assert_eq!(
            edges(&mut spans),
            [
                ('B', 5, 1),
                ('B', 5, 2),
                ('B', 5, 3),
                ('E', 9, 3),
                ('B', 9, 4),
                ('E', 9, 4),
                ('E', 9, 2),
                ('E', 9, 1)
            ]
        );
    }

    #[test]
    fn an_orphan_nests_under_its_surviving_ancestor() {
        // Span 2 (parent of 3) was lost.
        let mut spans = [span(4, 6, 3, 2, 0), span(0, 10, 1, 0, 1)];
        assert_eq!(
            edges(&mut spans),
            [('B', 0, 1), ('B', 4, 3), ('E', 6, 3), ('E', 10, 1)]
        );
    }

    #[test]
    fn overlapping_spans_from_a_peer_still_pair_every_begin() {
        let mut spans = [span(0, 10, 1, 0, 0), span(5, 20, 2, 0, 1)];
        assert_eq!(
            edges(&mut spans),
            [('B', 0, 1), ('B', 5, 2), ('E', 10, 2), ('E', 10, 1)]
        );
    }
}
