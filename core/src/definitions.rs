//! The Definitions frame: names interned and lanes claimed after a reader's
//! Init. Never dropped by a sender, so a reader can always name every id it
//! receives: it is sent before the first Block that uses what it defines.
//!
//! Payload: a names section (ids `first..first + count`) and a lanes section
//! (the whole current lane table), both as in Init; or the stack nodes and
//! frame symbols learnt and the modules mapped since (sections 9 and 10,
//! [`crate::stacks`], and 11, [`crate::modules`]).

use crate::error::{DecodeError, EncodeError};
use crate::frame::{write_frame, FrameKind};
use crate::lane::LaneInfo;
use crate::modules::{self, Modules};
use crate::names::NameSource;
use crate::section::{self, tag, LaneTable, Names, Sections};
use crate::stacks::{self, FrameSymbols, StackNodes};

/// Writes a Definitions frame with names `first..names.count()` and the lanes.
pub fn write_definitions(
    out: &mut [u8],
    seq: u32,
    names: &impl NameSource,
    first: u32,
    lanes: impl Iterator<Item = LaneInfo>,
) -> Result<usize, EncodeError> {
    let count = names.count().saturating_sub(first);
    write_frame(out, FrameKind::Definitions, seq, |w| {
        section::write_names(w, first, count, |id| names.get(id))?;
        section::write_lanes(w, lanes)
    })
}

/// The parts of a session's stacks one Definitions frame carries: ranges
/// of its stack nodes' ids, its frame symbols' and its modules' indexes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackRanges {
    /// Stack node ids.
    pub nodes: core::ops::Range<u32>,
    /// Frame symbols, in the order learnt.
    pub symbols: core::ops::Range<u32>,
    /// Modules, in the order mapped.
    pub modules: core::ops::Range<u32>,
}

/// Writes a Definitions frame of the stack nodes, frame symbols and
/// modules of `source` in `ranges`, and no names or lanes: each section
/// only if its range is not empty.
pub fn write_stack_definitions(
    out: &mut [u8],
    seq: u32,
    source: &impl NameSource,
    ranges: StackRanges,
) -> Result<usize, EncodeError> {
    let StackRanges {
        nodes,
        symbols,
        modules,
    } = ranges;
    write_frame(out, FrameKind::Definitions, seq, |w| {
        if !nodes.is_empty() {
            let count = nodes.end - nodes.start;
            stacks::write_nodes(w, nodes.start, count, |id| source.stack_node(id))?;
        }
        if !symbols.is_empty() {
            let count = symbols.end - symbols.start;
            stacks::write_symbols(w, symbols.start, count, |i| source.frame_symbol(i))?;
        }
        if !modules.is_empty() {
            let count = modules.end - modules.start;
            modules::write_modules(w, modules.start, count, |i| source.module(i))?;
        }
        Ok(())
    })
}

/// Writes a Definitions frame with names `first..first + count` of `names`
/// and no lanes section (the reader's lane table stays as it is): how a
/// reader's state with gaps in its name ids is written back out, a run of
/// ids a frame.
pub fn write_names(
    out: &mut [u8],
    seq: u32,
    names: &impl NameSource,
    first: u32,
    count: u32,
) -> Result<usize, EncodeError> {
    write_frame(out, FrameKind::Definitions, seq, |w| {
        section::write_names(w, first, count, |id| names.get(id))
    })
}

/// A checked Definitions frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefinitionsView<'a> {
    payload: &'a [u8],
}

impl<'a> DefinitionsView<'a> {
    /// Parses and checks a Definitions payload.
    pub fn parse(payload: &'a [u8]) -> Result<Self, DecodeError> {
        let mut sections = Sections::new(payload);
        while let Some((tag, body)) = sections.next_section()? {
            match tag {
                tag::NAMES => {
                    Names::parse(body)?;
                }
                tag::LANES => section::check_lane_table(body)?,
                tag::STACK_NODES => {
                    StackNodes::parse(body)?;
                }
                tag::FRAME_SYMBOLS => {
                    FrameSymbols::parse(body)?;
                }
                tag::MODULES => {
                    Modules::parse(body)?;
                }
                _ => {}
            }
        }
        Ok(DefinitionsView { payload })
    }

    /// The stack nodes defined, as `(id, node)`: none without a stack
    /// nodes section.
    pub fn stack_nodes(&self) -> StackNodes<'a> {
        let body = Sections::find(self.payload, tag::STACK_NODES);
        StackNodes::parse(body).unwrap_or(StackNodes::EMPTY)
    }

    /// The frame symbols learnt: none without a frame symbols section.
    pub fn frame_symbols(&self) -> FrameSymbols<'a> {
        let body = Sections::find(self.payload, tag::FRAME_SYMBOLS);
        FrameSymbols::parse(body).unwrap_or(FrameSymbols::EMPTY)
    }

    /// The modules mapped: none without a module map section.
    pub fn modules(&self) -> Modules<'a> {
        Modules::parse(Sections::find(self.payload, tag::MODULES)).unwrap_or(Modules::EMPTY)
    }

    /// The names defined, as `(id, name)`: none without a names section.
    pub fn names(&self) -> Names<'a> {
        Names::parse(Sections::find(self.payload, tag::NAMES)).unwrap_or(Names::EMPTY)
    }

    /// The lane table at the time of writing, which replaces the
    /// reader's (a lane missing from it was freed); `None` when the frame
    /// has no lanes section, which leaves the reader's table as it is.
    pub fn lanes(&self) -> Option<LaneTable<'a>> {
        let mut sections = Sections::new(self.payload);
        while let Ok(Some((tag, body))) = sections.next_section() {
            if tag == tag::LANES {
                return Some(section::lane_table(body));
            }
        }
        None
    }
}
