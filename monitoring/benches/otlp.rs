//! An OTLP export's latency, posted by the relay's client to a collector
//! on 127.0.0.1 (the tests' collector, which reads the whole body and
//! unpacks gzip), side by side: plain HTTP and HTTPS, each with the body
//! as it is and gzipped. The body is a metrics export of 200 span
//! histograms of 20 buckets, the shape of a relay watching a process with
//! 200 span names.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, AggregationTemporality, Histogram, HistogramDataPoint, Metric, ResourceMetrics,
    ScopeMetrics,
};
use prost::Message;
use typhon_live_monitoring::otlp::client::Client;
use typhon_live_monitoring::otlp::settings::{Compression, Target};
use typhon_live_tests::collector::Collector;
use typhon_live_tests::tls::Authority;

fn body() -> Vec<u8> {
    let bounds: Vec<f64> = (0..19).map(|i| 1e-6 * 2f64.powi(i)).collect();
    let points = (0..200)
        .map(|i| HistogramDataPoint {
            attributes: vec![KeyValue {
                key: "span".into(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(format!("System.Name{i}"))),
                }),
                ..KeyValue::default()
            }],
            start_time_unix_nano: 1_700_000_000_000_000_000,
            time_unix_nano: 1_700_000_005_000_000_000 + i,
            count: 1000 + i,
            sum: Some(0.25 + i as f64),
            bucket_counts: (0..20).map(|b| (b * 7 + i) % 100).collect(),
            explicit_bounds: bounds.clone(),
            ..HistogramDataPoint::default()
        })
        .collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            scope_metrics: vec![ScopeMetrics {
                metrics: vec![Metric {
                    name: "typhon.span.duration".into(),
                    unit: "s".into(),
                    data: Some(metric::Data::Histogram(Histogram {
                        data_points: points,
                        aggregation_temporality: AggregationTemporality::Cumulative as i32,
                    })),
                    ..Metric::default()
                }],
                ..ScopeMetrics::default()
            }],
            ..ResourceMetrics::default()
        }],
    }
    .encode_to_vec()
}

fn exports(c: &mut Criterion) {
    let body = body();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gzip, &body).unwrap();
    eprintln!(
        "the body: {} bytes, {} gzipped",
        body.len(),
        gzip.finish().unwrap().len()
    );
    let authority = Authority::new();
    let dir = std::env::temp_dir().join(format!("typhon-otlp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = authority.write_ca(&dir);
    let plain = Collector::start(None);
    let tls = Collector::start(Some(authority.server()));
    let mut group = c.benchmark_group(format!("otlp export of {} bytes", body.len()));
    group.measurement_time(Duration::from_secs(10));
    for (scheme, collector, ca) in [("http", &plain, None), ("https", &tls, Some(ca.clone()))] {
        for compression in [Compression::None, Compression::Gzip] {
            let client = Client::new(Target {
                url: format!("{scheme}://localhost:{}/v1/metrics", collector.port),
                headers: Vec::new(),
                timeout: Duration::from_secs(10),
                compression,
                ca: ca.clone(),
            })
            .unwrap();
            group.bench_function(format!("{scheme}, {compression:?}"), |b| {
                b.iter(|| {
                    client.post(&body).unwrap();
                    collector.forget();
                })
            });
        }
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, exports);
criterion_main!(benches);
