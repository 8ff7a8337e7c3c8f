//! Events' text through the `tracing` layer, read back as a viewer reads
//! it: each event's message and fields, in order, on its thread's lane,
//! with its level; a huge message cut to the bound and said so; a field
//! whose Debug logs an event of its own; and the one search both viewers
//! run. One test per binary: the subscriber is the process's global
//! default and the profiler is one per process.

use std::fmt;

use typhon_live_core::{Level, MAX_TEXT_BYTES};
use typhon_live_model::{LogQuery, LogSearch};

mod layer;

/// A value whose Debug logs an event: the layer formats it while it
/// formats the outer event's text.
struct Chatty;

impl fmt::Debug for Chatty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        tracing::debug!("formatting chatty");
        f.write_str("chatty")
    }
}

#[test]
fn events_keep_their_text() {
    let (profiler, path) = layer::record("texts");

    for id in 0..100u64 {
        let route = if id % 2 == 0 { "/a" } else { "/b" };
        tracing::info!(id, route, "order placed");
    }
    tracing::warn!(disk = "sda", free_mb = 12.5, "disk {} almost full", "sda");
    let huge = "x".repeat(10 * MAX_TEXT_BYTES);
    tracing::error!(body = huge.as_str(), "huge");
    tracing::info!(value = ?Chatty, "outer");
    std::thread::Builder::new()
        .name("side".into())
        .spawn(|| tracing::info!("from a thread that ends"))
        .unwrap()
        .join()
        .unwrap();

    profiler.stop().expect("stop");
    let model = layer::read(&path);
    let logs = model.logs();
    let lines: Vec<_> = logs.lines().iter().collect();
    assert_eq!(lines.len(), 105, "every event's text, none lost");
    assert_eq!((logs.lost, logs.evicted), (0, 0));
    for (id, line) in lines[..100].iter().enumerate() {
        let route = if id % 2 == 0 { "/a" } else { "/b" };
        assert_eq!(&*line.text, format!("order placed id={id} route={route}"));
        assert_eq!(line.level, Level::Info);
        assert_eq!(model.name(line.site), "INFO order placed");
    }
    // In the order they happened, but for the event logged inside
    // another's formatting (below).
    assert!(lines[..102].windows(2).all(|w| w[0].time <= w[1].time));
    let here = lines[0].lane.expect("a lane");
    assert_eq!(
        model.lane_name(here).as_deref(),
        std::thread::current().name()
    );

    let disk = lines[100];
    assert_eq!(&*disk.text, "disk sda almost full disk=sda free_mb=12.5");
    assert_eq!(disk.level, Level::Warn);

    let cut = lines[101];
    assert!(cut.cut, "the cut is said");
    assert_eq!(cut.text.len(), MAX_TEXT_BYTES);
    assert!(cut.text.starts_with("huge body=xxx"));

    // The inner event is recorded while the outer one is formatted:
    // first, though the outer one happened before it.
    assert_eq!(&*lines[102].text, "formatting chatty");
    assert_eq!(lines[102].level, Level::Debug);
    assert_eq!(&*lines[103].text, "outer value=chatty");
    assert!(lines[103].time <= lines[102].time);
    assert!(lines[101].time <= lines[103].time && lines[102].time <= lines[104].time);
    let side = lines[104]
        .lane
        .expect("its lane, not given to another thread");
    assert_eq!(model.lane_name(side).as_deref(), Some("side"));

    let mut search = LogSearch::default();
    search.set_query(LogQuery {
        text: "ROUTE=/B".into(),
        min_level: None,
    });
    search.update(logs, model.names());
    assert_eq!(search.matched().len(), 50);
    search.set_query(LogQuery {
        text: String::new(),
        min_level: Some(Level::Warn),
    });
    search.update(logs, model.names());
    assert_eq!(search.matched(), &[100, 101]);
}
