//! What a [`Reader`](crate::Reader) tells its consumer, frame by frame.

use typhon_live_core::{
    Event, LaneId, Memory, Module, NameId, NodeId, Shutdown, SiteView, StackFrames, StackNode,
    StackSample, Switch,
};

use crate::cpu::CpuInterval;
use crate::off_cpu::OffCpu;
use crate::ticks::Tick;

/// One thing a frame said, resolved: times in ns of the session's clock
/// (add [`State::unix_offset`](crate::State::unix_offset) for the Unix
/// clock), names and lanes in the reader's [`State`](crate::State),
/// which is up to date when the update arrives.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Update<'a> {
    /// The first frame of a connection came after `skipped` bytes that
    /// were not a whole frame: the reader joined mid-stream (a serial
    /// link). Ids show as `#id` until the next Init names them.
    JoinedMidStream {
        /// Bytes before the first whole frame.
        skipped: u64,
    },
    /// An Init of a session this reader was not reading: the first, or a
    /// new session id (the process restarted). What the reader knew of
    /// the previous one is gone; the state holds this Init's session,
    /// names and lanes.
    NewSession {
        /// The session before it, if any.
        previous: Option<u64>,
    },
    /// An Init of the session being read: a reconnect, or a device
    /// repeating its announcement. Its names and lanes are taken in;
    /// the next time the stream states tells whether it restarted.
    SessionRepeated,
    /// The session started over under the same id (a device without a
    /// source of fresh ids): the clock went back more than a second
    /// after a repeated Init or a reconnect (FORMAT.md, "Restarts"). The
    /// names and lanes stay; open spans are forgotten. Comes before the
    /// frame's own updates.
    Restarted {
        /// The latest time seen before, ns.
        from: u64,
        /// The time the stream went back to, ns.
        to: u64,
    },
    /// A name defined by an Init or Definitions, or a Catch-up's lane
    /// name: new, or new text for its id.
    Name {
        /// Its id.
        id: NameId,
        /// Its text.
        text: &'a str,
    },
    /// A stack node defined by an Init or Definitions: new, or new for its
    /// id. Its parent is held (FORMAT.md, "Stacks").
    StackNode {
        /// Its id.
        id: NodeId,
        /// Its parent and address.
        node: StackNode,
    },
    /// The frames at an address, learnt from an Init or Definitions: new,
    /// or new for its address.
    FrameSymbol {
        /// The address.
        address: u64,
        /// Its frames' names, innermost (inlined) first.
        frames: StackFrames<'a>,
    },
    /// A module of the module map, from an Init or Definitions: new, or
    /// new for its index (FORMAT.md, "Stacks").
    Module {
        /// Its index.
        index: u32,
        /// Where it lies, its build id and path.
        module: Module<'a>,
    },
    /// An Init or Definitions set the lane table: the state's lanes are
    /// the ones it lists (a lane missing from it was freed).
    Lanes,
    /// A Catch-up: the state's lanes now hold the spans open at `time`.
    CatchUp {
        /// The moment it describes, ns.
        time: u64,
    },
    /// An event, its times and duration in ns.
    Event {
        /// The lane it was recorded on.
        lane: LaneId,
        /// The event.
        event: Event,
    },
    /// A tick, paired by its lane and number (FORMAT.md, "Reading a
    /// stream": ticks): told whole right after the event of its end, or
    /// with the half that arrived once the other is known lost (the
    /// lane's next tick start, an end of another number, a restart, a new
    /// session, its lane freed).
    Tick(Tick),
    /// A Samples frame, stated at `time` (ns): its process's memory
    /// ([`Update::Memory`]), its allocation sites ([`Update::Site`]), its
    /// switches ([`Update::Switch`], each in followed by the
    /// [`Update::OffCpu`] it ends), its stacks ([`Update::StackSample`])
    /// and its lanes' intervals ([`Update::Cpu`]) follow.
    Samples {
        /// The moment its counters were read, ns.
        time: u64,
    },
    /// The process's memory as the Samples frame before states it:
    /// cumulative, so a lost frame delays it and loses nothing.
    Memory(Memory),
    /// An allocation site's totals as the Samples frame before states
    /// them: cumulative, its frames names defined before it.
    Site(SiteView<'a>),
    /// How a lane's thread spent the time between two of its samples
    /// (a Samples frame's lane counters, against the lane's last).
    Cpu(CpuInterval),
    /// A context switch of a lane's thread, its time in ns, as the
    /// Samples frame lists it.
    Switch {
        /// The lane.
        lane: LaneId,
        /// When.
        time: u64,
        /// What it did.
        what: Switch,
    },
    /// A stack a Samples frame says was sampled, its time in ns; its lane
    /// and node are held ([`State::stacks`](crate::State::stacks)).
    StackSample(StackSample),
    /// A stretch of a lane's thread off a CPU (FORMAT.md, "Reading a
    /// stream": off-CPU slices), told right after the switch in that
    /// ends it.
    OffCpu(OffCpu),
    /// A log event's text (a Text frame's record), its time in ns. Its
    /// lane is `None` when the writer could no longer place it; its site
    /// is a name, defined before it.
    Text(TextRecord<'a>),
    /// Something the stream says is lost.
    Lost(Loss),
    /// A frame of a kind this reader does not know (a newer writer's):
    /// skipped, its sequence number counted as received. Not damage.
    Unknown {
        /// Its kind byte.
        kind: u8,
    },
    /// The session ended cleanly.
    Shutdown {
        /// What the writer says it sent and lost on this stream.
        totals: Shutdown,
        /// Those totals against what this reader saw.
        check: TotalsCheck,
    },
}

/// A Text frame's record as the reader hands it on: its time in ns of the
/// session's clock.
pub type TextRecord<'a> = typhon_live_core::Text<'a>;

/// What was lost, and how the stream tells it (FORMAT.md, "Losses, and
/// what counts").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Loss {
    /// Frames missing by sequence number: dropped on the way, or damaged
    /// past reading by the decoder. Comes before the frame after them.
    Gap {
        /// How many.
        frames: u64,
    },
    /// Events the writer reports it could not deliver on a lane (a Block's
    /// drop entry): refused by a full ring, or in a Block dropped on the
    /// way to this reader.
    Dropped {
        /// The lane.
        lane: LaneId,
        /// How many.
        events: u32,
    },
    /// Events a Shutdown counts as lost that no drop entry reported: they
    /// were in the last Blocks, dropped on the way. Told only when the
    /// reader saw the whole stream (its totals then agree).
    AtShutdown {
        /// How many.
        events: u64,
    },
    /// Texts a Text frame says were lost since the last one: in Text
    /// frames dropped on the way, or refused by the writer's full queue.
    Texts {
        /// How many.
        texts: u32,
    },
    /// A frame that arrived whole but broke a rule of the format. What it
    /// held is lost (a Block's events before the fault were handed on);
    /// the error is returned by [`Reader::read`](crate::Reader::read).
    Damaged {
        /// Records a damaged Block stated and that could not be read.
        events: u32,
    },
}

/// A Shutdown's totals against what the reader saw of the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TotalsCheck {
    /// Frames received and missed are what the writer says it sent and
    /// dropped, and the events it says were lost are those the drop
    /// entries reported plus those told as [`Loss::AtShutdown`].
    Agree,
    /// They differ: frames damaged on the way count as missed here and
    /// as sent there, and anything else is a writer's or reader's fault.
    Differ {
        /// Sequenced frames this reader received since the stream's
        /// first Init (the Shutdown itself not counted).
        received: u64,
        /// Frames it missed by sequence number.
        missed: u64,
        /// Events the drop entries it received report.
        dropped: u64,
    },
    /// The reader did not see the stream's first Init (it joined at a
    /// repeated one, or reconnected without an Init since), so it cannot
    /// tell.
    Unknown,
}
