//! The session's stacks as the writer interns them (FORMAT.md, "Stacks"):
//! one tree of (parent, address) nodes, a path of it per distinct stack,
//! the frames at each address once the symbolizer answers, and (on
//! Linux) the module map of the files the addresses lie in. All only
//! grow, up to the format's bounds, and the exporter tells each reader
//! what it has not told it yet ([`Interned`]).

use std::collections::{HashMap, HashSet};

use typhon_live_core::stacks::MAX_STACK_NODES;
use typhon_live_core::{FrameSymbol, Module, NameId, NameSource, NodeId, StackNode};

#[cfg(target_os = "linux")]
use crate::modules::ModuleMap;
use crate::runtime::Names;

/// The tree, and the frames known at its addresses.
#[derive(Default)]
pub(crate) struct StackTree {
    nodes: Vec<StackNode>,
    /// Each node by its parent (`id + 1`, 0 for none) and address.
    index: HashMap<(u32, u64), NodeId>,
    /// Frames by address, in the order they were learnt.
    symbols: Vec<(u64, Vec<NameId>)>,
    /// Addresses the symbolizer was asked about, or is to be.
    asked: HashSet<u64>,
    to_ask: Vec<u64>,
    said_full: bool,
    #[cfg(target_os = "linux")]
    modules: ModuleMap,
    /// A node's address lies in no module mapped (a library loaded since).
    #[cfg(target_os = "linux")]
    unmapped: bool,
}

impl StackTree {
    /// Interns the stack of `addresses`, innermost first: its innermost
    /// node, or `None` when it needs a node past [`MAX_STACK_NODES`] (said
    /// once), or has no frame.
    pub(crate) fn intern(&mut self, addresses: &[u64]) -> Option<NodeId> {
        let mut parent: Option<NodeId> = None;
        for &address in addresses.iter().rev() {
            let key = (parent.map_or(0, |p| p + 1), address);
            let id = match self.index.get(&key) {
                Some(&id) => id,
                None => {
                    if self.nodes.len() >= MAX_STACK_NODES as usize {
                        if !self.said_full {
                            self.said_full = true;
                            log::info!("typhon-live: {MAX_STACK_NODES} stack nodes defined: stacks that need more are not sent");
                        }
                        return None;
                    }
                    let id = self.nodes.len() as NodeId;
                    self.nodes.push(StackNode { parent, address });
                    self.index.insert(key, id);
                    if self.asked.insert(address) {
                        self.to_ask.push(address);
                    }
                    #[cfg(target_os = "linux")]
                    {
                        self.unmapped |= !self.modules.covers(address);
                    }
                    id
                }
            };
            parent = Some(id);
        }
        parent
    }

    /// Addresses to ask the symbolizer about, each once.
    pub(crate) fn take_unasked(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.to_ask)
    }

    /// Frames the symbolizer found.
    pub(crate) fn symbolized(&mut self, frames: Vec<(u64, Vec<NameId>)>) {
        self.symbols
            .extend(frames.into_iter().filter(|(_, f)| !f.is_empty()));
    }

    /// Maps the modules of the process where a node's address lies in
    /// none mapped yet (read again at most once a second).
    pub(crate) fn map_modules(&mut self) {
        #[cfg(target_os = "linux")]
        if self.unmapped {
            // The map is the profiler's, no allocation site of the
            // program's.
            self.unmapped = !crate::tracking::unsampled(|| self.modules.rescan());
        }
    }

    /// The modules mapped.
    fn module(&self, index: u32) -> Option<Module<'_>> {
        #[cfg(target_os = "linux")]
        if let Some(m) = self.modules.modules().get(index as usize) {
            return Some(Module {
                start: m.avma.start,
                size: m.avma.end - m.avma.start,
                bias: m.bias,
                build_id: &m.build_id,
                path: &m.path,
            });
        }
        let _ = index;
        None
    }

    fn module_count(&self) -> u32 {
        #[cfg(target_os = "linux")]
        return self.modules.modules().len() as u32;
        #[cfg(not(target_os = "linux"))]
        0
    }

    /// Nodes defined.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }
}

/// What the session interned, as the exporter tells it: the program's
/// names and the stacks.
pub(crate) struct Interned<'a> {
    pub(crate) names: &'a Names,
    pub(crate) stacks: Option<&'a StackTree>,
}

impl NameSource for Interned<'_> {
    fn count(&self) -> u32 {
        self.names.count()
    }

    fn get(&self, id: NameId) -> Option<&str> {
        self.names.get(id)
    }

    fn stack_node_count(&self) -> u32 {
        self.stacks.map_or(0, |s| s.nodes.len() as u32)
    }

    fn stack_node(&self, id: NodeId) -> Option<StackNode> {
        self.stacks?.nodes.get(id as usize).copied()
    }

    fn frame_symbol_count(&self) -> u32 {
        self.stacks.map_or(0, |s| s.symbols.len() as u32)
    }

    fn frame_symbol(&self, index: u32) -> Option<FrameSymbol<'_>> {
        let (address, frames) = self.stacks?.symbols.get(index as usize)?;
        Some(FrameSymbol {
            address: *address,
            frames,
        })
    }

    fn module_count(&self) -> u32 {
        self.stacks.map_or(0, StackTree::module_count)
    }

    fn module(&self, index: u32) -> Option<Module<'_>> {
        self.stacks?.module(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_share_their_outer_frames_and_each_address_is_asked_once() {
        let mut tree = StackTree::default();
        // main -> a -> b, and main -> a -> c: innermost first.
        let b = tree.intern(&[0xb, 0xa, 0x1]).unwrap();
        let c = tree.intern(&[0xc, 0xa, 0x1]).unwrap();
        assert_eq!(tree.intern(&[0xb, 0xa, 0x1]), Some(b));
        assert_eq!(tree.len(), 4);
        let node = |id: NodeId| tree.nodes[id as usize];
        assert_eq!(node(b).parent, node(c).parent);
        assert_eq!(node(node(b).parent.unwrap()).address, 0xa);
        // 0xa under another caller is another node, and asked no more.
        tree.intern(&[0xa, 0x2]).unwrap();
        let mut asked = tree.take_unasked();
        asked.sort_unstable();
        assert_eq!(asked, [0x1, 0x2, 0xa, 0xb, 0xc]);
        assert!(tree.take_unasked().is_empty());
        assert_eq!(tree.intern(&[]), None);
    }
}
