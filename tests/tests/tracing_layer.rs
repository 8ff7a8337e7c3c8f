//! The `tracing` layer end to end: spans, nesting, a field recorded later,
//! events, and a span entered on two threads all come back through the
//! decoder with their names. One test per binary: the subscriber is the
//! process's global default and the profiler is one per process.

use std::collections::HashMap;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use typhon_live_core::{Event, LaneId, Metadata};
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::Profiler;
use typhon_live_tests::{frames, read_stream, Owned};
use typhon_live_tracing::TyphonLayer;

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
                        Event::Span { name, .. } | Event::Instant { name, .. } => name,
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
    let path = std::env::temp_dir().join(format!("typhon-live-tracing-{}.tlt", std::process::id()));
    let config = ProfilerConfig {
        trace: Some(path.clone()),
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
    tracing_subscriber::registry()
        .with(TyphonLayer::new())
        .init();

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
    // An async task's span, polled on this thread and then on another.
    let task = tracing::info_span!("Task");
    drop(task.enter());
    let moved = task.clone();
    std::thread::spawn(move || drop(moved.enter()))
        .join()
        .expect("thread");
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
    let task_lanes: Vec<LaneId> = spans("Task").iter().map(|(lane, _)| *lane).collect();
    assert_eq!(task_lanes.len(), 2, "one lane span per entry");
    assert_ne!(task_lanes[0], task_lanes[1], "entered on two threads");
    // Named once per call site, after its first message.
    assert_eq!(instants("INFO step 0"), [0, 1]);
}
