//! A trace file's summary as the view model reads it, through the one
//! stream reader: the same function natively (`src/main.rs`) and in
//! WebAssembly under Node (`summary.mjs`), so that `.ci/run` can check the
//! two agree. [`ingest`] is the same reading timed, for
//! `bench/scripts/wasm-ingest`: the page's decoder, reader and model as
//! wasm against native, with nothing else on the machine's cores.
#![forbid(unsafe_code)]

use std::time::Duration;

use typhon_live_model::Model;
use wasm_bindgen::prelude::wasm_bindgen;

/// The model's summary of a whole trace, as `--json` prints it, at a
/// fixed moment (the model reads no clock, so this is deterministic).
#[wasm_bindgen]
pub fn summary(trace: &[u8]) -> String {
    let mut model = Model::default();
    // Damage between frames is not the model's to count; the native
    // reading, this same function, leaves it out alike.
    let _damage = typhon_live_reader::frames(trace, |frame| model.on_frame(frame, Duration::ZERO));
    model.flush_history();
    model.summary_line(Duration::ZERO, true)
}

/// Reads a whole trace into a new model; returns its events. Timed by
/// the caller, natively and under Node alike.
#[wasm_bindgen]
pub fn ingest(trace: &[u8]) -> f64 {
    let mut model = Model::default();
    let _damage = typhon_live_reader::frames(trace, |frame| model.on_frame(frame, Duration::ZERO));
    model.events() as f64
}
