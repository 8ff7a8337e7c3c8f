//! Each lane's CPU in the process (FORMAT.md, "Samples"): the exporter
//! thread samples every lane's thread, and a reader of the trace file
//! tells a thread that spun from one that slept. On Linux and Windows
//! (under wine in CI); on macOS the samples are not measured yet, and
//! none may appear.

use std::time::{Duration, Instant};

use typhon_live_core::{LaneKind, Metadata, Switch};
use typhon_live_reader::{frames, Reader, Update};
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler};

/// Per lane name: its samples' intervals summed (on a CPU, waiting where
/// measured, the rest), ns, and the voluntary switches where counted; and
/// its switches traced one by one, in order.
type Spent = std::collections::BTreeMap<String, (u64, u64, u64, u64)>;
type Traced = std::collections::BTreeMap<String, Vec<(u64, Switch)>>;

fn spent(trace: &[u8]) -> (Spent, Traced) {
    let mut reader = Reader::new();
    let mut by_lane = Spent::new();
    let mut traced = Traced::new();
    let damage = frames(trace, |frame| {
        reader.read(frame, |state, update| {
            let lane_name = |lane| {
                let lane = state.lanes().get(&lane)?;
                Some(state.names().show(lane.info.name).into_owned())
            };
            if let Update::Switch { lane, time, what } = update {
                if let Some(name) = lane_name(lane) {
                    traced.entry(name).or_default().push((time, what));
                }
            }
            if let Update::Cpu(interval) = update {
                let Some(lane) = state.lanes().get(&interval.lane) else {
                    return;
                };
                let name = state.names().show(lane.info.name).into_owned();
                let sum: &mut (u64, u64, u64, u64) = by_lane.entry(name).or_default();
                sum.0 += interval.spent.on_cpu_ns.unwrap_or(0);
                sum.1 += interval.spent.waiting_ns.unwrap_or(0);
                let busy =
                    interval.spent.on_cpu_ns.unwrap_or(0) + interval.spent.waiting_ns.unwrap_or(0);
                sum.2 += (interval.to - interval.from).saturating_sub(busy);
                sum.3 += interval.spent.voluntary.unwrap_or(0);
            }
        })
    });
    assert!(damage.is_empty(), "{damage:?}");
    (by_lane, traced)
}

#[test]
fn a_thread_that_spins_and_one_that_sleeps_read_apart() {
    let trace = std::env::temp_dir().join(format!("typhon-live-cpu-{}.tlt", std::process::id()));
    let config = ProfilerConfig {
        trace: Some(trace.clone()),
        ..ProfilerConfig::default()
    };
    assert_eq!(config.cpu_samples, Some(Duration::from_millis(10)));
    let profiler = Profiler::start(&config, &Metadata::default()).unwrap();
    let work = runtime::intern("work").unwrap();
    let run = |name: &'static str, spin: bool| {
        std::thread::spawn(move || {
            runtime::register_thread(name, LaneKind::Worker);
            let _span = runtime::span(work);
            let started = Instant::now();
            while started.elapsed() < Duration::from_millis(300) {
                if spin {
                    std::hint::spin_loop();
                } else {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            // A few samples more before the thread and its lane go.
            std::thread::sleep(Duration::from_millis(50));
        })
    };
    let (spinner, sleeper) = (run("spinner", true), run("sleeper", false));
    spinner.join().unwrap();
    sleeper.join().unwrap();
    let stats = profiler.stats();
    profiler.stop().unwrap();
    let bytes = std::fs::read(&trace).unwrap();
    let _ = std::fs::remove_file(&trace);
    let (spent, traced) = spent(&bytes);
    eprintln!("on a CPU, waiting, off, voluntary switches: {spent:?}");
    if !cfg!(any(target_os = "linux", windows)) {
        // Not measured here yet: nothing made up.
        assert!(spent.is_empty(), "{spent:?}");
        return;
    }
    let ms = |ns: u64| ns / 1_000_000;
    let (on, waiting, _, _) = spent["spinner"];
    if cfg!(target_os = "linux") {
        // 300 ms spun: on a CPU or waiting for one, on a loaded 2-core
        // machine.
        assert!(ms(on + waiting) >= 200, "spinner: {spent:?}");
    } else {
        // Windows does not say how long a thread waited for a CPU, so a
        // spinner the machine's load held off reads as off: under wine in
        // CI it read 180 ms on a CPU of 300. It still reads apart from the
        // sleeper, which the checks below hold under 60 ms.
        assert!(ms(on) >= 100, "spinner: {spent:?}");
    }
    let (on, _, off, voluntary) = spent["sleeper"];
    assert!(ms(on) < 60, "sleeper on a CPU: {spent:?}");
    assert!(ms(off) >= 200, "sleeper off a CPU: {spent:?}");
    if cfg!(target_os = "linux") {
        assert!(voluntary >= 20, "sleeper's switches: {spent:?}");
    }
    // Its switches one by one, where the system lets them be traced:
    // out to wait and back in, each sleep.
    let sleeps = traced.get("sleeper").map_or(&[][..], Vec::as_slice);
    eprintln!(
        "switches traced: sleeper {}, spinner {}; refused {}, lost {}",
        sleeps.len(),
        traced.get("spinner").map_or(0, Vec::len),
        stats.switches_refused,
        stats.switches_lost
    );
    if cfg!(target_os = "linux") && stats.switches_refused == 0 {
        let waits = sleeps.iter().filter(|s| s.1 == Switch::OutWaiting).count();
        assert!(waits >= 20, "{sleeps:?}");
        assert!(sleeps.windows(2).all(|w| w[0].0 <= w[1].0), "{sleeps:?}");
    } else {
        assert!(traced.is_empty(), "{traced:?}");
    }
}
