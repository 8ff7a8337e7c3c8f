//! Lanes as the view keeps them: a row per lane slot, which stays when
//! its thread ends (its counts, its past on the timeline), and the self
//! time of each span that ends on it.

use typhon_live_core::LaneKind;

use crate::limits::MAX_LANES;
use crate::Model;

/// A lane as the view keeps it: its row stays when its slot is freed
/// (its counts, its past on the timeline); its open spans are the
/// reader's.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lane {
    /// Its name's id.
    pub(crate) name: u32,
    /// Its kind, once the stream said.
    pub(crate) kind: Option<LaneKind>,
    /// Events read on it.
    pub(crate) events: u64,
    /// Events the stream says it lost.
    pub(crate) dropped: u64,
    /// The spans whose children ended before them (children end first),
    /// innermost last, each with its children's summed durations: for
    /// its self time. Nested spans end in order, so this is a stack.
    pub(crate) child_time: Vec<(u32, u64)>,
}

/// Spans whose children's time a lane tracks at most; past it (parents
/// that never arrive: dropped with their Block) the stack starts over.
const MAX_PENDING_PARENTS: usize = 4096;
/// Entries of spans whose end was lost that a span ending may find above
/// its own, and take off.
const LOST_ENDS_SKIPPED: usize = 7;

impl Lane {
    /// Span `id`, child of `parent` (0: none), ended after `duration`:
    /// its self time, its children's (which ended before it) taken off.
    pub(crate) fn span_ended(&mut self, id: u32, parent: u32, duration: u64) -> u64 {
        // Its children's sum is on top, or just under entries of spans
        // whose ends were lost (a dropped Block): those go. Only the top
        // few are looked at: most spans are leaves.
        let pending = self.child_time.len();
        let found = self
            .child_time
            .iter()
            .rev()
            .take(LOST_ENDS_SKIPPED + 1)
            .position(|&(p, _)| p == id);
        let children = match found {
            Some(from_top) => {
                let at = pending - 1 - from_top;
                let sum = self.child_time[at].1;
                self.child_time.truncate(at);
                sum
            }
            None => 0,
        };
        if parent != 0 {
            match self.child_time.last_mut() {
                Some((p, sum)) if *p == parent => *sum = sum.saturating_add(duration),
                _ => {
                    if self.child_time.len() >= MAX_PENDING_PARENTS {
                        self.child_time.clear();
                    }
                    self.child_time.push((parent, duration));
                }
            }
        }
        duration.saturating_sub(children)
    }
}

impl Model {
    /// Lane `id`'s row, made if there is room for one more (one search
    /// of the table: this is on every event's way).
    pub(crate) fn lane(&mut self, id: u16) -> Option<&mut Lane> {
        let full = self.lanes.len() >= MAX_LANES;
        match self.lanes.entry(id) {
            std::collections::btree_map::Entry::Occupied(row) => Some(row.into_mut()),
            std::collections::btree_map::Entry::Vacant(_) if full => {
                self.refused.lanes += 1;
                None
            }
            std::collections::btree_map::Entry::Vacant(row) => Some(row.insert(Lane::default())),
        }
    }
}
