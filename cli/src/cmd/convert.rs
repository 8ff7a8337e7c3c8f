//! `typhon-live convert`: Perfetto's protobuf trace (`--to perfetto`),
//! which ui.perfetto.dev and trace_processor open natively, or Chrome
//! Trace Event JSON (`--to chrome`), which chrome://tracing opens too.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::{json, Value};
use typhon_live_core::{Event, GaugeValue, Payload};
use typhon_live_perfetto::{TraceWriter, WriterStats};
use typhon_live_std::BlockBuffer;

use typhon_live_cli::error::CliError;
use typhon_live_cli::source::file::{self, Damage};

/// The Chrome trace of `path`, and the damage met on the way.
pub fn to_chrome(path: &Path) -> Result<(Value, Vec<Damage>), CliError> {
    let bytes = file::read(path)?;
    let mut out: Vec<Value> = Vec::new();
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut unpacked = BlockBuffer::new();
    let mut lane_names: HashMap<u16, u32> = HashMap::new();
    // Without a readable Init: pid 0, nanoseconds, names as ids.
    let (mut pid, mut ticks_per_second, mut frames_read) = (0u32, 1_000_000_000f64, 0u64);
    let thread_name = |out: &mut Vec<Value>, pid: u32, lane: u16, name: &str| {
        out.push(json!({ "ph": "M", "name": "thread_name", "pid": pid, "tid": lane, "args": { "name": name } }));
    };
    let damage = file::frames(&bytes, |frame| {
        let name_of = |names: &HashMap<u32, String>, id: u32| {
            names.get(&id).cloned().unwrap_or_else(|| format!("#{id}"))
        };
        frames_read += 1;
        if frame.kind().is_err() {
            // A newer writer's kind: nothing to convert, not damage.
            return Ok(());
        }
        match frame.parse()? {
            Payload::Init(init) => {
                pid = init.process_id;
                ticks_per_second = init.ticks_per_second.max(1) as f64;
                names.extend(init.names().map(|(id, n)| (id, n.to_owned())));
                out.push(json!({ "ph": "M", "name": "process_name", "pid": pid, "args": { "name": init.process_name } }));
                for lane in init.lanes() {
                    lane_names.insert(lane.id, lane.name);
                    thread_name(&mut out, pid, lane.id, &name_of(&names, lane.name));
                }
            }
            Payload::Definitions(defs) => {
                names.extend(defs.names().map(|(id, n)| (id, n.to_owned())));
                for lane in defs.lanes() {
                    if lane_names.insert(lane.id, lane.name) != Some(lane.name) {
                        thread_name(&mut out, pid, lane.id, &name_of(&names, lane.name));
                    }
                }
            }
            Payload::Block(block) => {
                let us = |t: u64| t as f64 * 1e6 / ticks_per_second;
                for item in unpacked.events(&block)? {
                    let (lane, event) = item?;
                    out.push(match event {
                        Event::Span { start, duration, name, arg, .. } => {
                            let mut e = json!({ "ph": "X", "name": name_of(&names, name), "ts": us(start), "dur": us(duration), "pid": pid, "tid": lane });
                            if let Some(arg) = arg {
                                e["args"] = json!({ "arg": arg });
                            }
                            e
                        }
                        Event::Instant { time, name, payload } => json!({ "ph": "i", "s": "t", "name": name_of(&names, name), "ts": us(time), "pid": pid, "tid": lane, "args": { "payload": payload } }),
                        Event::Gauge { time, gauge, value } => {
                            let value = match value {
                                GaugeValue::Int(v) => json!(v),
                                GaugeValue::Float(v) if v.is_finite() => json!(v),
                                GaugeValue::Float(_) => json!(null),
                            };
                            json!({ "ph": "C", "name": name_of(&names, gauge), "ts": us(time), "pid": pid, "args": { "value": value } })
                        }
                        Event::TickStart { time, tick } => json!({ "ph": "i", "s": "t", "name": "tick start", "ts": us(time), "pid": pid, "tid": lane, "args": { "tick": tick } }),
                        Event::TickEnd { time, tick, overrun } => json!({ "ph": "i", "s": "t", "name": "tick end", "ts": us(time), "pid": pid, "tid": lane, "args": { "tick": tick, "overrun": overrun } }),
                    });
                }
            }
            Payload::CatchUp(_) | Payload::Shutdown(_) => {}
        }
        Ok(())
    });
    file::require_frames(path, frames_read, &damage)?;
    Ok((
        json!({ "traceEvents": out, "displayTimeUnit": "ms" }),
        damage,
    ))
}

/// Writes the Perfetto trace of `path` to `output`, packet by packet as
/// the frames are read; returns what was written and lost, and the damage
/// met on the way.
pub fn to_perfetto(path: &Path, output: &Path) -> Result<(WriterStats, Vec<Damage>), CliError> {
    let bytes = file::read(path)?;
    let file_error = |e: std::io::Error| CliError::File {
        path: output.into(),
        reason: e.to_string(),
    };
    let mut sink = BufWriter::new(File::create(output).map_err(file_error)?);
    let mut writer = TraceWriter::new();
    let (mut out, mut written, mut frames_read) = (Vec::new(), Ok(()), 0u64);
    let damage = file::frames(&bytes, |frame| {
        frames_read += 1;
        let result = writer.frame(frame, &mut out);
        if written.is_ok() {
            written = sink.write_all(&out);
        }
        out.clear();
        result
    });
    writer.finish(&mut out);
    written
        .and_then(|()| sink.write_all(&out))
        .and_then(|()| sink.flush())
        .map_err(file_error)?;
    if let Err(e) = file::require_frames(path, frames_read, &damage) {
        // Not a trace: no output left behind.
        drop(sink);
        let _ = std::fs::remove_file(output);
        return Err(e);
    }
    Ok((writer.stats(), damage))
}

/// One line saying what a Perfetto conversion wrote and what was lost.
pub fn perfetto_summary(output: &Path, stats: &WriterStats) -> String {
    let mut line = format!(
        "wrote {}: {} packets, {} spans, {} instants, {} counter values, {} ticks",
        output.display(),
        stats.packets,
        stats.spans,
        stats.instants,
        stats.counter_values,
        stats.ticks
    );
    if stats.frames_lost + stats.events_lost + stats.damaged_frames > 0 {
        line += &format!(
            "; lost {} frames and {} events, {} damaged frames (marked in the trace)",
            stats.frames_lost, stats.events_lost, stats.damaged_frames
        );
    }
    let refused = stats.names_refused + stats.gauge_values_refused + stats.values_not_finite;
    if refused > 0 {
        line += &format!(
            "; left out {} names over the cap, {} readings of gauges over the cap, {} non-finite readings",
            stats.names_refused, stats.gauge_values_refused, stats.values_not_finite
        );
    }
    line
}
