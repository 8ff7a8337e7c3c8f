//! Spans' fields through the `tracing` layer, read back as a viewer
//! reads them: a span's numbers give a distribution, its strings group
//! its statistics; a field recorded after its span began (an ordinary
//! span's, a task span's) is carried; and the bounds hold: 10 000
//! distinct strings from one call site stay within its cap, a huge
//! string is cut and says so, a span's ninth field is not carried. One
//! test per binary: the subscriber is the process's global default and
//! the profiler is one per process.

use typhon_live_core::FieldValue;
use typhon_live_model::{Model, SpanStats};
use typhon_live_tracing::fields::{MAX_FIELDS, MAX_VALUE_BYTES};
use typhon_live_tracing::naming::MAX_BUILT_NAMES;

mod layer;

fn stats<'a>(all: &'a [SpanStats], name: &str) -> &'a SpanStats {
    all.iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no statistics for {name}"))
}

/// The key of `span`'s field named `key`.
fn key(model: &Model, span: &SpanStats, key: &str) -> u32 {
    (model.field_keys(span.id).into_iter())
        .map(|(id, _)| id)
        .find(|&id| model.name(id) == key)
        .unwrap_or_else(|| panic!("{} has no field {key}", span.name))
}

#[test]
fn fields_are_carried_grouped_and_bounded() {
    let (profiler, path) = layer::record("fields");

    for rows in 1..=1000i64 {
        let table = if rows % 2 == 0 { "users" } else { "orders" };
        let _lookup = tracing::info_span!("lookup", rows, table).entered();
    }
    for i in 0..10_000 {
        let _user = tracing::info_span!("user", id = %format!("u{i}")).entered();
    }
    let huge = "x".repeat(100_000);
    drop(tracing::info_span!("huge", text = huge.as_str()).entered());
    drop(
        tracing::info_span!(
            "wide",
            a = 1,
            b = 2,
            c = 3,
            d = 4,
            e = 5,
            f = 6,
            g = 7,
            h = 8,
            i = 9,
            j = 10
        )
        .entered(),
    );
    // Ordinary spans whose field is recorded while entered, and after
    // their exit, before their close.
    let late = tracing::info_span!("late", status = tracing::field::Empty).entered();
    late.record("status", 7);
    drop(late);
    let later = tracing::info_span!("later", status = tracing::field::Empty);
    drop(later.enter());
    later.record("status", 9);
    drop(later);
    // A task span (entered twice) whose status is recorded last.
    let job = tracing::info_span!("job", status = tracing::field::Empty, ok = true);
    job.in_scope(|| {});
    job.in_scope(|| {});
    job.record("status", 503u64);
    drop(job);

    profiler.stop().expect("stop");
    let mut model = layer::read(&path);
    let all = model.span_stats();

    let lookup = stats(&all, "lookup");
    let rows = model.field_numbers(lookup.id, key(&model, lookup, "rows"));
    assert_eq!((rows.count, rows.min, rows.max), (1000, 1, 1000));
    assert_eq!((rows.p50, rows.p99), (500, 990));
    let tables: Vec<(String, u64)> = (model.field_groups(lookup.id, key(&model, lookup, "table")))
        .into_iter()
        .map(|g| (g.value, g.durations.count))
        .collect();
    assert_eq!(
        tables,
        [("orders".to_owned(), 500), ("users".to_owned(), 500)]
    );

    let user = stats(&all, "user");
    let ids = model.field_groups(user.id, key(&model, user, "id"));
    assert_eq!(ids.len(), MAX_BUILT_NAMES + 1, "the cap, then (other)");
    assert_eq!(ids.iter().map(|g| g.durations.count).sum::<u64>(), 10_000);
    let other = ids.iter().find(|g| g.value == "(other)").expect("(other)");
    assert_eq!(other.durations.count, 10_000 - MAX_BUILT_NAMES as u64);

    let cut = model.field_groups(
        stats(&all, "huge").id,
        key(&model, stats(&all, "huge"), "text"),
    );
    assert_eq!(cut.len(), 1);
    assert!(
        cut[0].value.len() <= MAX_VALUE_BYTES,
        "{}",
        cut[0].value.len()
    );
    assert!(cut[0].value.ends_with('…'), "the cut is said");

    let wide = stats(&all, "wide");
    let keys: Vec<String> = (model.field_keys(wide.id).into_iter())
        .map(|(id, numeric)| {
            assert!(numeric);
            model.name(id)
        })
        .collect();
    assert_eq!(keys, ["a", "b", "c", "d", "e", "f", "g", "h"]);
    assert_eq!(keys.len(), MAX_FIELDS);

    let job = stats(&all, "job");
    assert_eq!(job.count, 1);
    let fields: Vec<(String, FieldValue)> = ["status", "ok"]
        .iter()
        .map(|k| {
            let numbers = model.field_numbers(job.id, key(&model, job, k));
            (k.to_string(), FieldValue::Int(numbers.max as i64))
        })
        .collect();
    assert_eq!(
        fields,
        [
            ("status".to_owned(), FieldValue::Int(503)),
            ("ok".to_owned(), FieldValue::Int(1))
        ]
    );
    for (name, status) in [("late", 7), ("later", 9)] {
        let span = stats(&all, name);
        let values = model.field_numbers(span.id, key(&model, span, "status"));
        assert_eq!((values.count, values.max), (1, status), "{name}");
    }
    let refused = model.summary(std::time::Duration::ZERO).refused;
    assert_eq!(refused.fields, 0, "every field's owner came before it");
}
