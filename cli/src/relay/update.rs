//! A source's frames read once into owned [`Update`]s, which the metrics
//! and the merged stream both take: a source's stream is decoded once,
//! whoever needs it.

use typhon_live_core::{DecodeError, Event, Frame, LaneId, LaneInfo, NameId, Payload};
use typhon_live_std::BlockBuffer;

/// What a source's frame said.
#[derive(Clone, Debug, PartialEq)]
pub enum Update {
    /// An Init: a session (a new one when its id changed).
    Session {
        /// The session id.
        id: u64,
        /// Clock ticks per second of its times.
        ticks_per_second: u64,
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
    /// A Block's events, in the source's ticks.
    Events {
        /// `(lane, event)` in record order.
        events: Vec<(LaneId, Event)>,
        /// Events the source dropped before this Block, per lane.
        drops: Vec<(LaneId, u32)>,
        /// The Block's latest event end: the source's clock at most this
        /// late when it sent the Block.
        last_time: u64,
    },
    /// Frames missing before this one (a sequence gap).
    Gap {
        /// How many.
        frames: u64,
    },
}

/// Reads a source's frames into updates; one per connection (sequence
/// numbers start over with each).
#[derive(Default)]
pub struct Reader {
    expected_seq: Option<u32>,
    unpacked: BlockBuffer,
}

impl Reader {
    /// The updates of `frame`, handed to `take`: a gap first if frames
    /// are missing before it. An error names a payload that did not
    /// decode (a Block's events up to the bad one are handed on).
    pub fn read(
        &mut self,
        frame: &Frame<'_>,
        mut take: impl FnMut(Update),
    ) -> Result<(), DecodeError> {
        if frame.is_sequenced() {
            if let Some(expected) = self.expected_seq {
                let missing = frame.seq.wrapping_sub(expected);
                if missing > 0 {
                    take(Update::Gap {
                        frames: u64::from(missing),
                    });
                }
            }
            self.expected_seq = Some(frame.seq.wrapping_add(1));
        }
        if frame.kind().is_err() {
            // A newer writer's kind: nothing in it for us.
            return Ok(());
        }
        match frame.parse()? {
            Payload::Init(init) => {
                self.expected_seq = Some(init.next_seq);
                take(Update::Session {
                    id: init.session_id,
                    ticks_per_second: init.ticks_per_second.max(1),
                    names: init.names().map(|(id, n)| (id, n.to_owned())).collect(),
                    lanes: init.lanes().collect(),
                });
            }
            Payload::Definitions(defs) => take(Update::Definitions {
                names: defs.names().map(|(id, n)| (id, n.to_owned())).collect(),
                lanes: defs.lanes().collect(),
            }),
            Payload::Block(block) => {
                let mut events = Vec::with_capacity(block.records.min(1 << 16) as usize);
                let result = self.unpacked.events(&block).and_then(|iter| {
                    for item in iter {
                        events.push(item?);
                    }
                    Ok(())
                });
                take(Update::Events {
                    events,
                    drops: block.drops().collect(),
                    last_time: block.last_time,
                });
                result?;
            }
            Payload::CatchUp(_) | Payload::Shutdown(_) => {}
        }
        Ok(())
    }
}
