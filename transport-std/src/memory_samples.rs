//! The exporter thread's reading of the process's memory (FORMAT.md,
//! "Samples"): the totals [`Tracking`](crate::Tracking) counts, and the
//! sampled allocation sites ([`allocation_sites`]), each site's stack
//! symbolized once, on a thread of its own, its frames interned as names.
//! A site is told once its stack is.
//!
//! A site's totals are cumulative, and sent while they move and again
//! every [`ALL_EVERY`] when they do not: a reader that lost a frame, or
//! joined late, has every site's totals right within that time.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};

use typhon_live_core::samples::MAX_STACK_FRAMES;
use typhon_live_core::{Memory, NameId, SiteSample, SiteTotals};

use crate::allocation_sites::{self, SiteCopy, MAX_SITES};
use crate::{runtime, tracking};

/// How often the memory and the sites that moved are sent.
const EVERY: Duration = Duration::from_millis(100);
/// The symbolizer gives back the debug information it parsed after this
/// long without a new stack.
const IDLE: Duration = Duration::from_secs(5);
/// Distinct frame names interned at most: the profiler's name table is
/// the program's too.
const MAX_FRAME_NAMES: usize = 4096;
/// The name of every frame past [`MAX_FRAME_NAMES`].
const OTHER_FRAMES: &str = "(a frame past the names kept)";
/// The site id of the symbolizer's first stack, its own: no site's.
const WARM_UP: u32 = u32::MAX;
/// How often every site is sent, moved or not.
pub(crate) const ALL_EVERY: Duration = Duration::from_secs(1);

/// The global allocator's entry points: a stack starts past them. Their
/// frames are there whatever was inlined (an inlined frame keeps its
/// name), where the profiler's own frames may be named without their path
/// (`trace`, `sampled`).
const ENTRY_FRAMES: [&str; 3] = ["__rust_alloc", "__rust_realloc", "__rust_alloc_zeroed"];
/// Frames that are the profiler's own, or the allocator's: where no entry
/// point is named (`Tracking` called directly), a stack starts past the
/// leading ones.
const OWN_FRAMES: [&str; 6] = [
    "backtrace::",
    "trace_unsynchronized",
    "typhon_live_std::allocation_sites",
    "typhon_live_std::tracking",
    "LocalKey<",
    "alloc::alloc::",
];

/// What a frame is to a stack.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// The global allocator's entry point.
    Entry,
    /// The profiler's or the allocator's.
    Own,
    /// The program's, or a library's it called.
    Program,
}

impl Frame {
    fn of(name: &str) -> Frame {
        if ENTRY_FRAMES.iter().any(|e| name.contains(e)) {
            Frame::Entry
        } else if OWN_FRAMES.iter().any(|o| name.contains(o)) {
            Frame::Own
        } else {
            Frame::Program
        }
    }
}

/// What the exporter knows of the sites.
pub(crate) struct MemorySamples {
    next: Option<Instant>,
    next_all: Option<Instant>,
    /// The sites taken this time.
    taken: Vec<SiteCopy>,
    /// Each site's stack, as names, once symbolized.
    stacks: Vec<Option<Vec<NameId>>>,
    /// Sites whose stacks are being symbolized, with their last totals.
    waiting: HashMap<u32, SiteTotals>,
    symbolizer: Option<Symbolizer>,
    /// Sites due, ready to tell: their stacks' names are interned.
    due: Vec<(u32, SiteTotals)>,
    memory: Option<Memory>,
}

/// What one sample of the memory holds.
pub(crate) struct MemoryDue<'a> {
    pub(crate) memory: Memory,
    pub(crate) sites: Vec<SiteSample<'a>>,
}

impl MemorySamples {
    pub(crate) fn new() -> MemorySamples {
        MemorySamples {
            next: None,
            next_all: None,
            taken: Vec::with_capacity(MAX_SITES),
            stacks: Vec::new(),
            waiting: HashMap::new(),
            symbolizer: None,
            due: Vec::new(),
            memory: None,
        }
    }

    /// Takes, when due at `now`, the process's totals and the sites to
    /// tell whose stacks are symbolized: call it before the cycle's frames
    /// are written, so that their frames' names go out before them.
    pub(crate) fn take(&mut self, now: Instant) {
        if self.next.is_some_and(|next| now < next) {
            return;
        }
        self.next = Some(now + EVERY);
        if !tracking::counting() {
            // `Tracking` is not the global allocator: nothing to tell.
            return;
        }
        let totals = tracking::memory_totals();
        let all = self.next_all.is_none_or(|next| now >= next);
        if all {
            self.next_all = Some(now + ALL_EVERY);
        }
        if self.symbolizer.is_none() && allocation_sites::sampling_mean() != 0 {
            // Started before the first site, and asked for a stack of
            // its own: the debug information loads while the first
            // samples are taken, not after.
            let symbolizer = Symbolizer::start();
            let here = MemorySamples::take as *const () as usize;
            let _ = symbolizer.asks.send((WARM_UP, vec![here]));
            self.symbolizer = Some(symbolizer);
        }
        // The sites' lock is held while they are copied: nothing this
        // thread does meanwhile may be sampled, which would take it again.
        tracking::unsampled(|| allocation_sites::take_sites(all, &mut self.taken));
        self.due.clear();
        for site in &self.taken {
            let index = site.site as usize;
            if self.stacks.len() <= index {
                self.stacks.resize(index + 1, None);
            }
            if self.stacks[index].is_some() {
                self.due.push((site.site, site.totals));
            } else if self.waiting.insert(site.site, site.totals).is_none() {
                let symbolizer = self.symbolizer.get_or_insert_with(Symbolizer::start);
                let _ = symbolizer.asks.send((site.site, site.addresses.to_vec()));
            }
        }
        // Stacks symbolized since: their sites are told with their last
        // totals (none of them was told above).
        if let Some(symbolizer) = &self.symbolizer {
            for (site, stack) in symbolizer.done.try_iter() {
                if let Some(slot) = self.stacks.get_mut(site as usize) {
                    *slot = Some(stack);
                }
                if let Some(totals) = self.waiting.remove(&site) {
                    self.due.push((site, totals));
                }
            }
        }
        let (sampled, missed) = allocation_sites::sample_counts();
        self.memory = Some(Memory {
            allocated: totals.allocated,
            freed: totals.freed,
            sampling_mean: allocation_sites::sampling_mean(),
            sampled,
            missed,
        });
    }

    /// What was taken, to tell once: the totals and the sites.
    pub(crate) fn due(&mut self) -> Option<MemoryDue<'_>> {
        let memory = self.memory.take()?;
        let stacks = &self.stacks;
        let sites = self
            .due
            .drain(..)
            .filter_map(|(site, totals)| {
                let frames = stacks.get(site as usize)?.as_deref()?;
                Some(SiteSample {
                    site,
                    frames,
                    totals,
                })
            })
            .collect();
        Some(MemoryDue { memory, sites })
    }
}

/// A thread that symbolizes stacks: the first one loads the program's
/// debug information, which takes a good part of a second, and the
/// exporter thread must not stop for it.
struct Symbolizer {
    asks: Sender<(u32, Vec<usize>)>,
    done: Receiver<(u32, Vec<NameId>)>,
}

impl Symbolizer {
    fn start() -> Symbolizer {
        let (asks, asked) = mpsc::channel::<(u32, Vec<usize>)>();
        let (tell, done) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("typhon-live-symbols".into())
            .spawn(move || {
                // What it parses (tens of MB, given back when idle) is
                // counted in the process's memory, and is no site of the
                // program's.
                tracking::never_sampled();
                let mut symbols = Symbols::default();
                loop {
                    let (site, addresses) = match asked.recv_timeout(IDLE) {
                        Ok(asked) => asked,
                        Err(RecvTimeoutError::Timeout) => {
                            // New sites are rare once a program runs: the
                            // debug information parsed (tens of MB) is
                            // given back while none comes, and parsed
                            // again for the next.
                            backtrace::clear_symbol_cache();
                            match asked.recv() {
                                Ok(asked) => asked,
                                Err(_) => break,
                            }
                        }
                        // The exporter dropped its end.
                        Err(RecvTimeoutError::Disconnected) => break,
                    };
                    if tell.send((site, symbols.stack(&addresses))).is_err() {
                        break;
                    }
                }
            });
        if let Err(e) = spawned {
            log::warn!("typhon-live: allocation sites are not symbolized: {e}");
        }
        Symbolizer { asks, done }
    }
}

/// Frames' names by return address, each resolved once.
#[derive(Default)]
struct Symbols {
    /// Each return address's frames (more than one where calls were
    /// inlined), innermost first, as names, each with what it is.
    frames: HashMap<usize, Vec<(NameId, Frame)>>,
    /// Frames' names interned, by text.
    names: HashMap<String, NameId>,
    said_unresolved: bool,
    said_full: bool,
}

impl Symbols {
    /// A stack's frames as names, innermost first, less the profiler's
    /// own leading frames; an address that cannot be symbolized is named
    /// by its value (said once).
    fn stack(&mut self, addresses: &[usize]) -> Vec<NameId> {
        let mut frames = Vec::new();
        for &address in addresses {
            if !self.frames.contains_key(&address) {
                let names = self.resolve(address);
                self.frames.insert(address, names);
            }
            frames.extend_from_slice(&self.frames[&address]);
        }
        let start = match frames.iter().position(|f| f.1 == Frame::Entry) {
            // Past the entry point (and its inlined parts).
            Some(entry) => (frames[entry..].iter())
                .position(|f| f.1 != Frame::Entry)
                .map_or(frames.len(), |past| entry + past),
            None => (frames.iter())
                .position(|f| f.1 != Frame::Own)
                .unwrap_or(frames.len()),
        };
        (frames[start..].iter())
            .map(|f| f.0)
            .take(MAX_STACK_FRAMES)
            .collect()
    }

    /// The frames at one return address, innermost first, interned.
    fn resolve(&mut self, address: usize) -> Vec<(NameId, Frame)> {
        let mut texts = Vec::new();
        // A return address is past its call: one byte back is inside it.
        let inside = address.saturating_sub(1);
        backtrace::resolve(inside as *mut std::ffi::c_void, |symbol| {
            let Some(name) = symbol.name() else {
                return;
            };
            // `{:#}`: demangled, without the hash.
            let mut text = format!("{name:#}");
            let what = Frame::of(&text);
            if let (Some(file), Some(line)) = (symbol.filename(), symbol.lineno()) {
                let file = file.file_name().map_or_else(
                    || file.display().to_string(),
                    |f| f.to_string_lossy().into_owned(),
                );
                text = format!("{text} ({file}:{line})");
            }
            texts.push((text, what));
        });
        if texts.is_empty() {
            if !self.said_unresolved {
                self.said_unresolved = true;
                log::info!(
                    "typhon-live: an allocation site's frame has no symbol: it is named by its address"
                );
            }
            texts.push((format!("{address:#x}"), Frame::Program));
        }
        (texts.into_iter())
            .filter_map(|(text, what)| Some((self.name(text)?, what)))
            .collect()
    }

    /// A frame's name, interned; past [`MAX_FRAME_NAMES`] distinct ones,
    /// one name for all the rest (said once), so that stacks never crowd
    /// the program's own names out of the table.
    fn name(&mut self, text: String) -> Option<NameId> {
        if let Some(&id) = self.names.get(&text) {
            return Some(id);
        }
        if self.names.len() >= MAX_FRAME_NAMES {
            if !self.said_full {
                self.said_full = true;
                log::info!(
                    "typhon-live: {MAX_FRAME_NAMES} frames named: later ones are shown as {OTHER_FRAMES:?}"
                );
            }
            return runtime::intern(OTHER_FRAMES);
        }
        let id = runtime::intern(&text)?;
        self.names.insert(text, id);
        Some(id)
    }
}
