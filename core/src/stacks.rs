//! Call stacks (FORMAT.md, "Stacks"): which code a lane's thread ran when
//! it was sampled.
//!
//! A session interns every stack it samples as a path in one tree of
//! nodes, each a (parent, address) pair, and the addresses' symbols as
//! frames named by name ids. Both are definitions, like names: written
//! once to each reader, in its Init or a Definitions frame, never dropped,
//! and given again to a reader that joins late. A sample names the node
//! of its innermost frame, so a sample costs a few bytes however deep its
//! stack.
//!
//! ```text
//! section 9, stack nodes (Init, Definitions):
//!     v first node id, v count, then per node: v parent (0 = a root,
//!     else its id + 1, below this node's id), v address
//! section 10, frame symbols (Init, Definitions):
//!     v count, then per entry: v address, u8 frame count (1 to 16),
//!     then v name id each, innermost (inlined) first
//! Samples frame section 5, stack samples:
//!     v count, then per sample: v lane id, v ticks before the frame's
//!     time, v node id, u8 flags (bits 0-1: how it was unwound; bit 2:
//!     cut; others reserved)
//! ```
//!
//! A parent's id is below its child's, so the tree can hold no cycle and
//! a reader resolves every node from those it already has. Depth is the
//! reader's to check (it spans frames): at most [`MAX_STACK_DEPTH`].

use core::fmt;

use crate::cursor::{Reader, Writer};
use crate::error::{DecodeError, EncodeError};
use crate::event::{LaneId, NameId};
use crate::samples::StackFrames;
use crate::section::{tag, write_section};

/// A stack node's id: dense from 0, in interning order, for a session.
pub type NodeId = u32;

/// Frames of one stack at most: a deeper stack keeps its innermost
/// frames and is marked cut.
pub const MAX_STACK_DEPTH: usize = 128;
/// Stack nodes a session defines at most. A reader holds each one
/// (typhon-live's, 24 bytes), so this bounds what a peer can make it
/// keep: 6 MiB.
pub const MAX_STACK_NODES: u32 = 1 << 18;
/// Frames one address stands for at most (a call and the calls inlined
/// into it).
pub const MAX_INLINED_FRAMES: usize = 16;
/// Bytes of a frame's name a writer keeps at most: a long generic type is
/// cut there, and marked with `…`.
pub const MAX_FRAME_NAME_LEN: usize = 240;
/// Stack nodes one frame defines at most: a writer with more sends them
/// in several frames, so that none nears the frame limit.
pub const MAX_NODES_PER_FRAME: u32 = 65_536;
/// Frame symbols one frame defines at most.
pub const MAX_SYMBOLS_PER_FRAME: u32 = 16_384;
/// Stack samples in one Samples frame at most.
pub const MAX_STACK_SAMPLES_PER_FRAME: usize = 65_536;

/// A node of the stack tree: a frame's address, under its caller's node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StackNode {
    /// The caller's node; `None` for an outermost frame.
    pub parent: Option<NodeId>,
    /// The frame's address in the process: the sampled instruction for
    /// an innermost frame, a return address for every other.
    pub address: u64,
}

/// What is known of the code at an address: its function and place,
/// with the calls inlined there, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameSymbol<'a> {
    /// The address, as stack nodes carry it.
    pub address: u64,
    /// The frames it stands for, innermost (inlined) first, each a name
    /// (`function (file:line)`): 1 to [`MAX_INLINED_FRAMES`].
    pub frames: &'a [NameId],
}

/// A frame symbol, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameSymbolView<'a> {
    /// The address.
    pub address: u64,
    /// The frames it stands for, innermost first.
    pub frames: StackFrames<'a>,
}

/// How a sampled stack was walked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Unwinding {
    /// Frame pointers, by the kernel: whole only where every frame keeps
    /// one.
    FramePointers,
    /// A copy of the thread's stack, walked with its unwind tables (DWARF
    /// CFI).
    UnwindTables,
}

impl Unwinding {
    const fn to_bits(self) -> u8 {
        match self {
            Unwinding::FramePointers => 0,
            Unwinding::UnwindTables => 1,
        }
    }
}

/// Flag bit of a stack sample: its stack was cut (deeper than the bound,
/// or than the copy of the stack reached).
const CUT: u8 = 1 << 2;
const UNWINDING: u8 = 0b11;

/// One sampled stack of a lane's thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StackSample {
    /// The lane.
    pub lane: LaneId,
    /// When, host ticks: at or before the frame's time.
    pub time: u64,
    /// The node of its innermost frame.
    pub node: NodeId,
    /// How it was walked.
    pub unwinding: Unwinding,
    /// Its outermost frames are missing: it was deeper than the bound, or
    /// than the walk reached.
    pub cut: bool,
}

/// Writes a frame's name as frame symbols give it (FORMAT.md, "Stacks"):
/// `function (file:line)`, the file without its directories, where the
/// place is known. `function` is demangled, without a Rust hash. Debug
/// information of line tables only names a function without its path: a
/// standard library function (its source under `…/library/core/`,
/// `alloc/` or `std/`) is then given its crate, `core::…`, so that every
/// symbolizer names one function alike.
pub fn write_frame_name(
    out: &mut impl fmt::Write,
    function: &str,
    file: Option<&str>,
    line: Option<u32>,
) -> fmt::Result {
    let library = file.and_then(|file| {
        let under = |krate: &str| {
            let mut parts = file.split(['/', '\\']);
            parts.any(|p| p == "library") && parts.next() == Some(krate)
        };
        ["core", "alloc", "std"].into_iter().find(|&k| under(k))
    });
    match library {
        Some(krate) if !function.contains("::") => write!(out, "{krate}::{function}")?,
        _ => out.write_str(function)?,
    }
    if let (Some(file), Some(line)) = (file, line) {
        let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
        write!(out, " ({base}:{line})")?;
    }
    Ok(())
}

/// Writes a stack nodes section: nodes `first..first + count`, looked up
/// by `get`.
pub(crate) fn write_nodes(
    w: &mut Writer<'_>,
    first: NodeId,
    count: u32,
    get: impl Fn(NodeId) -> Option<StackNode>,
) -> Result<(), EncodeError> {
    write_section(w, tag::STACK_NODES, |w| {
        w.varint(u64::from(first));
        w.varint(u64::from(count));
        for id in first..first.saturating_add(count) {
            // An append-only table has every id below its count; a root
            // keeps the ids dense should a host's table lie.
            let node = get(id).unwrap_or(StackNode {
                parent: None,
                address: 0,
            });
            let parent = node.parent.filter(|&p| p < id);
            w.varint(parent.map_or(0, |p| u64::from(p) + 1));
            w.varint(node.address);
        }
    })
}

/// Writes a frame symbols section: entries `first..first + count`, looked
/// up by `get`.
pub(crate) fn write_symbols<'s>(
    w: &mut Writer<'_>,
    first: u32,
    count: u32,
    get: impl Fn(u32) -> Option<FrameSymbol<'s>>,
) -> Result<(), EncodeError> {
    let symbols = (first..first.saturating_add(count)).filter_map(&get);
    if symbols
        .clone()
        .any(|s| s.frames.is_empty() || s.frames.len() > MAX_INLINED_FRAMES)
    {
        return Err(EncodeError::TooManyItems {
            what: "frames at one address",
        });
    }
    write_section(w, tag::FRAME_SYMBOLS, |w| {
        w.varint(symbols.clone().count() as u64);
        for symbol in symbols {
            w.varint(symbol.address);
            w.u8(symbol.frames.len() as u8);
            for &frame in symbol.frames {
                w.varint(u64::from(frame));
            }
        }
    })
}

/// The nodes of a stack nodes section, as `(id, node)` in id order.
#[derive(Clone, Debug)]
pub struct StackNodes<'a> {
    r: Reader<'a>,
    next_id: NodeId,
    left: u32,
}

impl<'a> StackNodes<'a> {
    pub(crate) const EMPTY: StackNodes<'static> = StackNodes {
        r: Reader::EMPTY,
        next_id: 0,
        left: 0,
    };

    /// Checks a section's body whole: ids within [`MAX_STACK_NODES`],
    /// each parent below its child, nothing left over.
    pub(crate) fn parse(body: &'a [u8]) -> Result<Self, DecodeError> {
        if body.is_empty() {
            return Ok(StackNodes::EMPTY);
        }
        let mut r = Reader::new(body);
        let next_id = r.varint_u32("first stack node id")?;
        let left = r.varint_u32("stack node count")?;
        let end = u64::from(next_id) + u64::from(left);
        DecodeError::at_most("stack node id", end, u64::from(MAX_STACK_NODES))?;
        let nodes = StackNodes { r, next_id, left };
        let mut check = nodes.clone();
        for _ in 0..left {
            check.step()?;
        }
        check.r.expect_end("stack nodes have trailing bytes")?;
        Ok(nodes)
    }

    fn step(&mut self) -> Result<(NodeId, StackNode), DecodeError> {
        let id = self.next_id;
        let parent = match self.r.varint("stack node parent")? {
            0 => None,
            p if p - 1 < u64::from(id) => Some((p - 1) as NodeId),
            _ => {
                return Err(DecodeError::Malformed {
                    what: "stack node parent not below the node",
                })
            }
        };
        let address = self.r.varint("stack node address")?;
        self.next_id += 1;
        self.left -= 1;
        Ok((id, StackNode { parent, address }))
    }

    /// Nodes in the section.
    pub fn len(&self) -> u32 {
        self.left
    }

    /// True when the section defines no node.
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }
}

impl Iterator for StackNodes<'_> {
    type Item = (NodeId, StackNode);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        // Checked when parsed: an error ends the walk instead of a panic.
        self.step().map_err(|_| self.left = 0).ok()
    }
}

/// The entries of a frame symbols section.
#[derive(Clone, Debug)]
pub struct FrameSymbols<'a> {
    r: Reader<'a>,
    left: u32,
}

impl<'a> FrameSymbols<'a> {
    pub(crate) const EMPTY: FrameSymbols<'static> = FrameSymbols {
        r: Reader::EMPTY,
        left: 0,
    };

    /// Checks a section's body whole: a count within
    /// [`MAX_SYMBOLS_PER_FRAME`], each entry's frames within
    /// [`MAX_INLINED_FRAMES`] and at least one, nothing left over.
    pub(crate) fn parse(body: &'a [u8]) -> Result<Self, DecodeError> {
        if body.is_empty() {
            return Ok(FrameSymbols::EMPTY);
        }
        let mut r = Reader::new(body);
        let count = r.varint("frame symbol count")?;
        DecodeError::at_most(
            "frame symbol count",
            count,
            u64::from(MAX_SYMBOLS_PER_FRAME),
        )?;
        let symbols = FrameSymbols {
            r,
            left: count as u32,
        };
        let mut check = symbols.clone();
        for _ in 0..count {
            check.step()?;
        }
        check.r.expect_end("frame symbols have trailing bytes")?;
        Ok(symbols)
    }

    fn step(&mut self) -> Result<FrameSymbolView<'a>, DecodeError> {
        let address = self.r.varint("frame symbol address")?;
        let count = self.r.u8("frame symbol frame count")?;
        if count == 0 {
            return Err(DecodeError::Malformed {
                what: "a frame symbol of no frame",
            });
        }
        let what = "frame symbol frame count";
        DecodeError::at_most(what, u64::from(count), MAX_INLINED_FRAMES as u64)?;
        let frames = StackFrames::read(&mut self.r, count)?;
        self.left -= 1;
        Ok(FrameSymbolView { address, frames })
    }

    /// Entries in the section.
    pub fn len(&self) -> u32 {
        self.left
    }

    /// True when the section holds no entry.
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }
}

impl<'a> Iterator for FrameSymbols<'a> {
    type Item = FrameSymbolView<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.step().map_err(|_| self.left = 0).ok()
    }
}

/// Bytes one stack sample takes at most: lane, ticks before, node, flags.
pub(crate) const MAX_STACK_SAMPLE_BYTES: usize = 3 + 10 + 5 + 1;

/// Writes a Samples frame's stack samples section body.
pub(crate) fn write_stack_samples(w: &mut Writer<'_>, time: u64, samples: &[StackSample]) {
    w.varint(samples.len() as u64);
    for sample in samples {
        w.varint(u64::from(sample.lane));
        w.varint(time - sample.time);
        w.varint(u64::from(sample.node));
        w.u8(sample.unwinding.to_bits() | if sample.cut { CUT } else { 0 });
    }
}

/// Checks a batch's stack samples before any is written.
pub(crate) fn check_stack_samples(time: u64, samples: &[StackSample]) -> Result<(), EncodeError> {
    let over = samples.len() > MAX_STACK_SAMPLES_PER_FRAME;
    if over
        || samples
            .iter()
            .any(|s| s.time > time || s.node >= MAX_STACK_NODES)
    {
        return Err(EncodeError::TooManyItems {
            what: "stack samples",
        });
    }
    Ok(())
}

/// Reads one stack sample of a frame read at `time`.
pub(crate) fn next_stack_sample(r: &mut Reader<'_>, time: u64) -> Result<StackSample, DecodeError> {
    let lane = r.varint_u16("stack sample lane id")?;
    let before = r.varint("stack sample time")?;
    let time = time.checked_sub(before).ok_or(DecodeError::Malformed {
        what: "stack sample before the clock's start",
    })?;
    let node = r.varint_u32("stack sample node")?;
    DecodeError::at_most(
        "stack sample node",
        u64::from(node),
        u64::from(MAX_STACK_NODES - 1),
    )?;
    let flags = r.u8("stack sample flags")?;
    let unwinding = match flags & UNWINDING {
        0 => Unwinding::FramePointers,
        1 => Unwinding::UnwindTables,
        _ => {
            return Err(DecodeError::Malformed {
                what: "stack sample unwinding",
            })
        }
    };
    if flags & !(UNWINDING | CUT) != 0 {
        return Err(DecodeError::Malformed {
            what: "stack sample flags (reserved bits set)",
        });
    }
    Ok(StackSample {
        lane,
        time,
        node,
        unwinding,
        cut: flags & CUT != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::section::Sections;

    fn section(
        write: impl FnOnce(&mut Writer<'_>) -> Result<(), EncodeError>,
    ) -> ([u8; 256], usize) {
        let mut buf = [0u8; 256];
        let mut w = Writer::new(&mut buf);
        write(&mut w).unwrap();
        let len = w.finish().unwrap();
        (buf, len)
    }

    fn body(bytes: &[u8]) -> &[u8] {
        Sections::new(bytes).next_section().unwrap().unwrap().1
    }

    /// A `fmt::Write` into a fixed buffer.
    struct Text {
        bytes: [u8; 128],
        len: usize,
    }

    impl fmt::Write for Text {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let to = self
                .bytes
                .get_mut(self.len..self.len + s.len())
                .ok_or(fmt::Error)?;
            to.copy_from_slice(s.as_bytes());
            self.len += s.len();
            Ok(())
        }
    }

    fn frame_name(function: &str, file: Option<&str>, line: Option<u32>) -> Text {
        let mut text = Text {
            bytes: [0; 128],
            len: 0,
        };
        write_frame_name(&mut text, function, file, line).unwrap();
        text
    }

    #[test]
    fn a_frame_is_named_by_its_function_and_place_and_a_library_s_by_its_crate() {
        let name = |t: &Text| core::str::from_utf8(&t.bytes[..t.len]).unwrap().to_owned();
        let cases = [
            (
                frame_name("engine::plan", Some("/src/engine/plan.rs"), Some(12)),
                "engine::plan (plan.rs:12)",
            ),
            (
                frame_name("fold", Some("/rustc/abc/library/core/src/iter.rs"), Some(3)),
                "core::fold (iter.rs:3)",
            ),
            (
                frame_name(
                    "Vec::push",
                    Some("C:\\rustc\\library\\alloc\\vec.rs"),
                    Some(9),
                ),
                "Vec::push (vec.rs:9)",
            ),
            (frame_name("main", None, Some(3)), "main"),
            (frame_name("spin", Some("/my/library/std.rs"), None), "spin"),
        ];
        for (got, want) in cases {
            assert_eq!(name(&got), want);
        }
    }

    #[test]
    fn nodes_and_symbols_round_trip() {
        let nodes = [
            StackNode {
                parent: None,
                address: 0x5555_0000_1000,
            },
            StackNode {
                parent: Some(5),
                address: 0x5555_0000_2000,
            },
            StackNode {
                parent: Some(6),
                address: u64::MAX,
            },
        ];
        let (bytes, len) =
            section(|w| write_nodes(w, 5, 3, |id| nodes.get(id as usize - 5).copied()));
        let read: ([(NodeId, StackNode); 3], usize) = {
            let mut out = [(0, nodes[0]); 3];
            let parsed = StackNodes::parse(body(&bytes[..len])).unwrap();
            assert_eq!(parsed.len(), 3);
            for (slot, node) in out.iter_mut().zip(parsed.clone()) {
                *slot = node;
            }
            (out, parsed.count())
        };
        assert_eq!(read.1, 3);
        assert_eq!(read.0, [(5, nodes[0]), (6, nodes[1]), (7, nodes[2])]);

        let frames = [[3, 4], [9, 9]];
        let (bytes, len) = section(|w| {
            write_symbols(w, 0, 2, |i| {
                Some(FrameSymbol {
                    address: 0x1000 * u64::from(i + 1),
                    frames: &frames[i as usize],
                })
            })
        });
        let symbols = FrameSymbols::parse(body(&bytes[..len])).unwrap();
        assert_eq!(symbols.len(), 2);
        let mut it = symbols;
        let first = it.next().unwrap();
        assert_eq!(first.address, 0x1000);
        assert!(first.frames.iter().eq([3, 4]));
        assert_eq!(it.next().unwrap().address, 0x2000);
        assert!(it.next().is_none());
    }

    #[test]
    fn a_parent_not_below_its_node_ids_past_the_bound_and_empty_symbols_are_refused() {
        // Node 2 naming itself (parent 2 + 1).
        assert!(matches!(
            StackNodes::parse(&[2, 1, 3, 0]),
            Err(DecodeError::Malformed { .. })
        ));
        // Node 2 naming node 3, after it.
        assert!(matches!(
            StackNodes::parse(&[2, 1, 4, 0]),
            Err(DecodeError::Malformed { .. })
        ));
        // Ids up to 2^18 + 1.
        assert!(matches!(
            StackNodes::parse(&[0x80, 0x80, 0x10, 2, 0, 0, 0, 0]),
            Err(DecodeError::OverBound { .. })
        ));
        // A count the body does not hold.
        assert!(StackNodes::parse(&[0, 5, 0, 0]).is_err());
        // A symbol of no frame, of 17, and too many symbols.
        assert!(matches!(
            FrameSymbols::parse(&[1, 0, 0]),
            Err(DecodeError::Malformed { .. })
        ));
        assert!(matches!(
            FrameSymbols::parse(&[1, 0, 17]),
            Err(DecodeError::OverBound { .. })
        ));
        assert!(matches!(
            FrameSymbols::parse(&[0x81, 0x80, 0x01]),
            Err(DecodeError::OverBound { .. })
        ));
        // A writer refuses a symbol of no frame, or of too many.
        let mut buf = [0u8; 64];
        let mut w = Writer::new(&mut buf);
        let none = write_symbols(&mut w, 0, 1, |_| {
            Some(FrameSymbol {
                address: 1,
                frames: &[],
            })
        });
        assert!(none.is_err());
    }

    #[test]
    fn stack_samples_round_trip_and_bad_flags_are_refused() {
        let samples = [
            StackSample {
                lane: 3,
                time: 900,
                node: 0,
                unwinding: Unwinding::FramePointers,
                cut: false,
            },
            StackSample {
                lane: u16::MAX,
                time: 1_000,
                node: MAX_STACK_NODES - 1,
                unwinding: Unwinding::UnwindTables,
                cut: true,
            },
        ];
        check_stack_samples(1_000, &samples).unwrap();
        let (bytes, len) = section(|w| {
            write_stack_samples(w, 1_000, &samples);
            Ok(())
        });
        assert!(len <= 10 + samples.len() * MAX_STACK_SAMPLE_BYTES);
        let mut r = Reader::new(&bytes[..len]);
        assert_eq!(r.varint("count").unwrap(), 2);
        for want in samples {
            assert_eq!(next_stack_sample(&mut r, 1_000).unwrap(), want);
        }
        assert!(r.is_empty());
        // A sample after its frame, or naming a node past the bound.
        let late = StackSample {
            time: 1_001,
            ..samples[0]
        };
        assert!(check_stack_samples(1_000, &[late]).is_err());
        let far = StackSample {
            node: MAX_STACK_NODES,
            ..samples[0]
        };
        assert!(check_stack_samples(1_000, &[far]).is_err());
        // Unwinding 2, a reserved bit, a time before the clock's start.
        for bad in [[0, 0, 0, 2], [0, 0, 0, 8], [0, 0, 0, 0]] {
            let time = if bad[3] == 0 { 0 } else { 10 };
            let mut bytes = bad;
            if bad[3] == 0 {
                bytes[1] = 1;
            }
            let mut r = Reader::new(&bytes);
            assert!(next_stack_sample(&mut r, time).is_err(), "{bytes:?}");
        }
    }
}
