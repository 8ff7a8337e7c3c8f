//! OTLP/HTTP with protobuf bodies (`opentelemetry-proto`'s messages): the
//! metrics every interval, to `/v1/metrics`, and, to `/v1/traces`, the
//! span tree of every tick that overran or took longer than the slow-tick
//! threshold: the stall, not the firehose.
//!
//! Exports go through a bounded queue to one thread that posts them; a
//! collector that is down or slow costs dropped exports (counted in
//! `typhon_otlp_dropped_total`), never a wait on the live path. Where
//! they go and how is [`settings`]; how they are posted, [`client`] and
//! [`retry`]; what a collector rejected of an export it took, [`answer`]
//! (counted in `typhon_otlp_rejected_total`).

pub mod answer;
pub mod client;
pub mod retry;
pub mod settings;

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Gauge, Histogram, HistogramDataPoint,
    Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, ResourceSpans, ScopeSpans, Span};
use prost::Message;
use typhon_live_core::{Event, LaneId, NameId};
use typhon_live_reader::{Nesting, Placement, State, Tick};

use crate::failures::Failures;
use crate::metrics::{DurationsSnapshot, Metrics, SourceSnapshot, BOUNDS};
use client::Client;
use settings::Signal;
use typhon_live_reader::owned::Update;

/// Exports waiting for the posting thread; more are dropped.
pub const QUEUED_EXPORTS: usize = 64;
/// Spans a source's tracer keeps to build a slow tick's tree from.
pub const RECENT_SPANS: usize = 1 << 16;

/// An export for the posting thread.
pub enum Export {
    /// A slow tick's span tree.
    Traces(ExportTraceServiceRequest),
}

/// The queue to the posting thread.
pub fn queue() -> (SyncSender<Export>, Receiver<Export>) {
    std::sync::mpsc::sync_channel(QUEUED_EXPORTS)
}

/// Unix time in ns.
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Posts the metrics every `interval` and every queued export, until the
/// queue's senders are gone. A collector's failures are told on stderr,
/// at a rate [`Failures`] keeps down.
pub fn post_all(
    metrics_client: Option<Client>,
    traces_client: Option<Client>,
    metrics: Arc<Metrics>,
    exports: Receiver<Export>,
    interval: Duration,
) {
    let started = unix_ns();
    let failures = |client: &Option<Client>| {
        client
            .as_ref()
            .map(|c| Failures::new(format!("relay: OTLP exports to {}", c.url())))
    };
    let mut said = [failures(&metrics_client), failures(&traces_client)];
    let mut next_metrics = metrics_client.as_ref().map(|_| Instant::now() + interval);
    loop {
        // The metrics when due, however many traces wait.
        let due = match next_metrics {
            Some(at) if at <= Instant::now() => Err(RecvTimeoutError::Timeout),
            Some(at) => exports.recv_timeout(at.saturating_duration_since(Instant::now())),
            None => exports.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        let (signal, body) = match due {
            Ok(Export::Traces(request)) => (Signal::Traces, request.encode_to_vec()),
            Err(RecvTimeoutError::Timeout) => {
                next_metrics = Some(Instant::now() + interval);
                let request = metrics_request(&metrics.snapshot(), started, unix_ns());
                (Signal::Metrics, request.encode_to_vec())
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let (client, failures) = match signal {
            Signal::Metrics => (&metrics_client, &mut said[0]),
            Signal::Traces => (&traces_client, &mut said[1]),
        };
        let (Some(client), Some(failures)) = (client, failures) else {
            continue;
        };
        let told = match client.post(&body) {
            Ok(answer) => match answer::rejected(signal, &answer) {
                None => failures.worked(),
                Some(rejected) => {
                    metrics.otlp_rejected(signal.name(), rejected.items);
                    failures.failed(&rejected.why, Instant::now())
                }
            },
            Err(why) => {
                metrics.otlp_dropped();
                failures.failed(&why, Instant::now())
            }
        };
        if let Some(line) = told {
            eprintln!("{line}");
        }
    }
}

fn text(key: &str, value: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..KeyValue::default()
    }
}

fn int(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::IntValue(value)),
        }),
        ..KeyValue::default()
    }
}

fn boolean(key: &str, value: bool) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::BoolValue(value)),
        }),
        ..KeyValue::default()
    }
}

/// A source as an OTLP resource: `service.name` and `typhon.source` are
/// its label, `typhon.session_id` its session (hex).
fn resource(source: &str, session: Option<u64>) -> Resource {
    let mut attributes = vec![text("service.name", source), text("typhon.source", source)];
    if let Some(session) = session {
        attributes.push(text("typhon.session_id", format!("{session:016x}")));
    }
    Resource {
        attributes,
        ..Resource::default()
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope {
        name: "typhon-live relay".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        ..InstrumentationScope::default()
    }
}

/// The metrics of every source, as cumulative OTLP metrics since
/// `started` (unix ns), read at `now`.
pub fn metrics_request(
    sources: &[SourceSnapshot],
    started: u64,
    now: u64,
) -> ExportMetricsServiceRequest {
    let histogram_point = |attributes: Vec<KeyValue>, d: &DurationsSnapshot| HistogramDataPoint {
        attributes,
        start_time_unix_nano: started,
        time_unix_nano: now,
        count: d.count,
        sum: Some(d.sum),
        bucket_counts: d.counts.to_vec(),
        explicit_bounds: BOUNDS.to_vec(),
        ..HistogramDataPoint::default()
    };
    let number = |attributes: Vec<KeyValue>, value: number_data_point::Value| NumberDataPoint {
        attributes,
        start_time_unix_nano: started,
        time_unix_nano: now,
        value: Some(value),
        ..NumberDataPoint::default()
    };
    let metric = |name: &str, description: &str, unit: &str, data: metric::Data| Metric {
        name: name.into(),
        description: description.into(),
        unit: unit.into(),
        data: Some(data),
        ..Metric::default()
    };
    let cumulative = AggregationTemporality::Cumulative as i32;
    let counter = |name: &str, description: &str, unit: &str, value: u64| {
        let value = number_data_point::Value::AsInt(i64::try_from(value).unwrap_or(i64::MAX));
        metric(
            name,
            description,
            unit,
            metric::Data::Sum(Sum {
                data_points: vec![number(Vec::new(), value)],
                aggregation_temporality: cumulative,
                is_monotonic: true,
            }),
        )
    };
    let resource_metrics = sources
        .iter()
        .map(|s| {
            let metrics = vec![
                metric(
                    "typhon.span.duration",
                    "Durations of the source's spans, by name",
                    "s",
                    metric::Data::Histogram(Histogram {
                        data_points: s
                            .spans
                            .iter()
                            .map(|(name, d)| histogram_point(vec![text("span", name.clone())], d))
                            .collect(),
                        aggregation_temporality: cumulative,
                    }),
                ),
                metric(
                    "typhon.tick.duration",
                    "Durations of the source's ticks",
                    "s",
                    metric::Data::Histogram(Histogram {
                        data_points: vec![histogram_point(Vec::new(), &s.ticks)],
                        aggregation_temporality: cumulative,
                    }),
                ),
                counter(
                    "typhon.tick.overruns",
                    "Ticks over budget",
                    "{tick}",
                    s.overruns,
                ),
                counter(
                    "typhon.frames.dropped",
                    "Frames missing from the source's stream",
                    "{frame}",
                    s.frames_dropped,
                ),
                counter(
                    "typhon.events.dropped",
                    "Events the source dropped before sending",
                    "{event}",
                    s.events_dropped,
                ),
                metric(
                    "typhon.log.lines",
                    "Log lines the source sent, by level",
                    "{line}",
                    metric::Data::Sum(Sum {
                        data_points: (s.log_lines.iter())
                            .map(|&(level, n)| {
                                number(
                                    vec![text("level", level)],
                                    number_data_point::Value::AsInt(
                                        i64::try_from(n).unwrap_or(i64::MAX),
                                    ),
                                )
                            })
                            .collect(),
                        aggregation_temporality: cumulative,
                        is_monotonic: true,
                    }),
                ),
                counter(
                    "typhon.log.lines_lost",
                    "Log lines the source said it lost",
                    "{line}",
                    s.log_lines_lost,
                ),
                metric(
                    "typhon.reading",
                    "The last reading of each of the source's gauges",
                    "1",
                    metric::Data::Gauge(Gauge {
                        data_points: s
                            .gauges
                            .iter()
                            .map(|(name, v)| {
                                number(
                                    vec![text("gauge", name.clone())],
                                    number_data_point::Value::AsDouble(*v),
                                )
                            })
                            .collect(),
                    }),
                ),
                metric(
                    "typhon.source.up",
                    "1 while the relay is connected to the source",
                    "1",
                    metric::Data::Gauge(Gauge {
                        data_points: vec![number(
                            Vec::new(),
                            number_data_point::Value::AsInt(i64::from(s.up)),
                        )],
                    }),
                ),
            ];
            ResourceMetrics {
                resource: Some(resource(&s.source, s.session)),
                scope_metrics: vec![ScopeMetrics {
                    scope: Some(scope()),
                    metrics,
                    ..ScopeMetrics::default()
                }],
                ..ResourceMetrics::default()
            }
        })
        .collect();
    ExportMetricsServiceRequest { resource_metrics }
}

/// A span kept for slow ticks' trees, times in the source's ns.
#[derive(Clone, Copy, Debug)]
struct Kept {
    lane: LaneId,
    start: u64,
    end: u64,
    name: NameId,
    id: u32,
    parent: u32,
    arg: Option<u64>,
}

/// A slow tick waiting for the spans of its other lanes (they may come in
/// the next Block).
#[derive(Clone, Copy, Debug)]
struct SlowTick {
    lane: LaneId,
    tick: u64,
    start: u64,
    end: u64,
    overrun: bool,
}

/// One source's slow ticks, found in its updates and exported as traces.
pub struct TickTracer {
    source: String,
    slow_ns: u64,
    queue: SyncSender<Export>,
    metrics: Arc<Metrics>,
    session: Option<u64>,
    recent: VecDeque<Kept>,
    pending: Vec<SlowTick>,
    /// The source's times on the Unix clock, as the latest Block's update
    /// placed them.
    unix: Placement,
    ids: std::collections::hash_map::RandomState,
}

impl TickTracer {
    /// A tracer for `source` exporting ticks slower than `slow` (or
    /// overrunning) into `queue`.
    pub fn new(
        source: &str,
        slow: Duration,
        queue: SyncSender<Export>,
        metrics: Arc<Metrics>,
    ) -> Self {
        TickTracer {
            source: source.into(),
            slow_ns: slow.as_nanos() as u64,
            queue,
            metrics,
            session: None,
            recent: VecDeque::new(),
            pending: Vec::new(),
            unix: Placement::unix(0),
            ids: std::collections::hash_map::RandomState::new(),
        }
    }

    /// Takes in an update of the source's, its names and lanes as the
    /// source's reader knows them.
    pub fn update(&mut self, update: &Update, state: &State) {
        match update {
            Update::Session { id, .. } => {
                if self.session != Some(*id) {
                    self.session = Some(*id);
                    self.recent.clear();
                    self.pending.clear();
                }
            }
            Update::Definitions { .. } => {}
            Update::Events {
                events,
                unix_offset,
                ..
            } => {
                self.unix = Placement::unix(*unix_offset);
                // The ticks found in the last update: their other lanes'
                // spans have had a Block to arrive in.
                for tick in std::mem::take(&mut self.pending) {
                    self.export(tick, state);
                }
                for &(lane, event) in events {
                    self.event(lane, event);
                }
            }
            // Slow ticks are exported once they end; log texts are for
            // viewers.
            Update::Ticks(ticks) => ticks.iter().for_each(|tick| self.tick(tick)),
            Update::Gap { .. }
            | Update::CatchUp { .. }
            | Update::Texts { .. }
            | Update::Stacks { .. }
            | Update::Samples(_) => {}
            Update::Restarted => {
                self.recent.clear();
                self.pending.clear();
            }
        }
    }

    fn event(&mut self, lane: LaneId, event: Event) {
        // A poll is what its lane ran, among the spans of a slow tick.
        if let Event::Span {
            start,
            duration,
            name,
            id,
            parent,
            arg,
        } = event.lane_span()
        {
            if self.recent.len() >= RECENT_SPANS {
                self.recent.pop_front();
            }
            self.recent.push_back(Kept {
                lane,
                start,
                end: start.saturating_add(duration),
                name,
                id,
                parent,
                arg,
            });
        }
    }

    /// A tick the reader paired: a whole one that overran or lasted past
    /// the bound is exported once the next Block had time to bring its
    /// other lanes' spans. One with a half lost has no extent to export.
    fn tick(&mut self, tick: &Tick) {
        let (Some(start), Some(end)) = (tick.start, tick.end) else {
            return;
        };
        if tick.overrun || end.saturating_sub(start) > self.slow_ns {
            self.pending.push(SlowTick {
                lane: tick.lane,
                tick: tick.tick,
                start,
                end,
                overrun: tick.overrun,
            });
        }
    }

    fn id(&self, parts: impl Hash) -> u64 {
        self.ids.hash_one((&self.source, self.session, parts))
    }

    /// Exports `tick` as a trace: the tick as its root, every kept span
    /// inside it (any lane) where the reader's [`Nesting`] places it among
    /// them: under its parent, or (its parent lost, or outside the tick)
    /// under the innermost of its lane's that holds it in time, else
    /// under the root.
    fn export(&self, tick: SlowTick, state: &State) {
        let unix = |ns: u64| self.unix.place(ns);
        let trace_id: Vec<u8> = [
            self.id(("trace", tick.tick, 0)),
            self.id(("trace", tick.tick, 1)),
        ]
        .iter()
        .flat_map(|half| half.to_be_bytes())
        .collect();
        let root = self.id(("root", tick.tick)).to_be_bytes().to_vec();
        let name = |id: NameId| state.names().show(id).into_owned();
        let lane_name = |lane: LaneId| {
            state
                .lanes()
                .get(&lane)
                .map_or_else(|| format!("lane {lane}"), |l| name(l.info.name))
        };
        let inside: Vec<&Kept> = self
            .recent
            .iter()
            .filter(|s| s.start >= tick.start && s.end <= tick.end)
            .collect();
        let span_id = |lane: LaneId, id: u32| {
            self.id(("span", tick.tick, lane, id))
                .to_be_bytes()
                .to_vec()
        };
        let mut spans = vec![Span {
            trace_id: trace_id.clone(),
            span_id: root.clone(),
            name: if tick.overrun {
                format!("overrun tick {}", tick.tick)
            } else {
                format!("tick {}", tick.tick)
            },
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: unix(tick.start),
            end_time_unix_nano: unix(tick.end),
            attributes: vec![
                int("typhon.tick", i64::try_from(tick.tick).unwrap_or(i64::MAX)),
                boolean("typhon.overrun", tick.overrun),
                text("typhon.lane", lane_name(tick.lane)),
            ],
            ..Span::default()
        }];
        // Newest first, a nesting a lane, as the reader places spans.
        let mut lanes: HashMap<LaneId, Nesting> = HashMap::new();
        let within: Vec<Option<u32>> = (inside.iter().rev())
            .map(|s| {
                let nesting = lanes.entry(s.lane).or_default();
                nesting.place(s.id, s.parent, s.start, s.end).within
            })
            .collect();
        for (s, within) in inside.iter().zip(within.into_iter().rev()) {
            let mut attributes = vec![text("typhon.lane", lane_name(s.lane))];
            if let Some(arg) = s.arg {
                attributes.push(int("typhon.arg", i64::try_from(arg).unwrap_or(i64::MAX)));
            }
            spans.push(Span {
                trace_id: trace_id.clone(),
                span_id: span_id(s.lane, s.id),
                parent_span_id: within.map_or_else(|| root.clone(), |p| span_id(s.lane, p)),
                name: name(s.name),
                kind: span::SpanKind::Internal as i32,
                start_time_unix_nano: unix(s.start),
                end_time_unix_nano: unix(s.end),
                attributes,
                ..Span::default()
            });
        }
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(resource(&self.source, self.session)),
                scope_spans: vec![ScopeSpans {
                    scope: Some(scope()),
                    spans,
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            }],
        };
        match self.queue.try_send(Export::Traces(request)) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.metrics.otlp_dropped()
            }
        }
    }
}
