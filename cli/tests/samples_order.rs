//! A Samples frame's lanes are defined before it (FORMAT.md, "Samples"),
//! from the first frame on. The demo's worker threads claim their lanes
//! while the exporter thread runs: before the fix, 2 to 12 of 20 short
//! runs wrote a Samples frame naming lanes whose Definitions came after
//! it, as a new user's first `--trace` would.
//!
//! On Linux, where every lane's thread is sampled from its first cycle
//! (so that a run can show the fault); the exporter's order is the same
//! code on every system.
#![cfg(target_os = "linux")]

mod common;

use common::{temp, typhon};
use typhon_live_reader::{frames, Reader};

/// What one short run's trace says: Samples entries that named a lane the
/// lane table did not hold yet, and the most lanes one Samples frame named
/// (so that the run did sample its workers).
fn one_run(n: usize) -> (u64, usize) {
    let path = temp(&format!("samples-order-{n}.tlt"));
    let _ = std::fs::remove_file(&path);
    let status = typhon()
        .args(["demo", "--no-view", "--live", "0", "--duration", "0.3"])
        .args(["--threads", "8", "--trace"])
        .arg(&path)
        .output()
        .expect("the demo runs");
    assert!(status.status.success(), "{status:?}");
    let bytes = std::fs::read(&path).expect("the trace");
    let _ = std::fs::remove_file(&path);
    let mut reader = Reader::new();
    let mut most_lanes = 0;
    let damage = frames(&bytes, |frame| {
        if let Ok(typhon_live_core::Payload::Samples(samples)) = frame.parse() {
            most_lanes = most_lanes.max(samples.lanes().count());
        }
        reader.read(frame, |_, _| {})
    });
    assert_eq!(damage, [], "run {n}");
    (reader.state().tally().samples_undefined_lanes, most_lanes)
}

#[test]
fn every_samples_frame_of_twenty_demo_starts_names_only_defined_lanes() {
    let runs: Vec<(u64, usize)> = (0..20).map(one_run).collect();
    let broken: Vec<usize> = (0..runs.len()).filter(|&n| runs[n].0 > 0).collect();
    assert_eq!(
        broken,
        [] as [usize; 0],
        "runs whose Samples came first: {runs:?}"
    );
    // The Sim thread and its 8 workers, sampled within 0.3 s.
    let sampled = runs.iter().filter(|r| r.1 >= 9).count();
    assert!(sampled >= 15, "few runs sampled their workers: {runs:?}");
}
