//! Fields of spans and task spans (FORMAT.md, "Fields"): a request's
//! route, a query's rows. A field comes right after its owner's record on
//! the owner's lane ([`FieldOwners`](typhon_live_reader::FieldOwners)
//! tells which); a field whose owner is
//! not that one (the owner was lost) is counted and dropped. Kept in the history's chunks beside the records, they give a
//! name's statistics grouped by a string field's value, and a numeric
//! field's distribution.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use typhon_live_core::{FieldOwner, FieldValue};

use typhon_live_reader::Names;

use crate::history::Chunk;
use crate::stats::Distribution;
use crate::Model;

/// What the model keeps of a record that can own fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) name: u32,
    /// Its duration (a task span's wall time), in ns.
    pub(crate) duration: u64,
    /// For a poll, its task span's id; else 0.
    pub(crate) task: u64,
}

/// A field kept, with what its owner was.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldRecord {
    /// The owner's name id.
    pub owner_name: u32,
    /// The owner's duration (a task span's wall time), in ns.
    pub owner_duration: u64,
    /// The field's key, a name id.
    pub key: u32,
    /// Its value.
    pub value: FieldValue,
}

/// A name's spans whose string field `key` had one value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldGroup {
    /// The value.
    pub value: String,
    /// Their durations, in ns (a task span's wall time).
    pub durations: Distribution,
}

impl Model {
    /// A field of `owner` on `lane`: kept if `owner` is the lane's last
    /// span or task end.
    pub(crate) fn field_read(
        &mut self,
        lane: u16,
        time: u64,
        key: u32,
        value: FieldValue,
        owner: FieldOwner,
    ) {
        match self.field_owners.field(lane, owner) {
            Some(last) => self.chunk.push_field(
                FieldRecord {
                    owner_name: last.name,
                    owner_duration: last.duration,
                    key,
                    value,
                },
                time,
            ),
            None => self.refused.fields += 1,
        }
    }

    /// The keys of the fields of spans named `name` in the history, with
    /// whether each had a numeric value.
    pub fn field_keys(&self, name: u32) -> Vec<(u32, bool)> {
        keys(self.chunks(), name)
    }

    /// Spans named `name` in the history, grouped by the value of their
    /// string field `key`, most spans first.
    pub fn field_groups(&self, name: u32, key: u32) -> Vec<FieldGroup> {
        groups(self.chunks(), name, key, self.names())
    }

    /// The values of the numeric field `key` of spans named `name` in
    /// the history ([`numbers`]).
    pub fn field_numbers(&self, name: u32, key: u32) -> Distribution {
        numbers(self.chunks(), name, key)
    }

    /// The history's chunks and the one being filled.
    fn chunks(&self) -> impl Iterator<Item = &Chunk> + Clone {
        (self.history.chunks().iter().map(|c| &**c)).chain(std::iter::once(&self.chunk))
    }
}

/// A span name's fields, as a view shows them beside its statistics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldSummary {
    /// The field's key.
    pub key: String,
    /// For a string field: its most frequent values' spans, most first.
    pub groups: Vec<FieldGroup>,
    /// For a string field: its distinct values (the groups listed may be
    /// fewer).
    pub values: usize,
    /// For a numeric field: its values' distribution.
    pub numbers: Option<Distribution>,
}

/// The fields of spans named `name` in `chunks`, each key once: a string
/// key's `most` most frequent values, a numeric key's distribution.
pub fn summaries<'a>(
    chunks: impl Iterator<Item = &'a Chunk> + Clone,
    name: u32,
    names: &Names,
    most: usize,
) -> Vec<FieldSummary> {
    keys(chunks.clone(), name)
        .into_iter()
        .map(|(key, numeric)| {
            let text = names.show(key).into_owned();
            if numeric {
                FieldSummary {
                    key: text,
                    groups: Vec::new(),
                    values: 0,
                    numbers: Some(numbers(chunks.clone(), name, key)),
                }
            } else {
                let mut groups = groups(chunks.clone(), name, key, names);
                let values = groups.len();
                groups.truncate(most);
                FieldSummary {
                    key: text,
                    groups,
                    values,
                    numbers: None,
                }
            }
        })
        .collect()
}

fn of_name<'a>(
    chunks: impl Iterator<Item = &'a Chunk>,
    name: u32,
) -> impl Iterator<Item = &'a FieldRecord> {
    chunks
        .flat_map(|c| c.fields.iter())
        .filter(move |f| f.owner_name == name)
}

/// The keys of the fields of spans named `name`, with whether each had
/// a numeric value, in the order first read.
pub fn keys<'a>(chunks: impl Iterator<Item = &'a Chunk>, name: u32) -> Vec<(u32, bool)> {
    let mut keys: Vec<(u32, bool)> = Vec::new();
    for field in of_name(chunks, name) {
        let numeric = !matches!(field.value, FieldValue::Str(_));
        if !keys.contains(&(field.key, numeric)) {
            keys.push((field.key, numeric));
        }
    }
    keys
}

/// Spans named `name`, grouped by the value of their string field
/// `key`: each value's spans' durations, most spans first.
pub fn groups<'a>(
    chunks: impl Iterator<Item = &'a Chunk>,
    name: u32,
    key: u32,
    names: &Names,
) -> Vec<FieldGroup> {
    let mut by_value: HashMap<u32, Vec<u64>> = HashMap::new();
    for field in of_name(chunks, name).filter(|f| f.key == key) {
        if let FieldValue::Str(value) = field.value {
            by_value
                .entry(value)
                .or_default()
                .push(field.owner_duration);
        }
    }
    let mut groups: Vec<FieldGroup> = by_value
        .into_iter()
        .map(|(value, mut durations)| FieldGroup {
            value: names.show(value).into_owned(),
            durations: Distribution::of(&mut durations, 0, 0),
        })
        .collect();
    groups.sort_by(|a, b| (b.durations.count, &a.value).cmp(&(a.durations.count, &b.value)));
    groups
}

/// The values of the numeric field `key` of spans named `name`: count,
/// percentiles, histogram. Values below zero count as zero, fractions
/// are rounded down: the distribution is of whole non-negative numbers,
/// as a count of rows or bytes is.
pub fn numbers<'a>(chunks: impl Iterator<Item = &'a Chunk>, name: u32, key: u32) -> Distribution {
    let mut values: Vec<u64> = of_name(chunks, name)
        .filter(|f| f.key == key)
        .filter_map(|f| match f.value {
            FieldValue::Int(v) => Some(v.max(0) as u64),
            FieldValue::Float(v) if v.is_finite() => Some(v.max(0.0) as u64),
            _ => None,
        })
        .collect();
    Distribution::of(&mut values, 0, 0)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use typhon_live_core::Event;

    use super::*;
    use crate::limits::MAX_FIELDS_PER_SPAN;

    fn span(id: u32) -> Event {
        Event::Span {
            start: 1000,
            duration: 100,
            name: 5,
            id,
            parent: 0,
            arg: None,
        }
    }

    fn field(owner: FieldOwner) -> Event {
        Event::Field {
            time: 1000,
            key: 7,
            value: FieldValue::Int(3),
            owner,
        }
    }

    #[test]
    fn a_field_belongs_to_the_record_right_before_it_and_is_bounded() {
        let mut model = Model::default();
        let mut read = |event: Event| model.on_event(0, &event, Duration::ZERO);
        read(span(1));
        read(field(FieldOwner::Span(1)));
        // Its owner was lost: the record before it is another.
        read(field(FieldOwner::Span(2)));
        read(field(FieldOwner::Task(1)));
        // Anything else in between ends the owner's fields.
        read(Event::Instant {
            time: 1100,
            name: 6,
            payload: 0,
        });
        read(field(FieldOwner::Span(1)));
        // A peer's endless fields of one span.
        read(span(2));
        for _ in 0..MAX_FIELDS_PER_SPAN + 4 {
            read(field(FieldOwner::Span(2)));
        }
        read(Event::TaskEnd {
            time: 2000,
            name: 8,
            task: 9,
            wall: 500,
            busy: 20,
        });
        read(field(FieldOwner::Task(9)));
        let kept = &model.chunk.fields;
        assert_eq!(kept.len(), 1 + MAX_FIELDS_PER_SPAN as usize + 1);
        assert_eq!((kept[0].owner_name, kept[0].owner_duration), (5, 100));
        let last = kept.last().expect("the task's");
        assert_eq!((last.owner_name, last.owner_duration), (8, 500));
        assert_eq!(model.refused.fields, 3 + 4);
        assert_eq!(model.field_keys(5), [(7, true)]);
        assert_eq!(model.field_numbers(5, 7).count, 1 + 16);
    }
}
