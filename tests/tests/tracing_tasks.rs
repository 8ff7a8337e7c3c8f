//! The `tracing` layer's task spans at their edges: names built from
//! 10 000 distinct paths stay within the call site's cap; a span entered
//! inside itself, one closed on another thread, one never closed and one
//! left by a panic each come back as what they were, and nothing is
//! left waiting. One test per binary: the subscriber is the process's
//! global default and the profiler is one per process.

use std::collections::HashSet;

use typhon_live_tracing::naming::MAX_BUILT_NAMES;

mod layer;

#[test]
fn task_spans_at_their_edges() {
    let (profiler, path) = layer::record("tasks");

    // 10 000 distinct paths through one call site.
    for i in 0..10_000 {
        let uri = format!("/users/{i}");
        let _request = tracing::info_span!("request", method = "GET", uri = %uri).entered();
    }
    // Entered inside itself: two nested runs.
    let nested = tracing::info_span!("nested");
    {
        let _outer = nested.enter();
        let _inner = nested.enter();
    }
    drop(nested);
    // Run here, closed on another thread, never entered there.
    let moved = tracing::info_span!("moved");
    drop(moved.enter());
    std::thread::spawn(move || drop(moved))
        .join()
        .expect("thread");
    // Left by a panic.
    let panicked = std::panic::catch_unwind(|| {
        let _span = tracing::info_span!("panicked").entered();
        panic!("inside a span");
    });
    assert!(panicked.is_err());
    // Never closed: run twice, then forgotten.
    let leaked = tracing::info_span!("leaked");
    drop(leaked.enter());
    drop(leaked.enter());
    std::mem::forget(leaked);
    // Something after, so that nothing above waits unrecorded.
    drop(tracing::info_span!("last").entered());
    profiler.stop().expect("stop");

    let model = layer::read(&path);
    let all = model.span_stats();
    let count = |name: &str| all.iter().find(|s| s.name == name).map_or(0, |s| s.count);

    let requests: Vec<_> = all
        .iter()
        .filter(|s| s.name.starts_with("GET /users/"))
        .collect();
    assert_eq!(requests.len(), MAX_BUILT_NAMES, "names built up to the cap");
    let other = count("request (other)");
    let named: u64 = requests.iter().map(|s| s.count).sum();
    assert_eq!(named + other, 10_000, "every request counted once");
    // The call site's names built from its fields, and its field values
    // carried (`method` and `uri`), each within the cap.
    let texts: HashSet<&str> = (model.names().iter()).map(|(_, text)| text).collect();
    assert!(
        texts.len() < 2 * MAX_BUILT_NAMES + 20,
        "the name table holds {} names",
        texts.len()
    );

    assert_eq!(count("nested"), 2, "two nested runs: {all:?}");
    assert_eq!(count("moved"), 1, "one run, closed elsewhere: {all:?}");
    assert_eq!(count("panicked"), 1, "a span left by a panic: {all:?}");
    assert_eq!(count("leaked"), 0, "never closed: not counted: {all:?}");
    let open: Vec<u32> = model.open_tasks().iter().map(|(_, t)| t.name).collect();
    assert_eq!(open.len(), 1, "the span never closed is open: {open:?}");
    assert_eq!(model.name(open[0]), "leaked");
    assert_eq!(count("last"), 1);
}
