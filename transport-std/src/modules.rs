//! The code this process has loaded, on Linux: each ELF file mapped with
//! something executable in `/proc/self/maps`, where it lies, the bias it
//! was loaded at, and its build id; and, for the unwinder, its unwind
//! tables, read from the file. The session's module map ([`ModuleMap`])
//! is what the stream tells of them (FORMAT.md, "Stacks").

use std::fs::File;
use std::io;
use std::ops::Range;
use std::time::{Duration, Instant};

use object::read::ReadCache;
use object::{Object, ObjectSection, ObjectSegment};

use typhon_live_core::modules::{MAX_BUILD_ID, MAX_MODULES};

/// The process's modules are read again at most this often, when code
/// none of them covers is sampled (a library loaded since).
const RESCAN_EVERY: Duration = Duration::from_secs(1);

/// A module of the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Module {
    /// Its file.
    pub(crate) path: String,
    /// Where its mappings lie, from the first to the last.
    pub(crate) avma: Range<u64>,
    /// Where its address 0 lies: an address in the file's terms plus this
    /// is where it is in the process.
    pub(crate) bias: u64,
    /// Its GNU build id, where it has one.
    pub(crate) build_id: Vec<u8>,
}

/// A module's unwind tables and where they are, in the file's addresses.
#[derive(Default)]
pub(crate) struct UnwindTables {
    pub(crate) text_svma: Option<Range<u64>>,
    pub(crate) eh_frame_svma: Option<Range<u64>>,
    pub(crate) eh_frame: Option<Vec<u8>>,
    pub(crate) eh_frame_hdr_svma: Option<Range<u64>>,
    pub(crate) eh_frame_hdr: Option<Vec<u8>>,
}

impl Module {
    /// Whether `address` lies in it.
    pub(crate) fn covers(&self, address: u64) -> bool {
        self.avma.contains(&address)
    }

    /// Its `.text`, `.eh_frame` and `.eh_frame_hdr`, read from its file;
    /// what cannot be read is left out (the unwinder then walks its
    /// frames by their pointers).
    pub(crate) fn unwind_tables(&self) -> UnwindTables {
        let Ok(file) = File::open(&self.path) else {
            return UnwindTables::default();
        };
        let cache = ReadCache::new(file);
        let Ok(elf) = object::File::parse(&cache) else {
            return UnwindTables::default();
        };
        let range = |name: &str| {
            let section = elf.section_by_name(name)?;
            Some(section.address()..section.address() + section.size())
        };
        let section = |name: &str| {
            let data = elf.section_by_name(name)?.data().ok()?.to_vec();
            Some((range(name)?, data))
        };
        // Where the code is, not the code: the tables say how to walk it.
        let mut tables = UnwindTables {
            text_svma: range(".text"),
            ..UnwindTables::default()
        };
        if let Some((svma, data)) = section(".eh_frame") {
            tables.eh_frame_svma = Some(svma);
            tables.eh_frame = Some(data);
        }
        if let Some((svma, data)) = section(".eh_frame_hdr") {
            tables.eh_frame_hdr_svma = Some(svma);
            tables.eh_frame_hdr = Some(data);
        }
        tables
    }
}

/// The modules the session has mapped, in the order found: only grows
/// (a module unloaded stays, and one loaded where it was comes after it),
/// up to [`MAX_MODULES`].
#[derive(Default)]
pub(crate) struct ModuleMap {
    modules: Vec<Module>,
    scanned: Option<Instant>,
    said: bool,
}

impl ModuleMap {
    /// Whether a module mapped covers `address`.
    pub(crate) fn covers(&self, address: u64) -> bool {
        self.modules.iter().any(|m| m.covers(address))
    }

    /// Reads the process's modules again unless it did less than
    /// [`RESCAN_EVERY`] ago, and maps those new to it; whether it read
    /// them.
    pub(crate) fn rescan(&mut self) -> bool {
        let now = Instant::now();
        if self.scanned.is_some_and(|at| now < at + RESCAN_EVERY) {
            return false;
        }
        self.scanned = Some(now);
        match loaded() {
            Ok(loaded) => {
                for module in loaded {
                    if self.modules.len() < MAX_MODULES as usize && !self.modules.contains(&module)
                    {
                        self.modules.push(module);
                    }
                }
            }
            Err(e) if !self.said => {
                self.said = true;
                log::info!("typhon-live: the loaded modules cannot be read ({e}): stacks are walked by frame pointers, and their modules are not told");
            }
            Err(_) => {}
        }
        true
    }

    /// The modules mapped, in the order found.
    pub(crate) fn modules(&self) -> &[Module] {
        &self.modules
    }
}

/// One line of `/proc/self/maps`.
#[derive(Debug, PartialEq, Eq)]
struct Mapping<'a> {
    range: Range<u64>,
    executable: bool,
    offset: u64,
    path: &'a str,
}

/// Reads a line of `/proc/PID/maps`: `start-end perms offset dev inode
/// path`; `None` for a line without a file (anonymous memory, the stack,
/// `[vdso]`) or one that does not read.
fn mapping(line: &str) -> Option<Mapping<'_>> {
    let mut fields = line.splitn(6, ' ');
    let (start, end) = fields.next()?.split_once('-')?;
    let perms = fields.next()?;
    let offset = u64::from_str_radix(fields.next()?, 16).ok()?;
    let _device = fields.next()?;
    let inode = fields.next()?;
    let path = fields.next()?.trim_start();
    if inode == "0" || !path.starts_with('/') {
        return None;
    }
    Some(Mapping {
        range: u64::from_str_radix(start, 16).ok()?..u64::from_str_radix(end, 16).ok()?,
        executable: perms.as_bytes().get(2) == Some(&b'x'),
        offset,
        path,
    })
}

/// A file's mappings, gathered.
struct Mapped<'a> {
    path: &'a str,
    avma: Range<u64>,
    executable: bool,
    /// Its first mapping's start and file offset: where its bias is read.
    first: (u64, u64),
}

/// The modules of this process with executable code, in the order of
/// their first mapping.
pub(crate) fn loaded() -> io::Result<Vec<Module>> {
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let mut files: Vec<Mapped<'_>> = Vec::new();
    for m in maps.lines().filter_map(mapping) {
        match files.iter_mut().find(|f| f.path == m.path) {
            Some(f) => {
                f.avma = f.avma.start.min(m.range.start)..f.avma.end.max(m.range.end);
                f.executable |= m.executable;
            }
            None => files.push(Mapped {
                path: m.path,
                first: (m.range.start, m.offset),
                avma: m.range,
                executable: m.executable,
            }),
        }
    }
    Ok(files
        .into_iter()
        .filter(|f| f.executable)
        .filter_map(|f| {
            let (bias, build_id) = read_elf(f.path, f.first.0, f.first.1)?;
            Some(Module {
                path: f.path.into(),
                avma: f.avma,
                bias,
                build_id,
            })
        })
        .collect())
}

/// The bias of `path` mapped at `start` from file offset `offset`, and its
/// build id; `None` for a file that is not an ELF this reads.
fn read_elf(path: &str, start: u64, offset: u64) -> Option<(u64, Vec<u8>)> {
    let cache = ReadCache::new(File::open(path).ok()?);
    let elf = object::File::parse(&cache).ok()?;
    let segment = elf.segments().find(|s| {
        let (from, size) = s.file_range();
        // The kernel maps from the page the segment starts in.
        (from & !0xfff) <= offset && offset < from + size.max(1)
    })?;
    let (from, _) = segment.file_range();
    // The segment's address less what lies between the mapped offset and
    // where the segment starts in the file.
    let vaddr = segment.address().wrapping_add(offset).wrapping_sub(from);
    let bias = start.wrapping_sub(vaddr);
    let mut build_id = elf.build_id().ok().flatten().unwrap_or(&[]).to_vec();
    build_id.truncate(MAX_BUILD_ID);
    Some((bias, build_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maps_line_reads_and_anonymous_memory_does_not() {
        let line = "55d0c8a00000-55d0c8b20000 r-xp 00031000 fd:01 1835099    /usr/bin/typhon live";
        assert_eq!(
            mapping(line),
            Some(Mapping {
                range: 0x55d0_c8a0_0000..0x55d0_c8b2_0000,
                executable: true,
                offset: 0x31000,
                path: "/usr/bin/typhon live",
            })
        );
        assert_eq!(
            mapping("7ffd1000-7ffd2000 rw-p 00000000 00:00 0    [stack]"),
            None
        );
        assert_eq!(
            mapping("7ffd1000-7ffd2000 r-xp 00000000 00:00 0    [vdso]"),
            None
        );
        assert_eq!(mapping("garbage"), None);
    }

    /// This test's own code lies in a module read from the maps, and its
    /// bias places a function of it where the file's symbol table says.
    #[test]
    fn this_process_s_own_code_is_in_a_module() {
        let here = a_function_of_this_file as *const () as u64;
        let modules = loaded().unwrap();
        let own = modules.iter().find(|m| m.covers(here)).unwrap();
        let exe = std::env::current_exe().unwrap();
        assert_eq!(std::path::Path::new(&own.path), exe.as_path());
        let cache = ReadCache::new(File::open(&own.path).unwrap());
        let elf = object::File::parse(&cache).unwrap();
        let tables = own.unwind_tables();
        let text = tables.text_svma.unwrap();
        assert!(
            text.contains(&(here - own.bias)),
            "{text:x?} {:x}",
            here - own.bias
        );
        assert!(tables.eh_frame.is_some_and(|d| !d.is_empty()));
        assert_eq!(
            own.build_id,
            elf.build_id().unwrap().unwrap_or(&[]).to_vec()
        );
    }

    #[inline(never)]
    fn a_function_of_this_file() {}
}
