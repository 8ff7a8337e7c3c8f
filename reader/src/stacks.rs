//! The session's call stacks (FORMAT.md, "Stacks"): its tree of nodes,
//! its frames' symbols and its module map, as Inits and Definitions
//! define them, kept up to the format's bounds, so that a hostile peer
//! cannot grow them past.
//!
//! A node whose parent this reader does not hold (its definition was
//! refused), or that would stand deeper than
//! [`MAX_STACK_DEPTH`](typhon_live_core::stacks::MAX_STACK_DEPTH), is
//! refused, and so is every node under it; a sample naming a node not
//! held is skipped and counted. A module of absurd bounds (no bytes, an
//! end past 2^64, no path or one longer than [`MAX_MODULE_PATH`]) is
//! refused alone.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use typhon_live_core::stacks::{MAX_INLINED_FRAMES, MAX_STACK_DEPTH, MAX_STACK_NODES};
use typhon_live_core::{Module, NameId, NodeId, StackNode};

/// Frame symbols kept at most: one an address, and an address a node's.
pub const MAX_FRAME_SYMBOLS: usize = MAX_STACK_NODES as usize;
/// Bytes of a module's path at most (Linux's `PATH_MAX`).
pub const MAX_MODULE_PATH: usize = 4096;

/// A module of the session's module map, as held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappedModule {
    /// Its lowest address in the process.
    pub start: u64,
    /// Just past its highest address (above `start`).
    pub end: u64,
    /// Where the file's address 0 lies in the process.
    pub bias: u64,
    /// Its build id; empty where it has none.
    pub build_id: Vec<u8>,
    /// Its path where it was loaded.
    pub path: String,
}

impl MappedModule {
    /// `module` as held, unless its bounds or path are absurd: no bytes,
    /// an end past 2^64, no path or one longer than [`MAX_MODULE_PATH`].
    pub fn new(module: Module<'_>) -> Option<MappedModule> {
        let end = module.start.checked_add(module.size)?;
        let path_ok = !module.path.is_empty() && module.path.len() <= MAX_MODULE_PATH;
        (module.size > 0 && path_ok).then(|| MappedModule {
            start: module.start,
            end,
            bias: module.bias,
            build_id: module.build_id.into(),
            path: module.path.into(),
        })
    }

    /// Whether `address` lies in it.
    pub fn covers(&self, address: u64) -> bool {
        (self.start..self.end).contains(&address)
    }

    /// `address` in the file's own terms (its ELF virtual addresses), as
    /// its debug information names code.
    pub fn file_address(&self, address: u64) -> u64 {
        address.wrapping_sub(self.bias)
    }
}

/// A node as held: its depth, 1 for an outermost frame; 0 where the id
/// is not held.
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    parent: Option<NodeId>,
    address: u64,
    depth: u8,
}

/// Stack nodes by id, and frames by address.
#[derive(Clone, Debug, Default)]
pub struct Stacks {
    nodes: Vec<Held>,
    held: usize,
    symbols: BTreeMap<u64, Vec<NameId>>,
    /// By index (dense below [`typhon_live_core::modules::MAX_MODULES`]);
    /// `None` where refused or not yet defined.
    modules: Vec<Option<MappedModule>>,
}

/// What defining a node or learning a symbol did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Learnt {
    /// New to this table, or new content for its id or address.
    New,
    /// What it already held.
    Same,
    /// Refused: a parent not held, too deep, or past a bound.
    Refused,
}

impl Stacks {
    /// Defines node `id` (the core checked it within the bound, its parent
    /// below it).
    pub(crate) fn define(&mut self, id: NodeId, node: StackNode) -> Learnt {
        let depth = match node.parent {
            None => 1,
            Some(parent) => match self.depth(parent) {
                0 => 0,
                d => d.saturating_add(1),
            },
        };
        let index = id as usize;
        if depth == 0 || usize::from(depth) > MAX_STACK_DEPTH || id >= MAX_STACK_NODES {
            return Learnt::Refused;
        }
        if self.nodes.len() <= index {
            self.nodes.resize(index + 1, Held::default());
        }
        let slot = &mut self.nodes[index];
        let held = Held {
            parent: node.parent,
            address: node.address,
            depth,
        };
        if slot.depth != 0 && (slot.parent, slot.address) == (held.parent, held.address) {
            return Learnt::Same;
        }
        if slot.depth == 0 {
            self.held += 1;
        }
        *slot = held;
        Learnt::New
    }

    /// Learns the frames the code at `address` stands for, innermost
    /// first.
    pub(crate) fn learn(&mut self, address: u64, frames: impl Iterator<Item = NameId>) -> Learnt {
        let frames: Vec<NameId> = frames.take(MAX_INLINED_FRAMES).collect();
        let full = self.symbols.len() >= MAX_FRAME_SYMBOLS;
        match self.symbols.get_mut(&address) {
            Some(held) if *held == frames => Learnt::Same,
            Some(held) => {
                *held = frames;
                Learnt::New
            }
            None if full => Learnt::Refused,
            None => {
                self.symbols.insert(address, frames);
                Learnt::New
            }
        }
    }

    /// Maps module `index` (the core checked it within the bound), unless
    /// its bounds or path are absurd.
    pub(crate) fn map(&mut self, index: u32, module: Module<'_>) -> Learnt {
        let Some(mapped) = MappedModule::new(module) else {
            return Learnt::Refused;
        };
        let index = index as usize;
        if self.modules.len() <= index {
            self.modules.resize(index + 1, None);
        }
        if self.modules[index].as_ref() == Some(&mapped) {
            return Learnt::Same;
        }
        self.modules[index] = Some(mapped);
        Learnt::New
    }

    /// The module `address` lies in: of those covering it, the one mapped
    /// last (a library unloaded and another loaded where it was).
    pub fn module_of(&self, address: u64) -> Option<&MappedModule> {
        self.modules().rev().find(|m| m.covers(address))
    }

    /// The modules held, in index order.
    pub fn modules(&self) -> impl DoubleEndedIterator<Item = &MappedModule> + Clone {
        self.modules.iter().flatten()
    }

    pub(crate) fn clear(&mut self) {
        *self = Stacks::default();
    }

    fn depth(&self, id: NodeId) -> u8 {
        self.nodes.get(id as usize).map_or(0, |n| n.depth)
    }

    /// Node `id`, if held.
    pub fn node(&self, id: NodeId) -> Option<StackNode> {
        let held = self.nodes.get(id as usize).filter(|n| n.depth != 0)?;
        Some(StackNode {
            parent: held.parent,
            address: held.address,
        })
    }

    /// Whether node `id` is held.
    pub fn holds(&self, id: NodeId) -> bool {
        self.depth(id) != 0
    }

    /// The addresses of the stack whose innermost frame is node `id`,
    /// innermost first; empty if it is not held.
    pub fn addresses(&self, id: NodeId) -> impl Iterator<Item = u64> + '_ {
        let mut next = Some(id).filter(|&id| self.holds(id));
        core::iter::from_fn(move || {
            let held = self.nodes.get(next? as usize)?;
            // Parents are below their children: the walk ends.
            next = held.parent;
            Some(held.address)
        })
        .take(MAX_STACK_DEPTH)
    }

    /// The frames of the stack whose innermost frame is node `id`,
    /// innermost first: each address's frames (a name each, the calls
    /// inlined there first), or the address itself (`Err`) while the
    /// writer has not symbolized it.
    pub fn frames(&self, id: NodeId) -> impl Iterator<Item = Result<NameId, u64>> + '_ {
        self.addresses(id).flat_map(move |address| {
            let names = self.frames_at(address);
            let unknown = names.is_none().then_some(Err(address));
            (names.into_iter().flatten().map(|&name| Ok(name))).chain(unknown)
        })
    }

    /// The frames the code at `address` stands for (names, innermost
    /// first), once the writer symbolized it.
    pub fn frames_at(&self, address: u64) -> Option<&[NameId]> {
        self.symbols.get(&address).map(Vec::as_slice)
    }

    /// Nodes held.
    pub fn len(&self) -> usize {
        self.held
    }

    /// Whether no node is held.
    pub fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// Addresses whose frames are known.
    pub fn symbols(&self) -> usize {
        self.symbols.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(parent: Option<NodeId>, address: u64) -> StackNode {
        StackNode { parent, address }
    }

    #[test]
    fn a_tree_is_walked_innermost_first_and_a_broken_branch_is_refused() {
        let mut stacks = Stacks::default();
        assert_eq!(stacks.define(0, node(None, 10)), Learnt::New);
        assert_eq!(stacks.define(1, node(Some(0), 11)), Learnt::New);
        assert_eq!(stacks.define(2, node(Some(1), 12)), Learnt::New);
        assert_eq!(stacks.define(2, node(Some(1), 12)), Learnt::Same);
        assert!(stacks.addresses(2).eq([12, 11, 10]));
        // Node 4 under node 3, never defined: refused, and so is 5 under it.
        assert_eq!(stacks.define(4, node(Some(3), 14)), Learnt::Refused);
        assert_eq!(stacks.define(5, node(Some(4), 15)), Learnt::Refused);
        assert!(!stacks.holds(5) && stacks.addresses(5).next().is_none());
        assert_eq!(stacks.len(), 3);
    }

    #[test]
    fn a_stack_deeper_than_the_bound_is_refused_where_it_passes_it() {
        let mut stacks = Stacks::default();
        stacks.define(0, node(None, 0));
        for id in 1..MAX_STACK_DEPTH as NodeId {
            assert_eq!(
                stacks.define(id, node(Some(id - 1), id.into())),
                Learnt::New
            );
        }
        let deepest = MAX_STACK_DEPTH as NodeId - 1;
        assert_eq!(stacks.addresses(deepest).count(), MAX_STACK_DEPTH);
        let past = node(Some(deepest), 1);
        assert_eq!(stacks.define(deepest + 1, past), Learnt::Refused);
    }

    #[test]
    fn modules_of_absurd_bounds_are_refused_and_the_last_mapped_covers() {
        let module = |start, size, path| Module {
            start,
            size,
            bias: 0x1000,
            build_id: &[1, 2],
            path,
        };
        let mut stacks = Stacks::default();
        assert_eq!(stacks.map(0, module(0x1000, 0x100, "/a")), Learnt::New);
        assert_eq!(stacks.map(0, module(0x1000, 0x100, "/a")), Learnt::Same);
        // No bytes, an end past 2^64, no path, too long a path.
        assert_eq!(stacks.map(1, module(0x2000, 0, "/b")), Learnt::Refused);
        assert_eq!(stacks.map(1, module(u64::MAX, 2, "/b")), Learnt::Refused);
        assert_eq!(stacks.map(1, module(0x2000, 1, "")), Learnt::Refused);
        let long = "/".repeat(MAX_MODULE_PATH + 1);
        assert_eq!(stacks.map(1, module(0x2000, 1, &long)), Learnt::Refused);
        assert_eq!(stacks.modules().count(), 1);
        // Mapped over the first: it covers from now on.
        assert_eq!(stacks.map(2, module(0x1080, 0x100, "/c")), Learnt::New);
        assert_eq!(stacks.module_of(0x1090).unwrap().path, "/c");
        let a = stacks.module_of(0x1010).unwrap();
        assert_eq!((a.path.as_str(), a.file_address(0x1010)), ("/a", 0x10));
        assert!(stacks.module_of(0x2000).is_none());
    }

    #[test]
    fn symbols_are_kept_by_address_up_to_the_bound() {
        let mut stacks = Stacks::default();
        assert_eq!(stacks.learn(7, [1, 2].into_iter()), Learnt::New);
        assert_eq!(stacks.learn(7, [1, 2].into_iter()), Learnt::Same);
        assert_eq!(stacks.learn(7, [3].into_iter()), Learnt::New);
        assert_eq!(stacks.frames_at(7), Some(&[3][..]));
        for address in 0..MAX_FRAME_SYMBOLS as u64 {
            stacks.learn(address + 100, [0].into_iter());
        }
        assert_eq!(stacks.learn(u64::MAX, [0].into_iter()), Learnt::Refused);
        assert_eq!(stacks.symbols(), MAX_FRAME_SYMBOLS);
    }
}
