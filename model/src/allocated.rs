//! The bytes a span allocated itself (FORMAT.md, "Allocated bytes"): read
//! right after its span on its lane ([`FieldOwners`] tells whether that
//! span is the one named), kept in the chunk being filled and added to
//! its name's totals; a poll's go to its task span, which keeps them
//! until its end.
//!
//! [`FieldOwners`]: typhon_live_reader::FieldOwners

use crate::history::AllocationRecord;
use crate::memory::bytes;
use crate::Model;

impl Model {
    /// Span `span` on `lane`, which began at `start`, allocated `bytes`.
    pub(crate) fn allocated_read(&mut self, lane: u16, start: u64, span: u32, bytes: u64) {
        match self.field_owners.allocated(lane, span) {
            Some(owner) if owner.task != 0 => self.task_allocated(owner.task, bytes),
            Some(owner) => self.chunk.push_allocation(AllocationRecord {
                start,
                bytes,
                name: owner.name,
                lane,
            }),
            None => self.refused.fields += 1,
        }
    }
}

/// What `spans` spans that allocated `allocated` bytes themselves (the
/// selected name's) did, as both viewers say it: "allocated 2.5 MiB
/// (self), 256.0 KiB a span"; `None` when none allocated anything (or
/// the process does not count its allocations).
pub fn allocated_line(allocated: u64, spans: u64) -> Option<String> {
    (allocated > 0).then(|| {
        let each = allocated as f64 / spans.max(1) as f64;
        format!(
            "allocated {} (self), {} a span",
            bytes(allocated as f64),
            bytes(each)
        )
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use typhon_live_core::Event;

    use super::*;

    fn span(id: u32, name: u32, parent: u32) -> Event {
        Event::Span {
            start: 1000 * u64::from(id),
            duration: 100,
            name,
            id,
            parent,
            arg: None,
        }
    }

    fn allocated(span: u32, bytes: u64) -> Event {
        Event::Allocated {
            time: 1000 * u64::from(span),
            span,
            bytes,
        }
    }

    #[test]
    fn bytes_go_to_their_span_or_its_task_and_never_to_another() {
        let mut model = Model::default();
        let mut read = |event: Event| model.on_event(0, &event, Duration::ZERO);
        read(span(2, 5, 1));
        read(allocated(2, 300));
        // Read twice: refused.
        read(allocated(2, 300));
        read(span(1, 6, 0));
        read(allocated(1, 40));
        // Its span was lost (dropped with a Block): the last is another.
        read(allocated(7, 1 << 20));
        // A task's two polls, then its end.
        read(Event::TaskBegin {
            time: 0,
            name: 8,
            task: 9,
            parent: 0,
        });
        for id in [3, 4] {
            read(Event::Poll {
                start: 1000 * u64::from(id),
                duration: 100,
                name: 8,
                id,
                parent: 0,
                task: 9,
            });
            read(allocated(id, 1000));
        }
        read(Event::TaskEnd {
            time: 6000,
            name: 8,
            task: 9,
            wall: 6000,
            busy: 200,
        });
        let totals = &model.chunk.totals;
        assert_eq!(totals[&5].allocated, 300);
        assert_eq!(totals[&6].allocated, 40);
        assert_eq!(totals[&8].allocated, 2000, "the task's polls'");
        assert_eq!(model.refused.fields, 2);
        let task = model.chunk.allocated_by(0, 8, 0);
        assert_eq!(task, Some(2000));
        assert_eq!(model.chunk.allocated_by(0, 5, 2000), Some(300));
    }

    #[test]
    fn the_line_says_the_total_and_each() {
        assert_eq!(allocated_line(0, 10), None);
        assert_eq!(
            allocated_line(10 << 20, 40).as_deref(),
            Some("allocated 10.0 MiB (self), 256.0 KiB a span")
        );
    }
}
