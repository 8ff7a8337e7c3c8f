//! Every consumer reads a stream the one way the reader means it
//! (FORMAT.md, "Reading a stream"): the same crafted streams through the
//! view model (`view --json`'s summary), the relay's `/metrics` and its
//! OTLP slow-tick traces, `compare`'s samples, the Chrome and Perfetto
//! converters and a flight recorder's triggers, and the same answers out
//! of each. Before the reader paired ticks, a stream of 120 ticks with
//! one start and one end lost read as 119 ticks in `check` and 118 in
//! `/metrics`.

#[path = "../../convert/tests/reader/mod.rs"]
mod perfetto_reader;

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_proto::tonic::trace::v1::Span as OtlpSpan;
use typhon_live_core::block::block_scratch_len;
use typhon_live_core::catchup::write_catchup_of;
use typhon_live_core::init::write_init;
use typhon_live_core::{
    BlockBuilder, Compression, Event, LaneId, LaneInfo, LaneKind, Metadata, NameTable, OpenLane,
    Shutdown,
};
use typhon_live_monitoring::metrics::{Metrics, SourceMetrics};
use typhon_live_monitoring::otlp::{queue, Export, TickTracer};
use typhon_live_reader::owned;
use typhon_live_tests::{block_frame, each_frame};

const MS: u64 = 1_000_000;
/// Ticks longer than this are slow: a recorder trigger and the OTLP
/// tracer's bound.
const SLOW: u64 = 2 * MS;

/// A tick as a stream writes it: its lane, number, start, length and
/// overrun, and which of its halves are lost.
#[derive(Clone, Copy)]
struct Written {
    lane: LaneId,
    tick: u64,
    start: u64,
    length: u64,
    overrun: bool,
    start_lost: bool,
    end_lost: bool,
}

/// What every consumer must agree on.
#[derive(Clone, Debug, PartialEq)]
struct Ticks {
    whole: u64,
    without_start: u64,
    without_end: u64,
    overruns: u64,
    /// Whole ticks' durations, added up and the longest (ns).
    total: u64,
    longest: u64,
    /// Whole ticks longer than [`SLOW`], or overrunning.
    slow: u64,
}

/// What the written ticks mean, by FORMAT.md's rule.
fn expected(ticks: &[Written]) -> Ticks {
    let whole: Vec<&Written> = ticks
        .iter()
        .filter(|t| !t.start_lost && !t.end_lost)
        .collect();
    Ticks {
        whole: whole.len() as u64,
        without_start: ticks.iter().filter(|t| t.start_lost && !t.end_lost).count() as u64,
        without_end: ticks.iter().filter(|t| t.end_lost && !t.start_lost).count() as u64,
        overruns: ticks.iter().filter(|t| t.overrun && !t.end_lost).count() as u64,
        total: whole.iter().map(|t| t.length).sum(),
        longest: whole.iter().map(|t| t.length).max().unwrap_or(0),
        slow: whole
            .iter()
            .filter(|t| t.length > SLOW || t.overrun)
            .count() as u64,
    }
}

/// A session's stream: an Init of lanes "Main" and "Render", a Catch-up,
/// then a Block per `run` (lost halves left out and reported as drops),
/// runs after the first behind a repeated Init; a Shutdown unless `cut`.
fn stream(runs: &[Vec<Vec<Written>>], cut: bool) -> Vec<u8> {
    let mut names: NameTable<8, 128> = NameTable::new();
    let (main, render, frame) = (
        names.intern("Main").unwrap(),
        names.intern("Render").unwrap(),
        names.intern("Frame").unwrap(),
    );
    let lanes = [(0, main, LaneKind::Main), (1, render, LaneKind::Worker)]
        .map(|(id, name, kind)| LaneInfo { id, name, kind });
    let meta = Metadata {
        ticks_per_second: 1_000_000_000,
        session_id: 53,
        process_name: "agreement",
        ..Metadata::default()
    };
    let mut out = vec![0u8; 1 << 16];
    let mut bytes = Vec::new();
    let (mut seq, mut dropped) = (0u32, 0u64);
    let mut scratch = vec![0u8; block_scratch_len(64)];
    for (n, blocks) in runs.iter().enumerate() {
        let len = write_init(&mut out, seq, &meta, &names, lanes.into_iter()).unwrap();
        bytes.extend_from_slice(&out[..len]);
        if n == 0 {
            let open = lanes.map(|info| OpenLane {
                info,
                name: if info.id == 0 { "Main" } else { "Render" },
                open_depth: 0,
                open: &[],
            });
            let at = blocks[0][0].start;
            let len = write_catchup_of(&mut out, seq, at, open.into_iter()).unwrap();
            bytes.extend_from_slice(&out[..len]);
            seq += 1;
        }
        for ticks in blocks {
            let mut block = BlockBuilder::new(&mut scratch);
            let mut drops: Vec<(LaneId, u32)> = Vec::new();
            for t in ticks {
                let (lane, tick, start, end) = (t.lane, t.tick, t.start, t.start + t.length);
                let lost = u32::from(t.start_lost) + u32::from(t.end_lost);
                if lost > 0 {
                    drops.push((lane, lost));
                    dropped += u64::from(lost);
                }
                if !t.start_lost {
                    block.push(lane, &Event::TickStart { time: start, tick });
                }
                let span = Event::Span {
                    start,
                    duration: t.length,
                    name: frame,
                    id: tick as u32 + 1,
                    parent: 0,
                    arg: None,
                };
                block.push(lane, &span);
                if !t.end_lost {
                    let overrun = t.overrun;
                    block.push(
                        lane,
                        &Event::TickEnd {
                            time: end,
                            tick,
                            overrun,
                        },
                    );
                }
            }
            bytes.extend(block_frame(&block, seq, &drops, Compression::Lz4));
            seq += 1;
        }
    }
    if !cut {
        let last = runs.last().and_then(|r| r.last()).map_or(0, |b| b[0].start);
        let shutdown = Shutdown {
            time: last + 10 * MS,
            frames_sent: u64::from(seq),
            frames_dropped: 0,
            events_dropped: dropped,
        };
        let len = shutdown.write(&mut out, seq).unwrap();
        bytes.extend_from_slice(&out[..len]);
    }
    bytes
}

/// 120 ticks 4 ms apart on "Main" (1 ms, or 3 ms and overrunning every
/// 25th) and, with the same numbers, on "Render" (1.2 ms, 0.5 ms later):
/// Main's tick 30 and 75 (an overrun) lose their starts and 60 its end,
/// Render's 90 its end; Main starts tick 120 and the session ends before
/// it does. A Block a tick.
fn lost_halves() -> (Vec<Written>, Vec<Vec<Written>>) {
    let mut blocks = Vec::new();
    for n in 0..=120u64 {
        let at = 10 * MS + n * 4 * MS;
        let overrun = n % 25 == 0;
        let main = Written {
            lane: 0,
            tick: n,
            start: at,
            length: if overrun { 3 * MS } else { MS },
            overrun,
            start_lost: n == 30 || n == 75,
            end_lost: n == 60 || n == 120,
        };
        let mut block = vec![main];
        if n < 120 {
            block.push(Written {
                lane: 1,
                tick: n,
                start: at + MS / 2,
                length: 1_200_000,
                overrun: false,
                start_lost: false,
                end_lost: n == 90,
            });
        }
        blocks.push(block);
    }
    (blocks.iter().flatten().copied().collect(), blocks)
}

/// A device that rebooted under its session id: 30 ticks 100 ms apart on
/// "Main", tick 30 started when it went down; after a repeated Init its
/// clock starts again near 0 (over a second back: a restart), and 20
/// more ticks come.
fn restarted() -> (Vec<Written>, Vec<Vec<Vec<Written>>>) {
    let tick = |n: u64, at: u64, end_lost: bool| Written {
        lane: 0,
        tick: n,
        start: at,
        length: if n % 7 == 3 { 5 * MS } else { MS },
        overrun: n % 7 == 3,
        start_lost: false,
        end_lost,
    };
    let first: Vec<Vec<Written>> = (0..=30)
        .map(|n| vec![tick(n, 10 * MS + n * 100 * MS, n == 30)])
        .collect();
    let second: Vec<Vec<Written>> = (0..20)
        .map(|n| vec![tick(n, MS + n * 4 * MS, false)])
        .collect();
    let written = first.iter().chain(&second).flatten().copied().collect();
    (written, vec![first, second])
}

/// The view model's reading (`view --json`'s `ticks`).
fn model(bytes: &[u8]) -> Ticks {
    let mut model = typhon_live_model::Model::default();
    each_frame(bytes, |frame| {
        model.on_frame(frame, Duration::ZERO).unwrap();
    });
    model.flush_history();
    let summary = model.summary(Duration::ZERO);
    let ticks = summary.ticks;
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["ticks"]["whole"], ticks.whole, "--json says it");
    let chunks = model.history().chunks();
    let durations: Vec<u64> = (chunks.iter().flat_map(|c| c.ticks.iter()))
        .map(|t| t.duration())
        .collect();
    assert_eq!(durations.len() as u64, ticks.held);
    Ticks {
        whole: ticks.whole,
        without_start: ticks.without_start,
        without_end: ticks.without_end,
        overruns: ticks.overruns,
        total: durations.iter().sum(),
        longest: durations.iter().copied().max().unwrap_or(0),
        slow: (chunks.iter().flat_map(|c| c.ticks.iter()))
            .filter(|t| t.duration() > SLOW || t.overrun)
            .count() as u64,
    }
}

/// The relay's reading of the stream as a source: `/metrics` (Prometheus
/// text) and the OTLP tracer's slow ticks' lengths.
fn relay(bytes: &[u8]) -> (Ticks, Vec<u64>) {
    let (metrics, trees) = relay_reading(bytes);
    // Each tree's root is its tick.
    let exported: Vec<u64> = (trees.iter())
        .map(|spans| spans[0].end_time_unix_nano - spans[0].start_time_unix_nano)
        .collect();
    let text = metrics.encode();
    let value = |series: &str| -> f64 {
        let series = format!("{series}{{source=\"s\"}}");
        let line = text.lines().find(|l| l.starts_with(&series));
        let line = line.unwrap_or_else(|| panic!("no {series} in\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let snapshot = metrics.snapshot();
    let otlp = &snapshot[0];
    assert_eq!(
        otlp.ticks.count,
        value("typhon_tick_duration_seconds_count") as u64
    );
    let ticks = Ticks {
        whole: value("typhon_tick_duration_seconds_count") as u64,
        without_start: value("typhon_ticks_without_start_total") as u64,
        without_end: value("typhon_ticks_without_end_total") as u64,
        overruns: value("typhon_tick_overruns_total") as u64,
        total: (value("typhon_tick_duration_seconds_sum") * 1e9).round() as u64,
        // The histogram keeps no maximum: the slow ticks' are compared.
        longest: 0,
        slow: exported.len() as u64,
    };
    (ticks, exported)
}

/// The relay's reading of `bytes` as a source's stream: its metrics, and
/// the OTLP tracer's slow-tick trees (each a tick's spans, the tick
/// first). A slow tick goes out with the next Block.
fn relay_reading(bytes: &[u8]) -> (Arc<Metrics>, Vec<Vec<OtlpSpan>>) {
    let metrics = Arc::new(Metrics::new());
    let mut source = SourceMetrics::new(Arc::clone(&metrics), "s");
    let (sender, exports) = queue();
    let slow = Duration::from_nanos(SLOW);
    let mut tracer = TickTracer::new("s", slow, sender, Arc::clone(&metrics));
    let mut reader = owned::Reader::default();
    each_frame(bytes, |frame| {
        reader
            // Every frame arrives at once, long after the Unix epoch.
            .read(frame, 1_700_000_000 * 1_000_000_000, |update, state| {
                source.update(&update, state.names());
                tracer.update(&update, state);
            })
            .unwrap();
    });
    let trees = exports
        .try_iter()
        .map(|export| {
            let Export::Traces(mut request) = export;
            std::mem::take(&mut request.resource_spans[0].scope_spans[0].spans)
        })
        .collect();
    (metrics, trees)
}

/// `compare`'s and `check`'s reading of the stream as a trace.
fn verdict(bytes: &[u8]) -> Ticks {
    let mut samples = typhon_live_verdict::samples::Samples::new();
    samples.read_trace("agreement.tlt", bytes);
    let side = samples.finish();
    let reading = &side.reading;
    let durations = &side
        .get(typhon_live_verdict::samples::TICKS)
        .unwrap()
        .values;
    assert_eq!(durations.len() as u64, reading.ticks);
    Ticks {
        whole: reading.ticks,
        without_start: reading.ticks_without_start,
        without_end: reading.ticks_without_end,
        overruns: reading.overruns,
        total: durations.iter().sum(),
        longest: durations.last().copied().unwrap_or(0),
        slow: 0,
    }
}

/// The Chrome converter's ticks: a whole one an `X` of category "tick",
/// one with a half lost an instant named for it.
fn chrome(bytes: &[u8]) -> Ticks {
    let converted = typhon_live_convert::chrome::chrome_trace(bytes);
    let events = converted.output["traceEvents"].as_array().unwrap().clone();
    let ticks: Vec<&serde_json::Value> = events.iter().filter(|e| e["cat"] == "tick").collect();
    let named = |name: &str| ticks.iter().filter(|e| e["name"] == name).count() as u64;
    let whole: Vec<u64> = (ticks.iter().filter(|e| e["ph"] == "X"))
        .map(|e| (e["dur"].as_f64().unwrap() * 1e3).round() as u64)
        .collect();
    let overran = |e: &&&serde_json::Value| e["args"]["overrun"] == true;
    Ticks {
        whole: whole.len() as u64,
        without_start: named("tick (its start was lost)"),
        without_end: named("tick (its end was lost)"),
        overruns: ticks.iter().filter(overran).count() as u64,
        total: whole.iter().sum(),
        longest: whole.iter().copied().max().unwrap_or(0),
        slow: (ticks.iter().filter(|e| e["ph"] == "X"))
            .filter(|e| e["dur"].as_f64().unwrap() * 1e3 > SLOW as f64 || overran(e))
            .count() as u64,
    }
}

/// The Perfetto converter's ticks, read back by an independent decoder:
/// slices on the lanes' Ticks tracks, instants there for lost halves.
fn perfetto(bytes: &[u8]) -> Ticks {
    let mut trace = Vec::new();
    typhon_live_convert::perfetto::write_perfetto(bytes, &mut trace).unwrap();
    let read = perfetto_reader::read(&trace);
    let whole: Vec<&perfetto_reader::Slice> = (read.slices.iter())
        .filter(|s| s.track.starts_with("Ticks"))
        .collect();
    let lone = |name: &str| {
        let on_ticks = read
            .instants
            .iter()
            .filter(|i| i.track.starts_with("Ticks"));
        on_ticks.filter(|i| i.name == name).count() as u64
    };
    let overran = |args: &[(String, String)]| {
        args.iter()
            .any(|a| a.0.ends_with("overrun") && a.1 == "true")
    };
    let lengths: Vec<u64> = whole.iter().map(|s| s.end - s.start).collect();
    Ticks {
        whole: whole.len() as u64,
        without_start: lone("tick (its start was lost)"),
        without_end: lone("tick (its end was lost)"),
        overruns: whole.iter().filter(|s| overran(&s.args)).count() as u64
            + (read.instants.iter())
                .filter(|i| i.name == "tick (its start was lost)" && overran(&i.args))
                .count() as u64,
        total: lengths.iter().sum(),
        longest: lengths.iter().copied().max().unwrap_or(0),
        slow: whole
            .iter()
            .filter(|s| s.end - s.start > SLOW || overran(&s.args))
            .count() as u64,
    }
}

/// How often a flight recorder's trigger fires on the stream.
fn fired(bytes: &[u8], trigger: &str) -> u64 {
    let settings = typhon_live_recorder::Settings::default();
    let mut recorder =
        typhon_live_recorder::Recorder::new(settings, vec![trigger.parse().unwrap()]);
    each_frame(bytes, |frame| recorder.frame(frame, 0));
    recorder.end();
    recorder.stats().fired
}

/// Every consumer's reading of `bytes` against what `written` means.
/// A file's readers end the ticks open at its end; the relay's reading
/// of a source (`live`) is never ended by the source going quiet, so it
/// is compared only where the stream ends with its Shutdown.
///
/// The view model counts every tick of the session, and holds (for their
/// durations) those of its last run: a restart's clock went back, and the
/// timeline is by time.
fn agree(bytes: &[u8], written: &[Written], last_run: &[Written], live: bool) {
    let want = expected(written);
    let held = expected(last_run);
    let without_slow = |t: Ticks| Ticks { slow: 0, ..t };
    let without_longest = |t: Ticks| Ticks { longest: 0, ..t };

    let whole = written.iter().filter(|t| !t.start_lost && !t.end_lost);
    let slow = whole.clone().filter(|t| t.length > SLOW || t.overrun);
    let mut slow: Vec<u64> = slow.map(|t| t.length).collect();
    slow.sort_unstable();
    let longer = whole.filter(|t| t.length > SLOW).count() as u64;

    let in_view = Ticks {
        total: held.total,
        longest: held.longest,
        slow: held.slow,
        ..want.clone()
    };
    assert_eq!(model(bytes), in_view, "the view model");
    if live {
        let (metrics, mut exported) = relay(bytes);
        assert_eq!(metrics, without_longest(want.clone()), "/metrics and OTLP");
        exported.sort_unstable();
        assert_eq!(exported, slow, "the OTLP slow ticks' lengths");
    }
    assert_eq!(
        verdict(bytes),
        without_slow(want.clone()),
        "compare's samples"
    );
    assert_eq!(chrome(bytes), want, "Chrome");
    assert_eq!(perfetto(bytes), want, "Perfetto");
    let slow_bound = format!("tick > {}ms", SLOW / MS);
    assert_eq!(fired(bytes, &slow_bound), longer, "{slow_bound}");
    assert_eq!(
        fired(bytes, "overrun"),
        want.overruns,
        "the overrun trigger"
    );
}

#[test]
fn every_consumer_pairs_ticks_alike_when_halves_are_lost() {
    let (written, blocks) = lost_halves();
    let bytes = stream(&[blocks], false);
    let want = expected(&written);
    assert_eq!(
        (
            want.whole,
            want.without_start,
            want.without_end,
            want.overruns
        ),
        (236, 2, 3, 5)
    );
    agree(&bytes, &written, &written, true);
}

#[test]
fn every_consumer_ends_the_open_tick_of_a_restart_alike() {
    let (written, runs) = restarted();
    let bytes = stream(&runs, false);
    let last_run: Vec<Written> = runs[1].iter().flatten().copied().collect();
    agree(&bytes, &written, &last_run, true);
}

#[test]
fn a_file_cut_without_its_shutdown_ends_its_open_tick_alike() {
    let (written, blocks) = lost_halves();
    agree(&stream(&[blocks], true), &written, &written, false);
}

/// Ticks of 3 ms (each overran, so that the OTLP tracer exports it) on
/// "Main", each a `Frame` holding `Physics` holding `Collide`; in every
/// other tick `Physics` was lost, and its `Collide` sits inside `Frame`
/// by time. Every consumer that nests puts it there: one deeper than
/// `Frame`, not a root.
#[test]
fn every_consumer_nests_a_span_whose_parent_was_lost_inside_the_span_that_holds_it() {
    let mut names: NameTable<8, 128> = NameTable::new();
    let main = names.intern("Main").unwrap();
    let [frame, physics, collide] =
        ["Frame", "Physics", "Collide"].map(|n| names.intern(n).unwrap());
    let lane = LaneInfo {
        id: 0,
        name: main,
        kind: LaneKind::Main,
    };
    let meta = Metadata {
        ticks_per_second: 1_000_000_000,
        session_id: 54,
        ..Metadata::default()
    };
    let mut out = vec![0u8; 1 << 16];
    let n = write_init(&mut out, 0, &meta, &names, [lane].into_iter()).unwrap();
    let mut bytes = out[..n].to_vec();
    let mut scratch = vec![0u8; block_scratch_len(64)];
    let ticks = 10u64;
    for t in 0..ticks {
        let at = 10 * MS + t * 4 * MS;
        let id = |k: u32| t as u32 * 3 + k;
        let span = |name, id, parent, start: u64, length: u64| Event::Span {
            start,
            duration: length,
            name,
            id,
            parent,
            arg: None,
        };
        let lost = t % 2 == 1;
        let mut block = BlockBuilder::new(&mut scratch);
        block.push(0, &Event::TickStart { time: at, tick: t });
        block.push(0, &span(collide, id(3), id(2), at + MS, MS / 2));
        if !lost {
            block.push(0, &span(physics, id(2), id(1), at + MS / 2, 2 * MS));
        }
        block.push(0, &span(frame, id(1), 0, at, 3 * MS));
        let end = Event::TickEnd {
            time: at + 3 * MS,
            tick: t,
            overrun: true,
        };
        block.push(0, &end);
        let drops = if lost { vec![(0, 1)] } else { Vec::new() };
        bytes.extend(block_frame(&block, t as u32, &drops, Compression::Lz4));
    }
    // Whole ticks' Collides: at depth 2 under Physics, at depth 1 under
    // Frame where Physics was lost.
    let want: Vec<usize> = (0..ticks).map(|t| if t % 2 == 1 { 1 } else { 2 }).collect();

    let mut trace = Vec::new();
    typhon_live_convert::perfetto::write_perfetto(&bytes, &mut trace).unwrap();
    let read = perfetto_reader::read(&trace);
    let mut collides: Vec<(u64, usize)> = (read.slices.iter())
        .filter(|s| s.name == "Collide")
        .map(|s| (s.start, s.depth))
        .collect();
    collides.sort_unstable();
    let depths: Vec<usize> = collides.iter().map(|c| c.1).collect();
    assert_eq!(depths, want, "Perfetto");

    // OTLP: each tick's tree, its root the tick; a span's depth is its
    // chain of parents below the root.
    let (_, exported) = relay_reading(&bytes);
    let depths: Vec<usize> = exported
        .iter()
        .map(|spans| {
            let by_id: std::collections::HashMap<&[u8], &[u8]> = spans
                .iter()
                .map(|s| (s.span_id.as_slice(), s.parent_span_id.as_slice()))
                .collect();
            let collide = spans.iter().find(|s| s.name == "Collide").unwrap();
            let mut depth = 0;
            let mut at = collide.parent_span_id.as_slice();
            while let Some(parent) = by_id.get(at).filter(|p| !p.is_empty()) {
                depth += 1;
                at = parent;
            }
            depth
        })
        .collect();
    // The last tick's tree waits for a Block that never comes.
    assert_eq!(depths, want[..want.len() - 1], "OTLP");
}
