//! A Block's events into the model: each lane's counts and self times,
//! the history's chunk being filled, ticks, gauges and task spans.

use std::time::Duration;

use typhon_live_core::{Event, GaugeValue};
use typhon_live_reader::{Tick, Update};

use crate::fields::Owner;
use crate::history::{self, Chunk, GaugeRecord, InstantRecord, SpanRecord, TickRecord};
use crate::limits::{MAX_GAUGES, MAX_TICKS};
use crate::triggers::Trigger;
use crate::{ns, Model, GAUGE_HISTORY, WINDOW_SECONDS};

impl Model {
    pub(crate) fn on_event(&mut self, lane: u16, event: &Event, now: Duration) {
        // A span's time outside its children, which ended before it.
        let mut self_time = 0;
        if let Some(row) = self.lane(lane) {
            row.events += 1;
            if let Event::Span {
                id,
                parent,
                duration,
                ..
            }
            | Event::Poll {
                id,
                parent,
                duration,
                ..
            } = *event
            {
                self_time = row.span_ended(id, parent, duration);
            }
        }
        self.note_owner(lane, event);
        self.keep(lane, event, self_time);
        match *event {
            Event::Span { .. } | Event::Unknown { .. } => {}
            Event::Allocated { time, span, bytes } => self.allocated_read(lane, time, span, bytes),
            Event::Mark { time, label, span } => self.triggers.add(Trigger {
                time,
                lane,
                label,
                span,
            }),
            Event::Field {
                time,
                key,
                value,
                owner,
            } => self.field_read(lane, time, key, value, owner),
            Event::TaskBegin {
                time,
                name,
                task,
                parent,
            } => self.task_begun(task, name, time, parent),
            Event::Poll { task, .. } => self.task_polled(task, self_time),
            Event::TaskEnd {
                time,
                name,
                task,
                wall,
                busy,
            } => self.task_ended(lane, task, name, time, wall, busy),
            Event::Gauge { gauge, value, .. } => {
                let v = match value {
                    GaugeValue::Int(v) => v as f64,
                    GaugeValue::Float(v) => v,
                };
                if !self.gauges.contains_key(&gauge) && self.gauges.len() >= MAX_GAUGES {
                    self.refused.gauges += 1;
                } else {
                    let history = self.gauges.entry(gauge).or_default();
                    history.push_back(v);
                    if history.len() > GAUGE_HISTORY {
                        history.pop_front();
                    }
                }
            }
            // Paired by the reader: `tick_read`.
            Event::TickStart { .. } | Event::TickEnd { .. } | Event::Instant { .. } => {}
        }
        self.advance_host_now(event.end_time(), now);
        let horizon = self.host_now.saturating_sub(ns(WINDOW_SECONDS));
        while self.ticks.front().is_some_and(|t| t.1 < horizon) {
            self.ticks.pop_front();
        }
    }

    /// A tick the reader paired: a whole one goes into the history and
    /// the window; one with a half lost is in the reader's tally only.
    pub(crate) fn tick_read(&mut self, tick: Tick) {
        let (Some(start), Some(end)) = (tick.start, tick.end) else {
            return;
        };
        self.chunk.push_tick(TickRecord {
            tick: tick.tick,
            start,
            end,
            overrun: tick.overrun,
        });
        if self.ticks.len() >= MAX_TICKS {
            self.ticks.pop_front();
            self.refused.ticks += 1;
        }
        let duration = end.saturating_sub(start);
        self.ticks
            .push_back((tick.tick, start, duration, tick.overrun));
        self.close_chunk_if_full();
    }

    /// What a field read next on `lane` belongs to ([`FieldOwners`]).
    ///
    /// [`FieldOwners`]: typhon_live_reader::FieldOwners
    fn note_owner(&mut self, lane: u16, event: &Event) {
        self.field_owners.read(lane, event, || match *event {
            Event::Span { name, duration, .. } => Owner {
                name,
                duration,
                task: 0,
            },
            Event::Poll {
                name,
                duration,
                task,
                ..
            } => Owner {
                name,
                duration,
                task,
            },
            Event::TaskEnd { name, wall, .. } => Owner {
                name,
                duration: wall,
                task: 0,
            },
            _ => Owner {
                name: 0,
                duration: 0,
                task: 0,
            },
        });
    }

    /// Keeps `event` in the chunk being filled (ticks go in at their end).
    pub(crate) fn keep(&mut self, lane: u16, event: &Event, self_time: u64) {
        match *event {
            Event::Span {
                start,
                duration,
                name,
                id,
                parent,
                arg,
            } => self.chunk.push_span(
                SpanRecord {
                    start,
                    duration,
                    arg: arg.unwrap_or(0),
                    id,
                    parent,
                    name,
                    lane,
                    has_arg: arg.is_some(),
                    poll: false,
                },
                self_time,
            ),
            Event::Poll {
                start,
                duration,
                name,
                id,
                parent,
                task,
            } => self.chunk.push_span(
                SpanRecord {
                    start,
                    duration,
                    arg: task,
                    id,
                    parent,
                    name,
                    lane,
                    has_arg: false,
                    poll: true,
                },
                self_time,
            ),
            Event::Instant {
                time,
                name,
                payload,
            } => self.chunk.push_instant(InstantRecord {
                time,
                payload,
                name,
                lane,
            }),
            Event::Gauge { time, gauge, value } => self.chunk.push_gauge(GaugeRecord {
                time,
                value: match value {
                    GaugeValue::Int(v) => v as f64,
                    GaugeValue::Float(v) => v,
                },
                name: gauge,
            }),
            // Ticks go in at their end, task spans at theirs.
            Event::TickStart { .. }
            | Event::TickEnd { .. }
            | Event::TaskBegin { .. }
            | Event::TaskEnd { .. }
            | Event::Field { .. }
            | Event::Mark { .. }
            | Event::Allocated { .. }
            | Event::Unknown { .. } => {}
        }
        self.close_chunk_if_full();
    }

    /// The chunk being filled goes into the history once it holds
    /// [`history::CHUNK_RECORDS`].
    fn close_chunk_if_full(&mut self) {
        if self.chunk.records() >= history::CHUNK_RECORDS {
            self.close_chunk();
        }
    }

    /// The chunk being filled goes into the history once it covers
    /// [`history::CHUNK_SECONDS`] of host time.
    pub(crate) fn close_chunk_if_due(&mut self) {
        let span = ns(history::CHUNK_SECONDS);
        if self.chunk.records() > 0 && self.host_now.saturating_sub(self.chunk.first) >= span {
            self.close_chunk();
        }
    }

    pub(crate) fn close_chunk(&mut self) {
        let next = Chunk::sized_like(&self.chunk);
        self.history.push(std::mem::replace(&mut self.chunk, next));
        if let Some(start) = self.history.starts_at() {
            self.marks.forget_before(start);
        }
    }

    /// The stream is over (a file read to its end): the ticks still open
    /// lost their ends (the reader's `ended`), and what was being
    /// collected goes into the history.
    pub fn flush_history(&mut self) {
        let mut unended = Vec::new();
        self.reader.ended(|_, update| {
            if let Update::Tick(tick) = update {
                unended.push(tick);
            }
        });
        for tick in unended {
            self.tick_read(tick);
        }
        if self.chunk.records() > 0 {
            self.close_chunk();
        }
    }
}
