//! The ELF files of a directory, found by build id, and the frames at an
//! address of one of them.
//!
//! A directory may hold the unstripped binaries themselves, their debug
//! files (`objcopy --only-keep-debug`), or a `.build-id/ab/cdef….debug`
//! tree: every ELF file under it is indexed by its GNU build id, which is
//! what the module map names a module by. A module without a build id is
//! matched by its file's name, and `NAME.debug`.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

use addr2line::Loader;
use object::read::ReadCache;
use object::Object;
use typhon_live_core::stacks::{write_frame_name, MAX_FRAME_NAME_LEN, MAX_INLINED_FRAMES};
use typhon_live_reader::MappedModule;

use crate::error::SymbolsError;

/// Files looked at in a directory at most: a directory larger than that
/// (a whole file system) is indexed in part, and said so.
pub const MAX_FILES_LOOKED_AT: usize = 100_000;
/// Directories deep at most.
const MAX_DEPTH: usize = 16;

/// The debug files of a directory, and each one's debug information
/// once asked (parsed on first use, kept while this lives).
pub struct DebugFiles {
    by_build_id: HashMap<Vec<u8>, PathBuf>,
    by_name: HashMap<OsString, PathBuf>,
    looked_at: usize,
    elf_files: usize,
    loaders: HashMap<PathBuf, Option<Loader>>,
}

impl DebugFiles {
    /// Indexes the ELF files under `dir`; an error only where `dir`
    /// itself cannot be read (a file or subdirectory that cannot is
    /// passed over).
    pub fn index(dir: &Path) -> Result<DebugFiles, SymbolsError> {
        let refused = |e: std::io::Error| SymbolsError::Directory {
            path: dir.into(),
            reason: e.to_string(),
        };
        let mut files = DebugFiles {
            by_build_id: HashMap::new(),
            by_name: HashMap::new(),
            looked_at: 0,
            elf_files: 0,
            loaders: HashMap::new(),
        };
        let mut dirs = vec![(fs::read_dir(dir).map_err(refused)?, 0)];
        while let Some((entries, depth)) = dirs.pop() {
            for entry in entries.flatten() {
                if files.looked_at >= MAX_FILES_LOOKED_AT {
                    log::warn!(
                        "typhon-live: {} holds more than {MAX_FILES_LOOKED_AT} files: only those are looked at",
                        dir.display()
                    );
                    return Ok(files);
                }
                let path = entry.path();
                // Followed: `.build-id` trees are links.
                let Ok(meta) = fs::metadata(&path) else {
                    continue;
                };
                if meta.is_dir() && depth < MAX_DEPTH {
                    if let Ok(inner) = fs::read_dir(&path) {
                        dirs.push((inner, depth + 1));
                    }
                } else if meta.is_file() {
                    files.looked_at += 1;
                    files.add(path);
                }
            }
        }
        Ok(files)
    }

    fn add(&mut self, path: PathBuf) {
        let Some(build_id) = elf_build_id(&path) else {
            return;
        };
        self.elf_files += 1;
        if let Some(name) = path.file_name() {
            self.by_name
                .entry(name.into())
                .or_insert_with(|| path.clone());
        }
        if !build_id.is_empty() {
            self.by_build_id.entry(build_id).or_insert(path);
        }
    }

    /// ELF files found.
    pub fn len(&self) -> usize {
        self.elf_files
    }

    /// Whether no ELF file was found.
    pub fn is_empty(&self) -> bool {
        self.elf_files == 0
    }

    /// The debug file of `module`: the one of its build id; for a module
    /// without one, a file of its name (or its name and `.debug`).
    pub fn find(&self, module: &MappedModule) -> Option<&Path> {
        if !module.build_id.is_empty() {
            return self.by_build_id.get(&module.build_id).map(PathBuf::as_path);
        }
        let name = Path::new(&module.path).file_name()?;
        let mut debug = name.to_owned();
        debug.push(".debug");
        (self
            .by_name
            .get(name)
            .or_else(|| self.by_name.get(OsStr::new(&debug))))
        .map(PathBuf::as_path)
    }

    /// The frames of the code at `address` of `module` (innermost, the
    /// calls inlined there, first), each named as frame symbols are;
    /// `None` where no debug file of it is here, or nothing in it names
    /// the address.
    pub fn frames(&mut self, module: &MappedModule, address: u64) -> Option<Vec<String>> {
        let path = self.find(module)?.to_path_buf();
        let loader = self.loaders.entry(path).or_insert_with_key(|path| {
            Loader::new(path)
                .map_err(|e| log::warn!("typhon-live: {} does not read: {e}", path.display()))
                .ok()
        });
        let loader = loader.as_ref()?;
        let probe = module.file_address(address);
        let mut names = Vec::new();
        if let Ok(mut frames) = loader.find_frames(probe) {
            while let Ok(Some(frame)) = frames.next() {
                let Some(function) = frame.function.as_ref().and_then(|f| f.demangle().ok()) else {
                    continue;
                };
                let place = frame.location.map_or((None, None), |l| (l.file, l.line));
                names.push(frame_name(&function, place.0, place.1));
                if names.len() == MAX_INLINED_FRAMES {
                    break;
                }
            }
        }
        if names.is_empty() {
            // No debug information there: its symbol table's name.
            let symbol = loader.find_symbol(probe)?;
            let function = addr2line::demangle_auto(symbol.into(), None);
            names.push(frame_name(&function, None, None));
        }
        Some(names)
    }
}

/// A frame's name, cut to [`MAX_FRAME_NAME_LEN`] bytes as a writer cuts
/// it.
fn frame_name(function: &str, file: Option<&str>, line: Option<u32>) -> String {
    let mut text = String::new();
    let _ = write_frame_name(&mut text, function, file, line);
    if text.len() > MAX_FRAME_NAME_LEN {
        let cut = (0..=MAX_FRAME_NAME_LEN)
            .rev()
            .find(|&at| text.is_char_boundary(at))
            .unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// The build id of the ELF file at `path` (empty where it has none);
/// `None` for a file that is not ELF, or does not read.
fn elf_build_id(path: &Path) -> Option<Vec<u8>> {
    let mut file = File::open(path).ok()?;
    let mut magic = [0u8; 4];
    // Most files of a directory are not ELF: four bytes say so.
    file.read_exact(&mut magic).ok()?;
    if magic != *b"\x7fELF" {
        return None;
    }
    let cache = ReadCache::new(file);
    let elf = object::File::parse(&cache).ok()?;
    Some(elf.build_id().ok().flatten().unwrap_or(&[]).to_vec())
}
