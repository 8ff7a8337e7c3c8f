//! `typhon-live inspect`: what a trace file holds, and where it is damaged.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use typhon_live_core::{Codec, Event, FrameKind, LaneKind, Payload, Unwinding};
use typhon_live_reader::{Reader, Update};

use crate::error::CliError;
use crate::trace_file;

#[derive(Default)]
struct LaneStats {
    name: u32,
    kind: Option<LaneKind>,
    events: u64,
    spans: u64,
    span_ns: u64,
    dropped: u64,
}

/// Blocks stored in one codec, and their bytes.
#[derive(Default)]
struct CodecStats {
    blocks: u64,
    events: u64,
    /// Packed events, before any compression.
    packed: u64,
    /// The events' bytes in the frames.
    wire: u64,
}

/// Prints the report on `path`; a damaged file is an error after it.
pub fn run(path: &Path) -> Result<(), CliError> {
    let (report, was_damaged) = report(path)?;
    print!("{report}");
    if was_damaged {
        return Err(CliError::BadTrace {
            path: path.into(),
            reason: "damaged; see the damage section above".into(),
        });
    }
    Ok(())
}

/// The report on `path`, and whether the file was damaged.
fn report(path: &Path) -> Result<(String, bool), CliError> {
    let bytes = trace_file::read(path)?;
    let mut out = String::new();
    // The stream as every consumer reads it; what is counted here beside
    // it is the file's own make-up (frame kinds, codecs, the Init's
    // metadata).
    let mut reader = Reader::new();
    let mut lanes: BTreeMap<u16, LaneStats> = BTreeMap::new();
    let mut kinds: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut events: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut codecs: BTreeMap<&'static str, CodecStats> = BTreeMap::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    let (mut header, mut shutdown) = (None, None);
    let mut stacks = StackStats::default();
    let mut frames_read = 0u64;
    let damage = typhon_live_reader::frames(&bytes, |frame| {
        frames_read += 1;
        let kind = match frame.kind() {
            Ok(FrameKind::Init) => "init",
            Ok(FrameKind::Block) => "block",
            Ok(FrameKind::Definitions) => "definitions",
            Ok(FrameKind::CatchUp) => "catch-up",
            Ok(FrameKind::Shutdown) => "shutdown",
            Ok(FrameKind::Samples) => "samples",
            Ok(FrameKind::Text) => "text",
            // A newer writer's kind: skipped, not damage.
            Err(_) => "unknown",
        };
        *kinds.entry(kind).or_default() += 1;
        match frame.parse() {
            Ok(Payload::Init(init)) if header.is_none() => header = Some(init_header(&init)),
            Ok(Payload::Block(block)) if block.records > 0 => {
                let codec = codecs
                    .entry(block.codec().map_or("unknown", Codec::name))
                    .or_default();
                codec.blocks += 1;
                codec.events += u64::from(block.records);
                codec.packed += block.packed_len() as u64;
                codec.wire += block.encoded_len() as u64;
            }
            _ => {}
        }
        reader.read(frame, |state, update| match update {
            Update::Lanes => {
                for lane in state.lanes().values() {
                    let row = lanes.entry(lane.info.id).or_default();
                    (row.name, row.kind) = (lane.info.name, Some(lane.info.kind));
                }
            }
            Update::Lost(typhon_live_reader::Loss::Dropped { lane, events }) => {
                lanes.entry(lane).or_default().dropped += u64::from(events);
            }
            Update::Event { lane, event } => {
                first = first.min(event.time());
                last = last.max(event.end_time());
                let row = lanes.entry(lane).or_default();
                row.events += 1;
                let kind = match event {
                    Event::Span { duration, .. } => {
                        row.spans += 1;
                        row.span_ns += duration;
                        "spans"
                    }
                    Event::Instant { .. } => "instants",
                    Event::Gauge { .. } => "gauges",
                    Event::TickStart { .. } | Event::TickEnd { .. } => "tick markers",
                    Event::TaskBegin { .. } => "task begins",
                    Event::Poll { .. } => "polls",
                    Event::TaskEnd { .. } => "task ends",
                    Event::Field { .. } => "fields",
                    Event::Mark { .. } => "trigger marks",
                    Event::Allocated { .. } => "spans' allocated bytes",
                    Event::Unknown { .. } => "records of reserved kinds",
                };
                *events.entry(kind).or_default() += 1;
            }
            Update::Shutdown { totals, .. } => shutdown = Some(totals),
            Update::StackSample(sample) => {
                stacks.cut += u64::from(sample.cut);
                stacks.frame_pointers += u64::from(sample.unwinding == Unwinding::FramePointers);
            }
            _ => {}
        })
    });
    let state = reader.state();
    let tally = state.tally();
    let (gaps, before_init) = (tally.frames_missed, tally.frames_before_init);
    let (events_dropped, events_unread) = (tally.events_dropped, tally.events_damaged);
    let (texts, texts_lost) = (tally.texts, tally.texts_lost);
    trace_file::require_frames(path, frames_read, &damage)?;
    let header = header.unwrap_or_else(|| {
        "session     unknown: no readable Init (see damage); clock assumed 1e9 ticks per second\n"
            .into()
    });
    let _ = writeln!(
        out,
        "file        {} ({} bytes)",
        path.display(),
        bytes.len()
    );
    out.push_str(&header);
    if before_init > 0 {
        let _ = writeln!(
            out,
            "before Init {before_init} frames read before any readable Init: names they use show as #id"
        );
    }
    let frame_counts: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let _ = writeln!(
        out,
        "frames      {} ({}), {gaps} missing by sequence number",
        kinds.values().sum::<u64>(),
        frame_counts.join(", ")
    );
    let event_counts: Vec<String> = events.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let _ = writeln!(
        out,
        "events      {} ({}), {events_dropped} dropped{}",
        events.values().sum::<u64>(),
        event_counts.join(", "),
        if events_unread > 0 {
            format!(", {events_unread} unread in damaged blocks")
        } else {
            String::new()
        }
    );
    if texts > 0 || texts_lost > 0 {
        let _ = writeln!(out, "texts       {texts} log texts, {texts_lost} lost");
    }
    let told = tally.ticks + tally.ticks_without_start + tally.ticks_without_end;
    if told > 0 || state.open_ticks().next().is_some() {
        let _ = writeln!(
            out,
            "ticks       {} whole, {} without a start, {} without an end, {} overran, {} open at the end",
            tally.ticks,
            tally.ticks_without_start,
            tally.ticks_without_end,
            tally.ticks_overrun,
            state.open_ticks().count()
        );
    }
    if tally.off_cpu + tally.switches_unpaired > 0 || state.off_cpu_open().next().is_some() {
        let _ = writeln!(
            out,
            "off-CPU     {} slices, {} switches unpaired (a half lost, or before the start), {} threads out at the end",
            tally.off_cpu,
            tally.switches_unpaired,
            state.off_cpu_open().count()
        );
    }
    if tally.samples_undefined_lanes > 0 {
        let _ = writeln!(
            out,
            "rule broken {} Samples entries named a lane before its definition (skipped)",
            tally.samples_undefined_lanes
        );
    }
    if tally.stack_samples + tally.stack_samples_undefined > 0 || !state.stacks().is_empty() {
        let refused = state.tally().refused;
        let _ = writeln!(
            out,
            "stacks      {} samples ({} cut, {} by frame pointers, {} naming no node held), {} nodes, {} addresses symbolized, {} nodes and {} symbols refused",
            tally.stack_samples,
            stacks.cut,
            stacks.frame_pointers,
            tally.stack_samples_undefined,
            state.stacks().len(),
            state.stacks().symbols(),
            refused.stack_nodes,
            refused.frame_symbols,
        );
        let modules = state.stacks().modules();
        let with_id = modules.clone().filter(|m| !m.build_id.is_empty()).count();
        let _ = writeln!(
            out,
            "modules     {} mapped ({with_id} with a build id), {} refused",
            modules.count(),
            refused.modules,
        );
    }
    if first <= last {
        let seconds = |ns: u64| ns as f64 / 1e9;
        let _ = writeln!(
            out,
            "time span   {:.6} s to {:.6} s ({:.3} s)",
            seconds(first),
            seconds(last),
            seconds(last - first)
        );
    }
    // Per codec: what packing made of the events, and what compression
    // made of the packing (drop-only Blocks carry no events, and are left out).
    for (name, c) in &codecs {
        let per_event = |bytes: u64| bytes as f64 / c.events.max(1) as f64;
        let label = format!("blocks {name}");
        let _ = writeln!(
            out,
            "{label:<11} {} blocks, {} events: {} bytes packed ({:.2}/event), {} on the wire ({:.2}/event), ratio {:.3}",
            c.blocks,
            c.events,
            c.packed,
            per_event(c.packed),
            c.wire,
            per_event(c.wire),
            c.wire as f64 / c.packed.max(1) as f64
        );
    }
    match shutdown {
        Some(s) => {
            let _ = writeln!(
                out,
                "shutdown    clean: {} frames sent, {} dropped, {} events dropped",
                s.frames_sent, s.frames_dropped, s.events_dropped
            );
        }
        None => {
            let _ = writeln!(
                out,
                "shutdown    none: the session did not end cleanly (cut off or still running)"
            );
        }
    }
    let _ = writeln!(out, "lanes");
    for (id, lane) in &lanes {
        let name = state.names().show(lane.name);
        let kind = match lane.kind {
            Some(LaneKind::Main) => "main",
            Some(LaneKind::Worker) => "worker",
            Some(LaneKind::Pool) => "pool",
            _ => "other",
        };
        let _ = writeln!(
            out,
            "  {id:>3} {name:<24} {kind:<6} {:>9} events {:>8} spans {:>12.3} ms in spans {:>6} dropped",
            lane.events,
            lane.spans,
            lane.span_ns as f64 / 1e6,
            lane.dropped
        );
    }
    if !damage.is_empty() {
        let _ = writeln!(out, "damage");
        for d in &damage {
            let _ = writeln!(out, "  at byte {}: {}", d.offset, d.error);
        }
    }
    Ok((out, !damage.is_empty()))
}

/// The session's lines, from its first readable Init.
/// The stack samples' make-up: how many were cut, and walked by frame
/// pointers.
#[derive(Default)]
struct StackStats {
    cut: u64,
    frame_pointers: u64,
}

fn init_header(init: &typhon_live_core::InitView<'_>) -> String {
    let mut h = String::new();
    let _ = writeln!(h, "session     {:016x}", init.session_id);
    let _ = writeln!(
        h,
        "process     {} (pid {})",
        init.process_name, init.process_id
    );
    let _ = writeln!(
        h,
        "created     {} ns since the Unix epoch",
        init.created_unix_ns
    );
    let _ = writeln!(h, "clock       {} ticks per second", init.ticks_per_second);
    let components: Vec<&str> = init.components().map(|c| c.name).collect();
    let _ = writeln!(h, "components  {} {}", components.len(), list(&components));
    let archetypes: Vec<&str> = init.archetypes().map(|a| a.name).collect();
    let _ = writeln!(h, "archetypes  {} {}", archetypes.len(), list(&archetypes));
    let _ = writeln!(h, "indexes     {}", init.indexes().count());
    let config: Vec<String> = init
        .config()
        .map(|c| format!("{}={}", c.key, c.value))
        .collect();
    let config: Vec<&str> = config.iter().map(String::as_str).collect();
    let _ = writeln!(h, "config      {} {}", config.len(), list(&config));
    let queues: Vec<&str> = init.queues().map(|q| q.name).collect();
    let _ = writeln!(h, "queues      {} {}", queues.len(), list(&queues));
    let _ = writeln!(h, "resources   {}", init.resources().count());
    h
}

fn list(items: &[&str]) -> String {
    if items.is_empty() {
        String::new()
    } else {
        format!("({})", items.join(", "))
    }
}
