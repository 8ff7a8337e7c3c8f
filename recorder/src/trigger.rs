//! Triggers: conditions (typhon-live-condition's grammar) read as the
//! moments worth keeping, and watched over a reader's updates.
//!
//! | trigger | fires |
//! |---|---|
//! | `tick > D` | when a tick has lasted `D`, while it is still open: a hang that never ends fires too |
//! | `overrun` | when a tick ends over its budget |
//! | `span(NAME) > D` | when a span (or a task span) of that name has lasted `D`: at its end, or while open as a Catch-up lists it |
//! | `gauge(NAME) OP X` | when a reading passes the comparison after one that did not (the first reading counts) |
//! | `loss` | when anything is lost: frames, events, texts |
//!
//! `>=` may stand for `>`. On demand (a signal, a key, an HTTP request)
//! is not a condition: [`Recorder::demand`](crate::Recorder::demand).

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::str::FromStr;

use typhon_live_condition::{Comparison, Condition, ConditionError, Test, Unit};
use typhon_live_core::{Event, EventKinds, GaugeValue, LaneId, NameId, SpanId};
use typhon_live_reader::{State, Tick, Update};

/// The words a trigger may use, for errors.
const KNOWN: &str = "tick > D, overrun, span(NAME) > D, gauge(NAME) OP X, loss";

/// Ticks and spans watched at once, at most: a bound on what a peer's
/// stream can make a trigger remember.
const MAX_WATCHED: usize = 4096;

/// A trigger, parsed and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Trigger {
    /// As written, trimmed: a capture's marks are labelled with it.
    text: String,
    condition: Condition,
    kind: Kind,
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Tick { over: u64 },
    Overrun,
    Span { name: String, over: u64 },
    Gauge { name: String, test: Test },
    Loss,
}

impl FromStr for Trigger {
    type Err = ConditionError;

    fn from_str(text: &str) -> Result<Trigger, ConditionError> {
        let condition: Condition = text.parse()?;
        let subject = &condition.subject;
        let no_name = || condition.no_argument();
        let bare = || match &condition.test {
            Some(test) => Err(ConditionError::TakesNoComparison {
                at: test.comparison_at,
                word: subject.word.clone(),
            }),
            None => Ok(()),
        };
        let over = || -> Result<u64, ConditionError> {
            let test = condition.quantity_in(Unit::Duration)?;
            match test.comparison {
                Comparison::Greater | Comparison::GreaterOrEqual => Ok(test.quantity.value as u64),
                _ => Err(ConditionError::Expected {
                    at: test.comparison_at,
                    expected: "> (a duration over)",
                    found: format!("\"{}\"", test.comparison.symbol()),
                }),
            }
        };
        let kind = match subject.word.as_str() {
            "tick" => {
                no_name()?;
                Kind::Tick { over: over()? }
            }
            "overrun" => {
                no_name()?;
                bare()?;
                Kind::Overrun
            }
            "span" => Kind::Span {
                name: condition.argument()?.into(),
                over: over()?,
            },
            "gauge" => Kind::Gauge {
                name: condition.argument()?.into(),
                test: *condition.comparison()?,
            },
            "loss" => {
                no_name()?;
                bare()?;
                Kind::Loss
            }
            _ => {
                return Err(ConditionError::UnknownSubject {
                    at: subject.at,
                    word: subject.word.clone(),
                    known: KNOWN,
                })
            }
        };
        Ok(Trigger {
            text: text.trim().into(),
            condition,
            kind,
        })
    }
}

impl fmt::Display for Trigger {
    /// As written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Trigger {
    /// The condition it was read from.
    pub fn condition(&self) -> &Condition {
        &self.condition
    }
}

/// A trigger that fired: when, where, and what it saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fired {
    /// Which trigger: its index in the recorder's list, or `None` on
    /// demand.
    pub trigger: Option<usize>,
    /// When, ns of the stream's clock.
    pub time: u64,
    /// The lane of what fired it, if it has one.
    pub lane: Option<LaneId>,
    /// The span (or tick) that fired it: its name and start, so that a
    /// viewer selects it.
    pub span: Option<FiredSpan>,
    /// What it saw, for people: `Tick 1042 open for 100 ms`.
    pub what: String,
}

/// The span a trigger fired on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FiredSpan {
    /// Its name.
    pub name: NameId,
    /// Its start, ns.
    pub start: u64,
}

/// Which events any trigger looks at: the recorder's reader passes over
/// the lane groups with none of them, and the rest of a group's events
/// pass by at the cost of a match.
#[derive(Clone, Copy, Debug, Default)]
struct Wants {
    ticks: bool,
    spans: bool,
    gauges: bool,
}

/// What the triggers remember between updates.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    wants: Wants,
    /// Open ticks (lane, number) that fired while open: they do not fire
    /// again when they end.
    fired_ticks: Vec<(LaneId, u64)>,
    /// Open spans (lane, span id) that fired while open: they do not fire
    /// again when they end.
    fired_open: Vec<(LaneId, SpanId)>,
    /// Per gauge trigger, whether its last reading passed.
    passing: BTreeMap<usize, bool>,
    /// Name ids known to match (or not) a trigger's name, this session.
    matches: BTreeMap<(usize, NameId), bool>,
}

impl Watch {
    /// A watch of `triggers`.
    pub(crate) fn new(triggers: &[Trigger]) -> Watch {
        let any = |f: fn(&Kind) -> bool| triggers.iter().any(|t| f(&t.kind));
        Watch {
            wants: Wants {
                ticks: any(|k| matches!(k, Kind::Tick { .. } | Kind::Overrun)),
                spans: any(|k| matches!(k, Kind::Span { .. })),
                gauges: any(|k| matches!(k, Kind::Gauge { .. })),
            },
            ..Watch::default()
        }
    }

    /// The event kinds the triggers look at: a recorder's reader decodes
    /// only the lane groups that hold one.
    pub(crate) fn kinds(&self) -> EventKinds {
        let mut kinds = EventKinds::NONE;
        if self.wants.ticks {
            kinds = kinds | EventKinds::TICK_START | EventKinds::TICK_END;
        }
        if self.wants.spans {
            // Polls strike the open spans a Catch-up listed, as spans do.
            kinds = kinds | EventKinds::SPAN | EventKinds::POLL | EventKinds::TASK_END;
        }
        if self.wants.gauges {
            kinds = kinds | EventKinds::GAUGE;
        }
        kinds
    }

    /// The session changed: ids mean other names, ticks and spans are gone.
    pub(crate) fn new_session(&mut self) {
        *self = Watch {
            wants: self.wants,
            ..Watch::default()
        };
    }

    fn named(&mut self, index: usize, name: &str, id: NameId, state: &State) -> bool {
        if let Some(&known) = self.matches.get(&(index, id)) {
            return known;
        }
        // An id not defined yet may be later: not remembered as a miss.
        let Some(text) = state.names().get(id) else {
            return false;
        };
        let matched = text == name;
        if self.matches.len() < typhon_live_reader::MAX_NAMES {
            self.matches.insert((index, id), matched);
        }
        matched
    }

    /// `update` against every trigger; each that fires goes to `fire`.
    pub(crate) fn update(
        &mut self,
        triggers: &[Trigger],
        state: &State,
        update: &Update<'_>,
        fire: &mut impl FnMut(Fired),
    ) {
        match *update {
            Update::NewSession { .. } | Update::Restarted { .. } => self.new_session(),
            Update::Event { lane, event } => self.event(triggers, state, lane, event, fire),
            Update::Tick(tick) if self.wants.ticks => self.tick(triggers, tick, fire),
            Update::CatchUp { time } => self.open_spans(triggers, state, time, fire),
            Update::Lost(loss) => {
                for (index, trigger) in triggers.iter().enumerate() {
                    if trigger.kind == Kind::Loss {
                        fire(Fired {
                            trigger: Some(index),
                            time: state.latest().unwrap_or(0),
                            lane: None,
                            span: None,
                            what: format!("{loss:?}"),
                        });
                    }
                }
            }
            _ => {}
        }
    }

    fn event(
        &mut self,
        triggers: &[Trigger],
        state: &State,
        lane: LaneId,
        event: Event,
        fire: &mut impl FnMut(Fired),
    ) {
        let wants = self.wants;
        match event {
            Event::Span { .. } | Event::TaskEnd { .. } if !wants.spans => {}
            Event::Gauge { .. } if !wants.gauges => {}
            Event::Span {
                start,
                duration,
                name,
                id,
                ..
            } => {
                let was_fired = self.fired_open.iter().position(|&k| k == (lane, id));
                if let Some(at) = was_fired {
                    self.fired_open.swap_remove(at);
                    return;
                }
                self.ended(triggers, state, lane, name, start, duration, fire);
            }
            Event::TaskEnd {
                time, name, wall, ..
            } => {
                let start = time.saturating_sub(wall);
                self.ended(triggers, state, lane, name, start, wall, fire);
            }
            Event::Gauge { gauge, value, time } => {
                let value = match value {
                    GaugeValue::Int(v) => v as f64,
                    GaugeValue::Float(v) => v,
                };
                for (index, trigger) in triggers.iter().enumerate() {
                    let Kind::Gauge { name, test } = &trigger.kind else {
                        continue;
                    };
                    if !self.named(index, name, gauge, state) {
                        continue;
                    }
                    let passes = test.holds(value);
                    let passed = self.passing.insert(index, passes).unwrap_or(false);
                    if passes && !passed {
                        fire(Fired {
                            trigger: Some(index),
                            time,
                            lane: Some(lane),
                            span: None,
                            what: format!("{name} read {value}"),
                        });
                    }
                }
            }
            _ => {}
        }
    }

    /// A tick the reader paired, against the tick triggers: an overrun
    /// fires whichever half told it; a whole tick past a bound fires
    /// unless it fired while open.
    fn tick(&mut self, triggers: &[Trigger], tick: Tick, fire: &mut impl FnMut(Fired)) {
        let fired_open = self
            .fired_ticks
            .iter()
            .position(|&open| open == (tick.lane, tick.tick))
            .map(|at| self.fired_ticks.swap_remove(at))
            .is_some();
        let Some(end) = tick.end else {
            return;
        };
        let number = tick.tick;
        for (index, trigger) in triggers.iter().enumerate() {
            let what = match trigger.kind {
                Kind::Overrun if tick.overrun => format!("tick {number} overran its budget"),
                Kind::Tick { over } if !fired_open => match tick.duration() {
                    Some(lasted) if lasted > over => {
                        format!("tick {number} lasted {}", Ms(lasted))
                    }
                    _ => continue,
                },
                _ => continue,
            };
            fire(Fired {
                trigger: Some(index),
                time: end,
                lane: Some(tick.lane),
                span: None,
                what,
            });
        }
    }

    /// A span (or task span) that ended, against the span triggers.
    #[allow(clippy::too_many_arguments)]
    fn ended(
        &mut self,
        triggers: &[Trigger],
        state: &State,
        lane: LaneId,
        name: NameId,
        start: u64,
        duration: u64,
        fire: &mut impl FnMut(Fired),
    ) {
        for (index, trigger) in triggers.iter().enumerate() {
            let Kind::Span { name: wanted, over } = &trigger.kind else {
                continue;
            };
            if duration > *over && self.named(index, wanted, name, state) {
                fire(Fired {
                    trigger: Some(index),
                    time: start.saturating_add(duration),
                    lane: Some(lane),
                    span: Some(FiredSpan { name, start }),
                    what: format!("{wanted} lasted {}", Ms(duration)),
                });
            }
        }
    }

    /// Open spans a Catch-up listed, at `time`, against the span triggers.
    fn open_spans(
        &mut self,
        triggers: &[Trigger],
        state: &State,
        time: u64,
        fire: &mut impl FnMut(Fired),
    ) {
        if !self.wants.spans {
            return;
        }
        for (&lane, row) in state.lanes() {
            for open in &row.open {
                if self.fired_open.contains(&(lane, open.id)) {
                    continue;
                }
                let lasted = time.saturating_sub(open.start);
                for (index, trigger) in triggers.iter().enumerate() {
                    let Kind::Span { name, over } = &trigger.kind else {
                        continue;
                    };
                    if lasted > *over
                        && self.named(index, name, open.name, state)
                        && self.fired_open.len() < MAX_WATCHED
                    {
                        self.fired_open.push((lane, open.id));
                        fire(Fired {
                            trigger: Some(index),
                            time,
                            lane: Some(lane),
                            span: Some(FiredSpan {
                                name: open.name,
                                start: open.start,
                            }),
                            what: format!("{name} open for {}", Ms(lasted)),
                        });
                        break;
                    }
                }
            }
        }
    }

    /// Time has reached `now` (ns of the stream's clock): the ticks open
    /// in `state` past a trigger's bound fire, once each.
    pub(crate) fn now(
        &mut self,
        triggers: &[Trigger],
        state: &State,
        now: u64,
        fire: &mut impl FnMut(Fired),
    ) {
        if !self.wants.ticks {
            return;
        }
        for open in state.open_ticks() {
            // Full: what would fire could not be remembered as fired.
            if self.fired_ticks.len() >= MAX_WATCHED {
                return;
            }
            if self.fired_ticks.contains(&(open.lane, open.tick)) {
                continue;
            }
            let lasted = now.saturating_sub(open.start);
            let past = triggers
                .iter()
                .enumerate()
                .find(|(_, trigger)| matches!(trigger.kind, Kind::Tick { over } if lasted > over));
            if let Some((index, _)) = past {
                self.fired_ticks.push((open.lane, open.tick));
                fire(Fired {
                    trigger: Some(index),
                    time: now,
                    lane: Some(open.lane),
                    span: None,
                    what: format!("tick {} open for {}", open.tick, Ms(lasted)),
                });
            }
        }
    }
}

/// ns shown as ms, for people.
struct Ms(u64);

impl fmt::Display for Ms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1} ms", self.0 as f64 / 1e6)
    }
}
