//! The `tracing` layer end to end: spans, nesting, a field recorded later,
//! events, and a span entered on two threads (a task span of two polls)
//! all come back through the decoder with their names. One test per binary: the subscriber is the
//! process's global default and the profiler is one per process.

use std::collections::HashMap;

use typhon_live_core::{Event, LaneId};
use typhon_live_tests::{frames, read_stream, Owned};

mod layer;

/// Every event of the trace, with its name spelled out.
fn named_events(frames: &[Owned]) -> Vec<(LaneId, String, Event)> {
    let mut names = HashMap::new();
    let mut out = Vec::new();
    for frame in frames {
        match frame {
            Owned::Init { names: n, .. } | Owned::Definitions { names: n, .. } => {
                names.extend(n.iter().cloned());
            }
            Owned::Block { events, .. } => {
                for (lane, event) in events {
                    let name = match *event {
                        Event::Span { name, .. }
                        | Event::Instant { name, .. }
                        | Event::Poll { name, .. }
                        | Event::TaskBegin { name, .. }
                        | Event::TaskEnd { name, .. } => name,
                        _ => continue,
                    };
                    let name = names.get(&name).cloned().unwrap_or_default();
                    out.push((*lane, name, *event));
                }
            }
            _ => {}
        }
    }
    out
}

#[test]
fn tracing_spans_and_events_come_back_with_their_names() {
    let (profiler, path) = layer::record("tracing");

    {
        let frame = tracing::info_span!("Frame", entities = 42u64);
        let _frame = frame.enter();
        let physics = tracing::info_span!("Physics");
        let _physics = physics.enter();
        tracing::warn!(count = 7u64, "stall detected");
    }
    let load = tracing::info_span!("Load", bytes = tracing::field::Empty);
    {
        let _load = load.enter();
        load.record("bytes", 4096u64);
    }
    // Closed before this thread runs anything else: an ordinary span.
    drop(load);
    // An async task's span, polled on this thread and then on another,
    // nothing else running in between.
    let task = tracing::info_span!("Task");
    drop(task.enter());
    let moved = task.clone();
    std::thread::spawn(move || drop(moved.enter()))
        .join()
        .expect("thread");
    drop(task);
    for i in 0..2u64 {
        tracing::info!(step = i, "step {}", i);
    }
    profiler.stop().expect("stop");

    let file = std::fs::read(&path).expect("trace file");
    std::fs::remove_file(&path).expect("remove");
    let events = named_events(&frames(read_stream(&file, &[], 16 << 20)));
    let spans = |wanted: &str| -> Vec<(LaneId, Event)> {
        events
            .iter()
            .filter(|(_, name, e)| name == wanted && matches!(e, Event::Span { .. }))
            .map(|(lane, _, e)| (*lane, *e))
            .collect()
    };
    let instants = |wanted: &str| -> Vec<u64> {
        events
            .iter()
            .filter_map(|(_, name, e)| match e {
                Event::Instant { payload, .. } if name == wanted => Some(*payload),
                _ => None,
            })
            .collect()
    };

    let [(
        frame_lane,
        Event::Span {
            id: frame_id,
            arg: frame_arg,
            ..
        },
    )] = spans("Frame")[..]
    else {
        panic!("one Frame span: {events:?}");
    };
    assert_eq!(frame_arg, Some(42));
    let [(
        physics_lane,
        Event::Span {
            parent,
            start,
            duration,
            ..
        },
    )] = spans("Physics")[..]
    else {
        panic!("one Physics span: {events:?}");
    };
    assert_eq!(
        (physics_lane, parent),
        (frame_lane, frame_id),
        "Physics nests in Frame"
    );
    assert!(
        duration
            <= spans("Frame")
                .iter()
                .map(|(_, e)| e.end_time())
                .max()
                .unwrap()
                - start
    );
    assert_eq!(instants("WARN stall detected"), [7]);
    let [(_, Event::Span { arg: load_arg, .. })] = spans("Load")[..] else {
        panic!("one Load span: {events:?}");
    };
    assert_eq!(load_arg, Some(4096), "a field recorded inside the span");
    assert!(spans("Task").is_empty(), "a task span is not a lane span");
    let polls: Vec<(LaneId, u64, u64, u64)> = (events.iter())
        .filter_map(|(lane, name, e)| match *e {
            Event::Poll {
                start,
                duration,
                task,
                ..
            } if name == "Task" => Some((*lane, start, duration, task)),
            _ => None,
        })
        .collect();
    let [(lane_a, start_a, run_a, task_a), (lane_b, _, run_b, task_b)] = polls[..] else {
        panic!("two polls of Task: {events:?}");
    };
    assert_ne!(lane_a, lane_b, "polled on two threads");
    assert_eq!(task_a, task_b, "polls of one task");
    let ends: Vec<(u64, u64, u64, u64)> = (events.iter())
        .filter_map(|(_, name, e)| match *e {
            Event::TaskEnd {
                time,
                task,
                wall,
                busy,
                ..
            } if name == "Task" => Some((time, task, wall, busy)),
            _ => None,
        })
        .collect();
    let [(end, task, wall, busy)] = ends[..] else {
        panic!("one end of Task: {events:?}");
    };
    assert_eq!(task, task_a);
    assert_eq!(busy, run_a + run_b, "busy is the sum of its polls");
    assert!(
        wall >= busy && end - wall <= start_a,
        "from its first poll to its close"
    );
    // Named once per call site, after its first message.
    assert_eq!(instants("INFO step 0"), [0, 1]);
}
