//! The fuzzers' seed corpus stays valid as the format evolves, and the
//! realistic session it is made from decodes whole.

use std::fs;
use std::path::Path;

use typhon_live_core::{Codec, Compression, DecodeError, Decoder, Payload};
use typhon_live_tests::{exporter_stream, frames, read_stream, realistic_events, Owned, Seen};

#[test]
fn seed_corpus_decodes_without_damage_but_the_crafted_block() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/decode");
    let (mut files, mut crafted) = (0, 0);
    for entry in fs::read_dir(&dir).expect("fuzz/corpus/decode exists") {
        let path = entry.unwrap().path();
        let bytes = fs::read(&path).unwrap();
        let seen = read_stream(&bytes, &[], 1 << 20);
        let errors: Vec<_> = seen
            .iter()
            .filter_map(|s| match s {
                Seen::Error(e) => Some(*e),
                Seen::Frame { .. } => None,
            })
            .collect();
        if path.to_string_lossy().contains("over-bound") {
            crafted += 1;
            let bound = DecodeError::OverBound {
                what: "block record count",
                stated: u64::from(u32::MAX),
                bound: 1 << 16,
            };
            assert_eq!(errors, [bound], "{}", path.display());
        } else {
            assert_eq!(errors, [], "{}", path.display());
        }
        let got: Vec<_> = seen
            .into_iter()
            .filter_map(|s| match s {
                Seen::Frame { frame, .. } => Some(frame),
                Seen::Error(_) => None,
            })
            .collect();
        assert!(
            matches!(got.first(), Some(Owned::Init { .. })),
            "{}",
            path.display()
        );
        // A capture ends where its window does, not at a Shutdown.
        let capture = path.to_string_lossy().contains("capture");
        assert!(
            capture || matches!(got.last(), Some(Owned::Shutdown { .. })),
            "{}",
            path.display()
        );
        files += 1;
    }
    assert!(
        files >= 5 && crafted == 1,
        "seed corpus missing or stale; run the make_corpus example"
    );
}

/// Codec, packed length and bytes after the drop entries of each Block in
/// `stream`.
fn blocks(stream: &[u8]) -> Vec<(Codec, usize, usize)> {
    let mut buf = vec![0u8; 1 << 20];
    let mut decoder = Decoder::new(&mut buf);
    assert_eq!(decoder.feed(stream), stream.len());
    let mut blocks = Vec::new();
    while let Ok(Some(frame)) = decoder.next() {
        if let Ok(Payload::Block(block)) = frame.parse() {
            blocks.push((
                block.codec().unwrap(),
                block.packed_len(),
                block.encoded_len(),
            ));
        }
    }
    blocks
}

#[test]
fn every_codec_delivers_the_same_session() {
    let ticks = 20;
    let plain = frames(read_stream(
        &exporter_stream(ticks, 1 << 16, Compression::Off),
        &[],
        1 << 20,
    ));
    let events = |frames: &[Owned]| -> Vec<_> {
        frames
            .iter()
            .flat_map(|f| match f {
                Owned::Block { events, .. } => events.clone(),
                _ => Vec::new(),
            })
            .collect()
    };
    let mut streams = Vec::new();
    for compression in [Compression::Lz4, Compression::Auto] {
        let stream = exporter_stream(ticks, 1 << 16, compression);
        let got = frames(read_stream(&stream, &[333], 1 << 20));
        assert_eq!(events(&got), events(&plain), "{compression}");
        streams.push(blocks(&stream));
    }
    let (forced, auto) = (&streams[0], &streams[1]);
    // Drop-only Blocks excepted, none here: every Block compressed.
    assert!(forced.iter().all(|&(codec, ..)| codec == Codec::Lz4));
    // Auto keeps exactly the LZ4 forms that save 1/16, as FORMAT.md
    // counts it: the wire bytes after the drop entries, length field
    // included, against the packed bytes.
    assert_eq!(forced.len(), auto.len());
    for (&(_, packed, lz4_wire), &(codec, auto_packed, auto_wire)) in forced.iter().zip(auto) {
        assert_eq!(packed, auto_packed);
        let saves = (packed - lz4_wire.min(packed)) * 16 >= packed && lz4_wire < packed;
        let want = if saves { Codec::Lz4 } else { Codec::Packed };
        assert_eq!(codec, want, "packed {packed}, LZ4 form {lz4_wire}");
        assert_eq!(auto_wire, if saves { lz4_wire } else { packed });
    }
}

#[test]
fn a_realistic_session_delivers_every_event() {
    let ticks = 20;
    let got = frames(read_stream(
        &exporter_stream(ticks, 4096, Compression::Off),
        &[1000],
        1 << 20,
    ));
    let delivered: usize = got
        .iter()
        .map(|f| match f {
            Owned::Block { events, .. } => events.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(delivered, realistic_events(ticks).len());
    assert!(got.iter().any(|f| matches!(f, Owned::Definitions { names, .. } if names.iter().any(|(_, n)| n == "late.name"))));
    let Some(Owned::Shutdown { totals, .. }) = got.last() else {
        panic!("no Shutdown")
    };
    assert_eq!((totals.frames_dropped, totals.events_dropped), (0, 0));
}
