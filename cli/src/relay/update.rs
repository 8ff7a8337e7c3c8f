//! A source's frames read once into owned [`Update`]s, which the metrics,
//! the merged stream and the slow-tick tracer all take: a source's stream
//! is decoded once, its times turned into ns and placed on the Unix clock
//! once, whoever needs them.
//!
//! The placing: a source's offset is the least, over its Blocks and
//! Catch-ups, of (Unix time when the frame arrived − the latest time it
//! states: a Block's latest event end, a Catch-up's time). That is
//! the true offset plus the fastest delivery seen (a Block's drain age and
//! the network), so sources line up to within their smallest delivery
//! delay, and never ahead of when the relay saw them. It is estimated
//! afresh when a source restarts.

use typhon_live_core::{
    DecodeError, Event, Frame, LaneId, LaneInfo, NameId, OpenSpan, Payload, RestartCheck,
    SequenceCheck, MAX_OPEN_SPANS,
};
use typhon_live_reader::BlockBuffer;

/// What a source's frame said.
#[derive(Clone, Debug, PartialEq)]
pub enum Update {
    /// An Init: a session (a new one when its id changed).
    Session {
        /// The session id.
        id: u64,
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
    /// without a source of fresh ids), as [`RestartCheck`] tells. Comes
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
    sequence: SequenceCheck,
    unpacked: BlockBuffer,
    session: Option<u64>,
    ticks_per_second: u64,
    restart: RestartCheck,
    /// Unix ns minus source ns, least seen this run of the source.
    unix_offset: Option<i128>,
}

impl Reader {
    /// A new connection: its frames are numbered afresh.
    pub fn reconnected(&mut self) {
        self.sequence.reconnected();
        self.restart.arm();
    }

    /// Unix ns minus source ns, with a time stated at `time` (ticks) that
    /// arrived at Unix time `received` (see the module's doc).
    fn place(&mut self, received: u64, time: u64) -> i128 {
        let sample = i128::from(received) - i128::from(self.ns(time));
        let unix_offset = self.unix_offset.map_or(sample, |o| o.min(sample));
        self.unix_offset = Some(unix_offset);
        unix_offset
    }

    /// Ticks of the source's clock in ns.
    fn ns(&self, ticks: u64) -> u64 {
        u64::try_from(u128::from(ticks) * 1_000_000_000 / u128::from(self.ticks_per_second.max(1)))
            .unwrap_or(u64::MAX)
    }

    /// The updates of `frame`, which arrived at Unix time `received` (ns),
    /// handed to `take`: a gap first if frames are missing before it. An
    /// error names a payload that did not decode (a Block's events up to
    /// the bad one are handed on).
    pub fn read(
        &mut self,
        frame: &Frame<'_>,
        received: u64,
        mut take: impl FnMut(Update),
    ) -> Result<(), DecodeError> {
        let missed = if frame.is_sequenced() {
            self.sequence.sequenced(frame.seq)
        } else {
            0
        };
        if missed > 0 {
            take(Update::Gap {
                frames: u64::from(missed),
            });
        }
        if frame.kind().is_err() {
            // A newer writer's kind: nothing in it for us.
            return Ok(());
        }
        match frame.parse()? {
            Payload::Init(init) => {
                let missed = self.sequence.init(init.next_seq, init.session_id);
                if missed > 0 {
                    take(Update::Gap {
                        frames: u64::from(missed),
                    });
                }
                if self.session == Some(init.session_id) {
                    self.restart.arm();
                } else {
                    self.session = Some(init.session_id);
                    self.restart.new_session();
                    self.unix_offset = None;
                }
                self.ticks_per_second = init.ticks_per_second.max(1);
                take(Update::Session {
                    id: init.session_id,
                    names: init.names().map(|(id, n)| (id, n.to_owned())).collect(),
                    lanes: init.lanes().collect(),
                });
            }
            Payload::Definitions(defs) => take(Update::Definitions {
                names: defs.names().map(|(id, n)| (id, n.to_owned())).collect(),
                lanes: defs.lanes().into_iter().flatten().collect(),
            }),
            Payload::Block(block) => {
                let (first, last) = (block.first_time, block.last_time);
                if self
                    .restart
                    .block(first, last, block.records, self.ticks_per_second)
                {
                    take(Update::Restarted);
                    self.unix_offset = None;
                }
                let unix_offset = self.place(received, block.last_time);
                // At most MAX_BLOCK_RECORDS, the format's bound.
                let mut events = Vec::with_capacity(block.records as usize);
                let mut unpacked = std::mem::take(&mut self.unpacked);
                let result = unpacked
                    .each_event(&block, |lane, event| events.push((lane, self.in_ns(event))));
                self.unpacked = unpacked;
                take(Update::Events {
                    events,
                    drops: block.drops().collect(),
                    unread: result.err().map_or(0, |damage| damage.unread),
                    unix_offset,
                });
                result.map_err(|damage| damage.error)?;
            }
            Payload::CatchUp(catchup) => {
                if self.restart.catch_up(catchup.time, self.ticks_per_second) {
                    take(Update::Restarted);
                    self.unix_offset = None;
                }
                let lanes = catchup
                    .lanes()
                    .map(|lane| OpenLane {
                        info: lane.info,
                        name: lane.name.to_owned(),
                        open_depth: lane.open_depth,
                        // As deep as a writer tracks, whatever a peer lists.
                        open: lane
                            .open
                            .take(MAX_OPEN_SPANS)
                            .map(|span| OpenSpan {
                                start: self.ns(span.start),
                                ..span
                            })
                            .collect(),
                    })
                    .collect();
                take(Update::CatchUp {
                    time: self.ns(catchup.time),
                    lanes,
                    unix_offset: self.place(received, catchup.time),
                });
            }
            Payload::Shutdown(_) => {}
        }
        Ok(())
    }
}

impl Reader {
    /// `event` with its times and duration in ns.
    fn in_ns(&self, event: Event) -> Event {
        match event {
            Event::Span {
                start,
                duration,
                name,
                id,
                parent,
                arg,
            } => Event::Span {
                start: self.ns(start),
                duration: self.ns(duration),
                name,
                id,
                parent,
                arg,
            },
            Event::Instant {
                time,
                name,
                payload,
            } => Event::Instant {
                time: self.ns(time),
                name,
                payload,
            },
            Event::Gauge { time, gauge, value } => Event::Gauge {
                time: self.ns(time),
                gauge,
                value,
            },
            Event::TickStart { time, tick } => Event::TickStart {
                time: self.ns(time),
                tick,
            },
            Event::TickEnd {
                time,
                tick,
                overrun,
            } => Event::TickEnd {
                time: self.ns(time),
                tick,
                overrun,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{each_frame, nested_stream};

    fn restarts(streams: &[Vec<u8>]) -> usize {
        let mut reader = Reader::default();
        let mut restarts = 0;
        for stream in streams {
            reader.reconnected();
            each_frame(stream, |frame| {
                reader
                    .read(frame, 0, |update| {
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
        let mut model = crate::model::Model::default();
        let mut writer = typhon_live_perfetto::TraceWriter::new();
        let mut out = Vec::new();
        for stream in streams {
            model.reconnected();
            each_frame(stream, |frame| {
                let _ = model.on_frame(frame);
                let _ = writer.frame(frame, &mut out);
            });
        }
        [
            restarts(streams),
            model.restarts as usize,
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
        use typhon_live_core::{LaneKind, OpenLane as Listed};
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
                .read(frame, 0, |update| {
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
