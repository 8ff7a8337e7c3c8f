//! Arbitrary bytes through the stream decoder into a Perfetto
//! `TraceWriter`: whatever a peer sends, the writer does not panic, its
//! output parses as a `Trace`, and every slice it begins on a track it
//! ends. Checksums are skipped under `cfg(fuzzing)`, so the fuzzer reaches
//! the payloads.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use prost::Message;
use typhon_live_core::Decoder;
use typhon_live_convert::perfetto::proto::{EventType, PacketData, Trace};
use typhon_live_convert::perfetto::TraceWriter;

fuzz_target!(|data: &[u8]| {
    let mut buf = vec![0u8; 1 << 16];
    let mut decoder = Decoder::new(&mut buf);
    let (mut writer, mut out) = (TraceWriter::new(), Vec::new());
    let mut rest = data;
    loop {
        let n = decoder.feed(rest);
        rest = &rest[n..];
        loop {
            match decoder.next() {
                Ok(Some(frame)) => {
                    let _ = writer.frame(&frame, &mut out);
                }
                Ok(None) => break,
                Err(_) => {}
            }
        }
        if rest.is_empty() || n == 0 {
            break;
        }
    }
    writer.finish(&mut out);
    let trace = Trace::decode(&out[..]).expect("the writer's output is a Trace");
    let mut open: HashMap<u64, i64> = HashMap::new();
    for packet in &trace.packet {
        if let Some(PacketData::TrackEvent(event)) = &packet.data {
            let depth = open.entry(event.track_uuid.unwrap_or(0)).or_default();
            match event.r#type {
                Some(t) if t == EventType::SliceBegin as i32 => *depth += 1,
                Some(t) if t == EventType::SliceEnd as i32 => *depth -= 1,
                _ => {}
            }
        }
    }
    assert!(open.values().all(|&d| d == 0), "unpaired slices: {open:?}");
});
