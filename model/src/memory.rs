//! The process's memory and the allocation sites that hold it, as the
//! stream tells them (FORMAT.md, "Samples", "Memory"): the live bytes the
//! memory strip draws, and the sites a table ranks by the bytes they hold
//! and by how fast that grows.
//!
//! Both are cumulative in the stream: the latest reading of each is the
//! truth as of its time, and a lost frame only delays it. Sites are
//! estimates from sampled allocations; the summary says from how many,
//! and what share of the samples the writer could not take.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};
use typhon_live_core::{Memory, NameId, SiteTotals, SiteView};
use typhon_live_reader::Names;

/// Sites kept at most: a peer's sites are bounded like its names.
pub const MAX_SITES: usize = 4096;
/// How far back a site's growth is measured, ns.
pub const GROWTH_WINDOW: u64 = 60_000_000_000;
/// A site keeps a reading at most this often for its growth, ns.
const GROWTH_STEP: u64 = 500_000_000;
/// Readings of the process's live bytes the summary's strip holds.
const STRIP_READINGS: usize = 120;
/// Sites in each of the summary's two tables.
pub const TOP_SITES: usize = 10;

/// One reading of the process's memory, as the history keeps it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemoryReading {
    /// When, ns of the source's clock.
    pub time: u64,
    /// Bytes allocated and not freed.
    pub live: u64,
}

/// An allocation site as the model keeps it.
#[derive(Clone, Debug, Default)]
struct Site {
    frames: Vec<NameId>,
    totals: SiteTotals,
    /// (time, live) readings over the growth window, and one before it.
    readings: VecDeque<(u64, u64)>,
}

impl Site {
    /// Bytes a minute its live bytes grew, over the readings kept; 0
    /// until two readings a step apart.
    fn growth_per_minute(&self) -> i64 {
        let (Some(&(from, then)), Some(&(to, now))) = (self.readings.front(), self.readings.back())
        else {
            return 0;
        };
        // A peer's times may be anything: sums saturate, and times that
        // go back are no growth.
        if to < from.saturating_add(GROWTH_STEP) {
            return 0;
        }
        let grew = now as f64 - then as f64;
        (grew * GROWTH_WINDOW as f64 / (to - from) as f64) as i64
    }
}

/// What the stream told of the memory.
#[derive(Clone, Debug, Default)]
pub struct MemoryState {
    latest: Option<(u64, Memory)>,
    strip: VecDeque<u64>,
    sites: BTreeMap<u32, Site>,
    /// Sites not kept: past [`MAX_SITES`].
    pub refused_sites: u64,
}

impl MemoryState {
    /// Forgets everything: a new session (site ids are a session's).
    pub fn clear(&mut self) {
        *self = MemoryState::default();
    }

    /// The process's memory, read at `time`.
    pub fn read(&mut self, time: u64, memory: Memory) {
        self.latest = Some((time, memory));
        if self.strip.len() == STRIP_READINGS {
            self.strip.pop_front();
        }
        self.strip.push_back(memory.live());
    }

    /// A site's totals, read at `time`.
    pub fn read_site(&mut self, time: u64, view: &SiteView<'_>) {
        if !self.sites.contains_key(&view.site) && self.sites.len() >= MAX_SITES {
            self.refused_sites += 1;
            return;
        }
        let site = self.sites.entry(view.site).or_default();
        if !site.frames.iter().copied().eq(view.frames.iter()) {
            // Another stack under the id (a relay's source that started
            // over): another site.
            *site = Site {
                frames: view.frames.iter().collect(),
                ..Site::default()
            };
        }
        site.totals = view.totals;
        let live = view.totals.live();
        // One reading a step, the newest always last.
        let keep_last = site.readings.len() >= 2
            && site.readings[site.readings.len() - 2]
                .0
                .saturating_add(GROWTH_STEP)
                > time;
        if keep_last {
            site.readings.pop_back();
        }
        site.readings.push_back((time, live));
        // One reading before the window stays: the growth's anchor.
        while site.readings.len() > 2 && site.readings[1].0.saturating_add(GROWTH_WINDOW) <= time {
            site.readings.pop_front();
        }
    }

    /// What the summary shows, its names read in `names`.
    pub fn summary(&self, names: &Names) -> Option<MemorySummary> {
        let (_, memory) = self.latest?;
        // Ranked by their numbers; only the sites listed have their
        // stacks' names read (up to 4096 sites, once a second or more).
        let top = |key: &dyn Fn(&Site) -> i64| {
            let mut ranked: Vec<(i64, u32)> = (self.sites.iter())
                .map(|(&id, site)| (key(site), id))
                .filter(|&(k, _)| k > 0)
                .collect();
            ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            ranked.truncate(TOP_SITES);
            let listed = ranked.into_iter().filter_map(|(_, id)| {
                let site = self.sites.get(&id)?;
                Some(SiteSummary::of(id, site, names))
            });
            listed.collect::<Vec<SiteSummary>>()
        };
        // Every site by what it holds (one that holds nothing last).
        let live = |s: &Site| i64::try_from(s.totals.live()).unwrap_or(i64::MAX);
        let by_live = top(&|s| live(s).saturating_add(1));
        let by_growth = top(&|s| s.growth_per_minute());
        let taken = memory.sampled.saturating_add(memory.missed);
        Some(MemorySummary {
            live: memory.live(),
            allocated: memory.allocated,
            freed: memory.freed,
            history: self.strip.iter().map(|&b| b as f64).collect(),
            sampling_mean: memory.sampling_mean,
            sampled: memory.sampled,
            sampled_share: (taken > 0).then(|| memory.sampled as f64 / taken as f64),
            sites: self.sites.len(),
            refused_sites: self.refused_sites,
            sites_by_live: by_live,
            sites_by_growth: by_growth,
        })
    }
}

/// The memory, as a view shows it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MemorySummary {
    /// Bytes the process holds: allocated and not freed, exact.
    pub live: u64,
    /// Bytes allocated, and freed, since the process began.
    pub allocated: u64,
    /// See `allocated`.
    pub freed: u64,
    /// Its recent live bytes, oldest first: the memory strip.
    pub history: Vec<f64>,
    /// Mean bytes between two sampled allocations; 0: sites not sampled.
    pub sampling_mean: u64,
    /// Allocations sampled.
    pub sampled: u64,
    /// The share of the samples the sites' estimates are from (the rest
    /// the writer missed); `None` before any.
    pub sampled_share: Option<f64>,
    /// Sites known.
    pub sites: usize,
    /// Sites not kept: past [`MAX_SITES`].
    pub refused_sites: u64,
    /// The sites that hold the most bytes, most first.
    pub sites_by_live: Vec<SiteSummary>,
    /// The sites whose bytes grew fastest over the last minute, fastest
    /// first (growing ones only).
    pub sites_by_growth: Vec<SiteSummary>,
}

impl MemorySummary {
    /// What a view's title says: the bytes held, and what the sites'
    /// estimates are from ("152.6 MiB live, estimates from 100 % of 320
    /// samples, 1 in 512.0 KiB").
    pub fn says(&self) -> String {
        let share = self
            .sampled_share
            .map_or(String::new(), |s| format!(" from {:.0} % of", s * 100.0));
        let sampling = match self.sampling_mean {
            0 => "sites not sampled".to_owned(),
            mean => format!(
                "estimates{share} {} samples, 1 in {}",
                self.sampled,
                bytes(mean as f64)
            ),
        };
        format!("{} live, {sampling}", bytes(self.live as f64))
    }
}

/// One allocation site, as a view shows it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SiteSummary {
    /// The source's id for it.
    pub site: u32,
    /// Its first frame in the program's own code: its name in a table.
    pub label: String,
    /// Its frames, innermost first.
    pub stack: Vec<String>,
    /// Bytes it holds, estimated.
    pub live: u64,
    /// Bytes it allocated, estimated.
    pub allocated: u64,
    /// How fast `live` grew over the last minute (or as much of it as
    /// was seen), bytes a minute.
    pub growth_per_minute: i64,
    /// Allocations of it sampled: the estimate's weight.
    pub allocations: u64,
}

impl SiteSummary {
    /// Its samples as a view writes them: "1 sample", "20 samples".
    pub fn samples(&self) -> String {
        match self.allocations {
            1 => "1 sample".to_owned(),
            n => format!("{n} samples"),
        }
    }

    /// Its growth as a view writes it: "+57.2 MiB/min", empty when flat.
    pub fn growth(&self) -> String {
        match self.growth_per_minute {
            0 => String::new(),
            g if g > 0 => format!("+{}/min", bytes(g as f64)),
            g => format!("{}/min", bytes(g as f64)),
        }
    }

    fn of(site: u32, kept: &Site, names: &Names) -> SiteSummary {
        let stack: Vec<String> = kept
            .frames
            .iter()
            .map(|&id| names.show(id).into_owned())
            .collect();
        SiteSummary {
            site,
            label: label(&stack),
            stack,
            live: kept.totals.live(),
            allocated: kept.totals.allocated,
            growth_per_minute: kept.growth_per_minute(),
            allocations: kept.totals.allocations,
        }
    }
}

/// Bytes in binary units: "512 B", "1.5 KiB", "152.6 MiB".
pub fn bytes(n: f64) -> String {
    let (value, unit) = match n.abs() {
        v if v >= (1u64 << 30) as f64 => (n / (1u64 << 30) as f64, "GiB"),
        v if v >= (1u64 << 20) as f64 => (n / (1u64 << 20) as f64, "MiB"),
        v if v >= 1024.0 => (n / 1024.0, "KiB"),
        _ => (n, "B"),
    };
    if unit == "B" {
        format!("{value:.0} B")
    } else {
        format!("{value:.1} {unit}")
    }
}

/// The crates of the standard library and its collections: a site is
/// named by the first frame past them.
const LIBRARY_CRATES: [&str; 4] = ["alloc::", "core::", "std::", "hashbrown::"];

/// A path without its generic arguments: `with_capacity_in<u8, Global>`
/// is `with_capacity_in`.
fn without_generics(path: &str) -> &str {
    path.split('<').next().unwrap_or(path)
}

/// Whether a frame (`function (file:line)`) is the standard library's: a
/// function of its crates, or a method of one of its types or of a
/// primitive (`<u8 as alloc::vec::SpecFromElem>::from_elem`,
/// `<alloc::alloc::Global>::grow`) in none of the program's traits. A
/// program's type implementing a library trait is the program's.
fn is_library(frame: &str) -> bool {
    let path = frame.split(" (").next().unwrap_or(frame);
    let library = |path: &str| {
        let path = without_generics(path.trim_start_matches(['&', '*', '[', '(']));
        LIBRARY_CRATES.iter().any(|c| path.starts_with(c)) || !path.contains("::")
    };
    let Some(qualified) = path.strip_prefix('<') else {
        return library(path);
    };
    let inside = qualified.split(">::").next().unwrap_or(qualified);
    match inside.split_once(" as ") {
        Some((own, of)) => library(own) && library(of),
        None => library(inside),
    }
}

/// Whether a frame names its function by its path: a function inlined
/// into another may be named by its bare name (`simulate`,
/// `from_elem<Global>`), which does not say whose it is.
fn has_path(frame: &str) -> bool {
    let path = frame.split(" (").next().unwrap_or(frame);
    path.starts_with('<') || without_generics(path).contains("::")
}

/// A stack's label: its first frame outside the standard library that
/// names its path (else the first with a path, else the innermost),
/// without the file and line.
pub fn label(stack: &[String]) -> String {
    let frame = (stack.iter())
        .find(|f| has_path(f) && !is_library(f))
        .or_else(|| stack.iter().find(|f| has_path(f)))
        .or(stack.first());
    match frame {
        Some(frame) => frame.split(" (").next().unwrap_or(frame).to_owned(),
        None => "(stack unknown)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_live_core::samples::{write_samples, SamplesBatch, SiteSample};
    use typhon_live_core::{Payload, SamplesView};

    const SECOND: u64 = 1_000_000_000;

    /// Reads `sites` (id, frames, allocated, freed) through a Samples
    /// frame, as a stream would bring them.
    fn told(state: &mut MemoryState, time: u64, sites: &[(u32, &[NameId], u64, u64)]) {
        let samples: Vec<SiteSample<'_>> = sites
            .iter()
            .map(|&(site, frames, allocated, freed)| SiteSample {
                site,
                frames,
                totals: SiteTotals {
                    allocated,
                    freed,
                    allocations: allocated / 1000,
                    frees: freed / 1000,
                },
            })
            .collect();
        let batch = SamplesBatch {
            time,
            memory: Some(Memory {
                allocated: 1 << 30,
                freed: 1 << 29,
                sampling_mean: 512 << 10,
                sampled: 90,
                missed: 10,
            }),
            sites: &samples,
            ..SamplesBatch::default()
        };
        let mut out = vec![0u8; batch.max_frame_len()];
        let n = write_samples(&mut out, 0, &batch).unwrap();
        let mut buf = vec![0u8; 4096];
        let mut decoder = typhon_live_core::Decoder::new(&mut buf);
        decoder.feed(&out[..n]);
        let frame = decoder.next().unwrap().unwrap();
        let Ok(Payload::Samples(view)) = frame.parse() else {
            panic!("a Samples frame");
        };
        let view: SamplesView<'_> = view;
        state.read(time, view.memory.unwrap());
        for site in view.sites() {
            state.read_site(time, &site);
        }
    }

    fn names() -> Names {
        let mut names = Names::new();
        for (id, text) in [
            "alloc::raw_vec::RawVec<T>::grow_one (raw_vec.rs:1)",
            "demo::cache_replay_frame (demo.rs:120)",
            "demo::simulate (demo.rs:400)",
            "demo::load_level (demo.rs:50)",
        ]
        .iter()
        .enumerate()
        {
            names.define(id as u32, text);
        }
        names
    }

    #[test]
    fn sites_rank_by_what_they_hold_and_by_how_fast_it_grows() {
        let mut state = MemoryState::default();
        // Site 1 leaks 1 MB a second; site 2 holds 50 MB, flat.
        for second in 0..=10u64 {
            let leaked = second * 1_000_000;
            told(
                &mut state,
                second * SECOND,
                &[
                    (1, &[0, 1, 2], leaked + 100, 100),
                    (2, &[3, 2], 50_000_000, 0),
                ],
            );
        }
        let summary = state.summary(&names()).unwrap();
        assert_eq!(summary.live, 1 << 29);
        assert_eq!(summary.sampled_share, Some(0.9));
        let live: Vec<_> = summary.sites_by_live.iter().map(|s| s.site).collect();
        assert_eq!(live, [2, 1]);
        let growing = &summary.sites_by_growth;
        assert_eq!(growing.len(), 1, "the flat site does not grow");
        assert_eq!(growing[0].label, "demo::cache_replay_frame");
        assert_eq!(growing[0].growth_per_minute, 60_000_000);
        assert_eq!(growing[0].stack.len(), 3);
        assert_eq!(growing[0].live, 10_000_000);
    }

    #[test]
    fn growth_is_over_the_last_minute_and_a_site_past_the_cap_is_refused() {
        let mut state = MemoryState::default();
        // Grew for a minute, then flat for two: no longer growing.
        for second in 0..=180u64 {
            let live = second.min(60) * 1000;
            told(&mut state, second * SECOND, &[(1, &[1], live, 0)]);
        }
        let summary = state.summary(&names()).unwrap();
        assert!(summary.sites_by_growth.is_empty());
        assert!(state.sites[&1].readings.len() <= 2 * 60 + 2);

        for site in 0..MAX_SITES as u32 + 3 {
            told(&mut state, 200 * SECOND, &[(site, &[], 1, 0)]);
        }
        assert_eq!(state.sites.len(), MAX_SITES);
        assert_eq!(state.refused_sites, 3);
    }

    #[test]
    fn a_stream_s_memory_reaches_the_summary_and_the_history() {
        let mut model = crate::Model::default();
        typhon_live_tests::each_frame(&typhon_live_tests::memory_stream(), |frame| {
            model.on_frame(frame, std::time::Duration::ZERO).unwrap()
        });
        let summary = model.summary(std::time::Duration::ZERO);
        let memory = summary.memory.expect("memory told");
        assert_eq!(memory.live, 160_000_000);
        assert_eq!(memory.history.len(), 11);
        assert_eq!(memory.sampled_share, Some(1.0));
        let growing = &memory.sites_by_growth[0];
        assert_eq!(growing.label, "demo::cache_replay_frame");
        assert_eq!(growing.growth_per_minute, 60_000_000);
        assert_eq!(memory.sites_by_live[0].label, "demo::load_level");
        // Each reading is in the history too, for the timeline's strip.
        let chunks = model.history().chunks().iter().map(|c| &**c);
        let readings = chunks.chain([&model.chunk]).flat_map(|c| c.memory.iter());
        let times: Vec<u64> = readings.map(|r| r.time / SECOND).collect();
        assert_eq!(times, (0..=10).collect::<Vec<_>>());
    }

    #[test]
    fn bytes_read_in_binary_units() {
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(bytes(-3.0 * 1048576.0), "-3.0 MiB");
        assert_eq!(bytes(5.0 * 1073741824.0), "5.0 GiB");
    }

    #[test]
    fn a_label_is_the_first_frame_past_the_library() {
        let stack = |frames: &[&str]| frames.iter().map(|f| f.to_string()).collect::<Vec<_>>();
        assert_eq!(
            label(&stack(&[
                "alloc::vec::Vec::push (vec.rs:1)",
                "app::f (a.rs:2)"
            ])),
            "app::f"
        );
        assert_eq!(label(&stack(&["std::x"])), "std::x");
        // Methods of the library's types, or of primitives, are its; a
        // program's type is the program's whatever trait it implements.
        let demo = [
            "<alloc::alloc::Global>::grow_impl (alloc.rs:342)",
            "<u8 as alloc::vec::spec_from_elem::SpecFromElem>::from_elem (mod.rs:1)",
            "<alloc::vec::Vec<T> as core::clone::Clone>::clone (mod.rs:2)",
            "<app::Cache as core::default::Default>::default (app.rs:3)",
            "app::main (app.rs:4)",
        ];
        assert_eq!(
            label(&stack(&demo)),
            "<app::Cache as core::default::Default>::default"
        );
        // Inlined frames named without their path say nothing of whose
        // they are: the first frame with a path is the label.
        let inlined = [
            "with_capacity_in<u8, alloc::alloc::Global> (mod.rs:177)",
            "from_elem<alloc::alloc::Global> (spec_from_elem.rs:53)",
            "alloc::vec::from_elem (mod.rs:3651)",
            "demo::cache_replay_frame (demo.rs:122)",
            "simulate (demo.rs:442)",
        ];
        assert_eq!(label(&stack(&inlined)), "demo::cache_replay_frame");
        assert_eq!(label(&[]), "(stack unknown)");
    }
}
