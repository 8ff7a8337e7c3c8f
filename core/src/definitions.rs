//! The Definitions frame: names interned and lanes claimed after a reader's
//! Init. Never dropped by a sender, so a reader can always name every id it
//! receives: it is sent before the first Block that uses what it defines.
//!
//! Payload: a names section (ids `first..first + count`) and a lanes section
//! (the whole current lane table), both as in Init.

use crate::error::{DecodeError, EncodeError};
use crate::frame::{write_frame, FrameKind};
use crate::lane::LaneInfo;
use crate::names::NameSource;
use crate::section::{self, tag, LaneTable, Names, Sections};

/// Writes a Definitions frame with names `first..names.count()` and the lanes.
pub fn write_definitions(
    out: &mut [u8],
    seq: u32,
    names: &impl NameSource,
    first: u32,
    lanes: impl Iterator<Item = LaneInfo>,
) -> Result<usize, EncodeError> {
    let count = names.count().saturating_sub(first);
    write_frame(out, FrameKind::Definitions, seq, |w| {
        section::write_names(w, first, count, |id| names.get(id))?;
        section::write_lanes(w, lanes)
    })
}

/// Writes a Definitions frame with names `first..first + count` of `names`
/// and no lanes section (the reader's lane table stays as it is): how a
/// reader's state with gaps in its name ids is written back out, a run of
/// ids a frame.
pub fn write_names(
    out: &mut [u8],
    seq: u32,
    names: &impl NameSource,
    first: u32,
    count: u32,
) -> Result<usize, EncodeError> {
    write_frame(out, FrameKind::Definitions, seq, |w| {
        section::write_names(w, first, count, |id| names.get(id))
    })
}

/// A checked Definitions frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefinitionsView<'a> {
    payload: &'a [u8],
}

impl<'a> DefinitionsView<'a> {
    /// Parses and checks a Definitions payload.
    pub fn parse(payload: &'a [u8]) -> Result<Self, DecodeError> {
        let mut sections = Sections::new(payload);
        while let Some((tag, body)) = sections.next_section()? {
            match tag {
                tag::NAMES => {
                    Names::parse(body)?;
                }
                tag::LANES => section::check_lane_table(body)?,
                _ => {}
            }
        }
        Ok(DefinitionsView { payload })
    }

    /// The names defined, as `(id, name)`: none without a names section.
    pub fn names(&self) -> Names<'a> {
        Names::parse(Sections::find(self.payload, tag::NAMES)).unwrap_or(Names::EMPTY)
    }

    /// The lane table at the time of writing, which replaces the
    /// reader's (a lane missing from it was freed); `None` when the frame
    /// has no lanes section, which leaves the reader's table as it is.
    pub fn lanes(&self) -> Option<LaneTable<'a>> {
        let mut sections = Sections::new(self.payload);
        while let Ok(Some((tag, body))) = sections.next_section() {
            if tag == tag::LANES {
                return Some(section::lane_table(body));
            }
        }
        None
    }
}
