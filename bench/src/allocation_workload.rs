//! The allocation-heavy program the memory rows run (`--memory`), once
//! per allocator, each in a binary of its own (`alloc-system`,
//! `alloc-tracking`, `alloc-tracy`) so that none pays for choosing.
//!
//! `ITERATIONS THREADS SAMPLE_BYTES`: each thread builds a vector of 64
//! strings, sorts and joins them, and drops it all, `ITERATIONS` times;
//! printed: the wall time in ns. A quarter as many first, untimed, and a
//! pause: what a program pays once, at its start (the first stacks
//! symbolized, which loads the debug information), is not what a soak
//! test pays a second. `SAMPLE_BYTES` is typhon-live's sampling
//! interval (0: counted, not sampled), for `alloc-tracking` only.
//!
//! `accuracy SECONDS` (`alloc-tracking` only): three sites keep 512, 384
//! and 256 MiB, allocated over `SECONDS` beside a churning one; printed
//! per site, its true and estimated live bytes as the trace file tells.

#![allow(dead_code)]

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Which allocator the binary was built over.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Allocator {
    System,
    Tracking,
    Tracy,
}

fn one_pass(i: usize) -> usize {
    let mut items: Vec<String> = (0..64)
        .map(|n| format!("item {n} of pass {i} {}", "x".repeat((n * 7 + i) % 48)))
        .collect();
    items.sort_unstable();
    let joined = items.join(",");
    black_box(joined.len())
}

fn workload(iterations: usize, threads: usize, lanes: bool) -> Duration {
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                if lanes {
                    typhon_live_std::runtime::register_thread(
                        &format!("worker-{t}"),
                        typhon_live_core::LaneKind::Worker,
                    );
                }
                (0..iterations).map(one_pass).sum::<usize>()
            })
        })
        .collect();
    for handle in handles {
        black_box(handle.join().expect("a worker"));
    }
    started.elapsed()
}

fn trace_path(what: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "typhon-bench-alloc-{what}-{}.tlt",
        std::process::id()
    ))
}

fn profiler(sample_bytes: u64, trace: &std::path::Path) -> typhon_live_std::Profiler {
    let config = typhon_live_std::config::ProfilerConfig {
        trace: Some(trace.to_owned()),
        allocation_sample_bytes: sample_bytes,
        ..typhon_live_std::config::ProfilerConfig::default()
    };
    typhon_live_std::Profiler::start(&config, &typhon_live_core::Metadata::default())
        .expect("the profiler starts")
}

pub fn main(allocator: Allocator) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |at: usize, default: u64| {
        args.get(at)
            .and_then(|a| a.parse::<u64>().ok())
            .unwrap_or(default)
    };
    if args.first().map(String::as_str) == Some("accuracy") {
        accuracy(Duration::from_secs(number(1, 10)));
        return;
    }
    let (iterations, threads) = (number(0, 20_000) as usize, number(1, 2) as usize);
    let trace = trace_path("workload");
    let profiler = match allocator {
        Allocator::Tracking => Some(profiler(number(2, 0), &trace)),
        Allocator::Tracy => {
            let _ = tracy_client::Client::start();
            None
        }
        Allocator::System => None,
    };
    workload(iterations / 4, threads, profiler.is_some());
    std::thread::sleep(Duration::from_millis(1_500));
    let took = workload(iterations, threads, profiler.is_some());
    if let Some(profiler) = profiler {
        let _ = profiler.stop();
        let _ = std::fs::remove_file(&trace);
    }
    println!("{}", took.as_nanos());
}

/// A site that keeps one more block.
type Keep = fn(&mut Vec<Box<[u8]>>);

/// Blocks of this size, kept by a site.
const BLOCK: usize = 16 << 10;

#[inline(never)]
fn keep_large(kept: &mut Vec<Box<[u8]>>) {
    kept.push(vec![1u8; BLOCK].into_boxed_slice());
}

#[inline(never)]
fn keep_medium(kept: &mut Vec<Box<[u8]>>) {
    kept.push(vec![2u8; BLOCK].into_boxed_slice());
}

#[inline(never)]
fn keep_small(kept: &mut Vec<Box<[u8]>>) {
    kept.push(vec![3u8; BLOCK].into_boxed_slice());
}

#[inline(never)]
fn churn() -> usize {
    black_box(vec![4u8; BLOCK]).len()
}

/// Three sites keep known bytes over `over`, one churns; the trace file
/// then says what each holds.
fn accuracy(over: Duration) {
    let trace = trace_path("accuracy");
    let profiler = profiler(typhon_live_std::allocation_sites::DEFAULT_MEAN, &trace);
    typhon_live_std::runtime::register_thread("sites", typhon_live_core::LaneKind::Main);
    let sites: [(&str, usize, Keep); 3] = [
        ("keep_large", 512 << 20, keep_large),
        ("keep_medium", 384 << 20, keep_medium),
        ("keep_small", 256 << 20, keep_small),
    ];
    let mut kept: Vec<Vec<Box<[u8]>>> = sites
        .iter()
        .map(|s| Vec::with_capacity(s.1 / BLOCK))
        .collect();
    let started = Instant::now();
    // Each site evenly over the time given, a churned block beside each
    // kept one.
    loop {
        let share = (started.elapsed().as_secs_f64() / over.as_secs_f64()).min(1.0);
        for (site, (_, bytes, keep)) in sites.iter().enumerate() {
            let due = (*bytes / BLOCK) as f64 * share;
            while (kept[site].len() as f64) < due {
                keep(&mut kept[site]);
                black_box(churn());
            }
        }
        if share >= 1.0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // Two whole re-sends of every site.
    std::thread::sleep(Duration::from_millis(2_200));
    let _ = profiler.stop();
    let bytes = std::fs::read(&trace).expect("the trace");
    let _ = std::fs::remove_file(&trace);
    let mut reader = typhon_live_reader::Reader::new();
    let mut last: std::collections::BTreeMap<u32, (String, u64)> = Default::default();
    let _ = typhon_live_reader::frames(&bytes, |frame| {
        reader.read(frame, |state, update| {
            if let typhon_live_reader::Update::Site(site) = update {
                let stack: Vec<String> = site
                    .frames
                    .iter()
                    .map(|id| state.names().show(id).into_owned())
                    .collect();
                last.insert(site.site, (stack.join(" < "), site.totals.live()));
            }
        })
    });
    for ((name, _, _), kept) in sites.iter().zip(&kept) {
        let truth = kept.len() * BLOCK;
        let at = format!("::{name} (");
        let estimate: u64 = last
            .values()
            .filter(|(stack, _)| stack.contains(&at))
            .map(|(_, live)| live)
            .sum();
        println!("{name} {truth} {estimate}");
    }
    let churned: u64 = last
        .values()
        .filter(|(stack, _)| stack.contains("::churn ("))
        .map(|(_, live)| live)
        .sum();
    println!("churn 0 {churned}");
    black_box(&kept);
}
