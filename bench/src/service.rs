//! `-- --service`: an async service under load (issue 37). The tests'
//! axum service with tower-http's `TraceLayer`
//! (`typhon_live_tests::service`) on a two-worker tokio runtime, hyper
//! clients on the same runtime (4: the service waits on its timer; 32:
//! it keeps both cores busy): requests served per second with no
//! subscriber, with typhon-live's layer (a profiler writing a trace
//! file) and with tracing-tracy's, in turn, twice, in one run. Each
//! configuration has a runtime of its own whose worker threads carry its
//! subscriber.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;
use typhon_live_core::Metadata;
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::Profiler;
use typhon_live_tests::service::{self, load};

/// Requests per second the service answers `clients` clients for `run`
/// with `dispatch` as its threads' subscriber (none: `tracing` is off).
fn requests_per_second(dispatch: Option<Dispatch>, clients: usize, run: Duration) -> f64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || {
            if let Some(dispatch) = &dispatch {
                // For the thread's life: the runtime's threads end with it.
                std::mem::forget(tracing::dispatcher::set_default(dispatch));
            }
        })
        .build()
        .expect("runtime");
    let served = runtime.block_on(async {
        let service = service::start().await.expect("the service starts");
        let addr = service.addr;
        let going = Arc::new(AtomicBool::new(true));
        let started = Instant::now();
        let mut served = 0;
        let mut tasks = Vec::new();
        for _ in 0..clients {
            let going = going.clone();
            tasks.push(tokio::spawn(async move {
                let mut served = 0;
                while going.load(Ordering::Relaxed) {
                    served += load(addr, 1, 20).await;
                }
                served
            }));
        }
        tokio::time::sleep(run).await;
        going.store(false, Ordering::Relaxed);
        for task in tasks {
            served += task.await.unwrap_or(0);
        }
        let elapsed = started.elapsed();
        service.stop(Duration::from_secs(5)).await;
        served as f64 / elapsed.as_secs_f64()
    });
    runtime.shutdown_timeout(Duration::from_secs(5));
    served
}

/// Requests per second with no subscriber, with typhon-live's layer and
/// with tracing-tracy's, one run of `run` each, in turn.
pub struct Comparison {
    /// No subscriber: `tracing` is off.
    pub none: f64,
    /// typhon-live's layer, a profiler writing a trace file.
    pub typhon: f64,
    /// tracing-tracy's layer, Tracy's client running.
    pub tracy: f64,
}

impl Comparison {
    /// One round at `clients` clients.
    fn run(clients: usize, run: Duration) -> Comparison {
        let layered = |layer: Dispatch| requests_per_second(Some(layer), clients, run);
        Comparison {
            none: requests_per_second(None, clients, run),
            typhon: layered(Dispatch::new(
                tracing_subscriber::registry().with(typhon_live_tracing::TyphonLayer::new()),
            )),
            tracy: layered(Dispatch::new(
                tracing_subscriber::registry().with(tracing_tracy::TracyLayer::default()),
            )),
        }
    }
}

/// Runs `rounds` with a profiler writing a trace file (removed after) and
/// Tracy's client started, as both layers need; what it recorded goes to
/// stderr.
fn with_profilers<T>(rounds: impl FnOnce() -> T) -> T {
    let trace = std::env::temp_dir().join(format!(
        "typhon-live-bench-service-{}.tlt",
        std::process::id()
    ));
    let config = ProfilerConfig {
        trace: Some(trace.clone()),
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
    let _tracy = tracy_client::Client::start();
    let result = rounds();
    let stats = profiler.stop().expect("stop");
    let _ = std::fs::remove_file(&trace);
    eprintln!("typhon-live recorded: {stats:?}");
    result
}

/// The main table's row: 32 clients, both cores busy, one round, in a
/// process of its own (`--service-row`). Run inside the table's process,
/// after its other rows, both layers cost three times what they cost
/// alone (0.85 and 0.88 of the requests with no subscriber, against 0.96
/// and 0.96), while the run with no subscriber stays the same.
pub fn busy_service_alone(quick: bool) -> Comparison {
    let exe = std::env::current_exe().expect("the bench's own path");
    let mut command = std::process::Command::new(exe);
    command.arg("--service-row");
    if quick {
        command.arg("--quick");
    }
    let output = command.output().expect("the service row runs");
    let line = String::from_utf8_lossy(&output.stdout);
    let numbers: Vec<f64> = line
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    let [none, typhon, tracy] = numbers[..] else {
        panic!(
            "the service row printed {line:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    Comparison {
        none,
        typhon,
        tracy,
    }
}

/// `--service-row`: the table's row, printed as three numbers.
pub fn print_row(quick: bool) {
    let run = Duration::from_secs(if quick { 3 } else { 10 });
    let Comparison {
        none,
        typhon,
        tracy,
    } = with_profilers(|| Comparison::run(32, run));
    println!("{none} {typhon} {tracy}");
}

/// `--service`: 4 and 32 clients, two rounds each.
pub fn print(quick: bool) {
    let run = Duration::from_secs(if quick { 3 } else { 10 });
    println!(
        "an axum service with TraceLayer, 2 workers, {} s a run; requests/s",
        run.as_secs()
    );
    println!("| clients | round | no subscriber | typhon-live layer | tracing-tracy layer | typhon-live / none | tracing-tracy / none |");
    println!("|---:|---|---:|---:|---:|---:|---:|");
    with_profilers(|| {
        for clients in [4, 32] {
            for round in 1..=2 {
                let Comparison {
                    none,
                    typhon,
                    tracy,
                } = Comparison::run(clients, run);
                println!(
                    "| {clients} | {round} | {none:.0} | {typhon:.0} | {tracy:.0} | {:.3} | {:.3} |",
                    typhon / none,
                    tracy / none
                );
            }
        }
    });
}
