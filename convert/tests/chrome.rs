//! The Chrome Trace Event JSON of streams with a span's fields (its
//! `args`) and with log lines (instants of category `log`).

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

#[test]
fn log_lines_are_instants_with_their_text() {
    let converted = chrome_trace(&typhon_live_tests::text_stream());
    assert!(converted.damage.is_empty(), "{:?}", converted.damage);
    let events = converted.output["traceEvents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let logs: Vec<_> = events.iter().filter(|e| e["cat"] == "log").collect();
    assert_eq!(logs.len(), 2, "{events:?}");
    let (warn, bye) = (logs[0], logs[1]);
    assert_eq!(
        (&warn["name"], &warn["s"], &warn["tid"], &warn["ts"]),
        (
            &"WARN disk full".into(),
            &"t".into(),
            &0.into(),
            &1000.0.into()
        ),
        "{warn}"
    );
    assert_eq!(warn["args"]["message"], "disk full dev=sda", "{warn}");
    assert_eq!(warn["args"]["level"], "WARN", "{warn}");
    // No lane: on the process.
    assert_eq!(
        (&bye["s"], &bye["tid"]),
        (&"p".into(), &serde_json::Value::Null),
        "{bye}"
    );
}
