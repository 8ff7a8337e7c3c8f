//! What the layer knows of each call site: its name, whether its spans
//! run in polls (it learns that from the first one that does), and how
//! its spans are named from their fields.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use tracing_core::Metadata;
use typhon_live_std::runtime;

use crate::fields::SiteFields;
use crate::naming::{Naming, NamingRule};

/// Name id of an interned name (the core's `NameId`).
pub(crate) type NameId = u32;

/// One call site of a span or an event.
pub(crate) struct Site {
    /// Its name: the span's name, or an event's `LEVEL message` (the
    /// first event's message). `None` when the name table was full.
    pub(crate) name: Option<NameId>,
    /// A span of it crossed an `.await` (was entered again, or left open
    /// while its thread ran something else): its spans are task spans
    /// from their creation on.
    asynchronous: AtomicBool,
    /// How its spans are named from their fields, if they are.
    pub(crate) naming: Option<Naming>,
    /// Its spans' fields, if it has any.
    pub(crate) fields: Option<SiteFields>,
}

impl Site {
    /// Whether its spans are task spans from their creation.
    #[inline]
    pub(crate) fn is_async(&self) -> bool {
        self.asynchronous.load(Ordering::Relaxed)
    }

    /// One of its spans ran in polls: so will the others.
    pub(crate) fn learnt_async(&self) {
        self.asynchronous.store(true, Ordering::Relaxed);
    }
}

/// Every call site seen, by its metadata's address: call sites are
/// `'static` and as many as the program has, so each `Site` is leaked
/// once, like the metadata it describes.
static SITES: OnceLock<Mutex<HashMap<usize, &'static Site>>> = OnceLock::new();

/// Entries of each thread's cache of sites.
const CACHED: usize = 64;

type Entry = Cell<Option<(usize, &'static Site)>>;

thread_local! {
    /// This thread's copy of the sites it used, direct-mapped by address:
    /// on every span's path, so one comparison and no lock or hash.
    static CACHE: [Entry; CACHED] = const { [const { Cell::new(None) }; CACHED] };
}

/// The site of `meta`, made the first time with `name` for its name and
/// `rule` naming its spans from their fields. Call sites are the
/// process's: the first layer to meet one decides.
#[inline]
pub(crate) fn of(
    meta: &'static Metadata<'static>,
    rule: &NamingRule,
    name: impl FnOnce() -> String,
) -> &'static Site {
    let key = meta as *const Metadata<'static> as usize;
    // Metadata are statics some dozens of bytes apart.
    let slot = (key >> 4) % CACHED;
    let cached = CACHE
        .try_with(|cache| match cache[slot].get() {
            Some((at, site)) if at == key => Some(site),
            _ => None,
        })
        .ok()
        .flatten();
    if let Some(site) = cached {
        return site;
    }
    let site = make(key, meta, rule, name);
    let _ = CACHE.try_with(|cache| cache[slot].set(Some((key, site))));
    site
}

#[cold]
fn make(
    key: usize,
    meta: &'static Metadata<'static>,
    rule: &NamingRule,
    name: impl FnOnce() -> String,
) -> &'static Site {
    let sites = SITES.get_or_init(Mutex::default);
    let mut sites = sites.lock().unwrap_or_else(PoisonError::into_inner);
    sites.entry(key).or_insert_with(|| {
        let naming = meta.is_span().then(|| Naming::of(meta, rule)).flatten();
        let fields = meta.is_span().then(|| SiteFields::of(meta)).flatten();
        Box::leak(Box::new(Site {
            name: runtime::intern(&name()),
            asynchronous: AtomicBool::new(false),
            naming,
            fields,
        }))
    })
}
