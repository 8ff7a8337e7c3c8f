//! `typhon-live-bench`: typhon-live beside Tracy (tracy-client) and puffin
//! in one run on one machine, printed as one table with the targets of the
//! benchmark issue and whether each is met. Benchmarks are not tests:
//! nothing here asserts a time.
//!
//! `cargo run --release -p typhon-live-bench [-- --quick]`; `-- --e2e`
//! runs only the end-to-end rates, three times each; `-- --ladder` only
//! the end-to-end ladder, each column to its first lossy rung and what
//! stopped it; `-- --keep-up` only
//! the live view's model against the exporter (`-- --codecs` only the
//! codec rows); `-- --formats FILE...` the sizes and conversion speeds of
//! trace files as Perfetto and Chrome JSON; `-- --relay` the relay
//! under load (4 sources, 4 viewers); `-- --relay-attack` its `/metrics`
//! scraped while clients try to hold it; `-- --stacks` the call stacks'
//! cost and accuracy (against `perf`).

mod cpu;
mod exporter_cpu;
mod flight;
mod formats;
mod live;
mod memory;
mod relay;
mod relay_attack;
mod service;
mod stacks;
mod verdict;
mod web;

use std::hint::black_box;
use std::time::{Duration, Instant};

use tracing_subscriber::layer::SubscriberExt;
use typhon_live_core::block::encoding_buffer_len;
use typhon_live_core::{
    Compression, Decoder, Event, Exporter, LaneKind, Lanes, Lz4Table, Metadata, NameTable, Payload,
};
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::runtime::{DEFAULT_RING_EVENTS, MAX_RING_EVENTS};
use typhon_live_std::{runtime, Profiler};

/// Spans per timed batch: below a ring's capacity, so that every span
/// takes the full recording path (a full ring refuses events cheaply).
const BATCH: u64 = 2000;

struct Settings {
    samples: usize,
}

/// Median nanoseconds per iteration of `f(BATCH)` over `samples` batches,
/// with `between` run untimed after each batch.
fn per_iteration(samples: usize, mut f: impl FnMut(u64), mut between: impl FnMut()) -> f64 {
    f(BATCH);
    between();
    let mut times: Vec<f64> = (0..samples)
        .map(|_| {
            let started = Instant::now();
            f(BATCH);
            let ns = started.elapsed().as_nanos() as f64 / BATCH as f64;
            between();
            ns
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// The same measurement on every core at once: the median of the
/// per-thread medians.
fn per_iteration_all_threads(
    samples: usize,
    make: impl Fn() -> Box<dyn FnMut(u64) + Send> + Sync,
    between: impl Fn() + Sync,
) -> f64 {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut medians: Vec<f64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (make, between) = (&make, &between);
                scope.spawn(move || {
                    let f = make();
                    per_iteration(samples, f, between)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .collect()
    });
    medians.sort_by(f64::total_cmp);
    medians[medians.len() / 2]
}

fn pause() {
    // Lets typhon's exporter drain the ring between batches.
    std::thread::sleep(Duration::from_millis(2));
}

fn typhon_span(n: u64) {
    for _ in 0..n {
        let _span = typhon_live_std::span!("bench span");
    }
}

/// A `tracing` span, created, entered and closed: what instrumented code
/// does per span, whichever layer records it.
fn tracing_span(n: u64) {
    for _ in 0..n {
        let _span = tracing::info_span!("bench span").entered();
    }
}

/// A `tracing` span that crosses two `.await`s: created, entered and
/// left three times (three polls), then closed.
fn tracing_task(n: u64) {
    for _ in 0..n {
        let span = tracing::info_span!("bench task");
        for _ in 0..3 {
            drop(span.enter());
        }
    }
}

/// Nanoseconds per `spans` (`tracing_span` or `tracing_task`) under
/// `subscriber` on this thread.
fn per_tracing(
    subscriber: impl tracing::Subscriber + Send + Sync + 'static,
    spans: fn(u64),
    samples: usize,
    between: impl FnMut(),
) -> f64 {
    tracing::subscriber::with_default(subscriber, || per_iteration(samples, spans, between))
}

fn floor(n: u64) {
    for _ in 0..n {
        black_box(runtime::now());
        black_box(runtime::now());
    }
}

fn tracy_span(n: u64) {
    for _ in 0..n {
        let _span = tracy_client::span!("bench span");
    }
}

fn puffin_span(n: u64) {
    for _ in 0..n {
        puffin::profile_scope!("bench span");
    }
}

fn puffin_frame() {
    puffin::GlobalProfiler::lock().new_frame();
}

static EXPORT_LANES: Lanes<8, 65536> = Lanes::new();

/// Exporter throughput on one core: full rings drained into Block frames
/// for `R` readers (each Block packed once and framed for each reader, as
/// for a trace file beside a viewer). Returns (events per second, wire bytes per event)
/// for `events`, and the first reader's stream of the last sample (Init,
/// Blocks). The timed part includes copying each frame out, as a sink
/// would.
fn exporter<const R: usize>(
    events: &[(u16, Event)],
    samples: usize,
    compression: Compression,
    batch: usize,
) -> (f64, f64, Vec<u8>) {
    let mut names: NameTable<64, 2048> = NameTable::new();
    for name in typhon_live_tests::REALISTIC_NAMES {
        let _ = names.intern(name);
    }
    let handles: Vec<_> = (0..4)
        .map(|i| EXPORT_LANES.claim(i, LaneKind::Worker).expect("lane"))
        .collect();
    let mut scratch = vec![0u8; typhon_live_core::block::block_scratch_len(8192)];
    let meta = Metadata {
        ticks_per_second: 1_000_000_000,
        ..Metadata::default()
    };
    let mut work = vec![0u8; encoding_buffer_len(scratch.len(), compression)];
    let mut table = Lz4Table::large();
    let mut exporter: Exporter<'_, 8, R> = Exporter::new(meta, &mut scratch);
    // As the std transport does: each Block encoded once for all readers.
    exporter.set_encoding_buffer(&mut work);
    exporter.set_compression(compression, &mut table);
    let mut out = vec![0u8; exporter.min_block_buffer()];
    let first = exporter.attach().expect("a free slot");
    for _ in 1..R {
        exporter.attach().expect("a free slot");
    }
    let mut stream = Vec::new();
    while let Some(frame) = exporter
        .poll(0, &EXPORT_LANES, &names, &mut out)
        .expect("init")
    {
        if frame.reader == first {
            stream.extend_from_slice(&out[..frame.len]);
        }
    }
    let header = stream.len();
    let mut rates = Vec::new();
    let (mut wire, mut counted) = (0u64, 0u64);
    let mut copy = Vec::with_capacity(out.len());
    for _ in 0..samples {
        let (mut filled, mut bytes, mut drained, mut elapsed) = (0u64, 0u64, 0u64, 0.0);
        stream.truncate(header);
        for events in events.chunks(batch) {
            for (lane, event) in events {
                if handles[usize::from(*lane) % handles.len()].record(event) {
                    filled += 1;
                }
            }
            let started = Instant::now();
            exporter.request_drain();
            while let Some(frame) = exporter
                .poll(1, &EXPORT_LANES, &names, &mut out)
                .expect("frame")
            {
                if frame.reader != first {
                    copy.clear();
                    copy.extend_from_slice(&out[..frame.len]);
                    black_box(&copy);
                    continue;
                }
                if frame.kind == typhon_live_core::FrameKind::Block {
                    bytes += frame.len as u64;
                    drained += u64::from(frame.events);
                }
                stream.extend_from_slice(&out[..frame.len]);
            }
            elapsed += started.elapsed().as_secs_f64();
        }
        assert_eq!(drained, filled, "every event drained");
        rates.push(drained as f64 / elapsed);
        wire += bytes;
        counted += drained;
    }
    rates.sort_by(f64::total_cmp);
    (rates[rates.len() / 2], wire as f64 / counted as f64, stream)
}

/// Decoder throughput: events per second decoded (frames checked, Blocks
/// decoded into a viewer's batch buffer with `BlockEvents::read`) from a
/// recorded stream.
fn decoder(stream: &[u8], samples: usize) -> f64 {
    let mut buf = vec![0u8; 16 << 20];
    let mut rates = Vec::new();
    // A viewer's batch of decoded events, reused.
    let mut out = vec![(0, Event::TickStart { time: 0, tick: 0 }); 1024];
    let mut unpacked = typhon_live_reader::BlockBuffer::new();
    for _ in 0..samples {
        let started = Instant::now();
        let mut decoder = Decoder::new(&mut buf);
        let mut events = 0u64;
        let mut rest = stream;
        while !rest.is_empty() {
            let n = decoder.feed(rest);
            rest = &rest[n..];
            while let Ok(Some(frame)) = decoder.next() {
                if let Ok(Payload::Block(block)) = frame.parse() {
                    if let Ok(mut reader) = unpacked.events(&block) {
                        while let Ok(n @ 1..) = reader.read(&mut out) {
                            black_box(&out[..n]);
                            events += n as u64;
                        }
                    }
                }
            }
        }
        rates.push(events as f64 / started.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// The live view's model alone, one thread: events per second through
/// `Model::on_frame` (decoding included) from a recorded stream, the
/// ceiling of what a viewer can keep up with.
pub(crate) fn model_ingest(stream: &[u8], samples: usize) -> f64 {
    let mut buf = vec![0u8; 16 << 20];
    let mut rates = Vec::new();
    for _ in 0..samples {
        let started = Instant::now();
        let mut decoder = Decoder::new(&mut buf);
        let mut model = typhon_live_model::Model::default();
        let mut rest = stream;
        while !rest.is_empty() {
            let n = decoder.feed(rest);
            rest = &rest[n..];
            while let Ok(Some(frame)) = decoder.next() {
                let _ = model.on_frame(&frame, typhon_live_tui::uptime::now());
            }
        }
        black_box(model.summary(typhon_live_tui::uptime::now()));
        rates.push(model.events() as f64 / started.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// Milliseconds to draw the timeline of `model` into a 200 × 40 buffer:
/// the last `window` host ticks (median of 11 draws).
fn timeline_draw_ms(model: &typhon_live_model::Model, window: Option<u64>) -> f64 {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::widgets::Widget;
    use typhon_live_tui::widgets::timeline::{lanes_of, Timeline};

    let inputs = model.timeline_inputs(typhon_live_tui::uptime::now());
    let lanes = lanes_of(&inputs);
    let oldest = inputs.chunks.first().map_or(0, |c| c.first);
    let start = window.map_or(oldest, |w| inputs.now.saturating_sub(w));
    let timeline = Timeline {
        chunks: &inputs.chunks,
        lanes: &lanes,
        names: model.names(),
        start,
        end: inputs.now,
        now: inputs.now,
        open_tasks: &inputs.open_tasks,
        triggers: &inputs.triggers,
    };
    let area = Rect::new(0, 0, 200, 40);
    let mut times = Vec::new();
    for _ in 0..11 {
        let mut buf = Buffer::empty(area);
        let started = Instant::now();
        (&timeline).render(area, &mut buf);
        times.push(started.elapsed().as_secs_f64() * 1e3);
        black_box(&buf);
    }
    times.sort_by(f64::total_cmp);
    times[5]
}

struct Row {
    what: &'static str,
    typhon: String,
    tracy: String,
    puffin: String,
    target: String,
    met: Option<bool>,
}

impl Row {
    /// A row of typhon-live's alone: Tracy and puffin have no figure.
    fn ours(what: &'static str, typhon: String, target: &str, met: Option<bool>) -> Row {
        Row {
            what,
            typhon,
            tracy: "-".into(),
            puffin: "-".into(),
            target: target.into(),
            met,
        }
    }
}

fn report(run: &live::Run, ring_events: usize) {
    eprintln!(
        "end to end at {:.2} M/s, {ring_events}-event rings: {} recorded ({:.2} M/s), {} received, {} frames missed, {} events dropped ({} early wakes, worst cycle {} us)",
        run.rate / 1e6,
        run.recorded,
        run.achieved() / 1e6,
        run.received,
        run.frames_missed,
        run.events_dropped,
        run.early_wakes,
        run.worst_cycle_us
    );
}

/// The live view's model keeping up with the exporter: the highest rate
/// of the ladder at which it took every span, with the largest rings.
fn keep_up_row(ladder: &Ladder, ingest: f64) -> Row {
    Row {
        what: "viewer model keeps up (spans, end to end)",
        typhon: format!(
            "{} (the model alone, one thread: {:.1} M events/s)",
            ladder.says(),
            ingest / 1e6
        ),
        tracy: "-".into(),
        puffin: "-".into(),
        target: ">= 4 M events/s".into(),
        met: Some(ladder.lossless.is_some_and(|r| r >= 4e6)),
    }
}

/// The end-to-end rates tried, in events (or scopes) per second: up
/// until something drops, or the producer cannot record at the rate.
const LADDER: [f64; 9] = [
    250_000.0,
    500_000.0,
    1_000_000.0,
    2_000_000.0,
    4_000_000.0,
    8_000_000.0,
    16_000_000.0,
    32_000_000.0,
    64_000_000.0,
];

/// One end-to-end run at a rate, for a time, with rings of a size:
/// `live::run_at` (a decoding viewer) or `live::model_run_at` (the live
/// view's model).
type RunAt = fn(f64, Duration, usize) -> live::Run;

/// A ladder climbed: the highest rate run without a drop, the first that
/// was not (and what stopped it), and the run at 1 M/s.
struct Ladder {
    lossless: Option<f64>,
    first_lossy: Option<(f64, &'static str)>,
    at_1m: Option<live::Run>,
}

impl Ladder {
    /// "up to 8.00 M events/s; 16 M stopped by …", for the table.
    fn says(&self) -> String {
        let up_to = self.lossless.map_or("below 0.25 M events/s".into(), |r| {
            format!(">= {:.2} M events/s", r / 1e6)
        });
        match self.first_lossy {
            Some((rate, why)) => format!("{up_to}; at {} M: {why}", rate / 1e6),
            None => format!("{up_to}, the ladder's top"),
        }
    }
}

/// Climbs the ladder with rings of `ring_events` until a run (and its
/// retry) drops or its producer falls short.
fn lossless_ladder(seconds: u64, ring_events: usize, run_at: RunAt) -> Ladder {
    let mut ladder = Ladder {
        lossless: None,
        first_lossy: None,
        at_1m: None,
    };
    let whole = |run: &live::Run| run.lossless() && !run.short();
    for rate in LADDER {
        // A rate gets a second run when the first drops: on a shared
        // machine one stall of another tenant can overflow the rings.
        let duration = Duration::from_secs(seconds);
        let mut run = run_at(rate, duration, ring_events);
        report(&run, ring_events);
        if !whole(&run) {
            run = run_at(rate, duration, ring_events);
            report(&run, ring_events);
        }
        let stop = !whole(&run);
        if stop {
            ladder.first_lossy = Some((rate, run.stopped_by()));
        } else {
            ladder.lossless = Some(rate);
        }
        if rate == 1_000_000.0 {
            ladder.at_1m = Some(run);
        }
        if stop {
            break;
        }
    }
    ladder
}

/// puffin_http end to end: the highest rate of the ladder at which every
/// scope arrives, and the first at which one did not or the producer
/// fell short (and which).
fn puffin_ladder(seconds: u64) -> (Option<f64>, Option<(f64, &'static str)>) {
    let mut puffin_lossless = None;
    let mut puffin_first_lossy = None;
    for rate in LADDER {
        let (expected, received) = live::puffin_run_at(rate, Duration::from_secs(seconds));
        let achieved = expected as f64 / seconds as f64;
        eprintln!(
            "puffin_http end to end at {:.3} M/s: {expected} expected ({:.2} M/s), {received} received",
            rate / 1e6,
            achieved / 1e6
        );
        // puffin_http loses whole frames (rate / 1000 scopes); its count of
        // scopes per frame is off by one at the edges of the run.
        let frame = (rate / 1000.0) as u64;
        if achieved < 0.95 * rate {
            puffin_first_lossy = Some((rate, "the producer's thread"));
            break;
        }
        if expected.saturating_sub(received) > (frame / 2).max(3) {
            puffin_first_lossy = Some((rate, "scopes lost"));
            break;
        }
        puffin_lossless = Some(rate);
    }
    (puffin_lossless, puffin_first_lossy)
}

fn ns(v: f64) -> String {
    format!("{v:.1} ns")
}

/// `a` and `b` run alternately, three rounds, and the median round of
/// each: the machine's noise hits both alike.
fn alternated(mut a: impl FnMut() -> f64, mut b: impl FnMut() -> f64) -> (f64, f64) {
    let (mut of_a, mut of_b) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        of_a.push(a());
        of_b.push(b());
    }
    of_a.sort_by(f64::total_cmp);
    of_b.sort_by(f64::total_cmp);
    (of_a[1], of_b[1])
}

/// Wire bytes per codec on the demo mix and a steady engine loop, puffin_http
/// beside them on the same loop, and exporter and decoder throughput with
/// compression on: one run, side by side.
fn codec_rows(quick: bool) -> Vec<Row> {
    use Compression::{Auto, Lz4, Off};
    let mut rows = Vec::new();
    let samples = if quick { 5 } else { 25 };
    let all = usize::MAX;
    let events = typhon_live_tests::realistic_events(if quick { 400 } else { 2000 });
    let (mut stream_off, mut stream) = (Vec::new(), Vec::new());
    let (rate_off, rate) = alternated(
        || {
            let (rate, _, bytes) = exporter::<1>(&events, samples, Off, all);
            stream_off = bytes;
            rate
        },
        || {
            let (rate, _, bytes) = exporter::<1>(&events, samples, Auto, all);
            stream = bytes;
            rate
        },
    );
    rows.push(Row {
        what: "exporter, 1 core (demo mix, Auto)",
        typhon: format!(
            "{:.1} M events/s (Off: {:.1}, {:.2}x its time)",
            rate / 1e6,
            rate_off / 1e6,
            rate_off / rate
        ),
        tracy: "-".into(),
        puffin: "-".into(),
        target: ">= 30 M events/s".into(),
        met: Some(rate >= 30e6),
    });
    let (two_readers, _, _) = exporter::<2>(&events, samples, Auto, all);
    rows.push(Row {
        what: "exporter, 1 core, 2 readers (file + viewer, Auto)",
        typhon: format!(
            "{:.1} M events/s ({:.2}x one reader's time)",
            two_readers / 1e6,
            rate / two_readers
        ),
        tracy: "-".into(),
        puffin: "-".into(),
        target: "-".into(),
        met: None,
    });
    // Bytes per event in each codec, whole Block frames counted.
    let per_codec = |events: &[(u16, Event)], batch: usize| -> [f64; 3] {
        [Off, Lz4, Auto].map(|c| exporter::<1>(events, samples, c, batch).1)
    };
    let show = |[off, lz4, auto]: [f64; 3]| format!("off {off:.2}, lz4 {lz4:.2}, auto {auto:.2}");
    let ring = typhon_live_core::ring::RECORD_BYTES;
    rows.push(Row {
        what: "wire bytes/event, demo mix, full Blocks",
        typhon: format!("{} ({ring} in the ring)", show(per_codec(&events, all))),
        tracy: "-".into(),
        puffin: "-".into(),
        target: "-".into(),
        met: None,
    });
    let spans: Vec<(u16, Event)> = events
        .iter()
        .copied()
        .filter(|(_, e)| matches!(e, Event::Span { .. }))
        .collect();
    let demo_spans = per_codec(&spans, all);
    rows.push(Row {
        what: "wire bytes/span, demo mix spans, full Blocks",
        typhon: show(demo_spans),
        tracy: "-".into(),
        puffin: "-".into(),
        target: "auto <= 3".into(),
        met: Some(demo_spans[2] <= 3.0),
    });
    // The steady loop: the same 16 spans every 60 Hz tick.
    let ticks = if quick { 300 } else { 1200 };
    let steady = typhon_live_tests::steady_events(ticks);
    let per_tick = typhon_live_tests::STEADY_TREE.len();
    rows.push(Row {
        what: "wire bytes/span, steady loop, full Blocks",
        typhon: show(per_codec(&steady, all)),
        tracy: "-".into(),
        puffin: "-".into(),
        target: "-".into(),
        met: None,
    });
    let tick_blocks = per_codec(&steady, per_tick);
    let steady_spans = typhon_live_tests::steady_spans(ticks);
    let (puffin_bytes, puffin_scopes) = live::puffin_wire_bytes(&steady_spans, per_tick);
    // puffin counts one scope per frame more than were recorded.
    let delivered = puffin_scopes.saturating_sub(ticks);
    // Lost frames (a stalled client) lose their bytes too: still per scope.
    let puffin_per_scope = puffin_bytes as f64 / delivered.max(1) as f64;
    rows.push(Row {
        what: "wire bytes/span, steady loop, one Block (puffin: frame) per tick",
        typhon: show(tick_blocks),
        tracy: "-".into(),
        puffin: format!(
            "{puffin_per_scope:.2} ({delivered} of {} scopes over puffin_http)",
            steady_spans.len()
        ),
        target: format!(
            "auto <= 0.5 x puffin ({:.2}); ratio {:.2}",
            0.5 * puffin_per_scope,
            tick_blocks[2] / puffin_per_scope
        ),
        met: Some(tick_blocks[2] <= 0.5 * puffin_per_scope),
    });
    let decode_samples = if quick { 5 } else { 21 };
    let (decode_off, decode) = alternated(
        || decoder(&stream_off, decode_samples),
        || decoder(&stream, decode_samples),
    );
    let small = typhon_live_tests::exporter_stream(if quick { 200 } else { 1000 }, 256 << 10, Auto);
    let decode_small = decoder(&small, decode_samples);
    rows.push(Row {
        what: "decoder, one Block per 60 Hz tick (Auto)",
        typhon: format!("{:.1} M events/s", decode_small / 1e6),
        tracy: "-".into(),
        puffin: "-".into(),
        target: "-".into(),
        met: None,
    });
    rows.push(Row {
        what: "decoder, full Blocks (Auto)",
        typhon: format!(
            "{:.1} M events/s (Off: {:.1})",
            decode / 1e6,
            decode_off / 1e6
        ),
        tracy: "-".into(),
        puffin: "-".into(),
        target: ">= 100 M events/s".into(),
        met: Some(decode >= 100e6),
    });
    rows
}

/// typhon-live beside Tracy and puffin, in one run on one machine: the
/// whole table, or one part of it.
#[derive(clap::Parser)]
#[command(name = "typhon-live-bench")]
struct Options {
    /// Fewer samples and shorter runs: the same table within about a
    /// minute, to see that it runs, not to quote.
    #[arg(long)]
    quick: bool,
    /// Only the end-to-end ladder: each column (default rings, 64 Ki
    /// rings, the live view's model, puffin_http) climbed from 0.25 M to
    /// 64 M events/s until its first lossy rung, and what stopped it.
    #[arg(long)]
    ladder: bool,
    /// Only the end-to-end rates, three times each per rate and ring size.
    #[arg(long)]
    e2e: bool,
    /// Only the live view's model against the exporter.
    #[arg(long)]
    keep_up: bool,
    /// Only the relay under load (4 sources, 4 viewers).
    #[arg(long)]
    relay: bool,
    /// With `--relay`: this many viewers of the relay. Fewer leave more
    /// of a small machine to the relay itself, which tells its latency
    /// from the viewers' competing for the same cores.
    #[arg(long, value_name = "N", default_value_t = relay::VIEWERS)]
    relay_viewers: usize,
    /// Only the relay's /metrics scraped under attack (500 slowloris, 50
    /// non-readers, a 1 MiB head).
    #[arg(long)]
    relay_attack: bool,
    /// Only the browser viewer's rows, in headless Chromium: decode plus
    /// model as wasm, the first frame drawn, the bundle's size.
    #[arg(long)]
    web: bool,
    /// Only the sizes and conversion speeds of these trace files as
    /// Perfetto and Chrome JSON.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    formats: Vec<String>,
    /// Only the compression, wire-size and decoder rows.
    #[arg(long)]
    codecs: bool,
    /// Only an axum service under load: requests per second with no
    /// subscriber, with typhon-live's `tracing` layer, with tracing-tracy's.
    #[arg(long)]
    service: bool,
    /// The table's service row alone, as one line of three numbers: the
    /// table runs it in a process of its own.
    #[arg(long, hide = true)]
    service_row: bool,
    /// Only the flight recorder's rows: the exporter thread's CPU at 1 M
    /// spans/s (recorder on against off, alternated runs), peak RSS
    /// against its bound, a capture's latency, a trigger storm.
    #[arg(long)]
    recorder: bool,
    /// Only each lane's CPU samples: the exporter thread's CPU with 64
    /// lanes sampled every 10 ms, against sampling off, alternated runs.
    #[arg(long)]
    cpu_samples: bool,
    /// Only the memory rows: what counting allocations and sampling their
    /// sites cost an allocation-heavy program (beside Tracy's memory
    /// profiling), the sites' accuracy, and how soon the demo's leak is
    /// found.
    #[arg(long)]
    memory: bool,
    /// Only `compare`'s rows: false alarms over A/A pairs (synthetic and
    /// real demo runs), power against a 10 % slower system, its speed.
    #[arg(long)]
    compare: bool,
    /// Only the call stacks' rows: 16 busy threads sampled at 1 kHz
    /// (frame pointers, copied stacks) against off, a span's cost, a
    /// sample's latency to a viewer, a first-seen address's cost, and the
    /// shares against `perf` itself.
    #[arg(long)]
    stacks: bool,
    /// The recorder's memory row, on or off, in a process of its own: its
    /// peak RSS and largest capture, as two numbers.
    #[arg(long, hide = true, value_name = "on|off")]
    recorder_memory_row: Option<String>,
}

fn main() {
    let options = <Options as clap::Parser>::parse();
    let quick = options.quick;
    if options.ladder {
        let seconds = if quick { 1 } else { 10 };
        let columns: [(&str, usize, RunAt); 3] = [
            ("default rings", DEFAULT_RING_EVENTS, live::run_at),
            ("64 Ki rings", MAX_RING_EVENTS, live::run_at),
            ("the live view's model", MAX_RING_EVENTS, live::model_run_at),
        ];
        let mut said = Vec::new();
        for (column, rings, run_at) in columns {
            said.push(format!(
                "{column}: {}",
                lossless_ladder(seconds, rings, run_at).says()
            ));
        }
        let (puffin, first_lossy) = puffin_ladder(seconds);
        let up_to = puffin.map_or("below 0.25 M".into(), |r| format!(">= {:.2} M", r / 1e6));
        said.push(match first_lossy {
            Some((rate, why)) => {
                format!("puffin_http: {up_to} scopes/s; at {} M: {why}", rate / 1e6)
            }
            None => format!("puffin_http: {up_to} scopes/s, the ladder's top"),
        });
        for line in said {
            println!("{line} ({seconds} s runs)");
        }
        return;
    }
    if options.e2e {
        for ring_events in [DEFAULT_RING_EVENTS, MAX_RING_EVENTS] {
            // The ladder's rungs from 1 M to 32 M.
            for &rate in &LADDER[2..8] {
                for _ in 0..3 {
                    let duration = Duration::from_secs(if quick { 1 } else { 10 });
                    report(&live::run_at(rate, duration, ring_events), ring_events);
                }
            }
        }
        return;
    }
    if options.keep_up {
        let seconds = if quick { 1 } else { 10 };
        let stream = typhon_live_tests::exporter_stream(
            if quick { 500 } else { 5_000 },
            1 << 20,
            Compression::Auto,
        );
        let ingest = model_ingest(&stream, if quick { 3 } else { 11 });
        // The timeline over that whole stream's history.
        let mut model = typhon_live_model::Model::default();
        let mut buf = vec![0u8; 16 << 20];
        let mut decoder = Decoder::new(&mut buf);
        let mut rest = &stream[..];
        while !rest.is_empty() {
            let n = decoder.feed(rest);
            rest = &rest[n..];
            while let Ok(Some(frame)) = decoder.next() {
                let _ = model.on_frame(&frame, typhon_live_tui::uptime::now());
            }
        }
        model.flush_history();
        println!(
            "timeline draw, 200 x 40, over {} records ({:.1} MiB): last 4 ms {:.2} ms, the whole history {:.2} ms",
            model.history().records(),
            model.history().bytes() as f64 / (1 << 20) as f64,
            timeline_draw_ms(&model, Some(4_000_000)),
            timeline_draw_ms(&model, None)
        );
        let keep_up = lossless_ladder(seconds, MAX_RING_EVENTS, live::model_run_at);
        println!("{}", keep_up_row(&keep_up, ingest).typhon);
        return;
    }
    if options.relay {
        relay::print(quick, options.relay_viewers);
        return;
    }
    if options.relay_attack {
        relay_attack::print();
        return;
    }
    if options.web {
        web::print(quick);
        return;
    }
    if !options.formats.is_empty() {
        formats::print(&options.formats, if quick { 3 } else { 11 });
        return;
    }
    if options.codecs {
        print_table(quick, codec_rows(quick));
        return;
    }
    if options.service {
        service::print(quick);
        return;
    }
    if options.service_row {
        service::print_row(quick);
        return;
    }
    if options.recorder {
        print_table(quick, flight_rows(quick));
        return;
    }
    if options.cpu_samples {
        print_table(quick, cpu_rows(quick));
        return;
    }
    if options.memory {
        print_table(quick, memory_rows(quick));
        return;
    }
    if options.compare {
        print_table(quick, verdict::rows(quick));
        return;
    }
    if options.stacks {
        print_table(quick, stacks::rows(quick));
        return;
    }
    if let Some(on) = options.recorder_memory_row {
        let seconds = if quick { 5 } else { 10 };
        flight::print_memory_row(on == "on", Duration::from_secs(seconds));
        return;
    }
    let settings = Settings {
        samples: if quick { 101 } else { 1001 },
    };
    let mut rows = Vec::new();

    // Disabled cost first, before any profiler runs.
    let off = per_iteration(settings.samples, typhon_span, || {});

    let profiler =
        Profiler::start(&ProfilerConfig::default(), &Metadata::default()).expect("typhon profiler");
    let typhon_one = per_iteration(settings.samples, typhon_span, pause);
    let typhon_tracing = per_tracing(
        tracing_subscriber::registry().with(typhon_live_tracing::TyphonLayer::new()),
        tracing_span,
        settings.samples,
        pause,
    );
    let typhon_task = per_tracing(
        tracing_subscriber::registry().with(typhon_live_tracing::TyphonLayer::new()),
        tracing_task,
        settings.samples,
        pause,
    );
    // The subscriber's own cost, no layer: what any tracing layer adds to.
    let registry_alone = per_tracing(
        tracing_subscriber::registry(),
        tracing_span,
        settings.samples,
        || {},
    );
    let floor_one = per_iteration(settings.samples, floor, || {});
    let typhon_all =
        per_iteration_all_threads(settings.samples / 4 + 1, || Box::new(typhon_span), pause);
    drop(profiler);

    // End to end, latency and memory: typhon-live only, before Tracy's
    // client starts (it would grow the RSS measured here).
    let seconds = if quick { 1 } else { 10 };
    let default_rings = lossless_ladder(seconds, DEFAULT_RING_EVENTS, live::run_at);
    let large_rings = lossless_ladder(seconds, MAX_RING_EVENTS, live::run_at);
    // The live view's model as the viewer, spans as the events.
    let keep_up = lossless_ladder(seconds, MAX_RING_EVENTS, live::model_run_at);
    let ingest = model_ingest(
        &typhon_live_tests::exporter_stream(
            if quick { 500 } else { 5_000 },
            1 << 20,
            Compression::Auto,
        ),
        if quick { 3 } else { 11 },
    );
    let (growth, unwatched_spans) =
        live::rss_growth_unwatched(Duration::from_secs(if quick { 5 } else { 60 }));

    // Before Tracy's client starts: its thread keeps a core busy with the
    // queue that grows without a viewer, and would slow these rows down.
    let codec = codec_rows(quick);
    let service = service::busy_service_alone(quick);

    let _tracy = tracy_client::Client::start();
    // Tracy with nobody attached, 1 M spans/s: its queue grows.
    let tracy_seconds = if quick { 2 } else { 5 };
    let tracy_growth = {
        let before = live::rss();
        let started = Instant::now();
        let mut done = 0u64;
        while started.elapsed() < Duration::from_secs(tracy_seconds) {
            let due = (started.elapsed().as_secs_f64() * 1e6) as u64;
            while done < due {
                let _span = tracy_client::span!("unwatched");
                done += 1;
            }
        }
        live::rss().saturating_sub(before)
    };
    // Tracy queues without a viewer: keep its run short.
    let tracy_one = per_iteration(settings.samples / 4 + 1, tracy_span, || {});
    let tracy_all =
        per_iteration_all_threads(settings.samples / 8 + 1, || Box::new(tracy_span), || {});
    let tracy_tracing = per_tracing(
        tracing_subscriber::registry().with(tracing_tracy::TracyLayer::default()),
        tracing_span,
        settings.samples / 4 + 1,
        || {},
    );
    let tracy_task = per_tracing(
        tracing_subscriber::registry().with(tracing_tracy::TracyLayer::default()),
        tracing_task,
        settings.samples / 4 + 1,
        || {},
    );

    let (puffin_lossless, puffin_first_lossy) = puffin_ladder(seconds);

    puffin::set_scopes_on(true);
    let puffin_one = per_iteration(settings.samples, puffin_span, puffin_frame);
    let puffin_all = per_iteration_all_threads(
        settings.samples / 4 + 1,
        || Box::new(puffin_span),
        puffin_frame,
    );
    puffin::set_scopes_on(false);

    rows.push(Row {
        what: "span begin+end, 1 thread",
        typhon: ns(typhon_one),
        tracy: ns(tracy_one),
        puffin: ns(puffin_one),
        target: format!(
            "<= 0.7 x tracy ({:.1}), <= 0.25 x puffin ({:.1})",
            0.7 * tracy_one,
            0.25 * puffin_one
        ),
        met: Some(typhon_one <= 0.7 * tracy_one && typhon_one <= 0.25 * puffin_one),
    });
    rows.push(Row {
        what: "span begin+end, all threads",
        typhon: ns(typhon_all),
        tracy: ns(tracy_all),
        puffin: ns(puffin_all),
        target: format!(
            "<= 0.7 x tracy ({:.1}), <= 0.25 x puffin ({:.1})",
            0.7 * tracy_all,
            0.25 * puffin_all
        ),
        met: Some(typhon_all <= 0.7 * tracy_all && typhon_all <= 0.25 * puffin_all),
    });
    rows.push(Row {
        what: "tracing span via its layer, 1 thread",
        typhon: format!(
            "{} (registry alone {}, direct API {})",
            ns(typhon_tracing),
            ns(registry_alone),
            ns(typhon_one)
        ),
        tracy: format!("{} (tracing-tracy 0.11)", ns(tracy_tracing)),
        puffin: "-".into(),
        target: format!("<= 0.7 x tracing-tracy ({:.1})", 0.7 * tracy_tracing),
        met: Some(typhon_tracing <= 0.7 * tracy_tracing),
    });
    rows.push(Row {
        what: "tracing span of 3 polls via its layer (one task span)",
        typhon: format!(
            "{} ({:.2}x tracing-tracy)",
            ns(typhon_task),
            typhon_task / tracy_task
        ),
        tracy: format!("{} (three zones)", ns(tracy_task)),
        puffin: "-".into(),
        target: "-".into(),
        met: None,
    });
    rows.push(Row {
        what: "span vs floor (2 clock reads)",
        typhon: format!("{:.2}x ({})", typhon_one / floor_one, ns(floor_one)),
        tracy: "-".into(),
        puffin: "-".into(),
        target: "<= 1.5x".into(),
        met: Some(typhon_one <= 1.5 * floor_one),
    });
    rows.push(Row {
        what: "span, profiler off",
        typhon: ns(off),
        tracy: "-".into(),
        puffin: "-".into(),
        target: "<= 1 ns".into(),
        met: Some(off <= 1.0),
    });

    rows.extend(codec);
    rows.push(Row {
        what: "end to end, highest rate without a drop",
        typhon: format!(
            "with RingEvents {MAX_RING_EVENTS}: {}; with the default {DEFAULT_RING_EVENTS}: {} ({seconds} s runs)",
            large_rings.says(),
            default_rings.says()
        ),
        tracy: "-".into(),
        puffin: {
            let up_to = puffin_lossless.map_or("below 0.25 M scopes/s".into(), |r| {
                format!(">= {:.3} M scopes/s", r / 1e6)
            });
            match puffin_first_lossy {
                Some((rate, why)) => format!("{up_to}; at {} M: {why}", rate / 1e6),
                None => format!("{up_to}, the ladder's top"),
            }
        },
        target: match (large_rings.lossless, puffin_lossless) {
            (Some(t), Some(p)) => format!("not below puffin's; ratio {:.1}x", t / p),
            _ => "not below puffin's".into(),
        },
        met: match (large_rings.lossless, puffin_lossless) {
            (Some(t), Some(p)) => Some(t >= p),
            (Some(_), None) => Some(true),
            _ => Some(false),
        },
    });
    rows.push(keep_up_row(&keep_up, ingest));
    if let Some(run) = &default_rings.at_1m {
        let (p50, p99) = (run.percentile(0.5), run.percentile(0.99));
        rows.push(Row {
            what: "latency record->decoded at 1 M/s",
            typhon: format!("p50 {p50:.2} ms, p99 {p99:.2} ms"),
            tracy: "-".into(),
            puffin: "-".into(),
            target: "p50 <= 2 ms, p99 <= 10 ms".into(),
            met: Some(p50 <= 2.0 && p99 <= 10.0),
        });
    }
    rows.push(Row {
        what: "RSS growth, no viewer, max rate",
        typhon: format!(
            "{:.2} MiB over {} s ({:.0} M spans)",
            growth as f64 / (1u64 << 20) as f64,
            if quick { 5 } else { 60 },
            unwatched_spans as f64 / 1e6
        ),
        tracy: format!(
            "{:.1} MiB over {tracy_seconds} s at 1 M spans/s",
            tracy_growth as f64 / (1u64 << 20) as f64
        ),
        puffin: "-".into(),
        target: "< 1 MiB".into(),
        met: Some(growth < 1 << 20),
    });

    rows.push(Row {
        what: "axum service, 32 clients, requests/s via the layer",
        typhon: format!(
            "{:.0} ({:.3} x {:.0} with no subscriber)",
            service.typhon,
            service.typhon / service.none,
            service.none
        ),
        tracy: format!(
            "{:.0} ({:.3} x)",
            service.tracy,
            service.tracy / service.none
        ),
        puffin: "-".into(),
        target: ">= 0.95 x no subscriber".into(),
        met: Some(service.typhon >= 0.95 * service.none),
    });
    rows.extend(flight_rows(quick));
    rows.extend(cpu_rows(quick));
    rows.extend(memory_rows(quick));
    print_table(quick, rows);
}

/// Memory by lane and allocation sites (issue 40): an allocation-heavy
/// program's wall time over `System`, counted by `Tracking`, with sites
/// sampled at the default rate, and under Tracy's `ProfiledAllocator`,
/// alternated runs; each site's estimate against the truth; the demo's
/// leak found live.
fn memory_rows(quick: bool) -> Vec<Row> {
    let (runs, iterations) = if quick { (3, 5_000) } else { (7, 40_000) };
    let row = Row::ours;
    let not_built = || "- (`cargo build --release -p typhon-live-bench --bins` first)".to_string();
    let mut rows = Vec::new();
    match memory::workload(runs, iterations) {
        Some([system, counted, sampled, tracy]) => {
            let slower = |t: f64| (t / system - 1.0) * 100.0;
            let ms = |ns: f64| ns / 1e6;
            rows.push(Row {
                tracy: format!(
                    "{:+.1} % ({:.0} ms; ProfiledAllocator, no stacks, no viewer)",
                    slower(tracy),
                    ms(tracy)
                ),
                ..row(
                    "allocation-heavy program (2 threads build and drop Vecs and Strings): memory counted by lane",
                    format!(
                        "{:+.1} % ({:.0} ms against {:.0} over System; median of {runs} alternated runs)",
                        slower(counted),
                        ms(counted),
                        ms(system)
                    ),
                    "<= +3 %",
                    Some(slower(counted) <= 3.0),
                )
            });
            rows.push(row(
                "the same, sites sampled at the default 1 in 512 KiB",
                format!("{:+.1} % ({:.0} ms)", slower(sampled), ms(sampled)),
                "<= +5 %",
                Some(slower(sampled) <= 5.0),
            ));
        }
        None => rows.push(row(
            "allocation-heavy program: memory counted by lane",
            not_built(),
            "<= +3 %",
            None,
        )),
    }
    let seconds = if quick { 3 } else { 10 };
    match memory::accuracy(seconds) {
        Some(sites) => {
            let kept: Vec<&(String, u64, u64)> = sites.iter().filter(|s| s.1 > 0).collect();
            let error = |s: &(String, u64, u64)| (s.2 as f64 / s.1 as f64 - 1.0) * 100.0;
            let worst = kept.iter().map(|s| error(s).abs()).fold(0.0, f64::max);
            let each: Vec<String> = (kept.iter())
                .map(|s| format!("{} MiB {:+.1} %", s.1 >> 20, error(s)))
                .collect();
            let churned = sites.iter().find(|s| s.1 == 0).map_or(0, |s| s.2);
            rows.push(row(
                "three sites' live bytes, estimated at 1 in 512 KiB, after the run",
                format!(
                    "{} ({seconds} s; a churning site: {:.1} MiB)",
                    each.join(", "),
                    churned as f64 / (1 << 20) as f64
                ),
                "each within 10 %",
                Some(worst <= 10.0),
            ));
        }
        None => rows.push(row(
            "three sites' live bytes",
            not_built(),
            "each within 10 %",
            None,
        )),
    }
    // The first sample of the leak comes after a random interval: the
    // median of three runs, and the worst.
    let leak_seconds = if quick { 10 } else { 60 };
    let mut leaks: Vec<(f64, f64)> = (0..3)
        .filter_map(|_| memory::leak_found(1 << 20, leak_seconds))
        .collect();
    leaks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let median = leaks.get(leaks.len() / 2).copied();
    rows.push(row(
        "`demo --leak 1048576`: its site the top growing one, watched live",
        match (median, leaks.last()) {
            (Some((at, _)), Some((worst, _))) => format!(
                "after {at:.1} s (median of {} runs of {leak_seconds} s; worst {worst:.1} s), then on top in {:.0} % of the summaries (the least of the runs)",
                leaks.len(),
                leaks.iter().map(|l| l.1).fold(1.0, f64::min) * 100.0
            ),
            _ => "- (not found; or `cargo build --release -p typhon-live-cli` first)".into(),
        },
        "within 2 s",
        median.map(|(at, _)| at <= 2.0),
    ));
    rows
}

/// Each lane's CPU (issue 39): the exporter thread's CPU with 64 lanes
/// sampled every 10 ms against sampling off, what tracing their switches
/// adds, the same for the demo, and a span's cost with both on and off;
/// medians of alternated runs.
fn cpu_rows(quick: bool) -> Vec<Row> {
    let (runs, seconds) = if quick { (3, 1) } else { (5, 3) };
    let row = Row::ours;
    let no_proc = || "- (no /proc: Linux only)".to_string();
    let kb = |bytes: f64| bytes / 1e3;
    let mut rows = Vec::new();
    let duration = Duration::from_secs(seconds);
    let lanes = cpu::alternated(runs, |s| cpu::run(s, duration, false));
    let traced = cpu::alternated(runs, |s| cpu::run(s, duration, true));
    match lanes.zip(traced) {
        Some(([off, samples, switches], [t_off, t_samples, t_switches])) => {
            let added = samples.exporter_ms - off.exporter_ms;
            rows.push(row(
                "each lane's CPU sampled, 64 lanes every 10 ms, exporter CPU",
                format!(
                    "{added:+.1} ms/s ({:.1} on, {:.1} off); median of {runs} alternated {seconds} s runs",
                    samples.exporter_ms, off.exporter_ms,
                ),
                "<= +20 ms/s (2 % of a core)",
                Some(added <= 20.0),
            ));
            rows.push(row(
                "the same, written to a trace file: exporter CPU, bytes",
                format!(
                    "{:+.1} ms/s, {:+.1} KB/s (the file's writes: 100 frames/s, flushed each)",
                    t_samples.exporter_ms - t_off.exporter_ms,
                    kb(t_samples.bytes - t_off.bytes)
                ),
                "measured",
                None,
            ));
            let per_switch = (t_switches.bytes - t_samples.bytes) / t_switches.switches.max(1.0);
            rows.push(row(
                "and their switches traced (64 threads sleeping every 20 ms), exporter CPU",
                format!(
                    "{:+.1} ms/s over the samples ({:+.1} with the file), {:.0} switches/s, {:+.1} KB/s ({per_switch:.1} B a switch)",
                    switches.exporter_ms - samples.exporter_ms,
                    t_switches.exporter_ms - t_samples.exporter_ms,
                    t_switches.switches,
                    kb(t_switches.bytes - t_samples.bytes)
                ),
                "measured",
                None,
            ));
        }
        None => rows.push(row(
            "each lane's CPU sampled, 64 lanes every 10 ms, exporter CPU",
            no_proc(),
            "<= +20 ms/s (2 % of a core)",
            None,
        )),
    }
    let demo_seconds = if quick { 4 } else { 8 };
    let demo = cpu::alternated(if quick { 1 } else { 3 }, |s| {
        cpu::demo(s, Duration::from_secs(demo_seconds))
    });
    rows.push(row(
        "the demo (4 workers): samples, then switches too",
        match demo {
            Some([off, samples, switches]) => format!(
                "samples {:+.1} ms/s, {:+.1} KB/s; switches {:+.1} ms/s, {:.0} switches/s, {:+.1} KB/s",
                samples.exporter_ms - off.exporter_ms,
                kb(samples.bytes - off.bytes),
                switches.exporter_ms - samples.exporter_ms,
                switches.switches,
                kb(switches.bytes - samples.bytes)
            ),
            None => "- (Linux only, and `cargo build --release -p typhon-live-cli` first)".into(),
        },
        "measured",
        None,
    ));
    // What the recording thread pays: a span, with each lane's CPU
    // sampled and its switches traced, and without.
    let samples = if quick { 101 } else { 1001 };
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        for (sampled, into) in [(false, &mut off), (true, &mut on)] {
            let config = ProfilerConfig {
                cpu_samples: sampled.then(|| Duration::from_millis(10)),
                cpu_switches: sampled,
                ..ProfilerConfig::default()
            };
            let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
            into.push(per_iteration(samples, typhon_span, pause));
            profiler.stop().expect("stop");
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (on, off) = (median(&mut on), median(&mut off));
    rows.push(row(
        "span begin+end, 1 thread, CPU samples and switches on",
        format!("{on:.1} ns (off: {off:.1} ns)"),
        "unchanged (<= off + 10 %)",
        Some(on <= off * 1.1),
    ));
    rows
}

/// The flight recorder's rows (docs/RECORDER.md): its cost on the
/// exporter thread at 1 M spans/s, medians of alternated runs with it off
/// and on, alone (it is then the only reader: the Blocks are encoded for
/// it) and beside a trace file (its own part), with a tick trigger (the
/// recorder skims) and with a span trigger (it reads every span); its
/// peak RSS against its bound; a capture's latency; a trigger storm.
fn flight_rows(quick: bool) -> Vec<Row> {
    let (runs, seconds) = if quick { (3, 1) } else { (5, 3) };
    let row = |what, typhon, target: String, met| Row::ours(what, typhon, &target, met);
    let no_proc = || "- (no /proc: Linux only)".to_string();
    let mut rows: Vec<Row> = [
        (false, "tick > 1h", "flight recorder alone, tick trigger, exporter CPU at 1 M spans/s", "alone", true),
        (true, "tick > 1h", "flight recorder beside a trace file, tick trigger, exporter CPU at 1 M spans/s", "beside a trace file", true),
        (true, "span(bench.flight) > 1h", "flight recorder beside a trace file, span trigger, exporter CPU at 1 M spans/s", "span triggers read every span", false),
    ]
    .into_iter()
    .map(|(file, trigger, what, beside, targeted)| {
        let measured = flight::alternated(
            1_000_000.0,
            Duration::from_secs(seconds),
            runs,
            trigger,
            file,
        );
        let (typhon, met) = match measured {
            Some((off, on)) => (
                format!(
                    "+{:.1} ms/s ({on:.1} on, {off:.1} off; median of {runs} alternated {seconds} s runs)",
                    on - off
                ),
                targeted.then_some(on - off <= 10.0),
            ),
            None => (no_proc(), None),
        };
        let target = if targeted {
            format!("<= +10 ms/s ({beside})")
        } else {
            format!("- ({beside})")
        };
        row(what, typhon, target, met)
    })
    .collect();

    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    rows.push(match flight::memory(quick) {
        Some((off, on, largest, bound)) => {
            let more = on.saturating_sub(off);
            row(
                "flight recorder, peak RSS more than with it off (8 MiB kept, 8 MiB captures, one every 2 s)",
                format!(
                    "+{:.1} MiB ({:.1} on, {:.1} off; largest capture {:.1} MiB)",
                    mib(more),
                    mib(on),
                    mib(off),
                    mib(largest)
                ),
                format!("<= bound {:.0} MiB + 5 %", mib(bound)),
                Some(more as f64 <= bound as f64 * 1.05),
            )
        }
        None => row("flight recorder, peak RSS", no_proc(), "-".into(), None),
    });

    let mut latencies = flight::latency(5);
    latencies.sort();
    rows.push(
        match (latencies.get(latencies.len() / 2), latencies.last()) {
            (Some(median), Some(worst)) => row(
                "flight recorder, capture whole after its window ends (5 asked at 1 M spans/s)",
                format!(
                    "median {:.0} ms, worst {:.0} ms",
                    median.as_secs_f64() * 1e3,
                    worst.as_secs_f64() * 1e3
                ),
                "<= 1 s".into(),
                Some(*worst <= Duration::from_secs(1)),
            ),
            _ => row(
                "flight recorder, capture latency",
                "- (no capture was written)".into(),
                "<= 1 s".into(),
                Some(false),
            ),
        },
    );

    let storm = flight::storm(Duration::from_secs(if quick { 20 } else { 60 }));
    rows.push(row(
        "flight recorder, trigger storm (every 60 Hz tick fires)",
        format!(
            "{} s: {} ticks, {} fired, {} captures written; {} files, {:.2} MiB left",
            storm.duration.as_secs(),
            storm.ticks,
            storm.fired,
            storm.written,
            storm.files,
            mib(storm.bytes)
        ),
        format!(
            "<= {} files, {:.0} MiB, 1 capture per {} s cooldown",
            storm.max_files,
            mib(storm.max_bytes),
            storm.cooldown.as_secs()
        ),
        Some(storm.within_bounds()),
    ));
    rows
}

/// The table, with the machine it ran on.
fn print_table(quick: bool, rows: Vec<Row>) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    println!(
        "typhon-live-bench ({}; {} cores; {cpu}); medians, all columns from this run\n",
        if quick { "quick" } else { "full" },
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("| measure | typhon-live | tracy-client 0.18 | puffin 0.19 | target | met |");
    println!("|---|---|---|---|---|---|");
    for r in rows {
        let met = match r.met {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            r.what, r.typhon, r.tracy, r.puffin, r.target, met
        );
    }
}

#[cfg(test)]
mod tests {
    use super::Options;
    use clap::{CommandFactory, Parser};

    #[test]
    fn help_is_help_and_the_parts_parse() {
        Options::command().debug_assert();
        let help = Options::try_parse_from(["typhon-live-bench", "--help"]).err();
        assert_eq!(
            help.map(|e| e.kind()),
            Some(clap::error::ErrorKind::DisplayHelp)
        );
        let options = Options::try_parse_from([
            "typhon-live-bench",
            "--formats",
            "a.tlt",
            "b.tlt",
            "--quick",
        ])
        .unwrap();
        assert_eq!(options.formats, ["a.tlt", "b.tlt"]);
        assert!(options.quick && !options.relay);
    }
}
