//! What the relay tells Prometheus: per source and span name a duration
//! histogram (its `_count` the spans), tick durations and overruns, every
//! gauge's last value, the CPU its threads used, frames and events
//! dropped, and the connection's state, kept in a `prometheus-client` registry and encoded on each
//! scrape in the [`Format`] asked for. A source's [`Update`]s feed it.

use std::collections::HashMap;

use foldhash::fast::RandomState as FastHash;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Registry, Unit};
use typhon_live_core::{Event, GaugeValue, Level, NameId};

use typhon_live_reader::owned::{Samples, Update};
use typhon_live_reader::{Names, Tick};

/// Span names per source with a histogram of their own; further names'
/// spans are refused (counted in `typhon_series_refused_total`), so that
/// a peer cannot grow the relay's memory or Prometheus's series.
pub const MAX_SPAN_SERIES: usize = 1024;
/// Gauges per source with a series of their own.
pub const MAX_GAUGE_SERIES: usize = 1024;
/// Bytes of span and gauge names per source in series labels, this
/// session: a source whose names are long cannot make `/metrics` large
/// within the series caps (1 024 names of 4 MiB each would be 4 GiB of
/// labels, and a histogram repeats its labels on 15 lines). 1 024 names
/// of 256 bytes fit.
pub const MAX_SERIES_LABEL_BYTES: usize = 256 << 10;

/// Upper bounds of the duration histograms' buckets, in seconds: 1 µs to
/// 4.2 s by 4 (and +Inf after them).
pub const BOUNDS: [f64; 12] = [
    1e-6, 4e-6, 1.6e-5, 6.4e-5, 2.56e-4, 1.024e-3, 4.096e-3, 1.6384e-2, 6.5536e-2, 0.262_144,
    1.048_576, 4.194_304,
];

/// A duration histogram that both Prometheus's encoding and OTLP read
/// (prometheus-client's own keeps its buckets to itself).
#[derive(Clone, Debug, Default)]
pub struct Durations {
    inner: Arc<Mutex<DurationsSnapshot>>,
}

/// A histogram's state: counts per bucket (not cumulative; the last is
/// over every bound), their sum and count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DurationsSnapshot {
    /// Observations per bucket of [`BOUNDS`], then past the last.
    pub counts: [u64; BOUNDS.len() + 1],
    /// Their sum, seconds.
    pub sum: f64,
    /// How many.
    pub count: u64,
}

impl Durations {
    /// Adds one duration.
    pub fn observe(&self, seconds: f64) {
        let bucket = BOUNDS.partition_point(|&bound| bound < seconds);
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.counts[bucket] += 1;
        inner.sum += seconds;
        inner.count += 1;
    }

    /// What it holds now.
    pub fn snapshot(&self) -> DurationsSnapshot {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl TypedMetric for Durations {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Durations {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let now = self.snapshot();
        let buckets: Vec<(f64, u64)> = BOUNDS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(now.counts)
            .collect();
        encoder.encode_histogram::<NoLabelSet>(now.sum, now.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// One source's metrics as they are now, for OTLP.
#[derive(Clone, Debug, Default)]
pub struct SourceSnapshot {
    /// Its label.
    pub source: String,
    /// Its current session id, once it sent an Init.
    pub session: Option<u64>,
    /// Span durations by name.
    pub spans: Vec<(String, DurationsSnapshot)>,
    /// Tick durations.
    pub ticks: DurationsSnapshot,
    /// Ticks over budget.
    pub overruns: u64,
    /// Every gauge's last reading.
    pub gauges: Vec<(String, f64)>,
    /// Frames missing from its stream.
    pub frames_dropped: u64,
    /// Events it dropped.
    pub events_dropped: u64,
    /// Connected now.
    pub up: bool,
    /// Log lines it sent, by level (as `tracing` names them).
    pub log_lines: Vec<(&'static str, u64)>,
    /// Log lines it said it lost.
    pub log_lines_lost: u64,
}

/// The series each source has, for snapshots (a `Family` cannot be
/// walked).
#[derive(Default)]
struct Index {
    sources: Vec<String>,
    sessions: HashMap<String, u64>,
    spans: Vec<(String, String, Durations)>,
    gauges: Vec<(String, String, Gauge<f64, AtomicU64>)>,
}

/// A source's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: String,
}

/// A source's span name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SpanLabels {
    source: String,
    span: String,
}

/// A source's gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GaugeLabels {
    source: String,
    gauge: String,
}

/// A source's log lines of one level.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LevelLabels {
    source: String,
    level: &'static str,
}

/// Why a viewer was let go.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

/// Which OTLP signal.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SignalLabel {
    signal: &'static str,
}

/// The relay's metrics, shared by the source threads and the scrapes.
pub struct Metrics {
    registry: Registry,
    span_duration: Family<SpanLabels, Durations>,
    tick_duration: Family<SourceLabel, Durations>,
    tick_overruns: Family<SourceLabel, Counter>,
    ticks_without_start: Family<SourceLabel, Counter>,
    ticks_without_end: Family<SourceLabel, Counter>,
    gauges: Family<GaugeLabels, Gauge<f64, AtomicU64>>,
    frames_dropped: Family<SourceLabel, Counter>,
    frames_damaged: Family<SourceLabel, Counter>,
    events_dropped: Family<SourceLabel, Counter>,
    up: Family<SourceLabel, Gauge>,
    cpu: Family<SourceLabel, Gauge<f64, AtomicU64>>,
    cpu_waiting: Family<SourceLabel, Gauge<f64, AtomicU64>>,
    memory_live: Family<SourceLabel, Gauge>,
    reconnects: Family<SourceLabel, Counter>,
    stalls: Family<SourceLabel, Counter>,
    restarts: Family<SourceLabel, Counter>,
    refused: Family<SourceLabel, Counter>,
    log_lines: Family<LevelLabels, Counter>,
    log_lines_lost: Family<SourceLabel, Counter>,
    capture_triggers: Family<SourceLabel, Counter>,
    captures: Family<SourceLabel, Counter>,
    capture_failures: Family<SourceLabel, Counter>,
    otlp_drops: Counter,
    otlp_rejected: Family<SignalLabel, Counter>,
    viewers: Gauge,
    viewers_let_go: Family<ReasonLabel, Counter>,
    viewers_refused: Family<ReasonLabel, Counter>,
    viewer_frames_dropped: Counter,
    events_moved: Family<SourceLabel, Counter>,
    moved_by: Family<SourceLabel, Gauge<f64, AtomicU64>>,
    index: Mutex<Index>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// The metrics, registered under the prefix `typhon`.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("typhon");
        let metrics = Metrics {
            span_duration: Family::default(),
            tick_duration: Family::default(),
            tick_overruns: Family::default(),
            ticks_without_start: Family::default(),
            ticks_without_end: Family::default(),
            gauges: Family::default(),
            frames_dropped: Family::default(),
            frames_damaged: Family::default(),
            events_dropped: Family::default(),
            up: Family::default(),
            cpu: Family::default(),
            cpu_waiting: Family::default(),
            memory_live: Family::default(),
            reconnects: Family::default(),
            stalls: Family::default(),
            restarts: Family::default(),
            refused: Family::default(),
            log_lines: Family::default(),
            log_lines_lost: Family::default(),
            capture_triggers: Family::default(),
            captures: Family::default(),
            capture_failures: Family::default(),
            otlp_drops: Counter::default(),
            otlp_rejected: Family::default(),
            viewers: Gauge::default(),
            viewers_let_go: Family::default(),
            viewers_refused: Family::default(),
            viewer_frames_dropped: Counter::default(),
            events_moved: Family::default(),
            moved_by: Family::default(),
            registry: Registry::default(),
            index: Mutex::default(),
        };
        registry.register_with_unit(
            "span_duration",
            "Durations of a source's spans, by name (a task span's from its creation to its close)",
            Unit::Seconds,
            metrics.span_duration.clone(),
        );
        registry.register_with_unit(
            "tick_duration",
            "Durations of a source's ticks",
            Unit::Seconds,
            metrics.tick_duration.clone(),
        );
        registry.register(
            "tick_overruns",
            "Ticks that took longer than their budget",
            metrics.tick_overruns.clone(),
        );
        registry.register(
            "ticks_without_start",
            "Ticks whose start was lost (FORMAT.md, \"Reading a stream\": ticks): no duration",
            metrics.ticks_without_start.clone(),
        );
        registry.register(
            "ticks_without_end",
            "Ticks whose end was lost: no duration",
            metrics.ticks_without_end.clone(),
        );
        registry.register(
            "reading",
            "The last reading of each of a source's gauges",
            metrics.gauges.clone(),
        );
        registry.register(
            "frames_dropped",
            "Frames missing from a source's stream (sequence gaps)",
            metrics.frames_dropped.clone(),
        );
        registry.register(
            "frames_damaged",
            "Frames of a source that arrived whole but broke a rule of the format: refused (a count over its bound), or Blocks read only in part",
            metrics.frames_damaged.clone(),
        );
        registry.register(
            "events_dropped",
            "Events a source dropped before sending (its Blocks' drop counts), and events its damaged Blocks stated and the relay could not read",
            metrics.events_dropped.clone(),
        );
        registry.register(
            "source_up",
            "1 while the source's stream flows: connected, and a frame within the stall timeout",
            metrics.up.clone(),
        );
        registry.register(
            "source_cpu",
            "Cores' worth of CPU time the source's sampled threads (its lanes) spent running, over about the last second of its CPU samples: 1 is one core busy (docs/FORMAT.md, Samples)",
            metrics.cpu.clone(),
        );
        registry.register(
            "source_cpu_waiting",
            "Cores' worth of time the source's sampled threads spent runnable and waiting for a core, over about the last second of its CPU samples",
            metrics.cpu_waiting.clone(),
        );
        registry.register(
            "source_memory_live_bytes",
            "Bytes the source's process holds, allocated and not freed, as its tracking allocator last told (docs/FORMAT.md, Samples, Memory)",
            metrics.memory_live.clone(),
        );
        registry.register(
            "source_stalls",
            "Times the source's stream stopped without the connection ending (no frame within the stall timeout)",
            metrics.stalls.clone(),
        );
        registry.register(
            "source_reconnects",
            "Connections to the source after the first",
            metrics.reconnects.clone(),
        );
        registry.register(
            "source_restarts",
            "Sessions of the source after the first (a new session id, or the same id with its clock gone back)",
            metrics.restarts.clone(),
        );
        registry.register(
            "series_refused",
            "Spans and gauge readings of names past the per-source series caps",
            metrics.refused.clone(),
        );
        registry.register(
            "capture_triggers",
            "The flight recorder's triggers that fired on a source's stream (docs/RECORDER.md), on demand included",
            metrics.capture_triggers.clone(),
        );
        registry.register(
            "captures",
            "Captures of a source's stream written whole",
            metrics.captures.clone(),
        );
        registry.register(
            "capture_failures",
            "Captures of a source's stream not written (a full disk, a disk too slow, a capture over the directory's limit)",
            metrics.capture_failures.clone(),
        );
        registry.register(
            "log_lines",
            "Log lines a source sent (each `tracing` event's text), by level: trace, debug, info, warn, error, or - when the source did not say",
            metrics.log_lines.clone(),
        );
        registry.register(
            "log_lines_lost",
            "Log lines a source said it lost before sending (its queue full, or its frames dropped on the way)",
            metrics.log_lines_lost.clone(),
        );
        registry.register(
            "otlp_dropped",
            "OTLP exports dropped: the queue full, or the collector down, slow or refusing",
            metrics.otlp_drops.clone(),
        );
        registry.register(
            "otlp_rejected",
            "Data points (signal metrics) and spans (signal traces) that a collector rejected of exports it took (OTLP's partial success)",
            metrics.otlp_rejected.clone(),
        );
        registry.register(
            "viewers",
            "Viewers of the merged stream served now",
            metrics.viewers.clone(),
        );
        registry.register(
            "viewers_let_go",
            "Viewers let go, by reason: left, stalled (took nothing for 10 s), start_not_taken (did not take their Init and Catch-up within 10 s), over_cap (refused: 64 served already), misspoke (a browser tab that sent something other than what it read)",
            metrics.viewers_let_go.clone(),
        );
        registry.register(
            "viewers_refused",
            "Connections to the viewers' port over TLS closed before their token was accepted, by reason: timed_out (the exchange took over 5 s), tls (TLS failed, or was not spoken), closed, bad_line, wrong_token, crowded (the oldest of 128 exchanges in progress, closed for a newer one)",
            metrics.viewers_refused.clone(),
        );
        registry.register(
            "viewer_frames_dropped",
            "Blocks and Catch-ups dropped whole for viewers that fell behind (a full queue, or a browser tab's frame that waited past 50 ms), each a gap in that viewer's sequence numbers",
            metrics.viewer_frames_dropped.clone(),
        );
        registry.register(
            "events_moved",
            "A source's events the merged stream placed later than its clock says, whole: it or an earlier one lay wholly before the relay's clock began (its Catch-ups ran ahead of its Blocks, or it predates the relay)",
            metrics.events_moved.clone(),
        );
        registry.register_with_unit(
            "moved_by",
            "How much later the merged stream places a source's times than its clock says (0: as it says)",
            Unit::Seconds,
            metrics.moved_by.clone(),
        );
        Metrics {
            registry,
            ..metrics
        }
    }

    /// Viewers served now.
    pub fn set_viewers(&self, count: usize) {
        self.viewers.set(count as i64);
    }

    /// `frames` more were dropped for viewers that fell behind.
    pub fn viewer_frames_dropped(&self, frames: u64) {
        self.viewer_frames_dropped.inc_by(frames);
    }

    /// Source `source`'s `events` were placed `lead` ns later than its
    /// clock says in the merged stream (the relay's `Moved`).
    pub fn source_moved(&self, source: &str, events: u64, lead: u64) {
        let label = SourceLabel {
            source: source.to_owned(),
        };
        self.events_moved.get_or_create(&label).inc_by(events);
        self.moved_by.get_or_create(&label).set(lead as f64 / 1e9);
    }

    /// A viewer was let go, for `reason`.
    pub fn viewer_let_go(&self, reason: &'static str) {
        self.viewers_let_go
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    /// A connection to the viewers' port refused before its token was
    /// accepted, for `reason`.
    pub fn viewer_refused(&self, reason: &'static str) {
        self.viewers_refused
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    /// Every source's metrics as they are now.
    pub fn snapshot(&self) -> Vec<SourceSnapshot> {
        let index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        let count = |family: &Family<SourceLabel, Counter>, label: &SourceLabel| {
            family.get(label).map_or(0, |c| c.get())
        };
        index
            .sources
            .iter()
            .map(|source| {
                let label = SourceLabel {
                    source: source.clone(),
                };
                SourceSnapshot {
                    source: source.clone(),
                    session: index.sessions.get(source).copied(),
                    spans: index
                        .spans
                        .iter()
                        .filter(|s| s.0 == *source)
                        .map(|(_, name, d)| (name.clone(), d.snapshot()))
                        .collect(),
                    ticks: self
                        .tick_duration
                        .get(&label)
                        .map(|d| d.snapshot())
                        .unwrap_or_default(),
                    overruns: count(&self.tick_overruns, &label),
                    gauges: index
                        .gauges
                        .iter()
                        .filter(|g| g.0 == *source)
                        .map(|(_, name, g)| (name.clone(), g.get()))
                        .collect(),
                    frames_dropped: count(&self.frames_dropped, &label),
                    events_dropped: count(&self.events_dropped, &label),
                    up: self.up.get(&label).is_some_and(|g| g.get() == 1),
                    log_lines: (Level::ALL.iter())
                        .map(|level| {
                            let label = level_label(source, *level);
                            (
                                label.level,
                                self.log_lines.get(&label).map_or(0, |c| c.get()),
                            )
                        })
                        .collect(),
                    log_lines_lost: count(&self.log_lines_lost, &label),
                }
            })
            .collect()
    }

    /// An OTLP export was dropped.
    pub fn otlp_dropped(&self) {
        self.otlp_drops.inc();
    }

    /// A collector rejected `items` of an export it took, of the signal
    /// named `signal` (`metrics`, `traces`).
    pub fn otlp_rejected(&self, signal: &'static str, items: u64) {
        self.otlp_rejected
            .get_or_create(&SignalLabel { signal })
            .inc_by(items);
    }

    fn index(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The OpenMetrics text of every metric, as Prometheus scrapes it.
    pub fn encode(&self) -> String {
        self.encode_as(Format::OpenMetrics)
    }

    /// The text of every metric in `format`.
    pub fn encode_as(&self, format: Format) -> String {
        let mut text = String::new();
        match format {
            Format::OpenMetrics => {
                prometheus_client::encoding::text::encode(&mut text, &self.registry)
            }
            Format::Text004 => {
                prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry)
            }
        }
        .expect("writing to a String does not fail");
        text
    }
}

/// The text formats the metrics are served in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0: what Prometheus asks for first. A counter's
    /// family is named without its `_total`, its sample with it.
    OpenMetrics,
    /// Prometheus's text format 0.0.4: what a client that names neither
    /// gets, and what `promtool check metrics` reads.
    Text004,
}

impl Format {
    /// Its `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text004 => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// The label of `source`'s log lines of `level`, lower case as labels
/// usually are.
fn level_label(source: &str, level: Level) -> LevelLabels {
    let level = match level {
        Level::Unspecified => "-",
        Level::Trace => "trace",
        Level::Debug => "debug",
        Level::Info => "info",
        Level::Warn => "warn",
        Level::Error => "error",
    };
    LevelLabels {
        source: source.to_owned(),
        level,
    }
}

/// A source's captures written and not written, counted from the thread
/// that writes them.
#[derive(Clone, Debug)]
pub struct CaptureCounts {
    /// Written whole.
    pub written: Counter,
    /// Not written.
    pub failed: Counter,
}

/// One source's side of the metrics: reads its frames and records.
pub struct SourceMetrics {
    metrics: Arc<Metrics>,
    label: SourceLabel,
    session: Option<u64>,
    /// Histogram handles by name id, so that a span costs no label lookup.
    /// Looked up for every span and gauge: foldhash, not SipHash (a peer
    /// picks the ids, but the series are capped).
    spans: HashMap<NameId, Durations, FastHash>,
    gauges: HashMap<NameId, Gauge<f64, AtomicU64>, FastHash>,
    /// Bytes of names in its series' labels, this session.
    label_bytes: usize,
    /// Its log lines' counters, by level.
    log_lines: [Counter; 6],
    /// CPU time its lanes' threads spent since the gauges were last set.
    cpu: CpuWindow,
}

/// How long the CPU gauges' window lasts, ns of the source's clock.
const CPU_WINDOW_NS: u64 = 1_000_000_000;

/// CPU time summed over a window of a source's samples.
#[derive(Default)]
struct CpuWindow {
    /// When it began: the first sample's time after the last window.
    from: Option<u64>,
    on_cpu: u64,
    waiting: u64,
}

impl SourceMetrics {
    /// The side of `metrics` for the source named `name`; its series
    /// exist (at 0) from now on.
    pub fn new(metrics: Arc<Metrics>, name: &str) -> Self {
        let label = SourceLabel {
            source: name.to_owned(),
        };
        for family in [
            &metrics.tick_overruns,
            &metrics.ticks_without_start,
            &metrics.ticks_without_end,
            &metrics.frames_dropped,
            &metrics.frames_damaged,
            &metrics.events_dropped,
            &metrics.reconnects,
            &metrics.stalls,
            &metrics.restarts,
            &metrics.refused,
            &metrics.log_lines_lost,
            &metrics.capture_triggers,
            &metrics.captures,
            &metrics.capture_failures,
        ] {
            let _ = family.get_or_create(&label);
        }
        let log_lines = Level::ALL.map(|level| {
            metrics
                .log_lines
                .get_or_create(&level_label(name, level))
                .clone()
        });
        metrics.up.get_or_create(&label).set(0);
        let _ = metrics.tick_duration.get_or_create(&label);
        metrics.index().sources.push(name.to_owned());
        SourceMetrics {
            metrics,
            label,
            session: None,
            spans: HashMap::default(),
            gauges: HashMap::default(),
            label_bytes: 0,
            log_lines,
            cpu: CpuWindow::default(),
        }
    }

    /// A new session of the source: its span and gauge series are the
    /// old session's no more. They are removed, not kept beside the new
    /// ones, so that a source restarting with new names each time does
    /// not add series without end; a name the new session uses again
    /// starts a series afresh, as a restarted process's counters do.
    fn forget_series(&mut self) {
        let source = &self.label.source;
        let mut index = self.metrics.index();
        index.spans.retain(|(of, span, _)| {
            let keep = of != source;
            if !keep {
                self.metrics.span_duration.remove(&SpanLabels {
                    source: of.clone(),
                    span: span.clone(),
                });
            }
            keep
        });
        index.gauges.retain(|(of, gauge, _)| {
            let keep = of != source;
            if !keep {
                self.metrics.gauges.remove(&GaugeLabels {
                    source: of.clone(),
                    gauge: gauge.clone(),
                });
            }
            keep
        });
        drop(index);
        self.spans.clear();
        self.gauges.clear();
        self.label_bytes = 0;
    }

    /// The source's stream flows, or not.
    pub fn set_up(&self, up: bool) {
        self.metrics
            .up
            .get_or_create(&self.label)
            .set(i64::from(up));
    }

    /// The connection stayed, but its frames stopped (the source is
    /// stopped, or hangs).
    pub fn stalled(&self) {
        self.set_up(false);
        self.count(&self.metrics.stalls, 1);
    }

    /// A connection after the first (its Init tells a restart from a
    /// reconnect).
    pub fn reconnected(&mut self) {
        self.metrics.reconnects.get_or_create(&self.label).inc();
    }

    /// Its flight recorder's triggers fired `n` times more.
    pub fn capture_triggers(&self, n: u64) {
        self.count(&self.metrics.capture_triggers, n);
    }

    /// Its capture counters, for the thread that writes its captures.
    pub fn capture_counts(&self) -> CaptureCounts {
        CaptureCounts {
            written: self.metrics.captures.get_or_create(&self.label).clone(),
            failed: self
                .metrics
                .capture_failures
                .get_or_create(&self.label)
                .clone(),
        }
    }

    /// A frame of the source's arrived whole and broke a rule of the
    /// format (its events, if any, are counted in [`Update::Events`]).
    pub fn damaged(&self) {
        self.count(&self.metrics.frames_damaged, 1);
    }

    /// Takes in one update of the source's, its names as the source's
    /// reader knows them.
    pub fn update(&mut self, update: &Update, names: &Names) {
        match update {
            Update::Session { id, .. } => {
                if self.session.is_some_and(|s| s != *id) {
                    self.count(&self.metrics.restarts, 1);
                    // Its ids may mean other names now.
                    self.forget_series();
                }
                self.session = Some(*id);
                self.metrics
                    .index()
                    .sessions
                    .insert(self.label.source.clone(), *id);
            }
            Update::Definitions { .. } => {}
            Update::Events {
                events,
                drops,
                unread,
                ..
            } => {
                let dropped: u64 = drops.iter().map(|&(_, n)| u64::from(n)).sum();
                self.count(&self.metrics.events_dropped, dropped + u64::from(*unread));
                for &(_, event) in events {
                    self.event(event, names);
                }
            }
            Update::Gap { frames } => self.count(&self.metrics.frames_dropped, *frames),
            Update::Texts { texts, lost, .. } => {
                for text in texts {
                    self.log_lines[usize::from(text.level.to_byte())].inc();
                }
                self.count(&self.metrics.log_lines_lost, u64::from(*lost));
            }
            // Open spans are for viewers; the metrics count what ended.
            // Stacks are counted with their samples ("Stacks everywhere").
            Update::CatchUp { .. } | Update::Stacks { .. } => {}
            Update::Samples(samples) => self.samples(samples),
            Update::Ticks(ticks) => ticks.iter().for_each(|tick| self.tick(tick)),
            Update::Restarted => {
                self.count(&self.metrics.restarts, 1);
                self.cpu = CpuWindow::default();
            }
        }
    }

    /// A tick the reader paired: a whole one's duration, a lost half
    /// counted, an overrun counted whichever half it came with.
    fn tick(&self, tick: &Tick) {
        match tick.duration() {
            Some(duration) => self
                .metrics
                .tick_duration
                .get_or_create(&self.label)
                .observe(seconds(duration)),
            None if tick.start.is_none() => self.count(&self.metrics.ticks_without_start, 1),
            None => self.count(&self.metrics.ticks_without_end, 1),
        }
        if tick.overrun {
            self.count(&self.metrics.tick_overruns, 1);
        }
    }

    /// Adds a Samples frame's intervals to the window; once it spans
    /// [`CPU_WINDOW_NS`], sets the CPU gauges from it and starts another.
    fn samples(&mut self, samples: &Samples) {
        if let Some(memory) = samples.memory {
            let live = i64::try_from(memory.live()).unwrap_or(i64::MAX);
            self.metrics
                .memory_live
                .get_or_create(&self.label)
                .set(live);
        }
        let window = &mut self.cpu;
        let from = *window.from.get_or_insert(samples.time);
        for interval in &samples.intervals {
            let spent = &interval.spent;
            window.on_cpu = (window.on_cpu).saturating_add(spent.on_cpu_ns.unwrap_or(0));
            window.waiting = (window.waiting).saturating_add(spent.waiting_ns.unwrap_or(0));
        }
        let elapsed = samples.time.saturating_sub(from);
        if elapsed >= CPU_WINDOW_NS {
            let cores = |ns: u64| ns as f64 / elapsed as f64;
            let gauge = |family: &Family<SourceLabel, Gauge<f64, AtomicU64>>, v: f64| {
                family.get_or_create(&self.label).set(v);
            };
            gauge(&self.metrics.cpu, cores(window.on_cpu));
            gauge(&self.metrics.cpu_waiting, cores(window.waiting));
            *window = CpuWindow {
                from: Some(samples.time),
                ..CpuWindow::default()
            };
        }
    }

    fn count(&self, family: &Family<SourceLabel, Counter>, n: u64) {
        if n > 0 {
            family.get_or_create(&self.label).inc_by(n);
        }
    }

    fn event(&mut self, event: Event, names: &Names) {
        match event {
            // A task span's latency is its wall time; its polls are not
            // spans of its name.
            Event::Span { duration, name, .. }
            | Event::TaskEnd {
                wall: duration,
                name,
                ..
            } => {
                let histogram = match self.spans.get(&name) {
                    Some(histogram) => histogram,
                    None => {
                        let span = names.show(name);
                        if self.spans.len() >= MAX_SPAN_SERIES
                            || self.label_bytes + span.len() > MAX_SERIES_LABEL_BYTES
                        {
                            return self.count(&self.metrics.refused, 1);
                        }
                        self.label_bytes += span.len();
                        let labels = SpanLabels {
                            source: self.label.source.clone(),
                            span: span.into_owned(),
                        };
                        let histogram = self.metrics.span_duration.get_or_create_owned(&labels);
                        let mut index = self.metrics.index();
                        // Two ids of one text (a name redefined) share it.
                        if !index
                            .spans
                            .iter()
                            .any(|s| s.0 == labels.source && s.1 == labels.span)
                        {
                            index
                                .spans
                                .push((labels.source, labels.span, histogram.clone()));
                        }
                        drop(index);
                        self.spans.entry(name).or_insert(histogram)
                    }
                };
                histogram.observe(seconds(duration));
            }
            Event::Gauge { gauge, value, .. } => {
                let value = match value {
                    GaugeValue::Int(v) => v as f64,
                    GaugeValue::Float(v) => v,
                };
                let series = match self.gauges.get(&gauge) {
                    Some(series) => series,
                    None => {
                        let text = names.show(gauge);
                        if self.gauges.len() >= MAX_GAUGE_SERIES
                            || self.label_bytes + text.len() > MAX_SERIES_LABEL_BYTES
                        {
                            return self.count(&self.metrics.refused, 1);
                        }
                        self.label_bytes += text.len();
                        let labels = GaugeLabels {
                            source: self.label.source.clone(),
                            gauge: text.into_owned(),
                        };
                        let series = self.metrics.gauges.get_or_create_owned(&labels);
                        let mut index = self.metrics.index();
                        if !index
                            .gauges
                            .iter()
                            .any(|g| g.0 == labels.source && g.1 == labels.gauge)
                        {
                            index
                                .gauges
                                .push((labels.source, labels.gauge, series.clone()));
                        }
                        drop(index);
                        self.gauges.entry(gauge).or_insert(series)
                    }
                };
                series.set(value);
            }
            // Paired by the reader: `Update::Ticks`.
            Event::TickStart { .. }
            | Event::TickEnd { .. }
            | Event::Instant { .. }
            | Event::TaskBegin { .. }
            | Event::Poll { .. }
            | Event::Field { .. }
            | Event::Mark { .. }
            | Event::Allocated { .. }
            | Event::Unknown { .. } => {}
        }
    }
}

/// `ns` in seconds (the reader gives times in ns).
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_live_reader::owned::Reader;
    use typhon_live_tests::{each_frame, nested_stream};

    /// The value of the series of `text` whose line starts with `series`.
    fn value(text: &str, series: &str) -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(series))
            .unwrap_or_else(|| panic!("no {series} in\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn a_sources_moved_events_are_counted_and_by_how_much_they_moved() {
        let metrics = Metrics::new();
        metrics.source_moved("late", 1_000, 8_999_000_000);
        metrics.source_moved("late", 7_000, 8_999_000_000);
        let text = metrics.encode();
        assert_eq!(
            value(&text, "typhon_events_moved_total{source=\"late\"}"),
            8_000.0
        );
        assert_eq!(
            value(&text, "typhon_moved_by_seconds{source=\"late\"}"),
            8.999
        );
    }

    /// The metrics of one source, "m", that sent `stream`.
    fn metrics_of(stream: &[u8]) -> Arc<Metrics> {
        let metrics = Arc::new(Metrics::new());
        let mut side = SourceMetrics::new(Arc::clone(&metrics), "m");
        let mut reader = Reader::default();
        each_frame(stream, |frame| {
            reader
                .read(frame, 0, |update, state| {
                    side.update(&update, state.names())
                })
                .unwrap()
        });
        metrics
    }

    #[test]
    fn a_stream_becomes_exact_counts_sums_and_overruns() {
        let metrics = metrics_of(&nested_stream(0..50));
        let text = metrics.encode();
        let series = |name: &str| value(&text, name);
        // 50 ticks of `outer` (900 µs) holding `inner`s of 100 and 200 µs.
        assert_eq!(
            series("typhon_span_duration_seconds_count{source=\"m\",span=\"outer\"}"),
            50.0
        );
        assert_eq!(
            series("typhon_span_duration_seconds_count{source=\"m\",span=\"inner\"}"),
            100.0
        );
        let outer = series("typhon_span_duration_seconds_sum{source=\"m\",span=\"outer\"}");
        assert!((outer - 50.0 * 900e-6).abs() < 1e-9, "{outer}");
        let inner = series("typhon_span_duration_seconds_sum{source=\"m\",span=\"inner\"}");
        assert!((inner - 50.0 * 300e-6).abs() < 1e-9, "{inner}");
        // The 100 µs and 200 µs inners fall in the buckets up to 256 µs.
        assert_eq!(
            series(
                "typhon_span_duration_seconds_bucket{le=\"0.000256\",source=\"m\",span=\"inner\"}"
            ),
            100.0
        );
        assert_eq!(
            series("typhon_tick_duration_seconds_count{source=\"m\"}"),
            50.0
        );
        assert_eq!(series("typhon_tick_overruns_total{source=\"m\"}"), 1.0);
        assert_eq!(series("typhon_frames_dropped_total{source=\"m\"}"), 0.0);
        assert_eq!(series("typhon_source_up{source=\"m\"}"), 0.0);
    }

    #[test]
    fn the_cpu_its_threads_used_is_a_gauge_of_cores_over_about_a_second() {
        use typhon_live_core::Counters;
        use typhon_live_reader::CpuInterval;
        let metrics = Arc::new(Metrics::new());
        let mut side = SourceMetrics::new(Arc::clone(&metrics), "m");
        const MS: u64 = 1_000_000;
        let gauge = |name: &str| value(&metrics.encode(), name);
        // Two lanes, sampled every 100 ms: each ran half of it, and
        // waited a tenth.
        for at in (0..=10).map(|i| i * 100 * MS) {
            let intervals = (0..2)
                .filter(|_| at > 0)
                .map(|lane| CpuInterval {
                    lane,
                    thread: 10 + u64::from(lane),
                    from: at - 100 * MS,
                    to: at,
                    spent: Counters {
                        on_cpu_ns: Some(50 * MS),
                        waiting_ns: Some(10 * MS),
                        voluntary: Some(1),
                        involuntary: Some(0),
                        ..Counters::default()
                    },
                    switches_traced: false,
                })
                .collect();
            let samples = Samples {
                time: at,
                lanes: Vec::new(),
                switches: Vec::new(),
                intervals,
                memory: None,
                sites: Vec::new(),
                stacks: Vec::new(),
                unix_offset: 0,
            };
            side.update(&Update::Samples(samples), &Names::new());
            if at < 1_000 * MS {
                // Not a second's worth yet.
                assert!(!metrics.encode().contains("typhon_source_cpu{"));
            }
        }
        assert_eq!(gauge("typhon_source_cpu{source=\"m\"}"), 1.0);
        assert_eq!(gauge("typhon_source_cpu_waiting{source=\"m\"}"), 0.2);
        assert!(!metrics
            .encode()
            .contains("typhon_source_memory_live_bytes{"));
    }

    #[test]
    fn the_memory_its_process_holds_is_a_gauge_of_bytes() {
        let metrics = Arc::new(Metrics::new());
        let mut side = SourceMetrics::new(Arc::clone(&metrics), "m");
        let mut reader = typhon_live_reader::owned::Reader::default();
        typhon_live_tests::each_frame(&typhon_live_tests::memory_stream(), |frame| {
            (reader.read(frame, 0, |update, state| {
                side.update(&update, state.names())
            }))
            .unwrap()
        });
        let live = value(
            &metrics.encode(),
            "typhon_source_memory_live_bytes{source=\"m\"}",
        );
        assert_eq!(live, 160_000_000.0);
    }

    #[test]
    fn log_lines_are_counted_by_level_and_their_losses_too() {
        // FORMAT.md's text example (a warning and an info line, 3 lost
        // before them), alone: the reader reads it without its Init.
        let metrics = metrics_of(&typhon_live_tests::text_example());
        let text = metrics.encode();
        let series = |name: &str| value(&text, name);
        assert_eq!(
            series("typhon_log_lines_total{source=\"m\",level=\"warn\"}"),
            1.0
        );
        assert_eq!(
            series("typhon_log_lines_total{source=\"m\",level=\"info\"}"),
            1.0
        );
        assert_eq!(
            series("typhon_log_lines_total{source=\"m\",level=\"error\"}"),
            0.0
        );
        assert_eq!(series("typhon_log_lines_lost_total{source=\"m\"}"), 3.0);
        let snapshot = &metrics.snapshot()[0];
        assert!(
            snapshot.log_lines.contains(&("warn", 1)),
            "{:?}",
            snapshot.log_lines
        );
        assert_eq!(snapshot.log_lines_lost, 3);
    }

    #[test]
    fn span_names_and_gauges_past_their_caps_are_refused_and_counted() {
        let metrics = Arc::new(Metrics::new());
        let mut side = SourceMetrics::new(Arc::clone(&metrics), "m");
        // Never defined: shown as `#id`.
        let names = Names::default();
        for id in 0..MAX_SPAN_SERIES as u32 + 5 {
            let span = Event::Span {
                start: 0,
                duration: 1,
                name: id,
                id: 1,
                parent: 0,
                arg: None,
            };
            side.event(span, &names);
            let value = GaugeValue::Int(1);
            side.event(
                Event::Gauge {
                    time: 0,
                    gauge: id,
                    value,
                },
                &names,
            );
        }
        assert_eq!(side.spans.len(), MAX_SPAN_SERIES);
        assert_eq!(side.gauges.len(), MAX_GAUGE_SERIES);
        let text = metrics.encode();
        assert_eq!(
            value(&text, "typhon_series_refused_total{source=\"m\"}"),
            10.0
        );
    }

    fn span(name: NameId) -> Event {
        Event::Span {
            start: 0,
            duration: 1,
            name,
            id: 1,
            parent: 0,
            arg: None,
        }
    }

    fn session(id: u64) -> Update {
        Update::Session {
            process: String::new(),
            id,
            names: Vec::new(),
            lanes: Vec::new(),
        }
    }

    #[test]
    fn a_new_session_replaces_the_old_sessions_series_instead_of_adding_to_them() {
        let metrics = Arc::new(Metrics::new());
        let mut side = SourceMetrics::new(Arc::clone(&metrics), "m");
        let mut other = SourceMetrics::new(Arc::clone(&metrics), "other");
        let mut names = Names::default();
        names.define(1, "kept");
        other.update(&session(1), &names);
        other.event(span(1), &names);
        // 24 sessions, each with 1 024 span names of its own.
        for restart in 0..24u64 {
            side.update(&session(restart), &names);
            let mut names = Names::default();
            for id in 0..MAX_SPAN_SERIES as u32 {
                names.define(id, &format!("s{restart} n{id}"));
                side.event(span(id), &names);
            }
        }
        let text = metrics.encode();
        let series = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
        let count = "typhon_span_duration_seconds_count{source=\"m\"";
        assert_eq!(series(count), MAX_SPAN_SERIES, "the last session's only");
        assert_eq!(
            series("typhon_span_duration_seconds_count{source=\"m\",span=\"s23 "),
            MAX_SPAN_SERIES
        );
        let kept = "typhon_span_duration_seconds_count{source=\"other\",span=\"kept\"}";
        assert_eq!(value(&text, kept), 1.0, "another source's series untouched");
        let snapshot = metrics.snapshot();
        assert_eq!(snapshot[0].spans.len(), MAX_SPAN_SERIES);
        assert_eq!(snapshot[1].spans.len(), 1);
    }

    #[test]
    fn long_names_are_held_to_a_byte_budget_of_labels() {
        let metrics = Arc::new(Metrics::new());
        let mut side = SourceMetrics::new(Arc::clone(&metrics), "m");
        let mut names = Names::default();
        for id in 0..8u32 {
            names.define(id, &format!("{id}{}", "x".repeat((64 << 10) - 1)));
            side.event(span(id), &names);
        }
        assert_eq!(side.spans.len(), 4, "four names of 64 KiB within 256 KiB");
        let text = metrics.encode();
        assert!(
            text.len() < 16 * MAX_SERIES_LABEL_BYTES,
            "{} bytes",
            text.len()
        );
        assert_eq!(
            value(&text, "typhon_series_refused_total{source=\"m\"}"),
            4.0
        );
    }
}
