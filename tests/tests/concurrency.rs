//! Producers on their own threads while the exporter runs: lanes claimed
//! and released mid-frame, rings filling and draining. Every frame must
//! still decode, and every event be delivered or counted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use typhon_live_core::{Exporter, LaneKind, Lanes, Metadata, NameTable};
use typhon_live_tests::{read_stream, Owned, Seen};

static LANES: Lanes<4, 64> = Lanes::new();

#[test]
fn lanes_churning_under_a_running_exporter_never_garble_a_frame() {
    let mut names: NameTable<16, 256> = NameTable::new();
    let lane_names: Vec<u32> = (0..3)
        .map(|i| names.intern(&format!("worker-{i}")).unwrap())
        .collect();
    let work = names.intern("work").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let recorded = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = lane_names
        .into_iter()
        .map(|name| {
            let (stop, recorded, refused) = (stop.clone(), recorded.clone(), refused.clone());
            thread::spawn(move || {
                let mut t = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // A short-lived thread's lane: claim, record, release.
                    let Some(lane) = LANES.claim(name, LaneKind::Worker) else {
                        thread::yield_now();
                        continue;
                    };
                    for _ in 0..50 {
                        t += 1;
                        let span = lane.begin(work, t);
                        let ok = lane.end(span, t + 3, Some(t));
                        let counter = if ok { &recorded } else { &refused };
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();

    let mut scratch = vec![0u8; 2048];
    let meta = Metadata {
        ticks_per_second: 1000,
        ..Metadata::default()
    };
    let mut exporter: Exporter<'_, 4> = Exporter::new(meta, &mut scratch);
    exporter.set_catchup_interval(1);
    let mut out = vec![0u8; 1 << 16];
    let mut stream = Vec::new();
    let reader = exporter.attach().expect("a free slot");
    for now in 0..3000u64 {
        exporter.request_drain();
        while let Some(frame) = exporter.poll(now, &LANES, &names, &mut out).unwrap() {
            stream.extend_from_slice(&out[..frame.len]);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    exporter.stop();
    while let Some(frame) = exporter.poll(3001, &LANES, &names, &mut out).unwrap() {
        stream.extend_from_slice(&out[..frame.len]);
    }

    let mut delivered = 0u64;
    let mut frames = 0;
    for seen in read_stream(&stream, &[4096], 1 << 20) {
        match seen {
            Seen::Frame { frame, .. } => {
                frames += 1;
                if let Owned::Block { events, .. } = frame {
                    delivered += events.len() as u64;
                }
            }
            Seen::Error(e) => panic!("frame garbled under concurrency: {e}"),
        }
    }
    assert!(frames > 3000, "one Catch-up per step at least");
    assert_eq!(delivered, recorded.load(Ordering::Relaxed));
    assert_eq!(
        exporter.totals(reader).events_dropped,
        refused.load(Ordering::Relaxed)
    );
}
