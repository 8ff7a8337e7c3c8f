//! Which code ran, for a selection (a name, one span, a time range, a
//! lane): the stacks sampled in it (FORMAT.md, "Stacks"), folded into a
//! call tree, a flame graph's, with each function's self and total
//! samples. Computed on demand from the history, as [`crate::cpu`] is,
//! so that the samples of a span are folded in once the span has ended
//! and its samples arrived, whichever came first.
//!
//! A sample belongs to its lane's innermost span open at its time, and so
//! to that span and every span around it: a span's profile holds the
//! samples taken on its lane while it was open. A task span's are those
//! of its polls, on whichever lanes they ran.

use std::collections::HashMap;

use typhon_live_core::{NameId, NodeId, StackSample};
use typhon_live_reader::{Names, Stacks};

use crate::history::{Chunk, SpanRecord};

/// What to fold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Every span of a name (its task's polls, for a task span's name).
    Name(u32),
    /// One span: its lane, from its start to its end (ns).
    Span {
        /// The lane.
        lane: u16,
        /// Its start, ns.
        start: u64,
        /// Its end, ns.
        end: u64,
    },
    /// Every lane from `from` to `to` (ns).
    Range {
        /// Start, ns.
        from: u64,
        /// End, ns.
        to: u64,
    },
    /// One lane from `from` to `to` (ns).
    Lane {
        /// The lane.
        lane: u16,
        /// Start, ns.
        from: u64,
        /// End, ns.
        to: u64,
    },
}

/// A frame of the call tree: a function, as its name (`function
/// (file:line)`), or an address the writer has not symbolized (yet).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Frame {
    /// A function, by name id.
    Function(NameId),
    /// An address without a symbol.
    Address(u64),
}

impl Frame {
    /// Its text: the function's name, or the address in hex.
    pub fn text(&self, names: &Names) -> String {
        match *self {
            Frame::Function(name) => names.show(name).into_owned(),
            Frame::Address(address) => format!("{address:#x}"),
        }
    }

    /// Its function's name without the place (`function`, of `function
    /// (file:line)`).
    pub fn function(&self, names: &Names) -> String {
        let text = self.text(names);
        match text.rfind(" (") {
            Some(at) if text.ends_with(')') => text[..at].to_owned(),
            _ => text,
        }
    }
}

/// A node of the call tree: a frame under its caller's node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallNode {
    /// Its frame; the root's is meaningless.
    pub frame: Frame,
    /// Its caller's node; the root's is 0, itself.
    pub parent: u32,
    /// 0 for the root, 1 for an outermost frame.
    pub depth: u16,
    /// Samples whose stack passes through it.
    pub total: u64,
    /// Samples whose stack ends in it: its frame ran.
    pub own: u64,
    /// Its callees' nodes, most samples first.
    pub children: Vec<u32>,
}

/// A function's samples across the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionSamples {
    /// The function.
    pub frame: Frame,
    /// Samples in which it ran (innermost).
    pub own: u64,
    /// Samples in which it was on the stack (once a sample, however
    /// often it recursed).
    pub total: u64,
}

/// The stacks of a selection, folded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// The call tree; node 0 is the root, every sample's.
    pub nodes: Vec<CallNode>,
    /// Each function's samples, most samples of their own first.
    pub functions: Vec<FunctionSamples>,
    /// Samples folded.
    pub samples: u64,
    /// Of those, stacks whose outer frames are missing.
    pub cut: u64,
    /// Of those, stacks walked by frame pointers (not unwind tables).
    pub frame_pointers: u64,
    /// When the newest sample folded was taken (host ns).
    pub newest: Option<u64>,
}

impl Profile {
    /// The samples of `selection` over `chunks`, their stacks read from
    /// `stacks` (the reader's, which holds the session's tree).
    pub fn of<'a>(
        chunks: impl Iterator<Item = &'a Chunk> + Clone,
        stacks: &Stacks,
        selection: Selection,
    ) -> Profile {
        let within = Within::of(chunks.clone(), selection);
        let mut fold = Fold::new(stacks);
        let mut newest = None;
        for chunk in chunks.filter(|c| within.may_hold(c)) {
            for sample in chunk.stacks.iter().filter(|s| within.holds(s)) {
                fold.add(sample);
                newest = newest.max(Some(sample.time));
            }
        }
        Profile {
            newest,
            ..fold.finish()
        }
    }

    /// Whether it folded no sample.
    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    /// The function that ran in the most samples, and its share of them.
    pub fn hottest(&self) -> Option<(Frame, f64)> {
        let top = self.functions.first().filter(|f| f.own > 0)?;
        Some((top.frame, top.own as f64 / self.samples as f64))
    }

    /// The program's function that ran most, and its share of the
    /// samples: each sample counted at its innermost frame outside Rust's
    /// standard library (`core`, `alloc`, `std`), whose helpers (an
    /// iterator's `next`, `black_box`) are where time is spent but not
    /// what a person changes; at its innermost frame where every frame is
    /// the library's. What a stall's summary names.
    pub fn hottest_of_program(&self, names: &Names) -> Option<(Frame, f64)> {
        let mut counts: HashMap<Frame, u64> = HashMap::new();
        for node in self.nodes.iter().skip(1).filter(|n| n.own > 0) {
            let mut here = node;
            while is_library(&here.frame, names) && here.parent != 0 {
                here = &self.nodes[here.parent as usize];
            }
            let frame = if is_library(&here.frame, names) {
                node.frame
            } else {
                here.frame
            };
            *counts.entry(frame).or_default() += node.own;
        }
        let (frame, own) = (counts.into_iter()).max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))?;
        Some((frame, own as f64 / self.samples as f64))
    }

    /// Its stacks as folded lines (Brendan Gregg's format: frames
    /// outermost first, `;` between them, a space and the count), one a
    /// distinct stack.
    pub fn folded(&self, names: &Names) -> String {
        let mut out = String::new();
        for (id, node) in self.nodes.iter().enumerate().skip(1) {
            if node.own == 0 {
                continue;
            }
            let mut path = Vec::new();
            let mut at = id as u32;
            while at != 0 {
                let node = &self.nodes[at as usize];
                path.push(node.frame.text(names).replace(';', ":"));
                at = node.parent;
            }
            path.reverse();
            out.push_str(&path.join(";"));
            out.push_str(&format!(" {}\n", node.own));
        }
        out
    }

    /// The nodes whose frame is `frame`, and the samples through them (a
    /// function reached by several paths).
    pub fn nodes_of(&self, frame: Frame) -> impl Iterator<Item = (u32, &CallNode)> {
        let nodes = self.nodes.iter().enumerate().skip(1);
        nodes
            .filter(move |(_, n)| n.frame == frame)
            .map(|(id, n)| (id as u32, n))
    }
}

/// Whether `frame` is Rust's standard library's: a function of `core`,
/// `alloc` or `std`, a method of one of their types or of a primitive
/// (`<u64 as core::iter::Step>::forward`), or their glue (`__rust_…`). A
/// trait of theirs implemented for a program's type is the program's.
fn is_library(frame: &Frame, names: &Names) -> bool {
    let Frame::Function(name) = frame else {
        return false;
    };
    let text = names.show(*name);
    let library = |path: &str| {
        ["core::", "alloc::", "std::"]
            .iter()
            .any(|c| path.starts_with(c))
    };
    if let Some(inner) = text.strip_prefix('<') {
        let own = inner.split(" as ").next().unwrap_or(inner);
        let own = own
            .trim_start_matches(['&', '*', '<', '['])
            .trim_start_matches("mut ");
        return library(own) || !own.contains("::");
    }
    library(&text) || text.starts_with("__rust")
}

/// Spans scanned back at most, from a sample's time, for the innermost
/// one that holds it.
const SCAN_BACK: usize = 4096;

/// The spans whose samples in `[from, to)` ran `frame` (it was on their
/// stack): each such sample's innermost span on its lane, each span
/// once, at most `limit`, earliest first.
pub fn spans_holding<'a>(
    chunks: impl Iterator<Item = &'a Chunk> + Clone,
    stacks: &Stacks,
    frame: Frame,
    (from, to): (u64, u64),
    limit: usize,
) -> Vec<SpanRecord> {
    let mut holds: HashMap<NodeId, bool> = HashMap::new();
    let mut holding = |node: NodeId| {
        *holds.entry(node).or_insert_with(|| {
            stacks.addresses(node).any(|address| match frame {
                Frame::Address(a) => a == address && stacks.frames_at(address).is_none(),
                Frame::Function(name) => {
                    (stacks.frames_at(address)).is_some_and(|names| names.contains(&name))
                }
            })
        })
    };
    let samples = chunks.clone().flat_map(|c| c.stacks.iter());
    let samples: Vec<&StackSample> = samples
        .filter(|s| (from..to).contains(&s.time) && holding(s.node))
        .collect();
    if samples.is_empty() {
        return Vec::new();
    }
    // Only the lanes those samples are on: their spans, in order.
    let mut spans: HashMap<u16, Vec<SpanRecord>> =
        samples.iter().map(|s| (s.lane, Vec::new())).collect();
    for span in chunks.flat_map(|c| c.spans.iter()) {
        let (start, end) = stretch(span);
        if end > from && start < to {
            if let Some(lane) = spans.get_mut(&span.lane) {
                lane.push(*span);
            }
        }
    }
    for lane in spans.values_mut() {
        lane.sort_by_key(|s| s.start);
    }
    let mut found: Vec<SpanRecord> = Vec::new();
    for sample in samples {
        let Some(lane) = spans.get(&sample.lane) else {
            continue;
        };
        // Nested spans: the innermost that holds the time began last.
        let before = lane.partition_point(|s| s.start <= sample.time);
        let innermost =
            (lane[..before].iter().rev().take(SCAN_BACK)).find(|s| stretch(s).1 > sample.time);
        if let Some(span) = innermost {
            if !found.contains(span) {
                found.push(*span);
                if found.len() >= limit {
                    break;
                }
            }
        }
    }
    found.sort_by_key(|s| s.start);
    found
}

/// Which samples a selection holds: per lane, the stretches it covers,
/// in order, none overlapping; or every lane's.
struct Within {
    lanes: HashMap<u16, Vec<(u64, u64)>>,
    every_lane: Option<(u64, u64)>,
    bounds: (u64, u64),
}

impl Within {
    fn of<'a>(chunks: impl Iterator<Item = &'a Chunk>, selection: Selection) -> Within {
        let mut lanes: HashMap<u16, Vec<(u64, u64)>> = HashMap::new();
        let mut every_lane = None;
        match selection {
            Selection::Name(name) => {
                let spans = chunks.flat_map(|c| c.spans.iter());
                for span in spans.filter(|s| s.name == name) {
                    lanes.entry(span.lane).or_default().push(stretch(span));
                }
            }
            Selection::Span { lane, start, end }
            | Selection::Lane {
                lane,
                from: start,
                to: end,
            } => {
                lanes.insert(lane, vec![(start, end)]);
            }
            Selection::Range { from, to } => every_lane = Some((from, to)),
        }
        // A name's spans nested in one another (recursion) hold a sample
        // once.
        for stretches in lanes.values_mut() {
            stretches.sort_unstable();
            stretches.dedup_by(|later, earlier| {
                let overlaps = later.0 < earlier.1;
                if overlaps {
                    earlier.1 = earlier.1.max(later.1);
                }
                overlaps
            });
        }
        let ends = lanes.values().flatten().chain(every_lane.iter());
        let bounds = ends.fold((u64::MAX, 0), |(from, to), s| (from.min(s.0), to.max(s.1)));
        Within {
            lanes,
            every_lane,
            bounds,
        }
    }

    fn may_hold(&self, chunk: &Chunk) -> bool {
        !chunk.stacks.is_empty() && chunk.first < self.bounds.1 && chunk.last >= self.bounds.0
    }

    fn holds(&self, sample: &StackSample) -> bool {
        if let Some((from, to)) = self.every_lane {
            return (from..to).contains(&sample.time);
        }
        let Some(stretches) = self.lanes.get(&sample.lane) else {
            return false;
        };
        let at = stretches.partition_point(|s| s.1 <= sample.time);
        stretches.get(at).is_some_and(|s| s.0 <= sample.time)
    }
}

fn stretch(span: &SpanRecord) -> (u64, u64) {
    (span.start, span.start.saturating_add(span.duration))
}

/// Samples folded one by one.
struct Fold<'s> {
    stacks: &'s Stacks,
    /// Each stack node's frames, outermost first, as first read.
    frames: HashMap<NodeId, Vec<Frame>>,
    children: HashMap<(u32, Frame), u32>,
    functions: HashMap<Frame, (u64, u64)>,
    profile: Profile,
}

impl<'s> Fold<'s> {
    fn new(stacks: &'s Stacks) -> Fold<'s> {
        let root = CallNode {
            frame: Frame::Address(0),
            parent: 0,
            depth: 0,
            total: 0,
            own: 0,
            children: Vec::new(),
        };
        Fold {
            stacks,
            frames: HashMap::new(),
            children: HashMap::new(),
            functions: HashMap::new(),
            profile: Profile {
                nodes: vec![root],
                ..Profile::default()
            },
        }
    }

    fn add(&mut self, sample: &StackSample) {
        let stacks = self.stacks;
        let frames = self.frames.entry(sample.node).or_insert_with(|| {
            let frames = stacks.frames(sample.node).map(|f| match f {
                Ok(name) => Frame::Function(name),
                Err(address) => Frame::Address(address),
            });
            // Innermost first as read: the tree goes outermost first.
            let mut frames: Vec<Frame> = frames.collect();
            frames.reverse();
            frames
        });
        let profile = &mut self.profile;
        profile.samples += 1;
        profile.cut += u64::from(sample.cut);
        profile.frame_pointers +=
            u64::from(sample.unwinding == typhon_live_core::Unwinding::FramePointers);
        profile.nodes[0].total += 1;
        let mut at = 0u32;
        for (depth, &frame) in frames.iter().enumerate() {
            at = match self.children.get(&(at, frame)) {
                Some(&child) => child,
                None => {
                    let child = profile.nodes.len() as u32;
                    profile.nodes.push(CallNode {
                        frame,
                        parent: at,
                        depth: (depth + 1).min(usize::from(u16::MAX)) as u16,
                        total: 0,
                        own: 0,
                        children: Vec::new(),
                    });
                    profile.nodes[at as usize].children.push(child);
                    self.children.insert((at, frame), child);
                    child
                }
            };
            profile.nodes[at as usize].total += 1;
        }
        profile.nodes[at as usize].own += 1;
        // Each function once a sample, however often it recursed.
        for (i, frame) in frames.iter().enumerate() {
            if frames[..i].contains(frame) {
                continue;
            }
            self.functions.entry(*frame).or_default().1 += 1;
        }
        if let Some(innermost) = frames.last() {
            self.functions.entry(*innermost).or_default().0 += 1;
        }
    }

    fn finish(mut self) -> Profile {
        let mut profile = self.profile;
        // Children most samples first (then by frame, for a stable order).
        let totals: Vec<(u64, Frame)> = profile.nodes.iter().map(|n| (n.total, n.frame)).collect();
        for node in &mut profile.nodes {
            node.children.sort_by(|&a, &b| {
                let (a, b) = (totals[a as usize], totals[b as usize]);
                b.0.cmp(&a.0).then(a.1.cmp(&b.1))
            });
        }
        profile.functions = (self.functions.drain())
            .map(|(frame, (own, total))| FunctionSamples { frame, own, total })
            .collect();
        profile
            .functions
            .sort_by(|a, b| (b.own, b.total, a.frame).cmp(&(a.own, a.total, b.frame)));
        profile
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::Model;
    use typhon_live_tests::{each_frame, stacks_stream};

    fn model() -> Model {
        let mut model = Model::default();
        each_frame(&stacks_stream(), |frame| {
            model.on_frame(frame, Duration::ZERO).unwrap()
        });
        model
    }

    fn profile(model: &Model, selection: Selection) -> Profile {
        let chunks = model.history().chunks().iter().map(|c| &**c);
        Profile::of(chunks, model.state().stacks(), selection)
    }

    /// The path of frames from the root to node `id`.
    fn path(profile: &Profile, names: &Names, mut id: u32) -> Vec<String> {
        let mut path = Vec::new();
        while id != 0 {
            path.push(profile.nodes[id as usize].frame.text(names));
            id = profile.nodes[id as usize].parent;
        }
        path.reverse();
        path
    }

    #[test]
    fn a_spans_samples_fold_into_its_stacks_outermost_first_inlined_calls_too() {
        let model = model();
        let names = model.names();
        // The span of `run`: the sample at 4 000 µs, not the one after it.
        let run = profile(&model, Selection::Name(3));
        assert_eq!(run.samples, 1);
        let leaf = (run.nodes.iter().position(|n| n.own > 0)).unwrap() as u32;
        assert_eq!(path(&run, names, leaf), ["0x401000", "run", "spin", "hash"]);
        assert_eq!(
            run.hottest().map(|(f, share)| (f.text(names), share)),
            Some(("hash".into(), 1.0))
        );
        assert_eq!(run.folded(names), "0x401000;run;spin;hash 1\n");
        // The same span by its lane and times.
        let span = Selection::Span {
            lane: 0,
            start: 3_500_000,
            end: 4_500_000,
        };
        assert_eq!(profile(&model, span), run);

        // Every lane, both samples: `run` ran in the second, and is on
        // both stacks.
        let all = profile(
            &model,
            Selection::Range {
                from: 0,
                to: 5_000_001,
            },
        );
        assert_eq!((all.samples, all.cut, all.frame_pointers), (2, 1, 1));
        let function = |name: &str| {
            let f = all
                .functions
                .iter()
                .find(|f| f.frame.text(names) == name)
                .unwrap();
            (f.own, f.total)
        };
        assert_eq!(function("run"), (1, 2));
        assert_eq!(function("hash"), (1, 1));
        assert_eq!(function("spin"), (0, 1));
        assert_eq!(all.nodes[0].total, 2);
        // The library's frames are not the program's.
        let frame = |text: &str| {
            let id = (0..64).find(|&id| names.get(id) == Some(text));
            id.map(Frame::Function)
        };
        assert!(!frame("run").is_some_and(|f| is_library(&f, names)));
        let mut with_library = Names::new();
        for (id, text) in [
            "core::hint::black_box",
            "<u64 as core::iter::range::Step>::forward_unchecked",
            "<alloc::vec::Vec<T>>::push",
            "<demo::Route as core::fmt::Debug>::fmt",
            "demo::plan_paths",
            "__rust_try",
        ]
        .iter()
        .enumerate()
        {
            with_library.define(id as u32, text);
        }
        let library: Vec<bool> = (0..6)
            .map(|id| is_library(&Frame::Function(id), &with_library))
            .collect();
        assert_eq!(library, [true, true, true, false, false, true]);
        // The spans whose samples ran `spin`: the one of `run`.
        let chunks = || model.history().chunks().iter().map(|c| &**c);
        let spin = all
            .functions
            .iter()
            .find(|f| f.frame.text(names) == "spin")
            .unwrap();
        let holding = spans_holding(
            chunks(),
            model.state().stacks(),
            spin.frame,
            (0, u64::MAX),
            8,
        );
        assert_eq!(holding.iter().map(|s| s.name).collect::<Vec<_>>(), [3]);
        let unsymbolized = Frame::Address(0x40_1000);
        let holding = spans_holding(
            chunks(),
            model.state().stacks(),
            unsymbolized,
            (0, u64::MAX),
            8,
        );
        assert_eq!(holding.len(), 1, "the second sample lies in no span");
        // Another lane, or a stretch without samples: none.
        assert!(profile(
            &model,
            Selection::Lane {
                lane: 1,
                from: 0,
                to: u64::MAX
            }
        )
        .is_empty());
        assert!(profile(
            &model,
            Selection::Range {
                from: 0,
                to: 3_999_999
            }
        )
        .is_empty());
    }
}
