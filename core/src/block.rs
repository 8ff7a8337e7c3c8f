//! The Block frame: one drained batch of events, compactly encoded then
//! LZ4-compressed (lz4_flex raw block format, which does not store the
//! uncompressed length, so the Block header does).
//!
//! Payload:
//! ```text
//! 0   4  uncompressed length, u32 LE
//! 4   4  record count, u32 LE
//! 8   8  first timestamp (earliest event time), u64 LE
//! 16  8  last timestamp (latest event end), u64 LE
//! 24  2  drop entry count k, u16 LE
//! 26  6k (lane u16 LE, events dropped since the previous Block u32 LE)
//! ..     LZ4 raw block
//! ```
//! The uncompressed bytes hold two streams, `structure length u32 LE`,
//! then the structure stream, then the values stream. Structure: lane
//! groups (`lane u16, count u32`) and per record its kind byte, name and
//! span-id fields: small, repetitive, LZ4 finds long matches. Values:
//! per record its timestamp delta, duration, argument or payload: noisy,
//! kept apart so that they do not break the structure's matches. On a
//! realistic batch this takes LZ4 from 8.4 to 7.2 bytes per event (see
//! `cargo bench -p typhon-live-tests --bench block`). FORMAT.md has every
//! field.

use crate::cursor::{Reader, MAX_VARINT_LEN};
use crate::error::{DecodeError, EncodeError};
use crate::event::{kind, Event, GaugeValue, LaneId, SpanId};
use crate::frame::{write_frame, FrameKind, OVERHEAD};
use lz4_flex::block::get_maximum_output_size as lz4_max_output;

const FIXED_HEADER: usize = 26;
const GROUP_HEADER: usize = 6;
/// Worst case of one record in the structure stream: kind, name, id, parent.
const MAX_STRUCTURE: usize = 1 + 3 * 5;
/// Worst case of one record in the values stream: time, duration, argument.
const MAX_VALUES: usize = 3 * MAX_VARINT_LEN;
/// Worst-case encoded size of one record (a span with every field).
pub const MAX_RECORD_LEN: usize = MAX_STRUCTURE + MAX_VALUES;
/// Bytes before the structure stream: its length.
const STREAMS_HEADER: usize = 4;

/// Span has an argument / gauge is a float / tick overran.
const FLAG_A: u8 = 0x10;
/// Span has a parent.
const FLAG_B: u8 = 0x20;

/// Largest frame a Block with `uncompressed` bytes and `drop_entries` drop
/// entries can need: the buffer size to give the encoder.
pub const fn max_block_frame_len(uncompressed: usize, drop_entries: usize) -> usize {
    OVERHEAD + FIXED_HEADER + 6 * drop_entries + lz4_max_output(uncompressed)
}

/// Delta state of one lane group, shared by encoder and decoder.
#[derive(Clone, Copy, Default)]
struct Group {
    lane: LaneId,
    count_at: usize,
    count: u32,
    prev_time: u64,
    prev_span: SpanId,
}

/// Encodes events into the uncompressed Block layout, in a caller buffer.
///
/// The structure stream grows from the front of the buffer and the values
/// stream from its middle; [`BlockBuilder::bytes`] closes the gap.
pub struct BlockBuilder<'s> {
    buf: &'s mut [u8],
    /// Where the values stream starts while building.
    split: usize,
    structure_len: usize,
    values_len: usize,
    sealed: bool,
    records: u32,
    first: u64,
    last: u64,
    group: Option<Group>,
}

impl<'s> BlockBuilder<'s> {
    /// An empty builder over `scratch`, which bounds the Block's size.
    pub fn new(scratch: &'s mut [u8]) -> Self {
        // Values take about three fifths of a realistic batch.
        let split = STREAMS_HEADER + (scratch.len().saturating_sub(STREAMS_HEADER)) * 2 / 5;
        BlockBuilder {
            split: split.min(scratch.len()),
            buf: scratch,
            structure_len: 0,
            values_len: 0,
            sealed: false,
            records: 0,
            first: u64::MAX,
            last: 0,
            group: None,
        }
    }

    /// Forgets every event, keeping the buffer.
    pub fn clear(&mut self) {
        self.structure_len = 0;
        self.values_len = 0;
        self.sealed = false;
        self.records = 0;
        self.first = u64::MAX;
        self.last = 0;
        self.group = None;
    }

    /// Size of the scratch buffer: the most uncompressed bytes a Block holds.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Events in the Block so far.
    pub fn records(&self) -> u32 {
        self.records
    }

    /// True when no event was added.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Closes the Block and returns its uncompressed bytes; later pushes
    /// are refused until [`BlockBuilder::clear`].
    /// A Block without events has no bytes at all.
    pub fn bytes(&mut self) -> &[u8] {
        if self.records == 0 {
            self.sealed = true;
            return &[];
        }
        if !self.sealed {
            self.close_group();
            // A record was pushed, so the buffer holds the streams header.
            let values_at = self.split;
            let structure_end = STREAMS_HEADER + self.structure_len;
            self.buf[..STREAMS_HEADER].copy_from_slice(&(self.structure_len as u32).to_le_bytes());
            self.buf
                .copy_within(values_at..values_at + self.values_len, structure_end);
            self.sealed = true;
        }
        &self.buf[..STREAMS_HEADER + self.structure_len + self.values_len]
    }

    /// Earliest event time and latest event end, `(0, 0)` when empty.
    pub fn time_range(&self) -> (u64, u64) {
        if self.records == 0 {
            (0, 0)
        } else {
            (self.first, self.last)
        }
    }

    /// Whether one more event of `lane` is guaranteed to fit.
    #[inline]
    pub fn has_room(&self, lane: LaneId) -> bool {
        let group = match self.group {
            Some(g) if g.lane == lane => 0,
            _ => GROUP_HEADER,
        };
        let structure_room = self.split - STREAMS_HEADER.min(self.split) - self.structure_len;
        let values_room = self.buf.len() - self.split - self.values_len;
        !self.sealed && structure_room >= group + MAX_STRUCTURE && values_room >= MAX_VALUES
    }

    /// Appends `event` of `lane`; `false` (and nothing written) without room.
    pub fn push(&mut self, lane: LaneId, event: &Event) -> bool {
        if !self.has_room(lane) {
            return false;
        }
        if self.group.is_none_or(|g| g.lane != lane) {
            self.close_group();
            let at = STREAMS_HEADER + self.structure_len;
            let mut header = [0u8; GROUP_HEADER];
            header[..2].copy_from_slice(&lane.to_le_bytes());
            // The count (bytes 2..6) is written when the group closes.
            self.buf[at..at + GROUP_HEADER].copy_from_slice(&header);
            self.structure_len += GROUP_HEADER;
            self.group = Some(Group {
                lane,
                count_at: at + 2,
                ..Group::default()
            });
        }
        let mut structure = Record::<MAX_STRUCTURE>::new();
        let mut values = Record::<MAX_VALUES>::new();
        if let Some(group) = &mut self.group {
            encode_record(&mut structure, &mut values, group, event);
            group.count += 1;
        }
        // `has_room` guaranteed a worst-case record's room in both streams,
        // so each is copied out as one fixed-size move.
        let at = STREAMS_HEADER + self.structure_len;
        self.buf[at..at + MAX_STRUCTURE].copy_from_slice(&structure.bytes);
        let at = self.split + self.values_len;
        self.buf[at..at + MAX_VALUES].copy_from_slice(&values.bytes);
        self.structure_len += structure.len;
        self.values_len += values.len;
        self.records += 1;
        self.first = self.first.min(event.time());
        self.last = self.last.max(event.end_time());
        true
    }

    /// Writes the open group's record count into its header.
    fn close_group(&mut self) {
        if let Some(group) = self.group.take() {
            if let Some(count) = self.buf.get_mut(group.count_at..group.count_at + 4) {
                count.copy_from_slice(&group.count.to_le_bytes());
            }
        }
    }
}

/// One record's bytes in one stream, built on the stack.
struct Record<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Record<N> {
    #[inline]
    fn new() -> Self {
        Record {
            bytes: [0; N],
            len: 0,
        }
    }

    #[inline]
    fn u8(&mut self, byte: u8) {
        // N is each stream's worst case, so this never falls off the end.
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
    }

    #[inline]
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.u8(v as u8 | 0x80);
            v >>= 7;
        }
        self.u8(v as u8);
    }

    #[inline]
    fn zigzag(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    #[inline]
    fn u64(&mut self, v: u64) {
        for byte in v.to_le_bytes() {
            self.u8(byte);
        }
    }
}

#[inline]
fn encode_record(
    s: &mut Record<MAX_STRUCTURE>,
    v: &mut Record<MAX_VALUES>,
    g: &mut Group,
    event: &Event,
) {
    let time = event.time();
    v.zigzag(time.wrapping_sub(g.prev_time) as i64);
    // Deltas run from the previous record's end: back-to-back spans then
    // cost the gap between them, not the previous span's duration again.
    g.prev_time = match *event {
        Event::Span { duration, .. } => time.wrapping_add(duration),
        _ => time,
    };
    match *event {
        Event::Span {
            duration,
            name,
            id,
            parent,
            arg,
            ..
        } => {
            let mut code = kind::SPAN;
            if arg.is_some() {
                code |= FLAG_A;
            }
            if parent != 0 {
                code |= FLAG_B;
            }
            s.u8(code);
            s.varint(u64::from(name));
            s.zigzag(i64::from(id.wrapping_sub(g.prev_span) as i32));
            g.prev_span = id;
            if parent != 0 {
                s.varint(u64::from(id.wrapping_sub(parent)));
            }
            v.varint(duration);
            if let Some(arg) = arg {
                v.varint(arg);
            }
        }
        Event::Instant { name, payload, .. } => {
            s.u8(kind::INSTANT);
            s.varint(u64::from(name));
            v.varint(payload);
        }
        Event::Gauge { gauge, value, .. } => match value {
            GaugeValue::Int(x) => {
                s.u8(kind::GAUGE);
                s.varint(u64::from(gauge));
                v.zigzag(x);
            }
            GaugeValue::Float(x) => {
                s.u8(kind::GAUGE | FLAG_A);
                s.varint(u64::from(gauge));
                v.u64(x.to_bits());
            }
        },
        Event::TickStart { tick, .. } => {
            s.u8(kind::TICK_START);
            v.varint(tick);
        }
        Event::TickEnd { tick, overrun, .. } => {
            s.u8(kind::TICK_END | if overrun { FLAG_A } else { 0 });
            v.varint(tick);
        }
    }
}

/// Writes a Block frame: closes `block` and compresses its bytes into `out`
/// with the per-lane drop counts `drops`. On `Err` the Block is kept, closed,
/// for another try with a larger buffer.
pub fn write_block(
    out: &mut [u8],
    seq: u32,
    block: &mut BlockBuilder<'_>,
    drops: &[(LaneId, u32)],
) -> Result<usize, EncodeError> {
    let records = block.records();
    let (first, last) = block.time_range();
    let uncompressed = block.bytes();
    let needed = max_block_frame_len(uncompressed.len(), drops.len());
    if out.len() < needed {
        return Err(EncodeError::BufferTooSmall { needed });
    }
    let drop_count = u16::try_from(drops.len()).map_err(|_| EncodeError::TooManyItems {
        what: "block drop entries",
    })?;
    let len = u32::try_from(uncompressed.len()).map_err(|_| EncodeError::PayloadTooLarge {
        len: uncompressed.len(),
    })?;
    write_frame(out, FrameKind::Block, seq, |w| {
        w.u32(len);
        w.u32(records);
        w.u64(first);
        w.u64(last);
        w.u16(drop_count);
        for &(lane, dropped) in drops {
            w.u16(lane);
            w.u32(dropped);
        }
        if !uncompressed.is_empty() {
            w.fill_with(lz4_max_output(uncompressed.len()), |dst| {
                lz4_flex::block::compress_into(uncompressed, dst).ok()
            });
        }
        Ok(())
    })
}

/// A Block frame's header over the caller's bytes; events come from
/// [`BlockView::decompress`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockView<'a> {
    /// Length of the uncompressed event bytes.
    pub uncompressed_len: u32,
    /// Number of events.
    pub records: u32,
    /// Earliest event time.
    pub first_time: u64,
    /// Latest event end.
    pub last_time: u64,
    drops: &'a [u8],
    compressed: &'a [u8],
}

impl<'a> BlockView<'a> {
    /// Parses a Block payload's header.
    pub fn parse(payload: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let uncompressed_len = r.u32("block uncompressed length")?;
        let records = r.u32("block record count")?;
        let first_time = r.u64("block first timestamp")?;
        let last_time = r.u64("block last timestamp")?;
        let drop_count = r.u16("block drop count")?;
        let drops = r.take(usize::from(drop_count) * 6, "block drop entries")?;
        Ok(BlockView {
            uncompressed_len,
            records,
            first_time,
            last_time,
            drops,
            compressed: r.rest(),
        })
    }

    /// Compressed size of the events.
    pub fn compressed_len(&self) -> usize {
        self.compressed.len()
    }

    /// `(lane, events dropped since the previous Block)` pairs.
    pub fn drops(&self) -> impl Iterator<Item = (LaneId, u32)> + 'a {
        self.drops.chunks_exact(6).map(|c| {
            (
                u16::from_le_bytes([c[0], c[1]]),
                u32::from_le_bytes([c[2], c[3], c[4], c[5]]),
            )
        })
    }

    /// Decompresses into `buf` and returns an iterator over the events.
    pub fn decompress<'b>(&self, buf: &'b mut [u8]) -> Result<BlockEvents<'b>, DecodeError> {
        let len = self.uncompressed_len as usize;
        if len == 0 {
            // No events: no streams and no LZ4 data.
            if !self.compressed.is_empty() {
                return Err(DecodeError::Malformed {
                    what: "empty block carries compressed data",
                });
            }
            return Ok(BlockEvents {
                structure: Reader::EMPTY,
                values: Reader::EMPTY,
                expected: self.records,
                seen: 0,
                group: Group::default(),
                left_in_group: 0,
                done: false,
            });
        }
        let max = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let dst = buf.get_mut(..len).ok_or(DecodeError::BlockTooLarge {
            len: self.uncompressed_len,
            max,
        })?;
        let n = lz4_flex::block::decompress_into(self.compressed, dst).map_err(|e| {
            use lz4_flex::block::DecompressError as E;
            DecodeError::Lz4 {
                what: match e {
                    E::OutputTooSmall { .. } => "output larger than the stated length",
                    E::LiteralOutOfBounds => "literal out of bounds",
                    E::ExpectedAnotherByte => "input ends early",
                    E::OffsetOutOfBounds => "match offset out of bounds",
                    E::OffsetZero => "match offset is zero",
                    _ => "invalid data",
                },
            }
        })?;
        if n != len {
            return Err(DecodeError::Malformed {
                what: "block decompresses to fewer bytes than stated",
            });
        }
        let mut r = Reader::new(&buf[..len]);
        let structure_len = r.u32("block structure length")?;
        let structure = r.take(structure_len as usize, "block structure length")?;
        Ok(BlockEvents {
            structure: Reader::new(structure),
            values: Reader::new(r.rest()),
            expected: self.records,
            seen: 0,
            group: Group::default(),
            left_in_group: 0,
            done: false,
        })
    }
}

/// The events of a decompressed Block, as `(lane, event)`; a malformed
/// record yields one error and ends the iteration.
pub struct BlockEvents<'b> {
    structure: Reader<'b>,
    values: Reader<'b>,
    expected: u32,
    seen: u32,
    group: Group,
    left_in_group: u32,
    done: bool,
}

impl BlockEvents<'_> {
    #[inline]
    fn next_event(&mut self) -> Result<Option<(LaneId, Event)>, DecodeError> {
        while self.left_in_group == 0 {
            if self.structure.is_empty() {
                if self.seen != self.expected {
                    return Err(DecodeError::Malformed {
                        what: "block holds fewer records than stated",
                    });
                }
                self.values
                    .expect_end("block values stream has trailing bytes")?;
                return Ok(None);
            }
            self.group = Group {
                lane: self.structure.u16("lane group id")?,
                ..Group::default()
            };
            self.left_in_group = self.structure.u32("lane group count")?;
        }
        self.left_in_group -= 1;
        let event = decode_record(&mut self.structure, &mut self.values, &mut self.group)?;
        self.seen = self.seen.saturating_add(1);
        if self.seen > self.expected {
            return Err(DecodeError::Malformed {
                what: "block holds more records than stated",
            });
        }
        Ok(Some((self.group.lane, event)))
    }
}

impl Iterator for BlockEvents<'_> {
    type Item = Result<(LaneId, Event), DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_event().transpose();
        self.done = !matches!(item, Some(Ok(_)));
        item
    }
}

#[inline]
fn decode_record(
    s: &mut Reader<'_>,
    v: &mut Reader<'_>,
    g: &mut Group,
) -> Result<Event, DecodeError> {
    let code = s.u8("record kind")?;
    let time = g.prev_time.wrapping_add(v.zigzag("record time")? as u64);
    g.prev_time = time;
    let flag_a = code & FLAG_A != 0;
    Ok(match code & 0x0f {
        kind::SPAN => {
            let name = s.varint_u32("span name")?;
            let id_delta = i32::try_from(s.zigzag("span id")?)
                .map_err(|_| DecodeError::Malformed { what: "span id" })?;
            let id = g.prev_span.wrapping_add(id_delta as u32);
            g.prev_span = id;
            let parent = if code & FLAG_B != 0 {
                id.wrapping_sub(s.varint_u32("span parent")?)
            } else {
                0
            };
            let duration = v.varint("span duration")?;
            g.prev_time = time.wrapping_add(duration);
            let arg = if flag_a {
                Some(v.varint("span argument")?)
            } else {
                None
            };
            Event::Span {
                start: time,
                duration,
                name,
                id,
                parent,
                arg,
            }
        }
        kind::INSTANT => Event::Instant {
            time,
            name: s.varint_u32("instant name")?,
            payload: v.varint("instant payload")?,
        },
        kind::GAUGE => {
            let gauge = s.varint_u32("gauge id")?;
            let value = if flag_a {
                GaugeValue::Float(f64::from_bits(v.u64("gauge value")?))
            } else {
                GaugeValue::Int(v.zigzag("gauge value")?)
            };
            Event::Gauge { time, gauge, value }
        }
        kind::TICK_START => Event::TickStart {
            time,
            tick: v.varint("tick number")?,
        },
        kind::TICK_END => Event::TickEnd {
            time,
            tick: v.varint("tick number")?,
            overrun: flag_a,
        },
        _ => {
            return Err(DecodeError::Malformed {
                what: "unknown record kind",
            })
        }
    })
}
