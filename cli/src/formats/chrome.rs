//! Chrome Trace Event JSON: spans `X`, instants `i`, counters `C`, thread
//! names `M`; what chrome://tracing and ui.perfetto.dev's legacy importer
//! open.

use std::collections::HashMap;

use serde_json::{json, Value};
use typhon_live_core::{Event, GaugeValue, Payload};
use typhon_live_reader::BlockBuffer;

use super::Converted;
use crate::source::file;

/// The Chrome trace of a trace file's `bytes`.
pub fn chrome_trace(bytes: &[u8]) -> Converted<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut unpacked = BlockBuffer::new();
    let mut lane_names: HashMap<u16, u32> = HashMap::new();
    // Without a readable Init: pid 0, nanoseconds, names as ids.
    let (mut pid, mut ticks_per_second, mut frames_read) = (0u32, 1_000_000_000f64, 0u64);
    let thread_name = |out: &mut Vec<Value>, pid: u32, lane: u16, name: &str| {
        out.push(json!({ "ph": "M", "name": "thread_name", "pid": pid, "tid": lane, "args": { "name": name } }));
    };
    let damage = file::frames(bytes, |frame| {
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
                for lane in defs.lanes().into_iter().flatten() {
                    if lane_names.insert(lane.id, lane.name) != Some(lane.name) {
                        thread_name(&mut out, pid, lane.id, &name_of(&names, lane.name));
                    }
                }
            }
            Payload::Block(block) => {
                let us = |t: u64| t as f64 * 1e6 / ticks_per_second;
                let result = unpacked.each_event(&block, |lane, event| {
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
                });
                result.map_err(|damage| damage.error)?;
            }
            Payload::CatchUp(_) | Payload::Shutdown(_) => {}
        }
        Ok(())
    });
    Converted {
        output: json!({ "traceEvents": out, "displayTimeUnit": "ms" }),
        damage,
        frames: frames_read,
    }
}
