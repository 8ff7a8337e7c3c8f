//! Each lane's CPU against the demo's three stalls (issue 39): a 1.2 s
//! stall of the AI system that sleeps, spins, or waits for a lock another
//! thread holds looks the same as a span, and apart in the Samples the
//! exporter thread writes. Linux only so far: elsewhere the samples are
//! not measured yet.

mod common;

use std::process::Stdio;

use common::{temp, typhon};
use typhon_live_core::Event;
use typhon_live_reader::{frames, Reader, Update};

/// What a trace says of the Sim thread over its first stall: from the
/// `stall` instant to the end of the `Sim.AI` span that holds it.
#[derive(Debug, Default)]
struct Stall {
    /// The stall's length, ns.
    length: u64,
    /// Of it, ns: on a CPU, waiting for one, off a CPU.
    on_cpu: f64,
    waiting: f64,
    off_cpu: f64,
    /// The `lock held` span on the lock-holder's lane over it, ns.
    lock_held: u64,
}

fn stall_of(trace: &[u8]) -> Stall {
    let mut reader = Reader::new();
    let (mut stall_at, mut window) = (None, None);
    let mut intervals = Vec::new();
    let mut held = Vec::new();
    let damage = frames(trace, |frame| {
        reader.read(frame, |state, update| {
            let lane_name = |lane| {
                let lane = state.lanes().get(&lane)?;
                Some(state.names().show(lane.info.name).into_owned())
            };
            let name = |id| state.names().show(id).into_owned();
            match update {
                Update::Event {
                    event: Event::Instant { time, name: n, .. },
                    ..
                } if name(n) == "stall" && stall_at.is_none() => stall_at = Some(time),
                Update::Event {
                    event:
                        Event::Span {
                            start,
                            duration,
                            name: n,
                            ..
                        },
                    lane,
                } => {
                    let end = start + duration;
                    match (name(n).as_str(), lane_name(lane).as_deref()) {
                        ("Sim.AI", Some("Sim")) => {
                            if let Some(at) = stall_at.filter(|&at| (start..end).contains(&at)) {
                                window.get_or_insert((at, end));
                            }
                        }
                        ("lock held", Some("lock-holder")) => held.push((start, end)),
                        _ => {}
                    }
                }
                Update::Cpu(interval) if lane_name(interval.lane).as_deref() == Some("Sim") => {
                    intervals.push(interval)
                }
                _ => {}
            }
        })
    });
    assert!(damage.is_empty(), "{damage:?}");
    let (from, to) = window.expect("the demo's stall, in a Sim.AI span");
    let mut stall = Stall {
        length: to - from,
        ..Stall::default()
    };
    // Each interval's share of the window, prorated: they are 10 ms long.
    for interval in &intervals {
        let overlap = interval.to.min(to).saturating_sub(interval.from.max(from));
        if overlap == 0 {
            continue;
        }
        let share = overlap as f64 / (interval.to - interval.from) as f64;
        stall.on_cpu += share * interval.spent.on_cpu_ns.unwrap_or(0) as f64;
        stall.waiting += share * interval.spent.waiting_ns.unwrap_or(0) as f64;
    }
    // Off a CPU: the rest. (Summed interval by interval, each clipped at
    // 0, the jitter of the samples' times would only add.)
    stall.off_cpu = (stall.length as f64 - stall.on_cpu - stall.waiting).max(0.0);
    stall.lock_held = held
        .iter()
        .map(|&(start, end)| end.min(to).saturating_sub(start.max(from)))
        .sum();
    stall
}

#[test]
fn a_sleeping_a_spinning_and_a_contended_stall_read_apart() {
    if !cfg!(target_os = "linux") {
        // Not measured there yet: `tests/tests/cpu_samples.rs` checks
        // that nothing is made up.
        return;
    }
    // The three demos at once: the stall comes at tick 600, 10 s in
    // unless the machine is slow to run them.
    let runs: Vec<_> = ["sleep", "spin", "contended"]
        .into_iter()
        .map(|kind| {
            let trace = temp(&format!("stall-{kind}.tlt"));
            let demo = typhon()
                .args(["demo", "--no-view", "--live", "0", "--threads", "1"])
                .args(["--duration", "13", "--stall-kind", kind])
                .arg("--trace")
                .arg(&trace)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("demo starts");
            (kind, trace, demo)
        })
        .collect();
    for (kind, trace, mut demo) in runs {
        assert!(demo.wait().unwrap().success(), "{kind}");
        let stall = stall_of(&std::fs::read(&trace).unwrap());
        let _ = std::fs::remove_file(&trace);
        let share = |ns: f64| ns / stall.length as f64;
        eprintln!(
            "{kind}: {:.3} s, on a CPU {:.3}, waiting {:.3}, off {:.3}, lock held {:.3} s",
            stall.length as f64 / 1e9,
            share(stall.on_cpu),
            share(stall.waiting),
            share(stall.off_cpu),
            stall.lock_held as f64 / 1e9
        );
        assert!(stall.length >= 1_150_000_000, "{kind}: {stall:?}");
        match kind {
            // On a CPU or waiting for one: the machine has two cores
            // and three demos.
            "spin" => {
                assert!(share(stall.on_cpu + stall.waiting) >= 0.95, "{stall:?}");
                assert!(share(stall.off_cpu) <= 0.02, "{stall:?}");
            }
            "sleep" => {
                assert!(share(stall.on_cpu) <= 0.05, "{stall:?}");
                assert!(share(stall.off_cpu) >= 0.90, "{stall:?}");
            }
            _ => {
                // Off a CPU while the other thread held the lock.
                assert!(stall.lock_held >= 1_100_000_000, "{stall:?}");
                let off = stall.off_cpu / stall.lock_held as f64;
                assert!((0.95..=1.05).contains(&off), "{stall:?}");
            }
        }
    }
}
