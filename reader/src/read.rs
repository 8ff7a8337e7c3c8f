//! [`Reader`]: frames in, [`Update`]s out, by the rules of FORMAT.md's
//! "Reading a stream".

use alloc::string::String;

use alloc::vec::Vec;
use typhon_live_core::catchup::begun_by;

use typhon_live_core::{
    BlockView, CatchUpView, DecodeError, Event, EventKinds, Frame, FrameSymbols, InitView,
    LaneInfo, Modules, Payload, RestartCheck, SamplesView, SequenceCheck, Shutdown, StackNodes,
    StackSample, TextsView, MAX_OPEN_SPANS,
};

use crate::block_buffer::BlockBuffer;
use crate::clock::Clock;
use crate::cpu::LastSamples;
use crate::names::Defined;
use crate::off_cpu::Paired;
use crate::stacks::Learnt;
use crate::state::{Session, State};
use crate::ticks::Tick;
use crate::update::{Loss, TextRecord, TotalsCheck, Update};

/// What a stream's frames say, read once by the one set of rules that
/// every consumer shares: the live view's model, `inspect`, the
/// converters and the relay.
///
/// Feed it each whole frame the decoder yields, in order, with
/// [`Reader::read`] (or [`Reader::read_at`] with the frame's arrival
/// time), and tell it of a new connection with [`Reader::reconnected`].
/// Its consumer gets each [`Update`] with the reader's [`State`] as of
/// that update. It reads no clock, and keeps at most what its caps
/// allow ([`MAX_NAMES`](crate::MAX_NAMES),
/// [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES),
/// [`MAX_LANES`](crate::MAX_LANES), [`MAX_OPEN_SPANS`]) whatever a peer
/// sends.
#[derive(Debug)]
pub struct Reader {
    state: State,
    sequence: SequenceCheck,
    restart: RestartCheck,
    unpacked: BlockBuffer,
    /// No frame was read on this connection yet.
    fresh: bool,
    /// Counts since the stream's first Init, for its Shutdown's totals.
    stream: Option<StreamCount>,
    /// The event kinds its consumer wants decoded ([`Reader::skim`]).
    wanted: EventKinds,
    /// Each lane's last Samples counters, to measure the next against.
    last_samples: LastSamples,
    /// It pairs switches into off-CPU slices ([`Reader::forward_switches`]).
    pairs_switches: bool,
}

/// What a reader saw of one stream since its first Init.
#[derive(Clone, Copy, Debug, Default)]
struct StreamCount {
    received: u64,
    missed: u64,
    dropped: u64,
}

impl Default for Reader {
    fn default() -> Self {
        Reader::new()
    }
}

impl Reader {
    /// A reader that has read nothing.
    pub fn new() -> Self {
        Reader {
            state: State::default(),
            sequence: SequenceCheck::new(),
            restart: RestartCheck::new(),
            unpacked: BlockBuffer::new(),
            fresh: true,
            stream: None,
            wanted: EventKinds::ALL,
            last_samples: LastSamples::default(),
            pairs_switches: true,
        }
    }

    /// From now on, hands on a Samples frame's switches as they are
    /// ([`Update::Switch`]) without pairing them: no [`Update::OffCpu`],
    /// nothing in [`State::off_cpu_open`], no off-CPU counts in the tally.
    /// For a consumer that forwards switches to readers that pair them
    /// (the relay, whose viewers do): pairing cost the relay 3.6 % more
    /// instructions on the demo's trace (`bench/scripts/relay-instructions`).
    pub fn forward_switches(&mut self) {
        self.pairs_switches = false;
        self.state.switched_out.forget(|_| false);
    }

    /// From now on, reads of each Block only the lane groups that hold an
    /// event of a kind in `wanted` ([`BlockEvents::skim`]); `ALL`, the
    /// default, reads every one. The events of the groups passed over are
    /// counted in the tally, and handed to no one.
    ///
    /// A span passed over does not strike itself from the open spans a
    /// Catch-up listed, so unless `wanted` holds [`EventKinds::SPAN`] and
    /// [`EventKinds::POLL`], [`State::lanes`]' open spans are exact only
    /// as a Catch-up (or an Init) leaves them: a flight recorder that
    /// watches ticks takes its checkpoints there.
    ///
    /// [`BlockEvents::skim`]: typhon_live_core::BlockEvents::skim
    pub fn skim(&mut self, wanted: EventKinds) {
        self.wanted = wanted;
    }

    /// What it knows.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// A new connection: its frames are numbered afresh, and the first
    /// time it states tells whether the process restarted meanwhile.
    pub fn reconnected(&mut self) {
        self.state.tally.reconnects += 1;
        self.sequence.reconnected();
        self.restart.arm();
        self.stream = None;
        self.fresh = true;
    }

    /// Reads `frame`, handing its updates to `take`. See [`Reader::read_at`].
    pub fn read(
        &mut self,
        frame: &Frame<'_>,
        take: impl FnMut(&State, Update<'_>),
    ) -> Result<(), DecodeError> {
        self.read_frame(frame, None, take)
    }

    /// Reads `frame`, which arrived at Unix time `received` (ns), handing
    /// its updates to `take` in the order the frame says them: a gap
    /// first if frames are missing before it.
    ///
    /// An error names a payload that broke a rule of the format: it was
    /// reported as [`Loss::Damaged`] (a Block's events before the fault
    /// were handed on) and the reader goes on with the next frame.
    pub fn read_at(
        &mut self,
        frame: &Frame<'_>,
        received: u64,
        take: impl FnMut(&State, Update<'_>),
    ) -> Result<(), DecodeError> {
        self.read_frame(frame, Some(received), take)
    }

    /// [`Reader::read_at`] of a frame its caller parsed already
    /// (`frame.parse()`), to look at its payload too without parsing it
    /// twice.
    pub fn read_parsed_at(
        &mut self,
        frame: &Frame<'_>,
        parsed: Result<Payload<'_>, DecodeError>,
        received: u64,
        take: impl FnMut(&State, Update<'_>),
    ) -> Result<(), DecodeError> {
        self.read_payload(frame, parsed, Some(received), take)
    }

    /// The packed events of `block`, which must be the Block this reader
    /// read last (a compressed Block's lie in the reader's buffer until
    /// the next one's are unpacked there).
    pub fn packed_events<'b, 'a: 'b>(&'b self, block: &BlockView<'a>) -> Option<&'b [u8]> {
        self.unpacked.packed(block)
    }

    /// The stream ended without a Shutdown (a file read to its end, a
    /// capture's window): the ticks still open are told as ticks without
    /// an end, as a Shutdown tells them, and the threads switched out are
    /// forgotten (their slices have no end). A reader that goes on reading
    /// afterwards reads on as before.
    pub fn ended(&mut self, mut take: impl FnMut(&State, Update<'_>)) {
        self.forget_open(|_| false, &mut take);
    }

    /// Whether it reads every kind of event ([`Reader::skim`] unset).
    pub fn reads_every_kind(&self) -> bool {
        self.wanted == EventKinds::ALL
    }

    fn read_frame(
        &mut self,
        frame: &Frame<'_>,
        received: Option<u64>,
        take: impl FnMut(&State, Update<'_>),
    ) -> Result<(), DecodeError> {
        self.read_payload(frame, frame.parse(), received, take)
    }

    fn read_payload(
        &mut self,
        frame: &Frame<'_>,
        parsed: Result<Payload<'_>, DecodeError>,
        received: Option<u64>,
        mut take: impl FnMut(&State, Update<'_>),
    ) -> Result<(), DecodeError> {
        let state = &mut self.state;
        state.tally.frames += 1;
        state.tally.bytes = state.tally.bytes.saturating_add(frame.wire_len() as u64);
        if core::mem::take(&mut self.fresh) && frame.skipped > 0 {
            take(
                state,
                Update::JoinedMidStream {
                    skipped: frame.skipped,
                },
            );
        }
        if frame.is_sequenced() {
            let missed = self.sequence.sequenced(frame.seq);
            self.gap(missed, &mut take);
            if self.state.session.is_none() {
                self.state.tally.frames_before_init += 1;
            }
        }
        if frame.kind().is_err() {
            self.state.tally.frames_unknown += 1;
            self.count_received();
            take(&self.state, Update::Unknown { kind: frame.kind });
            return Ok(());
        }
        let result = match parsed {
            Ok(Payload::Init(init)) => {
                self.init(&init, &mut take);
                Ok(())
            }
            Ok(Payload::Definitions(defs)) => {
                self.count_received();
                for (id, text) in defs.names() {
                    self.define(id, text, &mut take);
                }
                self.define_stacks(defs.stack_nodes(), defs.frame_symbols(), &mut take);
                self.map_modules(defs.modules(), &mut take);
                if let Some(lanes) = defs.lanes() {
                    self.set_lanes(lanes, &mut take);
                }
                Ok(())
            }
            Ok(Payload::CatchUp(catchup)) => {
                self.count_received();
                self.catch_up(&catchup, received, &mut take);
                Ok(())
            }
            Ok(Payload::Block(block)) => {
                self.count_received();
                self.block(&block, received, &mut take)
            }
            Ok(Payload::Shutdown(totals)) => {
                self.shutdown(totals, &mut take);
                Ok(())
            }
            Ok(Payload::Samples(samples)) => {
                self.count_received();
                self.samples(&samples, received, &mut take);
                Ok(())
            }
            Ok(Payload::Texts(texts)) => {
                self.count_received();
                self.texts(&texts, &mut take);
                Ok(())
            }
            Err(error) => {
                if frame.is_sequenced() {
                    self.count_received();
                }
                take(&self.state, Update::Lost(Loss::Damaged { events: 0 }));
                Err(error)
            }
        };
        if result.is_err() {
            self.state.tally.frames_damaged += 1;
        }
        result
    }

    fn gap(&mut self, missed: u32, take: &mut impl FnMut(&State, Update<'_>)) {
        if missed == 0 {
            return;
        }
        let frames = u64::from(missed);
        self.state.tally.frames_missed = self.state.tally.frames_missed.saturating_add(frames);
        if let Some(stream) = &mut self.stream {
            stream.missed = stream.missed.saturating_add(frames);
        }
        // The missing frames may have held a switch in: a thread
        // switched out is in doubt until its lane's next sample.
        self.state.switched_out.doubt();
        take(&self.state, Update::Lost(Loss::Gap { frames }));
    }

    fn count_received(&mut self) {
        if let Some(stream) = &mut self.stream {
            stream.received += 1;
        }
    }

    fn init(&mut self, init: &InitView<'_>, take: &mut impl FnMut(&State, Update<'_>)) {
        let missed = self.sequence.init(init.next_seq, init.session_id);
        let previous = self.state.session.as_ref().map(|s| s.id);
        if previous == Some(init.session_id) {
            // A reconnect, a device's repeated announcement, or a device
            // that rebooted with the same id: the next time read tells.
            self.restart.arm();
            self.gap(missed, take);
        } else {
            self.forget_open(|_| false, take);
            self.restart.new_session();
            let state = &mut self.state;
            state.tally.sessions += 1;
            state.names.clear();
            state.stacks.clear();
            state.lanes.clear();
            state.lanes_removed();
            state.open_spans = 0;
            state.latest = None;
            state.unix_offset = None;
            self.last_samples.clear();
        }
        let state = &mut self.state;
        state.clock = Clock::new(init.ticks_per_second);
        state.session = Some(Session {
            id: init.session_id,
            process_name: String::from(init.process_name),
            process_id: init.process_id,
            created_unix_ns: init.created_unix_ns,
        });
        // The stream's first Init names 0; a repeated one goes on.
        if init.next_seq == 0 {
            self.stream = Some(StreamCount::default());
        } else if previous != Some(init.session_id) {
            self.stream = None;
        }
        if previous == Some(init.session_id) {
            take(&self.state, Update::SessionRepeated);
        } else {
            take(&self.state, Update::NewSession { previous });
        }
        for (id, text) in init.names() {
            self.define(id, text, take);
        }
        self.set_lanes(init.lanes(), take);
        self.define_stacks(init.stack_nodes(), init.frame_symbols(), take);
        self.map_modules(init.modules(), take);
    }

    fn define_stacks(
        &mut self,
        nodes: StackNodes<'_>,
        symbols: FrameSymbols<'_>,
        take: &mut impl FnMut(&State, Update<'_>),
    ) {
        for (id, node) in nodes {
            match self.state.stacks.define(id, node) {
                Learnt::New => take(&self.state, Update::StackNode { id, node }),
                Learnt::Same => {}
                Learnt::Refused => self.state.tally.refused.stack_nodes += 1,
            }
        }
        for symbol in symbols {
            let (address, frames) = (symbol.address, symbol.frames);
            match self.state.stacks.learn(address, frames.iter()) {
                Learnt::New => take(&self.state, Update::FrameSymbol { address, frames }),
                Learnt::Same => {}
                Learnt::Refused => self.state.tally.refused.frame_symbols += 1,
            }
        }
    }

    fn map_modules(&mut self, modules: Modules<'_>, take: &mut impl FnMut(&State, Update<'_>)) {
        for (index, module) in modules {
            match self.state.stacks.map(index, module) {
                Learnt::New => take(&self.state, Update::Module { index, module }),
                Learnt::Same => {}
                Learnt::Refused => self.state.tally.refused.modules += 1,
            }
        }
    }

    fn define(&mut self, id: u32, text: &str, take: &mut impl FnMut(&State, Update<'_>)) {
        match self.state.names.define(id, text) {
            Defined::New => take(&self.state, Update::Name { id, text }),
            Defined::Same => {}
            Defined::Refused => self.state.tally.refused.names += 1,
        }
    }

    /// The lane table becomes `lanes`: a lane missing from it was freed.
    fn set_lanes(
        &mut self,
        lanes: impl Iterator<Item = LaneInfo>,
        take: &mut impl FnMut(&State, Update<'_>),
    ) {
        let state = &mut self.state;
        let mut listed = Vec::new();
        for info in lanes {
            if state.set_lane(info).is_some() {
                listed.push(info.id);
            }
        }
        listed.sort_unstable();
        state.lanes.retain(|id, _| listed.binary_search(id).is_ok());
        state.lanes_removed();
        state.open_spans = state.lanes.values().map(|lane| lane.open.len()).sum();
        take(&self.state, Update::Lanes);
        // A lane freed with a tick open: the writer sent its events
        // before freeing it, so that tick's end was lost.
        self.forget_open(|lane| listed.binary_search(&lane).is_ok(), take);
    }

    /// The time `ticks` a frame states first tells a restart, after a
    /// repeated Init or a reconnect (`RestartCheck`).
    fn restarted(&mut self, first: u64, take: &mut impl FnMut(&State, Update<'_>)) {
        self.forget_open(|_| false, take);
        let state = &mut self.state;
        let to = state.clock.ns(first);
        let from = state.latest.unwrap_or(0);
        state.tally.restarts += 1;
        state.forget_open_spans();
        state.latest = None;
        state.unix_offset = None;
        self.last_samples.clear();
        take(&self.state, Update::Restarted { from, to });
    }

    /// Forgets what is open on the lanes `keep` refuses: each open tick,
    /// told as a tick whose end was lost, and each thread switched out
    /// (its in will never come).
    fn forget_open(
        &mut self,
        mut keep: impl FnMut(u16) -> bool,
        take: &mut impl FnMut(&State, Update<'_>),
    ) {
        self.state.switched_out.forget(&mut keep);
        for lost in self.state.ticks.forget(keep) {
            tell_tick(&mut self.state, lost, take);
        }
    }

    /// The one moment a Catch-up or a Samples frame states, `ticks`, in
    /// ns: a restart it tells (`RestartCheck`) is told first.
    fn moment(&mut self, ticks: u64, take: &mut impl FnMut(&State, Update<'_>)) -> u64 {
        let tps = self.state.clock.ticks_per_second();
        if self.restart.catch_up(ticks, tps) {
            self.restarted(ticks, take);
        }
        self.state.clock.ns(ticks)
    }

    fn samples(
        &mut self,
        samples: &SamplesView<'_>,
        received: Option<u64>,
        take: &mut impl FnMut(&State, Update<'_>),
    ) {
        let time = self.moment(samples.time, take);
        let clock = self.state.clock;
        self.state.stated(time);
        self.state.placed(received, time);
        take(&self.state, Update::Samples { time });
        if let Some(memory) = samples.memory {
            take(&self.state, Update::Memory(memory));
        }
        for site in samples.sites() {
            take(&self.state, Update::Site(site));
        }
        for switch in samples.switches() {
            let (lane, what) = (switch.lane, switch.what);
            if !self.state.counted_samples_lane(lane) {
                continue;
            }
            let time = clock.ns(switch.time);
            take(&self.state, Update::Switch { lane, time, what });
            if !self.pairs_switches {
                continue;
            }
            let tally = &mut self.state.tally;
            match self.state.switched_out.switch(lane, time, what) {
                Paired::Fine(None) => {}
                Paired::Fine(Some(slice)) => {
                    tally.off_cpu += 1;
                    take(&self.state, Update::OffCpu(slice));
                }
                Paired::Unpaired => tally.switches_unpaired += 1,
                Paired::Refused => tally.refused.off_cpu += 1,
            }
        }
        for sample in samples.stack_samples() {
            if !self.state.counted_samples_lane(sample.lane) {
                continue;
            }
            let tally = &mut self.state.tally;
            if !self.state.stacks.holds(sample.node) {
                tally.stack_samples_undefined += 1;
                continue;
            }
            tally.stack_samples += 1;
            let time = clock.ns(sample.time);
            take(
                &self.state,
                Update::StackSample(StackSample { time, ..sample }),
            );
        }
        // After a gap: which lanes' threads ran since their last sample.
        let mut ran = Vec::new();
        let settle = self.state.switched_out.in_doubt() && samples.lanes().next().is_some();
        for lane in samples.lanes() {
            if !self.state.counted_samples_lane(lane.lane) {
                continue;
            }
            let interval = self.last_samples.interval(&lane, time);
            if settle {
                let on_cpu = interval.and_then(|i| i.spent.on_cpu_ns);
                ran.push((lane.lane, on_cpu.map(|ns| ns > 0)));
            }
            if let Some(interval) = interval {
                take(&self.state, Update::Cpu(interval));
            }
        }
        if settle {
            let ran_on = |lane| ran.iter().find(|r| r.0 == lane).and_then(|r| r.1);
            self.state.switched_out.settle(ran_on);
        }
    }

    fn catch_up(
        &mut self,
        catchup: &CatchUpView<'_>,
        received: Option<u64>,
        take: &mut impl FnMut(&State, Update<'_>),
    ) {
        let time = self.moment(catchup.time, take);
        let clock = self.state.clock;
        self.state.forget_open_spans();
        for lane in catchup.lanes() {
            // A lane claimed since the last Definitions: its name comes
            // spelled out beside the id (empty when the writer did not
            // know it either).
            if self.state.names.get(lane.info.name).is_none() && !lane.name.is_empty() {
                self.define(lane.info.name, lane.name, take);
            }
            let state = &mut self.state;
            let Some(row) = state.set_lane(lane.info) else {
                continue;
            };
            row.open_depth = lane.open_depth;
            // As deep as a writer tracks, whatever a peer lists.
            let mut listed = lane.open.clone();
            row.open
                .extend(listed.by_ref().take(MAX_OPEN_SPANS).map(|span| {
                    typhon_live_core::OpenSpan {
                        start: clock.ns(span.start),
                        ..span
                    }
                }));
            let refused = listed.count() as u64;
            // Those begun by its time, as a writer lists them.
            let (kept, depth) = begun_by(&row.open, row.open_depth, time);
            row.open.truncate(kept);
            row.open_depth = depth;
            state.open_spans += kept;
            state.tally.refused.open_spans = state.tally.refused.open_spans.saturating_add(refused);
        }
        self.state.stated(time);
        self.state.placed(received, time);
        take(&self.state, Update::CatchUp { time });
    }

    fn block(
        &mut self,
        block: &BlockView<'_>,
        received: Option<u64>,
        take: &mut impl FnMut(&State, Update<'_>),
    ) -> Result<(), DecodeError> {
        let tps = self.state.clock.ticks_per_second();
        if self
            .restart
            .block(block.first_time, block.last_time, block.records, tps)
        {
            self.restarted(block.first_time, take);
        }
        let state = &mut self.state;
        state.tally.block_bytes = state
            .tally
            .block_bytes
            .saturating_add(block.encoded_len() as u64);
        state.tally.block_records = state
            .tally
            .block_records
            .saturating_add(u64::from(block.records));
        for (lane, events) in block.drops() {
            state.tally.events_dropped =
                state.tally.events_dropped.saturating_add(u64::from(events));
            if let Some(stream) = &mut self.stream {
                stream.dropped = stream.dropped.saturating_add(u64::from(events));
            }
            take(state, Update::Lost(Loss::Dropped { lane, events }));
        }
        if block.records > 0 {
            // Its latest event end, stated once for all its events.
            let last = state.clock.ns(block.last_time);
            state.stated(last);
            state.placed(received, last);
        }
        let clock = state.clock;
        // A clock in ns (most hosts'): the times are already what they
        // must be.
        let in_ns_already = clock == Clock::NS;
        let wanted = self.wanted;
        let result = self.unpacked.each_event_of(block, wanted, |lane, event| {
            let event = if in_ns_already {
                event
            } else {
                in_ns(event, clock)
            };
            state.tally.events += 1;
            if state.open_spans > 0 {
                if let Event::Span { id, .. } | Event::Poll { id, .. } = event {
                    state.ended(lane, id);
                }
            }
            // Tested here, not inside `read_tick`: every event passing
            // through one call cost the model's reading 1.9 % more
            // instructions (callgrind, model/examples/ingest).
            if let Event::TickStart { .. } | Event::TickEnd { .. } = event {
                read_tick(state, lane, event, &mut *take);
            } else {
                take(state, Update::Event { lane, event });
            }
        });
        let skipped = match result {
            Ok(skipped) => skipped,
            Err(damage) => damage.skipped,
        };
        self.state.tally.events = self.state.tally.events.saturating_add(u64::from(skipped));
        result.map(drop).map_err(|damage| {
            self.state.tally.events_damaged = self
                .state
                .tally
                .events_damaged
                .saturating_add(u64::from(damage.unread));
            take(
                &self.state,
                Update::Lost(Loss::Damaged {
                    events: damage.unread,
                }),
            );
            damage.error
        })
    }

    fn texts(&mut self, texts: &TextsView<'_>, take: &mut impl FnMut(&State, Update<'_>)) {
        let state = &mut self.state;
        if texts.lost > 0 {
            state.tally.texts_lost = state.tally.texts_lost.saturating_add(u64::from(texts.lost));
            take(state, Update::Lost(Loss::Texts { texts: texts.lost }));
        }
        let clock = state.clock;
        for text in texts.texts() {
            state.tally.texts += 1;
            take(
                state,
                Update::Text(TextRecord {
                    time: clock.ns(text.time),
                    ..text
                }),
            );
        }
    }

    fn shutdown(&mut self, totals: Shutdown, take: &mut impl FnMut(&State, Update<'_>)) {
        // The session ended: a tick still open will never end.
        self.forget_open(|_| false, take);
        let check = match self.stream {
            Some(seen)
                if seen.received == totals.frames_sent
                    && seen.missed == totals.frames_dropped
                    && seen.dropped <= totals.events_dropped =>
            {
                // Events of the last Blocks, dropped on the way, that no
                // later Block's drop entries could report. Counted as seen,
                // so that a Shutdown sent again is not told twice.
                let events = totals.events_dropped - seen.dropped;
                if let Some(stream) = &mut self.stream {
                    stream.dropped = totals.events_dropped;
                }
                if events > 0 {
                    self.state.tally.events_dropped =
                        self.state.tally.events_dropped.saturating_add(events);
                    take(&self.state, Update::Lost(Loss::AtShutdown { events }));
                }
                TotalsCheck::Agree
            }
            Some(seen) => TotalsCheck::Differ {
                received: seen.received,
                missed: seen.missed,
                dropped: seen.dropped,
            },
            None => TotalsCheck::Unknown,
        };
        // Counted after the check: the totals leave the Shutdown out.
        self.count_received();
        let time = self.state.clock.ns(totals.time);
        if self.state.session.is_some() {
            self.state.stated(time);
        }
        take(&self.state, Update::Shutdown { totals, check });
    }
}

/// A tick start or end `event` of `lane`, paired (`Ticks`): a tick it
/// tells lost its end comes before the event, the tick it ends after it.
fn read_tick(
    state: &mut State,
    lane: u16,
    event: Event,
    take: &mut impl FnMut(&State, Update<'_>),
) {
    match event {
        Event::TickStart { time, tick } => {
            match state.ticks.start(lane, tick, time) {
                Ok(Some(lost)) => tell_tick(state, lost, take),
                Ok(None) => {}
                Err(()) => state.tally.refused.ticks += 1,
            }
            take(state, Update::Event { lane, event });
        }
        Event::TickEnd {
            time,
            tick,
            overrun,
        } => {
            let (lost, ended) = state.ticks.end(lane, tick, time, overrun);
            if let Some(lost) = lost {
                tell_tick(state, lost, take);
            }
            take(state, Update::Event { lane, event });
            tell_tick(state, ended, take);
        }
        _ => take(state, Update::Event { lane, event }),
    }
}

/// `tick` counted and handed on.
fn tell_tick(state: &mut State, tick: Tick, take: &mut impl FnMut(&State, Update<'_>)) {
    let count = match (tick.start, tick.end) {
        (Some(_), Some(_)) => &mut state.tally.ticks,
        (None, _) => &mut state.tally.ticks_without_start,
        (_, None) => &mut state.tally.ticks_without_end,
    };
    *count += 1;
    state.tally.ticks_overrun += u64::from(tick.overrun);
    take(state, Update::Tick(tick));
}

/// `event` with its times and durations in ns.
fn in_ns(event: Event, clock: Clock) -> Event {
    let ns = |t| clock.ns(t);
    event.map_times(ns, ns)
}
