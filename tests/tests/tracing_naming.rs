//! Spans named by a rule the user sets (`TyphonLayer::named_by`): the
//! first template whose fields a span recorded names it, whatever the
//! conventions would have said; a call site with none of the rule's
//! fields keeps its name. One test per binary: the subscriber is the
//! process's global default and the profiler is one per process.

use typhon_live_tracing::naming::NamingRule;
use typhon_live_tracing::TyphonLayer;

mod layer;

#[test]
fn a_users_rule_names_the_spans() {
    let rule = NamingRule::new(["{job} #{attempt}", "{job}"]).expect("a rule");
    let (profiler, path) = layer::record_with("naming", TyphonLayer::named_by(rule));

    for attempt in 1..=3 {
        let _run = tracing::info_span!("run", job = "resize", attempt).entered();
    }
    drop(tracing::info_span!("run", job = "thumbnail", attempt = tracing::field::Empty).entered());
    // The conventions are not this rule: a route names nothing here.
    drop(tracing::info_span!("request", http.route = "/a").entered());

    profiler.stop().expect("stop");
    let model = layer::read(&path);
    let mut names: Vec<(String, u64)> = (model.span_stats().into_iter())
        .map(|s| (s.name, s.count))
        .collect();
    names.sort();
    let want = [
        ("request", 1),
        ("resize #1", 1),
        ("resize #2", 1),
        ("resize #3", 1),
        ("thumbnail", 1),
    ]
    .map(|(n, c)| (n.to_owned(), c));
    assert_eq!(names, want);
}
