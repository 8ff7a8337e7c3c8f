//! Task spans (FORMAT.md, "Tasks"): spans that run in polls, on any
//! threads, between their creation and their close, such as a request
//! in an `async` service. A task gets an id ([`new_task`]); its begin,
//! its polls ([`Ended::record_poll`](crate::runtime::Ended::record_poll))
//! and its end are recorded on whichever thread they happen, and its end
//! carries its wall and busy times whole.

use std::sync::atomic::{AtomicU64, Ordering};

use typhon_live_core::{Event, FieldOwner, FieldValue, NameId, TaskId};

use crate::runtime::{is_enabled, now, record, record_fields};

/// The last task id handed out.
static LAST_TASK: AtomicU64 = AtomicU64::new(0);

/// A task id no other task span of this process has.
#[inline]
pub fn new_task() -> TaskId {
    LAST_TASK.fetch_add(1, Ordering::Relaxed) + 1
}

/// Records on this thread that task `task`, named `name`, was created at
/// `created` (the profiler's clock, [`now`]) inside task `parent` (0 for
/// none).
#[inline]
pub fn begin(task: TaskId, name: NameId, created: u64, parent: TaskId) {
    if is_enabled() {
        let event = Event::TaskBegin {
            time: created,
            name,
            task,
            parent,
        };
        record(|lane| lane.record(&event));
    }
}

/// Records on this thread that task `task`, named `name`, created at
/// `created`, closed now, having run `busy` ns in its polls.
#[inline]
pub fn end(task: TaskId, name: NameId, created: u64, busy: u64) {
    end_with(task, name, created, busy, &[]);
}

/// [`end`], with the task span's fields (key and value; FORMAT.md,
/// "Fields") recorded right after its end.
#[inline]
pub fn end_with(
    task: TaskId,
    name: NameId,
    created: u64,
    busy: u64,
    fields: &[(NameId, FieldValue)],
) {
    if is_enabled() {
        let time = now();
        let event = Event::TaskEnd {
            time,
            name,
            task,
            wall: time.saturating_sub(created),
            busy,
        };
        record(|lane| {
            lane.record(&event) && record_fields(lane, FieldOwner::Task(task), created, fields)
        });
    }
}
