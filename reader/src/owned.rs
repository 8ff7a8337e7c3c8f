//! The same reading, a frame at a time, as owned values for consumers on
//! other threads: the relay reads each source's frames once into
//! [`Update`]s that its merger, its metrics and its slow-tick tracer all
//! take (`typhon-live-relay`, `typhon-live-monitoring`). A source's
//! stream is decoded once, its times turned into ns and placed on the
//! Unix clock once ([`State::unix_offset`], from each frame's arrival
//! time), whoever needs them.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use typhon_live_core::{
    DecodeError, Event, Frame, LaneId, LaneInfo, LaneSample, Level, Memory, NameId, NodeId,
    OpenSpan, Payload, SiteTotals, StackNode, StackSample, Switch,
};

use crate::{Clock, CpuInterval, Loss, State, Tick};

/// What a source's frame said.
#[derive(Clone, Debug, PartialEq)]
pub enum Update {
    /// An Init: a session (a new one when its id changed).
    Session {
        /// The session id.
        id: u64,
        /// The process's name, as its Init says.
        process: String,
        /// Every name it defines.
        names: Vec<(NameId, String)>,
        /// Every lane.
        lanes: Vec<LaneInfo>,
    },
    /// Names and lanes defined since.
    Definitions {
        /// The names.
        names: Vec<(NameId, String)>,
        /// The lanes (all of them, as the source knows them now).
        lanes: Vec<LaneInfo>,
    },
    /// Stack nodes and frame symbols an Init or Definitions defined, as
    /// the reader took them (a node's parent held): after its
    /// [`Update::Session`] or [`Update::Definitions`], whose names the
    /// symbols use.
    Stacks {
        /// The nodes, in id order.
        nodes: Vec<(NodeId, StackNode)>,
        /// The frames at each address, innermost first.
        symbols: Vec<(u64, Vec<NameId>)>,
    },
    /// A Block's events, their times and durations in ns of the source's
    /// clock.
    Events {
        /// `(lane, event)` in record order.
        events: Vec<(LaneId, Event)>,
        /// Events the source dropped before this Block, per lane.
        drops: Vec<(LaneId, u32)>,
        /// Records the Block stated that could not be read: events lost
        /// to its damage (the error is returned after this update).
        unread: u32,
        /// Unix ns minus source ns: an event at `t` ns was at `t +
        /// unix_offset` ns since the Unix epoch (see the module's doc).
        unix_offset: i128,
        /// The Block as it packed these events, when they are exactly
        /// what it holds: for a consumer that passes them on relabelled
        /// instead of encoding them again (`block::relabel_events`).
        packed: Option<PackedEvents>,
    },
    /// A Catch-up: the source's lanes with their open spans, start times
    /// in ns of the source's clock.
    CatchUp {
        /// When it describes, ns of the source's clock.
        time: u64,
        /// The lanes.
        lanes: Vec<OpenLane>,
        /// As for [`Update::Events`].
        unix_offset: i128,
    },
    /// A Text frame's records, times in ns of the source's clock.
    Texts {
        /// The records, in order.
        texts: Vec<Text>,
        /// Texts the source says were lost before them.
        lost: u32,
        /// As for [`Update::Events`].
        unix_offset: i128,
    },
    /// A Samples frame: each lane's counters as the source stated them
    /// (cumulative, for a consumer that passes them on), its switches,
    /// and what each lane's thread did since its last sample.
    Samples(Samples),
    /// Ticks the frame told, paired ([`crate::Update::Tick`]): after its
    /// other updates, so that a Block's events come before the ticks
    /// they end.
    Ticks(Vec<Tick>),
    /// Frames missing before this one (a sequence gap).
    Gap {
        /// How many.
        frames: u64,
    },
    /// The source started over under the same session id (a device
    /// without a source of fresh ids), as the reader tells. Comes
    /// before the first Block of the new run.
    Restarted,
}

/// A Block's packed events (FORMAT.md, "Block": what follows its drop
/// entries, decompressed), kept when the events read from it are exactly
/// what it holds: it read whole, every group was decoded, and its clock
/// is in ns, so that its times needed no conversion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedEvents {
    /// Records it holds.
    pub records: u32,
    /// Its first timestamp (the earliest event time), ns.
    pub first_time: u64,
    /// Its last timestamp (the latest event end), ns.
    pub last_time: u64,
    /// The packed events.
    pub bytes: Vec<u8>,
}

/// A Text frame's record, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text {
    /// When, ns.
    pub time: u64,
    /// Its lane, if the writer could say.
    pub lane: Option<LaneId>,
    /// Its level.
    pub level: Level,
    /// Its call site, a name.
    pub site: NameId,
    /// The text.
    pub text: String,
    /// The writer cut it to its bound.
    pub cut: bool,
}

impl Text {
    /// `text`, owned.
    pub fn of(text: &typhon_live_core::Text<'_>) -> Text {
        Text {
            time: text.time,
            lane: text.lane,
            level: text.level,
            site: text.site,
            text: text.text.to_owned(),
            cut: text.cut,
        }
    }

    /// Borrowed, as the core writes it.
    pub fn as_core(&self) -> typhon_live_core::Text<'_> {
        typhon_live_core::Text {
            time: self.time,
            lane: self.lane,
            level: self.level,
            site: self.site,
            text: &self.text,
            cut: self.cut,
        }
    }
}

/// A Samples frame, owned, its times in ns of the source's clock.
#[derive(Clone, Debug, PartialEq)]
pub struct Samples {
    /// When its counters were read.
    pub time: u64,
    /// Each lane's counters, as stated.
    pub lanes: Vec<LaneSample>,
    /// Its switches: lane, time and what.
    pub switches: Vec<(LaneId, u64, Switch)>,
    /// The lanes' intervals since their last samples (the reader's
    /// reading of the counters: see [`CpuInterval`]).
    pub intervals: Vec<CpuInterval>,
    /// The process's memory, where its writer counts it.
    pub memory: Option<Memory>,
    /// Allocation sites whose totals it states.
    pub sites: Vec<Site>,
    /// Its stacks sampled (their lanes and nodes held), times in ns of
    /// the source's clock.
    pub stacks: Vec<StackSample>,
    /// As for [`Update::Events`].
    pub unix_offset: i128,
}

/// An allocation site's totals, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The source's id for it.
    pub site: u32,
    /// Its frames' names, innermost first.
    pub frames: Vec<NameId>,
    /// Its totals, cumulative.
    pub totals: SiteTotals,
}

/// A lane of a Catch-up, owned.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenLane {
    /// The lane.
    pub info: LaneInfo,
    /// Its name.
    pub name: String,
    /// Spans open, at least `open.len()`.
    pub open_depth: u32,
    /// The outermost open spans, starts in ns.
    pub open: Vec<OpenSpan>,
}

/// Reads a source's frames into updates, across its connections. It
/// hands a Samples frame's switches on as stated, unpaired
/// ([`crate::Reader::forward_switches`]): its consumers forward them.
pub struct Reader {
    reader: crate::Reader,
}

impl Default for Reader {
    fn default() -> Self {
        let mut reader = crate::Reader::new();
        reader.forward_switches();
        Reader { reader }
    }
}

/// What one frame said, gathered for the updates made at its end.
#[derive(Default)]
struct Said {
    /// An Init: the session it named.
    session: Option<u64>,
    names: Vec<(NameId, String)>,
    /// The lane table, when the frame set it.
    lanes: Option<Vec<LaneInfo>>,
    nodes: Vec<(NodeId, StackNode)>,
    symbols: Vec<(u64, Vec<NameId>)>,
    block: bool,
    events: Vec<(LaneId, Event)>,
    drops: Vec<(LaneId, u32)>,
    unread: u32,
    /// A Text frame: its records and the losses it told.
    texts: Option<(Vec<Text>, u32)>,
    /// A Samples frame.
    samples: Option<Samples>,
    ticks: Vec<Tick>,
}

impl Reader {
    /// A new connection: its frames are numbered afresh.
    pub fn reconnected(&mut self) {
        self.reader.reconnected();
    }

    /// The updates of `frame`, which arrived at Unix time `received` (ns),
    /// handed to `take` with the reader's state (its names and lanes, as
    /// the source's own thread reads them): a gap first if frames are
    /// missing before it. An error names a payload that did not decode (a
    /// Block's events up to the bad one are handed on).
    pub fn read(
        &mut self,
        frame: &Frame<'_>,
        received: u64,
        mut take: impl FnMut(Update, &State),
    ) -> Result<(), DecodeError> {
        use crate::Update as Read;
        let mut said = Said::default();
        // A Block's events in one allocation of the count it states (at
        // most the format's MAX_BLOCK_RECORDS): they wait in the merger's
        // inbox, where a doubled Vec would hold up to twice their bytes.
        // A Samples frame's counters as stated: the reader's updates
        // carry what they mean, not what they were.
        let mut stated: Vec<LaneSample> = Vec::new();
        let mut switches = Vec::new();
        let parsed = frame.parse();
        let mut block = None;
        let undefined_before = self.reader.state().tally().samples_undefined_lanes;
        match &parsed {
            Ok(Payload::Block(view)) => {
                said.events.reserve_exact(view.records as usize);
                block = Some(*view);
            }
            Ok(Payload::Samples(samples)) => {
                stated.extend(samples.lanes());
                // As many as it states (its parse checked that they read).
                switches.reserve_exact(samples.switch_count());
            }
            _ => {}
        }
        // Every update but a switch, the most frequent and the least work
        // (a Samples frame holds hundreds): that one is taken inline.
        let mut said_of = |state: &State, update: Read<'_>| match update {
            Read::NewSession { .. } | Read::SessionRepeated => {
                said.session = state.session().map(|s| s.id);
            }
            Read::Name { id, text } => said.names.push((id, text.to_owned())),
            Read::StackNode { id, node } => said.nodes.push((id, node)),
            Read::FrameSymbol { address, frames } => {
                said.symbols.push((address, frames.iter().collect()))
            }
            Read::StackSample(sample) => {
                if let Some(samples) = &mut said.samples {
                    samples.stacks.push(sample);
                }
            }
            Read::Lanes => said.lanes = Some(state.lanes().values().map(|l| l.info).collect()),
            Read::Restarted { .. } => take(Update::Restarted, state),
            Read::Lost(Loss::Gap { frames }) => take(Update::Gap { frames }, state),
            Read::Lost(Loss::Dropped { lane, events }) => {
                said.block = true;
                said.drops.push((lane, events));
            }
            Read::Lost(Loss::Damaged { events }) => said.unread = events,
            Read::Lost(Loss::Texts { texts }) => {
                said.texts.get_or_insert_with(Default::default).1 = texts
            }
            Read::Text(text) => said
                .texts
                .get_or_insert_with(Default::default)
                .0
                .push(Text::of(&text)),
            Read::Event { lane, event } => {
                said.block = true;
                said.events.push((lane, event));
            }
            Read::Samples { time } => {
                said.samples = Some(Samples {
                    time,
                    lanes: core::mem::take(&mut stated),
                    switches: Vec::new(),
                    intervals: Vec::new(),
                    memory: None,
                    sites: Vec::new(),
                    stacks: Vec::new(),
                    unix_offset: state.unix_offset().unwrap_or(0),
                })
            }
            Read::Memory(memory) => {
                if let Some(samples) = &mut said.samples {
                    samples.memory = Some(memory);
                }
            }
            Read::Site(site) => {
                if let Some(samples) = &mut said.samples {
                    samples.sites.push(Site {
                        site: site.site,
                        frames: site.frames.iter().collect(),
                        totals: site.totals,
                    });
                }
            }
            Read::Tick(tick) => said.ticks.push(tick),
            Read::Cpu(interval) => {
                if let Some(samples) = &mut said.samples {
                    samples.intervals.push(interval);
                }
            }
            Read::CatchUp { time } => take(
                Update::CatchUp {
                    time,
                    lanes: open_lanes(state),
                    unix_offset: state.unix_offset().unwrap_or(0),
                },
                state,
            ),
            _ => {}
        };
        let result = self
            .reader
            .read_parsed_at(frame, parsed, received, |state, update| match update {
                Read::Switch { lane, time, what } => switches.push((lane, time, what)),
                other => said_of(state, other),
            });
        if let Some(samples) = &mut said.samples {
            samples.switches = switches;
        }
        let state = self.reader.state();
        if let Some(id) = said.session {
            take(
                Update::Session {
                    id,
                    process: state
                        .session()
                        .map_or_else(String::new, |s| s.process_name.clone()),
                    names: said.names,
                    lanes: said.lanes.unwrap_or_default(),
                },
                state,
            );
        } else if !said.names.is_empty() || said.lanes.is_some() {
            take(
                Update::Definitions {
                    names: said.names,
                    lanes: said.lanes.unwrap_or_default(),
                },
                state,
            );
        }
        if !said.nodes.is_empty() || !said.symbols.is_empty() {
            take(
                Update::Stacks {
                    nodes: said.nodes,
                    symbols: said.symbols,
                },
                state,
            );
        }
        if let Some((texts, lost)) = said.texts {
            take(
                Update::Texts {
                    texts,
                    lost,
                    unix_offset: state.unix_offset().unwrap_or(0),
                },
                state,
            );
        }
        if let Some(mut samples) = said.samples {
            // Only the lanes it may name, as the reader read them (which
            // it counts: looked up only when it did).
            if state.tally().samples_undefined_lanes > undefined_before {
                samples
                    .lanes
                    .retain(|lane| state.samples_may_name(lane.lane));
            }
            take(Update::Samples(samples), state);
        }
        if said.block || said.unread > 0 {
            let exact = result.is_ok()
                && said.unread == 0
                && state.clock() == Clock::NS
                && self.reader.reads_every_kind();
            let packed = block
                .filter(|block| exact && block.records > 0)
                .and_then(|block| {
                    Some(PackedEvents {
                        records: block.records,
                        first_time: block.first_time,
                        last_time: block.last_time,
                        bytes: self.reader.packed_events(&block)?.to_vec(),
                    })
                });
            take(
                Update::Events {
                    events: said.events,
                    drops: said.drops,
                    unread: said.unread,
                    unix_offset: state.unix_offset().unwrap_or(0),
                    packed,
                },
                state,
            );
        }
        if !said.ticks.is_empty() {
            take(Update::Ticks(said.ticks), state);
        }
        result
    }
}

/// The lanes of `state` with their open spans, owned.
fn open_lanes(state: &State) -> Vec<OpenLane> {
    state
        .lanes()
        .values()
        .map(|lane| OpenLane {
            info: lane.info,
            name: state.names().get(lane.info.name).unwrap_or("").to_owned(),
            open_depth: lane.open_depth,
            open: lane.open.clone(),
        })
        .collect()
}
