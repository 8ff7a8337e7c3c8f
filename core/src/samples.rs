//! The Samples frame (kind 6): what the system measured of each lane's
//! thread, beside the spans it recorded. Droppable like a Block.
//!
//! Counters are cumulative since their thread began, so a frame lost on
//! the way costs a reader the detail between two samples, never a total.
//! Context switches, where the system reports them one by one, are
//! events: a lost frame loses its switches, and the reader's gap says
//! when.
//!
//! ```text
//! payload:  0  8  time the counters were read, u64 LE (host ticks)
//!           8     sections (tag u8, body length u32 LE, body), each tag
//!                 at most once; a reader skips a tag it does not know
//! tag 1, lane counters:
//!           u16 LE lane count, then per lane: v lane id, v thread id (the
//!           system's; 0 = unknown), u8 flags (bit 0: its switches are
//!           traced), u8 counter count k (at most MAX_COUNTERS), then k
//!           times: u8 counter id (Counter), v value
//! tag 2, switches:
//!           v count, then per switch: v lane id, u8 what (Switch), v
//!           ticks before the frame's time
//! tag 3, the process's memory:
//!           v bytes allocated, v bytes freed (cumulative, every thread),
//!           v sampling interval (mean bytes; 0 = sites not sampled), v
//!           allocations sampled, v samples not taken
//! tag 4, allocation sites:
//!           v count, then per site: v site id, u8 frame count, then v
//!           name id each (innermost first), v bytes allocated, v bytes
//!           freed (estimates), v allocations sampled, v frees seen
//! tag 5, stack samples: see [`stacks`](crate::stacks)
//! ```
//!
//! Memory, like the counters, is cumulative: a site's totals are sent
//! again while they change and every so often when they do not, so a
//! lost frame delays a total, and never leaves a phantom leak.

use crate::cursor::{Reader, Writer};
use crate::error::{DecodeError, EncodeError};
use crate::event::{LaneId, NameId};
use crate::frame::{write_frame, FrameKind};
use crate::section::{write_section, Sections};
use crate::stacks::{self, StackSample, MAX_STACK_SAMPLES_PER_FRAME};

/// Section tags of a Samples frame (their own: not Init's).
mod tag {
    pub const LANES: u8 = 1;
    pub const SWITCHES: u8 = 2;
    pub const MEMORY: u8 = 3;
    pub const SITES: u8 = 4;
    pub const STACKS: u8 = 5;
}

/// Counters of one lane at most: a bound on what a peer can make a
/// reader walk per lane.
pub const MAX_COUNTERS: usize = 16;
/// Lanes in one Samples frame at most.
pub const MAX_SAMPLED_LANES: usize = 4096;
/// Switches in one Samples frame at most.
pub const MAX_SWITCHES_PER_FRAME: usize = 65_536;
/// Allocation sites in one Samples frame at most.
pub const MAX_SITES_PER_FRAME: usize = 4096;
/// Frames of one site's stack at most.
pub const MAX_STACK_FRAMES: usize = 64;

/// Flag bit of a lane's counters: its thread's switches are traced one
/// by one, so a frame without any for it says it did not switch.
const TRACED: u8 = 1;

/// A thread's counters, cumulative since it began. Each is `None` where
/// the system does not measure it (Windows has no run-queue time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Counters {
    /// Time on a CPU, ns (counter 1).
    pub on_cpu_ns: Option<u64>,
    /// Time runnable and waiting for a CPU, ns (counter 2).
    pub waiting_ns: Option<u64>,
    /// Switches away because it waited (a lock, I/O, a sleep): counter 3.
    pub voluntary: Option<u64>,
    /// Switches away because it was preempted: counter 4.
    pub involuntary: Option<u64>,
    /// Bytes the thread allocated (counter 5).
    pub allocated_bytes: Option<u64>,
    /// Bytes the thread freed, whichever thread allocated them (counter
    /// 6).
    pub freed_bytes: Option<u64>,
}

impl Counters {
    /// Wire ids and values of the counters it has.
    fn pairs(&self) -> impl Iterator<Item = (u8, u64)> {
        [
            (1, self.on_cpu_ns),
            (2, self.waiting_ns),
            (3, self.voluntary),
            (4, self.involuntary),
            (5, self.allocated_bytes),
            (6, self.freed_bytes),
        ]
        .into_iter()
        .filter_map(|(id, value)| Some((id, value?)))
    }

    /// Takes counter `id`'s value; an id it does not know is skipped.
    fn set(&mut self, id: u8, value: u64) {
        match id {
            1 => self.on_cpu_ns = Some(value),
            2 => self.waiting_ns = Some(value),
            3 => self.voluntary = Some(value),
            4 => self.involuntary = Some(value),
            5 => self.allocated_bytes = Some(value),
            6 => self.freed_bytes = Some(value),
            _ => {}
        }
    }
}

/// One lane's sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LaneSample {
    /// The lane.
    pub lane: LaneId,
    /// Its thread, as the system names it (a Linux TID); 0 when unknown.
    /// A lane's slot passes to another thread after its thread ends: a
    /// new id says the counters start over.
    pub thread: u64,
    /// Its switches are traced one by one ([`SwitchRecord`]).
    pub switches_traced: bool,
    /// Its counters.
    pub counters: Counters,
}

/// What a context switch did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Switch {
    /// The thread left the CPU to wait (a lock, I/O, a sleep): 1.
    OutWaiting,
    /// The thread left the CPU, preempted while it could still run: 2.
    OutPreempted,
    /// The thread came back on a CPU: 3.
    In,
}

impl Switch {
    /// What the time after it is called: "off-CPU (waiting)",
    /// "preempted", or "on CPU" (converters name their slices so).
    pub const fn label(self) -> &'static str {
        match self {
            Switch::OutWaiting => "off-CPU (waiting)",
            Switch::OutPreempted => "preempted",
            Switch::In => "on CPU",
        }
    }

    /// The wire byte.
    pub const fn to_byte(self) -> u8 {
        match self {
            Switch::OutWaiting => 1,
            Switch::OutPreempted => 2,
            Switch::In => 3,
        }
    }

    /// The switch a wire byte names; any other is malformed.
    pub const fn from_byte(byte: u8) -> Result<Switch, DecodeError> {
        match byte {
            1 => Ok(Switch::OutWaiting),
            2 => Ok(Switch::OutPreempted),
            3 => Ok(Switch::In),
            _ => Err(DecodeError::Malformed {
                what: "switch kind",
            }),
        }
    }
}

/// One context switch of a lane's thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SwitchRecord {
    /// The lane.
    pub lane: LaneId,
    /// When, host ticks: at or before the frame's time.
    pub time: u64,
    /// What it did.
    pub what: Switch,
}

/// The process's memory, through the tracking allocator: cumulative since
/// it began, every thread's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Memory {
    /// Bytes allocated.
    pub allocated: u64,
    /// Bytes freed.
    pub freed: u64,
    /// Allocations are sampled once per this many bytes on average; 0
    /// when sites are not sampled.
    pub sampling_mean: u64,
    /// Allocations sampled.
    pub sampled: u64,
    /// Samples not taken: the writer's tables were full, or a stack
    /// could not be read. The sites' estimates miss them.
    pub missed: u64,
}

impl Memory {
    /// Bytes allocated and not freed.
    pub fn live(&self) -> u64 {
        self.allocated.saturating_sub(self.freed)
    }
}

/// An allocation site's totals, cumulative, estimated from the sampled
/// allocations (each stands for the bytes allocated around it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SiteTotals {
    /// Bytes allocated, estimated.
    pub allocated: u64,
    /// Bytes freed of those, estimated.
    pub freed: u64,
    /// Allocations sampled.
    pub allocations: u64,
    /// Frees of sampled allocations seen.
    pub frees: u64,
}

impl SiteTotals {
    /// Bytes allocated and not freed, estimated.
    pub fn live(&self) -> u64 {
        self.allocated.saturating_sub(self.freed)
    }
}

/// An allocation site, as written: its stack, each frame a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SiteSample<'a> {
    /// The writer's id for it, for the session: its stack never changes.
    pub site: u32,
    /// Its frames' names, innermost first (at most [`MAX_STACK_FRAMES`]).
    pub frames: &'a [NameId],
    /// Its totals.
    pub totals: SiteTotals,
}

/// An allocation site, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SiteView<'a> {
    /// The writer's id for it.
    pub site: u32,
    /// Its frames' names, innermost first.
    pub frames: StackFrames<'a>,
    /// Its totals.
    pub totals: SiteTotals,
}

/// A site's frames, as read: name ids, innermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackFrames<'a> {
    bytes: &'a [u8],
    count: u8,
}

impl<'a> StackFrames<'a> {
    /// Reads `count` name ids from `r`, checking each.
    pub(crate) fn read(r: &mut Reader<'a>, count: u8) -> Result<Self, DecodeError> {
        let bytes = r.rest();
        let before = bytes.len();
        for _ in 0..count {
            r.varint_u32("frame name")?;
        }
        Ok(StackFrames {
            bytes: &bytes[..before - r.rest().len()],
            count,
        })
    }

    /// The frames' name ids.
    pub fn iter(&self) -> impl Iterator<Item = NameId> + 'a {
        let mut r = Reader::new(self.bytes);
        // Checked when the frame was parsed.
        (0..self.count).map_while(move |_| r.varint_u32("frame name").ok())
    }

    /// Frames.
    pub fn len(&self) -> usize {
        usize::from(self.count)
    }

    /// No frame: the stack could not be read.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// What one Samples frame carries.
#[derive(Clone, Copy, Debug, Default)]
pub struct SamplesBatch<'a> {
    /// When it was read, host ticks.
    pub time: u64,
    /// Each lane's counters.
    pub lanes: &'a [LaneSample],
    /// Switches, each at or before `time`, in the order they happened.
    pub switches: &'a [SwitchRecord],
    /// The process's memory, where the tracking allocator counts it.
    pub memory: Option<Memory>,
    /// Allocation sites whose totals are told.
    pub sites: &'a [SiteSample<'a>],
    /// Stacks sampled, each at or before `time`, each lane's in the order
    /// taken; their nodes defined before the frame.
    pub stacks: &'a [StackSample],
}

impl SamplesBatch<'_> {
    /// Nothing to tell.
    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
            && self.switches.is_empty()
            && self.memory.is_none()
            && self.sites.is_empty()
            && self.stacks.is_empty()
    }

    /// The largest whole frame this batch can make: a buffer this long
    /// always holds it.
    pub fn max_frame_len(&self) -> usize {
        let frames: usize = self.sites.iter().map(|s| s.frames.len()).sum();
        max_samples_frame_len(self.lanes.len(), self.switches.len())
            + 5
            + MAX_MEMORY_BYTES
            + 5
            + 10
            + self.sites.len() * MAX_SITE_BYTES
            + frames * 5
            + 5
            + 10
            + self.stacks.len() * stacks::MAX_STACK_SAMPLE_BYTES
    }
}

/// Bytes one lane's sample takes at most: its lane and thread as
/// varints, its flags and counter count, and each counter the writer
/// knows as an id and a varint.
const MAX_LANE_BYTES: usize = 3 + 10 + 1 + 1 + 6 * (1 + 10);
/// Bytes one switch takes at most: lane, what, and ticks before.
const MAX_SWITCH_BYTES: usize = 3 + 1 + 10;
/// Bytes the memory section's body takes at most: five varints.
const MAX_MEMORY_BYTES: usize = 5 * 10;
/// Bytes one site takes at most, less its frames (5 each): id, frame
/// count and four totals.
const MAX_SITE_BYTES: usize = 5 + 1 + 4 * 10;

/// The largest whole Samples frame of `lanes` lanes and `switches`
/// switches: a buffer this long always holds it.
pub const fn max_samples_frame_len(lanes: usize, switches: usize) -> usize {
    // The time, two sections' tags and lengths, the lane count and the
    // switch count.
    crate::frame::OVERHEAD
        + 8
        + 2 * 5
        + 2
        + 10
        + lanes * MAX_LANE_BYTES
        + switches * MAX_SWITCH_BYTES
}

/// Writes a Samples frame of `batch`. More than [`MAX_SAMPLED_LANES`]
/// lanes, [`MAX_SWITCHES_PER_FRAME`] switches or [`MAX_SITES_PER_FRAME`]
/// sites, a site of more than [`MAX_STACK_FRAMES`] frames, or a switch
/// after the batch's time, is refused.
pub fn write_samples(
    out: &mut [u8],
    seq: u32,
    batch: &SamplesBatch<'_>,
) -> Result<usize, EncodeError> {
    let SamplesBatch {
        time,
        lanes,
        switches,
        memory,
        sites,
        stacks,
    } = *batch;
    if lanes.len() > MAX_SAMPLED_LANES {
        return Err(EncodeError::TooManyItems {
            what: "sampled lanes",
        });
    }
    if switches.len() > MAX_SWITCHES_PER_FRAME || switches.iter().any(|s| s.time > time) {
        return Err(EncodeError::TooManyItems { what: "switches" });
    }
    if sites.len() > MAX_SITES_PER_FRAME || sites.iter().any(|s| s.frames.len() > MAX_STACK_FRAMES)
    {
        return Err(EncodeError::TooManyItems {
            what: "allocation sites",
        });
    }
    stacks::check_stack_samples(time, stacks)?;
    write_frame(out, FrameKind::Samples, seq, |w| {
        w.u64(time);
        if !lanes.is_empty() {
            write_section(w, tag::LANES, |w| write_lanes(w, lanes))?;
        }
        if !switches.is_empty() {
            write_section(w, tag::SWITCHES, |w| {
                w.varint(switches.len() as u64);
                for switch in switches {
                    w.varint(u64::from(switch.lane));
                    w.u8(switch.what.to_byte());
                    w.varint(time - switch.time);
                }
            })?;
        }
        if let Some(memory) = memory {
            write_section(w, tag::MEMORY, |w| {
                for value in [
                    memory.allocated,
                    memory.freed,
                    memory.sampling_mean,
                    memory.sampled,
                    memory.missed,
                ] {
                    w.varint(value);
                }
            })?;
        }
        if !sites.is_empty() {
            write_section(w, tag::SITES, |w| {
                w.varint(sites.len() as u64);
                for site in sites {
                    w.varint(u64::from(site.site));
                    w.u8(site.frames.len() as u8);
                    for &frame in site.frames {
                        w.varint(u64::from(frame));
                    }
                    let t = site.totals;
                    for value in [t.allocated, t.freed, t.allocations, t.frees] {
                        w.varint(value);
                    }
                }
            })?;
        }
        if !stacks.is_empty() {
            write_section(w, tag::STACKS, |w| {
                stacks::write_stack_samples(w, time, stacks)
            })?;
        }
        Ok(())
    })
}

fn write_lanes(w: &mut Writer<'_>, lanes: &[LaneSample]) {
    // At most MAX_SAMPLED_LANES, checked by the caller.
    w.u16(lanes.len() as u16);
    for lane in lanes {
        w.varint(u64::from(lane.lane));
        w.varint(lane.thread);
        w.u8(if lane.switches_traced { TRACED } else { 0 });
        w.u8(lane.counters.pairs().count() as u8);
        for (id, value) in lane.counters.pairs() {
            w.u8(id);
            w.varint(value);
        }
    }
}

/// A Samples frame's payload, checked whole when parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplesView<'a> {
    /// When the counters were read, host ticks.
    pub time: u64,
    lanes: &'a [u8],
    lane_count: u16,
    switches: &'a [u8],
    switch_count: u32,
    /// The process's memory, where the writer counts it.
    pub memory: Option<Memory>,
    sites: &'a [u8],
    site_count: u16,
    stacks: &'a [u8],
    stack_count: u32,
}

impl<'a> SamplesView<'a> {
    /// Parses and checks a Samples payload: every section within its
    /// body, each known one at most once, counts within their bounds,
    /// every lane's counters and every switch read.
    pub fn parse(payload: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let time = r.u64("samples time")?;
        let mut view = SamplesView {
            time,
            lanes: &[],
            lane_count: 0,
            switches: &[],
            switch_count: 0,
            memory: None,
            sites: &[],
            site_count: 0,
            stacks: &[],
            stack_count: 0,
        };
        let mut seen = [false; 5];
        let mut sections = Sections::new(r.rest());
        while let Some((tag, body)) = sections.next_section()? {
            let Some(seen) = seen.get_mut(usize::from(tag).wrapping_sub(1)) else {
                continue;
            };
            if core::mem::replace(seen, true) {
                return Err(DecodeError::Malformed {
                    what: "samples section repeated",
                });
            }
            let mut r = Reader::new(body);
            if tag == tag::LANES {
                view.lane_count = r.u16("sampled lane count")?;
                let (stated, bound) = (u64::from(view.lane_count), MAX_SAMPLED_LANES as u64);
                DecodeError::at_most("sampled lane count", stated, bound)?;
                view.lanes = r.rest();
                for _ in 0..view.lane_count {
                    next_lane(&mut r)?;
                }
                r.expect_end("lane counters have trailing bytes")?;
            } else if tag == tag::MEMORY {
                let mut next = || r.varint("memory");
                view.memory = Some(Memory {
                    allocated: next()?,
                    freed: next()?,
                    sampling_mean: next()?,
                    sampled: next()?,
                    missed: next()?,
                });
                r.expect_end("memory has trailing bytes")?;
            } else if tag == tag::SITES {
                let count = r.varint("site count")?;
                DecodeError::at_most("site count", count, MAX_SITES_PER_FRAME as u64)?;
                view.site_count = count as u16;
                view.sites = r.rest();
                for _ in 0..count {
                    next_site(&mut r)?;
                }
                r.expect_end("sites have trailing bytes")?;
            } else if tag == tag::STACKS {
                let count = r.varint("stack sample count")?;
                let bound = MAX_STACK_SAMPLES_PER_FRAME as u64;
                DecodeError::at_most("stack sample count", count, bound)?;
                view.stack_count = count as u32;
                view.stacks = r.rest();
                for _ in 0..count {
                    stacks::next_stack_sample(&mut r, time)?;
                }
                r.expect_end("stack samples have trailing bytes")?;
            } else {
                let count = r.varint("switch count")?;
                DecodeError::at_most("switch count", count, MAX_SWITCHES_PER_FRAME as u64)?;
                view.switch_count = count as u32;
                view.switches = r.rest();
                for _ in 0..count {
                    next_switch(&mut r, time)?;
                }
                r.expect_end("switches have trailing bytes")?;
            }
        }
        Ok(view)
    }

    /// The lanes' samples, in the order written.
    pub fn lanes(&self) -> impl Iterator<Item = LaneSample> + 'a {
        let mut r = Reader::new(self.lanes);
        // `parse` checked every entry, so none fails here.
        (0..self.lane_count).map_while(move |_| next_lane(&mut r).ok())
    }

    /// The switches, in the order they happened.
    pub fn switches(&self) -> impl Iterator<Item = SwitchRecord> + 'a {
        let (mut r, time) = (Reader::new(self.switches), self.time);
        (0..self.switch_count).map_while(move |_| next_switch(&mut r, time).ok())
    }

    /// The allocation sites told, in the order written.
    pub fn sites(&self) -> impl Iterator<Item = SiteView<'a>> + 'a {
        let mut r = Reader::new(self.sites);
        (0..self.site_count).map_while(move |_| next_site(&mut r).ok())
    }

    /// The stacks sampled, in the order written.
    pub fn stack_samples(&self) -> impl Iterator<Item = StackSample> + 'a {
        let (mut r, time) = (Reader::new(self.stacks), self.time);
        (0..self.stack_count).map_while(move |_| stacks::next_stack_sample(&mut r, time).ok())
    }

    /// Stacks sampled.
    pub fn stack_sample_count(&self) -> usize {
        self.stack_count as usize
    }

    /// Allocation sites told.
    pub fn site_count(&self) -> usize {
        usize::from(self.site_count)
    }

    /// Lanes sampled.
    pub fn lane_count(&self) -> usize {
        usize::from(self.lane_count)
    }

    /// Switches recorded.
    pub fn switch_count(&self) -> usize {
        self.switch_count as usize
    }
}

fn next_lane(r: &mut Reader<'_>) -> Result<LaneSample, DecodeError> {
    let lane = r.varint_u16("sampled lane id")?;
    let thread = r.varint("sampled thread id")?;
    let flags = r.u8("sampled lane flags")?;
    if flags & !TRACED != 0 {
        return Err(DecodeError::Malformed {
            what: "sampled lane flags (reserved bits set)",
        });
    }
    let count = r.u8("counter count")?;
    DecodeError::at_most("counter count", u64::from(count), MAX_COUNTERS as u64)?;
    let mut counters = Counters::default();
    for _ in 0..count {
        let id = r.u8("counter id")?;
        counters.set(id, r.varint("counter value")?);
    }
    Ok(LaneSample {
        lane,
        thread,
        switches_traced: flags & TRACED != 0,
        counters,
    })
}

fn next_site<'a>(r: &mut Reader<'a>) -> Result<SiteView<'a>, DecodeError> {
    let site = r.varint_u32("site id")?;
    let count = r.u8("stack frame count")?;
    DecodeError::at_most(
        "stack frame count",
        u64::from(count),
        MAX_STACK_FRAMES as u64,
    )?;
    let frames = StackFrames::read(r, count)?;
    let mut next = || r.varint("site totals");
    let totals = SiteTotals {
        allocated: next()?,
        freed: next()?,
        allocations: next()?,
        frees: next()?,
    };
    Ok(SiteView {
        site,
        frames,
        totals,
    })
}

fn next_switch(r: &mut Reader<'_>, time: u64) -> Result<SwitchRecord, DecodeError> {
    let lane = r.varint_u16("switch lane id")?;
    let what = Switch::from_byte(r.u8("switch kind")?)?;
    let before = r.varint("switch time")?;
    let time = time.checked_sub(before).ok_or(DecodeError::Malformed {
        what: "switch before the clock's start",
    })?;
    Ok(SwitchRecord { lane, time, what })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Decoder, Payload};

    fn sample(lane: LaneId, thread: u64, cpu: u64) -> LaneSample {
        LaneSample {
            lane,
            thread,
            switches_traced: lane == 1,
            counters: Counters {
                on_cpu_ns: Some(cpu),
                waiting_ns: Some(cpu / 10),
                voluntary: Some(7),
                involuntary: None,
                allocated_bytes: Some(cpu * 3),
                freed_bytes: Some(cpu),
            },
        }
    }

    fn batch<'a>(
        time: u64,
        lanes: &'a [LaneSample],
        switches: &'a [SwitchRecord],
    ) -> SamplesBatch<'a> {
        SamplesBatch {
            time,
            lanes,
            switches,
            ..SamplesBatch::default()
        }
    }

    fn parsed(bytes: &[u8]) -> (u8, u32, SamplesView<'_>) {
        // A payload borrowed from `bytes`: parse it in place.
        let payload = &bytes[crate::frame::HEADER_LEN..bytes.len() - crate::frame::TRAILER_LEN];
        (
            bytes[2],
            u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            SamplesView::parse(payload).unwrap(),
        )
    }

    #[test]
    fn the_largest_values_fit_the_stated_bound() {
        let lane = |lane| LaneSample {
            lane,
            thread: u64::MAX,
            switches_traced: true,
            counters: Counters {
                on_cpu_ns: Some(u64::MAX),
                waiting_ns: Some(u64::MAX),
                voluntary: Some(u64::MAX),
                involuntary: Some(u64::MAX),
                allocated_bytes: Some(u64::MAX),
                freed_bytes: Some(u64::MAX),
            },
        };
        let lanes = [lane(u16::MAX), lane(u16::MAX - 1)];
        let switches = [SwitchRecord {
            lane: u16::MAX,
            time: 0,
            what: Switch::In,
        }; 3];
        let frames = [u32::MAX; 3];
        let max = SiteTotals {
            allocated: u64::MAX,
            freed: u64::MAX,
            allocations: u64::MAX,
            frees: u64::MAX,
        };
        let sites = [SiteSample {
            site: u32::MAX,
            frames: &frames,
            totals: max,
        }; 2];
        let batch = SamplesBatch {
            memory: Some(Memory {
                allocated: u64::MAX,
                freed: u64::MAX,
                sampling_mean: u64::MAX,
                sampled: u64::MAX,
                missed: u64::MAX,
            }),
            sites: &sites,
            stacks: &[StackSample {
                lane: u16::MAX,
                time: 0,
                node: u32::MAX >> 14,
                unwinding: crate::stacks::Unwinding::UnwindTables,
                cut: true,
            }],
            ..batch(u64::MAX, &lanes, &switches)
        };
        let bound = batch.max_frame_len();
        let mut out = [0u8; 1024];
        let len = write_samples(&mut out, 0, &batch).unwrap();
        assert!(len <= bound, "{len} > {bound}");
        // Within a few bytes: the bound is not a guess.
        assert!(bound - len <= 32, "{len} of {bound}");
    }

    #[test]
    fn samples_round_trip_through_the_decoder() {
        let lanes = [sample(0, 4242, 1_000_000), sample(1, 4243, 5)];
        let switches = [
            SwitchRecord {
                lane: 1,
                time: 900,
                what: Switch::OutWaiting,
            },
            SwitchRecord {
                lane: 1,
                time: 990,
                what: Switch::In,
            },
        ];
        let frames = [7, 3, 9];
        let sites = [
            SiteSample {
                site: 0,
                frames: &frames,
                totals: SiteTotals {
                    allocated: 1 << 30,
                    freed: 1 << 20,
                    allocations: 2048,
                    frees: 2,
                },
            },
            SiteSample {
                site: 1,
                frames: &[],
                totals: SiteTotals::default(),
            },
        ];
        let memory = Memory {
            allocated: 5 << 30,
            freed: 4 << 30,
            sampling_mean: 512 << 10,
            sampled: 10_000,
            missed: 1,
        };
        let written = SamplesBatch {
            memory: Some(memory),
            sites: &sites,
            ..batch(1_000, &lanes, &switches)
        };
        let mut out = [0u8; 512];
        let len = write_samples(&mut out, 5, &written).unwrap();
        let mut buf = [0u8; 512];
        let mut decoder = Decoder::new(&mut buf);
        decoder.feed(&out[..len]);
        let frame = decoder.next().unwrap().unwrap();
        assert_eq!((frame.kind, frame.seq), (6, 5));
        let Payload::Samples(view) = frame.parse().unwrap() else {
            panic!("not a Samples frame");
        };
        assert_eq!(view.time, 1_000);
        assert!(view.lanes().eq(lanes));
        assert!(view.switches().eq(switches));
        assert_eq!(view.memory, Some(memory));
        let read: Vec<_> = view
            .sites()
            .map(|s| (s.site, s.frames.iter().collect::<Vec<_>>(), s.totals))
            .collect();
        let want: Vec<_> = sites
            .iter()
            .map(|s| (s.site, s.frames.to_vec(), s.totals))
            .collect();
        assert_eq!(read, want);
        let (kind, seq, again) = parsed(&out[..len]);
        assert_eq!((kind, seq, again), (6, 5, view));
    }

    #[test]
    fn unknown_counters_and_sections_are_skipped_and_bounds_hold() {
        let mut out = [0u8; 256];
        let len = write_frame(&mut out, FrameKind::Samples, 0, |w| {
            w.u64(50);
            write_section(w, 9, |w| w.bytes(b"later"))?;
            write_section(w, tag::LANES, |w| {
                w.u16(1);
                w.varint(3);
                w.varint(77);
                w.u8(0);
                w.u8(2);
                w.u8(7); // a counter of a later writer
                w.varint(123);
                w.u8(1);
                w.varint(40);
            })
        })
        .unwrap();
        let (_, _, view) = parsed(&out[..len]);
        let lane = view.lanes().next().unwrap();
        assert_eq!((lane.lane, lane.thread), (3, 77));
        assert_eq!(lane.counters.on_cpu_ns, Some(40));
        assert_eq!(view.switch_count(), 0);

        // Each payload's sections, as (tag, body bytes), and whether it is
        // over a bound (else malformed).
        type Sections<'s> = &'s [(u8, &'s [u8])];
        let refused: [(Sections<'_>, bool); 8] = [
            // 17 counters on a lane.
            (&[(tag::LANES, &[1, 0, 0, 0, 0, 17])], true),
            // A switch 51 ticks before a frame at 50.
            (&[(tag::SWITCHES, &[1, 0, 3, 51])], false),
            // Switches twice.
            (&[(tag::SWITCHES, &[0]), (tag::SWITCHES, &[0])], false),
            // A switch of kind 4.
            (&[(tag::SWITCHES, &[1, 0, 4, 0])], false),
            // Memory without its last total.
            (&[(tag::MEMORY, &[1, 2, 3, 4])], false),
            // A site of 65 frames.
            (&[(tag::SITES, &[1, 0, 65])], true),
            // 4097 sites.
            (&[(tag::SITES, &[0x81, 0x20])], true),
            // A site cut in its totals.
            (&[(tag::SITES, &[1, 0, 1, 5, 1, 1])], false),
        ];
        for (sections, over_bound) in refused {
            let mut out = [0u8; 64];
            let len = write_frame(&mut out, FrameKind::Samples, 0, |w| {
                w.u64(50);
                for &(tag, body) in sections {
                    write_section(w, tag, |w| w.bytes(body))?;
                }
                Ok(())
            })
            .unwrap();
            let parsed = SamplesView::parse(&out[16..len - 4]);
            if over_bound {
                assert!(
                    matches!(parsed, Err(DecodeError::OverBound { .. })),
                    "{sections:?}"
                );
            } else {
                assert!(
                    matches!(parsed, Err(DecodeError::Malformed { .. })),
                    "{sections:?}"
                );
            }
        }
    }

    #[test]
    fn a_switch_after_its_frame_too_many_lanes_or_too_deep_a_stack_are_refused() {
        let mut out = [0u8; 64];
        let late = SwitchRecord {
            lane: 0,
            time: 11,
            what: Switch::In,
        };
        assert!(write_samples(&mut out, 0, &batch(10, &[], &[late])).is_err());
        let lanes = [sample(0, 1, 1); MAX_SAMPLED_LANES + 1];
        assert!(write_samples(&mut out, 0, &batch(10, &lanes, &[])).is_err());
        let frames = [0; MAX_STACK_FRAMES + 1];
        let deep = [SiteSample {
            site: 0,
            frames: &frames,
            totals: SiteTotals::default(),
        }];
        let deep = SamplesBatch {
            sites: &deep,
            ..batch(10, &[], &[])
        };
        assert!(write_samples(&mut out, 0, &deep).is_err());
    }
}
