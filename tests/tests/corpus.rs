//! The fuzzers' seed corpus stays valid as the format evolves, and the
//! realistic session it is made from decodes whole.

use std::fs;
use std::path::Path;

use typhon_live_core::{Codec, Compression, Decoder, Payload};
use typhon_live_tests::{exporter_stream, frames, read_stream, realistic_events, Owned};

#[test]
fn seed_corpus_decodes_without_damage() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/decode");
    let mut files = 0;
    for entry in fs::read_dir(&dir).expect("fuzz/corpus/decode exists") {
        let path = entry.unwrap().path();
        let bytes = fs::read(&path).unwrap();
        let got = frames(read_stream(&bytes, &[], 1 << 20));
        assert!(
            matches!(got.first(), Some(Owned::Init { .. })),
            "{}",
            path.display()
        );
        assert!(
            matches!(got.last(), Some(Owned::Shutdown { .. })),
            "{}",
            path.display()
        );
        files += 1;
    }
    assert!(
        files >= 4,
        "seed corpus missing or stale; run the make_corpus example"
    );
}

/// Codecs of the Blocks in `stream`.
fn codecs(stream: &[u8]) -> Vec<Codec> {
    let mut buf = vec![0u8; 1 << 20];
    let mut decoder = Decoder::new(&mut buf);
    assert_eq!(decoder.feed(stream), stream.len());
    let mut codecs = Vec::new();
    while let Ok(Some(frame)) = decoder.next() {
        if let Ok(Payload::Block(block)) = frame.parse() {
            codecs.push(block.codec);
        }
    }
    codecs
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
    for compression in [Compression::Lz4, Compression::Auto] {
        let stream = exporter_stream(ticks, 1 << 16, compression);
        let got = frames(read_stream(&stream, &[333], 1 << 20));
        assert_eq!(events(&got), events(&plain), "{compression}");
        let codecs = codecs(&stream);
        assert!(codecs.contains(&Codec::Lz4), "{compression}: {codecs:?}");
        if compression == Compression::Lz4 {
            // Drop-only Blocks excepted, none here: every Block compressed.
            assert!(codecs.iter().all(|&c| c == Codec::Lz4));
        }
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
