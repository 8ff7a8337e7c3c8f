//! One bit-packed column of a Block: frame of reference, a fixed bit width
//! and packed escapes for outliers.
//!
//! ```text
//! v  value count n; nothing follows when it is 0
//! u8 width w (0..=64)
//! v  base b: the smallest value
//!    only when 1 <= w <= 63:
//! v    escape count e; when e > 0:
//! u8   escape width w2 (0..=64)
//! v    escape base b2
//!    ceil(n * w / 8) bytes: n slots of w bits, LSB first
//!    ceil(e * w2 / 8) bytes: e escape slots of w2 bits
//! ```
//! A slot holds `value - b`. When that does not fit below the all-ones
//! pattern `m = 2^w - 1` (the marker), the slot holds `m` and the next
//! escape slot holds `value - b - m - b2`. Width 0 means every value is
//! `b`; width 64 has no marker. The encoder picks a width that makes the
//! column smallest, within a byte, so that a few outliers (the first
//! query after an idle gap, a frame span among system spans) do not widen
//! every slot, and the outliers themselves are packed at the width of
//! their own spread.
//!
//! Why not varints and LZ4 (format version 1): a varint spends a byte
//! boundary and a continuation bit on every field and LZ4 cannot squeeze
//! the noise out of timestamps, while packing each field at the width its
//! values need comes close to their size in bits; reading a slot back is a
//! load, a shift and a mask instead of a loop per byte, and needs no
//! decompression buffer.

use crate::cursor::{Reader, Writer, MAX_VARINT_LEN};
use crate::error::DecodeError;

/// Largest column header: count, width, base, escape count, width, base.
pub(crate) const MAX_HEADER_LEN: usize = 2 * (MAX_VARINT_LEN + 1 + MAX_VARINT_LEN);
/// Bytes a column can need beyond its header and whole slots: the last
/// byte of its slots and of its escape slots.
pub(crate) const MAX_ROUNDING: usize = 2;

/// Bit length of `v`: 0 for 0, 64 for values with the top bit set.
#[inline]
const fn bit_len(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// Bits of `v` as a varint.
#[inline]
const fn varint_bits(v: u64) -> u64 {
    8 * (bit_len(v | 1) as u64).div_ceil(7)
}

/// `2^width - 1`, all ones for width 64.
#[inline]
const fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// How one column is packed: chosen from its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub width: u32,
    pub base: u64,
    /// Values that escape.
    pub escapes: u64,
    pub escape_width: u32,
    pub escape_base: u64,
}

impl Layout {
    /// The marker slot, if this width has one.
    #[inline]
    const fn marker(&self) -> Option<u64> {
        if self.width == 0 || self.width >= 64 {
            None
        } else {
            Some(mask(self.width))
        }
    }

    /// Picks a width that packs the `n` `values`, whose smallest is `base`
    /// (the frame of reference) and largest `top`, within a byte of the
    /// smallest: one pass over the values for a histogram of bit lengths
    /// (unless they are all equal), then a look at two widths per bit
    /// length that occurs, up to the spread's. Its cost is one pass and a
    /// few widths, not a walk of all 63: most columns of a small group
    /// hold a few lengths.
    pub(crate) fn choose(
        values: impl Iterator<Item = u64> + Clone,
        n: usize,
        base: u64,
        top: u64,
    ) -> Layout {
        if n == 0 || base == top {
            return Layout {
                width: 0,
                base: if n == 0 { 0 } else { base },
                escapes: 0,
                escape_width: 0,
                escape_base: 0,
            };
        }
        // A long column's histogram in four tables, so that runs of alike
        // values do not wait on each other's updates; a short one's in
        // one, which is all there is to clear.
        if n <= SHORT_COLUMN {
            Buckets::<1>::of(values, base).choose(n as u64, base, top)
        } else {
            Buckets::<4>::of(values, base).choose(n as u64, base, top)
        }
    }

    /// Width 64 for `n` values from `base`: plain slots, no marker; and
    /// its size in bits, which any other width must beat.
    fn plain(n: u64, base: u64) -> (u64, Layout) {
        let layout = Layout {
            width: 64,
            base,
            escapes: 0,
            escape_width: 0,
            escape_base: 0,
        };
        (64 * n, layout)
    }

    /// Width `width` for `n` values from `base`, of which `escapes` (the
    /// smallest `low` above `base`) escape, the largest `spread` above
    /// it: the layout, and its size in bits (whole slots; the header's
    /// count and base left out, which every width shares).
    fn priced(n: u64, base: u64, spread: u64, width: u32, escapes: u64, low: u64) -> (u64, Layout) {
        let mut layout = Layout {
            width,
            base,
            escapes,
            escape_width: 0,
            escape_base: 0,
        };
        let mut cost = n * u64::from(width) + varint_bits(escapes);
        if escapes > 0 {
            // Escapes hold `value - base - marker`, from their own base.
            layout.escape_base = low - mask(width);
            layout.escape_width = bit_len(spread - low);
            cost += 8 + varint_bits(layout.escape_base) + escapes * u64::from(layout.escape_width);
        }
        (cost, layout)
    }

    /// Bytes of `n` slots of `width` bits.
    #[inline]
    pub(crate) const fn packed_len(n: u64, width: u32) -> u64 {
        (n * width as u64).div_ceil(8)
    }

    /// Writes the column: header, slots, escape slots. `values` (`n` of
    /// them) must be the ones the layout was chosen for.
    pub(crate) fn write(
        &self,
        w: &mut Writer<'_>,
        n: usize,
        values: impl Iterator<Item = u64> + Clone,
    ) {
        w.varint(n as u64);
        if n == 0 {
            return;
        }
        w.u8(self.width as u8);
        w.varint(self.base);
        let marker = self.marker();
        if marker.is_some() {
            w.varint(self.escapes);
            if self.escapes > 0 {
                w.u8(self.escape_width as u8);
                w.varint(self.escape_base);
            }
        }
        let (width, base) = (self.width, self.base);
        if width > 0 {
            let len = Self::packed_len(n as u64, width) as usize;
            w.fill_with(len, |dst| {
                let mut packer = Packer::new(dst);
                for v in values.clone() {
                    let d = v.wrapping_sub(base);
                    packer.put(marker.map_or(d, |m| d.min(m)), width);
                }
                packer.finish()
            });
        }
        if let (Some(marker), true) = (marker, self.escapes > 0) {
            let offset = base.wrapping_add(marker).wrapping_add(self.escape_base);
            let len = Self::packed_len(self.escapes, self.escape_width) as usize;
            w.fill_with(len, |dst| {
                let mut packer = Packer::new(dst);
                for v in values {
                    if v.wrapping_sub(base) >= marker {
                        packer.put(v.wrapping_sub(offset), self.escape_width);
                    }
                }
                packer.finish()
            });
        }
    }
}

/// Appends slots of up to 64 bits to a byte slice, least significant first.
struct Packer<'a> {
    dst: &'a mut [u8],
    at: usize,
    acc: u64,
    /// Bits pending in `acc`, always below 64.
    bits: u32,
}

impl<'a> Packer<'a> {
    fn new(dst: &'a mut [u8]) -> Self {
        Packer {
            dst,
            at: 0,
            acc: 0,
            bits: 0,
        }
    }

    /// Appends the low `width` bits of `v` (`v` must fit in them).
    #[inline]
    fn put(&mut self, v: u64, width: u32) {
        if width == 0 {
            return;
        }
        self.acc |= v << self.bits;
        let total = self.bits + width;
        if total >= 64 {
            self.emit_word();
            // The bits of `v` that did not fit in the word just written.
            self.acc = if self.bits == 0 {
                0
            } else {
                v >> (64 - self.bits)
            };
            self.bits = total - 64;
        } else {
            self.bits = total;
        }
    }

    #[inline]
    fn emit_word(&mut self) {
        if let Some(dst) = self.dst.get_mut(self.at..self.at + 8) {
            dst.copy_from_slice(&self.acc.to_le_bytes());
        }
        self.at += 8;
    }

    /// Flushes the last partial word; returns the bytes written, or `None`
    /// if they did not fit (never, for a slice of `packed_len`).
    fn finish(mut self) -> Option<usize> {
        let tail = self.bits.div_ceil(8) as usize;
        for (dst, byte) in self
            .dst
            .iter_mut()
            .skip(self.at)
            .zip(self.acc.to_le_bytes())
            .take(tail)
        {
            *dst = byte;
        }
        self.at += tail;
        (self.at <= self.dst.len()).then_some(self.at)
    }
}

/// Slots of one width, read in order.
#[derive(Clone, Copy)]
struct Slots<'a> {
    /// The slots and every byte after them in the Block: loads may read
    /// past the last slot (masked off), so that only the very end of a
    /// Block takes the byte-by-byte path.
    bytes: &'a [u8],
    /// Bit position of the next slot.
    bit: usize,
    width: u32,
    mask: u64,
}

impl Slots<'_> {
    const EMPTY: Slots<'static> = Slots {
        bytes: &[],
        bit: 0,
        width: 0,
        mask: 0,
    };

    #[inline(always)]
    fn next(&mut self) -> u64 {
        let byte = self.bit >> 3;
        let shift = self.bit & 7;
        self.bit += self.width as usize;
        // One unaligned load covers the slot when it is at most 57 bits.
        if self.width <= 57 {
            if let Some(word) = self.bytes.get(byte..).and_then(|s| s.first_chunk::<8>()) {
                return (u64::from_le_bytes(*word) >> shift) & self.mask;
            }
        }
        self.slow(byte, shift)
    }

    /// Near the end of the Block, or wider than one load: byte by byte.
    #[cold]
    fn slow(&self, byte: usize, shift: usize) -> u64 {
        let mut acc = 0u128;
        for (i, &b) in self.bytes.iter().skip(byte).take(9).enumerate() {
            acc |= u128::from(b) << (8 * i);
        }
        ((acc >> shift) as u64) & self.mask
    }
}

/// Reads one column back, value by value. (Unpacking 16 values at a time
/// into a buffer measured 15 % slower on the block bench: the records'
/// own branches dominate, not the slot reads.)
#[derive(Clone, Copy)]
pub(crate) struct ColumnReader<'a> {
    slots: Slots<'a>,
    escapes: Slots<'a>,
    /// Values not yet read or claimed.
    left: u32,
    /// Escape slots not yet read.
    escapes_left: u64,
    base: u64,
    /// The marker, if the width has one (`escaping`).
    marker: u64,
    escaping: bool,
    /// What an escape slot is added to: base + marker + escape base.
    escape_offset: u64,
    what: &'static str,
}

impl<'a> ColumnReader<'a> {
    /// An empty column.
    pub(crate) const EMPTY: ColumnReader<'static> = ColumnReader {
        slots: Slots::EMPTY,
        escapes: Slots::EMPTY,
        left: 0,
        escapes_left: 0,
        base: 0,
        marker: 0,
        escaping: false,
        escape_offset: 0,
        what: "",
    };

    /// Parses a column's header and takes its bytes from `r`; `max_values`
    /// bounds the count it may claim.
    #[inline]
    pub(crate) fn parse(
        r: &mut Reader<'a>,
        max_values: u32,
        what: &'static str,
    ) -> Result<Self, DecodeError> {
        let malformed = DecodeError::Malformed { what };
        let left = u32::try_from(r.varint(what)?)
            .ok()
            .filter(|&n| n <= max_values)
            .ok_or(malformed)?;
        if left == 0 {
            return Ok(ColumnReader {
                what,
                ..ColumnReader::EMPTY
            });
        }
        let width = u32::from(r.u8(what)?);
        if width > 64 {
            return Err(malformed);
        }
        let base = r.varint(what)?;
        let marker = (1..64).contains(&width).then(|| mask(width));
        let (mut escapes_left, mut escape_width, mut escape_base) = (0, 0, 0);
        if marker.is_some() {
            escapes_left = r.varint(what)?;
            if escapes_left > u64::from(left) {
                return Err(malformed);
            }
            if escapes_left > 0 {
                escape_width = u32::from(r.u8(what)?);
                if escape_width > 64 {
                    return Err(malformed);
                }
                escape_base = r.varint(what)?;
            }
        }
        let slots = Slots {
            bytes: r.rest(),
            bit: 0,
            width,
            mask: mask(width),
        };
        // Counts are below 2^32 and widths at most 64: no overflow.
        let take = |r: &mut Reader<'_>, n: u64, width: u32| {
            let len = usize::try_from(Layout::packed_len(n, width)).map_err(|_| malformed)?;
            r.take(len, what).map(drop)
        };
        take(r, u64::from(left), width)?;
        let escapes = Slots {
            bytes: r.rest(),
            bit: 0,
            width: escape_width,
            mask: mask(escape_width),
        };
        take(r, escapes_left, escape_width)?;
        Ok(ColumnReader {
            slots,
            escapes,
            left,
            escapes_left,
            base,
            marker: marker.unwrap_or(0),
            escaping: marker.is_some(),
            escape_offset: base
                .wrapping_add(marker.unwrap_or(0))
                .wrapping_add(escape_base),
            what,
        })
    }

    /// The next value.
    #[inline(always)]
    pub(crate) fn next(&mut self) -> Result<u64, DecodeError> {
        if self.left == 0 {
            return Err(DecodeError::Malformed { what: self.what });
        }
        self.left -= 1;
        self.take()
    }

    /// Values not yet read or claimed.
    #[inline]
    pub(crate) fn left(&self) -> u32 {
        self.left
    }

    /// Claims `n` values (at most [`ColumnReader::left`]) for
    /// [`ColumnReader::take`].
    #[inline]
    pub(crate) fn claim(&mut self, n: u32) {
        self.left = self.left.saturating_sub(n);
    }

    /// The next value of a claimed run: [`ColumnReader::next`] without its
    /// count. Taking more than was claimed reads bytes past the column
    /// (never past the Block); the caller's claim rules that out.
    #[inline(always)]
    pub(crate) fn take(&mut self) -> Result<u64, DecodeError> {
        if self.slots.width == 0 {
            return Ok(self.base);
        }
        let slot = self.slots.next();
        if self.escaping && slot == self.marker {
            return self.escaped();
        }
        Ok(self.base.wrapping_add(slot))
    }

    /// A marker slot's value: the next escape. Out of line, so that the
    /// common path stays small where it is inlined.
    #[inline(never)]
    fn escaped(&mut self) -> Result<u64, DecodeError> {
        if self.escapes_left == 0 {
            return Err(DecodeError::Malformed { what: self.what });
        }
        self.escapes_left -= 1;
        Ok(self.escape_offset.wrapping_add(self.escapes.next()))
    }

    /// When the column's values are all one (width 0) and `n` of them are
    /// left, takes those `n` and returns the value.
    #[inline]
    pub(crate) fn constant(&mut self, n: usize) -> Option<u64> {
        if self.slots.width == 0 && self.left as usize >= n {
            self.left -= n as u32;
            Some(self.base)
        } else {
            None
        }
    }

    /// Takes every value and escape left unread: a group passed over.
    pub(crate) fn pass_over(&mut self) {
        self.left = 0;
        self.escapes_left = 0;
    }

    /// Fails unless every value and escape was read.
    pub(crate) fn expect_end(&self) -> Result<(), DecodeError> {
        if self.left == 0 && self.escapes_left == 0 {
            Ok(())
        } else {
            Err(DecodeError::Malformed { what: self.what })
        }
    }
}

/// Values a column holds at most for one histogram table to do.
const SHORT_COLUMN: usize = 64;

/// A column's values by bit length, in `T` tables (value i in table
/// i mod `T`). Bucket l: values whose `value - base + 1` is l bits long,
/// so that exactly those with l > w escape at width w (65: value - base
/// is `u64::MAX`); per bucket, its count and its smallest `value - base`.
struct Buckets<const T: usize> {
    counts: [[u32; 66]; T],
    lows: [[u64; 66]; T],
}

impl<const T: usize> Buckets<T> {
    /// `values`' histogram, from `base`: one pass.
    #[inline]
    fn of(values: impl Iterator<Item = u64>, base: u64) -> Self {
        let mut b = Buckets {
            counts: [[0u32; 66]; T],
            lows: [[u64::MAX; 66]; T],
        };
        for (i, v) in values.enumerate() {
            let d = v.wrapping_sub(base);
            let l = match d.checked_add(1) {
                Some(d1) => bit_len(d1) as usize,
                None => 65,
            };
            b.counts[i % T][l] += 1;
            b.lows[i % T][l] = b.lows[i % T][l].min(d);
        }
        b
    }

    /// The layout for the `n` values counted, from `base` to `top`
    /// ([`Layout::choose`]).
    fn choose(&self, n: u64, base: u64, top: u64) -> Layout {
        let spread = top.wrapping_sub(base);
        let mut best = Layout::plain(n, base);
        let mut consider = |width: u32, escapes: u64, low: u64| {
            let priced = Layout::priced(n, base, spread, width, escapes, low);
            if priced.0 < best.0 {
                best = priced;
            }
        };
        // The lengths from the longest (no value is longer than the
        // spread) down. The widths from a length up to just below the
        // next longer one escape the same values: of those, the lowest
        // has the fewest slot bits, the highest the smallest escape base;
        // between them the escape base's varint differs by a byte at most,
        // so they are the two to look at.
        let longest = spread.checked_add(1).map_or(65, bit_len) as usize;
        let (mut escapes, mut low) = (0u64, u64::MAX);
        // Widths below this escape the buckets counted so far.
        let mut above = 64u32;
        for l in (1..=longest).rev() {
            let count: u64 = self.counts.iter().map(|t| u64::from(t[l])).sum();
            if count == 0 {
                continue;
            }
            let length = l as u32;
            if length < above {
                if escapes > 0 {
                    consider(above - 1, escapes, low);
                }
                consider(length, escapes, low);
                above = length;
            }
            escapes += count;
            low = self.lows.iter().fold(low, |low, t| low.min(t[l]));
        }
        // Below the shortest length, every value escapes.
        if above > 1 {
            consider(above - 1, escapes, low);
            consider(1, escapes, low);
        }
        best.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The width that minimises the packed size, every width tried: what
    /// `choose` did before it looked at two widths per length, kept to
    /// hold it to within a byte of the smallest.
    fn exhaustive(values: &[u64], base: u64, top: u64) -> Layout {
        let n = values.len() as u64;
        let spread = top.wrapping_sub(base);
        let length = |v: u64| {
            let d = v.wrapping_sub(base);
            d.checked_add(1).map_or(65, bit_len)
        };
        let mut best = Layout::plain(n, base);
        for w in 1..64u32 {
            let escaping = values.iter().filter(|&&v| length(v) > w);
            let escapes = escaping.clone().count() as u64;
            let low = escaping.map(|&v| v.wrapping_sub(base)).min();
            let priced = Layout::priced(n, base, spread, w, escapes, low.unwrap_or(u64::MAX));
            if priced.0 < best.0 {
                best = priced;
            }
        }
        best.1
    }

    /// Bytes `layout` packs `values` in.
    fn packed(layout: &Layout, values: &[u64]) -> usize {
        let mut buf = vec![0u8; MAX_HEADER_LEN + 8 * values.len() + MAX_ROUNDING];
        let mut w = Writer::new(&mut buf);
        layout.write(&mut w, values.len(), values.iter().copied());
        w.finish().expect("fits")
    }

    /// Columns of every shape a Block holds (runs, noise, outliers, the
    /// extremes): the chosen layout packs within a byte of the smallest.
    #[test]
    fn the_chosen_width_packs_within_a_byte_of_the_smallest() {
        let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut chosen_total, mut smallest_total) = (0, 0);
        for case in 0..20_000 {
            let n = 1 + (next() % 80) as usize;
            let shape = case % 6;
            let values: Vec<u64> = (0..n)
                .map(|_| {
                    let r = next();
                    match shape {
                        0 => r % 16,
                        1 => 1_000_000 + r % 5_000,
                        2 if r % 10 == 0 => r >> (r % 64),
                        2 => 500 + r % 40,
                        3 => r >> (r % 64),
                        4 if r % 50 == 0 => u64::MAX - r % 3,
                        4 => r % 3,
                        _ => (r % 4) << (r % 60),
                    }
                })
                .collect();
            let (base, top) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
            let chosen = Layout::choose(values.iter().copied(), n, base, top);
            let smallest = exhaustive(&values, base, top);
            let (c, s) = (packed(&chosen, &values), packed(&smallest, &values));
            assert!(
                c <= s + 1,
                "{values:?}: {chosen:?} {c} B, {smallest:?} {s} B"
            );
            chosen_total += c;
            smallest_total += s;
        }
        // And over all of them, about the same.
        assert!(
            chosen_total as f64 <= smallest_total as f64 * 1.001,
            "{chosen_total} against {smallest_total}"
        );
    }

    fn round_trip(values: &[u64]) -> Layout {
        let (lo, hi) = (values.iter().min(), values.iter().max());
        let layout = Layout::choose(
            values.iter().copied(),
            values.len(),
            lo.copied().unwrap_or(0),
            hi.copied().unwrap_or(0),
        );
        let mut buf = [0u8; 4096];
        let mut w = Writer::new(&mut buf);
        layout.write(&mut w, values.len(), values.iter().copied());
        let n = w.finish().expect("fits");
        // Never larger than plain 64-bit slots.
        assert!(n <= MAX_HEADER_LEN + 8 * values.len(), "{n} bytes");
        let mut r = Reader::new(&buf[..n]);
        let mut column = ColumnReader::parse(&mut r, u32::MAX, "column").expect("parses");
        assert!(r.is_empty());
        for &v in values {
            assert_eq!(column.next(), Ok(v));
        }
        assert!(column.next().is_err());
        column.expect_end().expect("all read");
        layout
    }

    #[test]
    fn constant_columns_take_no_slot_bits() {
        let layout = round_trip(&[7; 100]);
        assert_eq!((layout.width, layout.base), (0, 7));
        round_trip(&[]);
    }

    #[test]
    fn outliers_escape_at_their_own_width() {
        // Small values (below the 4-bit marker), and a few outliers close
        // to each other.
        let mut values: Vec<u64> = (0..200).map(|i| 1000 + i % 15).collect();
        for (i, at) in [20, 50, 120, 180].into_iter().enumerate() {
            values[at] = (1 << 40) + i as u64;
        }
        let layout = round_trip(&values);
        assert_eq!((layout.width, layout.escapes), (4, 4));
        assert_eq!(layout.escape_width, 2);
        // Outliers far apart still round-trip, at a wide escape width.
        values[120] = u64::MAX;
        let layout = round_trip(&values);
        assert_eq!((layout.width, layout.escapes), (4, 4));
    }

    #[test]
    fn every_width_round_trips() {
        for width in 0..=64u32 {
            let top = mask(width);
            let values: Vec<u64> = (0..67u64)
                .map(|i| top.wrapping_mul(i).wrapping_add(i) & top)
                .chain([top, 0])
                .collect();
            round_trip(&values);
        }
    }

    #[test]
    fn lying_headers_are_errors() {
        // Width 65.
        let mut r = Reader::new(&[1, 65, 0]);
        assert!(ColumnReader::parse(&mut r, 10, "c").is_err());
        // More values than allowed.
        let mut r = Reader::new(&[11, 0, 0]);
        assert!(ColumnReader::parse(&mut r, 10, "c").is_err());
        // Slots shorter than stated.
        let mut r = Reader::new(&[4, 8, 0, 0, 1, 2]);
        assert!(ColumnReader::parse(&mut r, 10, "c").is_err());
        // More escapes than values.
        let mut r = Reader::new(&[1, 2, 0, 2, 0, 0, 0b11]);
        assert!(ColumnReader::parse(&mut r, 10, "c").is_err());
        // A marker slot without an escape.
        let mut r = Reader::new(&[1, 2, 0, 0, 0b11]);
        let mut c = ColumnReader::parse(&mut r, 10, "c").expect("header is fine");
        assert!(c.next().is_err());
    }
}
