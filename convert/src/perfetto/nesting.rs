//! Spans arrive as they end, children before their parent; Perfetto's
//! slices are begin and end events that a reader nests by time. A reader
//! sorts packets by timestamp, so the order in the file matters only
//! where timestamps tie: a parent that begins on the same tick as its
//! first child must begin first, and of two siblings on the same tick the
//! one that ran first (an empty one) must end before the other begins.
//! A lane's spans are therefore held until their root span ends, then
//! written as begin/end pairs in the order of their tree.

use std::cmp::Reverse;

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
    /// The bytes it allocated itself, once read (FORMAT.md, "Allocated
    /// bytes"); 0, none read.
    pub(crate) allocated: u64,
    /// Arrival order, which is end order: siblings in the order they ran.
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

/// Room [`order`] reuses from one batch to the next.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// The batch's span ids, sorted.
    ids: Vec<SpanId>,
    /// Spans whose parent is not in the batch, by start.
    tops: Vec<usize>,
    visited: Vec<bool>,
    open: Vec<Open>,
}

/// A span begun and not yet ended, with the children still to write.
#[derive(Clone, Copy, Debug)]
struct Open {
    next_child: usize,
    children_end: usize,
    start: u64,
    end: u64,
}

/// Room kept between batches; a larger batch gives the rest back.
const SCRATCH_KEPT: usize = 4096;

/// Hands each begin and end of `spans` to `write`, in the order of their
/// tree: a span, then its children in the order they ran, then its end.
///
/// Spans whose parent is not among them (roots, and spans whose parent
/// was lost) are walked by start time. A child ending after its parent
/// (not from a lane) ends with it. A child beginning outside its parent
/// is not nested in it: its end would come before its begin. A peer's
/// clock that went back can do that (a firmware's read racing its timer's
/// wrap goes back a millisecond), and so can a peer reusing ids. Spans no walk
/// reaches (those, and a peer's cycle of parents) are walked last. Every
/// span is written once, and every begin gets one end, no earlier.
pub(crate) fn order(spans: &mut [Held], scratch: &mut Scratch, mut write: impl FnMut(Edge)) {
    // Children grouped under their parent, each group in arrival order.
    spans.sort_unstable_by_key(|s| (s.parent, s.order));
    let Scratch {
        ids,
        tops,
        visited,
        open,
    } = scratch;
    ids.clear();
    ids.extend(spans.iter().map(|s| s.id));
    ids.sort_unstable();
    let present = |id: SpanId| id != 0 && ids.binary_search(&id).is_ok();
    tops.clear();
    tops.extend((0..spans.len()).filter(|&i| !present(spans[i].parent)));
    tops.sort_unstable_by_key(|&i| {
        let s = &spans[i];
        (s.start, Reverse(s.end), Reverse(s.order))
    });
    visited.clear();
    visited.resize(spans.len(), false);
    let spans = &*spans;
    open.clear();
    for first in tops.iter().copied().chain(0..spans.len()) {
        if visited[first] {
            continue;
        }
        begin(spans, first, u64::MAX, open, visited, &mut write);
        while let Some(top) = open.last_mut() {
            if top.next_child < top.children_end {
                let child = top.next_child;
                top.next_child += 1;
                let end = top.end;
                if !visited[child] && (top.start..=end).contains(&spans[child].start) {
                    begin(spans, child, end, open, visited, &mut write);
                }
            } else {
                let end = top.end;
                open.pop();
                write(Edge::End(end));
            }
        }
    }
    for room in [ids.capacity(), tops.capacity(), visited.capacity()] {
        if room > SCRATCH_KEPT {
            *scratch = Scratch::default();
            break;
        }
    }
}

/// Writes the begin of `spans[i]`, ending no later than its parent, and
/// opens it.
fn begin(
    spans: &[Held],
    i: usize,
    parent_end: u64,
    open: &mut Vec<Open>,
    visited: &mut [bool],
    write: &mut impl FnMut(Edge),
) {
    visited[i] = true;
    let mut span = spans[i];
    span.end = span.end.min(parent_end);
    write(Edge::Begin(span));
    let (next_child, children_end) = children(spans, span.id);
    open.push(Open {
        next_child,
        children_end,
        start: span.start,
        end: span.end,
    });
}

/// The range of `spans` (sorted by parent) whose parent is `id`.
fn children(spans: &[Held], id: SpanId) -> (usize, usize) {
    if id == 0 {
        return (0, 0);
    }
    let first = spans.partition_point(|s| s.parent < id);
    (
        first,
        first + spans[first..].partition_point(|s| s.parent == id),
    )
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
            allocated: 0,
            order,
        }
    }

    fn edges(spans: &mut [Held]) -> Vec<(char, u64, SpanId)> {
        let mut out = Vec::new();
        let mut open = Vec::new();
        order(spans, &mut Scratch::default(), |edge| match edge {
            Edge::Begin(s) => {
                open.push(s.id);
                out.push(('B', s.start, s.id));
            }
            Edge::End(t) => out.push(('E', t, open.pop().unwrap())),
        });
        out
    }

    #[test]
    fn a_held_span_takes_64_bytes() {
        // PERFORMANCE.md's bound of the writer's memory says so.
        assert_eq!(std::mem::size_of::<Held>(), 64);
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
    fn an_empty_child_on_its_siblings_tick_ends_before_the_sibling_begins() {
        // The firmware's loop at 1 µs: `sense` (empty) then `control`,
        // both starting on the same tick, then their parent.
        let mut spans = [
            span(1, 1, 3, 1, 0),
            span(1, 2, 2, 1, 1),
            span(0, 3, 1, 0, 2),
        ];
        assert_eq!(
            edges(&mut spans),
            [
                ('B', 0, 1),
                ('B', 1, 3),
                ('E', 1, 3),
                ('B', 1, 2),
                ('E', 2, 2),
                ('E', 3, 1)
            ]
        );
    }

    #[test]
    fn an_orphan_is_walked_by_its_start_among_the_roots() {
        // Span 2 (parent of 3) was lost: 3 is written after root 1's
        // tree; a reader's sort by time puts it inside 1.
        let mut spans = [span(4, 6, 3, 2, 0), span(0, 10, 1, 0, 1)];
        assert_eq!(
            edges(&mut spans),
            [('B', 0, 1), ('E', 10, 1), ('B', 4, 3), ('E', 6, 3)]
        );
    }

    #[test]
    fn a_child_beginning_after_its_parent_ended_is_walked_on_its_own() {
        // A clock that went back 1 ms as its timer wrapped: the loop span
        // ended (1998) before its child began (1999). Nested, the child's
        // end (its parent's) came before its begin, and a reader met an
        // end with no begin.
        let mut spans = [
            span(1999, 2000, 3, 1, 0),
            span(1997, 1998, 2, 1, 1),
            span(1996, 1998, 1, 0, 2),
        ];
        assert_eq!(
            edges(&mut spans),
            [
                ('B', 1996, 1),
                ('B', 1997, 2),
                ('E', 1998, 2),
                ('E', 1998, 1),
                ('B', 1999, 3),
                ('E', 2000, 3)
            ]
        );
        // And one beginning before its parent did.
        let mut spans = [span(5, 6, 2, 1, 0), span(8, 9, 1, 0, 1)];
        assert_eq!(
            edges(&mut spans),
            [('B', 8, 1), ('E', 9, 1), ('B', 5, 2), ('E', 6, 2)]
        );
    }

    #[test]
    fn any_spans_a_peer_sends_read_back_with_every_end_after_its_begin() {
        // Spans from a small xorshift: tangled ids, parents and times.
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |max: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % max
        };
        for _ in 0..2000 {
            let mut spans: Vec<Held> = (0..next(12))
                .map(|order| {
                    let start = next(20);
                    span(
                        start,
                        start + next(6),
                        next(8) as u32 + 1,
                        next(9) as u32,
                        order,
                    )
                })
                .collect();
            let mut edges = Vec::new();
            order(&mut spans, &mut Scratch::default(), |edge| edges.push(edge));
            // Sorted by time, ties in written order, as a reader does: no
            // end without an open begin, and none left open.
            let mut timed: Vec<(u64, usize, bool)> = edges
                .iter()
                .enumerate()
                .map(|(i, e)| match e {
                    Edge::Begin(s) => (s.start, i, true),
                    Edge::End(t) => (*t, i, false),
                })
                .collect();
            timed.sort_unstable();
            let mut depth = 0usize;
            for (_, _, begins) in timed {
                if begins {
                    depth += 1;
                } else {
                    depth = depth.checked_sub(1).expect("an end has a begin");
                }
            }
            assert_eq!(depth, 0);
            assert_eq!(edges.len(), 2 * spans.len());
        }
    }

    #[test]
    fn a_peers_cycles_duplicates_and_overhangs_still_pair_every_begin_once() {
        let mut spans = [
            span(0, 10, 1, 0, 0),
            // Ends after its parent: ends with it.
            span(5, 20, 2, 1, 1),
            // Its own parent; and two spans each other's parent.
            span(3, 4, 7, 7, 2),
            span(3, 4, 8, 9, 3),
            span(3, 4, 9, 8, 4),
            // Two spans with one id, one child under that id.
            span(11, 12, 5, 0, 5),
            span(13, 14, 5, 0, 6),
            span(11, 12, 6, 5, 7),
        ];
        let e = edges(&mut spans);
        assert_eq!(e.iter().filter(|e| e.0 == 'B').count(), spans.len());
        assert_eq!(e.iter().filter(|e| e.0 == 'E').count(), spans.len());
        let mut begun: Vec<u64> = e.iter().filter(|e| e.0 == 'B').map(|e| e.1).collect();
        begun.sort_unstable();
        assert_eq!(begun, [0, 3, 3, 3, 5, 11, 11, 13]);
        assert!(e.contains(&('E', 10, 2)), "{e:?}");
    }
}
