//! An event's text: its message, then its other fields as `key=value`, as
//! `tracing_subscriber::fmt` prints them, cut to
//! [`MAX_TEXT_BYTES`](typhon_live_core::MAX_TEXT_BYTES) (FORMAT.md, "Text
//! frames"), and recorded beside the event's instant.

use std::cell::RefCell;
use std::fmt::{self, Write};

use tracing_core::field::{Field, Visit};
use tracing_core::{Event, Level};
use typhon_live_core::MAX_TEXT_BYTES;
use typhon_live_std::texts;

use crate::fields::Bounded;
use crate::site::NameId;

thread_local! {
    // Reused, so that an event's text costs no allocation once warm.
    static TEXT: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Records `event`'s text, of call site `site`, at `time`; returns its
/// first integer field (the payload of its instant), read in the same
/// pass.
pub(crate) fn record(time: u64, site: NameId, event: &Event<'_>) -> Option<u64> {
    let level = level(*event.metadata().level());
    let write = |text: &mut String| {
        text.clear();
        let mut visitor = TextVisitor {
            text,
            integer: None,
        };
        event.record(&mut visitor);
        texts::record_at(time, site, level, visitor.text);
        visitor.integer
    };
    // A field's Debug that logs an event of its own finds the buffer
    // taken: it gets one of its own.
    match TEXT.try_with(|text| text.try_borrow_mut().map(|mut t| write(&mut t))) {
        Ok(Ok(integer)) => integer,
        _ => write(&mut String::new()),
    }
}

fn level(level: Level) -> typhon_live_core::Level {
    match level {
        Level::TRACE => typhon_live_core::Level::Trace,
        Level::DEBUG => typhon_live_core::Level::Debug,
        Level::INFO => typhon_live_core::Level::Info,
        Level::WARN => typhon_live_core::Level::Warn,
        Level::ERROR => typhon_live_core::Level::Error,
    }
}

/// Writes fields into the text: the message as it is, others as
/// ` key=value`. Past the bound (and a byte more, so the cut is seen),
/// nothing more is formatted. Keeps the first integer field too.
struct TextVisitor<'a> {
    text: &'a mut String,
    integer: Option<u64>,
}

impl TextVisitor<'_> {
    fn key(&mut self, field: &Field) -> Bounded<'_> {
        let mut out = Bounded::new(self.text, MAX_TEXT_BYTES + 1);
        if field.name() != "message" {
            if !out.is_empty() {
                let _ = out.write_char(' ');
            }
            let _ = out.write_str(field.name());
            let _ = out.write_char('=');
        }
        out
    }
}

impl Visit for TextVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = self.key(field).write_str(value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let _ = write!(self.key(field), "{value:?}");
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        // Negative values keep their two's-complement bits.
        self.integer.get_or_insert(value as u64);
        let _ = write!(self.key(field), "{value}");
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.integer.get_or_insert(value);
        let _ = write!(self.key(field), "{value}");
    }
}
