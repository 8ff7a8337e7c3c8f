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

/// One lane of a Catch-up to write: what a reader holds of a lane, for
/// [`write_catchup_of`].
#[derive(Clone, Copy, Debug)]
pub struct OpenLane<'a> {
    /// Lane identity.
    pub info: LaneInfo,
    /// The lane's name.
    pub name: &'a str,
    /// How many spans are open, at least `open.len()`.
    pub open_depth: u32,
    /// The outermost open spans, outermost first; their names must have
    /// been defined to the reader before the frame.
    pub open: &'a [OpenSpan],
}

/// Writes a Catch-up frame of `lanes` at host time `now`: the state of a
/// stream that a reader (the relay, a viewer) holds, written back out for
/// a reader that starts from it. Spans begun after `now` are not listed,
/// nor those inside them.
pub fn write_catchup_of<'a>(
    out: &mut [u8],
    seq: u32,
    now: u64,
    lanes: impl Iterator<Item = OpenLane<'a>>,
) -> Result<usize, EncodeError> {
    write_frame(out, FrameKind::CatchUp, seq, |w| {
        w.u64(now);
        write_live_table(w, lanes, |w, lane| {
            let (listed, depth) = begun_by(lane.open, lane.open_depth, now);
            write_open_lane(w, lane.info, lane.name, depth, &lane.open[..listed]);
        });
        Ok(())
    })
}

/// Of open spans `open` (outermost first) at depth `open_depth`, how many
/// a Catch-up at `now` lists, and the depth it states: none from the first
/// span begun after `now` (the spans inside it began later still), and a
/// depth of at least the spans listed. Writers and readers apply it alike.
pub fn begun_by(open: &[OpenSpan], open_depth: u32, now: u64) -> (usize, u32) {
    match open.iter().position(|span| span.start > now) {
        Some(listed) => (listed, listed as u32),
        None => (open.len(), open_depth.max(open.len() as u32)),
    }
}

fn write_open_lane(w: &mut Writer<'_>, info: LaneInfo, name: &str, depth: u32, open: &[OpenSpan]) {
    w.varint(u64::from(info.id));
    w.u8(info.kind.to_byte());
    w.varint(u64::from(info.name));
    w.str(name);
    w.varint(u64::from(depth));
    w.varint(open.len() as u64);
    for span in open {
        w.varint(u64::from(span.id));
        w.varint(u64::from(span.name));
        w.varint(span.start);
    }
}

fn write_lane<const L: usize, const N: usize>(
    w: &mut Writer<'_>,
    now: u64,
    defined: u32,
    lanes: &Lanes<L, N>,
    names: &impl NameSource,
    lane: LaneInfo,
) {
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
    let name = names.get(lane.name).unwrap_or("");
    write_open_lane(w, lane, name, depth, &open[..listed]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Decoder;

    #[test]
    fn written_state_reads_back_without_the_spans_begun_after_its_time() {
        let open = [
            OpenSpan {
                id: 1,
                name: 4,
                start: 10,
            },
            OpenSpan {
                id: 2,
                name: 5,
                start: 30,
            },
            OpenSpan {
                id: 3,
                name: 6,
                start: 40,
            },
        ];
        let lanes = [
            OpenLane {
                info: LaneInfo {
                    id: 2,
                    name: 7,
                    kind: LaneKind::Worker,
                },
                name: "worker",
                open_depth: 5,
                open: &open,
            },
            OpenLane {
                info: LaneInfo {
                    id: 0,
                    name: 8,
                    kind: LaneKind::Main,
                },
                name: "main",
                open_depth: 2,
                open: &open[..1],
            },
        ];
        let mut out = [0u8; 256];
        let n = write_catchup_of(&mut out, 9, 20, lanes.into_iter()).unwrap();
        let mut buf = [0u8; 256];
        let mut decoder = Decoder::new(&mut buf);
        assert_eq!(decoder.feed(&out[..n]), n);
        let frame = decoder.next().unwrap().unwrap();
        assert_eq!((frame.kind, frame.seq), (FrameKind::CatchUp.to_byte(), 9));
        let view = CatchUpView::parse(frame.payload).unwrap();
        assert_eq!(view.time, 20);
        let read: Vec<(LaneInfo, &str, u32, usize)> = view
            .lanes()
            .map(|l| (l.info, l.name, l.open_depth, l.open.count()))
            .collect();
        // Spans 2 and 3 began after 20: not listed, the depth cut to 1. A
        // lane listing all it has keeps its deeper depth.
        assert_eq!(
            read,
            [
                (lanes[0].info, "worker", 1, 1),
                (lanes[1].info, "main", 2, 1),
            ]
        );
    }
}
