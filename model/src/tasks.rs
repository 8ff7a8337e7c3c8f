//! Task spans (FORMAT.md, "Tasks"): spans that run in polls, on any
//! lanes, between their creation and their close. The model keeps the
//! open ones, bounded, with what their polls ran so far; a task's end
//! carries its wall and busy times, so a task whose begin or polls were
//! lost is still counted whole.
//!
//! [`task_tracks`] lays a window's task spans out in rows, as both
//! viewers draw them: packed like Perfetto's async tracks, each with its
//! polls inside it.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;

use foldhash::{HashMap, HashSet};

use crate::history::{AllocationRecord, Chunk, TaskRecord};
use crate::limits::MAX_OPEN_TASKS;
use crate::{ns, Model};

/// A task span begun and not yet ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenTask {
    /// Its name id (its end may name it otherwise: a name built from
    /// fields recorded later).
    pub name: u32,
    /// Host time it was created, ns.
    pub start: u64,
    /// The task it was created in, 0 for none.
    pub parent: u64,
    /// Its polls seen so far, and their time outside the spans inside
    /// them.
    pub polls: u32,
    /// See `polls`.
    pub self_time: u64,
    /// The bytes its polls allocated themselves, as far as read.
    pub allocated: u64,
}

/// Task ends remembered, so that a begin read after its end (written on
/// another lane, drained after it) does not open the task again.
const ENDS_REMEMBERED: usize = 4096;

/// Open task spans by id, bounded by [`MAX_OPEN_TASKS`].
#[derive(Debug, Default)]
pub struct OpenTasks {
    tasks: HashMap<u64, OpenTask>,
    /// The latest tasks ended, oldest first, and the same as a set.
    ended: VecDeque<u64>,
    ended_set: HashSet<u64>,
}

impl OpenTasks {
    /// Every open task span, by id.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &OpenTask)> {
        self.tasks.iter().map(|(&id, task)| (id, task))
    }

    /// How many are open.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        *self = OpenTasks::default();
    }

    fn ended(&mut self, task: u64) -> Option<OpenTask> {
        if self.ended_set.insert(task) {
            self.ended.push_back(task);
            if self.ended.len() > ENDS_REMEMBERED {
                if let Some(oldest) = self.ended.pop_front() {
                    self.ended_set.remove(&oldest);
                }
            }
        }
        self.tasks.remove(&task)
    }
}

impl Model {
    /// The task spans begun and not yet ended.
    pub fn open_tasks(&self) -> &OpenTasks {
        &self.open_tasks
    }

    pub(crate) fn task_begun(&mut self, task: u64, name: u32, start: u64, parent: u64) {
        if self.open_tasks.ended_set.contains(&task) {
            // Its end, from another lane, was read first.
            return;
        }
        let tasks = &mut self.open_tasks.tasks;
        if tasks.len() >= MAX_OPEN_TASKS && !tasks.contains_key(&task) {
            // Tasks that never closed (their end was lost, or they leak)
            // give way to new ones once older than the history.
            let horizon = self.host_now.saturating_sub(ns(self.history_seconds));
            tasks.retain(|_, open| open.start >= horizon);
            if tasks.len() >= MAX_OPEN_TASKS {
                self.refused.tasks += 1;
                return;
            }
        }
        let open = tasks.entry(task).or_default();
        (open.name, open.start, open.parent) = (name, start, parent);
    }

    /// A poll of `task` ran `self_time` outside the spans inside it.
    pub(crate) fn task_polled(&mut self, task: u64, self_time: u64) {
        if let Some(open) = self.open_tasks.tasks.get_mut(&task) {
            open.polls = open.polls.saturating_add(1);
            open.self_time = open.self_time.saturating_add(self_time);
        }
    }

    /// A poll of `task` allocated `bytes` itself.
    pub(crate) fn task_allocated(&mut self, task: u64, bytes: u64) {
        if let Some(open) = self.open_tasks.tasks.get_mut(&task) {
            open.allocated = open.allocated.saturating_add(bytes);
        }
    }

    pub(crate) fn task_ended(
        &mut self,
        lane: u16,
        task: u64,
        name: u32,
        end: u64,
        wall: u64,
        busy: u64,
    ) {
        let open = self.open_tasks.ended(task);
        // Its polls' self time when they were seen, else its busy time.
        let self_time = open
            .filter(|open| open.polls > 0)
            .map_or(busy, |open| open.self_time.min(busy));
        let start = end.saturating_sub(wall);
        if let Some(bytes) = open.map(|open| open.allocated).filter(|&b| b > 0) {
            self.chunk.push_allocation(AllocationRecord {
                start,
                bytes,
                name,
                lane,
            });
        }
        let record = TaskRecord {
            start,
            wall,
            busy,
            task,
            name,
            lane,
        };
        self.chunk.push_task(record, self_time);
    }
}

/// A task span as the task tracks draw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskBar {
    /// Its id.
    pub task: u64,
    /// Its name id.
    pub name: u32,
    /// Host time it was created, and closed (or now, while open).
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// Still open.
    pub open: bool,
    /// Its polls' time, as its end said (0 while open).
    pub busy: u64,
    /// The row it is packed in, from 0.
    pub row: usize,
}

/// A poll, drawn inside its task's bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollMark {
    /// Its task's row.
    pub row: usize,
    /// Host time it began and ended.
    pub start: u64,
    /// See `start`.
    pub end: u64,
}

/// A window's task spans, packed in rows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskTracks {
    /// The bars, by start.
    pub bars: Vec<TaskBar>,
    /// Their polls seen in the window.
    pub polls: Vec<PollMark>,
    /// Rows used.
    pub rows: usize,
    /// Task spans in the window that found no row (more overlapped than
    /// `max_rows`).
    pub hidden: usize,
}

/// The task spans of `chunks` and `open` that overlap `[start, end)` of
/// host time, packed into at most `max_rows` rows: each in the first row
/// free at its start (open ones reach `now`), oldest first.
pub fn task_tracks(
    chunks: &[Arc<Chunk>],
    open: &[(u64, OpenTask)],
    (start, end): (u64, u64),
    now: u64,
    max_rows: usize,
) -> TaskTracks {
    let visible = |from: u64, to: u64| from < end && to >= start;
    let mut bars: Vec<TaskBar> = Vec::new();
    for chunk in chunks.iter().filter(|c| c.last >= start) {
        for task in &chunk.tasks {
            let to = task.start.saturating_add(task.wall);
            if visible(task.start, to) {
                bars.push(TaskBar {
                    task: task.task,
                    name: task.name,
                    start: task.start,
                    end: to,
                    open: false,
                    busy: task.busy,
                    row: 0,
                });
            }
        }
    }
    for &(task, ref t) in open {
        let to = now.max(t.start);
        if visible(t.start, to) {
            bars.push(TaskBar {
                task,
                name: t.name,
                start: t.start,
                end: to,
                open: true,
                busy: 0,
                row: 0,
            });
        }
    }
    bars.sort_unstable_by_key(|b| (b.start, b.task));
    let mut rows: Vec<u64> = Vec::new();
    let mut hidden = 0;
    let mut placed = Vec::with_capacity(bars.len());
    let mut row_of: HashMap<u64, usize> = HashMap::default();
    for mut bar in bars {
        let row = match rows.iter().position(|&free| free <= bar.start) {
            Some(row) => row,
            None if rows.len() < max_rows => {
                rows.push(0);
                rows.len() - 1
            }
            None => {
                hidden += 1;
                continue;
            }
        };
        rows[row] = bar.end;
        bar.row = row;
        row_of.insert(bar.task, row);
        placed.push(bar);
    }
    let mut polls = Vec::new();
    for chunk in chunks
        .iter()
        .filter(|c| c.last >= start && c.earliest_start < end)
    {
        for span in chunk.spans.iter().filter(|s| s.poll) {
            let to = span.start.saturating_add(span.duration);
            if let (true, Some(&row)) = (visible(span.start, to), row_of.get(&span.arg)) {
                polls.push(PollMark {
                    row,
                    start: span.start,
                    end: to,
                });
            }
        }
    }
    TaskTracks {
        bars: placed,
        polls,
        rows: rows.len(),
        hidden,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::SpanRecord;

    fn task(task: u64, start: u64, wall: u64) -> TaskRecord {
        TaskRecord {
            start,
            wall,
            busy: wall / 2,
            task,
            name: 1,
            lane: 0,
        }
    }

    fn poll(task: u64, start: u64, duration: u64) -> SpanRecord {
        SpanRecord {
            start,
            duration,
            arg: task,
            id: 1,
            parent: 0,
            name: 1,
            lane: 0,
            has_arg: false,
            poll: true,
        }
    }

    #[test]
    fn a_begin_read_after_its_end_does_not_open_the_task_again() {
        let mut model = Model::default();
        model.task_begun(1, 5, 100, 0);
        model.task_ended(0, 2, 5, 300, 150, 50);
        model.task_begun(2, 5, 150, 0);
        let open: Vec<u64> = model.open_tasks().iter().map(|(id, _)| id).collect();
        assert_eq!(open, [1]);
        model.task_ended(1, 1, 5, 400, 300, 20);
        assert!(model.open_tasks().is_empty());
    }

    #[test]
    fn overlapping_tasks_pack_into_rows_with_their_polls() {
        let mut chunk = Chunk::default();
        // 1 and 2 overlap; 3 starts after 1 ends and takes its row.
        for t in [task(1, 0, 100), task(2, 50, 100), task(3, 120, 10)] {
            chunk.push_task(t, 0);
        }
        chunk.push_span(poll(2, 60, 5), 5);
        chunk.push_span(poll(9, 60, 5), 5);
        let open = [(
            4,
            OpenTask {
                name: 2,
                start: 130,
                ..OpenTask::default()
            },
        )];
        let tracks = task_tracks(&[Arc::new(chunk)], &open, (0, 1000), 200, 2);
        let rows: Vec<(u64, usize)> = tracks.bars.iter().map(|b| (b.task, b.row)).collect();
        // 4 overlaps 2 (50..150) and 3 (120..130 ends at 130): row 0.
        assert_eq!(rows, [(1, 0), (2, 1), (3, 0), (4, 0)]);
        assert_eq!(tracks.rows, 2);
        assert_eq!(tracks.hidden, 0);
        assert!(tracks.bars[3].open && tracks.bars[3].end == 200);
        // Task 9's poll has no bar.
        assert_eq!(
            tracks.polls,
            [PollMark {
                row: 1,
                start: 60,
                end: 65
            }]
        );
        // One row: 2 cannot be placed.
        let one = task_tracks(&[], &open, (0, 1000), 200, 1);
        assert_eq!((one.rows, one.hidden), (1, 0));
        let mut chunk = Chunk::default();
        chunk.push_task(task(1, 0, 100), 0);
        chunk.push_task(task(2, 50, 100), 0);
        let one = task_tracks(&[Arc::new(chunk)], &[], (0, 1000), 200, 1);
        assert_eq!((one.rows, one.hidden, one.bars.len()), (1, 1, 1));
        // Outside the window: nothing.
        assert!(task_tracks(&[], &open, (0, 100), 200, 4).bars.is_empty());
    }
}
