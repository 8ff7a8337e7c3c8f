//! Which record a field belongs to (docs/FORMAT.md, "Fields"), and
//! allocated bytes ("Allocated bytes"): the record right before it on its
//! lane, if that record is the span or the task end the field names. A consumer keeps what it needs of each
//! owner (`T`: the model its name and duration, a converter where it
//! wrote it) and asks here which one a field belongs to.

use alloc::collections::BTreeMap;

use typhon_live_core::{Event, FieldOwner, LaneId, SpanId};

/// Fields kept of one owner at most; past it a field is refused like an
/// orphaned one (typhon-live's writers send at most 8).
pub const MAX_FIELDS_PER_SPAN: u32 = 16;

/// Each lane's last record, when it can own fields.
#[derive(Clone, Debug)]
pub struct FieldOwners<T> {
    lanes: BTreeMap<LaneId, Last<T>>,
}

#[derive(Clone, Debug)]
struct Last<T> {
    owner: FieldOwner,
    kept: T,
    fields: u32,
    /// Its allocated bytes were read: a second record of them is refused.
    allocated: bool,
}

impl<T> Default for FieldOwners<T> {
    fn default() -> Self {
        FieldOwners {
            lanes: BTreeMap::new(),
        }
    }
}

impl<T: Copy> FieldOwners<T> {
    /// `event`, read on `lane`: a field is looked up by [`Self::field`];
    /// a span, a poll or a task end is the lane's owner from now on, with
    /// what `keep` makes of it; anything else ends the lane's owner.
    pub fn read(&mut self, lane: LaneId, event: &Event, keep: impl FnOnce() -> T) {
        let owner = match *event {
            Event::Field { .. } | Event::Allocated { .. } => return,
            Event::Span { id, .. } | Event::Poll { id, .. } => FieldOwner::Span(id),
            Event::TaskEnd { task, .. } => FieldOwner::Task(task),
            _ => {
                self.lanes.remove(&lane);
                return;
            }
        };
        let kept = keep();
        self.lanes.insert(
            lane,
            Last {
                owner,
                kept,
                fields: 0,
                allocated: false,
            },
        );
    }

    /// What was kept of the owner of a field of `owner` read on `lane`:
    /// `None` when that is not the lane's last record (the owner was
    /// lost), or the owner already had [`MAX_FIELDS_PER_SPAN`].
    pub fn field(&mut self, lane: LaneId, owner: FieldOwner) -> Option<T> {
        let last = self.lanes.get_mut(&lane).filter(|l| l.owner == owner)?;
        last.fields += 1;
        (last.fields <= MAX_FIELDS_PER_SPAN).then_some(last.kept)
    }

    /// What was kept of span `span`, whose allocated bytes were read on
    /// `lane`: `None` when it is not the lane's last span (it was lost),
    /// or its bytes were read already.
    pub fn allocated(&mut self, lane: LaneId, span: SpanId) -> Option<T> {
        let last = self.lanes.get_mut(&lane);
        let last = last.filter(|l| l.owner == FieldOwner::Span(span) && !l.allocated)?;
        last.allocated = true;
        Some(last.kept)
    }

    /// Forgets every lane's owner (a new session).
    pub fn clear(&mut self) {
        self.lanes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: u32) -> Event {
        Event::Span {
            start: 10,
            duration: 5,
            name: 7,
            id,
            parent: 0,
            arg: None,
        }
    }

    #[test]
    fn allocated_bytes_belong_to_the_lanes_last_span_once() {
        let mut owners = FieldOwners::default();
        owners.read(0, &span(3), || 3u32);
        owners.read(1, &span(4), || 4u32);
        let bytes = Event::Allocated {
            time: 10,
            span: 3,
            bytes: 64,
        };
        owners.read(0, &bytes, || 0);
        assert_eq!(owners.allocated(1, 3), None, "not lane 1's span");
        assert_eq!(owners.allocated(0, 4), None, "not lane 0's span");
        assert_eq!(owners.allocated(0, 3), Some(3));
        assert_eq!(owners.allocated(0, 3), None, "a second record is refused");
        assert_eq!(owners.allocated(1, 4), Some(4));
        // An instant between a span and its bytes: the span was not last.
        owners.read(0, &span(5), || 5);
        let instant = Event::Instant {
            time: 11,
            name: 1,
            payload: 0,
        };
        owners.read(0, &instant, || 0);
        assert_eq!(owners.allocated(0, 5), None);
    }
}
