//! Arbitrary bytes, in arbitrary chunks, through the stream decoder; every
//! frame parsed, every table walked, every Block decompressed and every
//! event iterated. Checksums are skipped under `cfg(fuzzing)`, so the
//! fuzzer reaches the payload parsers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use typhon_live_core::{Decoder, Payload};

fn walk(payload: Payload<'_>, scratch: &mut [u8]) {
    match payload {
        Payload::Init(init) => {
            for c in init.components() {
                c.fields.for_each(drop);
            }
            for a in init.archetypes() {
                a.components.for_each(drop);
            }
            init.indexes().for_each(drop);
            init.config().for_each(drop);
            init.queues().for_each(drop);
            init.resources().for_each(drop);
            init.names().for_each(drop);
            init.lanes().for_each(drop);
        }
        Payload::Block(block) => {
            block.drops().for_each(drop);
            if let Ok(events) = block.decompress(scratch) {
                for event in events {
                    if event.is_err() {
                        break;
                    }
                }
            }
        }
        Payload::Definitions(defs) => {
            defs.names().for_each(drop);
            defs.lanes().for_each(drop);
        }
        Payload::CatchUp(catchup) => {
            for lane in catchup.lanes() {
                lane.open.for_each(drop);
            }
        }
        Payload::Shutdown(_) => {}
    }
}

fuzz_target!(|data: &[u8]| {
    // First byte: chunk size; the rest: the stream.
    let Some((&chunk, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk).max(1);
    let mut buf = vec![0u8; 64 << 10];
    let mut scratch = vec![0u8; 64 << 10];
    let mut decoder = Decoder::new(&mut buf);
    let mut calls = 0usize;
    for mut piece in stream.chunks(chunk) {
        while !piece.is_empty() {
            let n = decoder.feed(piece);
            piece = &piece[n..];
            loop {
                calls += 1;
                // Every call consumes input or asks for more: never a spin.
                assert!(calls <= 2 * stream.len() + 2 * (stream.len() / chunk) + 4);
                match decoder.next() {
                    Ok(Some(frame)) => {
                        if let Ok(payload) = frame.parse() {
                            walk(payload, &mut scratch);
                        }
                    }
                    Ok(None) => break,
                    Err(_) => {}
                }
            }
        }
    }
    let _ = decoder.finish();
});
