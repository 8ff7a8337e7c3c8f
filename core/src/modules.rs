//! The module map (FORMAT.md, "Stacks"): the files a session's code was
//! loaded from, where each lies and its build id, so that a viewer
//! holding a file's debug information can name the stacks' addresses in
//! it after the fact (a stripped binary, firmware).
//!
//! ```text
//! section 11, module map (Init, Definitions):
//!     v first module index, v count, then per module: v start, v size,
//!     v bias, u8 build id length (0 to 32) and its bytes, str path
//! ```
//!
//! Like the stack nodes, modules are definitions: indexes dense from 0
//! for a session, sent once to each reader and again to one that joins
//! late. Whether a module's bounds make sense (a size of 0, an end past
//! 2^64) is the reader's to judge, entry by entry, so that one absurd
//! module costs only itself.

use crate::cursor::{Reader, Writer};
use crate::error::{DecodeError, EncodeError};
use crate::section::{tag, write_section};

/// Modules a session defines at most: one frame carries them all.
pub const MAX_MODULES: u32 = 4096;
/// Bytes of a build id at most (a GNU build id is 20).
pub const MAX_BUILD_ID: usize = 32;

/// A file of code loaded into the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Module<'a> {
    /// Its lowest address in the process.
    pub start: u64,
    /// Bytes from `start` to just past its highest address.
    pub size: u64,
    /// Where the file's address 0 lies: an address in the file's terms
    /// (its ELF virtual addresses) plus this is the address in the
    /// process.
    pub bias: u64,
    /// Its build id (GNU's `.note.gnu.build-id`), empty where it has
    /// none; at most [`MAX_BUILD_ID`] bytes.
    pub build_id: &'a [u8],
    /// Its path where it was loaded.
    pub path: &'a str,
}

impl Module<'_> {
    /// Whether `address` lies in it (a module whose end passes 2^64
    /// holds nothing).
    pub fn covers(&self, address: u64) -> bool {
        self.start
            .checked_add(self.size)
            .is_some_and(|end| self.start <= address && address < end)
    }
}

/// Writes a module map section: modules `first..first + count`, looked up
/// by `get` (an index `get` lacks is written as an empty module, which
/// keeps the indexes dense).
pub(crate) fn write_modules<'m>(
    w: &mut Writer<'_>,
    first: u32,
    count: u32,
    get: impl Fn(u32) -> Option<Module<'m>>,
) -> Result<(), EncodeError> {
    let modules = (first..first.saturating_add(count)).map(&get);
    if first.saturating_add(count) > MAX_MODULES
        || modules
            .clone()
            .any(|m| m.is_some_and(|m| m.build_id.len() > MAX_BUILD_ID))
    {
        return Err(EncodeError::TooManyItems {
            what: "modules, or bytes of a build id",
        });
    }
    write_section(w, tag::MODULES, |w| {
        w.varint(u64::from(first));
        w.varint(u64::from(count));
        for module in modules {
            let module = module.unwrap_or(Module {
                start: 0,
                size: 0,
                bias: 0,
                build_id: &[],
                path: "",
            });
            w.varint(module.start);
            w.varint(module.size);
            w.varint(module.bias);
            w.u8(module.build_id.len() as u8);
            w.bytes(module.build_id);
            w.str(module.path);
        }
    })
}

/// The modules of a module map section, as `(index, module)` in index
/// order.
#[derive(Clone, Debug)]
pub struct Modules<'a> {
    r: Reader<'a>,
    next: u32,
    left: u32,
}

impl<'a> Modules<'a> {
    pub(crate) const EMPTY: Modules<'static> = Modules {
        r: Reader::EMPTY,
        next: 0,
        left: 0,
    };

    /// Checks a section's body whole: indexes within [`MAX_MODULES`],
    /// build ids within [`MAX_BUILD_ID`], paths UTF-8, nothing left over.
    pub(crate) fn parse(body: &'a [u8]) -> Result<Self, DecodeError> {
        if body.is_empty() {
            return Ok(Modules::EMPTY);
        }
        let mut r = Reader::new(body);
        let next = r.varint_u32("first module index")?;
        let left = r.varint_u32("module count")?;
        let end = u64::from(next) + u64::from(left);
        DecodeError::at_most("module index", end, u64::from(MAX_MODULES))?;
        let modules = Modules { r, next, left };
        let mut check = modules.clone();
        for _ in 0..left {
            check.step()?;
        }
        check.r.expect_end("module map has trailing bytes")?;
        Ok(modules)
    }

    fn step(&mut self) -> Result<(u32, Module<'a>), DecodeError> {
        let start = self.r.varint("module start")?;
        let size = self.r.varint("module size")?;
        let bias = self.r.varint("module bias")?;
        let id_len = self.r.u8("module build id length")?;
        DecodeError::at_most(
            "module build id length",
            u64::from(id_len),
            MAX_BUILD_ID as u64,
        )?;
        let build_id = self.r.take(usize::from(id_len), "module build id")?;
        let path = self.r.str("module path")?;
        let index = self.next;
        self.next += 1;
        self.left -= 1;
        let module = Module {
            start,
            size,
            bias,
            build_id,
            path,
        };
        Ok((index, module))
    }

    /// Modules in the section.
    pub fn len(&self) -> u32 {
        self.left
    }

    /// True when the section defines no module.
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }
}

impl<'a> Iterator for Modules<'a> {
    type Item = (u32, Module<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        // Checked when parsed: an error ends the walk instead of a panic.
        self.step().map_err(|_| self.left = 0).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::section::Sections;

    fn written(first: u32, modules: &[Module<'_>]) -> ([u8; 256], usize) {
        let mut buf = [0u8; 256];
        let mut w = Writer::new(&mut buf);
        let count = modules.len() as u32;
        write_modules(&mut w, first, count, |i| {
            modules.get((i - first) as usize).copied()
        })
        .unwrap();
        let len = w.finish().unwrap();
        (buf, len)
    }

    fn body(bytes: &[u8]) -> &[u8] {
        Sections::new(bytes).next_section().unwrap().unwrap().1
    }

    #[test]
    fn modules_round_trip_and_cover_their_bounds() {
        let modules = [
            Module {
                start: 0x5555_0000_0000,
                size: 0x20_0000,
                bias: 0x5555_0000_0000,
                build_id: &[0xab; 20],
                path: "/usr/bin/engine",
            },
            Module {
                start: u64::MAX - 1,
                size: 2,
                bias: 0,
                build_id: &[],
                path: "/lib/absurd.so",
            },
        ];
        let (bytes, len) = written(3, &modules);
        let read = Modules::parse(body(&bytes[..len])).unwrap();
        assert_eq!(read.len(), 2);
        let read: [(u32, Module<'_>); 2] = {
            let mut it = read;
            [it.next().unwrap(), it.next().unwrap()]
        };
        assert_eq!(read, [(3, modules[0]), (4, modules[1])]);
        assert!(modules[0].covers(0x5555_0000_0000));
        assert!(!modules[0].covers(0x5555_0020_0000));
        // Its end passes 2^64: it holds nothing.
        assert!(!modules[1].covers(u64::MAX - 1));
    }

    #[test]
    fn long_build_ids_indexes_past_the_bound_and_cut_entries_are_refused() {
        // A build id of 33 bytes.
        let long = [0, 1, 0, 0, 0, 33];
        assert!(matches!(
            Modules::parse(&long),
            Err(DecodeError::OverBound { .. })
        ));
        // Indexes up to 4097.
        assert!(matches!(
            Modules::parse(&[0x80, 0x20, 1, 0, 0, 0, 0, 0]),
            Err(DecodeError::OverBound { .. })
        ));
        // A path that runs past the body.
        assert!(Modules::parse(&[0, 1, 0, 0, 0, 0, 5, b'/']).is_err());
        // A path that is not UTF-8.
        assert!(Modules::parse(&[0, 1, 0, 0, 0, 0, 1, 0xff]).is_err());
        // A writer refuses a build id it cannot carry.
        let mut buf = [0u8; 128];
        let mut w = Writer::new(&mut buf);
        let too_long = write_modules(&mut w, 0, 1, |_| {
            Some(Module {
                start: 0,
                size: 1,
                bias: 0,
                build_id: &[0; 33],
                path: "/x",
            })
        });
        assert!(too_long.is_err());
    }
}
