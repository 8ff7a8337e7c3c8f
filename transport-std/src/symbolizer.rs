//! One symbolizer for the process, on a thread of its own: code addresses
//! become frames, each named `function (file:line)` and interned as a
//! name, with the calls inlined at each. The allocation sites' stacks and
//! the sampled stacks both ask it. The first address loads the program's
//! debug information, which takes a good part of a second, and the
//! exporter thread must not stop for it: it asks, and takes the answers
//! in a later cycle.
//!
//! What it keeps is bounded: frame names (they share the program's name
//! table), and the frames of the addresses it resolved (a cache).

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use typhon_live_core::samples::MAX_STACK_FRAMES;
use typhon_live_core::stacks::{write_frame_name, MAX_FRAME_NAME_LEN, MAX_INLINED_FRAMES};
use typhon_live_core::NameId;

use crate::{runtime, tracking};

/// The symbolizer gives back the debug information it parsed after this
/// long without a question.
const IDLE: Duration = Duration::from_secs(5);
/// Distinct frame names interned at most: the profiler's name table is
/// the program's too.
const MAX_FRAME_NAMES: usize = 8192;
/// Bytes of frame names interned at most: half the name table's text.
const MAX_FRAME_NAME_BYTES: usize = runtime::NAME_BYTES / 2;
/// The name of every frame past [`MAX_FRAME_NAMES`].
const OTHER_FRAMES: &str = "(a frame past the names kept)";
/// Addresses whose frames are kept, at most: past it the cache starts
/// over.
const MAX_CACHED: usize = 1 << 16;

/// The global allocator's entry points: an allocation site's stack starts
/// past them. Their frames are there whatever was inlined (an inlined
/// frame keeps its name), where the profiler's own frames may be named
/// without their path (`trace`, `sampled`).
const ENTRY_FRAMES: [&str; 3] = ["__rust_alloc", "__rust_realloc", "__rust_alloc_zeroed"];
/// Frames that are the profiler's own, or the allocator's: where no entry
/// point is named (`Tracking` called directly), a site's stack starts
/// past the leading ones.
const OWN_FRAMES: [&str; 6] = [
    "backtrace::",
    "trace_unsynchronized",
    "typhon_live_std::allocation_sites",
    "typhon_live_std::tracking",
    "LocalKey<",
    "alloc::alloc::",
];

/// What is asked.
enum Ask {
    /// An allocation site's stack, as return addresses, innermost first.
    Site(u32, Vec<usize>),
    /// Code addresses, each inside an instruction (a sampled stack's).
    Code(Vec<u64>),
}

/// What is answered.
pub(crate) enum Answer {
    /// A site's stack as names, innermost first, less the profiler's and
    /// the allocator's own leading frames.
    Site(u32, Vec<NameId>),
    /// Each address's frames, innermost (inlined) first: at least one
    /// (its address, where it has no symbol).
    Code(Vec<(u64, Vec<NameId>)>),
}

/// The exporter's end of the symbolizer thread, started at the first
/// question.
#[derive(Default)]
pub(crate) struct Symbolizer {
    thread: Option<(Sender<Ask>, Receiver<Answer>)>,
}

impl Symbolizer {
    /// Asks for an allocation site's stack.
    pub(crate) fn ask_site(&mut self, site: u32, addresses: Vec<usize>) {
        self.ask(Ask::Site(site, addresses));
    }

    /// Asks for the frames at code addresses.
    pub(crate) fn ask_code(&mut self, addresses: Vec<u64>) {
        if !addresses.is_empty() {
            self.ask(Ask::Code(addresses));
        }
    }

    fn ask(&mut self, ask: Ask) {
        let (asks, _) = self.thread.get_or_insert_with(start);
        let _ = asks.send(ask);
    }

    /// The answers ready, without waiting.
    pub(crate) fn answers(&self) -> impl Iterator<Item = Answer> + '_ {
        self.thread
            .iter()
            .flat_map(|(_, answers)| answers.try_iter())
    }
}

fn start() -> (Sender<Ask>, Receiver<Answer>) {
    let (asks, asked) = mpsc::channel::<Ask>();
    let (tell, answers) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("typhon-live-symbols".into())
        .spawn(move || {
            // What it parses (tens of MB, given back when idle) is counted
            // in the process's memory, and is no site of the program's.
            tracking::never_sampled();
            // Its first addresses parse the program's debug information,
            // a good part of a second of a CPU: the program's threads go
            // first (on a 2-core machine under load, the demo's first
            // tick took 110 ms while it parsed).
            #[cfg(target_os = "linux")]
            let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 10);
            let mut symbols = Symbols::default();
            loop {
                let ask = match asked.recv_timeout(IDLE) {
                    Ok(ask) => ask,
                    Err(RecvTimeoutError::Timeout) => {
                        // New code is rare once a program runs: the debug
                        // information parsed is given back while none
                        // comes, and parsed again for the next.
                        backtrace::clear_symbol_cache();
                        symbols.frames.clear();
                        match asked.recv() {
                            Ok(ask) => ask,
                            Err(_) => break,
                        }
                    }
                    // The exporter dropped its end.
                    Err(RecvTimeoutError::Disconnected) => break,
                };
                let answer = match ask {
                    Ask::Site(site, addresses) => Answer::Site(site, symbols.site(&addresses)),
                    Ask::Code(addresses) => Answer::Code(
                        (addresses.into_iter())
                            .map(|a| (a, symbols.code(a)))
                            .collect(),
                    ),
                };
                if tell.send(answer).is_err() {
                    break;
                }
            }
        });
    if let Err(e) = spawned {
        log::warn!("typhon-live: code addresses are not symbolized: {e}");
    }
    (asks, answers)
}

/// What a frame is to an allocation site's stack.
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

/// Frames' names by address, each resolved once while cached.
#[derive(Default)]
struct Symbols {
    /// Each address's frames (more than one where calls were inlined),
    /// innermost first, as names, each with what it is.
    frames: HashMap<u64, Vec<(NameId, Frame)>>,
    /// Frames' names interned, by text, and their bytes.
    names: HashMap<String, NameId>,
    name_bytes: usize,
    said_unresolved: bool,
    said_full: bool,
}

impl Symbols {
    /// A site's frames as names, innermost first, less the profiler's own
    /// leading frames; an address that cannot be symbolized is named by
    /// its value (said once).
    fn site(&mut self, addresses: &[usize]) -> Vec<NameId> {
        let mut frames = Vec::new();
        for &address in addresses {
            // A return address is past its call: one byte back is inside it.
            let inside = (address as u64).saturating_sub(1);
            frames.extend_from_slice(self.frames_at(inside));
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

    /// The frames at a code address, innermost first.
    fn code(&mut self, address: u64) -> Vec<NameId> {
        (self.frames_at(address).iter())
            .map(|f| f.0)
            .take(MAX_INLINED_FRAMES)
            .collect()
    }

    fn frames_at(&mut self, inside: u64) -> &[(NameId, Frame)] {
        if !self.frames.contains_key(&inside) {
            if self.frames.len() >= MAX_CACHED {
                self.frames.clear();
            }
            let names = self.resolve(inside);
            self.frames.insert(inside, names);
        }
        &self.frames[&inside]
    }

    /// The frames at an address inside an instruction, innermost first,
    /// interned; at least one.
    fn resolve(&mut self, inside: u64) -> Vec<(NameId, Frame)> {
        let mut texts = Vec::new();
        backtrace::resolve(inside as usize as *mut std::ffi::c_void, |symbol| {
            let Some(name) = symbol.name() else {
                return;
            };
            // `{:#}`: demangled, without the hash.
            let function = format!("{name:#}");
            let file = symbol.filename().map(|f| f.to_string_lossy());
            let mut text = String::new();
            let _ = write_frame_name(&mut text, &function, file.as_deref(), symbol.lineno());
            // The place, in parentheses, names no entry point or own frame.
            let what = Frame::of(&text);
            texts.push((text, what));
        });
        if texts.is_empty() {
            if !self.said_unresolved {
                self.said_unresolved = true;
                log::info!("typhon-live: a frame has no symbol: it is named by its address");
            }
            texts.push((format!("{inside:#x}"), Frame::Program));
        }
        (texts.into_iter())
            .filter_map(|(text, what)| Some((self.name(text)?, what)))
            .collect()
    }

    /// A frame's name, interned; past [`MAX_FRAME_NAMES`] distinct ones
    /// or [`MAX_FRAME_NAME_BYTES`], one name for all the rest (said once),
    /// so that frames never crowd the program's own names out of the
    /// table.
    fn name(&mut self, mut text: String) -> Option<NameId> {
        if text.len() > MAX_FRAME_NAME_LEN {
            let mut cut = MAX_FRAME_NAME_LEN;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push('…');
        }
        if let Some(&id) = self.names.get(&text) {
            return Some(id);
        }
        if self.names.len() >= MAX_FRAME_NAMES || self.name_bytes >= MAX_FRAME_NAME_BYTES {
            if !self.said_full {
                self.said_full = true;
                log::info!(
                    "typhon-live: {} frames named: later ones are shown as {OTHER_FRAMES:?}",
                    self.names.len()
                );
            }
            return runtime::intern(OTHER_FRAMES);
        }
        let id = runtime::intern(&text)?;
        self.name_bytes += text.len();
        self.names.insert(text, id);
        Some(id)
    }
}
