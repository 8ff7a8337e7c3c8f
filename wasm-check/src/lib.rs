//! A trace file's summary as the view model reads it, through the one
//! stream reader: the same function natively (`src/main.rs`) and in
//! WebAssembly under Node (`summary.mjs`), so that `.ci/run` can check the
//! two agree.
#![forbid(unsafe_code)]

use std::time::Duration;

use typhon_live_core::Decoder;
use typhon_live_model::Model;
use wasm_bindgen::prelude::wasm_bindgen;

/// The model's summary of a whole trace, as `--json` prints it, at a
/// fixed moment (the model reads no clock, so this is deterministic).
#[wasm_bindgen]
pub fn summary(trace: &[u8]) -> String {
    let mut model = Model::default();
    let mut buf = vec![0u8; 16 << 20];
    let mut decoder = Decoder::new(&mut buf);
    let mut rest = trace;
    while !rest.is_empty() {
        let n = decoder.feed(rest);
        rest = &rest[n..];
        loop {
            match decoder.next() {
                Ok(Some(frame)) => {
                    let _ = model.on_frame(&frame, Duration::ZERO);
                }
                Ok(None) => break,
                // Damage is in the model's notice and counts.
                Err(_) => {}
            }
        }
        if n == 0 {
            break;
        }
    }
    model.flush_history();
    model.summary_line(Duration::ZERO, true)
}
