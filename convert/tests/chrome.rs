//! The Chrome Trace Event JSON of streams with a span's fields and its
//! allocated bytes (its `args`) and with log lines (instants of category
//! `log`).

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
fn a_spans_allocated_bytes_are_an_arg() {
    let converted = chrome_trace(&typhon_live_tests::allocated_stream());
    assert!(converted.damage.is_empty(), "{:?}", converted.damage);
    let events = converted.output["traceEvents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let loads: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "Load")
        .collect();
    assert_eq!(loads.len(), 10, "{events:?}");
    for load in loads {
        assert_eq!(load["args"]["allocated_bytes"], 256 << 10, "{load}");
    }
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

#[test]
fn each_lanes_cpu_is_a_counter_and_its_switches_slices() {
    let converted = chrome_trace(&typhon_live_tests::samples_stream());
    assert!(converted.damage.is_empty(), "{:?}", converted.damage);
    let events = converted.output["traceEvents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // 400 µs between the samples: main ran 300 and waited 37.5.
    let cpu: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "main: CPU")
        .collect();
    assert_eq!(cpu.len(), 1, "{events:?}");
    assert_eq!(cpu[0]["ts"], 1_500.0, "{}", cpu[0]);
    assert_eq!(cpu[0]["args"]["on CPU"], 0.75, "{}", cpu[0]);
    assert_eq!(cpu[0]["args"]["waiting"], 0.09375, "{}", cpu[0]);
    // The worker's thread waited off the CPU from 1 200 to 1 450 µs.
    let off: Vec<_> = events.iter().filter(|e| e["cat"] == "cpu").collect();
    assert_eq!(off.len(), 1, "{events:?}");
    assert_eq!(
        (
            &off[0]["name"],
            &off[0]["ts"],
            &off[0]["dur"],
            &off[0]["tid"]
        ),
        (
            &"off-CPU (waiting)".into(),
            &1_200.0.into(),
            &250.0.into(),
            &1.into()
        )
    );
}
