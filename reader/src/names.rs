//! The names a stream defined, kept up to a cap that a hostile peer
//! cannot grow past.

use alloc::borrow::Cow;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;

use typhon_live_core::{NameId, NameSource};

/// Names kept at most. A typhon-live process interns at most 16 384
/// names, so this binds only on a peer that is broken or hostile.
pub const MAX_NAMES: usize = 65_536;
/// Bytes of name text kept at most (a process has at most 1 MiB).
pub const MAX_NAME_BYTES: usize = 16 << 20;

/// Names by id, as Inits and Definitions defined them.
#[derive(Clone, Debug, Default)]
pub struct Names {
    texts: BTreeMap<NameId, String>,
    bytes: usize,
}

/// What [`Names::define`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defined {
    /// A name new to this table, or new text for an id.
    New,
    /// The text it already had.
    Same,
    /// Refused: [`MAX_NAMES`] or [`MAX_NAME_BYTES`] was reached.
    Refused,
}

impl Names {
    /// No names.
    pub fn new() -> Self {
        Names::default()
    }

    /// The text of `id`, if defined.
    pub fn get(&self, id: NameId) -> Option<&str> {
        self.texts.get(&id).map(String::as_str)
    }

    /// The text of `id`, or `#id` until it is defined (FORMAT.md,
    /// "Lanes and names").
    pub fn show(&self, id: NameId) -> Cow<'_, str> {
        match self.get(id) {
            Some(text) => Cow::Borrowed(text),
            None => Cow::Owned(format!("#{id}")),
        }
    }

    /// Names kept.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Bytes of text kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Every name, by id.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (NameId, &str)> {
        self.texts.iter().map(|(&id, text)| (id, text.as_str()))
    }

    /// Keeps `text` for `id`, unless a cap is reached.
    pub fn define(&mut self, id: NameId, text: &str) -> Defined {
        let known = self.texts.get(&id);
        if known.is_some_and(|k| k == text) {
            return Defined::Same;
        }
        let bytes = self.bytes - known.map_or(0, String::len) + text.len();
        if (known.is_none() && self.texts.len() >= MAX_NAMES) || bytes > MAX_NAME_BYTES {
            return Defined::Refused;
        }
        self.bytes = bytes;
        self.texts.insert(id, String::from(text));
        Defined::New
    }

    /// Forgets every name (a new session: its ids mean other things).
    pub fn clear(&mut self) {
        self.texts.clear();
        self.bytes = 0;
    }
}

/// Written back out as a names section: ids `0..=` the largest kept, an
/// id never defined as an empty name.
impl NameSource for Names {
    fn count(&self) -> u32 {
        self.texts
            .last_key_value()
            .map_or(0, |(&id, _)| id.saturating_add(1))
    }

    fn get(&self, id: NameId) -> Option<&str> {
        Names::get(self, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_refuse_and_redefinitions_replace() {
        let mut names = Names::new();
        assert_eq!(names.define(3, "a"), Defined::New);
        assert_eq!(names.define(3, "a"), Defined::Same);
        assert_eq!(names.define(3, "bb"), Defined::New);
        assert_eq!((names.len(), names.bytes()), (1, 2));
        assert_eq!(names.show(3), "bb");
        assert_eq!(names.show(4), "#4");
        let big = "x".repeat(MAX_NAME_BYTES);
        assert_eq!(names.define(5, &big), Defined::Refused);
        assert_eq!(names.count(), 4);
        for id in 0..MAX_NAMES as u32 {
            names.define(id + 10, "");
        }
        assert_eq!(names.len(), MAX_NAMES);
        assert_eq!(names.define(u32::MAX, "late"), Defined::Refused);
        assert_eq!(names.define(3, "c"), Defined::New, "a known id may change");
    }
}
