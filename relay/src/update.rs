//! A source's frames read once, by the one stream reader
//! (`typhon-live-reader`), into owned [`Update`]s that the metrics, the
//! merged stream and the slow-tick tracer all take, the merger on a
//! thread of its own: a source's stream is decoded once, its times turned
//! into ns and placed on the Unix clock once (the reader's
//! `State::unix_offset`, from each frame's arrival time), whoever needs
//! them.

use typhon_live_core::{DecodeError, Event, Frame, LaneId, LaneInfo, NameId, OpenSpan, Payload};
use typhon_live_reader::{Loss, State};

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

/// Reads a source's frames into updates, across its connections.
#[derive(Default)]
pub struct Reader {
    reader: typhon_live_reader::Reader,
}

/// What one frame said, gathered for the updates made at its end.
#[derive(Default)]
struct Said {
    /// An Init: the session it named.
    session: Option<u64>,
    names: Vec<(NameId, String)>,
    /// The lane table, when the frame set it.
    lanes: Option<Vec<LaneInfo>>,
    block: bool,
    events: Vec<(LaneId, Event)>,
    drops: Vec<(LaneId, u32)>,
    unread: u32,
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
        use typhon_live_reader::Update as Read;
        let mut said = Said::default();
        // A Block's events in one allocation of the count it states (at
        // most the format's MAX_BLOCK_RECORDS): they wait in the merger's
        // inbox, where a doubled Vec would hold up to twice their bytes.
        if let Ok(Payload::Block(block)) = frame.parse() {
            said.events.reserve_exact(block.records as usize);
        }
        let result = self
            .reader
            .read_at(frame, received, |state, update| match update {
                Read::NewSession { .. } | Read::SessionRepeated => {
                    said.session = state.session().map(|s| s.id);
                }
                Read::Name { id, text } => said.names.push((id, text.to_owned())),
                Read::Lanes => said.lanes = Some(state.lanes().values().map(|l| l.info).collect()),
                Read::Restarted { .. } => take(Update::Restarted, state),
                Read::Lost(Loss::Gap { frames }) => take(Update::Gap { frames }, state),
                Read::Lost(Loss::Dropped { lane, events }) => {
                    said.block = true;
                    said.drops.push((lane, events));
                }
                Read::Lost(Loss::Damaged { events }) => said.unread = events,
                Read::Event { lane, event } => {
                    said.block = true;
                    said.events.push((lane, event));
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
            });
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
        if said.block || said.unread > 0 {
            take(
                Update::Events {
                    events: said.events,
                    drops: said.drops,
                    unread: said.unread,
                    unix_offset: state.unix_offset().unwrap_or(0),
                },
                state,
            );
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

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_live_tests::{each_frame, nested_stream};

    fn restarts(streams: &[Vec<u8>]) -> usize {
        let mut reader = Reader::default();
        let mut restarts = 0;
        for stream in streams {
            reader.reconnected();
            each_frame(stream, |frame| {
                reader
                    .read(frame, 0, |update, _| {
                        restarts += usize::from(update == Update::Restarted)
                    })
                    .unwrap()
            });
        }
        restarts
    }

    /// Restarts as each reader of the project counts them: the relay's,
    /// the view model's and the Perfetto writer's.
    fn restarts_by_every_reader(streams: &[Vec<u8>]) -> [usize; 3] {
        let mut model = typhon_live_model::Model::default();
        let mut writer = typhon_live_convert::perfetto::TraceWriter::new();
        let mut out = Vec::new();
        for stream in streams {
            model.reconnected();
            each_frame(stream, |frame| {
                let _ = model.on_frame(frame, std::time::Duration::ZERO);
                let _ = writer.frame(frame, &mut out);
            });
        }
        [
            restarts(streams),
            model.restarts() as usize,
            writer.stats().restarts as usize,
        ]
    }

    /// `stream` with a Block of drop entries only (no records, so its
    /// timestamps are 0) right after its Init.
    fn with_an_empty_block_after_its_init(stream: &[u8]) -> Vec<u8> {
        let mut init_len = 0;
        each_frame(stream, |frame| {
            if init_len == 0 {
                init_len = frame.wire_len();
            }
        });
        let mut scratch = vec![0u8; 256];
        let empty = typhon_live_core::BlockBuilder::new(&mut scratch);
        let mut block = vec![0u8; 1024];
        let n = typhon_live_core::block::write_block(&mut block, 0, &empty, &[(0, 3)]).unwrap();
        [&stream[..init_len], &block[..n], &stream[init_len..]].concat()
    }

    #[test]
    fn every_reader_tells_the_same_restarts_and_an_empty_block_is_none() {
        let late = nested_stream(5_000..5_010);
        assert_eq!(
            restarts_by_every_reader(&[late.clone(), nested_stream(0..10)]),
            [1, 1, 1]
        );
        assert_eq!(
            restarts_by_every_reader(&[nested_stream(0..10), late.clone()]),
            [0, 0, 0]
        );
        // A repeated Init, then a Block without records: its timestamps
        // (0) state no time. Each reader once took them for the clock
        // going back, a restart.
        let going_on = with_an_empty_block_after_its_init(&nested_stream(5_010..5_020));
        assert_eq!(restarts_by_every_reader(&[late, going_on]), [0, 0, 0]);
    }

    #[test]
    fn a_catch_up_is_kept_as_deep_as_a_writer_tracks() {
        use typhon_live_core::catchup::write_catchup_of;
        use typhon_live_core::{LaneKind, OpenLane as Listed, MAX_OPEN_SPANS};
        // A peer listing more open spans than any writer tracks.
        let open: Vec<OpenSpan> = (1..=40)
            .map(|id| OpenSpan {
                id,
                name: 1,
                start: u64::from(id),
            })
            .collect();
        let lane = Listed {
            info: LaneInfo {
                id: 0,
                name: 0,
                kind: LaneKind::Main,
            },
            name: "Main",
            open_depth: 40,
            open: &open,
        };
        let mut out = vec![0u8; 4096];
        let n = write_catchup_of(&mut out, 0, 100, std::iter::once(lane)).unwrap();
        let mut kept = Vec::new();
        each_frame(&out[..n], |frame| {
            Reader::default()
                .read(frame, 0, |update, _| {
                    if let Update::CatchUp { lanes, .. } = update {
                        kept.extend(lanes.into_iter().map(|l| (l.open_depth, l.open.len())));
                    }
                })
                .unwrap()
        });
        assert_eq!(kept, [(40, MAX_OPEN_SPANS)]);
    }

    #[test]
    fn the_same_id_with_the_clock_back_is_a_restart_and_going_on_is_not() {
        // The fixture's session id is always 9, its clock 1 MHz from 1 ms.
        let late = nested_stream(5_000..5_010);
        assert_eq!(restarts(&[late.clone(), nested_stream(0..10)]), 1);
        assert_eq!(restarts(&[nested_stream(0..10), late]), 0);
    }
}
