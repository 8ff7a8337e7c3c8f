//! Little-endian and varint primitives over byte slices.
//!
//! [`Writer`] keeps counting past the end of its buffer instead of failing at
//! the first byte that does not fit, so one pass both writes a frame and, when
//! the buffer is too small, tells the caller exactly how large it must be.
//! [`Reader`] never panics: every read is bounds-checked and names its field.

use crate::error::{DecodeError, EncodeError};

/// Longest LEB128 encoding of a `u64`.
pub(crate) const MAX_VARINT_LEN: usize = 10;

pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }

    /// Bytes written (or that would have been written) so far.
    #[inline]
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn overflowed(&self) -> bool {
        self.pos > self.buf.len()
    }

    #[inline]
    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        let end = self.pos.saturating_add(bytes.len());
        if let Some(dst) = self.buf.get_mut(self.pos..end) {
            dst.copy_from_slice(bytes);
        }
        self.pos = end;
    }

    #[inline]
    pub(crate) fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }

    #[inline]
    pub(crate) fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }

    #[inline]
    pub(crate) fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    #[inline]
    pub(crate) fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    #[inline(always)]
    pub(crate) fn varint(&mut self, mut v: u64) {
        // Fast path: room for the longest varint, written in place.
        if let Some(dst) = self
            .buf
            .get_mut(self.pos..self.pos.saturating_add(MAX_VARINT_LEN))
        {
            let mut n = 0;
            while v >= 0x80 {
                dst[n] = (v as u8) | 0x80;
                v >>= 7;
                n += 1;
            }
            dst[n] = v as u8;
            self.pos += n + 1;
            return;
        }
        let mut tmp = [0u8; MAX_VARINT_LEN];
        let mut n = 0;
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                tmp[n] = byte;
                n += 1;
                break;
            }
            tmp[n] = byte | 0x80;
            n += 1;
        }
        self.bytes(&tmp[..n]);
    }

    #[cfg(test)]
    pub(crate) fn zigzag(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    /// A UTF-8 string: varint byte length, then the bytes.
    pub(crate) fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.bytes(s.as_bytes());
    }

    /// Overwrites 2 bytes already written at `at`; a no-op past the buffer.
    pub(crate) fn patch_u16(&mut self, at: usize, v: u16) {
        if let Some(dst) = self.buf.get_mut(at..at.saturating_add(2)) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
    }

    /// Overwrites 4 bytes already written at `at`; a no-op past the buffer.
    pub(crate) fn patch_u32(&mut self, at: usize, v: u32) {
        if let Some(dst) = self.buf.get_mut(at..at.saturating_add(4)) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
    }

    /// Lets `fill` write at most `max` bytes in place and advances by the
    /// count it returns. Without room for `max`, counts `max` as needed.
    pub(crate) fn fill_with(&mut self, max: usize, fill: impl FnOnce(&mut [u8]) -> Option<usize>) {
        let end = self.pos.saturating_add(max);
        let written = self.buf.get_mut(self.pos..end).and_then(fill);
        self.pos = match written {
            Some(n) if n <= max => self.pos + n,
            // No room: count the worst case as needed.
            None if end > self.buf.len() => end,
            // `fill` failed with room to spare: never write a bogus frame,
            // force the overflow path instead.
            _ => end.max(self.buf.len().saturating_add(1)),
        };
    }

    /// The written bytes, if they all fitted.
    pub(crate) fn written(&self) -> Option<&[u8]> {
        self.buf.get(..self.pos)
    }

    pub(crate) fn finish(self) -> Result<usize, EncodeError> {
        if self.overflowed() {
            Err(EncodeError::BufferTooSmall { needed: self.pos })
        } else {
            Ok(self.pos)
        }
    }
}

/// Length of `v` as a LEB128 varint.
#[cfg(test)]
const fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) const EMPTY: Reader<'static> = Reader { bytes: &[] };

    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    #[inline]
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if n > self.bytes.len() {
            return Err(DecodeError::Malformed { what });
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    #[inline]
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    #[inline]
    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(what)?[0])
    }

    #[inline]
    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        self.array(what).map(u16::from_le_bytes)
    }

    #[inline]
    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        self.array(what).map(u32::from_le_bytes)
    }

    #[inline]
    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A varint. Its one-byte case is inlined where it is read (most of
    /// a Block's counts, widths and bases, and of a Samples frame's
    /// deltas); the rest is a call. Left to itself, the wasm build made
    /// every read a call: 13 % of the page's reading.
    #[inline(always)]
    pub(crate) fn varint(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        if let Some((&byte, rest)) = self.bytes.split_first() {
            if byte < 0x80 {
                self.bytes = rest;
                return Ok(u64::from(byte));
            }
        }
        self.varint_long(what)
    }

    /// A varint of two bytes or more (or none: the error).
    fn varint_long(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let bytes = self.bytes;
        // Two bytes, without the loop: a Samples frame's switches are
        // mostly deltas of 128 ns to 16 µs.
        if let [low, high, rest @ ..] = bytes {
            if *high < 0x80 {
                self.bytes = rest;
                return Ok(u64::from(low & 0x7f) | u64::from(*high) << 7);
            }
        }
        let mut value = 0u64;
        for (i, &byte) in bytes.iter().take(MAX_VARINT_LEN).enumerate() {
            let bits = u64::from(byte & 0x7f);
            // The tenth byte may only carry the top bit of a u64.
            if i == MAX_VARINT_LEN - 1 && bits > 1 {
                return Err(DecodeError::Malformed { what });
            }
            value |= bits << (7 * i);
            if byte & 0x80 == 0 {
                self.bytes = &bytes[i + 1..];
                return Ok(value);
            }
        }
        // Ran out of bytes, or ten bytes all saying "more".
        Err(DecodeError::Malformed { what })
    }

    #[inline]
    pub(crate) fn varint_u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        u32::try_from(self.varint(what)?).map_err(|_| DecodeError::Malformed { what })
    }

    #[inline]
    pub(crate) fn varint_u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        u16::try_from(self.varint(what)?).map_err(|_| DecodeError::Malformed { what })
    }

    #[cfg(test)]
    pub(crate) fn zigzag(&mut self, what: &'static str) -> Result<i64, DecodeError> {
        let v = self.varint(what)?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    pub(crate) fn str(&mut self, what: &'static str) -> Result<&'a str, DecodeError> {
        let len =
            usize::try_from(self.varint(what)?).map_err(|_| DecodeError::Malformed { what })?;
        let bytes = self.take(len, what)?;
        core::str::from_utf8(bytes).map_err(|_| DecodeError::Malformed { what })
    }

    /// Fails unless every byte was consumed.
    pub(crate) fn expect_end(&self, what: &'static str) -> Result<(), DecodeError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::Malformed { what })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trips_edges() {
        for v in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut buf = [0u8; MAX_VARINT_LEN];
            let mut w = Writer::new(&mut buf);
            w.varint(v);
            let n = w.finish().unwrap();
            assert_eq!(n, varint_len(v));
            assert_eq!(Reader::new(&buf[..n]).varint("v"), Ok(v));
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            let mut buf = [0u8; MAX_VARINT_LEN];
            let mut w = Writer::new(&mut buf);
            w.zigzag(v);
            let n = w.finish().unwrap();
            assert_eq!(Reader::new(&buf[..n]).zigzag("v"), Ok(v));
        }
    }

    #[test]
    fn overlong_varints_are_rejected() {
        let eleven = [0xffu8; 11];
        assert!(Reader::new(&eleven).varint("v").is_err());
        // Ten bytes whose last carries more than the top bit of a u64.
        let mut ten = [0xffu8; 10];
        ten[9] = 0x02;
        assert!(Reader::new(&ten).varint("v").is_err());
    }

    #[test]
    fn writer_reports_needed_size() {
        let mut buf = [0u8; 3];
        let mut w = Writer::new(&mut buf);
        w.u64(7);
        w.str("abc");
        assert_eq!(w.finish(), Err(EncodeError::BufferTooSmall { needed: 12 }));
    }

    #[test]
    fn reader_never_reads_past_end() {
        let mut r = Reader::new(&[5, b'a', b'b']);
        assert_eq!(r.str("name"), Err(DecodeError::Malformed { what: "name" }));
        assert_eq!(
            Reader::new(&[0xff, 0xfe]).str("name"),
            Err(DecodeError::Malformed { what: "name" })
        );
    }
}
