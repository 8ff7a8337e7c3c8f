//! A Block's packed events made another stream's: each lane group's lane
//! and each record's name mapped, every other byte as it was. The relay
//! forwards a source's Blocks this way instead of decoding and encoding
//! them again. A Block's times count from its first timestamp, so moving
//! it in time changes its header alone, and the name column is the only
//! column whose values change: it is the only one packed again.
//!
//! A record whose other columns hold ids of its stream (a task's id, a
//! string field's value, a mark's span, a field owned by a task) or a
//! kind this version reserves is not relabelled here:
//! [`relabel_events`] says so, and the caller encodes that Block again
//! from its decoded events.

use core::fmt;

use super::{col, record_code, FLAG_B, KIND_SHIFT};
use crate::column::{ColumnReader, Layout, MAX_HEADER_LEN, MAX_ROUNDING};
use crate::cursor::{Reader, Writer};
use crate::error::DecodeError;
use crate::event::{kind, LaneId, NameId};

/// How one stream's lanes and names are another's.
pub trait Relabel {
    /// The lane a group of `lane` goes to, if any.
    fn lane(&self, lane: LaneId) -> Option<LaneId>;
    /// A span's, an instant's or a field key's name.
    fn name(&self, name: NameId) -> NameId;
    /// A gauge's name.
    fn gauge(&self, gauge: NameId) -> NameId;
}

/// Why a Block's events were not relabelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RelabelError {
    /// A record of this kind keeps ids of its stream outside the name
    /// column (or is of a reserved kind): the Block must be encoded again.
    Kind {
        /// The record's kind.
        kind: u8,
    },
    /// A lane group's lane has no counterpart.
    Lane {
        /// The group's lane.
        lane: LaneId,
    },
    /// The name scratch holds fewer values than a group's records.
    ScratchTooSmall {
        /// Values it needs.
        needed: usize,
    },
    /// The output buffer is too small.
    BufferTooSmall {
        /// Bytes that would have been enough, at least.
        needed: usize,
    },
    /// The events break a rule of the format.
    Decode(DecodeError),
}

impl From<DecodeError> for RelabelError {
    fn from(error: DecodeError) -> Self {
        RelabelError::Decode(error)
    }
}

impl fmt::Display for RelabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RelabelError::Kind { kind } => {
                write!(
                    f,
                    "a record of kind {kind} keeps ids outside its name column"
                )
            }
            RelabelError::Lane { lane } => write!(f, "lane {lane} has no counterpart"),
            RelabelError::ScratchTooSmall { needed } => {
                write!(f, "name scratch too small: {needed} values needed")
            }
            RelabelError::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: at least {needed} bytes needed")
            }
            RelabelError::Decode(error) => write!(f, "the events do not read: {error}"),
        }
    }
}

impl core::error::Error for RelabelError {}

/// The largest output [`relabel_events`] can write for `packed_len`
/// bytes of packed events holding `records` records: a name packs in at
/// most 4 bytes (its spread's width is one the layout weighs), and each
/// group, of at least one record, writes its name column's header anew.
pub const fn relabelled_len_bound(packed_len: usize, records: u32) -> usize {
    packed_len + records as usize * (4 + MAX_HEADER_LEN + MAX_ROUNDING)
}

/// Writes `packed`, a Block's packed events (FORMAT.md, "Block": what
/// follows the drop entries, decompressed) holding `records` records,
/// into `out` with each lane group's lane and each record's name mapped
/// by `map`; returns the bytes written. `names` is scratch for one
/// group's names (as many as its records).
///
/// The group table and the kind and name columns are checked as a reader
/// checks them; the other columns' headers and sizes are, but their
/// values are copied unread. Relabel a Block that read whole
/// ([`BlockEvents`](super::BlockEvents) returned no error), as the relay
/// does.
pub fn relabel_events(
    packed: &[u8],
    records: u32,
    map: &impl Relabel,
    names: &mut [u64],
    out: &mut [u8],
) -> Result<usize, RelabelError> {
    let mut r = Reader::new(packed);
    let mut w = Writer::new(out);
    if records == 0 {
        r.expect_end("empty block carries event bytes")?;
        return Ok(0);
    }
    let groups = r.varint("block group count")?;
    if groups > u64::from(records) {
        return Err(DecodeError::Malformed {
            what: "block group count",
        }
        .into());
    }
    w.varint(groups);
    let mut left = records;
    for _ in 0..groups {
        let lane = r.u16("lane group id")?;
        let count = r.varint_u32("lane group count")?;
        left = left.checked_sub(count).ok_or(DecodeError::Malformed {
            what: "block holds more records than stated",
        })?;
        let first = r.varint("lane group first time")?;
        w.u16(map.lane(lane).ok_or(RelabelError::Lane { lane })?);
        w.varint(u64::from(count));
        w.varint(first);
        // Every column's extent, to copy all but the name column as is.
        let mut columns = [ColumnReader::EMPTY; col::COUNT];
        let mut stored: [&[u8]; col::COUNT] = [&[]; col::COUNT];
        for c in 0..col::COUNT {
            let before = r.rest();
            columns[c] = ColumnReader::parse(&mut r, count, col::WHAT[c])?;
            stored[c] = before.get(..before.len() - r.remaining()).unwrap_or(&[]);
        }
        let names = names
            .get_mut(..count as usize)
            .ok_or(RelabelError::ScratchTooSmall {
                needed: count as usize,
            })?;
        let (codes, names_read) = (columns[col::CODE], columns[col::NAME]);
        let (n, lo, hi) = relabel_names(codes, names_read, count, map, names)?;
        for (c, bytes) in stored.into_iter().enumerate() {
            if c == col::NAME {
                let values = names[..n].iter().copied();
                Layout::choose(values.clone(), n, lo, hi).write(&mut w, n, values);
            } else {
                w.bytes(bytes);
            }
        }
    }
    r.expect_end("block has bytes after its last group")?;
    if left > 0 {
        return Err(DecodeError::Malformed {
            what: "block holds fewer records than stated",
        }
        .into());
    }
    if w.overflowed() {
        return Err(RelabelError::BufferTooSmall {
            needed: w.position(),
        });
    }
    Ok(w.position())
}

/// A group's `count` records' names, read from its kind and name columns
/// and mapped by each one's kind, into `names`: how many, the smallest and
/// the largest. Every value of both columns must be read.
fn relabel_names(
    mut codes: ColumnReader<'_>,
    mut name_column: ColumnReader<'_>,
    count: u32,
    map: &impl Relabel,
    names: &mut [u64],
) -> Result<(usize, u64, u64), RelabelError> {
    let (mut n, mut lo, mut hi) = (0, u64::MAX, 0);
    let mut record = |code: u8| -> Result<(), RelabelError> {
        let kind = code >> KIND_SHIFT;
        let mapped = match kind {
            kind::TICK_START | kind::TICK_END => return Ok(()),
            kind::SPAN | kind::INSTANT => map.name(name_of(&mut name_column)?),
            // A field owned by a span: its owner is a span id, which
            // stays; one owned by a task names the task's id.
            kind::FIELD_INT | kind::FIELD_FLOAT if code & FLAG_B != 0 => {
                map.name(name_of(&mut name_column)?)
            }
            kind::GAUGE => map.gauge(name_of(&mut name_column)?),
            // Its name is none, whatever was written.
            kind::ALLOCATED => {
                name_column.next()?;
                0
            }
            _ => return Err(RelabelError::Kind { kind }),
        };
        let mapped = u64::from(mapped);
        if let Some(slot) = names.get_mut(n) {
            *slot = mapped;
        }
        (lo, hi) = (lo.min(mapped), hi.max(mapped));
        n += 1;
        Ok(())
    };
    // A group of one kind (a worker's spans) states its code once.
    if let Some(code) = codes.constant(count as usize) {
        let code = record_code(code)?;
        for _ in 0..count {
            record(code)?;
        }
    } else {
        for _ in 0..count {
            record(record_code(codes.next()?)?)?;
        }
    }
    codes.expect_end()?;
    name_column.expect_end()?;
    Ok((n, lo, hi))
}

/// The next name id of a name column.
fn name_of(column: &mut ColumnReader<'_>) -> Result<NameId, DecodeError> {
    let value = column.next()?;
    NameId::try_from(value).map_err(|_| DecodeError::Malformed {
        what: "record name",
    })
}
