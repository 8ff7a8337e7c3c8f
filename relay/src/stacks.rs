//! The merged stream's stacks (FORMAT.md, "Stacks"): each source's nodes
//! under node ids of the relay's, their frames' names remapped, each
//! source within its share of the nodes and frame symbols. Two processes'
//! addresses are two address spaces, so a source's addresses carry its
//! number (from 0) in their top byte: the symbols of one never answer for
//! another's. A source shown as itself is number 0, its addresses as
//! they were.
//!
//! The merged stream defines at most one frame's worth of each
//! ([`MAX_NODES_PER_FRAME`], [`MAX_SYMBOLS_PER_FRAME`]), so that the Init
//! every viewer joins with holds them all.

use typhon_live_core::stacks::{MAX_NODES_PER_FRAME, MAX_SYMBOLS_PER_FRAME};
use typhon_live_core::{FrameSymbol, NameId, NodeId, StackNode, StackSample};

use crate::ids::Ids;

/// Bits of an address a source keeps: user addresses are far below 2^56.
const ADDRESS_BITS: u32 = 56;

/// What the merged stream defines.
#[derive(Default)]
pub(crate) struct MergedStacks {
    nodes: Vec<StackNode>,
    symbols: Vec<(u64, Vec<NameId>)>,
    /// Nodes and symbols sent in an Init or Definitions.
    pub(crate) nodes_sent: u32,
    pub(crate) symbols_sent: u32,
}

/// One source's part: its node ids as the relay's, and its share.
#[derive(Default)]
pub(crate) struct SourceStacks {
    nodes: Ids<NodeId>,
    max_nodes: usize,
    symbols: usize,
    max_symbols: usize,
}

impl SourceStacks {
    /// A source's part of the nodes when there are `sources`.
    pub(crate) fn share_of(sources: usize) -> SourceStacks {
        SourceStacks {
            max_nodes: MAX_NODES_PER_FRAME as usize / sources.max(1),
            max_symbols: MAX_SYMBOLS_PER_FRAME as usize / sources.max(1),
            ..SourceStacks::default()
        }
    }

    /// Its process started over: its ids mean other things now. What it
    /// defined stays in the merged tables, and counts against its share.
    pub(crate) fn new_session(&mut self) {
        self.nodes.clear();
    }
}

/// `address` of source `source`, as the merged stream's.
fn tagged(source: usize, address: u64) -> u64 {
    (address & ((1 << ADDRESS_BITS) - 1)) | ((source as u64) << ADDRESS_BITS)
}

impl MergedStacks {
    /// Takes in source `source`'s nodes and symbols (the reader held each
    /// node's parent), their frames' names mapped by `name`. A node past
    /// the source's share, or whose parent was not taken, is not.
    pub(crate) fn define(
        &mut self,
        source: usize,
        state: &mut SourceStacks,
        nodes: &[(NodeId, StackNode)],
        symbols: &[(u64, Vec<NameId>)],
        mut name: impl FnMut(NameId) -> NameId,
    ) {
        for &(id, node) in nodes {
            let full = self.nodes.len() >= MAX_NODES_PER_FRAME as usize;
            if full || state.nodes.len() >= state.max_nodes {
                break;
            }
            let parent = match node.parent {
                None => None,
                Some(parent) => match state.nodes.get(parent) {
                    Some(relay) => Some(relay),
                    None => continue,
                },
            };
            let relay = self.nodes.len() as NodeId;
            self.nodes.push(StackNode {
                parent,
                address: tagged(source, node.address),
            });
            state.nodes.insert(id, relay);
        }
        for (address, frames) in symbols {
            let full = self.symbols.len() >= MAX_SYMBOLS_PER_FRAME as usize;
            if full || state.symbols >= state.max_symbols {
                break;
            }
            state.symbols += 1;
            let frames = frames.iter().map(|&f| name(f)).collect();
            self.symbols.push((tagged(source, *address), frames));
        }
    }

    /// Source `source`'s samples under the relay's node ids, placed by
    /// `lane` and `time`; a sample whose node or lane the relay did not
    /// take is left out.
    pub(crate) fn samples(
        &self,
        state: &SourceStacks,
        samples: &[StackSample],
        mut place: impl FnMut(&StackSample) -> Option<(u16, u64)>,
    ) -> Vec<StackSample> {
        (samples.iter())
            .filter_map(|sample| {
                let node = state.nodes.get(sample.node)?;
                let (lane, time) = place(sample)?;
                Some(StackSample {
                    lane,
                    time,
                    node,
                    ..*sample
                })
            })
            .collect()
    }

    /// Whether nodes or symbols wait to be sent.
    pub(crate) fn unsent(&self) -> bool {
        self.nodes.len() as u32 > self.nodes_sent || self.symbols.len() as u32 > self.symbols_sent
    }

    /// Nodes defined.
    pub(crate) fn node_count(&self) -> u32 {
        self.nodes.len() as u32
    }

    /// Symbols defined.
    pub(crate) fn symbol_count(&self) -> u32 {
        self.symbols.len() as u32
    }

    /// Node `id`.
    pub(crate) fn node(&self, id: NodeId) -> Option<StackNode> {
        self.nodes.get(id as usize).copied()
    }

    /// The `index`th symbol.
    pub(crate) fn symbol(&self, index: u32) -> Option<FrameSymbol<'_>> {
        let (address, frames) = self.symbols.get(index as usize)?;
        Some(FrameSymbol {
            address: *address,
            frames,
        })
    }

    /// Bytes its unsent part takes at most in a frame.
    pub(crate) fn unsent_bytes(&self) -> usize {
        let nodes = self.nodes.len().saturating_sub(self.nodes_sent as usize);
        let symbols = self.symbols[(self.symbols_sent as usize).min(self.symbols.len())..].iter();
        nodes * 15 + symbols.map(|(_, f)| 11 + 5 * f.len()).sum::<usize>() + 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_sources_stacks_keep_their_own_ids_and_addresses() {
        let mut merged = MergedStacks::default();
        let (mut a, mut b) = (SourceStacks::share_of(2), SourceStacks::share_of(2));
        let tree = [
            (
                0,
                StackNode {
                    parent: None,
                    address: 0x1000,
                },
            ),
            (
                1,
                StackNode {
                    parent: Some(0),
                    address: 0x2000,
                },
            ),
        ];
        merged.define(0, &mut a, &tree, &[(0x2000, vec![7])], |n| n + 100);
        merged.define(1, &mut b, &tree, &[(0x2000, vec![7])], |n| n + 200);
        assert_eq!(merged.node_count(), 4);
        // b's node 1 is the relay's 3, under its 2, at its own address.
        let node = merged.node(3).unwrap();
        assert_eq!(node.parent, Some(2));
        assert_eq!(node.address, (1 << 56) | 0x2000);
        let symbol = merged.symbol(1).unwrap();
        assert_eq!(
            (symbol.address, symbol.frames),
            ((1 << 56) | 0x2000, &[207][..])
        );
        // Its sample comes under the relay's id; one of a node never
        // defined, or a lane not taken, is left out.
        let sample = |node| StackSample {
            lane: 0,
            time: 5,
            node,
            unwinding: typhon_live_core::Unwinding::UnwindTables,
            cut: false,
        };
        let out = merged.samples(&b, &[sample(1), sample(9)], |s| Some((4, s.time + 1)));
        assert_eq!(
            out,
            [StackSample {
                lane: 4,
                time: 6,
                node: 3,
                ..sample(1)
            }]
        );
        assert!(merged.samples(&b, &[sample(1)], |_| None).is_empty());
        // A node whose parent was not taken is not taken either.
        let orphan = [(
            5,
            StackNode {
                parent: Some(4),
                address: 1,
            },
        )];
        merged.define(0, &mut a, &orphan, &[], |n| n);
        assert_eq!(merged.node_count(), 4);
    }
}
