//! The Chrome Trace Event JSON of a stream whose span carries fields:
//! they are its `args`.

use typhon_live_convert::chrome::chrome_trace;

#[test]
fn a_span_s_fields_are_its_args() {
    let converted = chrome_trace(&typhon_live_tests::fields_stream());
    assert!(converted.damage.is_empty(), "{:?}", converted.damage);
    let events = converted.output["traceEvents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let query: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "query")
        .collect();
    assert_eq!(query.len(), 1, "{events:?}");
    assert_eq!(query[0]["args"]["route"], "a", "{}", query[0]);
    assert_eq!(query[0]["args"]["rows"], 42, "{}", query[0]);
    // 250 ticks of a 1 MHz clock.
    assert_eq!(query[0]["dur"], 250.0, "{}", query[0]);
}
