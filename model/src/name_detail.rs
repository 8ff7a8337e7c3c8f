//! What both viewers show of the selected span name, over the history
//! they draw from (live, or what a pause pinned): its exact distribution,
//! its longest occurrences and the bytes they allocated, its fields, its
//! share of CPU. One query and one rule for when it is stale, so that the
//! terminal and the browser say the same of the same history.

use std::sync::Arc;
use std::time::Duration;

use typhon_live_reader::{Names, Stacks};

use crate::cpu::{CpuIndex, NameCpu};
use crate::fields::{self, FieldSummary};
use crate::history::{self, Chunk, SpanRecord};
use crate::profile::{Profile, Selection};
use crate::stats::Distribution;

/// Longest occurrences kept.
pub const LONGEST: usize = 10;

/// A name's detail, and what it was computed over.
#[derive(Clone, Debug)]
pub struct NameDetail {
    /// The name.
    pub name: u32,
    /// Its durations over the history.
    pub distribution: Distribution,
    /// Its longest occurrences, longest first: spans (not a task's
    /// polls), and task spans from their creation, on the lane they
    /// closed on.
    pub longest: Vec<SpanRecord>,
    /// The bytes each of `longest` allocated itself, where it did.
    pub longest_allocated: Vec<Option<u64>>,
    /// Its fields: by value, or their numbers.
    pub fields: Vec<FieldSummary>,
    /// Its share of CPU, where samples cover its spans.
    pub cpu: Option<NameCpu>,
    /// The stacks sampled in its spans, folded: which code ran.
    pub profile: Profile,
    /// The history it was computed over, and when.
    over: Over,
    at: Duration,
}

/// Which history: the same chunks again have the same count, the same
/// first time and the same last time and records (a chunk being filled
/// grows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Over {
    chunks: usize,
    first: u64,
    last: (u64, usize),
}

impl Over {
    fn of(chunks: &[Arc<Chunk>]) -> Over {
        Over {
            chunks: chunks.len(),
            first: chunks.first().map_or(0, |c| c.first),
            last: chunks.last().map_or((0, 0), |c| (c.last, c.records())),
        }
    }
}

impl NameDetail {
    /// How often a live view computes it again while the history moves
    /// under it: computing reads every record held.
    pub const REFRESH: Duration = Duration::from_secs(1);

    /// `name`'s detail over `chunks` at `now` (the viewer's clock),
    /// listing at most `field_values` values of a string field, its
    /// samples' stacks read from `stacks`.
    pub fn of(
        name: u32,
        chunks: &[Arc<Chunk>],
        names: &Names,
        stacks: &Stacks,
        field_values: usize,
        now: Duration,
    ) -> NameDetail {
        let held = || chunks.iter().map(|c| &**c);
        let longest = longest(chunks, name);
        NameDetail {
            name,
            distribution: history::distribution(held(), name),
            longest_allocated: longest.iter().map(|s| allocated_by(chunks, s)).collect(),
            longest,
            fields: fields::summaries(held(), name, names, field_values),
            cpu: CpuIndex::of(held()).of_name(held().flat_map(|c| c.spans.iter()), name),
            profile: Profile::of(held(), stacks, Selection::Name(name)),
            over: Over::of(chunks),
            at: now,
        }
    }

    /// Whether it still stands for `name` over `chunks` at `now`: it was
    /// computed over these chunks as they are, or, `live`, less than
    /// [`NameDetail::REFRESH`] ago.
    pub fn stands(&self, name: u32, chunks: &[Arc<Chunk>], live: bool, now: Duration) -> bool {
        let recent = live && now.saturating_sub(self.at) < Self::REFRESH;
        self.name == name && (self.over == Over::of(chunks) || recent)
    }
}

/// `name`'s [`LONGEST`] longest occurrences, longest first.
fn longest(chunks: &[Arc<Chunk>], name: u32) -> Vec<SpanRecord> {
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
    let mut longest: Vec<SpanRecord> = Vec::with_capacity(LONGEST + 1);
    for span in spans.chain(tasks) {
        if longest.len() < LONGEST || longest.last().is_some_and(|l| span.duration > l.duration) {
            let at = longest.partition_point(|l| l.duration >= span.duration);
            longest.insert(at, span);
            longest.truncate(LONGEST);
        }
    }
    longest
}

/// The bytes `span` allocated itself, read in the chunk where it ended.
fn allocated_by(chunks: &[Arc<Chunk>], span: &SpanRecord) -> Option<u64> {
    let end = span.start.saturating_add(span.duration);
    let mut held = chunks.iter().filter(|c| c.first <= end && end <= c.last);
    held.find_map(|c| c.allocated_by(span.lane, span.name, span.start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{AllocationRecord, TaskRecord};

    const FIELD_VALUES: usize = 8;

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
        let s = NameDetail::of(
            2,
            &chunks,
            &Names::new(),
            &Stacks::default(),
            FIELD_VALUES,
            Duration::ZERO,
        );
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
    }

    #[test]
    fn it_stands_for_the_same_chunks_and_briefly_while_live() {
        let chunk = |last: u64| {
            let mut chunk = Chunk::default();
            chunk.push_tick(crate::history::TickRecord {
                start: last - 1,
                end: last,
                tick: last,
                overrun: false,
            });
            Arc::new(chunk)
        };
        let (a, b) = (chunk(10), chunk(20));
        let second = Duration::from_secs(1);
        let detail = NameDetail::of(
            7,
            &[a.clone(), b.clone()],
            &Names::new(),
            &Stacks::default(),
            3,
            second,
        );
        let same = [a.clone(), b.clone()];
        let moved_on = [b.clone(), chunk(30)];
        assert!(
            detail.stands(7, &same, false, 9 * second),
            "the same chunks"
        );
        assert!(!detail.stands(8, &same, false, second), "another name");
        assert!(
            !detail.stands(7, &moved_on, false, second),
            "paused elsewhere"
        );
        assert!(detail.stands(7, &moved_on, true, second + second / 2));
        assert!(
            !detail.stands(7, &moved_on, true, 2 * second),
            "live, stale"
        );
        assert!(!detail.stands(7, &same[..1], false, second), "fewer");
    }

    #[test]
    fn a_task_name_lists_its_task_spans_not_its_polls() {
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
        let chunks = [Arc::new(chunk)];
        let s = NameDetail::of(
            3,
            &chunks,
            &Names::new(),
            &Stacks::default(),
            FIELD_VALUES,
            Duration::ZERO,
        );
        assert_eq!(s.distribution.count, 2);
        assert_eq!((s.distribution.total, s.distribution.busy), (6_900, 200));
        let longest: Vec<(u64, u64)> = s.longest.iter().map(|l| (l.arg, l.duration)).collect();
        assert_eq!(longest, [(1, 6_000), (2, 900)]);
    }
}
