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

/// A crafted stream's start: an Init of session `session` naming `names`
/// and `lanes` (id, name, kind), its clock in ns.
fn init(names: &NameTable<8, 128>, lanes: &[(LaneId, u32, LaneKind)], session: u64) -> Vec<u8> {
    let meta = Metadata {
        ticks_per_second: 1_000_000_000,
        session_id: session,
        ..Metadata::default()
    };
    let lanes = lanes
        .iter()
        .map(|&(id, name, kind)| LaneInfo { id, name, kind });
    let mut out = vec![0u8; 1 << 16];
    let n = write_init(&mut out, 0, &meta, names, lanes).unwrap();
    out.truncate(n);
    out
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

/// The same ticks as [`lost_halves`], a second before the session's
/// clock runs out (u64 ns, 584 years): a peer's far-future times
/// overflow nothing, and every consumer still agrees.
#[test]
fn every_consumer_reads_far_future_ticks_alike() {
    let (written, blocks) = lost_halves();
    let far = |t: Written| Written {
        start: t.start + (u64::MAX - 1_000 * MS),
        ..t
    };
    let written: Vec<Written> = written.into_iter().map(far).collect();
    let blocks: Vec<Vec<Written>> = (blocks.into_iter())
        .map(|b| b.into_iter().map(far).collect())
        .collect();
    agree(&stream(&[blocks], false), &written, &written, true);
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
    let mut bytes = init(&names, &[(0, main, LaneKind::Main)], 54);
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

/// A lane's thread going off a CPU twice in each 10 ms between two
/// Samples frames, once across the frames; one Block and one Samples
/// frame lost on the way; another lane's thread asleep across both. The
/// view model (its history's slices, and a CPU share read from them),
/// Chrome's `cpu` slices and Perfetto's switches track tell the same
/// slices: every stretch whose out and in both arrived with no frame
/// lost between them, and the sleeper's, whose samples say it did not
/// run while the frames were lost; no other.
#[test]
fn every_consumer_tells_the_same_off_cpu_slices_across_a_lost_block_and_samples_frame() {
    use typhon_live_core::samples::write_samples;
    use typhon_live_core::{Counters, LaneSample, SamplesBatch, Switch, SwitchRecord};

    let mut names: NameTable<8, 128> = NameTable::new();
    let main = names.intern("Main").unwrap();
    let sleeper = names.intern("Sleeper").unwrap();
    let beat = names.intern("Beat").unwrap();
    let lanes = [(0, main, LaneKind::Main), (1, sleeper, LaneKind::Worker)];
    let mut bytes = init(&names, &lanes, 55);
    let mut out = vec![0u8; 1 << 16];
    let mut scratch = vec![0u8; block_scratch_len(64)];
    // The sleeper: out from frame 2's to frame 10's, its time on a CPU
    // still from its out to its in, frames 2 to 9.
    let slept = (35 * MS, 111 * MS);
    // Each stretch off a CPU: out, in, preempted, and the frames (by
    // sequence number) its out and in are in.
    let mut stretches: Vec<(u64, u64, bool, u32, u32)> = Vec::new();
    let (frames, lost_block, lost_samples) = (12u32, 9, 16);
    let mut pending: Option<(u64, bool, u32)> = None;
    let mut seq = 1;
    let mut on_cpu = 0;
    for k in 0..frames {
        let base = 10 * MS * u64::from(k + 1);
        // A Block between Samples frames: a beat on the lane.
        let mut block = BlockBuilder::new(&mut scratch);
        let instant = Event::Instant {
            time: base,
            name: beat,
            payload: 0,
        };
        block.push(0, &instant);
        if seq != lost_block {
            bytes.extend(block_frame(&block, seq, &[], Compression::Lz4));
        }
        seq += 1;
        let mut switches = Vec::new();
        if k == 2 {
            switches.push(SwitchRecord {
                lane: 1,
                time: slept.0,
                what: Switch::OutWaiting,
            });
        }
        let mut switch = |time, what| {
            switches.push(SwitchRecord {
                lane: 0,
                time,
                what,
            })
        };
        if let Some((out, preempted, out_seq)) = pending.take() {
            switch(base + MS, Switch::In);
            stretches.push((out, base + MS, preempted, out_seq, seq));
        }
        let preempted = k % 3 == 1;
        let what = if preempted {
            Switch::OutPreempted
        } else {
            Switch::OutWaiting
        };
        switch(base + 2 * MS, what);
        switch(base + 5 * MS, Switch::In);
        stretches.push((base + 2 * MS, base + 5 * MS, preempted, seq, seq));
        // Out across to the next frame.
        switch(base + 9 * MS, Switch::OutWaiting);
        pending = Some((base + 9 * MS, false, seq));
        if k == 10 {
            switches.push(SwitchRecord {
                lane: 1,
                time: slept.1,
                what: Switch::In,
            });
        }
        on_cpu += 5 * MS;
        let sample = |lane: LaneId, on_cpu| LaneSample {
            lane,
            thread: 77 + u64::from(lane),
            switches_traced: true,
            counters: Counters {
                on_cpu_ns: Some(on_cpu),
                waiting_ns: Some(0),
                ..Counters::default()
            },
        };
        let sleeper_on_cpu = MS * u64::from(k.min(2) + k.saturating_sub(9));
        let lanes = [sample(0, on_cpu), sample(1, sleeper_on_cpu)];
        let batch = SamplesBatch {
            time: base + 10 * MS - 1,
            lanes: &lanes,
            switches: &switches,
            ..SamplesBatch::default()
        };
        let n = write_samples(&mut out, seq, &batch).unwrap();
        if seq != lost_samples {
            bytes.extend_from_slice(&out[..n]);
        }
        seq += 1;
    }
    // Told: both halves arrived, and every frame from the out's to the
    // in's with them.
    let lost = [lost_block, lost_samples];
    let mut want: Vec<(u64, u64, bool)> = (stretches.iter())
        .filter(|s| !lost.iter().any(|l| (s.3..=s.4).contains(l)))
        .map(|s| (s.0, s.1, s.2))
        .collect();
    want.push((slept.0, slept.1, false));
    want.sort_unstable();
    // The lost Block cuts one stretch across frames; the lost Samples
    // frame its own and the two across its edges.
    assert_eq!(want.len(), stretches.len() - 4 + 1);

    // The model: its history's slices, and the share of lane 0's covered
    // time it reads as waiting for a core and off a CPU from them.
    let mut model = typhon_live_model::Model::default();
    each_frame(&bytes, |frame| {
        model.on_frame(frame, Duration::ZERO).unwrap();
    });
    model.flush_history();
    let chunks = model.history().chunks();
    let mut told: Vec<(u64, u64, bool)> = (chunks.iter().flat_map(|c| c.off_cpu.iter()))
        .map(|s| (s.from, s.to, s.preempted))
        .collect();
    told.sort_unstable();
    assert_eq!(told, want, "the view model");
    let main_only: Vec<_> = want.iter().filter(|s| s.0 != slept.0).collect();
    let index = typhon_live_model::CpuIndex::of(chunks.iter().map(|c| &**c));
    // The samples cover from the first frame's time to the last's.
    let (from, to) = (20 * MS - 1, 10 * MS * u64::from(frames + 1) - 1);
    let share = index.share(0, 0, u64::MAX).unwrap();
    let sum = |preempted: bool| -> u64 {
        (main_only.iter().filter(|s| s.2 == preempted))
            .map(|s| s.1.min(to).saturating_sub(s.0.max(from)))
            .sum()
    };
    assert!(share.exact, "read from the slices");
    assert_eq!(share.covered, to - from);
    assert_eq!(share.waiting, Some(sum(true)), "the model's time waiting");
    assert_eq!(share.off_cpu(), sum(false), "the model's time off a CPU");

    // Chrome: `X` events of category "cpu", µs.
    let converted = typhon_live_convert::chrome::chrome_trace(&bytes);
    let events = converted.output["traceEvents"].as_array().unwrap().clone();
    let ns = |v: &serde_json::Value| (v.as_f64().unwrap() * 1e3).round() as u64;
    let mut told: Vec<(u64, u64, bool)> = (events.iter())
        .filter(|e| e["cat"] == "cpu" && e["ph"] == "X")
        .map(|e| {
            (
                ns(&e["ts"]),
                ns(&e["ts"]) + ns(&e["dur"]),
                e["name"] == "preempted",
            )
        })
        .collect();
    told.sort_unstable();
    assert_eq!(told, want, "Chrome");

    // Perfetto, read back by an independent decoder: the lane's
    // switches track.
    let mut trace = Vec::new();
    typhon_live_convert::perfetto::write_perfetto(&bytes, &mut trace).unwrap();
    let read = perfetto_reader::read(&trace);
    let mut told: Vec<(u64, u64, bool)> = (read.slices.iter())
        .filter(|s| s.track.ends_with(": switches"))
        .map(|s| (s.start, s.end, s.name == "preempted"))
        .collect();
    told.sort_unstable();
    assert_eq!(told, want, "Perfetto");
}
