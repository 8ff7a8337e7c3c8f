//! Reader plus model ingest, natively: a stream from the core's exporter
//! (5 000 ticks of realistic events) decoded and read into a model, again
//! and again; prints the median rate. For `perf record` and for
//! comparing trees side by side (the same file builds against any tree
//! since the model's API settled).
//!
//! `cargo run --release -p typhon-live-model --example ingest [ROUNDS]`

use std::hint::black_box;
use std::time::{Duration, Instant};

use typhon_live_core::{Compression, Decoder};
use typhon_live_model::Model;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(11);
    let stream = typhon_live_tests::exporter_stream(5_000, 1 << 20, Compression::Auto);
    let mut buf = vec![0u8; 16 << 20];
    let mut rates = Vec::new();
    let mut events = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        let mut decoder = Decoder::new(&mut buf);
        let mut model = Model::default();
        let mut rest = &stream[..];
        while !rest.is_empty() {
            let n = decoder.feed(rest);
            rest = &rest[n..];
            while let Ok(Some(frame)) = decoder.next() {
                let _ = model.on_frame(&frame, Duration::ZERO);
            }
        }
        black_box(model.summary(Duration::ZERO));
        events = model.events();
        rates.push(events as f64 / started.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "reader + model: {:.2} M events/s (median of {rounds}; {:.2} .. {:.2}), {events} events a round",
        rates[rounds / 2] / 1e6,
        rates[0] / 1e6,
        rates[rounds - 1] / 1e6
    );
}
