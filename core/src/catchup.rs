//! The Catch-up frame, about once a second: every claimed lane with its name
//! spelled out and its open spans, so a viewer that attached mid-session, or
//! lost frames, labels lanes correctly and sees a stall while it happens.
//!
//! Payload:
//! ```text
//! 8  timestamp (host clock ticks), u64 LE
//! 2  lane count, u16 LE
//! per lane: v lane id, 1 kind, v name id, str name, v true open depth,
//!           v open spans listed, then per span: v span id, v name id, v start
//! ```
//! (`v` is a LEB128 varint, `str` a varint length then UTF-8 bytes.)

use crate::cursor::{Reader, Writer};
use crate::error::{DecodeError, EncodeError};
use crate::event::{LaneKind, OpenSpan};
use crate::frame::{write_frame, FrameKind};
use crate::lane::{LaneInfo, Lanes, MAX_OPEN_SPANS};
use crate::names::NameSource;
use crate::section::{write_live_table, Count, Entries};

/// Writes a Catch-up frame of every lane in `lanes` at host time `now`,
/// for a reader told names `0..defined`.
///
/// The lanes are read after `now` was, while their threads run on: a span
/// that began since then, or whose name the reader has not been told, was
/// not open at the moment this frame describes, and is not listed (nor are
/// the spans inside it).
pub fn write_catchup<const L: usize, const N: usize>(
    out: &mut [u8],
    seq: u32,
    now: u64,
    defined: u32,
    lanes: &Lanes<L, N>,
    names: &impl NameSource,
) -> Result<usize, EncodeError> {
    write_frame(out, FrameKind::CatchUp, seq, |w| {
        w.u64(now);
        // Counted as written: threads may claim or release lanes meanwhile.
        write_live_table(w, lanes.iter(), |w, lane| {
            write_lane(w, now, defined, lanes, names, lane)
        });
        Ok(())
    })
}

fn write_lane<const L: usize, const N: usize>(
    w: &mut Writer<'_>,
    now: u64,
    defined: u32,
    lanes: &Lanes<L, N>,
    names: &impl NameSource,
    lane: LaneInfo,
) {
    w.varint(u64::from(lane.id));
    w.u8(lane.kind.to_byte());
    w.varint(u64::from(lane.name));
    w.str(names.get(lane.name).unwrap_or(""));
    let mut open = [OpenSpan::default(); MAX_OPEN_SPANS];
    let (mut listed, mut depth) = lanes.open_spans(lane.id, &mut open).unwrap_or((0, 0));
    // Outermost first: the spans inside a later one began later still.
    if let Some(later) = open[..listed]
        .iter()
        .position(|span| span.start > now || span.name >= defined)
    {
        listed = later;
        depth = later as u32;
    }
    w.varint(u64::from(depth));
    w.varint(listed as u64);
    for span in &open[..listed] {
        w.varint(u64::from(span.id));
        w.varint(u64::from(span.name));
        w.varint(span.start);
    }
}

/// One lane of a Catch-up frame.
#[derive(Clone)]
pub struct CatchUpLane<'a> {
    /// Lane identity.
    pub info: LaneInfo,
    /// The lane's name.
    pub name: &'a str,
    /// How many spans are open, which may exceed the spans listed.
    pub open_depth: u32,
    /// The outermost open spans.
    pub open: Entries<'a, OpenSpan>,
}

fn parse_open(r: &mut Reader<'_>) -> Result<OpenSpan, DecodeError> {
    Ok(OpenSpan {
        id: r.varint_u32("open span id")?,
        name: r.varint_u32("open span name")?,
        start: r.varint("open span start")?,
    })
}

fn parse_lane<'a>(r: &mut Reader<'a>) -> Result<CatchUpLane<'a>, DecodeError> {
    let id = r.varint_u16("catch-up lane id")?;
    let kind = LaneKind::from_byte(r.u8("catch-up lane kind")?);
    let name_id = r.varint_u32("catch-up lane name id")?;
    let name = r.str("catch-up lane name")?;
    let open_depth = r.varint_u32("open span depth")?;
    let listed = r.varint("open span count")?;
    let start = *r;
    *r = Entries::new(start, listed, parse_open).check()?;
    Ok(CatchUpLane {
        info: LaneInfo {
            id,
            name: name_id,
            kind,
        },
        name,
        open_depth,
        open: Entries::new(start, listed, parse_open),
    })
}

/// A checked Catch-up frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatchUpView<'a> {
    /// Host clock when it was written.
    pub time: u64,
    body: &'a [u8],
}

impl<'a> CatchUpView<'a> {
    /// Parses and checks a Catch-up payload.
    pub fn parse(payload: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let time = r.u64("catch-up timestamp")?;
        let body = r.rest();
        Entries::check_counted(body, Count::U16, "catch-up has trailing bytes", parse_lane)?;
        Ok(CatchUpView { time, body })
    }

    /// The lanes.
    pub fn lanes(&self) -> Entries<'a, CatchUpLane<'a>> {
        Entries::counted(self.body, Count::U16, parse_lane)
    }
}
