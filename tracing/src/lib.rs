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
//! - A span entered once, on one thread, and closed becomes a span of
//!   that thread's lane, from its enter to its exit.
//! - A span that crosses an `.await` (it is entered again, or its thread
//!   runs something else before it closes) becomes a *task span*
//!   (FORMAT.md, "Tasks"): one span from its creation to its close,
//!   whatever threads polled it, with its busy time (its polls) and its
//!   idle time; each poll is a span of the lane it ran on. The layer
//!   learns this per call site, from the first such span: from then on
//!   the call site's spans are task spans from their creation.
//! - A span named from its fields: `otel.name`; else the method and
//!   `http.route`; else the method and the URI's path (tower-http's
//!   `TraceLayer`), capped per call site; or by templates of your own
//!   ([`naming::NamingRule`], [`TyphonLayer::named_by`]).
//! - A span's first integer field is its argument (negative values keep
//!   their two's-complement bits); a later `record` of an integer field
//!   replaces it.
//! - A span's fields are carried with it ([`fields`]): numbers as they
//!   are, strings interned per call site within a cap, at most
//!   [`fields::MAX_FIELDS`] a span, so that a viewer can group a name's
//!   statistics by a field's value.
//! - An event becomes an instant named `LEVEL message`; its first integer
//!   field is the payload. Its text, the message then its other fields as
//!   `key=value`, is kept beside it in the stream's log (FORMAT.md, "Text
//!   frames"), cut to `MAX_TEXT_BYTES`.
//!
//! Names are interned once per call site, never per call: a span's name
//! when its call site registers, an event's on the call site's first event
//! (a message with formatted arguments is named after that first one).
//! With no profiler running, nothing is recorded.
#![deny(missing_docs)]

mod capped;
mod event_text;
pub mod fields;
mod first_run;
pub mod naming;
mod site;
mod thread;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::{LookupSpan, SpanRef};
use typhon_live_std::{runtime, tasks};

use crate::fields::{FieldVisitor, SpanFields};
use crate::naming::NamingRule;
use crate::site::{NameId, Site};
use crate::thread::{Entered, Pending};

/// The layer: add it to a `tracing_subscriber::registry()`.
#[derive(Default)]
pub struct TyphonLayer {
    /// How spans are named from their fields.
    naming: NamingRule,
}

/// A span's argument, kept in the registry's extensions; only spans with
/// an integer field get one (an extension costs an allocation).
struct SpanArg(u64);

/// A span's name built from its fields, when it differs from its call
/// site's.
struct SpanName(NameId);

/// A task span's state, in its extensions.
struct Task {
    id: u64,
    /// When it was created, on the profiler's clock: the start of its
    /// first poll when it was not known to be a task at its creation.
    created: AtomicU64,
    /// Its polls so far, in ns.
    busy: AtomicU64,
}

impl Task {
    fn new(id: u64, created: u64, busy: u64) -> Task {
        Task {
            id,
            created: AtomicU64::new(created),
            busy: AtomicU64::new(busy),
        }
    }
}

/// A span closed on another thread than the one where its first run
/// waits to be recorded: that run was all of it.
struct Closed;

impl TyphonLayer {
    /// A layer with no call site seen yet, naming spans from their
    /// fields by the conventions ([`NamingRule::conventions`]).
    pub fn new() -> Self {
        TyphonLayer::default()
    }

    /// A layer naming spans from their fields by `rule`. Call sites are
    /// the process's, like names: a call site met by two layers is named
    /// by the first one's rule.
    pub fn named_by(rule: NamingRule) -> Self {
        TyphonLayer { naming: rule }
    }

    /// The site of a span's call site.
    fn span_site(&self, meta: &'static Metadata<'static>) -> &'static Site {
        site::of(meta, &self.naming, || meta.name().to_owned())
    }
}

/// The task of the span `span` was created in, if that one is a task.
fn parent_task<S>(span: &SpanRef<'_, S>) -> u64
where
    S: for<'a> LookupSpan<'a>,
{
    span.parent()
        .and_then(|parent| parent.extensions().get::<Task>().map(|t| t.id))
        .unwrap_or(0)
}

/// The first run of a span, waiting on this thread: the span closed,
/// so it was an ordinary span; or this thread moved on, so it is a task.
fn resolve<S>(pending: Pending, ctx: &Context<'_, S>)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let promoted = first_run::clear(&pending.id);
    let Some(span) = ctx.span(&pending.id) else {
        if promoted {
            // Another thread made it a task, then closed it: this run was
            // a poll of a task already counted whole at its end, not a
            // span of its name again. Its task's id went with it.
            return pending.ended.record_poll(0, pending.name);
        }
        // Closed and gone on another thread, never entered again.
        return pending.ended.record();
    };
    pending.site.learnt_async();
    let mut extensions = span.extensions_mut();
    if extensions.get_mut::<Closed>().is_some() {
        drop(extensions);
        return pending.ended.record();
    }
    let (busy, start) = (pending.ended.duration(), pending.ended.start());
    let task = match extensions.get_mut::<Task>() {
        // Another thread made it a task first.
        Some(task) => {
            task.busy.fetch_add(busy, Ordering::Relaxed);
            task.created.fetch_min(start, Ordering::Relaxed);
            task.id
        }
        None => {
            // Its creation was not timed (it was not known to be a task
            // then): its first run's start stands for it.
            let id = tasks::new_task();
            extensions.insert(Task::new(id, start, busy));
            drop(extensions);
            tasks::begin(id, pending.name, start, parent_task(&span));
            id
        }
    };
    pending.ended.record_poll(task, pending.name);
}

/// The span `span`, entered here while its first run waits on another
/// thread, is a task: made one here unless that thread did first.
fn promote_here<S>(span: &SpanRef<'_, S>, site: &'static Site, name: NameId) -> u64
where
    S: for<'a> LookupSpan<'a>,
{
    site.learnt_async();
    let mut extensions = span.extensions_mut();
    if let Some(task) = extensions.get_mut::<Task>() {
        return task.id;
    }
    let (id, created) = (tasks::new_task(), runtime::now());
    extensions.insert(Task::new(id, created, 0));
    drop(extensions);
    first_run::promote(&span.id());
    tasks::begin(id, name, created, parent_task(span));
    id
}

impl<S> Layer<S> for TyphonLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if meta.is_span() {
            self.span_site(meta);
        }
        Interest::always()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !runtime::is_enabled() {
            return;
        }
        let site = self.span_site(attrs.metadata());
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let built = (site.naming.as_ref())
            .and_then(|naming| naming.name_from(|visit| attrs.record(visit)))
            .filter(|&name| Some(name) != site.name);
        let mut carried = SpanFields::default();
        if let Some(site_fields) = &site.fields {
            attrs.record(&mut FieldVisitor {
                site: site_fields,
                fields: &mut carried,
            });
        }
        if fields.integer.is_none() && built.is_none() && carried.0.is_empty() && !site.is_async() {
            // An ordinary span: nothing to keep.
            return;
        }
        let Some(span) = ctx.span(id) else {
            return;
        };
        let task = site.is_async().then(|| (tasks::new_task(), runtime::now()));
        let mut extensions = span.extensions_mut();
        if let Some(arg) = fields.integer {
            extensions.insert(SpanArg(arg));
        }
        if let Some(name) = built {
            extensions.insert(SpanName(name));
        }
        if !carried.0.is_empty() {
            extensions.insert(carried);
        }
        if let Some((task, created)) = task {
            extensions.insert(Task::new(task, created, 0));
            drop(extensions);
            if let Some(name) = built.or(site.name) {
                tasks::begin(task, name, created, parent_task(&span));
            }
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        values.record(&mut fields);
        let Some(span) = ctx.span(id) else {
            return;
        };
        let site = self.span_site(span.metadata());
        let built = (site.naming.as_ref())
            .and_then(|naming| naming.name_from(|visit| values.record(visit)));
        if let Some(site_fields) = &site.fields {
            let mut extensions = span.extensions_mut();
            let mut carried = extensions.remove::<SpanFields>().unwrap_or_default();
            values.record(&mut FieldVisitor {
                site: site_fields,
                fields: &mut carried,
            });
            if !carried.0.is_empty() {
                extensions.insert(carried);
                drop(extensions);
                // Entered or waiting here already: its fields go out with it.
                thread::with(|thread| {
                    let entered = thread.entered.iter_mut().filter(|e| &e.id == id);
                    entered.for_each(|e| e.has_fields = true);
                    if let Some(pending) = thread.pending.as_mut().filter(|p| &p.id == id) {
                        pending.has_fields = true;
                    }
                });
            }
        }
        if fields.integer.is_none() && built.is_none() {
            return;
        }
        {
            let mut extensions = span.extensions_mut();
            if let Some(arg) = fields.integer {
                match extensions.get_mut::<SpanArg>() {
                    Some(SpanArg(old)) => *old = arg,
                    None => extensions.insert(SpanArg(arg)),
                }
            }
            if let Some(name) = built {
                match extensions.get_mut::<SpanName>() {
                    Some(SpanName(old)) => *old = name,
                    None => extensions.insert(SpanName(name)),
                }
            }
        }
        // Already entered here: the argument and name go out when it exits.
        thread::with(|thread| {
            for entered in thread.entered.iter_mut().filter(|e| &e.id == id) {
                if let Some(arg) = fields.integer {
                    entered.guard.set_arg(arg);
                }
                if let Some(name) = built {
                    entered.name = name;
                }
            }
        });
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if !runtime::is_enabled() {
            return;
        }
        // This thread moves on: the span that waits is a task.
        if let Some(pending) = thread::with(|thread| thread.pending.take()).flatten() {
            resolve(pending, &ctx);
        }
        let Some(span) = ctx.span(id) else {
            return;
        };
        let site = self.span_site(span.metadata());
        let (name, arg, task, has_fields) = {
            let extensions = span.extensions();
            let name = extensions.get::<SpanName>().map(|n| n.0).or(site.name);
            let arg = extensions.get::<SpanArg>().map(|a| a.0);
            let has_fields = extensions.get::<SpanFields>().is_some();
            (
                name,
                arg,
                extensions.get::<Task>().map(|t| t.id),
                has_fields,
            )
        };
        let Some(name) = name else {
            return;
        };
        let task = match task {
            None if first_run::is_marked(id) => Some(promote_here(&span, site, name)),
            task => task,
        };
        let mut guard = runtime::span(name);
        if let Some(arg) = arg {
            guard.set_arg(arg);
        }
        let id = id.clone();
        thread::with(move |thread| {
            thread.entered.push(Entered {
                id,
                guard,
                task,
                name,
                site,
                has_fields,
            })
        });
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        /// What an exit leaves to do outside the thread's state.
        enum Exited {
            /// A poll of a known task, to record.
            Poll(Entered),
            /// A run that now waits for its close, in the place of one
            /// that waited before it.
            Waits { id: Id, earlier: Option<Pending> },
        }
        // Usually the innermost; exits out of order are tolerated.
        let exited = thread::with(|thread| {
            let at = thread.entered.iter().rposition(|e| &e.id == id)?;
            let entered = thread.entered.remove(at);
            if entered.task.is_some() {
                return Some(Exited::Poll(entered));
            }
            let ended = entered.guard.end_later()?;
            first_run::mark(&entered.id);
            let waits = Pending {
                id: entered.id.clone(),
                ended,
                name: entered.name,
                site: entered.site,
                has_fields: entered.has_fields,
            };
            let earlier = thread.pending.replace(waits);
            Some(Exited::Waits {
                id: entered.id,
                earlier,
            })
        })
        .flatten();
        match exited {
            Some(Exited::Poll(entered)) => {
                let Some(ended) = entered.guard.end_later() else {
                    return;
                };
                if let Some(span) = ctx.span(id) {
                    if let Some(state) = span.extensions().get::<Task>() {
                        state.busy.fetch_add(ended.duration(), Ordering::Relaxed);
                    }
                }
                if let Some(task) = entered.task {
                    ended.record_poll(task, entered.name);
                }
            }
            Some(Exited::Waits {
                id,
                earlier: Some(inner),
            }) if inner.id == id => {
                // The same span entered inside itself: two nested runs.
                inner.ended.record();
            }
            // A span that exited before this one and is still open: a task.
            Some(Exited::Waits {
                earlier: Some(earlier),
                ..
            }) => resolve(earlier, &ctx),
            _ => {}
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let pending = thread::with(|thread| match &thread.pending {
            Some(p) if p.id == id => thread.pending.take(),
            _ => None,
        })
        .flatten();
        if let Some(pending) = pending {
            if !first_run::clear(&id) {
                // Closed right after its one run, here: an ordinary span.
                let carried = (pending.has_fields)
                    .then(|| ctx.span(&id))
                    .flatten()
                    .and_then(|span| span.extensions_mut().remove::<SpanFields>());
                return match carried {
                    Some(carried) => pending.ended.record_with(&carried.0),
                    None => pending.ended.record(),
                };
            }
            // Another thread polled it meanwhile: a task, ending here.
            resolve(pending, &ctx);
        }
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let site = self.span_site(span.metadata());
        let mut extensions = span.extensions_mut();
        let Some(task) = extensions.get_mut::<Task>() else {
            // Its first run may wait on another thread: it was all of it.
            extensions.insert(Closed);
            return;
        };
        let created = task.created.load(Ordering::Relaxed);
        let (task, busy) = (task.id, task.busy.load(Ordering::Relaxed));
        let name = extensions.get_mut::<SpanName>().map(|n| n.0).or(site.name);
        let carried = extensions.remove::<SpanFields>().unwrap_or_default();
        drop(extensions);
        if let Some(name) = name {
            tasks::end_with(task, name, created, busy, &carried.0);
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !runtime::is_enabled() {
            return;
        }
        let meta = event.metadata();
        let site = site::of(meta, &self.naming, || {
            // First event of this call site: named after its message.
            let mut fields = Fields {
                message: Some(String::new()),
                ..Fields::default()
            };
            event.record(&mut fields);
            let message = fields.message.take().filter(|m| !m.is_empty());
            format!(
                "{} {}",
                meta.level(),
                message.as_deref().unwrap_or(meta.name())
            )
        });
        if let Some(name) = site.name {
            // One time for both: the instant and its text.
            let time = runtime::now();
            let payload = event_text::record(time, name, event);
            runtime::instant_at(name, time, payload.unwrap_or(0));
        }
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
