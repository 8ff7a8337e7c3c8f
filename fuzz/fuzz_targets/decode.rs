//! Arbitrary bytes, in arbitrary chunks, through the stream decoder; every
//! frame parsed, every table walked, every Block's columns parsed and every
//! event iterated (and skimmed for ticks, and relabelled as the relay
//! forwards it), compressed Blocks decompressed first, every Text
//! frame's records read. Checksums are
//! skipped under `cfg(fuzzing)`, so the fuzzer reaches the payload parsers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use typhon_live_core::block::{
    packed_block_frame_len, relabel_events, relabelled_len_bound, write_packed_block, Relabel,
};
use typhon_live_core::frame::{HEADER_LEN, TRAILER_LEN};
use typhon_live_core::{BlockView, Decoder, Event, EventKinds, Payload};

/// Ids as they are: a relabelling that changes nothing.
struct Same;

impl Relabel for Same {
    fn lane(&self, lane: u16) -> Option<u16> {
        Some(lane)
    }
    fn name(&self, name: u32) -> u32 {
        name
    }
    fn gauge(&self, gauge: u32) -> u32 {
        gauge
    }
}

/// A Block relabelled as the relay forwards it never panics, and one that
/// read whole, relabelled to its own ids, reads as the same events (or
/// holds a kind that is not relabelled).
fn relabel_whole(block: &BlockView<'_>, unpacked: &[u8], events: &[(u16, Event)]) {
    let Some(packed) = block.packed().or(unpacked.get(..block.packed_len())) else {
        return;
    };
    let mut out = vec![0u8; relabelled_len_bound(packed.len(), block.records)];
    let mut names = vec![0u64; block.records as usize];
    let result = relabel_events(packed, block.records, &Same, &mut names, &mut out);
    let whole = events.len() == block.records as usize && block.events_in(&mut unpacked.to_vec()).is_ok_and(|e| e.count() == events.len());
    let (Ok(n), true) = (result, whole) else {
        return;
    };
    let mut frame = vec![0u8; packed_block_frame_len(0, n)];
    let times = (block.first_time, block.last_time);
    let len = write_packed_block(&mut frame, 0, block.records, times, &[], &out[..n]).unwrap();
    let payload = &frame[HEADER_LEN..len - TRAILER_LEN];
    let again = BlockView::parse(payload, 0).unwrap();
    let read: Vec<(u16, Event)> = again.events().unwrap().map(Result::unwrap).collect();
    assert_eq!(format!("{read:?}"), format!("{events:?}"));
}

fn walk(payload: Payload<'_>) {
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
            // Both ways of reading a Block, which take different paths: the
            // iterator record by record, `read` whole runs of one kind.
            // A compressed Block is decompressed into a buffer of the size
            // it states (at most 8 MiB, checked by the parser); each way
            // decompresses it for itself.
            let mut unpacked = vec![0u8; block.packed_len()];
            let mut iterated = Vec::new();
            if let Ok(events) = block.events_in(&mut unpacked) {
                for event in events {
                    match event {
                        Ok(event) => iterated.push(event),
                        Err(_) => break,
                    }
                }
            }
            let mut read = Vec::new();
            if let Ok(mut events) = block.events_in(&mut unpacked) {
                let mut batch = [(0, Event::TickStart { time: 0, tick: 0 }); 7];
                while let Ok(n @ 1..) = events.read(&mut batch) {
                    read.extend_from_slice(&batch[..n]);
                }
            }
            // Same events up to the first error (NaN gauges compare by bits).
            assert_eq!(format!("{iterated:?}"), format!("{read:?}"));
            relabel_whole(&block, &unpacked, &iterated);
            // Skimmed for ticks: every tick the whole reading gave comes
            // first in the same order (a group it passes over may be one
            // where the whole reading stopped, so more may follow), and no
            // more records than the Block states are read and passed over.
            let ticks = EventKinds::TICK_START | EventKinds::TICK_END;
            let of_ticks = |events: &[(u16, Event)]| -> Vec<String> {
                let ticks = events.iter().filter(|(_, e)| ticks.contains(EventKinds::of(e)));
                ticks.map(|e| format!("{e:?}")).collect()
            };
            if let Ok(events) = block.events_in(&mut unpacked) {
                let mut events = events.skim(ticks);
                let mut skimmed = Vec::new();
                for event in events.by_ref() {
                    match event {
                        Ok(event) => skimmed.push(event),
                        Err(_) => break,
                    }
                }
                assert!(skimmed.len() as u64 + u64::from(events.skipped()) <= u64::from(block.records));
                let (whole, skimmed) = (of_ticks(&iterated), of_ticks(&skimmed));
                assert!(skimmed.starts_with(&whole), "{whole:?} not first in {skimmed:?}");
            }
        }
        Payload::Definitions(defs) => {
            defs.names().for_each(drop);
            defs.lanes().into_iter().flatten().for_each(drop);
        }
        Payload::CatchUp(catchup) => {
            for lane in catchup.lanes() {
                lane.open.for_each(drop);
            }
        }
        Payload::Shutdown(_) => {}
        Payload::Samples(samples) => {
            // Checked whole when parsed: every lane and switch it states.
            assert_eq!(samples.lanes().count(), samples.lane_count());
            assert_eq!(samples.switches().count(), samples.switch_count());
            assert!(samples.switches().all(|s| s.time <= samples.time));
        }
        Payload::Texts(texts) => {
            // Checked whole when parsed: every record it states reads.
            assert_eq!(texts.texts().count(), usize::from(texts.count));
            for text in texts.texts() {
                assert!(text.text.len() <= typhon_live_core::MAX_TEXT_BYTES);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // First byte: chunk size; the rest: the stream.
    let Some((&chunk, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk).max(1);
    let mut buf = vec![0u8; 64 << 10];
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
                            walk(payload);
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
