//! Block compression: LZ4 (`lz4_flex`'s block format) over a Block's
//! packed events, and the writer's setting for when to use it.
//!
//! Bit-packing (`column.rs`) brings each field close to its spread in
//! bits, one value at a time. What it cannot see is repetition across
//! values: a steady engine loop runs the same systems in the same order
//! every tick, so its kind, name and parent columns repeat byte for byte
//! from one tick to the next. LZ4 finds those runs; the timestamps and
//! durations stay noise, which LZ4 passes over quickly. The two stages
//! are kept apart so that a reader of an uncompressed Block needs no
//! buffer at all, and a writer can choose per Block.
//!
//! The compressed form is LZ4's raw block format, which does not store
//! its decompressed length: the Block header does (`FORMAT.md`).

use core::fmt;
use core::str::FromStr;

use lz4_flex::block::{
    compress_into_with_table, decompress_into, get_maximum_output_size, CompressTable,
    DecompressError,
};

use crate::error::DecodeError;

/// Frame flag of a Block whose events are LZ4-compressed.
pub const FLAG_LZ4: u8 = 0x01;

/// The largest decompressed events a Block may state: 8 MiB, the default
/// frame limit, so that a reader can size its buffer before trusting
/// anything else, and a lying length cannot make it allocate more.
pub const MAX_EVENTS_LEN: usize = 8 << 20;

/// `Auto` keeps the LZ4 form when it saves at least this fraction of the
/// packed bytes: 1/16 (6 %), counting the LZ4 form as it goes on the wire,
/// its `u32` packed length included. Below that, a reader would pay a
/// decompression pass and a buffer for a few percent, and noise-only
/// Blocks (every column timestamps and durations) land there.
pub const AUTO_MIN_SAVING: usize = 16;

/// Bytes the LZ4 form adds before its data: the packed length, `u32`.
pub const LZ4_LENGTH_FIELD: usize = 4;

/// Whether `Auto` keeps an LZ4 form of `compressed` data bytes for
/// `packed` bytes of packed events: when `packed − (4 + compressed)` is at
/// least `packed / 16`, exactly (no rounding).
pub const fn auto_keeps_lz4(packed: usize, compressed: usize) -> bool {
    let wire = compressed + LZ4_LENGTH_FIELD;
    wire < packed && (packed - wire) * AUTO_MIN_SAVING >= packed
}

/// How a Block's events are stored on the wire, as its frame flags say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Codec {
    /// Bit-packed columns, as they are (flags 0).
    Packed,
    /// Bit-packed columns put through LZ4 (flag [`FLAG_LZ4`]).
    Lz4,
}

impl Codec {
    /// The codec a Block frame's `flags` byte names.
    pub const fn from_flags(flags: u8) -> Result<Codec, DecodeError> {
        match flags {
            0 => Ok(Codec::Packed),
            FLAG_LZ4 => Ok(Codec::Lz4),
            flags => Err(DecodeError::UnknownCodec { flags }),
        }
    }

    /// The frame flags of a Block in this codec.
    pub const fn flags(self) -> u8 {
        match self {
            Codec::Packed => 0,
            Codec::Lz4 => FLAG_LZ4,
        }
    }

    /// A short lower-case name, as tools print it.
    pub const fn name(self) -> &'static str {
        match self {
            Codec::Packed => "packed",
            Codec::Lz4 => "lz4",
        }
    }
}

/// When a writer compresses its Blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Compression {
    /// Never: Blocks carry packed columns only. No table, no second
    /// buffer: the choice for the smallest firmware.
    #[default]
    Off,
    /// Always, even when the LZ4 form is larger.
    Lz4,
    /// Compress each Block and keep the LZ4 form only when it saves at
    /// least 1/[`AUTO_MIN_SAVING`] of the bytes ([`auto_keeps_lz4`]).
    Auto,
}

impl Compression {
    /// The setting's name, as configuration spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Compression::Off => "off",
            Compression::Lz4 => "lz4",
            Compression::Auto => "auto",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A compression setting that is not `off`, `lz4` or `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UnknownCompression;

impl fmt::Display for UnknownCompression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("compression must be off, lz4 or auto")
    }
}

impl core::error::Error for UnknownCompression {}

impl FromStr for Compression {
    type Err = UnknownCompression;

    /// `off`, `lz4` or `auto`, in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Compression::Off, Compression::Lz4, Compression::Auto]
            .into_iter()
            .find(|c| s.eq_ignore_ascii_case(c.name()))
            .ok_or(UnknownCompression)
    }
}

/// LZ4's hash table, owned by the caller so that the core allocates
/// nothing. It occupies 16 KiB whichever form it holds (lz4_flex's table
/// is an enum of the two): [`Lz4Table::small`] fills and clears only half
/// of it.
pub struct Lz4Table(CompressTable);

impl Lz4Table {
    /// 16-bit entries (8 KiB in use), for Blocks whose packed events stay
    /// under 64 KiB (a microcontroller's). A larger Block still
    /// compresses, with a 16 KiB table built on the stack for it.
    pub fn small() -> Self {
        Lz4Table(CompressTable::small())
    }

    /// 32-bit entries (all 16 KiB), for Blocks of any size.
    pub fn large() -> Self {
        Lz4Table(CompressTable::large())
    }
}

impl fmt::Debug for Lz4Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            CompressTable::Small(_) => "Lz4Table(small)",
            CompressTable::Large(_) => "Lz4Table(large)",
        })
    }
}

/// The largest LZ4 form of `raw` bytes: what [`compress`] needs in `out`.
pub const fn max_compressed_len(raw: usize) -> usize {
    get_maximum_output_size(raw)
}

/// `packed` compressed into `out` per `setting`: its length, or `None`
/// when the setting keeps the packed form (`Off`, `Auto` without enough
/// saving) or `out` is smaller than [`max_compressed_len`].
pub fn compress(
    setting: Compression,
    packed: &[u8],
    out: &mut [u8],
    table: &mut Lz4Table,
) -> Option<usize> {
    if setting == Compression::Off || packed.is_empty() || packed.len() > MAX_EVENTS_LEN {
        return None;
    }
    let len = compress_into_with_table(packed, out, &mut table.0).ok()?;
    let keep = match setting {
        Compression::Auto => auto_keeps_lz4(packed.len(), len),
        _ => true,
    };
    keep.then_some(len)
}

/// Decompresses `data` into exactly `out`: an error unless it fills `out`
/// to the byte.
pub fn decompress(data: &[u8], out: &mut [u8]) -> Result<(), DecodeError> {
    match decompress_into(data, out) {
        Ok(n) if n == out.len() => Ok(()),
        Ok(_) => Err(DecodeError::Decompression {
            what: "decodes to fewer bytes than the block states",
        }),
        Err(DecompressError::OutputTooSmall { .. }) => Err(DecodeError::Decompression {
            what: "decodes to more bytes than the block states",
        }),
        Err(DecompressError::ExpectedAnotherByte | DecompressError::LiteralOutOfBounds) => {
            Err(DecodeError::Decompression {
                what: "cut short or damaged",
            })
        }
        Err(_) => Err(DecodeError::Decompression {
            what: "refers back outside the data",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_in_any_case_and_name_themselves() {
        for c in [Compression::Off, Compression::Lz4, Compression::Auto] {
            assert_eq!(c.name().parse(), Ok(c));
            assert_eq!(c.name().to_uppercase().parse(), Ok(c));
        }
        assert_eq!("zstd".parse::<Compression>(), Err(UnknownCompression));
    }

    #[test]
    fn auto_keeps_lz4_only_when_it_pays() {
        let mut table = Lz4Table::small();
        let repeating: [u8; 4096] = core::array::from_fn(|i| (i % 7) as u8);
        // A xorshift: incompressible.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let noise: [u8; 4096] = core::array::from_fn(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        });
        let mut out = [0u8; max_compressed_len(4096)];
        let len = compress(Compression::Auto, &repeating, &mut out, &mut table).unwrap();
        assert!(len < 200);
        let mut back = [0u8; 4096];
        decompress(&out[..len], &mut back).unwrap();
        assert_eq!(back, repeating);
        assert_eq!(
            compress(Compression::Auto, &noise, &mut out, &mut table),
            None
        );
        let forced = compress(Compression::Lz4, &noise, &mut out, &mut table).unwrap();
        assert!(forced > 4096);
        assert_eq!(
            compress(Compression::Off, &repeating, &mut out, &mut table),
            None
        );
        // Too small an output: the packed form, not a panic.
        assert_eq!(
            compress(Compression::Lz4, &repeating, &mut out[..100], &mut table),
            None
        );
    }

    #[test]
    fn auto_counts_the_length_field_and_rounds_for_the_reader() {
        // 160 packed bytes: the LZ4 form must save 10, its 4-byte length
        // field included.
        assert!(auto_keeps_lz4(160, 146));
        assert!(!auto_keeps_lz4(160, 147));
        // 170 bytes: 170/16 = 10.6, so 11 must be saved (the old rule,
        // `len <= packed - packed / 16` without the field, kept 160 here).
        assert!(auto_keeps_lz4(170, 155));
        assert!(!auto_keeps_lz4(170, 156));
        assert!(!auto_keeps_lz4(4, 0));
        assert!(!auto_keeps_lz4(0, 0));
    }

    #[test]
    fn lying_lengths_and_cut_data_are_errors() {
        let mut table = Lz4Table::large();
        let data: [u8; 1000] = core::array::from_fn(|i| (i % 13) as u8);
        let mut out = [0u8; max_compressed_len(1000)];
        let len = compress(Compression::Lz4, &data, &mut out, &mut table).unwrap();
        let mut back = [0u8; 1001];
        assert!(matches!(
            decompress(&out[..len], &mut back),
            Err(DecodeError::Decompression { .. })
        ));
        assert!(matches!(
            decompress(&out[..len], &mut back[..999]),
            Err(DecodeError::Decompression { .. })
        ));
        for cut in 0..len {
            assert!(decompress(&out[..cut], &mut back[..1000]).is_err());
        }
    }
}
