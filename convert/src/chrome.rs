//! Chrome Trace Event JSON: spans and polls `X`, instants `i`, counters
//! `C`, thread names `M`, task spans as nestable async pairs `b` and `e`
//! (category `task`, their task id as id), a span's fields in its `args`
//! (a task span's in its `e`), log lines as instants of category `log`
//! with their text in `args.message`, each lane's CPU as a counter
//! `LANE: CPU` (the share of each sampled interval on a CPU and waiting)
//! and its switches out and back in as `X` of category `cpu`; what
//! chrome://tracing and
//! ui.perfetto.dev's legacy importer open.

use serde_json::{json, Value};
use typhon_live_core::{Event, FieldValue, GaugeValue};
use typhon_live_reader::{FieldOwners, Reader, State, Update};

use crate::Converted;

/// The Chrome trace of a trace file's `bytes`, read by the one stream
/// reader: names as the stream defined them (`#id` before), times in µs
/// of the session's clock, a process per session (a restart under the
/// same id stays one: Chrome's format has no way to say it).
pub fn chrome_trace(bytes: &[u8]) -> Converted<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut reader = Reader::new();
    let mut frames_read = 0u64;
    let pid = |state: &State| state.session().map_or(0, |s| s.process_id);
    let name = |state: &State, id: u32| state.names().show(id).into_owned();
    let us = |ns: u64| ns as f64 / 1e3;
    // The lanes named so far, so that a lane is named again only when its
    // name changes.
    let mut named: Vec<(u16, u32)> = Vec::new();
    // Per lane, where its last span or task end is in `out`: what a field
    // read next belongs to.
    let mut owners: FieldOwners<usize> = FieldOwners::default();
    let mut on_update = |state: &State, update: Update<'_>| match update {
        Update::NewSession { .. } => {
            let process = state.session().map_or("", |s| s.process_name.as_str());
            out.push(json!({ "ph": "M", "name": "process_name", "pid": pid(state), "args": { "name": process } }));
            named.clear();
        }
        Update::Lanes => {
            for lane in state.lanes().values() {
                let (id, name_id) = (lane.info.id, lane.info.name);
                if named.contains(&(id, name_id)) {
                    continue;
                }
                named.retain(|&(lane, _)| lane != id);
                named.push((id, name_id));
                out.push(json!({ "ph": "M", "name": "thread_name", "pid": pid(state), "tid": id, "args": { "name": name(state, name_id) } }));
            }
        }
        Update::Event { lane, event } => {
            let pid = pid(state);
            if let Event::Field {
                key, value, owner, ..
            } = event
            {
                let Some(at) = owners.field(lane, owner) else {
                    return;
                };
                let value = match value {
                    FieldValue::Int(v) => json!(v),
                    FieldValue::Float(v) if v.is_finite() => json!(v),
                    FieldValue::Float(_) => json!(null),
                    FieldValue::Str(v) => json!(name(state, v)),
                };
                if let Some(record) = out.get_mut(at) {
                    record["args"][name(state, key)] = value;
                }
                return;
            }
            // A span's own bytes: an argument of its record.
            if let Event::Allocated { span, bytes, .. } = event {
                if let Some(record) = owners.allocated(lane, span).and_then(|at| out.get_mut(at)) {
                    record["args"]["allocated_bytes"] = json!(bytes);
                }
                return;
            }
            // A task end is written after its `b`.
            let at = out.len() + usize::from(matches!(event, Event::TaskEnd { .. }));
            owners.read(lane, &event, || at);
            let event = match event {
                Event::Span {
                    start,
                    duration,
                    name: id,
                    arg,
                    ..
                } => {
                    let mut e = json!({ "ph": "X", "name": name(state, id), "ts": us(start), "dur": us(duration), "pid": pid, "tid": lane });
                    if let Some(arg) = arg {
                        e["args"] = json!({ "arg": arg });
                    }
                    e
                }
                Event::Instant {
                    time,
                    name: id,
                    payload,
                } => {
                    json!({ "ph": "i", "s": "t", "name": name(state, id), "ts": us(time), "pid": pid, "tid": lane, "args": { "payload": payload } })
                }
                Event::Gauge { time, gauge, value } => {
                    let value = match value {
                        GaugeValue::Int(v) => json!(v),
                        GaugeValue::Float(v) if v.is_finite() => json!(v),
                        GaugeValue::Float(_) => json!(null),
                    };
                    json!({ "ph": "C", "name": name(state, gauge), "ts": us(time), "pid": pid, "args": { "value": value } })
                }
                Event::Poll {
                    start,
                    duration,
                    name: id,
                    task,
                    ..
                } => {
                    json!({ "ph": "X", "name": name(state, id), "ts": us(start), "dur": us(duration), "pid": pid, "tid": lane, "args": { "poll of task": task } })
                }
                // Its end says all of it: a task whose begin was lost
                // is still whole.
                Event::TaskEnd {
                    time,
                    name: id,
                    task,
                    wall,
                    busy,
                } => {
                    let name = name(state, id);
                    out.push(json!({ "ph": "b", "cat": "task", "id": task, "name": name, "ts": us(time.saturating_sub(wall)), "pid": pid, "tid": lane }));
                    json!({ "ph": "e", "cat": "task", "id": task, "name": name, "ts": us(time), "pid": pid, "tid": lane, "args": { "busy_us": us(busy), "idle_us": us(wall.saturating_sub(busy)) } })
                }
                // A flight recorder's trigger: a global instant, so
                // that it shows across every lane.
                Event::Mark { time, label, span } => {
                    let mut e = json!({ "ph": "i", "s": "g", "cat": "trigger", "name": name(state, label), "ts": us(time), "pid": pid, "tid": lane });
                    if let Some((id, start)) = span {
                        e["args"] = json!({ "span": name(state, id), "span_start_us": us(start) });
                    }
                    e
                }
                // Ticks come paired, as `Update::Tick`.
                Event::TaskBegin { .. }
                | Event::TickStart { .. }
                | Event::TickEnd { .. }
                | Event::Field { .. }
                | Event::Allocated { .. }
                | Event::Unknown { .. } => return,
            };
            out.push(event);
        }
        // A lane's CPU: a counter per lane of the share of each
        // interval on a CPU and waiting, from its start; a switch
        // out and back in, a slice of category "cpu" on its lane.
        Update::Cpu(interval) => {
            let Some(on_cpu) = interval.spent.on_cpu_ns else {
                return;
            };
            let length = interval.to.saturating_sub(interval.from).max(1) as f64;
            let share = |ns: u64| (ns as f64 / length).min(1.0);
            let lane = state.lanes().get(&interval.lane).map_or_else(
                || format!("lane {}", interval.lane),
                |l| name(state, l.info.name),
            );
            let mut args = json!({ "on CPU": share(on_cpu) });
            if let Some(waiting) = interval.spent.waiting_ns {
                args["waiting"] = json!(share(waiting));
            }
            out.push(json!({ "ph": "C", "name": format!("{lane}: CPU"), "ts": us(interval.from), "pid": pid(state), "args": args }));
        }
        Update::OffCpu(slice) => {
            out.push(json!({ "ph": "X", "cat": "cpu", "name": slice.label(), "ts": us(slice.from), "dur": us(slice.duration()), "pid": pid(state), "tid": slice.lane }));
        }
        // A tick: whole, an `X` of category "tick" on its lane; with
        // a half lost, an instant there.
        Update::Tick(tick) => {
            let name = match (tick.start, tick.end, tick.overrun) {
                (Some(_), Some(_), false) => "tick",
                (Some(_), Some(_), true) => "overrun tick",
                (Some(_), None, _) => "tick (its end was lost)",
                (None, _, _) => "tick (its start was lost)",
            };
            let args = json!({ "tick": tick.tick, "overrun": tick.overrun });
            let mut e = json!({ "cat": "tick", "name": name, "pid": pid(state), "tid": tick.lane, "args": args });
            match (tick.start, tick.end) {
                (Some(start), Some(end)) => {
                    (e["ph"], e["ts"], e["dur"]) = (
                        json!("X"),
                        json!(us(start)),
                        json!(us(end.saturating_sub(start))),
                    )
                }
                (Some(at), None) | (None, Some(at)) => {
                    (e["ph"], e["s"], e["ts"]) = (json!("i"), json!("t"), json!(us(at)))
                }
                (None, None) => return,
            }
            out.push(e);
        }
        // A log line: an instant of category "log" on its lane (the
        // process's when it has none), its text and level in args.
        Update::Text(text) => {
            let mut e = json!({ "ph": "i", "cat": "log", "name": name(state, text.site), "ts": us(text.time), "pid": pid(state), "args": { "message": text.text, "level": text.level.as_str() } });
            match text.lane {
                Some(lane) => (e["s"], e["tid"]) = (json!("t"), json!(lane)),
                None => e["s"] = json!("p"),
            }
            if text.cut {
                e["args"]["cut"] = json!(true);
            }
            out.push(e);
        }
        _ => {}
    };
    let damage = typhon_live_reader::frames(bytes, |frame| {
        frames_read += 1;
        reader.read(frame, &mut on_update)
    });
    reader.ended(&mut on_update);
    Converted {
        output: json!({ "traceEvents": out, "displayTimeUnit": "ms" }),
        damage,
        frames: frames_read,
    }
}
