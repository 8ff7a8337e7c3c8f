//! The relay's own session: every source's lanes and names in one stream,
//! on one clock, for the relay's downstream viewers. Sans-IO: updates in,
//! frames out.
//!
//! - **Lanes**: each source lane is a relay lane named `SOURCE/LANE`, its
//!   kind kept, so a viewer shows them grouped and labelled by source. A
//!   source that restarts keeps its relay lanes (renamed if its lanes
//!   are).
//! - **Names**: interned by text across sources (`Tick` of two sources is
//!   one name; their lanes tell them apart), but for gauges, which are a
//!   process's and not a lane's: `SOURCE/GAUGE`. The merged table holds
//!   at most [`MAX_NAMES`] names and [`MAX_MERGED_NAME_BYTES`] of text, so
//!   that the Init that carries them all fits the frame readers accept.
//!   Each source has an equal share of both, and of the lanes: a source
//!   is charged for the names it adds, so one that floods the table, or
//!   restarts with new names again and again, uses up its own share and
//!   no other's. Past its share, a source's new names show as name 0,
//!   [`OVER_CAP`].
//! - **Clock**: the relay's, in ns since it started (`created_unix_ns`):
//!   each source's events placed on the Unix clock as its
//!   [`Update::Events`] says (see [`typhon_live_reader::owned`] for how).
//! - **Open spans**: each relay lane keeps the spans its source's last
//!   Catch-up listed, less those that ended since. A source's Catch-up is
//!   passed on as a Catch-up of its lanes; a viewer connecting gets one
//!   of every lane after its Init ([`Merger::catch_up`]).
//! - **CPU samples**: a source's counters go on as it stated them, on
//!   its relay lanes at the relay's time, so that a viewer reads each
//!   relay lane's thread as it would the source's.
//! - **One source shown as itself** ([`Merger::single`]: `typhon-live
//!   web`, `demo --web`): its lanes and gauges keep their names, the Init
//!   its process name, and its restart (a new session id) is the
//!   stream's: a new Init to every viewer, whose reader starts over.

use std::collections::HashMap as StdHashMap;
use std::sync::Arc;

use bytes::Bytes;

use typhon_live_core::block::{
    block_scratch_len, max_block_frame_len, packed_block_frame_len, relabel_events,
    relabelled_len_bound, write_block, write_packed_block, Relabel,
};
use typhon_live_core::catchup::write_catchup_of;
use typhon_live_core::decode::DEFAULT_MAX_FRAME;
use typhon_live_core::definitions::{write_definitions, write_stack_definitions, StackRanges};
use typhon_live_core::frame::{frame_around, HEADER_LEN, OVERHEAD, TRAILER_LEN};
use typhon_live_core::init::write_init;
use typhon_live_core::samples::{write_samples, MAX_STACK_FRAMES};
use typhon_live_core::text::write_texts;
use typhon_live_core::{
    BlockBuilder, Event, FieldValue, FrameSymbol, LaneId, LaneInfo, LaneKind, LaneSample, Memory,
    Metadata, NameId, NameSource, NodeId, OpenLane, OpenSpan, SamplesBatch, SiteSample, SiteTotals,
    StackNode, SwitchRecord, TaskId, TextBatch,
};

use typhon_live_reader::owned::{self, PackedEvents, Update};
use typhon_live_reader::{Placement, MAX_LANES, MAX_NAMES};

use crate::ids::Ids;
use crate::stacks::{MergedStacks, SourceStacks};

/// The merger's tables by text: foldhash, far cheaper than SipHash. A peer
/// picks the texts, but each table is capped (at [`MAX_NAMES`] names), so
/// collisions cannot grow past that.
type HashMap<K, V> = StdHashMap<K, V, foldhash::fast::RandomState>;

/// Events a merged Block holds at most.
const BLOCK_RECORDS: usize = 8192;
/// The relay's clock: ns.
const TICKS_PER_SECOND: u64 = 1_000_000_000;
/// Name 0: what names past the caps are shown as.
pub const OVER_CAP: &str = "(name over the relay's cap)";
/// Bytes of name text the merged session holds: with [`MAX_NAMES`] names
/// and [`MAX_LANES`] lanes, the Init that carries them all still fits
/// the 8 MiB frame that readers accept (checked below). A reader accepts
/// 16 MiB of one source's names; the relay passes on less, rather than
/// a start no reader could take.
pub const MAX_MERGED_NAME_BYTES: usize = 7 << 20;

/// The largest Init [`Merger::init`] writes: each name's text and a
/// length of at most 8 bytes, each lane at most 16 bytes, and the
/// metadata within 64.
const MAX_INIT: usize = 64 + MAX_MERGED_NAME_BYTES + 8 * MAX_NAMES + 16 * MAX_LANES + OVERHEAD;
const _: () = assert!(MAX_INIT <= DEFAULT_MAX_FRAME);

/// A frame of the merged stream, to be sealed with each viewer's sequence
/// number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergedFrame {
    /// Kind byte.
    pub kind: u8,
    /// Flags byte (a Block's codec).
    pub flags: u8,
    /// The payload, shared by every viewer's copy of the frame.
    pub payload: Bytes,
}

impl MergedFrame {
    /// The header and trailer that make the payload a frame with sequence
    /// number `seq` (an Init's: the number of the frame after it), so
    /// that a frame shared by many viewers is sent without a copy.
    pub fn seal(&self, seq: u32) -> ([u8; HEADER_LEN], [u8; TRAILER_LEN]) {
        frame_around(self.kind, self.flags, seq, &self.payload)
            .expect("a merged payload is far below 4 GiB")
    }
}

/// What one source may add to the merged session: its share of the
/// names, their text and the lanes, and what it has used.
#[derive(Clone, Copy, Debug, Default)]
struct Quota {
    names: usize,
    bytes: usize,
    lanes: usize,
    max_names: usize,
    max_bytes: usize,
    max_lanes: usize,
}

impl Quota {
    /// An equal share of the merged caps among `sources`.
    fn share_of(sources: usize) -> Self {
        let sources = sources.max(1);
        Quota {
            max_names: MAX_NAMES / sources,
            max_bytes: MAX_MERGED_NAME_BYTES / sources,
            max_lanes: MAX_LANES / sources,
            ..Quota::default()
        }
    }
}

/// The relay's names: dense ids, interned by text, capped.
#[derive(Default)]
struct Names {
    texts: Vec<String>,
    ids: HashMap<String, NameId>,
    bytes: usize,
}

impl Names {
    /// The id of `text`, interned if new and charged to `quota`; name 0
    /// past the caps or the quota.
    fn intern(&mut self, text: &str, quota: &mut Quota) -> NameId {
        if let Some(&id) = self.ids.get(text) {
            return id;
        }
        let over_quota =
            quota.names >= quota.max_names || quota.bytes + text.len() > quota.max_bytes;
        let over_cap =
            self.texts.len() >= MAX_NAMES || self.bytes + text.len() > MAX_MERGED_NAME_BYTES;
        if over_quota || over_cap {
            return 0;
        }
        quota.names += 1;
        quota.bytes += text.len();
        let id = self.texts.len() as NameId;
        self.bytes += text.len();
        self.texts.push(text.to_owned());
        self.ids.insert(text.to_owned(), id);
        id
    }
}

impl NameSource for Names {
    fn count(&self) -> u32 {
        self.texts.len() as u32
    }

    fn get(&self, id: NameId) -> Option<&str> {
        self.texts.get(id as usize).map(String::as_str)
    }
}

/// What the merged stream defines: its names, and its stacks.
struct Defined<'a> {
    names: &'a Names,
    stacks: &'a MergedStacks,
}

impl NameSource for Defined<'_> {
    fn count(&self) -> u32 {
        self.names.count()
    }

    fn get(&self, id: NameId) -> Option<&str> {
        self.names.get(id)
    }

    fn stack_node_count(&self) -> u32 {
        self.stacks.node_count()
    }

    fn stack_node(&self, id: NodeId) -> Option<StackNode> {
        self.stacks.node(id)
    }

    fn frame_symbol_count(&self) -> u32 {
        self.stacks.symbol_count()
    }

    fn frame_symbol(&self, index: u32) -> Option<FrameSymbol<'_>> {
        self.stacks.symbol(index)
    }
}

/// What the merger knows of one source.
struct SourceState {
    /// `LABEL/`, put before its lane and gauge names; empty for a source
    /// shown as itself.
    prefix: String,
    session: Option<u64>,
    /// Source name id → text, for lane names and events.
    texts: HashMap<NameId, String>,
    /// Source name id → relay name id.
    names: Ids<NameId>,
    /// Source gauge name id → relay name id of `SOURCE/GAUGE`: a gauge
    /// is the process's, and two sources' `memory.bytes` are two gauges.
    gauges: Ids<NameId>,
    /// Source lane id → relay lane id.
    lanes: Ids<LaneId>,
    /// Its process's memory, as it last told it: the merged stream's is
    /// the sources' summed.
    memory: Option<Memory>,
    /// Its share of the merged names and lanes. Not reset by a new
    /// session: what it added stays in the merged table.
    quota: Quota,
    /// Its label, as `/metrics` and stderr name it.
    label: String,
    /// Its stack nodes as the merged stream's, and its share of them.
    stacks: SourceStacks,
    /// How much later than its Unix offset places them its times are
    /// placed: what it took, at most, to bring a record that lay wholly
    /// before the relay's clock began onto it. 0 until one did; reset by
    /// a new session or a restart.
    lead: u64,
}

/// A source's times moved later, whole, so that its records reach the
/// viewers with their durations (a record that lay wholly before the
/// relay's clock began: its Catch-ups' clock ran ahead of its Blocks, or
/// its events predate the relay): what the relay's metrics count and its
/// stderr says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moved {
    /// The source's label.
    pub label: String,
    /// Its records placed later than their Unix offset says, in this
    /// update.
    pub events: u64,
    /// By how much, ns.
    pub lead: u64,
    /// The source's times were placed as its clock says before this
    /// update: the first move of its session, to be said.
    pub first: bool,
}

/// A relay lane's open spans: as its source's last Catch-up listed them,
/// less those that ended since; starts in relay ns.
#[derive(Clone, Debug, Default)]
struct Open {
    depth: u32,
    spans: Vec<OpenSpan>,
}

impl Open {
    /// `event` was read: a span or poll that ended is no longer open,
    /// whatever the last Catch-up said.
    fn ended(&mut self, event: &Event) {
        if let Event::Span { id, .. } | Event::Poll { id, .. } = *event {
            if let Some(at) = self.spans.iter().position(|s| s.id == id) {
                self.spans.truncate(at);
                self.depth = at as u32;
            }
        }
    }
}

/// Merges the sources' updates into the relay's stream.
pub struct Merger {
    session_id: u64,
    created_unix_ns: u64,
    names: Names,
    lanes: Vec<LaneInfo>,
    /// The sources' stacks, under ids of the relay's.
    stacks: MergedStacks,
    /// Per relay lane (by id).
    open: Vec<Open>,
    /// The latest relay time seen: a new viewer's Catch-up describes it.
    latest: u64,
    /// Names already sent in an Init or Definitions (viewers that
    /// connect later get them all in their Init).
    names_sent: u32,
    /// The Init of the names and lanes as they are, shared by every
    /// viewer that connects before they change.
    init: Option<Arc<MergedFrame>>,
    sources: Vec<SourceState>,
    scratch: Vec<u8>,
    out: Vec<u8>,
    /// A forwarded Block's events, relabelled, and its names meanwhile.
    relabelled: Vec<u8>,
    names_scratch: Vec<u64>,
    /// Events refused: of lanes past the cap.
    pub refused_events: u64,
    /// Sources' records moved later since the last [`Merger::take_moved`].
    moved: Vec<Moved>,
    /// Source Blocks passed on relabelled rather than encoded again.
    pub forwarded_blocks: u64,
    /// The process name its Init gives: the relay's, or the one source's
    /// when it is shown as itself.
    process_name: String,
    shown_as_source: bool,
}

impl Merger {
    /// A merger for sources labelled `labels` (their indexes are the
    /// `source` of [`Merger::update`]).
    pub fn new(labels: &[String], session_id: u64, created_unix_ns: u64) -> Self {
        let mut names = Names::default();
        names.intern(OVER_CAP, &mut Quota::share_of(1));
        let quota = Quota::share_of(labels.len());
        let scratch = vec![0u8; block_scratch_len(BLOCK_RECORDS)];
        Merger {
            session_id,
            created_unix_ns,
            names,
            lanes: Vec::new(),
            stacks: MergedStacks::default(),
            open: Vec::new(),
            latest: 0,
            names_sent: 0,
            init: None,
            sources: labels
                .iter()
                .map(|label| SourceState {
                    prefix: format!("{label}/"),
                    session: None,
                    texts: HashMap::default(),
                    names: Ids::default(),
                    gauges: Ids::default(),
                    lanes: Ids::default(),
                    memory: None,
                    quota,
                    label: label.clone(),
                    lead: 0,
                    stacks: SourceStacks::share_of(labels.len()),
                })
                .collect(),
            out: vec![0u8; max_block_frame_len(scratch.len(), MAX_LANES)],
            scratch,
            relabelled: Vec::new(),
            names_scratch: Vec::new(),
            refused_events: 0,
            moved: Vec::new(),
            forwarded_blocks: 0,
            process_name: "typhon-live relay".into(),
            shown_as_source: false,
        }
    }

    /// A merger of one source, shown as itself: its lanes and gauges keep
    /// their names, unprefixed, and the Init its process name.
    /// `label` names it in the relay's metrics and on stderr.
    pub fn single(label: &str, session_id: u64, created_unix_ns: u64) -> Self {
        let mut merger = Merger::new(&[label.to_owned()], session_id, created_unix_ns);
        merger.shown_as_source = true;
        for source in &mut merger.sources {
            source.prefix.clear();
        }
        merger
    }

    /// How `unix_offset` (an [`Update`]'s) places source `source`'s
    /// times on the relay's clock, with the lead it took (see [`Moved`]).
    fn shift(&self, source: usize, unix_offset: i128) -> Placement {
        let lead = self.sources[source].lead;
        Placement::unix(unix_offset)
            .since(self.created_unix_ns)
            .later(lead)
    }

    /// [`Merger::shift`] for `events` of source `source`: its lead grown
    /// first if one of them lies wholly before the relay's clock began,
    /// so that it is placed whole at the clock's start or later, its
    /// duration kept, and the source's later records keep their order
    /// with it. A span that ends after the clock began (open across the
    /// relay's start) moves nothing: its start is held to the clock.
    fn placed(
        &mut self,
        source: usize,
        events: &[(LaneId, Event)],
        packed: Option<&PackedEvents>,
        unix_offset: i128,
    ) -> Placement {
        let shift = self.shift(source, unix_offset);
        // The most an event that ends before 0 starts before it; none when
        // the Block's earliest time is on the clock (the usual case, told
        // without reading every event).
        let on_clock = packed.is_some_and(|p| shift.before_start(p.first_time) == 0);
        let behind = (!on_clock)
            .then(|| {
                (events.iter())
                    .filter(|(_, e)| shift.before_start(e.end_time()) > 0)
                    .map(|(_, e)| shift.before_start(earliest(e)))
                    .max()
            })
            .flatten();
        let state = &mut self.sources[source];
        let first = state.lead == 0;
        if let Some(behind) = behind.filter(|&behind| behind > 0) {
            state.lead = state.lead.saturating_add(behind);
        }
        if state.lead > 0 && !events.is_empty() {
            self.moved.push(Moved {
                label: state.label.clone(),
                events: events.len() as u64,
                lead: state.lead,
                first,
            });
        }
        self.shift(source, unix_offset)
    }

    /// What was moved since the last call: for the relay's metrics and
    /// its one line on stderr.
    pub fn take_moved(&mut self) -> Vec<Moved> {
        std::mem::take(&mut self.moved)
    }

    /// The Init a viewer connecting now gets: every name and lane so far.
    /// Built once, and shared until a name or lane is added or changed.
    /// Its sequence number, sealed per viewer, is that of the frame after
    /// it.
    pub fn init(&mut self) -> Arc<MergedFrame> {
        if let Some(init) = &self.init {
            return Arc::clone(init);
        }
        let meta = Metadata {
            ticks_per_second: TICKS_PER_SECOND,
            session_id: self.session_id,
            process_id: std::process::id(),
            created_unix_ns: self.created_unix_ns,
            process_name: &self.process_name,
            ..Metadata::default()
        };
        self.stacks.nodes_sent = 0;
        self.stacks.symbols_sent = 0;
        let needed = 64
            + self.names.bytes
            + 8 * self.names.texts.len()
            + 16 * self.lanes.len()
            + self.stacks.unsent_bytes();
        if self.out.len() < needed {
            self.out.resize(needed, 0);
        }
        let defined = Defined {
            names: &self.names,
            stacks: &self.stacks,
        };
        let n = write_init(
            &mut self.out,
            0,
            &meta,
            &defined,
            self.lanes.iter().copied(),
        )
        .expect("the buffer is sized for every name, lane and stack node");
        self.names_sent = self.names.count();
        // All of them: the relay defines one frame's worth at most.
        self.stacks.nodes_sent = self.stacks.node_count();
        self.stacks.symbols_sent = self.stacks.symbol_count();
        let init = Arc::new(self.frame(n));
        self.init = Some(Arc::clone(&init));
        init
    }

    /// Takes in an update of source `source`; the merged frames it makes
    /// go to `emit`.
    pub fn update(&mut self, source: usize, update: &Update, mut emit: impl FnMut(MergedFrame)) {
        match update {
            Update::Session {
                id,
                process,
                names,
                lanes,
            } => {
                let restarted = self.sources[source].session.is_some_and(|s| s != *id);
                if self.shown_as_source && restarted {
                    return self.start_over(*id, process, names, lanes, &mut emit);
                }
                if self.shown_as_source && self.process_name != *process {
                    self.process_name.clone_from(process);
                    self.init = None;
                }
                let state = &mut self.sources[source];
                if state.session != Some(*id) {
                    // Its ids mean other things now.
                    state.session = Some(*id);
                    state.texts.clear();
                    state.names.clear();
                    state.gauges.clear();
                    // Another process: its memory is told afresh, its clock
                    // placed afresh.
                    state.memory = None;
                    state.lead = 0;
                    state.stacks.new_session();
                    self.close_spans_of(source);
                }
                self.define(source, names, lanes, &mut emit);
            }
            Update::Definitions { names, lanes } => self.define(source, names, lanes, &mut emit),
            Update::Stacks { nodes, symbols } => {
                self.define_stacks(source, nodes, symbols, &mut emit)
            }
            Update::CatchUp {
                time,
                lanes,
                unix_offset,
            } => self.catch_up_of(source, *time, lanes, *unix_offset, &mut emit),
            Update::Events {
                events,
                drops,
                unix_offset,
                packed,
                ..
            } => self.events(
                source,
                events,
                drops,
                *unix_offset,
                packed.as_ref(),
                &mut emit,
            ),
            Update::Texts {
                texts,
                lost,
                unix_offset,
            } => self.texts(source, texts, *lost, *unix_offset, &mut emit),
            Update::Samples(samples) => self.samples(source, samples, &mut emit),
            // A restarted process has nothing open from before, and its
            // clock is placed afresh.
            Update::Restarted => {
                self.sources[source].lead = 0;
                self.close_spans_of(source);
            }
            Update::Gap { .. } | Update::Ticks(_) => {}
        }
    }

    /// Whether `update` changes what the merger writes: a source's
    /// thread need not hand it the others. A gap upstream is counted in
    /// the metrics and has no events to say; ticks go on as the events
    /// that told them, each viewer's reader pairing them again.
    pub fn takes(update: &Update) -> bool {
        !matches!(update, Update::Gap { .. } | Update::Ticks(_))
    }

    /// The one source shown as itself restarted (a new session id): so
    /// does the stream. Everything merged so far is forgotten, and the new
    /// session's Init goes to every viewer, whose reader takes it as a
    /// new session (a restart on the page).
    fn start_over(
        &mut self,
        session: u64,
        process: &str,
        names: &[(NameId, String)],
        lanes: &[LaneInfo],
        emit: &mut impl FnMut(MergedFrame),
    ) {
        let label = std::mem::take(&mut self.sources[0].label);
        *self = Merger::single(&label, session, self.created_unix_ns);
        self.process_name = process.to_owned();
        self.sources[0].session = Some(session);
        // Defined in the Init itself: no Definitions before it.
        self.define(0, names, lanes, &mut |_| {});
        self.names_sent = self.names.count();
        emit(MergedFrame::clone(&self.init()));
    }

    fn define(
        &mut self,
        source: usize,
        names: &[(NameId, String)],
        lanes: &[LaneInfo],
        emit: &mut impl FnMut(MergedFrame),
    ) {
        let state = &mut self.sources[source];
        for (id, text) in names {
            // A peer's ids are kept as far as the relay's own names go.
            if state.texts.len() >= MAX_NAMES && !state.texts.contains_key(id) {
                continue;
            }
            state.texts.insert(*id, text.clone());
            state
                .names
                .insert(*id, self.names.intern(text, &mut state.quota));
        }
        let mut lanes_changed = false;
        for lane in lanes {
            let text = state
                .texts
                .get(&lane.name)
                .map_or_else(|| format!("lane {}", lane.id), Clone::clone);
            let name = self
                .names
                .intern(&format!("{}{text}", state.prefix), &mut state.quota);
            let Some(relay) = relay_lane(&mut self.lanes, state, lane.id, lane.kind) else {
                continue;
            };
            let entry = &mut self.lanes[usize::from(relay)];
            if entry.name != name || entry.kind != lane.kind {
                entry.name = name;
                entry.kind = lane.kind;
                lanes_changed = true;
            }
        }
        if lanes_changed || self.names.count() > self.names_sent {
            self.definitions(emit);
        }
    }

    /// Source `source`'s stack nodes and frame symbols, under the relay's
    /// ids, their frames' names the relay's; told to the viewers at once.
    fn define_stacks(
        &mut self,
        source: usize,
        nodes: &[(NodeId, StackNode)],
        symbols: &[(u64, Vec<NameId>)],
        emit: &mut impl FnMut(MergedFrame),
    ) {
        let state = &mut self.sources[source];
        for &frame in symbols.iter().flat_map(|(_, frames)| frames) {
            use_name(&mut self.names, state, frame);
        }
        let SourceState { names, stacks, .. } = state;
        let name = |frame: NameId| names.get(frame).unwrap_or(0);
        self.stacks.define(source, stacks, nodes, symbols, name);
        if self.names.count() > self.names_sent {
            self.definitions(emit);
        }
        self.stack_definitions(emit);
    }

    fn definitions(&mut self, emit: &mut impl FnMut(MergedFrame)) {
        let first = self.names_sent;
        let unsent: usize = (first..self.names.count())
            .filter_map(|id| self.names.get(id))
            .map(|t| t.len() + 8)
            .sum();
        let needed = 64 + unsent + 16 * self.lanes.len();
        if self.out.len() < needed {
            self.out.resize(needed, 0);
        }
        let n = write_definitions(
            &mut self.out,
            0,
            &self.names,
            first,
            self.lanes.iter().copied(),
        )
        .expect("the buffer is sized for the new names and every lane");
        self.names_sent = self.names.count();
        self.init = None;
        emit(self.frame(n));
    }

    /// The stack nodes and frame symbols not yet told, in a Definitions
    /// frame of their own, after the names their symbols use.
    fn stack_definitions(&mut self, emit: &mut impl FnMut(MergedFrame)) {
        if self.stacks.unsent() {
            let needed = 64 + self.stacks.unsent_bytes();
            if self.out.len() < needed {
                self.out.resize(needed, 0);
            }
            let defined = Defined {
                names: &self.names,
                stacks: &self.stacks,
            };
            let ranges = StackRanges {
                nodes: self.stacks.nodes_sent..self.stacks.node_count(),
                symbols: self.stacks.symbols_sent..self.stacks.symbol_count(),
                // Sources' module maps are not passed on (FORMAT.md, "Stacks").
                modules: 0..0,
            };
            let n = write_stack_definitions(&mut self.out, 0, &defined, ranges)
                .expect("the buffer is sized for the new stack nodes and symbols");
            self.stacks.nodes_sent = self.stacks.node_count();
            self.stacks.symbols_sent = self.stacks.symbol_count();
            self.init = None;
            emit(self.frame(n));
        }
    }

    /// Source `source`'s process started over: nothing it had open is.
    fn close_spans_of(&mut self, source: usize) {
        for relay in self.sources[source].lanes.values() {
            if let Some(open) = self.open.get_mut(usize::from(relay)) {
                *open = Open::default();
            }
        }
    }

    /// The Catch-up a viewer connecting now gets after its Init: every
    /// lane with the spans open on it as far as the relay knows, at the
    /// latest time seen.
    pub fn catch_up(&mut self) -> MergedFrame {
        let relay_lanes: Vec<LaneId> = (0..self.lanes.len() as LaneId).collect();
        let n = self.write_catch_up(self.latest, &relay_lanes);
        self.frame(n)
    }

    /// A source's Catch-up: its lanes' open spans kept, and sent on in a
    /// Catch-up of those lanes.
    fn catch_up_of(
        &mut self,
        source: usize,
        time: u64,
        lanes: &[owned::OpenLane],
        unix_offset: i128,
        emit: &mut impl FnMut(MergedFrame),
    ) {
        let names: Vec<(NameId, String)> = lanes
            .iter()
            .map(|lane| (lane.info.name, lane.name.clone()))
            .collect();
        let infos: Vec<LaneInfo> = lanes.iter().map(|lane| lane.info).collect();
        self.define(source, &names, &infos, emit);
        let state = &mut self.sources[source];
        // Span names the source has not defined to us show as `#id`.
        for span in lanes.iter().flat_map(|lane| &lane.open) {
            let (names, quota) = (&mut self.names, &mut state.quota);
            if state.names.len() + state.gauges.len() < MAX_NAMES {
                state.names.get_or_insert_with(span.name, || {
                    names.intern(&format!("#{}", span.name), quota)
                });
            }
        }
        if self.names.count() > self.names_sent {
            self.definitions(emit);
        }
        let state = &self.sources[source];
        let shift = self.shift(source, unix_offset);
        let at = |t: u64| shift.place(t);
        let mut listed = Vec::with_capacity(lanes.len());
        for lane in lanes {
            let Some(relay) = state.lanes.get(lane.info.id) else {
                continue;
            };
            let spans = lane
                .open
                .iter()
                .map(|span| OpenSpan {
                    start: at(span.start),
                    name: state.names.get(span.name).unwrap_or(0),
                    ..*span
                })
                .collect();
            let index = usize::from(relay);
            if self.open.len() <= index {
                self.open.resize(index + 1, Open::default());
            }
            self.open[index] = Open {
                depth: lane.open_depth,
                spans,
            };
            listed.push(relay);
        }
        let time = at(time);
        self.latest = self.latest.max(time);
        let n = self.write_catch_up(time, &listed);
        emit(self.frame(n));
    }

    /// Writes a Catch-up of `relay_lanes` at relay time `time` into `out`.
    fn write_catch_up(&mut self, time: u64, relay_lanes: &[LaneId]) -> usize {
        let lanes: Vec<OpenLane<'_>> = relay_lanes
            .iter()
            .filter_map(|&id| {
                let info = *self.lanes.get(usize::from(id))?;
                let open = self.open.get(usize::from(id));
                Some(OpenLane {
                    info,
                    name: self.names.get(info.name).unwrap_or(""),
                    open_depth: open.map_or(0, |o| o.depth),
                    open: open.map_or(&[][..], |o| &o.spans),
                })
            })
            .collect();
        let needed = 64
            + lanes
                .iter()
                .map(|l| 32 + l.name.len() + 24 * l.open.len())
                .sum::<usize>();
        let mut out = std::mem::take(&mut self.out);
        if out.len() < needed {
            out.resize(needed, 0);
        }
        let n = write_catchup_of(&mut out, 0, time, lanes.into_iter())
            .expect("the buffer is sized for every lane and open span");
        self.out = out;
        n
    }

    fn events(
        &mut self,
        source: usize,
        events: &[(LaneId, Event)],
        drops: &[(LaneId, u32)],
        unix_offset: i128,
        packed: Option<&PackedEvents>,
        emit: &mut impl FnMut(MergedFrame),
    ) {
        // First every lane and name the events use, so that new ones reach
        // the viewers (in Definitions) before the Block that uses them.
        let state = &mut self.sources[source];
        let mut lanes_changed = false;
        for (lane, event) in events {
            if !state.lanes.contains(*lane) {
                // A lane the source has not defined to us (damage, or a
                // stream joined without its Init): named by its id.
                if let Some(relay) = relay_lane(&mut self.lanes, state, *lane, LaneKind::Other) {
                    let name = self
                        .names
                        .intern(&format!("{}lane {lane}", state.prefix), &mut state.quota);
                    self.lanes[usize::from(relay)].name = name;
                    lanes_changed = true;
                }
            }
            let mut name_used = |name: NameId| use_name(&mut self.names, state, name);
            match *event {
                Event::Span { name, .. }
                | Event::Instant { name, .. }
                | Event::Poll { name, .. }
                | Event::TaskBegin { name, .. }
                | Event::TaskEnd { name, .. } => name_used(name),
                Event::Field { key, value, .. } => {
                    name_used(key);
                    if let FieldValue::Str(value) = value {
                        name_used(value);
                    }
                }
                Event::Mark { label, span, .. } => {
                    name_used(label);
                    if let Some((name, _)) = span {
                        name_used(name);
                    }
                }
                Event::Gauge { gauge, .. } if has_room(state) && !state.gauges.contains(gauge) => {
                    let text = state
                        .texts
                        .get(&gauge)
                        .map_or_else(|| format!("#{gauge}"), Clone::clone);
                    let text = format!("{}{text}", state.prefix);
                    let relay = self.names.intern(&text, &mut state.quota);
                    state.gauges.insert(gauge, relay);
                }
                Event::Gauge { .. }
                | Event::TickStart { .. }
                | Event::TickEnd { .. }
                | Event::Allocated { .. }
                | Event::Unknown { .. } => {}
            }
        }
        if lanes_changed || self.names.count() > self.names_sent {
            self.definitions(emit);
        }

        let shift = self.placed(source, events, packed, unix_offset);
        let state = &self.sources[source];
        let mut drops: Vec<(LaneId, u32)> = drops
            .iter()
            .filter_map(|&(lane, n)| state.lanes.get(lane).map(|relay| (relay, n)))
            .collect();
        if let Some(packed) = packed {
            if self.forward(source, events, &drops, packed, shift, emit) {
                return;
            }
        }
        let state = &self.sources[source];
        let at = |t: u64| shift.place(t);
        let name_of = |id: NameId| state.names.get(id).unwrap_or(0);
        let task_of = |task: TaskId| relay_task(source, task);
        let out = &mut self.out;
        let mut builder = BlockBuilder::new(&mut self.scratch);
        let mut flush = |builder: &BlockBuilder<'_>, drops: &mut Vec<(LaneId, u32)>| {
            let n =
                write_block(out, 0, builder, drops).expect("the buffer holds the largest Block");
            drops.clear();
            emit(frame_of(&out[..n]));
        };
        for &(lane, event) in events {
            let Some(relay) = state.lanes.get(lane) else {
                self.refused_events += 1;
                continue;
            };
            let gauge_of = |id: NameId| state.gauges.get(id).unwrap_or(0);
            let moved = event
                .map_times(at, |length| length)
                .map_ids(name_of, gauge_of, task_of);
            if let Some(open) = self.open.get_mut(usize::from(relay)) {
                open.ended(&moved);
            }
            self.latest = self.latest.max(moved.end_time());
            if !builder.has_room(relay) {
                flush(&builder, &mut drops);
                builder.clear();
            }
            builder.push(relay, &moved);
        }
        if !builder.is_empty() || !drops.is_empty() {
            flush(&builder, &mut drops);
        }
    }

    /// Passes a source's Block on as it packed its events, each group's
    /// lane and each record's name made the merged stream's (core's
    /// `relabel_events`) and its times moved by `shift` (its header's
    /// alone: its events count from its first timestamp): no decoding and
    /// encoding again. `false`, and nothing emitted, when the merged
    /// Block would not read as the one encoded from `events` would: an
    /// event time moved off the clock, a lane past the cap, or a kind
    /// whose ids lie outside the name column (tasks, string fields).
    fn forward(
        &mut self,
        source: usize,
        events: &[(LaneId, Event)],
        drops: &[(LaneId, u32)],
        packed: &PackedEvents,
        shift: Placement,
        emit: &mut impl FnMut(MergedFrame),
    ) -> bool {
        // Moved as one, every event's start and end stays where encoding
        // clamps none: between the earliest start and the latest end, and
        // no end past u64 (an end that saturated).
        let (earliest, latest) = events.iter().fold((u64::MAX, 0), |(lo, hi), (_, e)| {
            (lo.min(e.time()), hi.max(e.end_time()))
        });
        let on_clock = |t: u64| t < u64::MAX && shift.exactly(t).is_some();
        let (Some(first), Some(last)) = (
            shift.exactly(packed.first_time),
            shift.exactly(packed.last_time),
        ) else {
            return false;
        };
        if events.len() != packed.records as usize || !on_clock(earliest) || !on_clock(latest) {
            return false;
        }
        let state = &self.sources[source];
        let records = packed.records;
        let bound = relabelled_len_bound(packed.bytes.len(), records);
        if self.relabelled.len() < bound {
            self.relabelled.resize(bound, 0);
        }
        if self.names_scratch.len() < records as usize {
            self.names_scratch.resize(records as usize, 0);
        }
        let map = SourceIds(state);
        let Ok(n) = relabel_events(
            &packed.bytes,
            records,
            &map,
            &mut self.names_scratch,
            &mut self.relabelled,
        ) else {
            return false;
        };
        let needed = packed_block_frame_len(drops.len(), n);
        if needed > DEFAULT_MAX_FRAME {
            return false;
        }
        if self.out.len() < needed {
            self.out.resize(needed, 0);
        }
        let Ok(len) = write_packed_block(
            &mut self.out,
            0,
            records,
            (first, last),
            drops,
            &self.relabelled[..n],
        ) else {
            return false;
        };
        // Spans are open only as far as a Catch-up listed them: most
        // Blocks arrive with none.
        if self.open.iter().any(|open| !open.spans.is_empty()) {
            for (lane, event) in events {
                let open = state
                    .lanes
                    .get(*lane)
                    .and_then(|relay| self.open.get_mut(usize::from(relay)));
                if let Some(open) = open {
                    open.ended(event);
                }
            }
        }
        self.latest = self.latest.max(shift.place(latest));
        self.forwarded_blocks += 1;
        emit(frame_of(&self.out[..len]));
        true
    }

    /// `source`'s log texts as the merged stream's: on its relay lanes,
    /// their sites merged names, their times the relay's. The losses its
    /// source told ride on the first frame.
    fn texts(
        &mut self,
        source: usize,
        texts: &[owned::Text],
        mut lost: u32,
        unix_offset: i128,
        emit: &mut impl FnMut(MergedFrame),
    ) {
        let state = &mut self.sources[source];
        for text in texts {
            use_name(&mut self.names, state, text.site);
        }
        if self.names.count() > self.names_sent {
            self.definitions(emit);
        }
        let state = &self.sources[source];
        let shift = self.shift(source, unix_offset);
        let mut batch = TextBatch::new(&mut self.scratch);
        let out = &mut self.out;
        let mut flush = |batch: &TextBatch<'_>, lost: &mut u32| {
            if out.len() < batch.frame_len() {
                out.resize(batch.frame_len(), 0);
            }
            let n = write_texts(out, 0, std::mem::take(lost), batch)
                .expect("the buffer holds the batch's frame");
            emit(frame_of(&out[..n]));
        };
        for text in texts {
            let moved = typhon_live_core::Text {
                time: shift.place(text.time),
                lane: text.lane.and_then(|lane| state.lanes.get(lane)),
                site: state.names.get(text.site).unwrap_or(0),
                ..text.as_core()
            };
            if !batch.push(&moved) {
                flush(&batch, &mut lost);
                batch.clear();
                batch.push(&moved);
            }
        }
        if !batch.is_empty() || lost > 0 {
            flush(&batch, &mut lost);
        }
    }

    /// `source`'s CPU samples as the merged stream's: its counters as it
    /// stated them, on its relay lanes, at the relay's time. A viewer's
    /// reader reads them per relay lane as it would the source's own.
    /// Lanes the relay has no lane for (past the caps) are left out.
    ///
    /// Its memory is summed with the other sources' last (the merged
    /// stream is one process to a viewer), and its allocation sites go on
    /// under ids of the relay's, their frames' names remapped, each stack
    /// ending in a frame that names the source.
    fn samples(
        &mut self,
        source: usize,
        samples: &owned::Samples,
        emit: &mut impl FnMut(MergedFrame),
    ) {
        let memory = samples.memory.map(|memory| {
            self.sources[source].memory = Some(memory);
            self.summed_memory()
        });
        let sites = self.relay_sites(source, &samples.sites);
        if self.names.count() > self.names_sent {
            self.definitions(emit);
        }
        let state = &self.sources[source];
        let shift = self.shift(source, samples.unix_offset);
        let time = shift.place(samples.time);
        let lanes: Vec<LaneSample> = (samples.lanes.iter())
            .filter_map(|sample| {
                let lane = state.lanes.get(sample.lane)?;
                Some(LaneSample { lane, ..*sample })
            })
            .collect();
        let switches: Vec<SwitchRecord> = (samples.switches.iter())
            .filter_map(|&(lane, at, what)| {
                let lane = state.lanes.get(lane)?;
                let time = shift.place(at).min(time);
                Some(SwitchRecord { lane, time, what })
            })
            .collect();
        let sites: Vec<SiteSample<'_>> = (sites.iter())
            .map(|(site, frames, totals)| SiteSample {
                site: *site,
                frames,
                totals: *totals,
            })
            .collect();
        let stacks = self
            .stacks
            .samples(&state.stacks, &samples.stacks, |sample| {
                let lane = state.lanes.get(sample.lane)?;
                Some((lane, shift.place(sample.time).min(time)))
            });
        let batch = SamplesBatch {
            time,
            lanes: &lanes,
            switches: &switches,
            memory,
            sites: &sites,
            stacks: &stacks,
        };
        if batch.is_empty() {
            return;
        }
        let len = batch.max_frame_len();
        if self.out.len() < len {
            self.out.resize(len, 0);
        }
        // At most the source's own counts, which its reader bounded.
        if let Ok(n) = write_samples(&mut self.out, 0, &batch) {
            emit(self.frame(n));
        }
    }

    /// Every source's last memory, summed; the sampling interval the
    /// coarsest of theirs.
    fn summed_memory(&self) -> Memory {
        let mut sum = Memory::default();
        for memory in self.sources.iter().filter_map(|s| s.memory) {
            sum.allocated = sum.allocated.saturating_add(memory.allocated);
            sum.freed = sum.freed.saturating_add(memory.freed);
            sum.sampled = sum.sampled.saturating_add(memory.sampled);
            sum.missed = sum.missed.saturating_add(memory.missed);
            sum.sampling_mean = sum.sampling_mean.max(memory.sampling_mean);
        }
        sum
    }

    /// `source`'s sites as the merged stream's: the relay's site id, the
    /// frames' names remapped (past the caps, name 0's), and a last frame
    /// naming the source where the stream merges several.
    fn relay_sites(
        &mut self,
        source: usize,
        sites: &[owned::Site],
    ) -> Vec<(u32, Vec<NameId>, SiteTotals)> {
        let state = &mut self.sources[source];
        let label = state.prefix.trim_end_matches('/');
        let source_frame = (!label.is_empty() && !sites.is_empty())
            .then(|| format!("(source {label})"))
            .map(|text| self.names.intern(&text, &mut state.quota));
        sites
            .iter()
            .map(|site| {
                let mut frames: Vec<NameId> = (site.frames.iter())
                    .map(|&frame| {
                        use_name(&mut self.names, state, frame);
                        state.names.get(frame).unwrap_or(0)
                    })
                    .collect();
                if let Some(frame) = source_frame {
                    frames.truncate(MAX_STACK_FRAMES - 1);
                    frames.push(frame);
                }
                (relay_site(source, site.site), frames, site.totals)
            })
            .collect()
    }

    /// The frame just written into `out[..n]`, unsealed.
    fn frame(&self, n: usize) -> MergedFrame {
        frame_of(&self.out[..n])
    }
}

/// A source's ids as the merged stream's, as [`Merger::events`] maps
/// them: for relabelling its Blocks.
struct SourceIds<'s>(&'s SourceState);

impl Relabel for SourceIds<'_> {
    fn lane(&self, lane: LaneId) -> Option<LaneId> {
        self.0.lanes.get(lane)
    }

    fn name(&self, name: NameId) -> NameId {
        self.0.names.get(name).unwrap_or(0)
    }

    fn gauge(&self, gauge: NameId) -> NameId {
        self.0.gauges.get(gauge).unwrap_or(0)
    }
}

/// Whether `source` may map more of its ids to merged names.
/// The earliest moment `event` covers: a span's start, a task's
/// creation, a point's time.
fn earliest(event: &Event) -> u64 {
    match *event {
        Event::TaskEnd { time, wall, .. } => time.saturating_sub(wall),
        _ => event.time(),
    }
}

fn has_room(source: &SourceState) -> bool {
    source.names.len() + source.gauges.len() < MAX_NAMES
}

/// Maps `source`'s name `name` to a merged one if it is not yet: `#id`
/// for one its source never defined. Past the cap, ids not mapped show as
/// name 0 (the cap's).
fn use_name(names: &mut Names, source: &mut SourceState, name: NameId) {
    if has_room(source) || source.names.contains(name) {
        let quota = &mut source.quota;
        source
            .names
            .get_or_insert_with(name, || names.intern(&format!("#{name}"), quota));
    }
}

/// `id` of source `source` as the merged stream's: its low `kept` bits,
/// and the source's number (from 1) above them, so that two sources'
/// ids never meet.
fn with_source(source: usize, id: u64, kept: u32) -> u64 {
    (id & ((1 << kept) - 1)) | ((source as u64 + 1) << kept)
}

/// Bits of a source's task id the merged stream keeps (a process would
/// need 2^56 tasks to wrap).
const TASK_BITS: u32 = 56;

/// The merged stream's id of `source`'s task `task` (0 stays "none").
fn relay_task(source: usize, task: TaskId) -> TaskId {
    if task == 0 {
        return 0;
    }
    with_source(source, task, TASK_BITS)
}

/// Bits of a source's site id the merged stream keeps (a writer numbers
/// its sites from 0, and typhon-live's keep at most 1024).
const SITE_BITS: u32 = 24;

/// The merged stream's id of `source`'s allocation site `site`.
fn relay_site(source: usize, site: u32) -> u32 {
    // 8 bits of source above 24 of site: a u32 for up to 255 sources.
    with_source(source, u64::from(site), SITE_BITS) as u32
}

/// The relay lane of `source`'s `lane`, a new one if need be (none past
/// the cap or the source's quota).
fn relay_lane(
    lanes: &mut Vec<LaneInfo>,
    source: &mut SourceState,
    lane: LaneId,
    kind: LaneKind,
) -> Option<LaneId> {
    if let Some(relay) = source.lanes.get(lane) {
        return Some(relay);
    }
    if lanes.len() >= MAX_LANES || source.quota.lanes >= source.quota.max_lanes {
        return None;
    }
    source.quota.lanes += 1;
    let relay = lanes.len() as LaneId;
    lanes.push(LaneInfo {
        id: relay,
        name: 0,
        kind,
    });
    source.lanes.insert(lane, relay);
    Some(relay)
}

/// A whole frame as kind, flags and payload (FORMAT.md: the kind is the
/// header's byte 2, the flags its byte 3).
fn frame_of(frame: &[u8]) -> MergedFrame {
    MergedFrame {
        kind: frame[2],
        flags: frame[3],
        payload: Bytes::copy_from_slice(&frame[HEADER_LEN..frame.len() - TRAILER_LEN]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;
    use typhon_live_model::Model;
    use typhon_live_reader::owned::Reader;
    use typhon_live_tests::{each_frame, nested_stream};

    /// `frame` sealed with `seq`, whole.
    fn whole(frame: &MergedFrame, seq: u32) -> Vec<u8> {
        let (header, trailer) = frame.seal(seq);
        [&header[..], &frame.payload, &trailer].concat()
    }

    /// A session of `names` (ids from 1) on one lane named by id 1.
    fn session(id: u64, names: impl IntoIterator<Item = String>) -> Update {
        Update::Session {
            process: String::new(),
            id,
            names: (1..).zip(names).collect(),
            lanes: vec![LaneInfo {
                id: 0,
                name: 1,
                kind: LaneKind::Main,
            }],
        }
    }

    /// Source `source`'s names as the merged session holds them: each
    /// of its ids' merged text.
    fn merged_names(merger: &Merger, source: usize) -> Vec<(NameId, String)> {
        let mut names: Vec<(NameId, String)> = merger.sources[source]
            .names
            .iter()
            .map(|(id, merged)| (id, merger.names.get(merged).unwrap_or("").to_owned()))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_source_flooding_the_names_uses_up_its_own_share_and_no_other() {
        let mut merger = Merger::new(&["bad".into(), "good".into()], 7, 0);
        let ignore = |_| {};
        // Far past its share of the count (half of 65 536), in one session
        // and then in new sessions with new names, as a restarting peer.
        for restart in 0..4u64 {
            let flood = (0..40_000).map(move |i| format!("flood {restart} {i}"));
            merger.update(0, &session(restart, flood), ignore);
        }
        // And past its share of the text, in names of 1 MiB.
        let long = (0..8).map(|i| format!("{i}{}", "x".repeat(1 << 20)));
        merger.update(0, &session(9, long), ignore);
        let bad = merger.sources[0].quota;
        assert_eq!(bad.names, MAX_NAMES / 2, "its share of the count, no more");
        assert!(bad.bytes <= MAX_MERGED_NAME_BYTES / 2);
        let over = merged_names(&merger, 0)
            .iter()
            .filter(|(_, t)| t == OVER_CAP)
            .count();
        assert!(over > 0, "what is past its share shows as the cap's name");

        let good: Vec<String> = (0..1000).map(|i| format!("good {i}")).collect();
        merger.update(1, &session(1, good.clone()), ignore);
        let want: Vec<(NameId, String)> = (1..).zip(good).collect();
        assert_eq!(merged_names(&merger, 1), want, "every good name intact");
        let good_lane = merger.sources[1].lanes.get(0u16).unwrap();
        let name = merger.lanes[usize::from(good_lane)].name;
        assert_eq!(
            merger.names.get(name),
            Some("good/good 0"),
            "its lane named"
        );

        // All of it fits one Init that readers accept.
        let init = merger.init();
        assert!(init.payload.len() + OVERHEAD <= DEFAULT_MAX_FRAME);
        let mut model = viewed(&whole(&init, 0));
        let catch_up = merger.catch_up();
        each_frame(&whole(&catch_up, 0), |frame| {
            model.on_frame(frame, Duration::ZERO).unwrap()
        });
        assert_eq!(model.summary(Duration::ZERO).lanes.len(), 2);
    }

    /// A source whose Catch-up states a clock 10 s ahead of its Blocks'
    /// events (they waited in its rings), read 1 ms after the relay
    /// started: its Unix offset, the least over its frames, places those
    /// events 9 s before the relay's clock began. They reach a viewer
    /// whole, their durations and spacing kept, and the move is counted.
    #[test]
    fn a_source_whose_catch_ups_ran_ahead_of_its_blocks_reaches_viewers_whole() {
        use typhon_live_core::block::block_scratch_len;
        use typhon_live_core::{Compression, NameTable};
        use typhon_live_reader::{Reader, Update as Read};
        use typhon_live_tests::block_frame;

        const S: u64 = 1_000_000_000;
        let created = 100 * S;
        let mut names: NameTable<4, 64> = NameTable::new();
        let (main, work) = (names.intern("Main").unwrap(), names.intern("work").unwrap());
        let lane = LaneInfo {
            id: 0,
            name: main,
            kind: LaneKind::Main,
        };
        let meta = Metadata {
            ticks_per_second: S,
            session_id: 3,
            ..Metadata::default()
        };
        let mut out = vec![0u8; 1 << 16];
        let mut source = Vec::new();
        let n = write_init(&mut out, 0, &meta, &names, [lane].into_iter()).unwrap();
        source.extend_from_slice(&out[..n]);
        let open = OpenLane {
            info: lane,
            name: "Main",
            open_depth: 0,
            open: &[],
        };
        let n = write_catchup_of(&mut out, 0, 10 * S, [open].into_iter()).unwrap();
        source.extend_from_slice(&out[..n]);
        // 8 000 spans of 300 µs, 400 µs apart, from 1 s, in Blocks of 1 000.
        let spans = |i: u64| (S + i * 400_000, 300_000);
        let mut scratch = vec![0u8; block_scratch_len(1000)];
        for (seq, from) in (1u32..).zip((0..8000u64).step_by(1000)) {
            let mut block = BlockBuilder::new(&mut scratch);
            for i in from..from + 1000 {
                let (start, duration) = spans(i);
                let span = Event::Span {
                    start,
                    duration,
                    name: work,
                    id: i as u32 + 1,
                    parent: 0,
                    arg: None,
                };
                block.push(0, &span);
            }
            source.extend(block_frame(&block, seq, &[], Compression::Lz4));
        }

        let mut merger = Merger::new(&["late".into()], 7, created);
        let mut reader = owned::Reader::default();
        let mut merged = whole(&merger.init(), 0);
        let mut seq = 1;
        let mut moved = Vec::new();
        each_frame(&source, |frame| {
            reader
                .read(frame, created + 1_000_000, |update, _| {
                    merger.update(0, &update, |frame| {
                        merged.extend(whole(&frame, seq));
                        seq += 1;
                    });
                })
                .unwrap();
            moved.extend(merger.take_moved());
        });

        let mut viewer = Reader::new();
        let mut seen = Vec::new();
        each_frame(&merged, |frame| {
            viewer
                .read(frame, |_, update| {
                    if let Read::Event {
                        event:
                            Event::Span {
                                start, duration, ..
                            },
                        ..
                    } = update
                    {
                        seen.push((start, duration));
                    }
                })
                .unwrap();
        });
        assert_eq!(seen.len(), 8000);
        // Moved as one: the first at the clock's start, the rest as far
        // from it as they were, each as long as it was.
        let lead = 9 * S - 1_000_000;
        let want: Vec<(u64, u64)> = (0..8000).map(|i| (spans(i).0 - S, spans(i).1)).collect();
        assert_eq!(seen, want);
        assert_eq!(moved.iter().map(|m| m.events).sum::<u64>(), 8000);
        assert!(moved.iter().all(|m| m.label == "late" && m.lead == lead));
        let said: Vec<bool> = moved.iter().map(|m| m.first).collect();
        assert_eq!(
            said,
            [true, false, false, false, false, false, false, false]
        );
    }

    #[test]
    fn a_source_gets_its_share_of_the_lanes() {
        let mut merger = Merger::new(&["bad".into(), "good".into()], 7, 0);
        let events: Vec<(LaneId, Event)> = (0..2000u16)
            .map(|lane| (lane, Event::TickStart { time: 1, tick: 1 }))
            .collect();
        let update = Update::Events {
            events,
            drops: Vec::new(),
            unread: 0,
            unix_offset: 0,
            packed: None,
        };
        merger.update(0, &update, |_| {});
        assert_eq!(merger.lanes.len(), MAX_LANES / 2);
        merger.update(1, &session(1, ["main".to_owned()]), |_| {});
        assert_eq!(merger.lanes.len(), MAX_LANES / 2 + 1, "the good one's lane");
    }

    #[test]
    fn the_init_is_built_once_and_shared_until_a_name_or_lane_changes() {
        let mut merger = Merger::new(&["a".into()], 7, 0);
        merger.update(0, &session(1, ["main".to_owned()]), |_| {});
        let first = merger.init();
        assert!(Arc::ptr_eq(&first, &merger.init()), "shared");
        merger.update(
            0,
            &session(1, ["main".to_owned(), "new".to_owned()]),
            |_| {},
        );
        let second = merger.init();
        assert!(!Arc::ptr_eq(&first, &second), "rebuilt with the new name");
        assert!(second.payload.len() > first.payload.len());
    }

    /// A view model that read `stream` whole, as a viewer of the relay.
    fn viewed(stream: &[u8]) -> Model {
        let mut model = Model::default();
        each_frame(stream, |frame| {
            model.on_frame(frame, Duration::ZERO).unwrap()
        });
        model
    }

    /// Two sources' streams (of ticks `ticks`: the fixture's clock starts
    /// at 1 ms, so later ticks are a clock further on) through a merger
    /// into one stream, each received at Unix time `received` ns (the
    /// merger's clock starts at 0).
    fn merged(ticks: [std::ops::Range<u64>; 2], received: [u64; 2]) -> Vec<u8> {
        let mut merger = Merger::new(&["a".into(), "b".into()], 7, 0);
        let mut stream = whole(&merger.init(), 0);
        let mut seq = 0;
        for source in [0, 1] {
            let mut reader = Reader::default();
            each_frame(&nested_stream(ticks[source].clone()), |frame| {
                reader
                    .read(frame, received[source], |update, _| {
                        merger.update(source, &update, |frame| {
                            stream.extend(whole(&frame, seq));
                            seq += 1;
                        })
                    })
                    .unwrap()
            });
        }
        stream
    }

    /// The latest span end of each relay lane of `stream`, ns.
    fn latest_ends(stream: &[u8]) -> HashMap<LaneId, u64> {
        let (mut reader, mut ends) = (Reader::default(), HashMap::default());
        each_frame(stream, |frame| {
            reader
                .read(frame, 0, |update, _| {
                    if let Update::Events { events, .. } = update {
                        for (lane, event) in events {
                            if let Event::Span {
                                start, duration, ..
                            } = event
                            {
                                let end = ends.entry(lane).or_insert(0);
                                *end = (*end).max(start + duration);
                            }
                        }
                    }
                })
                .unwrap()
        });
        ends
    }

    /// The open spans of each lane a model fed `stream` shows, by name.
    fn open_spans(stream: &[u8]) -> Vec<(String, Vec<String>)> {
        let model = viewed(stream);
        model
            .timeline_inputs(Duration::ZERO)
            .lanes
            .into_iter()
            .map(|(_, lane, open)| (lane, open.iter().map(|s| model.name(s.name)).collect()))
            .collect()
    }

    #[test]
    fn viewers_see_the_spans_open_at_a_sources_catch_up_and_a_late_one_too() {
        use typhon_live_core::{Exporter, LaneKind, Lanes, NameTable};
        let lanes = Lanes::<2, 1024>::new();
        let mut names: NameTable<8, 128> = NameTable::new();
        let main = lanes
            .claim(names.intern("Main").unwrap(), LaneKind::Main)
            .unwrap();
        let stall = names.intern("stall").unwrap();
        let mut scratch = vec![0u8; 1 << 16];
        let meta = Metadata {
            ticks_per_second: 1_000_000,
            session_id: 3,
            ..Metadata::default()
        };
        let mut exporter: Exporter<'_, 2> = Exporter::new(meta, &mut scratch);
        exporter.attach().unwrap();
        let mut out = vec![0u8; exporter.min_block_buffer()];
        let mut source = Vec::new();
        let mut poll = |exporter: &mut Exporter<'_, 2>, names: &NameTable<8, 128>, now| {
            exporter.request_drain();
            while let Some(frame) = exporter.poll(now, &lanes, names, &mut out).unwrap() {
                source.push(out[..frame.len].to_vec());
            }
        };
        // A span open when the source's Init and Catch-up go out.
        let token = main.begin(stall, 1_000);
        poll(&mut exporter, &names, 2_000);
        main.end(token, 3_000, None);
        poll(&mut exporter, &names, 4_000);
        // The frames up to the first Block, which the end is in.
        let open_at = source
            .iter()
            .position(|f| f[2] == typhon_live_core::FrameKind::Block.to_byte())
            .unwrap();

        let mut merger = Merger::new(&["a".into()], 7, 0);
        let mut reader = Reader::default();
        let mut stream = whole(&merger.init(), 0);
        let mut seq = 0;
        let mut late = None;
        for (i, frame_bytes) in source.iter().enumerate() {
            if i == open_at {
                // A viewer connecting now: its Init, then its Catch-up.
                late = Some([whole(&merger.init(), 0), whole(&merger.catch_up(), 0)].concat());
            }
            each_frame(frame_bytes, |frame| {
                reader
                    .read(frame, 1_000_000_000, |update, _| {
                        merger.update(0, &update, |frame| {
                            stream.extend(whole(&frame, seq));
                            seq += 1;
                        })
                    })
                    .unwrap()
            });
            if i + 1 == open_at {
                // The source's Catch-up came through: the stall is open.
                assert_eq!(
                    open_spans(&stream),
                    [("a/Main".to_owned(), vec!["stall".to_owned()])]
                );
            }
        }
        let late = late.expect("the source sent frames after its Catch-up");
        assert_eq!(
            open_spans(&late),
            [("a/Main".to_owned(), vec!["stall".to_owned()])],
            "a viewer joining while it is open sees it"
        );
        // Ended: neither the stream's viewers nor a new one see it open.
        assert_eq!(open_spans(&stream), [("a/Main".to_owned(), vec![])]);
        let now = [whole(&merger.init(), 0), whole(&merger.catch_up(), 0)].concat();
        assert_eq!(open_spans(&now), [("a/Main".to_owned(), vec![])]);
    }

    /// `stream` from each of two sources labelled `a` and `b` through a
    /// merger, one source after the other, the frames arriving `step` ns
    /// apart from Unix time 1 s: the merged stream.
    fn two_sources_of(stream: &[u8], step: u64) -> Vec<u8> {
        let mut merger = Merger::new(&["a".into(), "b".into()], 7, 0);
        let mut merged = whole(&merger.init(), 0);
        let mut seq = 0;
        for source in 0..2 {
            let mut reader = Reader::default();
            let mut received = 1_000_000_000;
            each_frame(stream, |frame| {
                received += step;
                reader
                    .read(frame, received, |update, _| {
                        merger.update(source, &update, |frame| {
                            seq += 1;
                            merged.extend(whole(&frame, seq));
                        })
                    })
                    .unwrap()
            });
        }
        merged
    }

    #[test]
    fn log_texts_reach_viewers_on_their_sources_lanes() {
        let stream = two_sources_of(&typhon_live_tests::text_stream(), 0);
        let model = viewed(&stream);
        let lines: Vec<(Option<String>, String, String)> = (model.logs().lines().iter())
            .map(|l| {
                let lane = l.lane.and_then(|lane| model.lane_name(lane));
                (lane, model.name(l.site), l.text.to_string())
            })
            .collect();
        let line = |lane: Option<&str>, site: &str, text: &str| {
            (lane.map(str::to_owned), site.to_owned(), text.to_owned())
        };
        assert_eq!(
            lines,
            [
                line(Some("a/main"), "WARN disk full", "disk full dev=sda"),
                line(None, "INFO bye", "bye"),
                line(Some("b/main"), "WARN disk full", "disk full dev=sda"),
                line(None, "INFO bye", "bye"),
            ]
        );
        assert_eq!(model.logs().lost, 0);
    }

    #[test]
    fn cpu_samples_reach_viewers_on_their_sources_lanes() {
        // Arriving as they were sent, 400 µs apart.
        let stream = two_sources_of(&typhon_live_tests::samples_stream(), 400_000);
        let mut model = viewed(&stream);
        model.flush_history();
        // Each source's lanes' threads, read per relay lane: 400 µs
        // between the samples, 300 and 40 of them on a CPU.
        let mut spent: Vec<(String, u64, u64, Option<u64>)> = (model.history().chunks().iter())
            .flat_map(|c| c.cpu.iter())
            .map(|i| {
                let lane = model.lane_name(i.lane).unwrap_or_default();
                (lane, i.thread, i.to - i.from, i.spent.on_cpu_ns)
            })
            .collect();
        spent.sort();
        let lane = |name: &str, thread, on| (name.to_owned(), thread, 400_000, Some(on));
        assert_eq!(
            spent,
            [
                lane("a/main", 4001, 300_000),
                lane("a/worker", 4002, 40_000),
                lane("b/main", 4001, 300_000),
                lane("b/worker", 4002, 40_000),
            ]
        );
    }

    #[test]
    fn each_sources_stacks_reach_viewers_under_their_own_nodes_and_frames() {
        use typhon_live_model::{Profile, Selection};
        let stream = two_sources_of(&typhon_live_tests::stacks_stream(), 400_000);
        let mut model = viewed(&stream);
        model.flush_history();
        let stacks = model.state().stacks();
        // Two sources' trees, their own nodes: three each.
        assert_eq!(stacks.len(), 6);
        let samples: Vec<_> = (model.history().chunks().iter())
            .flat_map(|c| c.stacks.iter().copied())
            .collect();
        assert_eq!(samples.len(), 4, "{samples:?}");
        // Each source's samples on its own lane, its stacks' frames named.
        for lane in ["a/main", "b/main"] {
            let id = (samples.iter())
                .map(|s| s.lane)
                .find(|&l| model.lane_name(l).as_deref() == Some(lane))
                .unwrap_or_else(|| panic!("no sample on {lane}"));
            let chunks = model.history().chunks().iter().map(|c| &**c);
            let lane_profile = Profile::of(
                chunks,
                stacks,
                Selection::Lane {
                    lane: id,
                    from: 0,
                    to: u64::MAX,
                },
            );
            assert_eq!(lane_profile.samples, 2);
            let names = model.names();
            let hottest = lane_profile.hottest().map(|(f, _)| f.text(names));
            assert!(
                matches!(hottest.as_deref(), Some("hash" | "run")),
                "{hottest:?}"
            );
            assert!(lane_profile.folded(names).contains(";run;spin;hash 1"));
        }
    }

    #[test]
    fn memory_sums_and_each_sources_sites_reach_viewers_naming_their_source() {
        let stream = two_sources_of(&typhon_live_tests::memory_stream(), 0);
        let mut model = viewed(&stream);
        let memory = model.summary(Duration::ZERO).memory.expect("memory told");
        // Both processes' 160 MB.
        assert_eq!(memory.live, 320_000_000);
        assert_eq!(memory.sites, 4);
        let stacks: Vec<(String, Vec<String>)> = (memory.sites_by_live.iter())
            .map(|s| (s.label.clone(), s.stack.clone()))
            .collect();
        let stack = |label: &str, frames: &[&str], source: &str| {
            let mut frames: Vec<String> = frames.iter().map(|f| f.to_string()).collect();
            frames.push(format!("(source {source})"));
            (label.to_owned(), frames)
        };
        let level = [
            "demo::load_level (demo.rs:50)",
            "demo::simulate (demo.rs:400)",
        ];
        let leak = [
            "alloc::raw_vec::RawVec<T>::grow_one (raw_vec.rs:1)",
            "demo::cache_replay_frame (demo.rs:120)",
            "demo::simulate (demo.rs:400)",
        ];
        assert_eq!(
            stacks,
            [
                stack("demo::load_level", &level, "a"),
                stack("demo::load_level", &level, "b"),
                stack("demo::cache_replay_frame", &leak, "a"),
                stack("demo::cache_replay_frame", &leak, "b"),
            ]
        );
    }

    #[test]
    fn each_sources_spans_keep_the_bytes_they_allocated() {
        let stream = two_sources_of(&typhon_live_tests::allocated_stream(), 0);
        let mut model = viewed(&stream);
        model.flush_history();
        let allocated: Vec<(String, u64, u64)> = (model.span_stats().iter())
            .map(|s| (s.name.clone(), s.count, s.allocated_bytes))
            .collect();
        // Both sources' spans, each its own bytes, its children's not.
        assert_eq!(
            allocated,
            [
                ("Frame".to_owned(), 20, 20 * (64 << 10)),
                ("Load".to_owned(), 20, 20 * (256 << 10)),
            ]
        );
    }

    #[test]
    fn sources_on_other_clocks_are_aligned_by_when_their_blocks_arrive() {
        // b's clock is 5 s ahead of a's; both streams arrive together.
        let ends = latest_ends(&merged([0..10, 5_000..5_010], [10_000_000_000; 2]));
        assert_eq!(ends.len(), 2);
        assert_eq!(ends[&0], ends[&1], "{ends:?}");
        // Received 3 s apart, they are 3 s apart.
        let ends = latest_ends(&merged(
            [0..10, 5_000..5_010],
            [10_000_000_000, 13_000_000_000],
        ));
        assert_eq!(ends[&1] - ends[&0], 3_000_000_000, "{ends:?}");
    }

    #[test]
    fn two_sources_become_one_session_with_their_lanes_labelled() {
        let mut model = viewed(&merged([0..10, 0..10], [10_000_000_000, 20_000_000_000]));
        let summary = model.summary(Duration::ZERO);
        let lanes: Vec<&str> = summary.lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(lanes, ["a/Main", "b/Main"]);
        assert_eq!(model.frames_dropped(), 0);
        model.flush_history();
        let stats = model.span_stats();
        let count = |name: &str| stats.iter().find(|s| s.name == name).map(|s| s.count);
        assert_eq!((count("outer"), count("inner")), (Some(20), Some(40)));
    }

    #[test]
    fn one_source_shown_as_itself_keeps_its_names_and_its_process_name() {
        let mut merger = Merger::single("s", 7, 0);
        let mut update = session(1, ["Main".to_owned(), "memory".to_owned()]);
        if let Update::Session { process, .. } = &mut update {
            *process = "the engine".into();
        }
        merger.update(0, &update, |_| {});
        let init = whole(&merger.init(), 0);
        let model = viewed(&init);
        assert_eq!(
            model.session().map(|s| s.process_name.as_str()),
            Some("the engine")
        );
        let names: Vec<&str> = model.names().iter().map(|(_, text)| text).collect();
        assert!(
            names.contains(&"Main") && names.contains(&"memory"),
            "{names:?}"
        );
        // Relayed beside others, a source's lanes are labelled.
        let mut merger = Merger::new(&["a".into()], 7, 0);
        merger.update(0, &update, |_| {});
        let model = viewed(&whole(&merger.init(), 0));
        assert_eq!(
            model.session().map(|s| s.process_name.as_str()),
            Some("typhon-live relay")
        );
        assert!(model.names().iter().any(|(_, text)| text == "a/Main"));
    }

    #[test]
    fn one_source_shown_as_itself_restarting_is_a_new_session_for_its_viewers() {
        let mut merger = Merger::single("s", 7, 0);
        let mut stream = whole(&merger.init(), 0);
        let mut seq = 0;
        for (session, ticks) in [(1, 0..20), (2, 0..10)] {
            let mut reader = Reader::default();
            each_frame(&nested_stream(ticks), |frame| {
                reader
                    .read(frame, 1_000_000_000, |mut update, _| {
                        if let Update::Session { id, .. } = &mut update {
                            *id = session;
                        }
                        merger.update(0, &update, |frame| {
                            let init = frame.kind == typhon_live_core::FrameKind::Init.to_byte();
                            stream.extend(whole(&frame, seq));
                            seq += u32::from(!init);
                        })
                    })
                    .unwrap()
            });
        }
        let mut model = viewed(&stream);
        assert_eq!(model.restarts(), 1);
        assert_eq!(model.session().map(|s| s.id), Some(2));
        assert_eq!(model.frames_dropped(), 0);
        model.flush_history();
        // The second session's spans only, its lane named as the source
        // names it.
        let stats = model.span_stats();
        let count = |name: &str| stats.iter().find(|s| s.name == name).map(|s| s.count);
        assert_eq!((count("outer"), count("inner")), (Some(10), Some(20)));
        let lanes = model.summary(Duration::ZERO).lanes;
        assert!(lanes.iter().all(|l| !l.name.contains('/')), "{lanes:?}");
    }

    #[test]
    fn a_source_defining_names_past_the_caps_grows_nothing_past_them() {
        let mut merger = Merger::new(&["a".into()], 7, 0);
        let names: Vec<(NameId, String)> = (0..MAX_NAMES as u32 + 10)
            .map(|id| (id, format!("name {id}")))
            .collect();
        let definitions = Update::Definitions {
            names,
            lanes: Vec::new(),
        };
        merger.update(0, &definitions, |_| {});
        assert_eq!(merger.sources[0].texts.len(), MAX_NAMES);
        assert_eq!(merger.names.count() as usize, MAX_NAMES);
        // Events naming ids never defined map to the cap's name.
        let events = Update::Events {
            events: (0..10)
                .map(|i| {
                    let name = MAX_NAMES as u32 + 100 + i;
                    (
                        0,
                        Event::Instant {
                            time: 1,
                            name,
                            payload: 0,
                        },
                    )
                })
                .collect(),
            drops: Vec::new(),
            unread: 0,
            unix_offset: 0,
            packed: None,
        };
        merger.update(0, &events, |_| {});
        assert_eq!(merger.sources[0].names.len(), MAX_NAMES);
    }
}
