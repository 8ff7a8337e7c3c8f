//! Name interning: strings (systems, queries, gauges, lane names) become
//! dense numeric ids, so events carry a small integer instead of text.
//!
//! [`NameTable`] is fixed-capacity and allocation-free: `N` names in an
//! arena of `BYTES` bytes, found again through an open-addressing index.
//! Interning takes `&mut self`; a multi-threaded host wraps the table in its
//! lock of choice (interning happens once per call site, not per event).
//!
//! The arena and the table of name ends are heapless's `String` and `Vec`.
//! The index is ours: heapless's `IndexMap` would have to own each key,
//! which stores every name a second time (as a fixed-size
//! `heapless::String`, so sized for the longest name), while this index
//! holds only ids and compares against the arena.

use core::fmt;

use heapless::{String, Vec};

use crate::event::NameId;
use crate::modules::Module;
use crate::stacks::{FrameSymbol, NodeId, StackNode};

/// Read access to what a session interned, as the exporter needs it: its
/// names, and the stack tree, frame symbols and module map that name
/// code (a source without stacks keeps the provided methods: none).
pub trait NameSource {
    /// Number of names interned so far; ids are `0..count`.
    fn count(&self) -> u32;
    /// The name with id `id`.
    fn get(&self, id: NameId) -> Option<&str>;
    /// Number of stack nodes interned so far; ids are `0..count`.
    fn stack_node_count(&self) -> u32 {
        0
    }
    /// The stack node with id `id`.
    fn stack_node(&self, id: NodeId) -> Option<StackNode> {
        let _ = id;
        None
    }
    /// Number of frame symbols known so far, in the order they were
    /// learnt.
    fn frame_symbol_count(&self) -> u32 {
        0
    }
    /// The `index`th frame symbol learnt.
    fn frame_symbol(&self, index: u32) -> Option<FrameSymbol<'_>> {
        let _ = index;
        None
    }
    /// Number of modules mapped so far (the module map's indexes are
    /// `0..count`).
    fn module_count(&self) -> u32 {
        0
    }
    /// The module with index `index`.
    fn module(&self, index: u32) -> Option<Module<'_>> {
        let _ = index;
        None
    }
}

/// Why a name could not be interned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum NameError {
    /// All `N` name slots are used.
    TableFull {
        /// The table's capacity in names.
        capacity: usize,
    },
    /// The string arena has no room for this name.
    ArenaFull {
        /// Bytes the name needs.
        needed: usize,
        /// Bytes left in the arena.
        free: usize,
    },
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            NameError::TableFull { capacity } => {
                write!(f, "name table full ({capacity} names)")
            }
            NameError::ArenaFull { needed, free } => {
                write!(f, "name arena full: {needed} bytes needed, {free} free")
            }
        }
    }
}

impl core::error::Error for NameError {}

/// A fixed-capacity string interner of up to `N` names in `BYTES` bytes.
pub struct NameTable<const N: usize, const BYTES: usize> {
    /// The names, one after the other.
    arena: String<BYTES>,
    /// End offset in `arena` of name `i`; it starts where name `i - 1` ends.
    ends: Vec<u32, N>,
    /// Open-addressing index: `id + 1`, 0 for an empty slot.
    index: [u32; N],
}

impl<const N: usize, const BYTES: usize> Default for NameTable<N, BYTES> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize, const BYTES: usize> NameTable<N, BYTES> {
    const LIMITS_OK: () = assert!(
        N > 0 && N < u32::MAX as usize && BYTES <= u32::MAX as usize,
        "NameTable needs 0 < N < 2^32 and BYTES < 2^32"
    );

    /// An empty table.
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::LIMITS_OK;
        NameTable {
            arena: String::new(),
            ends: Vec::new(),
            index: [0; N],
        }
    }

    /// Number of names interned.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when no name is interned.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The id of `name`, interning it if it is new.
    pub fn intern(&mut self, name: &str) -> Result<NameId, NameError> {
        let mut slot = hash(name.as_bytes()) as usize % N;
        for _ in 0..N {
            match self.index[slot] {
                0 => break,
                entry => {
                    let id = entry - 1;
                    if self.get(id) == Some(name) {
                        return Ok(id);
                    }
                }
            }
            slot = (slot + 1) % N;
        }
        if self.ends.is_full() {
            return Err(NameError::TableFull { capacity: N });
        }
        let free = BYTES - self.arena.len();
        if self.arena.push_str(name).is_err() {
            return Err(NameError::ArenaFull {
                needed: name.len(),
                free,
            });
        }
        // Not full, so the probe above stopped at an empty slot; the arena
        // is under 2^32 bytes (LIMITS_OK).
        let id = self.ends.len() as u32;
        let _ = self.ends.push(self.arena.len() as u32);
        self.index[slot] = id + 1;
        Ok(id)
    }

    /// The name with id `id`.
    pub fn get(&self, id: NameId) -> Option<&str> {
        let i = id as usize;
        let end = *self.ends.get(i)? as usize;
        let start = match i.checked_sub(1) {
            Some(before) => *self.ends.get(before)? as usize,
            None => 0,
        };
        // Boundaries of whole pushed strings: always char boundaries.
        self.arena.get(start..end)
    }
}

impl<const N: usize, const BYTES: usize> NameSource for NameTable<N, BYTES> {
    fn count(&self) -> u32 {
        self.ends.len() as u32
    }

    fn get(&self, id: NameId) -> Option<&str> {
        NameTable::get(self, id)
    }
}

/// FNV-1a: tiny, good enough for short identifiers.
fn hash(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interns_once_and_looks_up() {
        let mut names = NameTable::<4, 64>::new();
        assert_eq!(names.intern("Tick"), Ok(0));
        assert_eq!(names.intern("Physics"), Ok(1));
        assert_eq!(names.intern("Tick"), Ok(0));
        assert_eq!(names.intern(""), Ok(2));
        assert_eq!(names.get(1), Some("Physics"));
        assert_eq!(names.get(2), Some(""));
        assert_eq!(names.get(3), None);
        assert_eq!(names.intern("über"), Ok(3));
        assert_eq!(
            names.intern("more"),
            Err(NameError::TableFull { capacity: 4 })
        );
        // A full table still finds what it has.
        assert_eq!(names.intern("über"), Ok(3));
    }

    #[test]
    fn arena_limit_is_a_typed_error() {
        let mut names = NameTable::<8, 8>::new();
        assert_eq!(names.intern("abcdef"), Ok(0));
        assert_eq!(
            names.intern("ghi"),
            Err(NameError::ArenaFull { needed: 3, free: 2 })
        );
        assert_eq!(names.len(), 1);
    }
}
