//! The session's call stacks (FORMAT.md, "Stacks"): its tree of nodes
//! and its frames' symbols, as Inits and Definitions define them, kept up
//! to the format's bounds, so that a hostile peer cannot grow them past.
//!
//! A node whose parent this reader does not hold (its definition was
//! refused), or that would stand deeper than
//! [`MAX_STACK_DEPTH`](typhon_live_core::stacks::MAX_STACK_DEPTH), is
//! refused, and so is every node under it; a sample naming a node not
//! held is skipped and counted.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use typhon_live_core::stacks::{MAX_INLINED_FRAMES, MAX_STACK_DEPTH, MAX_STACK_NODES};
use typhon_live_core::{NameId, NodeId, StackNode};

/// Frame symbols kept at most: one an address, and an address a node's.
pub const MAX_FRAME_SYMBOLS: usize = MAX_STACK_NODES as usize;

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
