//! The sans-IO exporter: the protocol state machine every transport drives.
//!
//! The transport tells it what happens ("a viewer attached", "drain now",
//! "stop") and asks [`Exporter::poll`] for frames, one per call, into its own
//! buffer, until `poll` answers `None`. After trying to send a frame it may
//! report [`Exporter::frame_dropped`], before the next `poll`; counters and
//! sequence numbers then stay true and nothing that must not be lost is.
//!
//! Order guaranteed on a stream: Init first; Definitions before the first
//! Block that uses a name or lane they define; a Catch-up right after Init
//! and then once per catch-up interval of the host clock; Shutdown last.
//!
//! Dropping: Block and Catch-up may be dropped. Init, Definitions and
//! Shutdown must not be; if a transport reports one dropped anyway, the
//! exporter writes it again (a Definitions gets a new sequence number, so
//! the reader sees a gap but still learns every name).

use defmt_or_log::{debug, warn};

use crate::block::{max_block_frame_len, write_block, BlockBuilder};
use crate::catchup::write_catchup;
use crate::definitions::write_definitions;
use crate::error::EncodeError;
use crate::event::LaneId;
use crate::frame::FrameKind;
use crate::init::{write_init, Metadata};
use crate::lane::Lanes;
use crate::names::NameSource;
use crate::shutdown::Shutdown;

/// What [`Exporter::poll`] wrote into the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Emitted {
    /// Kind of the frame.
    pub kind: FrameKind,
    /// Its sequence number (for Init: the next frame's).
    pub seq: u32,
    /// Bytes written at the start of the buffer.
    pub len: usize,
    /// Events it carries (Blocks only).
    pub events: u32,
}

/// The last frame handed out, kept until the next poll so that a drop
/// report can be undone exactly.
#[derive(Clone, Copy)]
struct Last {
    kind: FrameKind,
    events: u32,
    names_before: u32,
    lanes_before: Option<u32>,
}

/// Running totals, as Shutdown reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Totals {
    /// Sequenced frames handed out.
    pub frames_emitted: u64,
    /// Sequenced frames reported dropped.
    pub frames_dropped: u64,
    /// Events refused by full rings or lost in dropped Blocks.
    pub events_dropped: u64,
    /// Events drained while no reader was attached (discarded by design).
    pub events_discarded: u64,
}

/// The protocol state machine for one stream with `L` lane slots.
pub struct Exporter<'a, const L: usize> {
    meta: Metadata<'a>,
    block: BlockBuilder<'a>,
    /// Per lane: events in `block` plus drops it carries.
    block_lanes: [u32; L],
    block_ready: bool,
    /// The last fill stopped because the Block had no more room.
    block_full: bool,
    /// Host time at which the open Block got its first event.
    block_opened: Option<u64>,
    /// How long a Block may stay open collecting drains; 0 closes it after
    /// every drain pass.
    block_max_age: u64,
    /// Per lane: events still to take in the current drain pass.
    budget: [u32; L],
    draining: bool,
    drain_requested: bool,
    /// Ring drops taken and not yet in a delivered Block.
    pending_drops: [u32; L],
    /// `block_lanes` of the last Block handed out.
    in_flight: [u32; L],
    seq: u32,
    attached: bool,
    need_init: bool,
    names_sent: u32,
    lanes_sent: Option<u32>,
    catchup_interval: u64,
    last_catchup: Option<u64>,
    now: u64,
    stopping: bool,
    finished: bool,
    last: Option<Last>,
    totals: Totals,
}

impl<'a, const L: usize> Exporter<'a, L> {
    /// An exporter with nobody attached. `scratch` holds one Block's
    /// events and so bounds the Block size; a Catch-up is due
    /// every `meta.ticks_per_second` ticks (about once a second).
    pub fn new(meta: Metadata<'a>, scratch: &'a mut [u8]) -> Self {
        Exporter {
            meta,
            block: BlockBuilder::new(scratch),
            block_lanes: [0; L],
            block_ready: false,
            block_full: false,
            block_opened: None,
            block_max_age: 0,
            budget: [0; L],
            draining: false,
            drain_requested: false,
            pending_drops: [0; L],
            in_flight: [0; L],
            seq: 0,
            attached: false,
            need_init: false,
            names_sent: 0,
            lanes_sent: None,
            catchup_interval: meta.ticks_per_second.max(1),
            last_catchup: None,
            now: 0,
            stopping: false,
            finished: false,
            last: None,
            totals: Totals::default(),
        }
    }

    /// Lets a Block collect the events of several drain passes for up to
    /// `ticks` of host time (or until it is full) before it is written:
    /// fewer, larger Blocks compress better and amortise the frame overhead,
    /// at the price of that much latency. 0 (the default) writes a Block
    /// after every drain pass.
    pub fn set_block_max_age(&mut self, ticks: u64) {
        self.block_max_age = ticks;
    }

    /// Sets the catch-up period in host clock ticks.
    pub fn set_catchup_interval(&mut self, ticks: u64) {
        self.catchup_interval = ticks.max(1);
    }

    /// The smallest output buffer that any Block this exporter writes fits.
    /// Init and Definitions grow with the name table: size for those too.
    pub fn min_block_buffer(&self) -> usize {
        max_block_frame_len(self.block.capacity(), L)
    }

    /// A reader attached: the next frame is an Init for it.
    pub fn attach(&mut self) {
        debug!("reader attached at seq {}", self.seq);
        self.attached = true;
        self.need_init = true;
        self.names_sent = 0;
        self.lanes_sent = None;
        self.last_catchup = None;
        self.last = None;
    }

    /// The reader went away: drained events are discarded until the next
    /// [`Exporter::attach`].
    pub fn detach(&mut self) {
        self.attached = false;
        self.need_init = false;
        self.last = None;
    }

    /// Whether a reader is attached.
    pub fn is_attached(&self) -> bool {
        self.attached
    }

    /// Drain every lane at the next poll: the events waiting at that moment
    /// go out in as many Blocks as they need.
    pub fn request_drain(&mut self) {
        self.drain_requested = true;
    }

    /// End the session: drain what is left, then a Shutdown.
    pub fn stop(&mut self) {
        self.stopping = true;
        self.drain_requested = true;
    }

    /// Whether the session is over (Shutdown handed out, or stopped detached).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Counters so far.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// The sequence number the next sequenced frame will carry.
    pub fn next_seq(&self) -> u32 {
        self.seq
    }

    /// The transport could not send the last frame `poll` handed out. Must
    /// come before the next `poll`; returns `false` if there is no such frame.
    pub fn frame_dropped(&mut self) -> bool {
        let Some(last) = self.last.take() else {
            return false;
        };
        if last.kind.is_sequenced() {
            self.totals.frames_dropped += 1;
        }
        if !last.kind.is_droppable() {
            warn!(
                "a frame that must not be dropped was dropped (kind {}); writing it again",
                last.kind.to_byte()
            );
        }
        match last.kind {
            FrameKind::Init => self.need_init = true,
            FrameKind::Block => {
                self.totals.events_dropped += u64::from(last.events);
                for (pending, carried) in self.pending_drops.iter_mut().zip(&self.in_flight) {
                    *pending = pending.saturating_add(*carried);
                }
            }
            FrameKind::Definitions => {
                self.names_sent = last.names_before;
                self.lanes_sent = last.lanes_before;
            }
            FrameKind::CatchUp => {}
            FrameKind::Shutdown => self.finished = false,
        }
        true
    }

    fn emitted(
        &mut self,
        kind: FrameKind,
        len: usize,
        events: u32,
        names_before: u32,
        lanes_before: Option<u32>,
    ) -> Emitted {
        let seq = self.seq;
        if kind.is_sequenced() {
            self.seq = self.seq.wrapping_add(1);
            self.totals.frames_emitted += 1;
        }
        self.last = Some(Last {
            kind,
            events,
            names_before,
            lanes_before,
        });
        Emitted {
            kind,
            seq,
            len,
            events,
        }
    }

    /// Writes the next due frame into `out`, or returns `None` when nothing
    /// is due. `now` is the host clock. On `Err` nothing was consumed: call
    /// again with a larger buffer.
    pub fn poll<const N: usize>(
        &mut self,
        now: u64,
        lanes: &Lanes<L, N>,
        names: &impl NameSource,
        out: &mut [u8],
    ) -> Result<Option<Emitted>, EncodeError> {
        self.now = self.now.max(now);
        self.last = None;
        if self.finished {
            return Ok(None);
        }
        if self.attached && self.need_init {
            let names_count = names.count();
            let epoch = lanes.epoch();
            let len = write_init(out, self.seq, &self.meta, names, lanes.iter())?;
            self.need_init = false;
            self.names_sent = names_count;
            self.lanes_sent = Some(epoch);
            return Ok(Some(self.emitted(FrameKind::Init, len, 0, 0, None)));
        }
        loop {
            if self.drain_requested && !self.block_ready {
                self.drain_requested = false;
                self.draining = true;
                for (id, budget) in self.budget.iter_mut().enumerate() {
                    *budget = lanes.pending(id as LaneId) as u32;
                }
            }
            if self.draining && !self.block_ready {
                self.fill_block(lanes);
            }
            if !self.block_ready && !self.draining {
                self.block_ready = self.block_should_close();
            }
            if self.attached {
                if let Some(emitted) = self.poll_attached(lanes, names, out)? {
                    return Ok(Some(emitted));
                }
            } else if self.block_ready {
                self.totals.events_discarded += u64::from(self.block.records());
                self.clear_block();
                self.pending_drops = [0; L];
                continue;
            }
            if self.stopping && !self.draining && !self.block_ready && !self.drain_requested {
                // Detached at stop: nobody to tell, the session just ends.
                self.finished = true;
            }
            return Ok(None);
        }
    }

    fn poll_attached<const N: usize>(
        &mut self,
        lanes: &Lanes<L, N>,
        names: &impl NameSource,
        out: &mut [u8],
    ) -> Result<Option<Emitted>, EncodeError> {
        let epoch = lanes.epoch();
        let names_count = names.count();
        if names_count > self.names_sent || self.lanes_sent != Some(epoch) {
            let len = write_definitions(out, self.seq, names, self.names_sent, lanes.iter())?;
            let (names_before, lanes_before) = (self.names_sent, self.lanes_sent);
            self.names_sent = names_count;
            self.lanes_sent = Some(epoch);
            return Ok(Some(self.emitted(
                FrameKind::Definitions,
                len,
                0,
                names_before,
                lanes_before,
            )));
        }
        if self.block_ready {
            let mut drops = [(0 as LaneId, 0u32); L];
            let mut count = 0;
            for (id, &dropped) in self.pending_drops.iter().enumerate() {
                if dropped > 0 {
                    drops[count] = (id as LaneId, dropped);
                    count += 1;
                }
            }
            let len = write_block(out, self.seq, &self.block, &drops[..count])?;
            for ((carried, in_block), dropped) in self
                .in_flight
                .iter_mut()
                .zip(&self.block_lanes)
                .zip(&self.pending_drops)
            {
                *carried = in_block.saturating_add(*dropped);
            }
            let events = self.block.records();
            self.pending_drops = [0; L];
            self.clear_block();
            return Ok(Some(self.emitted(FrameKind::Block, len, events, 0, None)));
        }
        let catchup_due = self
            .last_catchup
            .is_none_or(|at| self.now.saturating_sub(at) >= self.catchup_interval);
        if catchup_due && !self.stopping {
            let len = write_catchup(out, self.seq, self.now, lanes, names)?;
            self.last_catchup = Some(self.now);
            return Ok(Some(self.emitted(FrameKind::CatchUp, len, 0, 0, None)));
        }
        if self.stopping && !self.draining && !self.drain_requested {
            let shutdown = Shutdown {
                time: self.now,
                frames_sent: self
                    .totals
                    .frames_emitted
                    .saturating_sub(self.totals.frames_dropped),
                frames_dropped: self.totals.frames_dropped,
                events_dropped: self.totals.events_dropped,
            };
            let len = shutdown.write(out, self.seq)?;
            self.finished = true;
            return Ok(Some(self.emitted(FrameKind::Shutdown, len, 0, 0, None)));
        }
        Ok(None)
    }

    fn clear_block(&mut self) {
        self.block.clear();
        self.block_lanes = [0; L];
        self.block_ready = false;
        self.block_full = false;
        self.block_opened = None;
    }

    /// Whether the Block collected so far goes out now.
    fn block_should_close(&self) -> bool {
        if self.block.is_empty() {
            // Drop counts alone do not wait for events to join them.
            return self.pending_drops.iter().any(|&d| d > 0);
        }
        let aged = self
            .block_opened
            .is_some_and(|opened| self.now.saturating_sub(opened) >= self.block_max_age);
        self.block_full || self.stopping || aged
    }

    /// Moves events from the lanes into the Block until it is full (then it
    /// is ready) or the drain pass is done (then `block_should_close` says).
    fn fill_block<const N: usize>(&mut self, lanes: &Lanes<L, N>) {
        if self.block.is_empty() {
            // Only between Blocks: a slot freed here gets a new owner whose
            // events land in a later Block, after the Definitions naming it.
            for id in 0..L {
                lanes.retire_if_drained(id as LaneId);
            }
        }
        for id in 0..L {
            let dropped = lanes.take_dropped(id as LaneId);
            self.pending_drops[id] = self.pending_drops[id].saturating_add(dropped);
            self.totals.events_dropped += u64::from(dropped);
        }
        let mut full = false;
        for id in 0..L {
            let lane = id as LaneId;
            let budget = self.budget[id] as usize;
            if budget == 0 {
                continue;
            }
            let block = &mut self.block;
            let taken = lanes.drain(lane, budget, |event| {
                if !block.has_room(lane) {
                    full = true;
                    return false;
                }
                block.push(lane, &event)
            });
            self.block_lanes[id] += taken as u32;
            // A lane that had less than its budget (garbled records) is done.
            self.budget[id] = if full {
                self.budget[id] - taken as u32
            } else {
                0
            };
            if full {
                break;
            }
        }
        if !self.block.is_empty() && self.block_opened.is_none() {
            self.block_opened = Some(self.now);
        }
        self.block_full = full;
        if full {
            self.block_ready = true;
        } else {
            self.draining = false;
        }
    }
}
