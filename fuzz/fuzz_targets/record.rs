//! Arbitrary bytes through the decoder into the flight recorder, with
//! every kind of trigger or ticks alone (a recorder that skims), a cooldown and spacing of 0 (every firing
//! counts), time moving by what the first bytes say, and a capture asked
//! for now and then. The recorder must never panic, keep no more past than
//! its bound, make no capture over its own, and every capture must read
//! back whole: frames only, each sealed again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use typhon_live_core::Decoder;
use typhon_live_recorder::{Recorder, Settings, MAX_FIRED_PER_CAPTURE};

const KEEP_BYTES: usize = 64 << 10;
const MAX_CAPTURE_BYTES: usize = 128 << 10;

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, stream)) = data.split_first() else {
        return;
    };
    let settings = Settings {
        keep_ns: 1_000_000_000,
        keep_bytes: KEEP_BYTES,
        before_ns: 500_000_000,
        after_ns: 200_000_000,
        cooldown_ns: 0,
        spacing_ns: 0,
        max_capture_ns: 2_000_000_000,
        max_capture_bytes: MAX_CAPTURE_BYTES,
    };
    // Every kind of trigger, or (an even knob) ticks alone: a recorder
    // that skims, checkpointing at Catch-ups only.
    let every = ["tick > 1us", "overrun", "span(a) > 1ns", "gauge(b) > 0", "loss"];
    let triggers = if knobs & 2 == 0 { &every[..2] } else { &every[..] };
    let triggers = triggers.iter().map(|t| t.parse().unwrap()).collect();
    let mut recorder = Recorder::new(settings, triggers);
    let mut buf = vec![0u8; 64 << 10];
    let mut decoder = Decoder::new(&mut buf);
    let (mut arrival, mut frames) = (1_700_000_000_000_000_000u64, 0u32);
    let check = |recorder: &mut Recorder| {
        assert!(recorder.kept().1 <= KEEP_BYTES);
        while let Some(capture) = recorder.take() {
            // The start and the marks come on top of the frames' bound.
            let marks = MAX_FIRED_PER_CAPTURE * 256;
            assert!(capture.bytes.len() <= MAX_CAPTURE_BYTES + 64 * 1024 + marks);
            assert!(capture.fired.len() <= MAX_FIRED_PER_CAPTURE);
            let damage = typhon_live_reader::frames(&capture.bytes, |_| Ok(()));
            assert!(damage.is_empty(), "a capture is whole frames: {damage:?}");
        }
    };
    let mut rest = stream;
    while !rest.is_empty() {
        let n = decoder.feed(rest);
        rest = &rest[n..];
        while let Ok(Some(frame)) = decoder.next() {
            frames += 1;
            arrival += u64::from(knobs) * 1_000_000;
            recorder.frame(&frame, arrival);
            if knobs & 1 == 1 && frames % 7 == 0 {
                recorder.demand("fuzz");
            }
            recorder.now(arrival + 1);
            check(&mut recorder);
        }
    }
    recorder.end();
    check(&mut recorder);
});
