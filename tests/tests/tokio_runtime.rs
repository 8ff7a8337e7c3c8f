//! A real tokio runtime's gauges (`typhon-live-tokio`), sampled by the
//! profiler's exporter and read back from the trace file as a viewer
//! reads it: its workers, its live tasks, and its workers' busy time
//! while one task keeps a worker running.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use typhon_live_core::Metadata;
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::{runtime, Profiler};
use typhon_live_tokio::{RuntimeGauges, WatchError};

// Its trace file read back as a viewer reads it.
mod layer;

/// Tasks that wait, alive, while the runtime is sampled.
const WAITING: usize = 50;
const PERIOD: Duration = Duration::from_millis(20);

/// Every reading of every gauge in the trace, by name: (time, value).
fn readings(path: &std::path::PathBuf) -> BTreeMap<String, Vec<(u64, f64)>> {
    let model = layer::read(path);
    let mut by_name: BTreeMap<String, Vec<(u64, f64)>> = BTreeMap::new();
    for chunk in model.history().chunks() {
        for reading in &chunk.gauges {
            by_name
                .entry(model.name(reading.name))
                .or_default()
                .push((reading.time, reading.value));
        }
    }
    by_name
}

fn values(all: &BTreeMap<String, Vec<(u64, f64)>>, name: &str) -> Vec<f64> {
    all.get(name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", all.keys().collect::<Vec<_>>()))
        .iter()
        .map(|&(_, value)| value)
        .collect()
}

#[test]
fn a_runtime_is_sampled_while_watched_and_no_more_once_dropped() {
    let path = std::env::temp_dir().join(format!("typhon-live-tokio-{}.tlt", std::process::id()));
    let config = ProfilerConfig {
        trace: Some(path.clone()),
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    assert!(matches!(
        RuntimeGauges::watch_as(tokio.handle(), "", PERIOD),
        Err(WatchError::Prefix { len: 0 })
    ));
    let gauges = RuntimeGauges::watch_as(tokio.handle(), "svc", PERIOD).expect("watched");

    let (release, released) = tokio::sync::watch::channel(false);
    let waiting: Vec<_> = (0..WAITING)
        .map(|_| {
            let mut released = released.clone();
            tokio.spawn(async move {
                let _ = released.wait_for(|&r| r).await;
            })
        })
        .collect();
    // One task holds a worker for 300 ms without yielding: half of two
    // workers' time while it runs.
    let spinning = tokio.spawn(async {
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(300) {
            std::hint::spin_loop();
        }
    });
    tokio.block_on(async {
        spinning.await.expect("spun");
        tokio::time::sleep(Duration::from_millis(100)).await;
        release.send(true).expect("released");
        for task in waiting {
            task.await.expect("woken");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    });

    drop(gauges);
    let unwatched = runtime::now();
    std::thread::sleep(PERIOD * 10);
    profiler.stop().expect("stop");
    tokio.shutdown_timeout(Duration::from_secs(10));

    let all = readings(&path);
    let workers = values(&all, "svc.workers");
    assert!(workers.len() >= 10, "sampled every {PERIOD:?}: {workers:?}");
    assert!(workers.iter().all(|&w| w == 2.0), "{workers:?}");

    let alive = values(&all, "svc.alive_tasks");
    let most = alive.iter().copied().fold(0.0, f64::max);
    assert!(
        most >= WAITING as f64,
        "the waiting tasks are alive: {alive:?}"
    );
    assert!(
        alive.last() < Some(&(WAITING as f64)),
        "and gone once woken: {alive:?}"
    );
    for queue in values(&all, "svc.global_queue_depth") {
        assert!((0.0..=(WAITING + 1) as f64).contains(&queue), "{queue}");
    }

    let busy = values(&all, "svc.busy_ratio");
    assert!(busy.iter().all(|b| (0.0..=1.0).contains(b)), "{busy:?}");
    assert!(
        busy.iter().any(|&b| b >= 0.3),
        "one of two workers spinning shows: {busy:?}"
    );
    let per_worker: Vec<f64> = ["svc.worker.0.busy_ratio", "svc.worker.1.busy_ratio"]
        .iter()
        .flat_map(|name| values(&all, name))
        .collect();
    assert!(
        per_worker.iter().any(|&b| b >= 0.6),
        "the spinning worker shows: {per_worker:?}"
    );
    // A worker parks when it runs out of work: the waiting tasks do so.
    let parks: f64 = ["svc.worker.0.parks", "svc.worker.1.parks"]
        .iter()
        .flat_map(|name| values(&all, name))
        .sum();
    assert!(parks >= 1.0, "workers parked");

    let late: Vec<_> = all
        .iter()
        .flat_map(|(name, readings)| readings.iter().map(move |r| (name, r)))
        .filter(|(_, &(time, _))| time > unwatched)
        .collect();
    assert!(
        late.is_empty(),
        "{} readings after it was dropped, the first {:?}",
        late.len(),
        late.first()
    );
}
