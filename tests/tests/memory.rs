//! The process's memory and its allocation sites (FORMAT.md, "Samples"),
//! with `Tracking` as this test binary's global allocator: a thread that
//! leaks from one function is found by its site, live bytes within 10 %
//! of the truth; a thread that allocates as much and frees it holds
//! nothing; a reader that loses 30 % of the Samples frames never sees a
//! phantom leak; and a flight recorder's capture holds the leak's site.

use std::alloc::System;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use typhon_live_core::{LaneKind, Memory, Metadata, SiteTotals};
use typhon_live_reader::{frames, Reader, Update};
use typhon_live_std::config::{ConfigLayer, ProfilerConfig};
use typhon_live_std::{runtime, Profiler, Tracking};

#[global_allocator]
static ALLOCATOR: Tracking<System> = Tracking::new(System);

/// Bytes the leaking thread keeps, and the churning one allocates and
/// frees.
const LEAKED: usize = 24 << 20;
/// Each block's size.
const BLOCK: usize = 4096;

#[inline(never)]
fn leak_here(kept: &mut Vec<Vec<u8>>) {
    kept.push(vec![1u8; BLOCK]);
}

#[inline(never)]
fn churn_here() -> usize {
    let block = vec![2u8; BLOCK];
    std::hint::black_box(&block).len()
}

/// What a reader read: per Samples frame's sequence number, each site
/// told in it; each site's frames, named; the last memory; and each
/// lane's bytes allocated, summed over its intervals.
#[derive(Default)]
struct Read {
    told: BTreeMap<u32, Vec<(u32, SiteTotals)>>,
    stacks: BTreeMap<u32, String>,
    memory: Option<Memory>,
    lane_allocated: BTreeMap<String, u64>,
    /// Samples frames read.
    samples: usize,
}

impl Read {
    /// Each site's last totals.
    fn last(&self) -> BTreeMap<u32, SiteTotals> {
        let mut last = BTreeMap::new();
        for sites in self.told.values() {
            for &(site, totals) in sites {
                last.insert(site, totals);
            }
        }
        last
    }

    /// The site whose stack names `function`.
    fn site_of(&self, function: &str) -> u32 {
        let mut found = self.stacks.iter().filter(|(_, s)| s.contains(function));
        let (&site, _) = found.next().unwrap_or_else(|| panic!("{:#?}", self.stacks));
        assert!(found.next().is_none(), "one site in {function}");
        site
    }
}

/// Reads `trace`, leaving out the Samples frames `keep` refuses.
fn read(trace: &[u8], mut keep: impl FnMut(u32) -> bool) -> Read {
    let mut reader = Reader::new();
    let mut read = Read::default();
    let damage = frames(trace, |frame| {
        if frame.kind == 6 && !keep(frame.seq) {
            return Ok(());
        }
        let seq = frame.seq;
        reader.read(frame, |state, update| match update {
            Update::Samples { .. } => read.samples += 1,
            Update::Memory(memory) => read.memory = Some(memory),
            Update::Site(site) => {
                let names: Vec<_> = site
                    .frames
                    .iter()
                    .map(|id| state.names().show(id))
                    .collect();
                read.stacks
                    .entry(site.site)
                    .or_insert_with(|| names.join(" < "));
                read.told
                    .entry(seq)
                    .or_default()
                    .push((site.site, site.totals));
            }
            Update::Cpu(interval) => {
                if let Some(lane) = state.lanes().get(&interval.lane) {
                    let name = state.names().show(lane.info.name).into_owned();
                    *read.lane_allocated.entry(name).or_default() +=
                        interval.spent.allocated_bytes.unwrap_or(0);
                }
            }
            _ => {}
        })
    });
    assert!(damage.is_empty(), "{damage:?}");
    read
}

#[test]
fn a_leak_is_found_by_its_site_and_dropped_frames_never_make_one() {
    let trace = std::env::temp_dir().join(format!("typhon-live-memory-{}.tlt", std::process::id()));
    let config = ProfilerConfig {
        trace: Some(trace.clone()),
        // About 1 500 samples of each thread's 24 MiB.
        allocation_sample_bytes: 16 << 10,
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).unwrap();
    // Each thread's lane is sampled before it allocates, and again after
    // (its bytes are the counters' growth), its allocations spread over
    // a few samples.
    let paced = |name: &'static str, mut each: Box<dyn FnMut() + Send>| {
        std::thread::spawn(move || {
            runtime::register_thread(name, LaneKind::Worker);
            std::thread::sleep(Duration::from_millis(40));
            for i in 0..LEAKED / BLOCK {
                each();
                if i % 256 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            std::thread::sleep(Duration::from_millis(40));
        })
    };
    let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::with_capacity(LEAKED / BLOCK)));
    let leaking = kept.clone();
    let leaker = paced(
        "leaker",
        Box::new(move || leak_here(&mut leaking.lock().unwrap())),
    );
    let churned = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let churning = churned.clone();
    let churner = paced(
        "churner",
        Box::new(move || {
            churning.fetch_add(churn_here(), std::sync::atomic::Ordering::Relaxed);
        }),
    );
    leaker.join().unwrap();
    churner.join().unwrap();
    assert_eq!(churned.load(std::sync::atomic::Ordering::Relaxed), LEAKED);
    // Two whole re-sends of every site after the allocations ended.
    let ended = Instant::now();
    while ended.elapsed() < Duration::from_millis(2_300) {
        std::thread::sleep(Duration::from_millis(50));
    }
    profiler.stop().unwrap();
    let bytes = std::fs::read(&trace).unwrap();
    let _ = std::fs::remove_file(&trace);
    drop(kept);

    let whole = read(&bytes, |_| true);
    let memory = whole.memory.expect("the process's memory is told");
    assert!(memory.live() >= LEAKED as u64, "{memory:?}");
    assert_eq!(memory.sampling_mean, 16 << 10);
    assert!(memory.sampled >= 2_000, "{memory:?}");
    let (leak, churn) = (whole.site_of("leak_here"), whole.site_of("churn_here"));
    let last = whole.last();
    let error = last[&leak].live() as f64 / LEAKED as f64 - 1.0;
    assert!(error.abs() < 0.1, "{:?}: {error:+.3}", last[&leak]);
    assert!(
        last[&churn].live() < (1 << 20),
        "churned and freed: {:?}",
        last[&churn]
    );
    assert_eq!(last[&churn].frees, last[&churn].allocations);
    // Each thread's lane counted its own bytes: most of them between its
    // first sample and its last (a loaded machine may sample it late).
    for lane in ["leaker", "churner"] {
        let allocated = whole.lane_allocated.get(lane).copied().unwrap_or(0);
        assert!(
            (LEAKED as u64 / 2..LEAKED as u64 * 2).contains(&allocated),
            "{lane}: {:?}",
            whole.lane_allocated
        );
    }

    // 30 % of the Samples frames lost, a seeded choice: every total read
    // is one the whole stream told in the same frame, so a site never
    // shows bytes that were not live when it was told.
    let mut random = 0x9E37_79B9_7F4A_7C15_u64;
    let lossy = read(&bytes, |_| {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        random % 10 >= 3
    });
    let share = lossy.samples as f64 / whole.samples as f64;
    assert!(
        (0.6..0.8).contains(&share),
        "{} of {}",
        lossy.samples,
        whole.samples
    );
    for (seq, sites) in &lossy.told {
        assert_eq!(Some(sites), whole.told.get(seq), "frame {seq}");
    }
    // The last totals of each: the whole stream's, if a frame that told
    // them after the allocations ended came through; never more.
    let lossy_last = lossy.last();
    for site in [leak, churn] {
        let truth = last[&site];
        let Some(&read) = lossy_last.get(&site) else {
            // A lossy reading can miss every frame that told a site (a
            // slow machine sends fewer): it then shows nothing of it,
            // never more than the truth.
            assert!(
                (lossy.told.values().flatten()).all(|&(s, _)| s != site),
                "site {site} told, yet not read"
            );
            continue;
        };
        assert!(
            read.live() <= truth.live().max(1 << 20),
            "{read:?} {truth:?}"
        );
        let final_told = |told: &BTreeMap<u32, Vec<(u32, SiteTotals)>>| {
            told.values()
                .flatten()
                .any(|&(s, t)| s == site && t == truth)
        };
        if final_told(&lossy.told) {
            assert_eq!(read, truth);
        }
    }

    // A flight recorder's capture holds the sites too: every site is told
    // again each second, so a capture of the last 3 s has each, whatever
    // frame it begins with. The leak's site is the same site as above
    // (its stack is), its earlier blocks freed since.
    let dir = std::env::temp_dir().join(format!(
        "typhon-live-memory-captures-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let args = ConfigLayer::from_args([
        "--capture-dir",
        dir.to_str().unwrap(),
        "--capture-before",
        "3s",
        "--capture-after",
        "300ms",
        "--capture-spacing",
        "0s",
        "--allocation-sample-bytes",
        "16384",
    ])
    .unwrap();
    let profiler =
        Profiler::start(&ProfilerConfig::layered([&args]), &Metadata::default()).unwrap();
    let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let leaking = kept.clone();
    paced(
        "leaker",
        Box::new(move || leak_here(&mut leaking.lock().unwrap())),
    )
    .join()
    .unwrap();
    std::thread::sleep(Duration::from_millis(1_300));
    profiler.capture();
    std::thread::sleep(Duration::from_millis(600));
    let stats = profiler.stop().unwrap();
    assert_eq!(stats.captures_written, 1, "{stats:?}");
    let capture = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|entry| Some(entry.ok()?.path()))
        .find(|path| path.extension().is_some_and(|x| x == "tlt"))
        .expect("a capture");
    let captured = read(&std::fs::read(&capture).unwrap(), |_| true);
    let _ = std::fs::remove_dir_all(&dir);
    // Two sites leak_here calls from (this run's closure, and the first
    // run's, told again with nothing live): what they hold.
    let last = captured.last();
    let live: u64 = (captured.stacks.iter())
        .filter(|(_, stack)| stack.contains("leak_here"))
        .map(|(site, _)| last[site].live())
        .sum();
    let error = live as f64 / LEAKED as f64 - 1.0;
    assert!(error.abs() < 0.1, "captured: {live} bytes: {error:+.3}");
    drop(kept);
}
