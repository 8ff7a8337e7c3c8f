//! The selected span name's statistics over the history the view holds:
//! its exact distribution (count, percentiles, maximum, histogram), its
//! share of CPU, the bytes its spans allocated, its fields (by value, or as numbers) and its longest occurrences, to jump
//! to. Computed when the selection or
//! the history changes, not every frame.

use std::sync::Arc;

use typhon_live_model::history::{self, Chunk, SpanRecord};
use typhon_live_model::stats::Distribution;
use typhon_live_model::{fields, CpuIndex, FieldSummary, NameCpu};
use typhon_live_reader::Names;

/// Longest occurrences listed.
pub const LONGEST: usize = 10;
/// A string field's values listed, most frequent first.
pub const FIELD_VALUES: usize = 8;

/// A name's statistics, and what they were computed over.
#[derive(Clone, Debug)]
pub struct Selection {
    /// The name.
    pub name: u32,
    /// Its durations over the history.
    pub distribution: Distribution,
    /// Its longest spans, longest first.
    pub longest: Vec<SpanRecord>,
    /// The bytes each of `longest` allocated itself, where it did.
    pub longest_allocated: Vec<Option<u64>>,
    /// Its fields.
    pub fields: Vec<FieldSummary>,
    /// Its share of CPU, where samples cover its spans.
    pub cpu: Option<NameCpu>,
    /// The history it was computed over: its chunk count and last time.
    over: (usize, u64),
}

impl Selection {
    /// `name`'s statistics over `chunks`, its fields' strings read in
    /// `names`.
    pub fn of(name: u32, chunks: &[Arc<Chunk>], names: &Names) -> Selection {
        let distribution = history::distribution(chunks.iter().map(|c| &**c), name);
        let mut longest: Vec<SpanRecord> = Vec::with_capacity(LONGEST + 1);
        // A task span is listed from its creation, on the lane it closed
        // on; a poll is not an occurrence of its name.
        let tasks = chunks.iter().flat_map(|c| c.tasks.iter());
        let tasks = tasks.filter(|t| t.name == name).map(|t| SpanRecord {
            start: t.start,
            duration: t.wall,
            arg: t.task,
            id: 0,
            parent: 0,
            name,
            lane: t.lane,
            has_arg: false,
            poll: false,
        });
        let spans = chunks.iter().flat_map(|c| c.spans.iter());
        let spans = spans.filter(|s| s.name == name && !s.poll).copied();
        for span in spans.chain(tasks) {
            if longest.len() < LONGEST || longest.last().is_some_and(|l| span.duration > l.duration)
            {
                let at = longest.partition_point(|l| l.duration >= span.duration);
                longest.insert(at, span);
                longest.truncate(LONGEST);
            }
        }
        let longest_allocated = longest.iter().map(|s| allocated_by(chunks, s)).collect();
        Selection {
            name,
            distribution,
            longest,
            longest_allocated,
            fields: fields::summaries(chunks.iter().map(|c| &**c), name, names, FIELD_VALUES),
            cpu: CpuIndex::of(chunks.iter().map(|c| &**c))
                .of_name(chunks.iter().flat_map(|c| c.spans.iter()), name),
            over: over(chunks),
        }
    }

    /// Whether it was computed for `name` over `chunks` as they are.
    pub fn is_for(&self, name: u32, chunks: &[Arc<Chunk>]) -> bool {
        self.name == name && self.over == over(chunks)
    }
}

/// The bytes `span` allocated itself, read in the chunk where it ended.
fn allocated_by(chunks: &[Arc<Chunk>], span: &SpanRecord) -> Option<u64> {
    let end = span.start.saturating_add(span.duration);
    let mut held = chunks.iter().filter(|c| c.first <= end && end <= c.last);
    held.find_map(|c| c.allocated_by(span.lane, span.name, span.start))
}

fn over(chunks: &[Arc<Chunk>]) -> (usize, u64) {
    (chunks.len(), chunks.last().map_or(0, |c| c.last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_live_model::history::{AllocationRecord, SpanRecord};

    #[test]
    fn the_longest_are_kept_longest_first_and_the_percentiles_exact() {
        let mut chunks = Vec::new();
        for c in 0..3u64 {
            let mut chunk = Chunk::default();
            for i in 0..100u64 {
                let d = c * 100 + i + 1;
                let span = SpanRecord {
                    start: d * 1_000,
                    duration: d,
                    arg: 0,
                    id: d as u32,
                    parent: 0,
                    name: if i % 2 == 0 { 1 } else { 2 },
                    lane: 0,
                    has_arg: false,
                    poll: false,
                };
                chunk.push_span(span, d);
                if d == 300 {
                    chunk.push_allocation(AllocationRecord {
                        start: span.start,
                        bytes: 4096,
                        name: span.name,
                        lane: 0,
                    });
                }
            }
            chunks.push(Arc::new(chunk));
        }
        let s = Selection::of(2, &chunks, &Names::new());
        // Name 2: the even durations 2..=300.
        assert_eq!(s.distribution.count, 150);
        assert_eq!((s.distribution.p50, s.distribution.max), (150, 300));
        let longest: Vec<u64> = s.longest.iter().map(|l| l.duration).collect();
        assert_eq!(longest, [300, 298, 296, 294, 292, 290, 288, 286, 284, 282]);
        // The longest allocated, the others did not.
        assert_eq!(s.distribution.allocated, 4096);
        assert_eq!(s.longest_allocated[0], Some(4096));
        assert!(s.longest_allocated[1..].iter().all(Option::is_none));
        assert_eq!(s.longest_allocated.len(), s.longest.len());
        assert!(s.is_for(2, &chunks));
        assert!(!s.is_for(1, &chunks));
        assert!(!s.is_for(2, &chunks[..2]));
    }

    #[test]
    fn a_task_name_lists_its_task_spans_not_its_polls() {
        use typhon_live_model::history::TaskRecord;
        let mut chunk = Chunk::default();
        let poll = SpanRecord {
            start: 10,
            duration: 5_000,
            arg: 1,
            id: 1,
            parent: 0,
            name: 3,
            lane: 0,
            has_arg: false,
            poll: true,
        };
        chunk.push_span(poll, 5_000);
        for (task, wall) in [(1, 6_000), (2, 900)] {
            let record = TaskRecord {
                start: 0,
                wall,
                busy: 100,
                task,
                name: 3,
                lane: 1,
            };
            chunk.push_task(record, 100);
        }
        let s = Selection::of(3, &[Arc::new(chunk)], &Names::new());
        assert_eq!(s.distribution.count, 2);
        assert_eq!((s.distribution.total, s.distribution.busy), (6_900, 200));
        let longest: Vec<(u64, u64)> = s.longest.iter().map(|l| (l.arg, l.duration)).collect();
        assert_eq!(longest, [(1, 6_000), (2, 900)]);
    }
}
