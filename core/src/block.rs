//! The Block frame: one drained batch of events, stored as bit-packed
//! columns (`column.rs`: frame of reference, a bit width, packed escapes).
//!
//! Payload:
//! ```text
//! 0   4  record count, u32 LE, at most MAX_BLOCK_RECORDS
//! 4   8  first timestamp (earliest event time), u64 LE
//! 12  8  last timestamp (latest event end), u64 LE
//! 20  2  drop entry count k, u16 LE
//! 22  6k (lane u16 LE, events dropped since the previous Block u32 LE)
//! ..     v lane group count, then per group: lane u16 LE, v records,
//!        v first event time - first timestamp, and nine columns: kind,
//!        span time, name, span id, parent, duration, argument, point
//!        time, value
//! ```
//! A record is one value in its group's kind column plus one in each
//! column its kind uses, in record order. Every
//! field is a delta against the group's previous record where that makes
//! values small (times against the previous record's end, span ids, tick
//! numbers, integer gauges). Columns are per group because a lane's values
//! are alike (one worker runs one query, with one kind and one name) where
//! a Block's are not. A Block without records ends after its drop entries.
//!
//! A Block whose frame flags say LZ4 (`codec.rs`) holds, after its drop
//! entries, the packed events' length (u32 LE) and their LZ4 form; its
//! reader decompresses them into a buffer of its own
//! ([`BlockView::events_in`]). FORMAT.md has every field.

use crate::codec::{self, Codec, Compression, Lz4Table, MAX_EVENTS_LEN};
use crate::column::{ColumnReader, Layout, MAX_HEADER_LEN, MAX_ROUNDING};
use crate::cursor::{Reader, Writer, MAX_VARINT_LEN};
use crate::error::{DecodeError, EncodeError};
use crate::event::{
    kind, Event, EventKinds, FieldOwner, FieldValue, GaugeValue, LaneId, SpanId, TaskId,
};
use crate::frame::{write_frame_with_flags, FrameKind, OVERHEAD};

mod relabel;

pub use relabel::{relabel_events, relabelled_len_bound, Relabel, RelabelError};

const FIXED_HEADER: usize = 22;

/// The columns, in wire order. Spans and point events keep their times and
/// values apart: a span's gap and duration are alike from one span to the
/// next, a gauge's or tick's are alike among themselves, and mixing them
/// would widen every slot.
mod col {
    /// Kind and flags.
    pub const CODE: usize = 0;
    /// Span start minus the previous record's end, zigzag.
    pub const SPAN_GAP: usize = 1;
    /// Span, instant or gauge name.
    pub const NAME: usize = 2;
    /// Span id minus the previous span id, zigzag.
    pub const SPAN: usize = 3;
    /// Span id minus parent id.
    pub const PARENT: usize = 4;
    /// Span duration.
    pub const DURATION: usize = 5;
    /// Span argument.
    pub const ARG: usize = 6;
    /// Point event time minus the previous record's end, zigzag.
    pub const POINT_GAP: usize = 7;
    /// Instant payload, gauge value or tick number delta.
    pub const VALUE: usize = 8;
    pub const COUNT: usize = 9;
    /// Names in errors.
    pub const WHAT: [&str; COUNT] = [
        "block kind column",
        "block span time column",
        "block name column",
        "block span id column",
        "block parent column",
        "block duration column",
        "block argument column",
        "block point time column",
        "block value column",
    ];
}

/// Scratch bytes per value of each column: the widest value it holds.
const STORED: [usize; col::COUNT] = [1, 8, 4, 4, 4, 8, 8, 8, 8];
/// Scratch bytes per record if it used every column.
const ROW: usize = 53;
/// A lane group's entry in the scratch: lane u16, record count u32, first
/// event time u64, where the group starts in each column (u32 each), and
/// each column's smallest and largest value (u64 each), so that packing
/// needs no pass to find them.
mod entry {
    use super::col::COUNT;
    pub const LANE: usize = 0;
    pub const COUNT_AT: usize = 2;
    pub const FIRST: usize = 6;
    pub const STARTS: usize = 14;
    pub const BOUNDS: usize = STARTS + 4 * COUNT;
    pub const LEN: usize = BOUNDS + 16 * COUNT;
}
const GROUP_ENTRY: usize = entry::LEN;
/// A Block's scratch holds one lane group per this many records; a Block
/// whose lanes alternate more often than that fills up early.
pub const RECORDS_PER_GROUP: usize = 16;
/// Largest group on the wire, besides its values: lane, count, first time
/// and the column headers (each column rounds up to a byte once).
const MAX_GROUP_WIRE: usize = 2 + 5 + MAX_VARINT_LEN + col::COUNT * (MAX_HEADER_LEN + MAX_ROUNDING);

/// A record code is its kind shifted by this, plus flags: flags in the low
/// bits keep a lane's codes close together (a span with and without a
/// parent differ by 2, not 16), so the kind column packs narrow.
const KIND_SHIFT: u8 = 2;
/// Record code flags: span has an argument / gauge is a float / tick
/// overran / a field's owner is a task (its id the argument) / a
/// reserved kind's record has an argument.
const FLAG_A: u8 = 0x01;
/// Span or poll has a parent span / task has a parent task / a field's
/// owner is a span (its id in the duration column) / a reserved kind's
/// record has a duration.
const FLAG_B: u8 = 0x02;
/// Flags each kind may carry, by kind (FORMAT.md, "Records"): kinds 0 to
/// 15, of which 9 to 11 (fields), 12 (marks), 13 (allocated bytes) and
/// the reserved 14 and 15 are read by one shape; a field takes exactly
/// one of its two flags, allocated bytes flag B always.
const KIND_FLAGS: [u8; 16] = [
    0,
    FLAG_A | FLAG_B,
    0,
    FLAG_A,
    0,
    FLAG_A,
    FLAG_B,
    FLAG_B,
    0,
    FLAG_A | FLAG_B,
    FLAG_A | FLAG_B,
    FLAG_A | FLAG_B,
    FLAG_A,
    FLAG_B,
    FLAG_A | FLAG_B,
    FLAG_A | FLAG_B,
];
/// Record codes are below this: 16 kinds of 4 flag combinations.
const CODES: u8 = 64;

/// The code of a record of `kind` with `flags`.
const fn code(kind: u8, flags: u8) -> u8 {
    kind << KIND_SHIFT | flags
}

/// Scratch bytes a [`BlockBuilder`] needs to hold `records` events in at
/// most `records / RECORDS_PER_GROUP + 1` lane groups.
pub const fn block_scratch_len(records: usize) -> usize {
    records * ROW + (records / RECORDS_PER_GROUP + 1) * GROUP_ENTRY
}

/// Records and groups a scratch of `len` bytes holds.
const fn capacity(len: usize) -> (usize, usize) {
    // block_scratch_len(r) > r * (ROW + GROUP_ENTRY / RECORDS_PER_GROUP),
    // so this starts at or above the answer and steps down a few times.
    let mut records = len * RECORDS_PER_GROUP / (RECORDS_PER_GROUP * ROW + GROUP_ENTRY);
    while records > 0 && block_scratch_len(records) > len {
        records -= 1;
    }
    // No Block may state more (and column positions are u32s).
    if records > MAX_BLOCK_RECORDS as usize {
        records = MAX_BLOCK_RECORDS as usize;
    }
    if block_scratch_len(records) > len {
        (0, 0)
    } else {
        (records, records / RECORDS_PER_GROUP + 1)
    }
}

/// Largest packed events ([`pack_events`]) of a Block built in
/// `scratch_len` bytes.
pub const fn max_events_len(scratch_len: usize) -> usize {
    let (records, groups) = capacity(scratch_len);
    // Each column packs at most one bit per value above its scratch width
    // (the width chooser never picks a layout larger than plain slots), so
    // a record's values take at most ROW bytes plus one byte.
    MAX_VARINT_LEN + groups * MAX_GROUP_WIRE + records * (ROW + 1)
}

/// Largest frame a Block built in `scratch_len` bytes with `drop_entries`
/// drop entries can need, packed: the buffer size to give [`write_block`].
pub const fn max_block_frame_len(scratch_len: usize, drop_entries: usize) -> usize {
    OVERHEAD + FIXED_HEADER + 6 * drop_entries + max_events_len(scratch_len)
}

/// Largest frame such a Block can need in either codec: with
/// [`Compression::Lz4`], LZ4 may add a little to incompressible events.
pub const fn max_compressed_block_frame_len(scratch_len: usize, drop_entries: usize) -> usize {
    OVERHEAD
        + FIXED_HEADER
        + 6 * drop_entries
        + 4
        + codec::max_compressed_len(max_events_len(scratch_len))
}

/// The work buffer [`encode_events`] needs for Blocks built in
/// `scratch_len` bytes: the packed events, and room to compress them.
pub const fn encoding_buffer_len(scratch_len: usize, compression: Compression) -> usize {
    let packed = max_events_len(scratch_len);
    match compression {
        Compression::Off => packed,
        Compression::Lz4 | Compression::Auto => packed + codec::max_compressed_len(packed),
    }
}

/// Delta state of one lane group, shared by encoder and decoder.
#[derive(Clone, Copy, Default)]
struct Group {
    lane: LaneId,
    count: u32,
    /// End of the previous record: a span's start + duration.
    prev_end: u64,
    prev_span: SpanId,
    prev_tick: u64,
    prev_gauge: i64,
    prev_task: TaskId,
}

impl Group {
    fn new(lane: LaneId, first_time: u64) -> Self {
        Group {
            lane,
            prev_end: first_time,
            ..Group::default()
        }
    }
}

#[inline]
const fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
const fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Collects events column by column in a caller buffer; [`write_block`]
/// packs them into a Block frame.
pub struct BlockBuilder<'s> {
    buf: &'s mut [u8],
    capacity: usize,
    group_capacity: usize,
    /// Where each column starts in `buf`.
    starts: [usize; col::COUNT],
    /// Values in each column.
    lens: [usize; col::COUNT],
    /// Smallest and largest value of each column in the open group.
    lo: [u64; col::COUNT],
    hi: [u64; col::COUNT],
    groups: usize,
    records: u32,
    first: u64,
    last: u64,
    /// The open (last) group.
    group: Group,
}

impl<'s> BlockBuilder<'s> {
    /// An empty builder over `scratch`, which bounds the Block's size
    /// ([`block_scratch_len`] gives the size for a record count).
    pub fn new(scratch: &'s mut [u8]) -> Self {
        let (capacity, group_capacity) = capacity(scratch.len());
        let mut starts = [0; col::COUNT];
        let mut at = 0;
        for (start, stored) in starts.iter_mut().zip(STORED) {
            *start = at;
            at += capacity * stored;
        }
        BlockBuilder {
            buf: scratch,
            capacity,
            group_capacity,
            starts,
            lens: [0; col::COUNT],
            lo: [u64::MAX; col::COUNT],
            hi: [0; col::COUNT],
            groups: 0,
            records: 0,
            first: u64::MAX,
            last: 0,
            group: Group::default(),
        }
    }

    /// Forgets every event, keeping the buffer.
    pub fn clear(&mut self) {
        self.lens = [0; col::COUNT];
        self.groups = 0;
        self.records = 0;
        self.first = u64::MAX;
        self.last = 0;
        self.group = Group::default();
    }

    /// Size of the scratch buffer.
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

    /// Earliest event time and latest event end, `(0, 0)` when empty.
    pub fn time_range(&self) -> (u64, u64) {
        if self.records == 0 {
            (0, 0)
        } else {
            (self.first, self.last)
        }
    }

    /// What its header states: the record count and the time range.
    fn stated(&self) -> (u32, (u64, u64)) {
        (self.records, self.time_range())
    }

    /// Whether one more event of `lane` fits.
    #[inline]
    pub fn has_room(&self, lane: LaneId) -> bool {
        let same_group = self.groups > 0 && self.group.lane == lane;
        (self.records as usize) < self.capacity && (same_group || self.groups < self.group_capacity)
    }

    /// Appends `event` of `lane`; `false` (and nothing written) without room.
    pub fn push(&mut self, lane: LaneId, event: &Event) -> bool {
        if !self.has_room(lane) {
            return false;
        }
        let time = event.time();
        if self.groups == 0 || self.group.lane != lane {
            self.open_group(lane, time);
        }
        let mut g = self.group;
        let gap = zigzag(time.wrapping_sub(g.prev_end) as i64);
        g.prev_end = time;
        if !matches!(event, Event::Span { .. } | Event::Poll { .. }) {
            self.put::<{ col::POINT_GAP }>(gap);
        }
        let code = match *event {
            Event::Span {
                duration,
                name,
                id,
                parent,
                arg,
                ..
            } => {
                let mut code = code(kind::SPAN, self.put_span(&mut g, gap, name, id, parent));
                self.put::<{ col::DURATION }>(duration);
                if let Some(arg) = arg {
                    self.put::<{ col::ARG }>(arg);
                    code |= FLAG_A;
                }
                // Deltas run from the previous record's end: back-to-back
                // spans then cost the gap between them.
                g.prev_end = time.wrapping_add(duration);
                code
            }
            Event::Instant { name, payload, .. } => {
                self.put::<{ col::NAME }>(u64::from(name));
                self.put::<{ col::VALUE }>(payload);
                code(kind::INSTANT, 0)
            }
            Event::Gauge { gauge, value, .. } => {
                self.put::<{ col::NAME }>(u64::from(gauge));
                match value {
                    GaugeValue::Int(x) => {
                        self.put::<{ col::VALUE }>(zigzag(x.wrapping_sub(g.prev_gauge)));
                        g.prev_gauge = x;
                        code(kind::GAUGE, 0)
                    }
                    GaugeValue::Float(x) => {
                        self.put::<{ col::VALUE }>(x.to_bits());
                        code(kind::GAUGE, FLAG_A)
                    }
                }
            }
            Event::TickStart { tick, .. } => {
                self.put::<{ col::VALUE }>(zigzag(tick.wrapping_sub(g.prev_tick) as i64));
                g.prev_tick = tick;
                code(kind::TICK_START, 0)
            }
            Event::TickEnd { tick, overrun, .. } => {
                self.put::<{ col::VALUE }>(zigzag(tick.wrapping_sub(g.prev_tick) as i64));
                g.prev_tick = tick;
                code(kind::TICK_END, if overrun { FLAG_A } else { 0 })
            }
            Event::TaskBegin {
                name, task, parent, ..
            } => {
                self.put::<{ col::NAME }>(u64::from(name));
                self.put::<{ col::VALUE }>(zigzag(task.wrapping_sub(g.prev_task) as i64));
                g.prev_task = task;
                if parent != 0 {
                    self.put::<{ col::ARG }>(parent);
                    code(kind::TASK_BEGIN, FLAG_B)
                } else {
                    code(kind::TASK_BEGIN, 0)
                }
            }
            Event::Poll {
                duration,
                name,
                id,
                parent,
                task,
                ..
            } => {
                let code = code(kind::POLL, self.put_span(&mut g, gap, name, id, parent));
                self.put::<{ col::DURATION }>(duration);
                self.put::<{ col::VALUE }>(zigzag(task.wrapping_sub(g.prev_task) as i64));
                g.prev_task = task;
                g.prev_end = time.wrapping_add(duration);
                code
            }
            Event::TaskEnd {
                name,
                task,
                wall,
                busy,
                ..
            } => {
                self.put::<{ col::NAME }>(u64::from(name));
                self.put::<{ col::VALUE }>(zigzag(task.wrapping_sub(g.prev_task) as i64));
                g.prev_task = task;
                self.put::<{ col::DURATION }>(wall);
                self.put::<{ col::ARG }>(busy);
                code(kind::TASK_END, 0)
            }
            Event::Field {
                key, value, owner, ..
            } => {
                self.put::<{ col::NAME }>(u64::from(key));
                let kind = match value {
                    FieldValue::Int(v) => {
                        self.put::<{ col::VALUE }>(zigzag(v));
                        kind::FIELD_INT
                    }
                    FieldValue::Float(v) => {
                        self.put::<{ col::VALUE }>(v.to_bits());
                        kind::FIELD_FLOAT
                    }
                    FieldValue::Str(v) => {
                        self.put::<{ col::VALUE }>(u64::from(v));
                        kind::FIELD_STR
                    }
                };
                match owner {
                    FieldOwner::Task(task) => {
                        self.put::<{ col::ARG }>(task);
                        code(kind, FLAG_A)
                    }
                    FieldOwner::Span(id) => {
                        self.put::<{ col::DURATION }>(u64::from(id));
                        code(kind, FLAG_B)
                    }
                }
            }
            Event::Mark { label, span, .. } => {
                // The reserved kinds' shape, which readers from before
                // marks skip.
                self.put::<{ col::NAME }>(u64::from(label));
                self.put::<{ col::VALUE }>(span.map_or(0, |(name, _)| u64::from(name)));
                match span {
                    Some((_, start)) => {
                        self.put::<{ col::ARG }>(start);
                        code(kind::MARK, FLAG_A)
                    }
                    None => code(kind::MARK, 0),
                }
            }
            Event::Allocated { span, bytes, .. } => {
                // The reserved kinds' shape, which readers from before
                // it skip; its name is none.
                self.put::<{ col::NAME }>(0);
                self.put::<{ col::VALUE }>(bytes);
                self.put::<{ col::DURATION }>(u64::from(span));
                code(kind::ALLOCATED, FLAG_B)
            }
            Event::Unknown { kind, .. } => {
                // The reserved kinds' shape, with nothing in it.
                self.put::<{ col::NAME }>(0);
                self.put::<{ col::VALUE }>(0);
                code(kind.clamp(kind::FIRST_RESERVED, kind::LAST_RESERVED), 0)
            }
        };
        self.put::<{ col::CODE }>(u64::from(code));
        g.count += 1;
        self.group = g;
        self.records += 1;
        self.first = self.first.min(time);
        self.last = self.last.max(event.end_time());
        true
    }

    /// What spans and polls share before their duration: time, name, id
    /// and parent; the flags that says (B: has a parent).
    #[inline(always)]
    fn put_span(&mut self, g: &mut Group, gap: u64, name: u32, id: SpanId, parent: SpanId) -> u8 {
        self.put::<{ col::SPAN_GAP }>(gap);
        self.put::<{ col::NAME }>(u64::from(name));
        let id_delta = id.wrapping_sub(g.prev_span) as i32;
        self.put::<{ col::SPAN }>(u64::from(((id_delta << 1) ^ (id_delta >> 31)) as u32));
        g.prev_span = id;
        if parent == 0 {
            return 0;
        }
        self.put::<{ col::PARENT }>(u64::from(id.wrapping_sub(parent)));
        FLAG_B
    }

    /// Appends `v` to column `C`; room was checked by `has_room`.
    #[inline(always)]
    fn put<const C: usize>(&mut self, v: u64) {
        const { assert!(C < col::COUNT) };
        let n = STORED[C];
        let at = self.starts[C] + self.lens[C] * n;
        if let Some(dst) = self.buf.get_mut(at..at + n) {
            dst.copy_from_slice(&v.to_le_bytes()[..n]);
        }
        self.lens[C] += 1;
        self.lo[C] = self.lo[C].min(v);
        self.hi[C] = self.hi[C].max(v);
    }

    /// Stores the open group's lane and count, then opens a group whose
    /// first event is at `time` (its delta base) and whose columns start
    /// where they end now.
    fn open_group(&mut self, lane: LaneId, time: u64) {
        let entries = self.capacity * ROW;
        if self.groups > 0 {
            let (g, lo, hi) = (self.group, self.lo, self.hi);
            let at = entries + (self.groups - 1) * GROUP_ENTRY;
            if let Some(dst) = self.buf.get_mut(at..at + GROUP_ENTRY) {
                dst[entry::LANE..entry::COUNT_AT].copy_from_slice(&g.lane.to_le_bytes());
                dst[entry::COUNT_AT..entry::FIRST].copy_from_slice(&g.count.to_le_bytes());
                let bounds = dst[entry::BOUNDS..].chunks_exact_mut(16);
                for ((bounds, lo), hi) in bounds.zip(lo).zip(hi) {
                    bounds[..8].copy_from_slice(&lo.to_le_bytes());
                    bounds[8..].copy_from_slice(&hi.to_le_bytes());
                }
            }
        }
        self.lo = [u64::MAX; col::COUNT];
        self.hi = [0; col::COUNT];
        let at = entries + self.groups * GROUP_ENTRY;
        if let Some(dst) = self.buf.get_mut(at..at + GROUP_ENTRY) {
            dst[entry::FIRST..entry::STARTS].copy_from_slice(&time.to_le_bytes());
            let starts = dst[entry::STARTS..entry::BOUNDS].chunks_exact_mut(4);
            for (start, len) in starts.zip(self.lens) {
                // The capacity, and so every column length, fits a u32.
                start.copy_from_slice(&(len as u32).to_le_bytes());
            }
        }
        self.groups += 1;
        self.group = Group::new(lane, time);
    }

    /// Group `i` as stored; the open group is read without closing it.
    fn group_entry(&self, i: usize) -> GroupEntry {
        let at = self.capacity * ROW + i * GROUP_ENTRY;
        let stored = self.buf.get(at..at + GROUP_ENTRY).unwrap_or(&[]);
        let u32_at = |at: usize| {
            stored
                .get(at..)
                .and_then(|b| b.first_chunk::<4>())
                .map_or(0, |b| u32::from_le_bytes(*b))
        };
        let u64_at = |at: usize| {
            stored
                .get(at..)
                .and_then(|b| b.first_chunk::<8>())
                .map_or(0, |b| u64::from_le_bytes(*b))
        };
        let open = i + 1 == self.groups;
        let mut columns = [ColumnEntry::default(); col::COUNT];
        for (c, column) in columns.iter_mut().enumerate() {
            let start = entry::STARTS + 4 * c;
            let bounds = entry::BOUNDS + 16 * c;
            *column = ColumnEntry {
                from: u32_at(start) as usize,
                // A closed group ends where the next one starts.
                to: if open {
                    self.lens[c]
                } else {
                    let next = self
                        .buf
                        .get(at + GROUP_ENTRY + start..)
                        .and_then(|b| b.first_chunk::<4>());
                    next.map_or(0, |b| u32::from_le_bytes(*b) as usize)
                },
                lo: if open { self.lo[c] } else { u64_at(bounds) },
                hi: if open { self.hi[c] } else { u64_at(bounds + 8) },
            };
        }
        GroupEntry {
            lane: if open {
                self.group.lane
            } else {
                stored
                    .get(entry::LANE..)
                    .and_then(|b| b.first_chunk::<2>())
                    .map_or(0, |b| u16::from_le_bytes(*b))
            },
            count: if open {
                self.group.count
            } else {
                u32_at(entry::COUNT_AT)
            },
            first: u64_at(entry::FIRST),
            columns,
        }
    }

    /// Writes the groups: each one's header and its nine columns.
    fn write_groups(&self, w: &mut Writer<'_>) {
        w.varint(self.groups as u64);
        for i in 0..self.groups {
            let g = self.group_entry(i);
            w.u16(g.lane);
            w.varint(u64::from(g.count));
            w.varint(g.first.wrapping_sub(self.first));
            for (c, column) in g.columns.into_iter().enumerate() {
                self.write_column(w, c, column);
            }
        }
    }

    /// Writes column `c` of a group. One instance per stored width, not
    /// per column: nine would take 27 KiB of a microcontroller's flash.
    fn write_column(&self, w: &mut Writer<'_>, c: usize, column: ColumnEntry) {
        let start = self.starts[c];
        let n = column.to.saturating_sub(column.from);
        let stored = STORED[c];
        let bytes = self
            .buf
            .get(start + column.from * stored..start + column.to * stored)
            .unwrap_or(&[]);
        match stored {
            1 => write_values(w, n, column, bytes.iter().map(|&b| u64::from(b))),
            4 => write_values(
                w,
                n,
                column,
                bytes.chunks_exact(4).map(|b| {
                    b.first_chunk::<4>()
                        .map_or(0, |b| u64::from(u32::from_le_bytes(*b)))
                }),
            ),
            _ => write_values(
                w,
                n,
                column,
                bytes
                    .chunks_exact(8)
                    .map(|b| b.first_chunk::<8>().map_or(0, |b| u64::from_le_bytes(*b))),
            ),
        }
    }
}

/// Chooses a layout for a column's `n` `values` and writes it.
fn write_values(
    w: &mut Writer<'_>,
    n: usize,
    column: ColumnEntry,
    values: impl Iterator<Item = u64> + Clone,
) {
    let layout = Layout::choose(values.clone(), n, column.lo, column.hi);
    layout.write(w, n, values);
}

/// A stored lane group, read back for writing.
struct GroupEntry {
    lane: LaneId,
    count: u32,
    first: u64,
    columns: [ColumnEntry; col::COUNT],
}

/// Where a group's values of one column lie, and their range.
#[derive(Clone, Copy, Default)]
struct ColumnEntry {
    from: usize,
    to: usize,
    lo: u64,
    hi: u64,
}

/// Writes a Block frame of `block`'s events, packed, with the per-lane
/// drop counts `drops`. The builder is not changed: on `Err` it can be
/// written again into a larger buffer, and more events can be pushed after
/// a write.
pub fn write_block(
    out: &mut [u8],
    seq: u32,
    block: &BlockBuilder<'_>,
    drops: &[(LaneId, u32)],
) -> Result<usize, EncodeError> {
    let needed = max_block_frame_len(block.capacity(), drops.len());
    if out.len() < needed {
        return Err(EncodeError::BufferTooSmall { needed });
    }
    write_block_with(out, seq, block.stated(), drops, Codec::Packed, |w| {
        if block.records > 0 {
            block.write_groups(w);
        }
    })
}

/// Packs `block`'s events (the packed form of what follows a Block's drop
/// entries) into `out` and returns their length; [`encode_events`] does
/// this and compresses. A buffer of [`max_events_len`] bytes for the
/// builder's scratch is always enough.
pub fn pack_events(out: &mut [u8], block: &BlockBuilder<'_>) -> Result<usize, EncodeError> {
    let mut w = Writer::new(out);
    if block.records > 0 {
        block.write_groups(&mut w);
    }
    if w.overflowed() {
        return Err(EncodeError::BufferTooSmall {
            needed: w.position(),
        });
    }
    Ok(w.position())
}

/// A Block's events encoded once, in a work buffer, for as many frames as
/// it has readers ([`write_block_encoded`]): where they lie and in which
/// codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The codec the frames will state.
    pub codec: Codec,
    /// Bytes of the packed events.
    pub packed_len: usize,
    /// Where the bytes to send start in the work buffer, and how many.
    at: usize,
    len: usize,
}

/// Packs `block`'s events into `work` and, given a table, compresses them
/// behind the packed bytes, keeping the form `compression` chooses. A
/// `work` of [`encoding_buffer_len`] bytes always suffices; with less room
/// to compress, or no table, the packed form is kept.
pub fn encode_events(
    work: &mut [u8],
    block: &BlockBuilder<'_>,
    compression: Compression,
    table: Option<&mut Lz4Table>,
) -> Result<Encoded, EncodeError> {
    let packed_len = pack_events(work, block)?;
    let (packed, rest) = work.split_at_mut(packed_len);
    let compressed = table.and_then(|table| codec::compress(compression, packed, rest, table));
    Ok(match compressed {
        Some(len) => Encoded {
            codec: Codec::Lz4,
            packed_len,
            at: packed_len,
            len,
        },
        None => Encoded {
            codec: Codec::Packed,
            packed_len,
            at: 0,
            len: packed_len,
        },
    })
}

/// Writes the Block frame of `block` around events [`encode_events`]
/// put in `work` for the same builder, unchanged since. Costs a copy of
/// the events instead of encoding them again.
pub fn write_block_encoded(
    out: &mut [u8],
    seq: u32,
    block: &BlockBuilder<'_>,
    drops: &[(LaneId, u32)],
    encoded: Encoded,
    work: &[u8],
) -> Result<usize, EncodeError> {
    let bytes =
        work.get(encoded.at..encoded.at + encoded.len)
            .ok_or(EncodeError::BufferTooSmall {
                needed: encoded.at + encoded.len,
            })?;
    write_block_with(out, seq, block.stated(), drops, encoded.codec, |w| {
        if encoded.codec == Codec::Lz4 {
            // encode_events packs at most MAX_EVENTS_LEN bytes before it
            // compresses, so the length fits.
            w.u32(encoded.packed_len as u32);
        }
        w.bytes(bytes);
    })
}

/// The frame [`write_packed_block`] writes of `packed_len` bytes of
/// packed events and `drop_entries` drop entries: its size.
pub const fn packed_block_frame_len(drop_entries: usize, packed_len: usize) -> usize {
    OVERHEAD + FIXED_HEADER + 6 * drop_entries + packed_len
}

/// Writes a packed Block frame around `packed`, packed events of
/// `records` records made elsewhere (a source's, relabelled by
/// [`relabel_events`]), whose earliest time and latest end are `times`,
/// with the drop entries `drops`.
pub fn write_packed_block(
    out: &mut [u8],
    seq: u32,
    records: u32,
    times: (u64, u64),
    drops: &[(LaneId, u32)],
    packed: &[u8],
) -> Result<usize, EncodeError> {
    write_block_with(out, seq, (records, times), drops, Codec::Packed, |w| {
        w.bytes(packed)
    })
}

/// A Block frame: the fixed header (`stated`: the record count, the
/// earliest time and the latest end) and `drops`, then what `events`
/// writes.
fn write_block_with(
    out: &mut [u8],
    seq: u32,
    (records, (first, last)): (u32, (u64, u64)),
    drops: &[(LaneId, u32)],
    codec: Codec,
    events: impl FnOnce(&mut Writer<'_>),
) -> Result<usize, EncodeError> {
    let drop_count = u16::try_from(drops.len()).map_err(|_| EncodeError::TooManyItems {
        what: "block drop entries",
    })?;
    write_frame_with_flags(out, FrameKind::Block, codec.flags(), seq, |w| {
        w.u32(records);
        w.u64(first);
        w.u64(last);
        w.u16(drop_count);
        for &(lane, dropped) in drops {
            w.u16(lane);
            w.u32(dropped);
        }
        events(w);
        Ok(())
    })
}

/// A Block frame over the caller's bytes: its header (record count, times,
/// drop entries), which reads the same in every codec, and its events,
/// from [`BlockView::events`] (packed Blocks) or [`BlockView::events_in`]
/// (either codec).
///
/// A Block whose header reads is accepted even when its events cannot be
/// read (an unknown codec, a bad packed length, damaged LZ4 data, a
/// malformed record): its drop entries still count, and the records a
/// reader could not read are events lost to it (FORMAT.md, "Reading a
/// stream").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockView<'a> {
    /// Number of events, at most [`MAX_BLOCK_RECORDS`].
    pub records: u32,
    /// Earliest event time.
    pub first_time: u64,
    /// Latest event end.
    pub last_time: u64,
    /// The frame's flags byte: the codec.
    flags: u8,
    drops: &'a [u8],
    /// Everything after the drop entries.
    tail: &'a [u8],
    /// The events as the codec stores them, or why they cannot be read.
    events: Result<StoredEvents<'a>, DecodeError>,
}

/// A Block's events as its codec stores them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StoredEvents<'a> {
    codec: Codec,
    /// Packed events, or their LZ4 form.
    bytes: &'a [u8],
    /// Bytes of the packed events.
    packed_len: usize,
}

/// The most records a Block may state: 65 536. A column of width 0 costs
/// no bytes, so without a bound a Block of 60 bytes could state four
/// billion events; with it a reader never has more than this many to
/// read (or hold) per Block. typhon-live's writers hold 8 192.
pub const MAX_BLOCK_RECORDS: u32 = 1 << 16;

impl<'a> BlockView<'a> {
    /// Parses a Block payload's header; `flags` is its frame's flags byte,
    /// which names the codec. Fails only when the header itself breaks a
    /// rule: then nothing in the Block counts. What is wrong with the
    /// events is told by [`BlockView::events_in`].
    pub fn parse(payload: &'a [u8], flags: u8) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let records = r.u32("block record count")?;
        DecodeError::at_most(
            "block record count",
            u64::from(records),
            u64::from(MAX_BLOCK_RECORDS),
        )?;
        let first_time = r.u64("block first timestamp")?;
        let last_time = r.u64("block last timestamp")?;
        let drop_count = r.u16("block drop count")?;
        let drops = r.take(usize::from(drop_count) * 6, "block drop entries")?;
        let tail = r.rest();
        Ok(BlockView {
            records,
            first_time,
            last_time,
            flags,
            drops,
            tail,
            events: stored_events(tail, flags, records),
        })
    }

    /// How the events are stored, or [`DecodeError::UnknownCodec`].
    pub fn codec(&self) -> Result<Codec, DecodeError> {
        Codec::from_flags(self.flags)
    }

    /// Bytes the events take in the payload, after the drop entries (for
    /// LZ4: the packed length field and the compressed data).
    pub fn encoded_len(&self) -> usize {
        self.tail.len()
    }

    /// Bytes of the packed events (group table and columns): the buffer
    /// [`BlockView::events_in`] needs for a compressed Block, at most
    /// [`MAX_EVENTS_LEN`]; 0 when the events cannot be read.
    pub fn packed_len(&self) -> usize {
        self.events.map_or(0, |stored| stored.packed_len)
    }

    /// The packed events of a Block stored packed, as they lie in the
    /// payload; `None` for another codec, or events that cannot be read.
    pub fn packed(&self) -> Option<&'a [u8]> {
        self.events
            .ok()
            .filter(|stored| stored.codec == Codec::Packed)
            .map(|stored| stored.bytes)
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

    /// The events of a packed Block, as `(lane, event)` in record order. A
    /// group's columns are checked when the iteration reaches it; a record
    /// or group that does not decode ends the iteration with one error. A
    /// compressed Block answers [`DecodeError::BufferTooSmall`]: read it
    /// with [`BlockView::events_in`].
    pub fn events(&self) -> Result<BlockEvents<'a>, DecodeError> {
        let stored = self.events?;
        match stored.codec {
            Codec::Packed => self.packed_events(stored.bytes),
            Codec::Lz4 => Err(DecodeError::BufferTooSmall {
                needed: stored.packed_len,
            }),
        }
    }

    /// The events of a Block in either codec, as [`BlockView::events`]
    /// gives them. A compressed Block is decompressed into the start of
    /// `buffer` first, which must hold [`BlockView::packed_len`] bytes
    /// (else [`DecodeError::BufferTooSmall`]); a packed one is read in
    /// place and leaves `buffer` alone.
    pub fn events_in<'b>(&self, buffer: &'b mut [u8]) -> Result<BlockEvents<'b>, DecodeError>
    where
        'a: 'b,
    {
        let stored = self.events?;
        match stored.codec {
            Codec::Packed => self.packed_events(stored.bytes),
            Codec::Lz4 => {
                let out =
                    buffer
                        .get_mut(..stored.packed_len)
                        .ok_or(DecodeError::BufferTooSmall {
                            needed: stored.packed_len,
                        })?;
                codec::decompress(stored.bytes, out)?;
                self.packed_events(out)
            }
        }
    }

    fn packed_events<'b>(&self, packed: &'b [u8]) -> Result<BlockEvents<'b>, DecodeError> {
        let mut events = BlockEvents {
            bytes: Reader::new(packed),
            groups_left: 0,
            columns: [ColumnReader::EMPTY; col::COUNT],
            expected: self.records,
            seen: 0,
            first_time: self.first_time,
            group: Group::default(),
            left_in_group: 0,
            done: false,
            pending: None,
            wanted: EventKinds::ALL,
            skipped: 0,
        };
        if self.records == 0 {
            if !packed.is_empty() {
                return Err(DecodeError::Malformed {
                    what: "empty block carries event bytes",
                });
            }
            return Ok(events);
        }
        let groups = events.bytes.varint("block group count")?;
        events.groups_left = u32::try_from(groups)
            .ok()
            .filter(|&g| g <= self.records)
            .ok_or(DecodeError::Malformed {
                what: "block group count",
            })?;
        Ok(events)
    }
}

/// What follows a Block's drop entries, read by the codec `flags` name.
fn stored_events(tail: &[u8], flags: u8, records: u32) -> Result<StoredEvents<'_>, DecodeError> {
    let codec = Codec::from_flags(flags)?;
    let mut r = Reader::new(tail);
    let packed_len = match codec {
        Codec::Packed => r.remaining(),
        Codec::Lz4 => {
            let len = r.u32("block packed events length")?;
            DecodeError::at_most(
                "block packed events length",
                u64::from(len),
                MAX_EVENTS_LEN as u64,
            )?;
            // A writer never compresses a Block without records, and the
            // packed events of one with records are never empty.
            if len == 0 || records == 0 {
                return Err(DecodeError::Malformed {
                    what: "LZ4 block without records or packed events",
                });
            }
            len as usize
        }
    };
    Ok(StoredEvents {
        codec,
        bytes: r.rest(),
        packed_len,
    })
}

/// The events of a Block, as `(lane, event)`; a malformed record yields
/// one error and ends the iteration.
pub struct BlockEvents<'a> {
    /// The groups not yet started.
    bytes: Reader<'a>,
    groups_left: u32,
    /// The current group's columns.
    columns: [ColumnReader<'a>; col::COUNT],
    expected: u32,
    seen: u32,
    first_time: u64,
    group: Group,
    left_in_group: u32,
    done: bool,
    /// An error found by [`BlockEvents::read`] after events it returned.
    pending: Option<DecodeError>,
    /// Groups with no record of these kinds are passed over.
    wanted: EventKinds,
    /// Records of the groups passed over.
    skipped: u32,
}

impl BlockEvents<'_> {
    /// Passes over, undecoded, each lane group that holds no record of a
    /// kind in `wanted`: a reader that watches for a few kinds (a flight
    /// recorder's tick triggers) then pays for a group of spans with its
    /// kind column alone, or nothing when the column is of one value. A
    /// group that holds a wanted record is decoded whole, its other
    /// events too. A group passed over is not checked past its columns'
    /// sizes; its records are counted by [`BlockEvents::skipped`].
    pub fn skim(mut self, wanted: EventKinds) -> Self {
        self.wanted = wanted;
        self
    }

    /// Records passed over so far (see [`BlockEvents::skim`]).
    pub fn skipped(&self) -> u32 {
        self.skipped
    }

    /// Decodes up to `out.len()` events into `out` and returns how many, 0
    /// once the Block is done: the fast way to read a Block. A group whose
    /// records all have one kind (a worker's query spans, say) is decoded
    /// without reading each record's kind. An error ends the Block: the
    /// events decoded before it are returned first, the error by the next
    /// call.
    pub fn read(&mut self, out: &mut [(LaneId, Event)]) -> Result<usize, DecodeError> {
        if let Some(error) = self.pending.take() {
            return Err(error);
        }
        let mut filled = 0;
        while filled < out.len() && !self.done {
            let (n, result) = self.read_group(&mut out[filled..]);
            filled += n;
            if let Err(error) = result {
                self.done = true;
                if filled == 0 {
                    return Err(error);
                }
                self.pending = Some(error);
            }
        }
        Ok(filled)
    }

    /// Decodes from the current group (starting the next one if it is
    /// done) into `out`: how many, and whether it stopped on an error.
    fn read_group(&mut self, out: &mut [(LaneId, Event)]) -> (usize, Result<(), DecodeError>) {
        if self.left_in_group == 0 {
            match self.advance() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return (0, Ok(()));
                }
                Err(error) => return (0, Err(error)),
            }
        }
        let n = out.len().min(self.left_in_group as usize);
        let lane = self.group.lane;
        let columns = &mut self.columns;
        let group = &mut self.group;
        let mut decoded = 0;
        let out = &mut out[..n];
        let result = match columns[col::CODE].constant(n).map(record_code) {
            Some(Err(error)) => Err(error),
            // Every record is a span of one shape: the fast case.
            Some(Ok(code)) if code >> KIND_SHIFT == kind::SPAN => {
                decode_spans(code, columns, group, lane, out, &mut decoded).unwrap_or_else(|| {
                    fill(lane, out, &mut decoded, || {
                        decode_fields(code, columns, group)
                    })
                })
            }
            // Every record has this kind: n kind values were taken at once.
            Some(Ok(code)) => fill(lane, out, &mut decoded, || {
                decode_fields(code, columns, group)
            }),
            None => fill(lane, out, &mut decoded, || decode_record(columns, group)),
        };
        self.left_in_group -= decoded as u32;
        self.seen += decoded as u32;
        (decoded, result)
    }

    #[inline]
    fn next_event(&mut self) -> Result<Option<(LaneId, Event)>, DecodeError> {
        if let Some(error) = self.pending.take() {
            return Err(error);
        }
        if self.left_in_group == 0 && !self.advance()? {
            return Ok(None);
        }
        self.left_in_group -= 1;
        self.seen += 1;
        let event = decode_record(&mut self.columns, &mut self.group)?;
        Ok(Some((self.group.lane, event)))
    }

    /// Checks the finished group and starts the next one with records;
    /// `false` at the end of the Block.
    fn advance(&mut self) -> Result<bool, DecodeError> {
        while self.left_in_group == 0 {
            for column in &self.columns {
                column.expect_end()?;
            }
            if self.groups_left == 0 {
                self.bytes
                    .expect_end("block has bytes after its last group")?;
                if self.seen != self.expected {
                    return Err(DecodeError::Malformed {
                        what: "block holds fewer records than stated",
                    });
                }
                return Ok(false);
            }
            self.start_group()?;
            if self.wanted != EventKinds::ALL && !self.group_wanted() {
                for column in &mut self.columns {
                    column.pass_over();
                }
                self.seen += self.left_in_group;
                self.skipped += self.left_in_group;
                self.left_in_group = 0;
            }
        }
        Ok(true)
    }

    /// Whether the group just started holds a record of a wanted kind (or
    /// a kind column that does not read: its decoding reports it).
    fn group_wanted(&self) -> bool {
        let mut kinds = self.columns[col::CODE];
        let wanted =
            |v: u64| record_code(v).map_or(true, |code| self.wanted.has_kind(code >> KIND_SHIFT));
        if let Some(v) = kinds.constant(self.left_in_group as usize) {
            return wanted(v);
        }
        (0..self.left_in_group).any(|_| kinds.next().map_or(true, wanted))
    }

    fn start_group(&mut self) -> Result<(), DecodeError> {
        self.groups_left -= 1;
        let lane = self.bytes.u16("lane group id")?;
        let count = self.bytes.varint_u32("lane group count")?;
        if count > self.expected - self.seen {
            return Err(DecodeError::Malformed {
                what: "block holds more records than stated",
            });
        }
        let first = self.bytes.varint("lane group first time")?;
        for (column, what) in self.columns.iter_mut().zip(col::WHAT) {
            *column = ColumnReader::parse(&mut self.bytes, count, what)?;
        }
        self.group = Group::new(lane, self.first_time.wrapping_add(first));
        self.left_in_group = count;
        Ok(())
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

#[inline(always)]
fn narrow(v: u64, what: &'static str) -> Result<u32, DecodeError> {
    u32::try_from(v).map_err(|_| DecodeError::Malformed { what })
}

/// A kind column value as a record code, if it is one.
#[inline(always)]
fn record_code(v: u64) -> Result<u8, DecodeError> {
    u8::try_from(v)
        .ok()
        .filter(|&code| {
            let flags = code & ((1 << KIND_SHIFT) - 1);
            code < CODES && flags & !KIND_FLAGS[usize::from(code >> KIND_SHIFT)] == 0
        })
        .ok_or(DecodeError::Malformed {
            what: "record kind or flags",
        })
}

#[inline(always)]
fn decode_record(
    c: &mut [ColumnReader<'_>; col::COUNT],
    g: &mut Group,
) -> Result<Event, DecodeError> {
    let code = record_code(c[col::CODE].next()?)?;
    decode_fields(code, c, g)
}

/// A span's fields after its time. `CLAIMED`: the values were claimed
/// from their columns beforehand, so each read skips the count check.
#[inline(always)]
fn decode_span<const CLAIMED: bool>(
    code: u8,
    start: u64,
    c: &mut [ColumnReader<'_>; col::COUNT],
    g: &mut Group,
) -> Result<Event, DecodeError> {
    let (name, id, parent, duration) = span_fields::<CLAIMED>(code, start, c, g)?;
    let arg = if code & FLAG_A != 0 {
        Some(if CLAIMED {
            c[col::ARG].take()?
        } else {
            c[col::ARG].next()?
        })
    } else {
        None
    };
    Ok(Event::Span {
        start,
        duration,
        name,
        id,
        parent,
        arg,
    })
}

/// What spans and polls share after their time: name, id, parent (if
/// flag B) and duration; the group's previous end moves to the span's.
#[inline(always)]
fn span_fields<const CLAIMED: bool>(
    code: u8,
    start: u64,
    c: &mut [ColumnReader<'_>; col::COUNT],
    g: &mut Group,
) -> Result<(u32, SpanId, SpanId, u64), DecodeError> {
    let mut get = |column: usize| {
        if CLAIMED {
            c[column].take()
        } else {
            c[column].next()
        }
    };
    let name = narrow(get(col::NAME)?, "span name")?;
    let delta = narrow(get(col::SPAN)?, "span id")?;
    let id = g
        .prev_span
        .wrapping_add(((delta >> 1) as i32 ^ -((delta & 1) as i32)) as u32);
    g.prev_span = id;
    let parent = if code & FLAG_B != 0 {
        id.wrapping_sub(narrow(get(col::PARENT)?, "span parent")?)
    } else {
        0
    };
    let duration = get(col::DURATION)?;
    g.prev_end = start.wrapping_add(duration);
    Ok((name, id, parent, duration))
}

/// `out.len()` spans of code `code` into `out`, if their columns hold
/// enough values (`None` otherwise: the caller decodes them one by one, so
/// that a short column gets its exact error).
#[inline(always)]
fn decode_spans(
    code: u8,
    c: &mut [ColumnReader<'_>; col::COUNT],
    g: &mut Group,
    lane: LaneId,
    out: &mut [(LaneId, Event)],
    decoded: &mut usize,
) -> Option<Result<(), DecodeError>> {
    let n = out.len();
    let needs = [
        (col::SPAN_GAP, true),
        (col::NAME, true),
        (col::SPAN, true),
        (col::PARENT, code & FLAG_B != 0),
        (col::DURATION, true),
        (col::ARG, code & FLAG_A != 0),
    ];
    if needs
        .iter()
        .any(|&(column, used)| used && (c[column].left() as usize) < n)
    {
        return None;
    }
    for (column, used) in needs {
        if used {
            c[column].claim(n as u32);
        }
    }
    Some(fill(lane, out, decoded, || {
        let gap = c[col::SPAN_GAP].take()?;
        let start = g.prev_end.wrapping_add(unzigzag(gap) as u64);
        decode_span::<true>(code, start, c, g)
    }))
}

/// Fills `out` with `lane`'s events from `next`, counting them in
/// `decoded`; stops at the first error.
#[inline(always)]
fn fill(
    lane: LaneId,
    out: &mut [(LaneId, Event)],
    decoded: &mut usize,
    mut next: impl FnMut() -> Result<Event, DecodeError>,
) -> Result<(), DecodeError> {
    for slot in out {
        *slot = (lane, next()?);
        *decoded += 1;
    }
    Ok(())
}

/// The record of kind and flags `code`, whose kind value was read.
#[inline(always)]
fn decode_fields(
    code: u8,
    c: &mut [ColumnReader<'_>; col::COUNT],
    g: &mut Group,
) -> Result<Event, DecodeError> {
    let kind = code >> KIND_SHIFT;
    let gap = c[if kind == kind::SPAN || kind == kind::POLL {
        col::SPAN_GAP
    } else {
        col::POINT_GAP
    }]
    .next()?;
    let time = g.prev_end.wrapping_add(unzigzag(gap) as u64);
    g.prev_end = time;
    let flag_a = code & FLAG_A != 0;
    Ok(match kind {
        kind::SPAN => decode_span::<false>(code, time, c, g)?,
        kind::INSTANT => Event::Instant {
            time,
            name: narrow(c[col::NAME].next()?, "instant name")?,
            payload: c[col::VALUE].next()?,
        },
        kind::GAUGE => {
            let gauge = narrow(c[col::NAME].next()?, "gauge name")?;
            let raw = c[col::VALUE].next()?;
            let value = if flag_a {
                GaugeValue::Float(f64::from_bits(raw))
            } else {
                let x = g.prev_gauge.wrapping_add(unzigzag(raw));
                g.prev_gauge = x;
                GaugeValue::Int(x)
            };
            Event::Gauge { time, gauge, value }
        }
        kind::TICK_START | kind::TICK_END => {
            let tick = g
                .prev_tick
                .wrapping_add(unzigzag(c[col::VALUE].next()?) as u64);
            g.prev_tick = tick;
            if kind == kind::TICK_START {
                Event::TickStart { time, tick }
            } else {
                Event::TickEnd {
                    time,
                    tick,
                    overrun: flag_a,
                }
            }
        }
        kind::TASK_BEGIN => {
            let name = narrow(c[col::NAME].next()?, "task name")?;
            let task = next_task(c, g)?;
            let parent = if code & FLAG_B != 0 {
                c[col::ARG].next()?
            } else {
                0
            };
            Event::TaskBegin {
                time,
                name,
                task,
                parent,
            }
        }
        kind::POLL => {
            let (name, id, parent, duration) = span_fields::<false>(code, time, c, g)?;
            Event::Poll {
                start: time,
                duration,
                name,
                id,
                parent,
                task: next_task(c, g)?,
            }
        }
        kind::TASK_END => Event::TaskEnd {
            time,
            name: narrow(c[col::NAME].next()?, "task name")?,
            task: next_task(c, g)?,
            wall: c[col::DURATION].next()?,
            busy: c[col::ARG].next()?,
        },
        kind::FIELD_INT | kind::FIELD_FLOAT | kind::FIELD_STR => {
            let key = narrow(c[col::NAME].next()?, "field key")?;
            let raw = c[col::VALUE].next()?;
            let value = match kind {
                kind::FIELD_INT => FieldValue::Int(unzigzag(raw)),
                kind::FIELD_FLOAT => FieldValue::Float(f64::from_bits(raw)),
                _ => FieldValue::Str(narrow(raw, "field string")?),
            };
            let owner = match (flag_a, code & FLAG_B != 0) {
                (true, false) => FieldOwner::Task(c[col::ARG].next()?),
                (false, true) => {
                    FieldOwner::Span(narrow(c[col::DURATION].next()?, "field's span")?)
                }
                _ => {
                    return Err(DecodeError::Malformed {
                        what: "field without exactly one owner",
                    })
                }
            };
            Event::Field {
                time,
                key,
                value,
                owner,
            }
        }
        kind::MARK => {
            let label = narrow(c[col::NAME].next()?, "mark's label")?;
            let name = narrow(c[col::VALUE].next()?, "mark's span name")?;
            let span = if flag_a {
                Some((name, c[col::ARG].next()?))
            } else {
                None
            };
            Event::Mark { time, label, span }
        }
        kind::ALLOCATED => {
            if code & FLAG_B == 0 {
                return Err(DecodeError::Malformed {
                    what: "allocated bytes without their span",
                });
            }
            c[col::NAME].next()?;
            let bytes = c[col::VALUE].next()?;
            let span = narrow(c[col::DURATION].next()?, "allocated bytes' span")?;
            Event::Allocated { time, span, bytes }
        }
        kind::FIRST_RESERVED..=kind::LAST_RESERVED => {
            // Read by the shape reserved kinds share, and skipped.
            c[col::NAME].next()?;
            c[col::VALUE].next()?;
            if flag_a {
                c[col::ARG].next()?;
            }
            if code & FLAG_B != 0 {
                c[col::DURATION].next()?;
            }
            Event::Unknown { time, kind }
        }
        _ => {
            return Err(DecodeError::Malformed {
                what: "unknown record kind",
            })
        }
    })
}

/// A task id: the group's previous one plus a zigzag delta.
#[inline(always)]
fn next_task(c: &mut [ColumnReader<'_>; col::COUNT], g: &mut Group) -> Result<TaskId, DecodeError> {
    let task = g
        .prev_task
        .wrapping_add(unzigzag(c[col::VALUE].next()?) as u64);
    g.prev_task = task;
    Ok(task)
}
