//! The relay's OTLP exports against a collector of the tests'
//! (`typhon_live_tests::collector`): plain and over TLS with a CA made in
//! the test, gzip bodies, headers, a 503's `Retry-After`, a collector that
//! is down, and the OpenTelemetry environment. Every body is decoded with
//! `opentelemetry-proto`'s types. Everything on 127.0.0.1; waits are
//! bounded.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsPartialSuccess, ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use typhon_live_tests::collector::{Answer, Collector, Request};
use typhon_live_tests::tls::Authority;

mod common;

use common::{free_port, relay_ends, relay_value, spawn_demo, temp, typhon, Killed};

/// What a collector got, decoded.
#[derive(Default)]
struct Decoded {
    metrics: Vec<ExportMetricsServiceRequest>,
    traces: Vec<ExportTraceServiceRequest>,
}

impl Decoded {
    fn of(requests: &[Request]) -> Decoded {
        let (metrics, traces) = decoded(requests);
        Decoded { metrics, traces }
    }
}

/// The bodies of the requests to /v1/metrics and /v1/traces, decoded;
/// anything else the relay sent fails the test.
fn decoded(
    requests: &[Request],
) -> (
    Vec<ExportMetricsServiceRequest>,
    Vec<ExportTraceServiceRequest>,
) {
    let (mut metrics, mut traces) = (Vec::new(), Vec::new());
    for request in requests {
        match request.path.as_str() {
            "/v1/metrics" => {
                metrics.push(Message::decode(&request.body[..]).expect("metrics protobuf"))
            }
            "/v1/traces" => {
                traces.push(Message::decode(&request.body[..]).expect("traces protobuf"))
            }
            other => panic!("a request to {other}"),
        }
    }
    (metrics, traces)
}

fn attribute(
    attributes: &[opentelemetry_proto::tonic::common::v1::KeyValue],
    key: &str,
) -> Option<String> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            Value::StringValue(s) => Some(s.clone()),
            Value::IntValue(i) => Some(i.to_string()),
            Value::BoolValue(b) => Some(b.to_string()),
            _ => None,
        }
    })
}

#[test]
fn otlp_gets_the_metrics_and_the_stalls_span_tree() {
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    let collector = Collector::start(None);
    let port = collector.port;
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    // The demo stalls its AI system for 1.2 s every 10 s.
    let (demo, addr) = spawn_demo("40", "2");
    let _demo = Killed(demo);
    let _relay = Killed(
        typhon()
            .args(["relay", "--source", &format!("alpha={addr}")])
            .args(["--otlp", &format!("http://127.0.0.1:{port}")])
            .args([
                "--slow-tick",
                "500",
                "--otlp-interval",
                "1",
                "--duration",
                "40",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Overrunning ticks of a loaded machine may come first: the stall is
    // the one over a second.
    let stalled =
        |r: &opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest| {
            r.resource_spans[0].scope_spans[0].spans.iter().any(|s| {
                s.parent_span_id.is_empty()
                    && s.end_time_unix_nano - s.start_time_unix_nano > 1_000_000_000
            })
        };
    let got = collector.wait_for(Duration::from_secs(30), |got| {
        let (metrics, traces) = decoded(got);
        traces.iter().any(stalled) && metrics.len() >= 2
    });
    let got = Decoded::of(&got);

    // Metrics: the source as the resource, names and units.
    let last = got.metrics.last().unwrap();
    assert_eq!(last.resource_metrics.len(), 1);
    let resource = last.resource_metrics[0].resource.as_ref().unwrap();
    assert_eq!(
        attribute(&resource.attributes, "typhon.source").as_deref(),
        Some("alpha")
    );
    let session = attribute(&resource.attributes, "typhon.session_id").expect("session id");
    assert_eq!(session.len(), 16, "{session}");
    let metrics = &last.resource_metrics[0].scope_metrics[0].metrics;
    let find = |name: &str| {
        metrics
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no {name} in {metrics:?}"))
    };
    for (name, unit) in [
        ("typhon.span.duration", "s"),
        ("typhon.tick.duration", "s"),
        ("typhon.tick.overruns", "{tick}"),
        ("typhon.reading", "1"),
        ("typhon.events.dropped", "{event}"),
        ("typhon.log.lines", "{line}"),
        ("typhon.log.lines_lost", "{line}"),
    ] {
        assert_eq!(find(name).unit, unit, "{name}");
    }
    let Some(Data::Histogram(spans)) = &find("typhon.span.duration").data else {
        panic!("span durations are not a histogram");
    };
    let tick = spans
        .data_points
        .iter()
        .find(|p| attribute(&p.attributes, "span").as_deref() == Some("Tick"))
        .expect("the Tick span's durations");
    assert!(tick.count > 10);
    assert_eq!(tick.bucket_counts.len(), tick.explicit_bounds.len() + 1);
    assert_eq!(tick.bucket_counts.iter().sum::<u64>(), tick.count);
    let Some(Data::Gauge(gauges)) = &find("typhon.reading").data else {
        panic!("gauges are not a gauge");
    };
    assert!(gauges
        .data_points
        .iter()
        .any(|p| attribute(&p.attributes, "gauge").as_deref() == Some("memory.bytes")));

    // The stall: a tick over a second, its spans under it.
    let trace = &got
        .traces
        .iter()
        .find(|r| stalled(r))
        .unwrap()
        .resource_spans[0];
    let resource = trace.resource.as_ref().unwrap();
    assert_eq!(
        attribute(&resource.attributes, "typhon.session_id"),
        Some(session)
    );
    let spans = &trace.scope_spans[0].spans;
    let root = spans
        .iter()
        .find(|s| s.parent_span_id.is_empty())
        .expect("a root span");
    assert!(root.name.contains("tick"), "{}", root.name);
    assert!(root.end_time_unix_nano - root.start_time_unix_nano > 1_000_000_000);
    assert!(
        root.start_time_unix_nano > started && root.start_time_unix_nano < started + 60_000_000_000,
        "the tick's start is not a time of this test's"
    );
    for span in spans {
        assert_eq!(span.trace_id, root.trace_id);
        assert_eq!(span.trace_id.len(), 16);
        assert_eq!(span.span_id.len(), 8);
        if span.parent_span_id.is_empty() {
            continue;
        }
        let parent = spans
            .iter()
            .find(|p| p.span_id == span.parent_span_id)
            .unwrap_or_else(|| panic!("{}'s parent is not in the trace", span.name));
        assert!(
            span.start_time_unix_nano >= parent.start_time_unix_nano
                && span.end_time_unix_nano <= parent.end_time_unix_nano,
            "{} is not inside {}",
            span.name,
            parent.name
        );
    }
    let stall = spans
        .iter()
        .find(|s| {
            s.name == "Sim.AI" && s.end_time_unix_nano - s.start_time_unix_nano > 1_000_000_000
        })
        .expect("the stalled Sim.AI span");
    let parent = spans
        .iter()
        .find(|p| p.span_id == stall.parent_span_id)
        .unwrap();
    assert_eq!(parent.name, "Tick", "the stall's parent");
}

#[test]
fn a_collector_that_is_down_is_told_once_then_counted() {
    // Nothing listens there: twenty exports a second fail, for 3 s.
    let collector = format!("http://127.0.0.1:{}", free_port());
    let (code, stderr) = relay_ends(&[
        "--source",
        "a=127.0.0.1:1",
        "--otlp",
        &collector,
        "--otlp-interval",
        "0.05",
        "--duration",
        "3",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let told: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("OTLP exports"))
        .collect();
    // The next line comes 10 s after the first (typhon_live_monitoring::failures).
    assert_eq!(told.len(), 1, "{stderr}");
    assert!(
        told[0].contains("/v1/metrics") && told[0].contains("failed"),
        "{stderr}"
    );
}

/// The relay exporting its metrics (of a source that is down: the
/// exports go on) with `args`, every 0.2 s unless `args` says, run to its
/// end after `seconds`: exit code and stderr.
fn exporting(args: &[&str], seconds: &str) -> (Option<i32>, String) {
    let mut all = vec!["--source", "a=127.0.0.1:1", "--duration", seconds];
    if !args.contains(&"--otlp-interval") {
        all.extend(["--otlp-interval", "0.2"]);
    }
    all.extend(args);
    relay_ends(&all)
}

#[test]
fn exports_go_over_tls_to_a_collector_the_ca_file_trusts_gzipped_with_their_headers() {
    let authority = Authority::new();
    let collector = Collector::start(Some(authority.server()));
    let dir = temp("otlp-tls");
    std::fs::create_dir_all(&dir).unwrap();
    let ca = authority.write_ca(&dir);
    let url = format!("https://localhost:{}", collector.port);
    let (code, stderr) = exporting(
        &[
            "--otlp",
            &url,
            "--otlp-ca",
            ca.to_str().unwrap(),
            "--otlp-compression",
            "gzip",
            "--otlp-header",
            "authorization=Bearer t0k3n",
            "--otlp-header",
            "x-team=core",
        ],
        "2",
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !stderr.contains("OTLP exports"),
        "an export failed: {stderr}"
    );
    let got = collector.received();
    assert!(
        got.len() >= 3,
        "{} exports in 2 s, one every 0.2 s",
        got.len()
    );
    for request in &got {
        assert!(request.gzipped, "{request:?}");
        assert_eq!(request.header("authorization"), Some("Bearer t0k3n"));
        assert_eq!(request.header("x-team"), Some("core"));
        assert_eq!(
            request.header("content-type"),
            Some("application/x-protobuf")
        );
    }
    let (metrics, traces) = decoded(&got);
    assert!(traces.is_empty());
    let resource = metrics[0].resource_metrics[0].resource.as_ref().unwrap();
    assert_eq!(
        attribute(&resource.attributes, "typhon.source").as_deref(),
        Some("a")
    );

    // Without the CA file the collector's certificate is not trusted, and
    // plain HTTP to its TLS port is no answer: neither export arrives,
    // and each failure is told.
    for (url, why) in [
        (
            format!("https://localhost:{}", collector.port),
            "certificate",
        ),
        (format!("http://127.0.0.1:{}", collector.port), "failed"),
    ] {
        let before = collector.received().len();
        let (code, stderr) = exporting(&["--otlp", &url, "--otlp-timeout", "1"], "1");
        assert_eq!(code, Some(0), "{stderr}");
        let told: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("OTLP exports"))
            .collect();
        assert!(
            told.len() == 1 && told[0].to_lowercase().contains(why),
            "{url}: {stderr}"
        );
        assert_eq!(collector.received().len(), before, "{url}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_503_is_tried_again_when_its_retry_after_says_or_else_after_a_backoff() {
    // The first export is answered 503 with Retry-After: 2 (seconds), its
    // second try 503 without; the third is taken.
    let collector = Collector::scripted(None, |n| match n {
        0 => Answer::Unavailable(Some("2")),
        1 => Answer::Unavailable(None),
        _ => Answer::Ok,
    });
    let url = format!("http://127.0.0.1:{}", collector.port);
    let (code, stderr) = exporting(&["--otlp", &url, "--otlp-interval", "1"], "5");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !stderr.contains("OTLP exports"),
        "an export was lost: {stderr}"
    );
    let got = collector.received();
    assert!(got.len() >= 3, "{} requests", got.len());
    // One export, tried three times.
    assert!(got[0].body == got[1].body && got[1].body == got[2].body);
    let after = got[1].at - got[0].at;
    assert!(
        after >= Duration::from_secs(2) && after < Duration::from_secs(4),
        "tried again {after:?} after a Retry-After of 2 s"
    );
    // The first backoff is 125 to 250 ms (otlp::retry).
    let backoff = got[2].at - got[1].at;
    assert!(
        backoff >= Duration::from_millis(125) && backoff < Duration::from_secs(2),
        "tried again {backoff:?} after a 503 without Retry-After"
    );
}

#[test]
fn what_a_collector_rejects_of_an_export_it_took_is_counted_and_told_with_its_reason() {
    // Every export is taken (200) with 2 of its data points rejected.
    let answer = ExportMetricsServiceResponse {
        partial_success: Some(ExportMetricsPartialSuccess {
            rejected_data_points: 2,
            error_message: "unit \"By\" unknown".into(),
        }),
    }
    .encode_to_vec();
    let collector = Collector::scripted(None, move |_| Answer::OkWith(answer.clone()));
    let url = format!("http://127.0.0.1:{}", collector.port);
    let metrics = free_port();
    let ended = Arc::new(AtomicBool::new(false));
    let scraper = std::thread::spawn({
        let ended = Arc::clone(&ended);
        move || {
            let series = "typhon_otlp_rejected_total{signal=\"metrics\"}";
            let mut seen = None;
            while !ended.load(Ordering::Relaxed) && seen.is_none_or(|v| v < 4.0) {
                seen = relay_value(metrics, series).or(seen);
                std::thread::sleep(Duration::from_millis(100));
            }
            seen
        }
    });
    let (code, stderr) = exporting(
        &[
            "--otlp",
            &url,
            "--otlp-interval",
            "0.5",
            "--metrics",
            &format!("127.0.0.1:{metrics}"),
        ],
        "4",
    );
    ended.store(true, Ordering::Relaxed);
    assert_eq!(code, Some(0), "{stderr}");
    let seen = scraper.join().unwrap();
    assert!(
        seen.is_some_and(|v| v >= 4.0 && v % 2.0 == 0.0),
        "rejected data points scraped: {seen:?}"
    );
    // Told once within 10 s (then counted), with the collector's reason.
    let told: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("OTLP exports"))
        .collect();
    assert_eq!(
        told,
        [format!(
            "relay: OTLP exports to {url}/v1/metrics failed: the collector rejected 2 data \
             points of the export: unit \"By\" unknown"
        )],
        "{stderr}"
    );
    // Not sent again: the specification forbids it.
    let got = collector.received();
    assert!(got.len() >= 2, "{} exports", got.len());
    for (i, request) in got.iter().enumerate() {
        assert!(
            got[..i].iter().all(|r| r.body != request.body),
            "export {i} again"
        );
    }
}

#[test]
fn a_retry_after_past_the_exports_deadline_loses_that_export_and_says_why() {
    let collector = Collector::scripted(None, |_| Answer::Unavailable(Some("30")));
    let url = format!("http://127.0.0.1:{}", collector.port);
    let (code, stderr) = exporting(
        &[
            "--otlp",
            &url,
            "--otlp-timeout",
            "1",
            "--otlp-interval",
            "0.5",
        ],
        "3",
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "the collector answered 503 Service Unavailable; trying again in 30.0 s (Retry-After) \
             would pass the export's 1.0 s deadline"
        ),
        "{stderr}"
    );
    // No export was tried twice, and none waited for the next.
    let got = collector.received();
    assert!((3..=7).contains(&got.len()), "{} exports in 3 s", got.len());
    for (i, request) in got.iter().enumerate() {
        assert!(
            got[..i].iter().all(|r| r.body != request.body),
            "export {i} again"
        );
    }
}

#[test]
fn the_opentelemetry_environment_alone_enables_export() {
    let collector = Collector::start(None);
    let endpoint = format!("http://127.0.0.1:{}", collector.port);
    let out = typhon()
        .args(["relay", "--source", "a=127.0.0.1:1", "--duration", "2"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20abc,x-team=core",
        )
        .env("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "gzip")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "200")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!("OTLP to {endpoint}/v1/metrics (gzip)"))
            && stdout.contains(&format!("OTLP to {endpoint}/v1/traces\n")),
        "{stdout}"
    );
    let got = collector.received();
    assert!(
        got.len() >= 3,
        "{} exports in 2 s, one every 0.2 s",
        got.len()
    );
    for request in &got {
        assert!(request.gzipped);
        assert_eq!(request.header("authorization"), Some("Bearer abc"));
        assert_eq!(request.header("x-team"), Some("core"));
    }
    assert!(!decoded(&got).0.is_empty());

    // A variable the relay cannot honour is an error naming it.
    let out = typhon()
        .args(["relay", "--source", "a=127.0.0.1:1", "--duration", "1"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL=\"grpc\""),
        "{stderr}"
    );
}
