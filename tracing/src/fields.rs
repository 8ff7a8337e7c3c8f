//! A span's fields, carried in the stream (FORMAT.md, "Fields"): numbers
//! as they are, strings interned per call site within a cap (past it,
//! `(other)`), at most [`MAX_FIELDS`] a span, each string at most
//! [`MAX_VALUE_BYTES`] (a cut one ends in `…`).

use std::fmt::{self, Write};

use tracing_core::field::{Field, Visit};
use tracing_core::Metadata;
use typhon_live_core::FieldValue;
use typhon_live_std::runtime;

use crate::capped::{cut, Capped};
use crate::site::NameId;

/// Fields a span carries at most; further ones are not carried.
pub const MAX_FIELDS: usize = 8;
/// Bytes of a string value carried at most.
pub const MAX_VALUE_BYTES: usize = 64;

/// What the layer keeps of a call site's fields.
pub(crate) struct SiteFields {
    /// Each field's key, interned, by its index in the call site.
    keys: Vec<Option<NameId>>,
    /// Its string values.
    values: Capped,
}

impl SiteFields {
    /// The fields of `meta`, if it has any.
    pub(crate) fn of(meta: &'static Metadata<'static>) -> Option<SiteFields> {
        let fields = meta.fields();
        (!fields.is_empty()).then(|| SiteFields {
            keys: fields.iter().map(|f| runtime::intern(f.name())).collect(),
            values: Capped::new("(other)".into()),
        })
    }
}

/// A span's fields, in its extensions: inline, no allocation of their own.
#[derive(Default)]
pub(crate) struct SpanFields(pub(crate) heapless::Vec<(NameId, FieldValue), MAX_FIELDS>);

/// Records a span's fields into a [`SpanFields`]; a field recorded again
/// replaces its value.
pub(crate) struct FieldVisitor<'a> {
    pub(crate) site: &'a SiteFields,
    pub(crate) fields: &'a mut SpanFields,
}

impl FieldVisitor<'_> {
    fn put(&mut self, field: &Field, value: FieldValue) {
        let Some(&Some(key)) = self.site.keys.get(field.index()) else {
            return;
        };
        let fields = &mut self.fields.0;
        if let Some(slot) = fields.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = value;
        } else {
            // Past MAX_FIELDS, not carried.
            let _ = fields.push((key, value));
        }
    }

    fn put_text(&mut self, field: &Field, mut text: String) {
        if cut(&mut text, MAX_VALUE_BYTES - '…'.len_utf8()) {
            text.push('…');
        }
        if let Some(id) = self.site.values.intern(&text) {
            self.put(field, FieldValue::Str(id));
        }
    }
}

impl Visit for FieldVisitor<'_> {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, FieldValue::Int(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        let value = i64::try_from(value).map_or(FieldValue::Float(value as f64), FieldValue::Int);
        self.put(field, value);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, FieldValue::Int(i64::from(value)));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, FieldValue::Float(value));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if value.len() <= MAX_VALUE_BYTES {
            // Whole: looked up as it is, without a copy.
            if let Some(id) = self.site.values.intern(value) {
                self.put(field, FieldValue::Str(id));
            }
            return;
        }
        let mut text = String::new();
        let _ = Bounded::new(&mut text, MAX_VALUE_BYTES + 4).write_str(value);
        self.put_text(field, text);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let mut text = String::new();
        let _ = write!(Bounded::new(&mut text, MAX_VALUE_BYTES + 4), "{value:?}");
        self.put_text(field, text);
    }
}

/// Text written into a string until it holds `limit` bytes, then no
/// more: a huge value costs no more than its bound. Write a little past
/// the bound to tell that the value was longer.
pub(crate) struct Bounded<'a> {
    out: &'a mut String,
    limit: usize,
}

impl<'a> Bounded<'a> {
    /// Writes into `out` up to `limit` bytes in all.
    pub(crate) fn new(out: &'a mut String, limit: usize) -> Self {
        Bounded { out, limit }
    }

    /// Whether the string is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.out.is_empty()
    }
}

impl Write for Bounded<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.limit.saturating_sub(self.out.len());
        if room == 0 {
            return Err(fmt::Error);
        }
        let mut end = s.len().min(room);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.out.push_str(&s[..end]);
        Ok(())
    }
}
