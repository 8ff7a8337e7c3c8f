//! A stream given again with the names its writer could not find: for
//! each session, the stack nodes' addresses that lie in a module of its
//! module map whose debug file is at hand, and that the writer left
//! unnamed (no frame symbol, or only the address itself, as a stripped
//! binary gets), become frame symbols.
//!
//! The stream stays the stream it was, frame for frame and byte for byte
//! (damage too), with Definitions frames added (FORMAT.md, "Sequence
//! numbers, drops and definitions"):
//! - after each Init, the names found (ids past every id the session's
//!   writer used in the whole stream, so none is taken twice) and the
//!   frame symbols that use them;
//! - after a writer's Definitions that named one of those addresses
//!   again (by its address), the found frames again, so that they stand.
//!
//! The sequenced frames after an added one are numbered on by as many, so
//! that a reader sees no gap and no frame twice.

use std::collections::{BTreeMap, HashMap, HashSet};

use typhon_live_core::definitions::{write_names, write_stack_definitions, StackRanges};
use typhon_live_core::frame::frame_around;
use typhon_live_core::stacks::MAX_SYMBOLS_PER_FRAME;
use typhon_live_core::{
    Frame, FrameSymbol, FrameSymbols, Modules, NameId, NameSource, Names, Payload, StackNodes,
};
use typhon_live_reader::{frames, MappedModule, MAX_FRAME_SYMBOLS};

use crate::debug_files::DebugFiles;

/// Names one added Definitions frame carries at most (each at most 244
/// bytes: a frame well within the 8 MiB limit).
const NAMES_PER_FRAME: usize = 16_384;

/// A stream with the names found, and what was found.
#[derive(Debug, Default)]
pub struct Symbolized {
    /// The stream, with the frame symbols found.
    pub bytes: Vec<u8>,
    /// Addresses that needed a name and were given one.
    pub named: usize,
    /// Addresses that needed a name and lie in a module whose debug file
    /// is here, where it names nothing.
    pub unnamed: usize,
    /// Addresses that needed a name in a module without a debug file here,
    /// or in no module.
    pub no_debug_file: usize,
    /// The modules that needed a debug file and had none here: each one's
    /// path and build id (hex).
    pub modules_without_debug_file: Vec<(String, String)>,
}

/// What a session's Inits and Definitions said, across the stream.
#[derive(Default)]
struct Session {
    /// One past the largest name id it defined.
    next_name: NameId,
    /// The names its frame symbols use.
    names: HashMap<NameId, String>,
    addresses: HashSet<u64>,
    symbols: HashMap<u64, Vec<NameId>>,
    modules: BTreeMap<u32, MappedModule>,
}

impl Session {
    fn learn(
        &mut self,
        names: Names<'_>,
        nodes: StackNodes<'_>,
        symbols: FrameSymbols<'_>,
        modules: Modules<'_>,
    ) {
        for (id, text) in names {
            self.next_name = self.next_name.max(id.saturating_add(1));
            // Kept where a frame may use it: an address is one name.
            if text.starts_with("0x") {
                self.names.insert(id, text.into());
            }
        }
        self.addresses.extend(nodes.map(|(_, node)| node.address));
        for symbol in symbols {
            let frames = symbol.frames.iter().collect();
            self.symbols.insert(symbol.address, frames);
        }
        for (index, module) in modules {
            if let Some(module) = MappedModule::new(module) {
                self.modules.insert(index, module);
            }
        }
    }

    /// Whether the writer named `address` by its value alone, or not at
    /// all.
    fn unnamed(&self, address: u64) -> bool {
        match self.symbols.get(&address).map(Vec::as_slice) {
            None => true,
            Some([only]) => self
                .names
                .get(only)
                .is_some_and(|text| u64::from_str_radix(text.trim_start_matches("0x"), 16).is_ok()),
            Some(_) => false,
        }
    }

    fn module_of(&self, address: u64) -> Option<&MappedModule> {
        self.modules.values().rev().find(|m| m.covers(address))
    }
}

/// The names and frame symbols found for one session.
#[derive(Default)]
struct Found {
    first_name: NameId,
    names: Vec<String>,
    symbols: Vec<(u64, Vec<NameId>)>,
    addresses: HashSet<u64>,
}

/// Some of [`Found`]'s frame symbols (by index), as the core writes them.
struct Told<'a> {
    found: &'a Found,
    symbols: Vec<usize>,
}

impl NameSource for Told<'_> {
    fn count(&self) -> u32 {
        let found = self.found;
        found.first_name.saturating_add(found.names.len() as u32)
    }

    fn get(&self, id: NameId) -> Option<&str> {
        let index = id.checked_sub(self.found.first_name)?;
        self.found.names.get(index as usize).map(String::as_str)
    }

    fn frame_symbol_count(&self) -> u32 {
        self.symbols.len() as u32
    }

    fn frame_symbol(&self, index: u32) -> Option<FrameSymbol<'_>> {
        let (address, frames) = self.found.symbols.get(*self.symbols.get(index as usize)?)?;
        Some(FrameSymbol {
            address: *address,
            frames,
        })
    }
}

/// `bytes` (a whole stream) with the names `files` find for its stacks.
pub fn symbolize(bytes: &[u8], files: &mut DebugFiles) -> Symbolized {
    let mut sessions: HashMap<u64, Session> = HashMap::new();
    let mut current = None;
    let _ = frames(bytes, |frame| {
        match frame.parse()? {
            Payload::Init(init) => {
                current = Some(init.session_id);
                let s = sessions.entry(init.session_id).or_default();
                s.learn(
                    init.names(),
                    init.stack_nodes(),
                    init.frame_symbols(),
                    init.modules(),
                );
            }
            Payload::Definitions(defs) => {
                if let Some(s) = current.and_then(|id| sessions.get_mut(&id)) {
                    let (nodes, symbols) = (defs.stack_nodes(), defs.frame_symbols());
                    s.learn(defs.names(), nodes, symbols, defs.modules());
                }
            }
            _ => {}
        }
        Ok(())
    });
    let mut out = Symbolized::default();
    let mut without: BTreeMap<String, String> = BTreeMap::new();
    let found: HashMap<u64, Found> = (sessions.iter())
        .map(|(&id, session)| {
            let mut found = Found {
                first_name: session.next_name,
                ..Found::default()
            };
            let mut ids: HashMap<String, NameId> = HashMap::new();
            let mut addresses: Vec<u64> = session.addresses.iter().copied().collect();
            addresses.sort_unstable();
            for address in addresses.into_iter().filter(|&a| session.unnamed(a)) {
                let module = session.module_of(address);
                let Some(module) = module.filter(|m| files.find(m).is_some()) else {
                    out.no_debug_file += 1;
                    if let Some(m) = module {
                        let hex: String = m.build_id.iter().map(|b| format!("{b:02x}")).collect();
                        without.insert(m.path.clone(), hex);
                    }
                    continue;
                };
                let names = files.frames(module, address);
                let (Some(names), true) = (names, found.symbols.len() < MAX_FRAME_SYMBOLS) else {
                    out.unnamed += 1;
                    continue;
                };
                let frames = (names.into_iter())
                    .map(|name| {
                        let next = found.first_name.saturating_add(found.names.len() as u32);
                        *ids.entry(name).or_insert_with_key(|name| {
                            found.names.push(name.clone());
                            next
                        })
                    })
                    .collect();
                found.symbols.push((address, frames));
                found.addresses.insert(address);
                out.named += 1;
            }
            (id, found)
        })
        .collect();
    out.modules_without_debug_file = without.into_iter().collect();
    out.bytes = rewritten(bytes, &found);
    out
}

/// `bytes` with each session's `found` told after its Inits, and again
/// after a Definitions frame that named one of its addresses.
fn rewritten(bytes: &[u8], found: &HashMap<u64, Found>) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + (64 << 10));
    let mut copied = 0usize;
    let mut current: Option<&Found> = None;
    // Frames added since the last Init: what the sequenced ones are
    // numbered on by.
    let mut added = 0u32;
    let _ = frames(bytes, |frame| {
        let at = usize::try_from(frame.offset)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        // What lies between intact frames (damage) stays as it was.
        out.extend_from_slice(&bytes[copied.min(at)..at]);
        copied = at.saturating_add(frame.wire_len()).min(bytes.len());
        let parsed = frame.parse();
        if let Ok(Payload::Init(init)) = parsed {
            out.extend_from_slice(&bytes[at..copied]);
            current = found
                .get(&init.session_id)
                .filter(|f| !f.symbols.is_empty());
            added = 0;
            if let Some(found) = current {
                let all = (0..found.symbols.len()).collect();
                added = tell(&mut out, found, all, true, init.next_seq);
            }
            return Ok(());
        }
        let seq = frame.seq.wrapping_add(added);
        if frame.is_sequenced() && added > 0 {
            renumbered(&mut out, frame, seq);
        } else {
            out.extend_from_slice(&bytes[at..copied]);
        }
        if let (Ok(Payload::Definitions(defs)), Some(found)) = (parsed, current) {
            let again: HashSet<u64> = (defs.frame_symbols())
                .map(|s| s.address)
                .filter(|a| found.addresses.contains(a))
                .collect();
            let picked: Vec<usize> = (found.symbols.iter().enumerate())
                .filter(|(_, (address, _))| again.contains(address))
                .map(|(i, _)| i)
                .collect();
            if !picked.is_empty() {
                let next = seq.wrapping_add(1);
                added = added.wrapping_add(tell(&mut out, found, picked, false, next));
            }
        }
        Ok(())
    });
    out.extend_from_slice(&bytes[copied.min(bytes.len())..]);
    out
}

/// Appends Definitions frames numbered from `seq`: the names found (where
/// `with_names`) and the frame symbols `picked`; how many.
fn tell(out: &mut Vec<u8>, found: &Found, picked: Vec<usize>, with_names: bool, seq: u32) -> u32 {
    let mut frames = 0u32;
    let mut buf = Vec::new();
    if with_names {
        for (i, chunk) in found.names.chunks(NAMES_PER_FRAME).enumerate() {
            let first = found.first_name + (i * NAMES_PER_FRAME) as u32;
            buf.resize(64 + chunk.iter().map(|n| n.len() + 5).sum::<usize>(), 0);
            let told = Told {
                found,
                symbols: Vec::new(),
            };
            let count = chunk.len() as u32;
            let seq = seq.wrapping_add(frames);
            if let Ok(n) = write_names(&mut buf, seq, &told, first, count) {
                out.extend_from_slice(&buf[..n]);
                frames += 1;
            }
        }
    }
    for chunk in picked.chunks(MAX_SYMBOLS_PER_FRAME as usize) {
        let told = Told {
            found,
            symbols: chunk.to_vec(),
        };
        let bytes = chunk.iter().map(|&i| 16 + 5 * found.symbols[i].1.len());
        buf.resize(64 + bytes.sum::<usize>(), 0);
        let ranges = StackRanges {
            symbols: 0..chunk.len() as u32,
            ..StackRanges::default()
        };
        let seq = seq.wrapping_add(frames);
        if let Ok(n) = write_stack_definitions(&mut buf, seq, &told, ranges) {
            out.extend_from_slice(&buf[..n]);
            frames += 1;
        }
    }
    frames
}

/// Appends `frame` with sequence number `seq`, its checks made anew.
fn renumbered(out: &mut Vec<u8>, frame: &Frame<'_>, seq: u32) {
    // Its payload was read within the limits, so it is sealed again.
    if let Ok((header, trailer)) = frame_around(frame.kind, frame.flags, seq, frame.payload) {
        out.extend_from_slice(&header);
        out.extend_from_slice(frame.payload);
        out.extend_from_slice(&trailer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::{Object, ObjectSymbol};
    use typhon_live_core::{Exporter, Lanes, Metadata, Module, StackNode};
    use typhon_live_reader::{Reader, Update};

    /// A function of this file, which the test binary's symbol table names.
    #[inline(never)]
    fn a_function_to_find() -> u64 {
        std::hint::black_box(7)
    }

    /// What a writer of a stripped binary interned: a name for its only
    /// address (the address itself), a node, and its module.
    struct Stripped {
        names: Vec<String>,
        symbols: Vec<(u64, Vec<NameId>)>,
        address: u64,
        build_id: Vec<u8>,
    }

    impl NameSource for Stripped {
        fn count(&self) -> u32 {
            self.names.len() as u32
        }
        fn get(&self, id: NameId) -> Option<&str> {
            self.names.get(id as usize).map(String::as_str)
        }
        fn stack_node_count(&self) -> u32 {
            1
        }
        fn stack_node(&self, id: u32) -> Option<StackNode> {
            (id == 0).then_some(StackNode {
                parent: None,
                address: self.address,
            })
        }
        fn frame_symbol_count(&self) -> u32 {
            self.symbols.len() as u32
        }
        fn frame_symbol(&self, index: u32) -> Option<FrameSymbol<'_>> {
            let (address, frames) = self.symbols.get(index as usize)?;
            Some(FrameSymbol {
                address: *address,
                frames,
            })
        }
        fn module_count(&self) -> u32 {
            1
        }
        fn module(&self, index: u32) -> Option<Module<'_>> {
            (index == 0).then_some(Module {
                start: 0x1000_0000,
                size: 0x1000_0000,
                bias: 0x1000_0000,
                build_id: &self.build_id,
                path: "/opt/stripped/engine",
            })
        }
    }

    #[test]
    #[cfg_attr(
        not(target_os = "linux"),
        ignore = "its debug file is this test's binary: ELF, with a GNU build id, on Linux"
    )]
    fn an_address_named_by_its_value_is_named_from_the_debug_file_and_stays_named() {
        let exe = std::env::current_exe().unwrap();
        let file = std::fs::read(&exe).unwrap();
        let elf = object::File::parse(&*file).unwrap();
        let _ = a_function_to_find();
        let symbol = (elf.symbols())
            .find(|s| s.name().is_ok_and(|n| n.contains("a_function_to_find")))
            .expect("the test's symbol table names it");
        let build_id = elf.build_id().unwrap().expect("a GNU build id").to_vec();
        // Where the stripped process had it: its file address plus a bias.
        let address = 0x1000_0000 + symbol.address();
        let mut source = Stripped {
            names: vec!["lane".into(), format!("{address:#x}")],
            symbols: vec![(address, vec![1])],
            address,
            build_id,
        };

        let lanes = Lanes::<2, 64>::new();
        let mut scratch = vec![0u8; 1 << 16];
        let mut exporter: Exporter<'_, 2> = Exporter::new(Metadata::default(), &mut scratch);
        exporter.attach().unwrap();
        let mut out = vec![0u8; exporter.min_block_buffer()];
        let mut stream = Vec::new();
        let mut poll = |exporter: &mut Exporter<'_, 2>, source: &Stripped, at: u64| {
            exporter.request_drain();
            while let Some(f) = exporter.poll(at, &lanes, source, &mut out).unwrap() {
                stream.extend_from_slice(&out[..f.len]);
            }
        };
        poll(&mut exporter, &source, 10);
        // The writer names the address by its value again, after the
        // Init: the name found must stand over it.
        source.names.push("later".into());
        source.symbols.push((address, vec![1]));
        poll(&mut exporter, &source, 20);
        exporter.stop();
        poll(&mut exporter, &source, 30);

        let dir = std::env::temp_dir().join(format!("typhon-live-symbols-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&exe, dir.join("engine")).unwrap();
        std::fs::write(dir.join("notes.txt"), "not ELF").unwrap();
        let mut files = DebugFiles::index(&dir).unwrap();
        assert_eq!(files.len(), 1);
        let found = symbolize(&stream, &mut files);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!((found.named, found.unnamed, found.no_debug_file), (1, 0, 0));
        assert!(found.bytes.len() > stream.len());

        let mut reader = Reader::new();
        let mut learnt = Vec::new();
        let damage = frames(&found.bytes, |frame| {
            reader.read(frame, |state, update| {
                if let Update::FrameSymbol { address: a, .. } = update {
                    let names = state.stacks().frames_at(a).unwrap_or_default();
                    learnt.push(
                        names
                            .iter()
                            .map(|&n| state.names().show(n))
                            .collect::<Vec<_>>()
                            .join(" / "),
                    );
                }
            })
        });
        assert!(damage.is_empty(), "{damage:?}");
        let state = reader.state();
        // No frame missed, none twice: the added ones are numbered in.
        assert_eq!(state.tally().frames_missed, 0);
        let names = state.stacks().frames_at(address).unwrap();
        let named = state.names().show(names[0]);
        assert!(named.contains("a_function_to_find"), "{named}");
        // Named, named by its value by the writer again, named again.
        assert_eq!(learnt.len(), 4, "{learnt:#?}");
        assert!(learnt[3].contains("a_function_to_find"), "{learnt:#?}");
        // The writer's names keep their ids.
        assert_eq!(state.names().show(2), "later");
    }

    #[test]
    fn a_stream_without_stacks_is_given_back_as_it_was() {
        let dir =
            std::env::temp_dir().join(format!("typhon-live-no-symbols-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut files = DebugFiles::index(&dir).unwrap();
        let _ = std::fs::remove_dir(&dir);
        assert!(files.is_empty());
        let bytes = b"not a stream at all, kept as it is".to_vec();
        assert_eq!(symbolize(&bytes, &mut files).bytes, bytes);
    }
}
