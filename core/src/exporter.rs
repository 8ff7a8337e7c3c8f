//! The sans-IO exporter: the protocol state machine every transport drives.
//!
//! One event source, several readers. The exporter drains the lanes into
//! Blocks once; everything that depends on what a reader has received is
//! kept per reader ([`ReaderId`]): its sequence numbers, which names and
//! lanes it has been told, the drops it has not yet been told about, its
//! Catch-up schedule and its totals. A trace file and a live viewer fed by
//! one exporter are two readers: a frame the viewer missed is a gap and a
//! drop report in the viewer's stream only, and a name the viewer's Init
//! carried is still defined again for the file. The alternative, one
//! stream state that a transport copies to several sinks, cannot keep
//! those apart: whatever one sink missed or was told, the other is assumed
//! to have missed or been told too.
//!
//! The transport tells it what happens ("a reader attached", "drain now",
//! "stop") and asks [`Exporter::poll`] for frames, one per call, each for
//! one reader ([`Emitted::reader`]), into its own buffer, until `poll`
//! answers `None`. After trying to send a frame it may report
//! [`Exporter::frame_dropped`], before the next `poll`; counters and
//! sequence numbers then stay true and nothing that must not be lost is.
//!
//! Each reader's Block differs from another's only in its sequence number
//! and drop entries; given an encoding buffer
//! ([`Exporter::set_encoding_buffer`]) the exporter packs a Block's events
//! once, compresses them once if told to ([`Exporter::set_compression`]),
//! and frames the same bytes for every reader, so a second reader costs a
//! copy, not a second encode.
//!
//! Order guaranteed on each reader's stream: Init first; Definitions before
//! the first Block or Catch-up that uses a name or lane they define; a
//! Catch-up after each Init, before any Block, and then once per catch-up
//! interval of the host clock; Shutdown last.
//!
//! Log texts go in Text frames that the transport asks for with
//! [`Exporter::write_texts`] once `poll` is done, one per reader.
//!
//! Dropping: Block, Catch-up and Text may be dropped. Init, Definitions and
//! Shutdown must not be; if a transport reports one dropped anyway, the
//! exporter writes it again (a Definitions or Shutdown gets a new sequence
//! number, so the reader sees a gap but still learns every name).
//!
//! Drop reports never make frames of their own faster than the drains do:
//! a reader's losses ride on the next Block it is handed, and a Block that
//! carries nothing but drop counts is written at most once per drain pass
//! for each reader. A reader that drops everything therefore costs one
//! sequence number per Block the events make, not one per poll.

use defmt_or_log::{debug, warn};

use crate::block::{
    encode_events, encoding_buffer_len, max_block_frame_len, max_compressed_block_frame_len,
    write_block, write_block_encoded, BlockBuilder, Encoded,
};
use crate::catchup::write_catchup;
use crate::codec::{Compression, Lz4Table};
use crate::definitions::{write_definitions, write_stack_definitions, StackRanges};
use crate::error::EncodeError;
use crate::event::LaneId;
use crate::frame::FrameKind;
use crate::init::{write_init, Metadata};
use crate::lane::Lanes;
use crate::modules::MAX_MODULES;
use crate::names::NameSource;
use crate::samples::{write_samples, SamplesBatch};
use crate::shutdown::Shutdown;
use crate::stacks::{MAX_NODES_PER_FRAME, MAX_SYMBOLS_PER_FRAME};
use crate::text::{write_texts, TextBatch};

/// One reader of an exporter: a slot from [`Exporter::attach`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReaderId(u8);

impl ReaderId {
    /// Slot 0: what the first [`Exporter::attach`] of a new exporter gives.
    pub const FIRST: ReaderId = ReaderId(0);

    /// The slot's index, below the exporter's reader count.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// What [`Exporter::poll`] wrote into the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Emitted {
    /// The reader this frame is for; no other reader may be sent it.
    pub reader: ReaderId,
    /// Kind of the frame.
    pub kind: FrameKind,
    /// Its sequence number in the reader's stream (for Init: the next
    /// frame's).
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
    reader: usize,
    kind: FrameKind,
    /// A Block's events; a Text frame's texts and the losses it told.
    events: u32,
    /// A Definitions frame's: what the reader had been told before it.
    told_before: Told,
}

/// What a reader has been told of the definitions: the names and stack
/// nodes below these counts, the frame symbols before this one, the lane
/// table of this epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Told {
    names: u32,
    lanes: Option<u32>,
    nodes: u32,
    symbols: u32,
    modules: u32,
}

impl Told {
    /// What a source holds now: every name and lane, and of its stacks
    /// only as many as one frame carries after what was told (the rest
    /// follow in Definitions frames of their own).
    fn now<const L: usize, const N: usize>(
        &self,
        names: &impl NameSource,
        lanes: &Lanes<L, N>,
    ) -> Told {
        Told {
            names: names.count(),
            lanes: Some(lanes.epoch()),
            nodes: (names.stack_node_count()).min(self.nodes.saturating_add(MAX_NODES_PER_FRAME)),
            symbols: (names.frame_symbol_count())
                .min(self.symbols.saturating_add(MAX_SYMBOLS_PER_FRAME)),
            // A session maps at most a frame's worth.
            modules: names.module_count().min(MAX_MODULES),
        }
    }
}

/// One reader's running totals, as its Shutdown reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Totals {
    /// Sequenced frames handed out for this reader.
    pub frames_emitted: u64,
    /// Of those, frames reported dropped.
    pub frames_dropped: u64,
    /// Events this reader will never see: refused by full rings while it
    /// was attached, or inside Blocks dropped on its way.
    pub events_dropped: u64,
}

/// What the exporter knows about one reader's stream.
#[derive(Clone, Copy)]
struct Reader<const L: usize> {
    attached: bool,
    need_init: bool,
    seq: u32,
    told: Told,
    last_catchup: Option<u64>,
    /// It has yet to be handed the ready Block.
    owes_block: bool,
    /// A drain pass ended since its last Block: one drop-only Block may go.
    may_report_drops: bool,
    shutdown_sent: bool,
    /// Per lane: events lost to it and not yet in a Block it received.
    pending_drops: [u32; L],
    /// Per lane: events plus drops of the last Block handed to it.
    in_flight: [u32; L],
    /// Texts lost to it and not yet told in a Text frame it received.
    texts_lost: u32,
    totals: Totals,
}

impl<const L: usize> Reader<L> {
    const DETACHED: Self = Reader {
        attached: false,
        need_init: false,
        seq: 0,
        told: Told {
            names: 0,
            lanes: None,
            nodes: 0,
            symbols: 0,
            modules: 0,
        },
        last_catchup: None,
        owes_block: false,
        may_report_drops: false,
        shutdown_sent: false,
        pending_drops: [0; L],
        in_flight: [0; L],
        texts_lost: 0,
        totals: Totals {
            frames_emitted: 0,
            frames_dropped: 0,
            events_dropped: 0,
        },
    };

    fn has_pending_drops(&self) -> bool {
        self.pending_drops.iter().any(|&d| d > 0)
    }
}

/// The protocol state machine for one event source with `L` lane slots,
/// serving up to `R` readers (one by default).
pub struct Exporter<'a, const L: usize, const R: usize = 1> {
    meta: Metadata<'a>,
    block: BlockBuilder<'a>,
    /// Per lane: events in `block`.
    block_lanes: [u32; L],
    block_ready: bool,
    /// The last fill stopped because the Block had no more room.
    block_full: bool,
    /// Host time at which the open Block got its first event.
    block_opened: Option<u64>,
    /// Where the ready Block's events are encoded once for every reader
    /// ([`Exporter::set_encoding_buffer`]), and where they lie once encoded.
    work: Option<&'a mut [u8]>,
    encoded: Option<Encoded>,
    compression: Compression,
    lz4: Option<&'a mut Lz4Table>,
    /// How long a Block may stay open collecting drains; 0 closes it after
    /// every drain pass.
    block_max_age: u64,
    /// Per lane: events still to take in the current drain pass.
    budget: [u32; L],
    draining: bool,
    drain_requested: bool,
    readers: [Reader<L>; R],
    catchup_interval: u64,
    now: u64,
    stopping: bool,
    finished: bool,
    last: Option<Last>,
    events_refused: u64,
    events_discarded: u64,
}

impl<'a, const L: usize, const R: usize> Exporter<'a, L, R> {
    /// An exporter with nobody attached. `scratch` holds one Block's
    /// events and so bounds the Block size; a Catch-up is due
    /// every `meta.ticks_per_second` ticks (about once a second).
    pub fn new(meta: Metadata<'a>, scratch: &'a mut [u8]) -> Self {
        const { assert!(R >= 1 && R <= 256, "an exporter serves 1 to 256 readers") };
        Exporter {
            meta,
            block: BlockBuilder::new(scratch),
            block_lanes: [0; L],
            block_ready: false,
            block_full: false,
            block_opened: None,
            work: None,
            encoded: None,
            compression: Compression::Off,
            lz4: None,
            block_max_age: 0,
            budget: [0; L],
            draining: false,
            drain_requested: false,
            readers: [Reader::DETACHED; R],
            catchup_interval: meta.ticks_per_second.max(1),
            now: 0,
            stopping: false,
            finished: false,
            last: None,
            events_refused: 0,
            events_discarded: 0,
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

    /// Encodes each Block's events once into `buffer` (packed, then
    /// compressed when [`Exporter::set_compression`] says so) and frames
    /// the same bytes for every reader: packing is most of a Block's cost.
    /// Without it, Blocks are packed straight into each reader's frame and
    /// never compressed. [`Exporter::encoding_buffer_len`] bytes always
    /// suffice; a Block that does not fit a smaller buffer goes out packed,
    /// for each reader.
    pub fn set_encoding_buffer(&mut self, buffer: &'a mut [u8]) {
        self.work = Some(buffer);
        self.encoded = None;
    }

    /// Compresses Blocks per `compression` with `table` (needs an encoding
    /// buffer). `Off`, the default, needs neither.
    pub fn set_compression(&mut self, compression: Compression, table: &'a mut Lz4Table) {
        self.compression = compression;
        self.lz4 = Some(table);
    }

    /// The compression setting.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The encoding buffer this exporter's Blocks need with its compression
    /// setting.
    pub fn encoding_buffer_len(&self) -> usize {
        encoding_buffer_len(self.block.capacity(), self.compression)
    }

    /// The smallest output buffer that any Block this exporter writes fits.
    /// Init and Definitions grow with the name table: size for those too.
    pub fn min_block_buffer(&self) -> usize {
        match self.compression {
            // LZ4 forced on incompressible events is a little larger.
            Compression::Lz4 => max_compressed_block_frame_len(self.block.capacity(), L),
            Compression::Off | Compression::Auto => max_block_frame_len(self.block.capacity(), L),
        }
    }

    /// A reader attached: it gets a free slot, whose stream starts with an
    /// Init at sequence number 0 and then follows the events drained from
    /// now on. `None` when all `R` slots are taken.
    pub fn attach(&mut self) -> Option<ReaderId> {
        let index = self.readers.iter().position(|r| !r.attached)?;
        debug!("reader {} attached", index);
        self.readers[index] = Reader {
            attached: true,
            need_init: true,
            ..Reader::DETACHED
        };
        self.forget_last(index);
        Some(ReaderId(index as u8))
    }

    /// The reader starts over, as if it had just connected: its next frame
    /// is an Init with every name and lane, then a Catch-up. Its sequence
    /// numbers and totals go on. For links with no moment of connection
    /// (a serial port), where a reader may start listening at any time.
    pub fn restart(&mut self, reader: ReaderId) {
        let index = reader.index();
        if let Some(r) = self.readers.get_mut(index).filter(|r| r.attached) {
            r.need_init = true;
            r.told = Told::default();
            r.last_catchup = None;
            self.forget_last(index);
        }
    }

    /// The reader went away; its slot is free for the next
    /// [`Exporter::attach`]. Events drained while no reader is attached are
    /// discarded.
    pub fn detach(&mut self, reader: ReaderId) {
        let index = reader.index();
        if let Some(r) = self.readers.get_mut(index) {
            *r = Reader::DETACHED;
            self.forget_last(index);
        }
    }

    /// A drop report after this can no longer be about that reader's frame.
    fn forget_last(&mut self, index: usize) {
        if self.last.is_some_and(|last| last.reader == index) {
            self.last = None;
        }
    }

    /// Whether `reader` is attached.
    pub fn is_attached(&self, reader: ReaderId) -> bool {
        self.readers.get(reader.index()).is_some_and(|r| r.attached)
    }

    /// Drain every lane at the next poll: the events waiting at that moment
    /// go out in as many Blocks as they need.
    pub fn request_drain(&mut self) {
        self.drain_requested = true;
    }

    /// End the session: drain what is left, then a Shutdown to each reader.
    pub fn stop(&mut self) {
        self.stopping = true;
        self.drain_requested = true;
    }

    /// Whether the session is over: every attached reader was handed its
    /// Shutdown (or, with none attached, the last drain is done).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// `reader`'s counters so far (zero for a slot that is not attached).
    pub fn totals(&self, reader: ReaderId) -> Totals {
        self.readers
            .get(reader.index())
            .map_or(Totals::default(), |r| r.totals)
    }

    /// Events refused by full rings, since the start, whoever was attached.
    pub fn events_refused(&self) -> u64 {
        self.events_refused
    }

    /// Events drained while no reader was attached (discarded by design).
    pub fn events_discarded(&self) -> u64 {
        self.events_discarded
    }

    /// The sequence number `reader`'s next sequenced frame will carry.
    pub fn next_seq(&self, reader: ReaderId) -> u32 {
        self.readers.get(reader.index()).map_or(0, |r| r.seq)
    }

    /// The transport could not send the last frame `poll` handed out. Must
    /// come before the next `poll`; returns `false` if there is no such frame.
    pub fn frame_dropped(&mut self) -> bool {
        let Some(last) = self.last.take() else {
            return false;
        };
        let Some(reader) = self.readers.get_mut(last.reader) else {
            return false;
        };
        if last.kind.is_sequenced() {
            reader.totals.frames_dropped += 1;
        }
        if !last.kind.is_droppable() {
            warn!(
                "a frame that must not be dropped was dropped (kind {}); writing it again",
                last.kind.to_byte()
            );
        }
        match last.kind {
            FrameKind::Init => reader.need_init = true,
            FrameKind::Block => {
                // Told again in a later Block; a drop-only one waits for the
                // next drain pass, so a reader that drops everything cannot
                // make the exporter spin.
                reader.totals.events_dropped += u64::from(last.events);
                for (pending, carried) in reader.pending_drops.iter_mut().zip(&reader.in_flight) {
                    *pending = pending.saturating_add(*carried);
                }
            }
            FrameKind::Definitions => reader.told = last.told_before,
            // Counters are cumulative: the next Samples frame makes good.
            FrameKind::CatchUp | FrameKind::Samples => {}
            // Its texts, and the losses it told, are told in the next one.
            FrameKind::Text => reader.texts_lost = reader.texts_lost.saturating_add(last.events),
            FrameKind::Shutdown => {
                reader.shutdown_sent = false;
                self.finished = false;
            }
        }
        true
    }

    /// Books a frame handed to reader `index`.
    fn emitted(&mut self, index: usize, kind: FrameKind, len: usize, events: u32) -> Emitted {
        self.emitted_undoable(index, kind, len, events, Told::default())
    }

    /// Books a frame, keeping what a drop report must restore (what the
    /// reader had been told before a Definitions frame).
    fn emitted_undoable(
        &mut self,
        index: usize,
        kind: FrameKind,
        len: usize,
        events: u32,
        told_before: Told,
    ) -> Emitted {
        let reader = &mut self.readers[index];
        let seq = reader.seq;
        if kind.is_sequenced() {
            reader.seq = reader.seq.wrapping_add(1);
            reader.totals.frames_emitted += 1;
        }
        self.last = Some(Last {
            reader: index,
            kind,
            events,
            told_before,
        });
        Emitted {
            reader: ReaderId(index as u8),
            kind,
            seq,
            len,
            events,
        }
    }

    /// `count` texts never reached the writer's queue (it was full): every
    /// attached reader is told in its next Text frame.
    pub fn texts_refused(&mut self, count: u32) {
        for reader in self.readers.iter_mut().filter(|r| r.attached) {
            reader.texts_lost = reader.texts_lost.saturating_add(count);
        }
    }

    /// Writes `batch` as a Text frame for `reader`, with the texts it lost
    /// since its last one; `None` (nothing written) when the reader is not
    /// attached, has not had its Init, has had its Shutdown, or has neither
    /// texts nor losses to be told. Call it only once [`Exporter::poll`]
    /// has answered `None` since the texts' names and lanes existed: then
    /// the reader has been told them. A Text frame reported dropped is
    /// told as lost in the next. On `Err` nothing was consumed.
    pub fn write_texts(
        &mut self,
        reader: ReaderId,
        batch: &TextBatch<'_>,
        out: &mut [u8],
    ) -> Result<Option<Emitted>, EncodeError> {
        let index = reader.index();
        let Some(r) = self.readers.get(index) else {
            return Ok(None);
        };
        if !r.attached || r.need_init || r.shutdown_sent || (batch.is_empty() && r.texts_lost == 0)
        {
            return Ok(None);
        }
        let lost = r.texts_lost;
        let len = write_texts(out, r.seq, lost, batch)?;
        self.readers[index].texts_lost = 0;
        let emitted = self.emitted(index, FrameKind::Text, len, 0);
        if let Some(last) = &mut self.last {
            // What a drop report puts back: the texts and the losses told.
            last.events = (batch.len() as u32).saturating_add(lost);
        }
        Ok(Some(emitted))
    }

    /// Writes a Samples frame of `batch` for `reader` (FORMAT.md,
    /// "Samples"); `None` (nothing written) when the reader is not
    /// attached, has not had its Init, or has had its Shutdown. Call it
    /// once [`Exporter::poll`] has answered `None` since the lanes were
    /// claimed and its sites' frame names interned, as for
    /// [`Exporter::write_texts`]. A Samples frame reported
    /// dropped is not written again: its counters are in the next. On
    /// `Err` nothing was consumed.
    pub fn write_samples(
        &mut self,
        reader: ReaderId,
        batch: &SamplesBatch<'_>,
        out: &mut [u8],
    ) -> Result<Option<Emitted>, EncodeError> {
        let index = reader.index();
        let Some(r) = self.readers.get(index) else {
            return Ok(None);
        };
        if !r.attached || r.need_init || r.shutdown_sent {
            return Ok(None);
        }
        let len = write_samples(out, r.seq, batch)?;
        Ok(Some(self.emitted(index, FrameKind::Samples, len, 0)))
    }

    /// Writes the next due frame into `out`, or returns `None` when nothing
    /// is due for any reader. `now` is the host clock. On `Err` nothing was
    /// consumed: call again with a larger buffer.
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
        for index in 0..R {
            if self.readers[index].attached && self.readers[index].need_init {
                let told = Told::default().now(names, lanes);
                let seq = self.readers[index].seq;
                let len = write_init(out, seq, &self.meta, names, lanes.iter())?;
                let reader = &mut self.readers[index];
                reader.need_init = false;
                reader.told = told;
                return Ok(Some(self.emitted(index, FrameKind::Init, len, 0)));
            }
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
            if !self.block_ready && !self.draining && self.block_should_close() {
                self.close_block();
            }
            for index in 0..R {
                if self.readers[index].attached {
                    if let Some(emitted) = self.poll_reader(index, lanes, names, out)? {
                        return Ok(Some(emitted));
                    }
                }
            }
            if self.block_ready {
                // Every attached reader has it (or nobody was attached).
                if !self.readers.iter().any(|r| r.attached) {
                    self.events_discarded += u64::from(self.block.records());
                }
                self.clear_block();
                continue;
            }
            let drained = !self.draining && !self.drain_requested;
            if self.stopping && drained {
                self.finished = self.readers.iter().all(|r| !r.attached || r.shutdown_sent);
            }
            return Ok(None);
        }
    }

    /// The next frame due for reader `index`, if any.
    fn poll_reader<const N: usize>(
        &mut self,
        index: usize,
        lanes: &Lanes<L, N>,
        names: &impl NameSource,
        out: &mut [u8],
    ) -> Result<Option<Emitted>, EncodeError> {
        let reader = self.readers[index];
        if reader.shutdown_sent {
            return Ok(None);
        }
        let (told, now) = (reader.told, reader.told.now(names, lanes));
        if now != told {
            // Names and lanes first: a frame symbol names frames by them.
            let len = if (now.names, now.lanes) != (told.names, told.lanes) {
                let len = write_definitions(out, reader.seq, names, told.names, lanes.iter())?;
                self.readers[index].told = Told {
                    names: now.names,
                    lanes: now.lanes,
                    ..told
                };
                len
            } else {
                let ranges = StackRanges {
                    nodes: told.nodes..now.nodes,
                    symbols: told.symbols..now.symbols,
                    modules: told.modules..now.modules,
                };
                let len = write_stack_definitions(out, reader.seq, names, ranges)?;
                self.readers[index].told = now;
                len
            };
            return Ok(Some(self.emitted_undoable(
                index,
                FrameKind::Definitions,
                len,
                0,
                told,
            )));
        }
        // The Catch-up after an Init comes before any Block: a reader that
        // joined has its lanes' names and open spans at once.
        if reader.last_catchup.is_none() && !self.stopping {
            return self.catch_up(index, lanes, names, out).map(Some);
        }
        let drop_report =
            self.block.is_empty() && reader.may_report_drops && reader.has_pending_drops();
        if reader.owes_block || drop_report {
            // At most one entry per lane: never full.
            let drops: heapless::Vec<(LaneId, u32), L> = (reader.pending_drops.iter().enumerate())
                .filter(|&(_, &dropped)| dropped > 0)
                .map(|(id, &dropped)| (id as LaneId, dropped))
                .collect();
            // One reader and no compression: packed straight into its
            // frame, saving a copy.
            let encode = reader.owes_block
                && (self.compression != Compression::Off
                    || self.readers.iter().filter(|r| r.attached).count() > 1);
            if let (true, Some(work), None) = (encode, self.work.as_deref_mut(), self.encoded) {
                let table = self.lz4.as_deref_mut();
                self.encoded = encode_events(work, &self.block, self.compression, table).ok();
            }
            let encoded = self.work.as_deref().zip(self.encoded);
            let len = match encoded {
                Some((work, encoded)) if encode => {
                    write_block_encoded(out, reader.seq, &self.block, &drops, encoded, work)?
                }
                _ => write_block(out, reader.seq, &self.block, &drops)?,
            };
            let r = &mut self.readers[index];
            for ((carried, in_block), dropped) in r
                .in_flight
                .iter_mut()
                .zip(&self.block_lanes)
                .zip(&reader.pending_drops)
            {
                *carried = in_block.saturating_add(*dropped);
            }
            r.pending_drops = [0; L];
            r.owes_block = false;
            r.may_report_drops = false;
            let events = self.block.records();
            return Ok(Some(self.emitted(index, FrameKind::Block, len, events)));
        }
        let catchup_due = reader
            .last_catchup
            .is_none_or(|at| self.now.saturating_sub(at) >= self.catchup_interval);
        if catchup_due && !self.stopping {
            return self.catch_up(index, lanes, names, out).map(Some);
        }
        if self.stopping && !self.draining && !self.drain_requested && !self.block_ready {
            let shutdown = Shutdown {
                time: self.now,
                frames_sent: reader
                    .totals
                    .frames_emitted
                    .saturating_sub(reader.totals.frames_dropped),
                frames_dropped: reader.totals.frames_dropped,
                events_dropped: reader.totals.events_dropped,
            };
            let len = shutdown.write(out, reader.seq)?;
            self.readers[index].shutdown_sent = true;
            return Ok(Some(self.emitted(index, FrameKind::Shutdown, len, 0)));
        }
        Ok(None)
    }

    /// A Catch-up for reader `index`, at the latest host time polled.
    fn catch_up<const N: usize>(
        &mut self,
        index: usize,
        lanes: &Lanes<L, N>,
        names: &impl NameSource,
        out: &mut [u8],
    ) -> Result<Emitted, EncodeError> {
        let reader = &self.readers[index];
        let len = write_catchup(out, reader.seq, self.now, reader.told.names, lanes, names)?;
        self.readers[index].last_catchup = Some(self.now);
        Ok(self.emitted(index, FrameKind::CatchUp, len, 0))
    }

    /// The Block collected so far goes out: each attached reader is owed it.
    fn close_block(&mut self) {
        self.block_ready = true;
        for reader in self.readers.iter_mut().filter(|r| r.attached) {
            reader.owes_block = true;
        }
    }

    fn clear_block(&mut self) {
        self.block.clear();
        self.encoded = None;
        self.block_lanes = [0; L];
        self.block_ready = false;
        self.block_full = false;
        self.block_opened = None;
    }

    /// Whether the Block collected so far goes out now.
    fn block_should_close(&self) -> bool {
        if self.block.is_empty() {
            // Drop counts alone go in a drop-only Block, paced per reader.
            return false;
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
            if dropped == 0 {
                continue;
            }
            self.events_refused += u64::from(dropped);
            for reader in self.readers.iter_mut().filter(|r| r.attached) {
                reader.pending_drops[id] = reader.pending_drops[id].saturating_add(dropped);
                reader.totals.events_dropped += u64::from(dropped);
            }
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
            self.close_block();
        } else {
            self.draining = false;
            for reader in &mut self.readers {
                reader.may_report_drops = true;
            }
        }
    }
}
