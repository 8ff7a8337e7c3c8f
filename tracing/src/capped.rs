//! Names made from recorded values, interned at most a set number per
//! call site: past the cap, a call site's new values share one name, so
//! that ten thousand `/users/ID` paths never fill the name table.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use typhon_live_std::runtime;

use crate::site::NameId;

/// Distinct names one call site may make from values.
pub const MAX_PER_SITE: usize = 128;

/// A call site's names made from values.
pub(crate) struct Capped {
    /// The name past the cap.
    other: String,
    made: Mutex<Made>,
}

#[derive(Default)]
struct Made {
    names: HashMap<String, NameId>,
    other: Option<NameId>,
}

impl Capped {
    /// Names past the cap are all `other`.
    pub(crate) fn new(other: String) -> Capped {
        Capped {
            other,
            made: Mutex::default(),
        }
    }

    /// The name id of `text`, interned the first time; `None` when the
    /// name table is full.
    pub(crate) fn intern(&self, text: &str) -> Option<NameId> {
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&id) = made.names.get(text) {
            return Some(id);
        }
        if made.names.len() >= MAX_PER_SITE {
            if made.other.is_none() {
                made.other = runtime::intern(&self.other);
            }
            return made.other;
        }
        let id = runtime::intern(text)?;
        made.names.insert(text.to_owned(), id);
        Some(id)
    }
}

/// `text` cut to at most `max` bytes, on a character boundary; whether
/// it was cut.
pub(crate) fn cut(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}
