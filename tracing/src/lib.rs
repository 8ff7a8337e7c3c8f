//! A [`tracing_subscriber::Layer`] that records `tracing` spans and events
//! into typhon-live, so that code already instrumented with `tracing` shows
//! up in the live view without a rewrite.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! let config = typhon_live_std::config::ProfilerConfig { live: Some(9100), ..Default::default() };
//! let _profiler = typhon_live_std::Profiler::start(&config, &Default::default()).unwrap();
//! tracing_subscriber::registry().with(typhon_live_tracing::TyphonLayer::new()).init();
//! ```
//!
//! What becomes what:
//! - Each time a span is entered and exited on a thread, that thread's lane
//!   gets a span named after the `tracing` span. A span entered on several
//!   threads (an async task that moves) gives one lane span per entry.
//! - A span's first integer field is its argument (negative values keep
//!   their two's-complement bits); a later `record` of an integer field
//!   replaces it.
//! - An event becomes an instant named `LEVEL message`; its first integer
//!   field is the payload.
//!
//! Names are interned once per call site, never per call: a span's name
//! when its call site registers, an event's on the call site's first event
//! (a message with formatted arguments is named after that first one).
//! Recording costs one lookup in the subscriber's span registry per enter;
//! with no profiler running, nothing is recorded.
#![deny(missing_docs)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::sync::{PoisonError, RwLock};

use tracing_core::callsite::Identifier;
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;
use typhon_live_std::runtime::{self, SpanGuard};

/// Name id of an interned name (the core's `NameId`).
type NameId = u32;

/// The layer: add it to a `tracing_subscriber::registry()`.
#[derive(Default)]
pub struct TyphonLayer {
    /// Name per call site, interned once.
    names: RwLock<HashMap<Identifier, NameId>>,
}

/// A span's argument, kept in the registry's extensions; only spans with
/// an integer field get one (an extension costs an allocation).
struct SpanArg(u64);

thread_local! {
    /// Spans entered on this thread and not yet exited, innermost last.
    static ENTERED: RefCell<Vec<(Id, SpanGuard)>> = const { RefCell::new(Vec::new()) };
}

impl TyphonLayer {
    /// A layer with no call site seen yet.
    pub fn new() -> Self {
        TyphonLayer::default()
    }

    fn cached(&self, callsite: &Identifier) -> Option<NameId> {
        let names = self.names.read().unwrap_or_else(PoisonError::into_inner);
        names.get(callsite).copied()
    }

    /// The call site's name id, interning `name()` the first time.
    fn name_of(
        &self,
        meta: &'static Metadata<'static>,
        name: impl FnOnce() -> String,
    ) -> Option<NameId> {
        let callsite = meta.callsite();
        if let Some(id) = self.cached(&callsite) {
            return Some(id);
        }
        let id = runtime::intern(&name())?;
        let mut names = self.names.write().unwrap_or_else(PoisonError::into_inner);
        Some(*names.entry(callsite).or_insert(id))
    }
}

impl<S> Layer<S> for TyphonLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if meta.is_span() {
            self.name_of(meta, || meta.name().to_owned());
        }
        Interest::always()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let (Some(arg), Some(span)) = (fields.integer, ctx.span(id)) {
            span.extensions_mut().insert(SpanArg(arg));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        values.record(&mut fields);
        let Some(arg) = fields.integer else {
            return;
        };
        if let Some(span) = ctx.span(id) {
            let mut extensions = span.extensions_mut();
            match extensions.get_mut::<SpanArg>() {
                Some(SpanArg(old)) => *old = arg,
                None => extensions.insert(SpanArg(arg)),
            }
        }
        // Already entered here: the argument goes out when it exits.
        let _ = ENTERED.try_with(|entered| {
            for (entered_id, guard) in entered.borrow_mut().iter_mut() {
                if entered_id == id {
                    guard.set_arg(arg);
                }
            }
        });
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if !runtime::is_enabled() {
            return;
        }
        let Some(span) = ctx.span(id) else {
            return;
        };
        let meta = span.metadata();
        let Some(name) = self.name_of(meta, || meta.name().to_owned()) else {
            return;
        };
        let mut guard = runtime::span(name);
        if let Some(SpanArg(arg)) = span.extensions().get::<SpanArg>() {
            guard.set_arg(*arg);
        }
        let _ = ENTERED.try_with(|entered| entered.borrow_mut().push((id.clone(), guard)));
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        let _ = ENTERED.try_with(|entered| {
            let mut entered = entered.borrow_mut();
            // Usually the innermost; exits out of order are tolerated.
            if let Some(at) = entered.iter().rposition(|(entered_id, _)| entered_id == id) {
                let (_, guard) = entered.remove(at);
                drop(entered);
                drop(guard); // records the span
            }
        });
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !runtime::is_enabled() {
            return;
        }
        let meta = event.metadata();
        let mut fields = Fields::default();
        let name = match self.cached(&meta.callsite()) {
            Some(name) => {
                event.record(&mut fields);
                name
            }
            None => {
                // First event of this call site: keep its message too.
                fields.message = Some(String::new());
                event.record(&mut fields);
                let message = fields.message.take().filter(|m| !m.is_empty());
                let Some(name) = self.name_of(meta, || {
                    format!(
                        "{} {}",
                        meta.level(),
                        message.as_deref().unwrap_or(meta.name())
                    )
                }) else {
                    return;
                };
                name
            }
        };
        runtime::instant(name, fields.integer.unwrap_or(0));
    }
}

/// Collects a span's or event's first integer field, and an event's
/// message when asked to (`message` is `Some`).
#[derive(Default)]
struct Fields {
    integer: Option<u64>,
    message: Option<String>,
}

impl Visit for Fields {
    fn record_u64(&mut self, _field: &Field, value: u64) {
        self.integer.get_or_insert(value);
    }

    fn record_i64(&mut self, _field: &Field, value: i64) {
        self.integer.get_or_insert(value as u64);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if let (Some(message), "message") = (&mut self.message, field.name()) {
            message.push_str(value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if let (Some(message), "message") = (&mut self.message, field.name()) {
            use fmt::Write;
            let _ = write!(message, "{value:?}");
        }
    }
}
