//! The recorder: one more reader of a stream, keeping its recent past and
//! gathering a capture when a trigger fires.

use alloc::collections::VecDeque;
use alloc::string::ToString;
use alloc::sync::Arc;
use alloc::vec::Vec;

use typhon_live_core::frame::frame_around;
use typhon_live_core::{EventKinds, Frame, FrameKind};
use typhon_live_reader::{Reader, State};

use crate::capture::{Capture, Gathering, Marked};
use crate::ring::{Kept, Ring};
use crate::trigger::{Fired, Trigger, Watch};
use crate::Settings;

/// How often the reader's state is kept as a place a capture can start
/// from, ns of the stream's clock (and at every Init and Catch-up): a
/// capture starts at most this much before its window asks.
///
/// A recorder without span triggers skims the stream (its reader decodes
/// only the lane groups that hold what its triggers watch), so its open
/// spans are exact only at a Catch-up: it keeps its state at Inits and
/// Catch-ups alone, and a capture may start one catch-up interval (a
/// typhon-live process's: 1 s) before its window.
pub const CHECKPOINT_EVERY_NS: u64 = 250_000_000;

/// What a recorder did, since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames read.
    pub frames: u64,
    /// Triggers that fired (on demand included).
    pub fired: u64,
    /// Of those, fired again within their cooldown: ignored.
    pub cooled: u64,
    /// Of those, fired within the spacing after a capture: ignored.
    pub spaced: u64,
    /// Of those, fired while a capture was gathered: merged into it.
    pub merged: u64,
    /// Of those, fired before anything could start a capture (no Init
    /// read yet): ignored.
    pub unstarted: u64,
    /// Captures made whole.
    pub captures: u64,
    /// Of those, stopped at a bound before their window ended.
    pub cut: u64,
}

/// The flight recorder, sans I/O: frames in ([`Recorder::frame`]), time
/// passing ([`Recorder::now`]), captures out ([`Recorder::take`]).
#[derive(Debug)]
pub struct Recorder {
    settings: Settings,
    triggers: Vec<Trigger>,
    reader: Reader,
    watch: Watch,
    ring: Ring,
    gathering: Option<Gathering>,
    done: VecDeque<Capture>,
    /// Per trigger, when it last fired (for its cooldown).
    last_fired: Vec<Option<u64>>,
    last_capture_end: Option<u64>,
    /// The stream's time: the latest it stated, or later as time passes.
    clock: u64,
    /// Its frames come with another reader's state ([`Recorder::keep`]):
    /// its own reader knows nothing.
    shared: bool,
    /// Its own reader skims: its open spans are exact only at a Catch-up.
    skims: bool,
    stats: Stats,
}

impl Recorder {
    /// A recorder watching for `triggers`.
    pub fn new(settings: Settings, triggers: Vec<Trigger>) -> Recorder {
        let watch = Watch::new(&triggers);
        let mut reader = Reader::new();
        // The events no trigger looks at cost their groups' kind columns
        // only: the recorder's steady cost is then its copy of the bytes.
        reader.skim(watch.kinds());
        Recorder {
            last_fired: alloc::vec![None; triggers.len()],
            skims: !watch.kinds().contains(EventKinds::SPAN | EventKinds::POLL),
            watch,
            settings,
            triggers,
            reader,
            ring: Ring::default(),
            gathering: None,
            done: VecDeque::new(),
            last_capture_end: None,
            clock: 0,
            shared: false,
            stats: Stats::default(),
        }
    }

    /// Its triggers.
    pub fn triggers(&self) -> &[Trigger] {
        &self.triggers
    }

    /// What it did.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Frames and bytes of the past it keeps now (the capture being
    /// gathered holds at most [`Settings::max_capture_bytes`] more).
    pub fn kept(&self) -> (usize, usize) {
        (self.ring.len(), self.ring.bytes())
    }

    /// The stream's time now, ns.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// Reads `frame`, which arrived at Unix time `arrival` (ns).
    pub fn frame(&mut self, frame: &Frame<'_>, arrival: u64) {
        debug_assert!(
            !self.shared,
            "a recorder reads its frames or keeps another's reading, not both"
        );
        let mut fired = Vec::new();
        let (watch, triggers) = (&mut self.watch, &self.triggers);
        // A damaged payload is told as a loss in the updates; the frame
        // is kept as received all the same, as `record` keeps it.
        let _ = self.reader.read_at(frame, arrival, |state, update| {
            watch.update(triggers, state, &update, &mut |f| fired.push(f));
        });
        let reader = core::mem::take(&mut self.reader);
        self.take_in(frame, reader.state(), fired);
        self.reader = reader;
    }

    /// Keeps `frame`, which its caller has read with a reader of its own
    /// that now knows `state` (a viewer's model): no second reading, so
    /// no trigger but [`Recorder::demand_with`]. A recorder takes its
    /// frames one way or the other, never both.
    pub fn keep(&mut self, frame: &Frame<'_>, state: &State) {
        self.shared = true;
        self.take_in(frame, state, Vec::new());
    }

    /// `frame` kept, `state` its reading; `fired` what it fired.
    fn take_in(&mut self, frame: &Frame<'_>, state: &State, fired: Vec<Fired>) {
        self.stats.frames += 1;
        self.clock = self.clock.max(state.latest().unwrap_or(0));
        let Ok((header, trailer)) = frame_around(frame.kind, frame.flags, frame.seq, frame.payload)
        else {
            return;
        };
        let bytes: Arc<[u8]> = [&header[..], frame.payload, &trailer[..]].concat().into();
        let kept = Kept {
            bytes,
            time: self.clock,
        };
        self.ring.push(kept.clone());
        if let Some(gathering) = &mut self.gathering {
            if gathering.bytes() + kept.bytes.len() > self.settings.max_capture_bytes {
                gathering.cut();
                self.finish();
            } else {
                gathering.push(kept);
                gathering.names_defined(last_name(state));
            }
        }
        let marks_a_start =
            frame.kind == FrameKind::Init.to_byte() || frame.kind == FrameKind::CatchUp.to_byte();
        // A state whose open spans are exact between Catch-ups (every
        // span read) is kept every CHECKPOINT_EVERY_NS besides.
        let exact_anytime = self.shared || !self.skims;
        let due = exact_anytime
            && self
                .ring
                .last_checkpoint()
                .is_none_or(|last| self.clock >= last.saturating_add(CHECKPOINT_EVERY_NS));
        if state.session().is_some() && (marks_a_start || due) {
            self.ring.checkpoint(state.checkpoint());
        }
        let mut fired = fired;
        self.open_ticks(state, &mut fired);
        for f in fired {
            self.fire(f, state);
        }
        self.advance();
    }

    /// Time has passed with no frame: it is Unix time `now` (ns). Open
    /// ticks past a trigger's bound fire; a window that has ended is
    /// made whole.
    pub fn now(&mut self, now: u64) {
        debug_assert!(
            !self.shared,
            "a recorder that keeps another's reading takes now_with"
        );
        let reader = core::mem::take(&mut self.reader);
        self.now_with(now, reader.state());
        self.reader = reader;
    }

    /// [`Recorder::now`] for a recorder that [keeps](Recorder::keep) what
    /// a reader of its caller's read: `state` is what that reader knows.
    /// `now` moves the stream's time on only if that reader was given
    /// frames' arrival times, in the same clock as `now`.
    pub fn now_with(&mut self, now: u64, state: &State) {
        if let Some(stream) = state.unix().and_then(|unix| unix.back(now)) {
            self.clock = self.clock.max(stream);
        }
        let mut fired = Vec::new();
        self.open_ticks(state, &mut fired);
        for f in fired {
            self.fire(f, state);
        }
        self.advance();
    }

    /// The ticks open in `state` against the triggers, as of the stream's
    /// time: only a recorder that reads its own frames watches them (one
    /// that keeps another's reading fires on demand alone).
    fn open_ticks(&mut self, state: &State, fired: &mut Vec<Fired>) {
        if !self.shared {
            (self.watch).now(&self.triggers, state, self.clock, &mut |f| fired.push(f));
        }
    }

    /// A capture asked for now, by a person (a signal, a key, an HTTP
    /// request): it passes no cooldown or spacing, and merges like any
    /// other into a capture being gathered.
    pub fn demand(&mut self, what: &str) {
        debug_assert!(
            !self.shared,
            "a recorder that keeps another's reading takes demand_with"
        );
        let reader = core::mem::take(&mut self.reader);
        self.demand_with(what, reader.state());
        self.reader = reader;
    }

    /// [`Recorder::demand`] for a recorder that [keeps](Recorder::keep)
    /// what a reader of its caller's read, which knows `state`.
    pub fn demand_with(&mut self, what: &str, state: &State) {
        let fired = Fired {
            trigger: None,
            time: self.clock,
            lane: None,
            span: None,
            what: what.into(),
        };
        self.fire(fired, state);
        self.advance();
    }

    /// A new connection: its frames are numbered afresh (the reader's
    /// rule); the past kept and a capture being gathered go on.
    pub fn reconnected(&mut self) {
        self.reader.reconnected();
    }

    /// The stream ended (a Shutdown, the connection closed for good): the
    /// capture being gathered is made whole now.
    pub fn end(&mut self) {
        if self.gathering.is_some() {
            self.finish();
        }
    }

    /// A capture made whole, oldest first.
    pub fn take(&mut self) -> Option<Capture> {
        self.done.pop_front()
    }

    /// What `fired`'s mark needs: its label (the trigger as written), its
    /// lane (the lowest known for a trigger without one), its clock.
    fn marked(&self, fired: &Fired, state: &State) -> Marked {
        let label = match fired.trigger {
            Some(index) => self.triggers[index].to_string(),
            None => alloc::format!("on demand: {}", fired.what),
        };
        let lowest = state.lanes().keys().next().copied();
        Marked {
            label,
            lane: fired.lane.or(lowest).unwrap_or(0),
            clock: state.clock(),
        }
    }

    fn fire(&mut self, fired: Fired, state: &State) {
        self.stats.fired += 1;
        let time = fired.time;
        if let Some(index) = fired.trigger {
            let cooling = self.last_fired[index]
                .is_some_and(|last| time < last.saturating_add(self.settings.cooldown_ns));
            if cooling {
                self.stats.cooled += 1;
                return;
            }
            self.last_fired[index] = Some(time);
        }
        let end = time.saturating_add(self.settings.after_ns);
        let marked = self.marked(&fired, state);
        if let Some(gathering) = &mut self.gathering {
            self.stats.merged += 1;
            gathering.fired(fired, marked, end);
            return;
        }
        let spaced = self
            .last_capture_end
            .is_some_and(|last| time < last.saturating_add(self.settings.spacing_ns));
        if spaced && fired.trigger.is_some() {
            self.stats.spaced += 1;
            return;
        }
        let Some(session) = state.session().map(|s| s.id) else {
            self.stats.unstarted += 1;
            return;
        };
        let from = time.saturating_sub(self.settings.before_ns);
        let Some((index, checkpoint)) = self.ring.start_for(from, session) else {
            self.stats.unstarted += 1;
            return;
        };
        // Names only grow in a session: today's resolve every id of the
        // checkpoint's and of the frames after it.
        let Ok(start) = checkpoint.write_start(state.names(), 0) else {
            self.stats.unstarted += 1;
            return;
        };
        let begin = checkpoint.time();
        let limit = begin.saturating_add(self.settings.max_capture_ns);
        let mut gathering = Gathering::new(
            start,
            begin,
            self.ring.from(index),
            fired,
            marked,
            end,
            limit,
        );
        gathering.names_defined(last_name(state));
        let over = gathering.bytes() > self.settings.max_capture_bytes;
        self.gathering = Some(gathering);
        if over {
            if let Some(g) = &mut self.gathering {
                g.cut();
            }
            self.finish();
        }
    }

    /// Evicts the past beyond its bounds; makes a window that has ended
    /// whole.
    fn advance(&mut self) {
        let oldest = self.clock.saturating_sub(self.settings.keep_ns);
        self.ring.evict(self.settings.keep_bytes, oldest);
        if self.gathering.as_ref().is_some_and(|g| self.clock >= g.end) {
            self.finish();
        }
    }

    fn finish(&mut self) {
        let Some(gathering) = self.gathering.take() else {
            return;
        };
        let capture = gathering.finish();
        self.stats.captures += 1;
        self.stats.cut += u64::from(capture.cut);
        self.last_capture_end = Some(self.clock);
        self.done.push_back(capture);
    }
}

/// The largest name id `state` knows.
fn last_name(state: &State) -> Option<typhon_live_core::NameId> {
    state.names().iter().next_back().map(|(id, _)| id)
}
