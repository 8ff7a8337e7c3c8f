//! A capture's triggers (FORMAT.md, "Marks"): where the flight recorder
//! fired, what fired it, and the span it fired on. A view opens a
//! capture on the first, paused, that span selected.

use serde::{Deserialize, Serialize};
use typhon_live_core::{NameId, OpenSpan};

use crate::history::{Chunk, SpanRecord};

/// Triggers kept at most (a capture holds at most 64; a stream that
/// sends more is counted past this).
pub const MAX_TRIGGERS: usize = 1024;

/// One trigger, as the mark said it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trigger {
    /// When it fired, host ns.
    pub time: u64,
    /// The lane of what fired it.
    pub lane: u16,
    /// Its label, a name: the trigger as written.
    pub label: NameId,
    /// The span it fired on: its name and start, host ns.
    pub span: Option<(NameId, u64)>,
}

impl Trigger {
    /// The span it fired on, in `chunks`: the one its mark names, else
    /// the innermost span of its lane that was running when it fired (a
    /// tick's trigger names none: what ran then is its cause). A span
    /// still open where the stream ends (a capture cut inside its stall)
    /// is found among `lanes`' open spans (as [`TimelineInputs`] lists
    /// them), lasting until `now`.
    ///
    /// [`TimelineInputs`]: crate::TimelineInputs
    pub fn span_in<'a>(
        &self,
        chunks: impl Iterator<Item = &'a Chunk>,
        lanes: &[(u16, String, Vec<OpenSpan>)],
        now: u64,
    ) -> Option<SpanRecord> {
        let spans = chunks
            .flat_map(|c| c.spans.iter())
            .filter(|s| s.lane == self.lane && !s.poll);
        let ended = match self.span {
            Some((name, start)) => spans
                .filter(|s| s.name == name && s.start == start)
                .copied()
                .next(),
            None => spans
                .filter(|s| s.start <= self.time && self.time <= s.start.saturating_add(s.duration))
                .min_by_key(|s| s.duration)
                .copied(),
        };
        ended.or_else(|| {
            let (_, _, open) = lanes.iter().find(|(id, _, _)| *id == self.lane)?;
            let open = match self.span {
                Some((name, start)) => open.iter().find(|o| o.name == name && o.start == start),
                // Outermost first: the last begun by then is the innermost.
                None => open.iter().rev().find(|o| o.start <= self.time),
            }?;
            Some(SpanRecord {
                start: open.start,
                duration: now.saturating_sub(open.start),
                arg: 0,
                id: open.id,
                parent: 0,
                name: open.name,
                lane: self.lane,
                has_arg: false,
                poll: false,
            })
        })
    }
}

/// The triggers read, in the order they came.
#[derive(Clone, Debug, Default)]
pub struct Triggers {
    list: Vec<Trigger>,
    refused: u64,
}

impl Triggers {
    pub(crate) fn add(&mut self, trigger: Trigger) {
        if self.list.len() < MAX_TRIGGERS {
            self.list.push(trigger);
        } else {
            self.refused += 1;
        }
    }

    /// Every one kept, in the order read.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Trigger> {
        self.list.iter()
    }

    /// The first, where a view opens a capture.
    pub fn first(&self) -> Option<&Trigger> {
        self.list.first()
    }

    /// How many were kept.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether none was read.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Those past [`MAX_TRIGGERS`], counted.
    pub fn refused(&self) -> u64 {
        self.refused
    }
}
