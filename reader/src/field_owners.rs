//! Which record a field belongs to (docs/FORMAT.md, "Fields"): the
//! record right before it on its lane, if that record is the span or the
//! task end the field names. A consumer keeps what it needs of each
//! owner (`T`: the model its name and duration, a converter where it
//! wrote it) and asks here which one a field belongs to.

use alloc::collections::BTreeMap;

use typhon_live_core::{Event, FieldOwner, LaneId};

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
            Event::Field { .. } => return,
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

    /// Forgets every lane's owner (a new session).
    pub fn clear(&mut self) {
        self.lanes.clear();
    }
}
