//! Tagged, length-prefixed sections, and the two that both Init and
//! Definitions carry: names and lanes.
//!
//! ```text
//! 0  1  tag
//! 1  4  body length, u32 LE
//! 5  n  body
//! ```
//! A reader skips a section whose tag it does not know.

use crate::cursor::{Reader, Writer};
use crate::error::{DecodeError, EncodeError};
use crate::event::{LaneKind, NameId};
use crate::lane::LaneInfo;

/// Section tags of Init and Definitions (1 to 8 since format version 1).
pub(crate) mod tag {
    pub const COMPONENTS: u8 = 1;
    pub const ARCHETYPES: u8 = 2;
    pub const INDEXES: u8 = 3;
    pub const CONFIG: u8 = 4;
    pub const QUEUES: u8 = 5;
    pub const RESOURCES: u8 = 6;
    pub const NAMES: u8 = 7;
    pub const LANES: u8 = 8;
    pub const STACK_NODES: u8 = 9;
    pub const FRAME_SYMBOLS: u8 = 10;
    pub const MODULES: u8 = 11;
}

/// Writes one section whose body `body` writes.
pub(crate) fn write_section(
    w: &mut Writer<'_>,
    tag: u8,
    body: impl FnOnce(&mut Writer<'_>),
) -> Result<(), EncodeError> {
    w.u8(tag);
    let at = w.position();
    w.u32(0);
    body(w);
    let len = w.position() - at - 4;
    let len = u32::try_from(len).map_err(|_| EncodeError::TooManyItems { what: "section" })?;
    w.patch_u32(at, len);
    Ok(())
}

/// Splits a payload into `(tag, body)` pairs.
#[derive(Clone)]
pub(crate) struct Sections<'a> {
    r: Reader<'a>,
}

impl<'a> Sections<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Sections {
            r: Reader::new(bytes),
        }
    }

    pub fn next_section(&mut self) -> Result<Option<(u8, &'a [u8])>, DecodeError> {
        if self.r.is_empty() {
            return Ok(None);
        }
        let tag = self.r.u8("section tag")?;
        let len = self.r.u32("section length")?;
        let body = self
            .r
            .take(len as usize, "section body runs past the payload")?;
        Ok(Some((tag, body)))
    }

    /// The body of the first section tagged `want` (sections were checked
    /// when the frame was parsed).
    pub fn find(bytes: &'a [u8], want: u8) -> &'a [u8] {
        let mut sections = Sections::new(bytes);
        while let Ok(Some((tag, body))) = sections.next_section() {
            if tag == want {
                return body;
            }
        }
        &[]
    }
}

/// A lazily parsed table: a varint count then entries, each read by `parse`.
///
/// Frames are checked whole when parsed, so iteration cannot meet an error;
/// should it anyway, the iterator ends rather than panicking.
pub struct Entries<'a, T> {
    r: Reader<'a>,
    left: u64,
    parse: fn(&mut Reader<'a>) -> Result<T, DecodeError>,
}

impl<T> Clone for Entries<'_, T> {
    fn clone(&self) -> Self {
        Entries {
            r: self.r,
            left: self.left,
            parse: self.parse,
        }
    }
}

/// How a table states its entry count.
#[derive(Clone, Copy)]
pub(crate) enum Count {
    /// A leading varint: tables written from data that cannot change
    /// while it is written.
    Varint,
    /// A leading `u16`, patched after the entries: tables of lanes, which
    /// threads may claim or release while the table is being written.
    U16,
}

impl Count {
    fn read(self, r: &mut Reader<'_>) -> Result<u64, DecodeError> {
        match self {
            Count::Varint => r.varint("table count"),
            Count::U16 => r.u16("table count").map(u64::from),
        }
    }
}

impl<'a, T> Entries<'a, T> {
    /// A table whose count leads the body.
    pub(crate) fn counted(
        body: &'a [u8],
        count: Count,
        parse: fn(&mut Reader<'a>) -> Result<T, DecodeError>,
    ) -> Self {
        let mut r = Reader::new(body);
        let left = count.read(&mut r).unwrap_or(0);
        Entries { r, left, parse }
    }

    /// A table of `left` entries starting at `r`.
    pub(crate) fn new(
        r: Reader<'a>,
        left: u64,
        parse: fn(&mut Reader<'a>) -> Result<T, DecodeError>,
    ) -> Self {
        Entries { r, left, parse }
    }

    /// Walks every entry and the rest of `r`, for up-front checking.
    /// Returns the reader positioned after the last entry.
    pub(crate) fn check(mut self) -> Result<Reader<'a>, DecodeError> {
        while self.left > 0 {
            self.left -= 1;
            (self.parse)(&mut self.r)?;
        }
        Ok(self.r)
    }

    /// Checks a counted table that fills its whole body.
    pub(crate) fn check_counted(
        body: &'a [u8],
        count: Count,
        what: &'static str,
        parse: fn(&mut Reader<'a>) -> Result<T, DecodeError>,
    ) -> Result<(), DecodeError> {
        let mut r = Reader::new(body);
        let left = count.read(&mut r)?;
        Entries::new(r, left, parse).check()?.expect_end(what)
    }
}

impl<T> Iterator for Entries<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        match (self.parse)(&mut self.r) {
            Ok(item) => Some(item),
            Err(_) => {
                self.left = 0;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // Every entry takes at least one byte.
        (0, Some(self.r.remaining().min(self.left as usize)))
    }
}

/// Writes the names section: names `first..first + count`, looked up by `get`.
pub(crate) fn write_names<'n>(
    w: &mut Writer<'_>,
    first: NameId,
    count: u32,
    get: impl Fn(NameId) -> Option<&'n str>,
) -> Result<(), EncodeError> {
    write_section(w, tag::NAMES, |w| {
        w.varint(u64::from(first));
        w.varint(u64::from(count));
        for id in first..first.saturating_add(count) {
            // A name that vanished cannot happen with an append-only table;
            // an empty string keeps the ids dense if a host's source lies.
            w.str(get(id).unwrap_or(""));
        }
    })
}

/// Writes the lanes section.
pub(crate) fn write_lanes(
    w: &mut Writer<'_>,
    lanes: impl Iterator<Item = LaneInfo>,
) -> Result<(), EncodeError> {
    write_section(w, tag::LANES, |w| {
        write_live_table(w, lanes, |w, lane| {
            w.varint(u64::from(lane.id));
            w.varint(u64::from(lane.name));
            w.u8(lane.kind.to_byte());
        });
    })
}

/// Writes a [`Count::U16`] table: the entries `items` yields while it is
/// walked once, counted as they are written (lane ids are `u16`, so a
/// table of distinct lanes always fits).
pub(crate) fn write_live_table<T>(
    w: &mut Writer<'_>,
    items: impl Iterator<Item = T>,
    mut entry: impl FnMut(&mut Writer<'_>, T),
) {
    let at = w.position();
    w.u16(0);
    let mut count = 0u16;
    for item in items.take(usize::from(u16::MAX)) {
        entry(w, item);
        count += 1;
    }
    w.patch_u16(at, count);
}

/// The names of a names section, as `(id, name)` in id order.
#[derive(Clone)]
pub struct Names<'a> {
    r: Reader<'a>,
    next_id: NameId,
    left: u32,
}

impl<'a> Names<'a> {
    pub(crate) const EMPTY: Names<'static> = Names {
        r: Reader::EMPTY,
        next_id: 0,
        left: 0,
    };

    pub(crate) fn parse(body: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body);
        if body.is_empty() {
            return Ok(Names::EMPTY);
        }
        let next_id = r.varint_u32("first name id")?;
        let left = r.varint_u32("name count")?;
        if u64::from(next_id) + u64::from(left) > u64::from(u32::MAX) + 1 {
            return Err(DecodeError::Malformed {
                what: "name ids overflow u32",
            });
        }
        let names = Names { r, next_id, left };
        let mut check = names.clone();
        for _ in 0..left {
            check.r.str("name")?;
        }
        check.r.expect_end("names section has trailing bytes")?;
        Ok(names)
    }

    /// Number of names in the section.
    pub fn len(&self) -> u32 {
        self.left
    }

    /// True when the section defines no name.
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }
}

impl<'a> Iterator for Names<'a> {
    type Item = (NameId, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let name = self.r.str("name").ok()?;
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        Some((id, name))
    }
}

pub(crate) fn parse_lane(r: &mut Reader<'_>) -> Result<LaneInfo, DecodeError> {
    Ok(LaneInfo {
        id: r.varint_u16("lane id")?,
        name: r.varint_u32("lane name id")?,
        kind: LaneKind::from_byte(r.u8("lane kind")?),
    })
}

/// The lanes of a lanes section.
pub type LaneTable<'a> = Entries<'a, LaneInfo>;

/// The lanes of a lanes section body (checked when its frame was parsed).
pub(crate) fn lane_table(body: &[u8]) -> LaneTable<'_> {
    Entries::counted(body, Count::U16, parse_lane)
}

/// Checks a lanes section body.
pub(crate) fn check_lane_table(body: &[u8]) -> Result<(), DecodeError> {
    Entries::check_counted(
        body,
        Count::U16,
        "lane table has trailing bytes",
        parse_lane,
    )
}
