//! Decoder robustness: every kind of damage gives its own error, and the
//! valid frames after the damage are still decoded.

use proptest::prelude::*;
use typhon_live_core::frame::{write_raw_frame, HEADER_LEN, MAGIC};
use typhon_live_core::{
    BlockBuilder, Codec, Compression, DecodeError, Decoder, Event, FrameKind, Shutdown,
};
use typhon_live_tests::{block_frame, read_stream, Owned, Seen};

fn block(seq: u32, events: u32) -> Vec<u8> {
    block_in(Codec::Packed, seq, events)
}

/// A Block of `events` instants on three lanes, in `codec`.
fn block_in(codec: Codec, seq: u32, events: u32) -> Vec<u8> {
    let mut scratch = vec![0u8; 1 << 16];
    let mut builder = BlockBuilder::new(&mut scratch);
    for i in 0..events {
        let t = 1_000 + u64::from(i) * 17;
        assert!(builder.push(
            (i % 3) as u16,
            &Event::Instant {
                time: t,
                name: i % 5,
                payload: u64::from(i)
            }
        ));
    }
    let compression = match codec {
        Codec::Packed => Compression::Off,
        Codec::Lz4 => Compression::Lz4,
    };
    block_frame(&builder, seq, &[], compression)
}

fn shutdown(seq: u32) -> Vec<u8> {
    let mut out = vec![0u8; 64];
    let n = Shutdown {
        time: 1,
        frames_sent: 3,
        frames_dropped: 0,
        events_dropped: 0,
    }
    .write(&mut out, seq)
    .unwrap();
    out.truncate(n);
    out
}

/// Four frames and where each starts.
fn stream() -> (Vec<u8>, Vec<usize>) {
    stream_in(Codec::Packed)
}

/// Four frames, the Blocks in `codec`, and where each starts.
fn stream_in(codec: Codec) -> (Vec<u8>, Vec<usize>) {
    let frames = [
        block_in(codec, 0, 40),
        block_in(codec, 1, 25),
        block_in(codec, 2, 60),
        shutdown(3),
    ];
    let mut bytes = Vec::new();
    let mut starts = Vec::new();
    for f in frames {
        starts.push(bytes.len());
        bytes.extend(f);
    }
    (bytes, starts)
}

fn seqs(seen: &[Seen]) -> Vec<u32> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Frame { frame, .. } => Some(frame.seq()),
            Seen::Error(_) => None,
        })
        .collect()
}

fn errors(seen: &[Seen]) -> Vec<DecodeError> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Error(e) => Some(*e),
            Seen::Frame { .. } => None,
        })
        .collect()
}

#[test]
fn truncation_reads_every_whole_frame_then_reports_the_cut() {
    for codec in [Codec::Packed, Codec::Lz4] {
        truncation_in(codec);
    }
}

fn truncation_in(codec: Codec) {
    let (bytes, starts) = stream_in(codec);
    for cut in 0..=bytes.len() {
        let seen = read_stream(&bytes[..cut], &[], 1 << 20);
        let whole = starts
            .iter()
            .skip(1)
            .chain([&bytes.len()])
            .filter(|&&end| end <= cut)
            .count();
        assert_eq!(
            seqs(&seen),
            (0..whole as u32).collect::<Vec<_>>(),
            "cut at {cut}"
        );
        let at_boundary = cut == bytes.len() || starts.contains(&cut);
        match errors(&seen)[..] {
            [] => assert!(at_boundary, "cut at {cut} not reported"),
            [DecodeError::Truncated { offset, have, .. }] => {
                assert!(!at_boundary);
                assert_eq!(offset as usize, starts[whole]);
                assert_eq!(have as usize, cut - starts[whole]);
            }
            ref other => panic!("cut at {cut}: {other:?}"),
        }
    }
}

#[test]
fn a_flipped_bit_costs_one_frame_only() {
    for codec in [Codec::Packed, Codec::Lz4] {
        flipped_bit_in(codec);
    }
}

fn flipped_bit_in(codec: Codec) {
    let (bytes, starts) = stream_in(codec);
    // Every bit of the second frame.
    for bit in starts[1] * 8..starts[2] * 8 {
        let mut damaged = bytes.clone();
        damaged[bit / 8] ^= 1 << (bit % 8);
        let seen = read_stream(&damaged, &[7], 1 << 20);
        assert_eq!(seqs(&seen), [0, 2, 3], "bit {bit}");
        let errs = errors(&seen);
        assert_eq!(errs.len(), 1, "bit {bit}: {errs:?}");
        let offset = starts[1] as u64;
        match errs[0] {
            DecodeError::BadMagic { offset: o } | DecodeError::HeaderChecksum { offset: o } => {
                assert_eq!(o, offset)
            }
            DecodeError::ChecksumMismatch { seq, offset: o } => assert_eq!((seq, o), (1, offset)),
            // A flipped length bit can make a frame "too large" for the
            // header check only if that check is off; it is on here.
            other => panic!("bit {bit}: unexpected {other:?}"),
        }
        // The frame after the damage reports what was skipped.
        let skipped = seen.iter().find_map(|s| match s {
            Seen::Frame { frame, skipped, .. } if frame.seq() == 2 => Some(*skipped),
            _ => None,
        });
        assert_eq!(skipped, Some((starts[2] - starts[1]) as u64), "bit {bit}");
    }
}

/// A Block payload in a valid frame with `flags`, then a Shutdown: what
/// a Block's own damage does, past the frame checks.
fn sealed(flags: u8, payload: &[u8]) -> Vec<Seen> {
    let mut out = vec![0u8; payload.len() + 64];
    let n = write_raw_frame(&mut out, FrameKind::Block.to_byte(), flags, 0, payload).unwrap();
    let mut stream = out[..n].to_vec();
    stream.extend(shutdown(1));
    read_stream(&stream, &[], 1 << 20)
}

/// Offset of the packed length in `block_in`'s payloads: no drop entries.
const PACKED_LEN_AT: usize = 22;

#[test]
fn compressed_block_damage_is_named_and_the_stream_stays_in_step() {
    let frame = block_in(Codec::Lz4, 0, 40);
    let payload = &frame[HEADER_LEN..frame.len() - 4];
    let lz4 = |payload: &[u8]| sealed(1, payload);
    // Resealed with flag 1 it decodes; with flags 0 (the codec forgotten)
    // the LZ4 bytes are read as columns and fail as such.
    assert!(errors(&lz4(payload)).is_empty());
    assert!(!errors(&sealed(0, payload)).is_empty());
    let packed_len = u32::from_le_bytes(
        payload[PACKED_LEN_AT..PACKED_LEN_AT + 4]
            .try_into()
            .unwrap(),
    );
    let in_step = |seen: &[Seen], what: &str| {
        assert_eq!(seqs(seen).last(), Some(&1), "{what}: the Shutdown after it");
    };
    // Every cut point of the LZ4 data: an error, never a panic.
    for cut in PACKED_LEN_AT + 4..payload.len() {
        let seen = lz4(&payload[..cut]);
        in_step(&seen, "cut");
        assert!(
            matches!(
                errors(&seen)[..],
                [DecodeError::Decompression { .. }] | [DecodeError::Malformed { .. }]
            ),
            "cut at {cut}: {:?}",
            errors(&seen)
        );
    }
    // Every flipped bit past the header: events or a typed error, the
    // stream in step.
    for bit in (PACKED_LEN_AT + 4) * 8..payload.len() * 8 {
        let mut damaged = payload.to_vec();
        damaged[bit / 8] ^= 1 << (bit % 8);
        let seen = lz4(&damaged);
        in_step(&seen, "flipped bit");
        assert!(errors(&seen).len() <= 1, "bit {bit}: {:?}", errors(&seen));
    }
    // Lying packed lengths.
    let lying = |len: u32| {
        let mut damaged = payload.to_vec();
        damaged[PACKED_LEN_AT..PACKED_LEN_AT + 4].copy_from_slice(&len.to_le_bytes());
        let seen = lz4(&damaged);
        in_step(&seen, "lying length");
        errors(&seen)
    };
    let decompression = |what| vec![DecodeError::Decompression { what }];
    assert_eq!(
        lying(packed_len - 1),
        decompression("decodes to more bytes than the block states")
    );
    assert_eq!(
        lying(packed_len + 1),
        decompression("decodes to fewer bytes than the block states")
    );
    assert!(matches!(lying(0)[..], [DecodeError::Malformed { .. }]));
    for len in [(8 << 20) + 1, u32::MAX] {
        assert_eq!(
            lying(len),
            [DecodeError::OverBound {
                what: "block packed events length",
                stated: u64::from(len),
                bound: 8 << 20,
            }]
        );
    }
    // An unknown codec flag: skipped, named, in step.
    let seen = sealed(0x04, payload);
    assert_eq!(errors(&seen), [DecodeError::UnknownCodec { flags: 0x04 }]);
    in_step(&seen, "unknown codec");
    // A caller without a buffer, or with too small a one, is told the size.
    let view = typhon_live_core::BlockView::parse(payload, 1).unwrap();
    let needed = packed_len as usize;
    assert_eq!(view.packed_len(), needed);
    assert_eq!(
        view.events().err(),
        Some(DecodeError::BufferTooSmall { needed })
    );
    let mut small = vec![0u8; needed - 1];
    assert_eq!(
        view.events_in(&mut small).err(),
        Some(DecodeError::BufferTooSmall { needed })
    );
    let mut enough = vec![0u8; needed];
    assert_eq!(view.events_in(&mut enough).unwrap().count(), 40);
}

#[test]
fn wrong_magic_is_named_and_skipped() {
    let (mut bytes, starts) = stream();
    bytes[starts[2]] = b'X';
    let seen = read_stream(&bytes, &[], 1 << 20);
    assert_eq!(
        errors(&seen),
        [DecodeError::BadMagic {
            offset: starts[2] as u64
        }]
    );
    assert_eq!(seqs(&seen), [0, 1, 3]);
}

#[test]
fn an_oversized_frame_is_skipped_whole() {
    let (bytes, starts) = stream();
    let third = (starts[3] - starts[2]) as u64;
    // A decoder whose limit is below the third frame's size.
    let limit = (third - 1) as usize;
    let mut buf = vec![0u8; 1 << 20];
    let mut decoder = Decoder::with_max_frame(&mut buf, limit);
    let mut got = Vec::new();
    let mut errs = Vec::new();
    for chunk in bytes.chunks(50) {
        let mut chunk = chunk;
        while !chunk.is_empty() {
            let n = decoder.feed(chunk);
            chunk = &chunk[n..];
            loop {
                match decoder.next() {
                    Ok(Some(frame)) => got.push((frame.seq, frame.skipped)),
                    Ok(None) => break,
                    Err(e) => errs.push(e),
                }
            }
        }
    }
    assert_eq!(decoder.finish(), Ok(()));
    // Frames larger than the limit are skipped too: only the small ones pass.
    assert!(errs.contains(&DecodeError::FrameTooLarge {
        len: third,
        max: limit as u64,
        offset: starts[2] as u64
    }));
    // The frame after it reports the skipped frame's bytes.
    assert!(got.contains(&(3, third)), "{got:?}");
    assert!(!got.iter().any(|&(seq, _)| seq == 2));
}

#[test]
fn a_length_beyond_the_buffer_is_too_large_not_a_hang() {
    let mut forged = vec![0u8; 64];
    let n = write_raw_frame(&mut forged, FrameKind::Block.to_byte(), 0, 0, &[0u8; 40]).unwrap();
    forged.truncate(n);
    let seen = read_stream(&forged, &[], 32);
    assert_eq!(
        errors(&seen)[0],
        DecodeError::FrameTooLarge {
            len: 60,
            max: 32,
            offset: 0
        }
    );
}

#[test]
fn a_buffer_smaller_than_a_header_skips_everything_and_says_so_once() {
    // A one-byte buffer once made `next` wait for a second byte that
    // `feed` had no room for: the caller's loop spun forever (found when
    // the property test below drew `buf_len` 1). Fed by hand here, so that
    // a regression fails instead of hanging.
    let (bytes, _) = stream();
    for len in [0, 1, 2, HEADER_LEN - 1] {
        let mut buf = vec![0u8; len];
        let mut decoder = Decoder::new(&mut buf);
        let mut errs = Vec::new();
        for chunk in bytes.chunks(5) {
            assert_eq!(decoder.feed(chunk), chunk.len(), "buffer of {len}");
            loop {
                match decoder.next() {
                    Ok(Some(frame)) => panic!("buffer of {len} gave frame {}", frame.seq),
                    Ok(None) => break,
                    Err(e) => errs.push(e),
                }
            }
        }
        assert_eq!(decoder.finish(), Ok(()));
        assert_eq!(decoder.skipped_total(), bytes.len() as u64);
        assert_eq!(
            errs,
            [DecodeError::FrameTooLarge {
                len: HEADER_LEN as u64,
                max: len as u64,
                offset: 0
            }],
            "buffer of {len}"
        );
    }
}

#[test]
fn a_buffer_of_one_header_skips_every_frame_and_stays_in_step() {
    // The smallest buffer that holds a header holds no frame (a frame has a
    // trailer too): each is skipped whole, by its stated length.
    let (bytes, starts) = stream();
    let seen = read_stream(&bytes, &[5], HEADER_LEN);
    assert!(seqs(&seen).is_empty());
    let offsets: Vec<u64> = errors(&seen)
        .iter()
        .map(|e| match e {
            DecodeError::FrameTooLarge { offset, .. } => *offset,
            other => panic!("{other}"),
        })
        .collect();
    let starts: Vec<u64> = starts.iter().map(|&s| s as u64).collect();
    assert_eq!(offsets, starts);
}

#[test]
fn garbage_between_frames_is_reported_once_and_counted() {
    let (bytes, starts) = stream();
    let garbage: Vec<u8> = (0..300u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .chain(*b"TLTLTL")
        .collect();
    let mut damaged = bytes[..starts[2]].to_vec();
    damaged.extend(&garbage);
    damaged.extend(&bytes[starts[2]..]);
    for chunks in [&[][..], &[1], &[13, 1, 200]] {
        let seen = read_stream(&damaged, chunks, 1 << 20);
        assert_eq!(seqs(&seen), [0, 1, 2, 3]);
        assert_eq!(errors(&seen).len(), 1, "{chunks:?}: {:?}", errors(&seen));
        let skipped = seen.iter().find_map(|s| match s {
            Seen::Frame { frame, skipped, .. } if frame.seq() == 2 => Some(*skipped),
            _ => None,
        });
        assert_eq!(skipped, Some(garbage.len() as u64));
    }
}

#[test]
fn unknown_kinds_keep_the_stream_in_step() {
    let (bytes, starts) = stream();
    let mut out = vec![0u8; 64];
    let n = write_raw_frame(&mut out, 0x77, 0, 9, b"future").unwrap();
    let mut with_unknown = bytes[..starts[1]].to_vec();
    with_unknown.extend(&out[..n]);
    with_unknown.extend(&bytes[starts[1]..]);
    let seen = read_stream(&with_unknown, &[], 1 << 20);
    assert_eq!(errors(&seen), [DecodeError::UnknownKind { kind: 0x77 }]);
    assert_eq!(seqs(&seen), [0, 1, 2, 3]);
}

#[test]
fn bad_block_contents_are_named() {
    let mut out = vec![0u8; 256];
    let header = |records: u32| {
        let mut payload = Vec::new();
        payload.extend(records.to_le_bytes());
        payload.extend([0u8; 16]);
        payload.extend(0u16.to_le_bytes());
        payload
    };
    let errors_of = |payload: &[u8], out: &mut [u8]| {
        let n = write_raw_frame(out, FrameKind::Block.to_byte(), 0, 0, payload).unwrap();
        errors(&read_stream(&out[..n], &[], 1024))
    };
    let malformed = |what| [DecodeError::Malformed { what }];

    // One record in one group, then a kind column 65 bits wide.
    let mut payload = header(1);
    payload.extend([1, 0, 0, 1, 0, 1, 65, 0, 0]);
    assert_eq!(
        errors_of(&payload, &mut out),
        malformed("block kind column")
    );

    // A kind column whose slots are cut short.
    let mut payload = header(40);
    payload.extend([1, 0, 0, 40, 0, 40, 3, 0, 0, 0xff]);
    assert_eq!(
        errors_of(&payload, &mut out),
        malformed("block kind column")
    );

    // A Block without records that carries event bytes.
    let mut payload = header(0);
    payload.push(0);
    assert_eq!(
        errors_of(&payload, &mut out),
        malformed("empty block carries event bytes")
    );

    // A valid Block whose record count lies, up and down.
    let good = block(0, 3);
    for (records, what) in [
        (5u32, "block holds fewer records than stated"),
        (2, "block group count"),
    ] {
        let mut lying = good[HEADER_LEN..good.len() - 4].to_vec();
        lying[..4].copy_from_slice(&records.to_le_bytes());
        assert_eq!(errors_of(&lying, &mut out), malformed(what));
    }

    // Reading in batches: the events before the damage, then the error.
    // Six instants on lanes 0, 1, 2, 0, 1, 2 make six one-record groups;
    // cutting the payload's last byte damages the last group's columns.
    let good = block(0, 6);
    let mut damaged = good[HEADER_LEN..good.len() - 4].to_vec();
    damaged.truncate(damaged.len() - 1);
    let view = typhon_live_core::BlockView::parse(&damaged, 0).unwrap();
    let mut reader = view.events().unwrap();
    let mut events = [(0, Event::TickStart { time: 0, tick: 0 }); 16];
    assert_eq!(reader.read(&mut events), Ok(5));
    assert!(matches!(
        reader.read(&mut events),
        Err(DecodeError::Malformed { .. })
    ));
    assert_eq!(reader.read(&mut events), Ok(0));

    // A valid Block with a byte after its last column.
    let mut trailing = good[HEADER_LEN..good.len() - 4].to_vec();
    trailing.push(0);
    assert_eq!(
        errors_of(&trailing, &mut out),
        malformed("block has bytes after its last group")
    );
}

#[test]
fn truncated_payload_fields_are_malformed_not_panics() {
    // Every prefix of a real Shutdown payload, sealed in a valid envelope.
    let full = shutdown(0);
    let payload = &full[HEADER_LEN..full.len() - 4];
    for len in 0..payload.len() {
        let mut out = vec![0u8; 64];
        let n = write_raw_frame(
            &mut out,
            FrameKind::Shutdown.to_byte(),
            0,
            0,
            &payload[..len],
        )
        .unwrap();
        let seen = read_stream(&out[..n], &[], 1024);
        assert!(
            matches!(errors(&seen)[..], [DecodeError::Malformed { .. }]),
            "{len}: {seen:?}"
        );
    }
    assert!(matches!(
        read_stream(&full, &[], 1024)[..],
        [Seen::Frame {
            frame: Owned::Shutdown { .. },
            ..
        }]
    ));
    assert_eq!(&full[..2], &MAGIC);
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_and_always_progress(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        chunks in prop::collection::vec(1usize..64, 1..5),
        buf_len in 0usize..4096,
    ) {
        let seen = read_stream(&bytes, &chunks, buf_len);
        prop_assert!(seen.len() <= bytes.len() + 1);
    }

    #[test]
    fn damaged_streams_still_yield_the_frames_after_the_damage(
        at in 0usize..1000, len in 1usize..64, fill in any::<u8>(),
    ) {
        let (bytes, starts) = stream();
        let at = at % bytes.len();
        let end = (at + len).min(bytes.len());
        let mut damaged = bytes.clone();
        damaged[at..end].fill(fill);
        let seen = read_stream(&damaged, &[], 1 << 20);
        // Every frame starting after the damaged range is intact and read.
        for (seq, &start) in starts.iter().enumerate() {
            if start >= end {
                prop_assert!(seqs(&seen).contains(&(seq as u32)), "frame {} lost", seq);
            }
        }
    }
}

#[test]
fn a_restarted_decoder_reads_a_new_connection_without_the_last_ones_tail() {
    let first = block(0, 40);
    let second = block(7, 3);
    let mut buf = vec![0u8; 1 << 16];
    let mut decoder = Decoder::new(&mut buf);
    // The first connection dropped in the middle of a frame.
    decoder.feed(&first[..first.len() / 2]);
    assert!(matches!(decoder.next(), Ok(None)));
    decoder.restart();
    assert_eq!((decoder.buffered(), decoder.position()), (0, 0));
    decoder.feed(&second);
    let frame = decoder.next().unwrap().unwrap();
    assert_eq!((frame.seq, frame.offset, frame.skipped), (7, 0, 0));
    assert!(matches!(decoder.next(), Ok(None)));
    assert_eq!(decoder.skipped_total(), 0);
}
