//! The exporter thread's reading of the process's memory (FORMAT.md,
//! "Samples"): the totals [`Tracking`](crate::Tracking) counts, and the
//! sampled allocation sites ([`allocation_sites`]), each site's stack
//! symbolized once by the [`Symbolizer`], its frames interned as names.
//! A site is told once its stack is.
//!
//! A site's totals are cumulative, and sent while they move and again
//! every [`ALL_EVERY`] when they do not: a reader that lost a frame, or
//! joined late, has every site's totals right within that time.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use typhon_live_core::{Memory, NameId, SiteSample, SiteTotals};

use crate::allocation_sites::{self, SiteCopy, MAX_SITES};
use crate::symbolizer::Symbolizer;
use crate::tracking;

/// How often the memory and the sites that moved are sent.
const EVERY: Duration = Duration::from_millis(100);
/// The site id of the symbolizer's first stack, its own: no site's.
const WARM_UP: u32 = u32::MAX;
/// How often every site is sent, moved or not.
pub(crate) const ALL_EVERY: Duration = Duration::from_secs(1);

/// What the exporter knows of the sites.
pub(crate) struct MemorySamples {
    next: Option<Instant>,
    next_all: Option<Instant>,
    /// The sites taken this time.
    taken: Vec<SiteCopy>,
    /// Each site's stack, as names, once symbolized.
    stacks: Vec<Option<Vec<NameId>>>,
    /// Sites whose stacks are being symbolized, with their last totals.
    waiting: HashMap<u32, SiteTotals>,
    /// Sites symbolized since the last take, with those totals.
    ready: Vec<(u32, SiteTotals)>,
    /// The symbolizer was asked for a stack of its own.
    warmed: bool,
    /// Sites due, ready to tell: their stacks' names are interned.
    due: Vec<(u32, SiteTotals)>,
    memory: Option<Memory>,
}

/// What one sample of the memory holds.
pub(crate) struct MemoryDue<'a> {
    pub(crate) memory: Memory,
    pub(crate) sites: Vec<SiteSample<'a>>,
}

impl MemorySamples {
    pub(crate) fn new() -> MemorySamples {
        MemorySamples {
            next: None,
            next_all: None,
            taken: Vec::with_capacity(MAX_SITES),
            stacks: Vec::new(),
            waiting: HashMap::new(),
            ready: Vec::new(),
            warmed: false,
            due: Vec::new(),
            memory: None,
        }
    }

    /// Takes, when due at `now`, the process's totals and the sites to
    /// tell whose stacks are symbolized: call it before the cycle's frames
    /// are written, so that their frames' names go out before them.
    pub(crate) fn take(&mut self, now: Instant, symbolizer: &mut Symbolizer) {
        if self.next.is_some_and(|next| now < next) {
            return;
        }
        self.next = Some(now + EVERY);
        if !tracking::counting() {
            // `Tracking` is not the global allocator: nothing to tell.
            return;
        }
        let totals = tracking::memory_totals();
        let all = self.next_all.is_none_or(|next| now >= next);
        if all {
            self.next_all = Some(now + ALL_EVERY);
        }
        if !self.warmed && allocation_sites::sampling_mean() != 0 {
            // Asked for a stack of its own before the first site: the
            // debug information loads while the first samples are taken,
            // not after.
            self.warmed = true;
            let here = MemorySamples::take as *const () as usize;
            symbolizer.ask_site(WARM_UP, vec![here]);
        }
        // The sites' lock is held while they are copied: nothing this
        // thread does meanwhile may be sampled, which would take it again.
        tracking::unsampled(|| allocation_sites::take_sites(all, &mut self.taken));
        self.due.clear();
        // Stacks symbolized since: their sites are told with their last
        // totals (none of them is told below).
        self.due.append(&mut self.ready);
        for site in &self.taken {
            let index = site.site as usize;
            if self.stacks.len() <= index {
                self.stacks.resize(index + 1, None);
            }
            if self.stacks[index].is_some() {
                self.due.push((site.site, site.totals));
            } else if self.waiting.insert(site.site, site.totals).is_none() {
                symbolizer.ask_site(site.site, site.addresses.to_vec());
            }
        }
        let (sampled, missed) = allocation_sites::sample_counts();
        self.memory = Some(Memory {
            allocated: totals.allocated,
            freed: totals.freed,
            sampling_mean: allocation_sites::sampling_mean(),
            sampled,
            missed,
        });
    }

    /// Site `site`'s stack, as the symbolizer answered.
    pub(crate) fn symbolized(&mut self, site: u32, stack: Vec<NameId>) {
        if let Some(slot) = self.stacks.get_mut(site as usize) {
            *slot = Some(stack);
        }
        if let Some(totals) = self.waiting.remove(&site) {
            self.ready.push((site, totals));
        }
    }

    /// What was taken, to tell once: the totals and the sites.
    pub(crate) fn due(&mut self) -> Option<MemoryDue<'_>> {
        let memory = self.memory.take()?;
        let stacks = &self.stacks;
        let sites = self
            .due
            .drain(..)
            .filter_map(|(site, totals)| {
                let frames = stacks.get(site as usize)?.as_deref()?;
                Some(SiteSample {
                    site,
                    frames,
                    totals,
                })
            })
            .collect();
        Some(MemoryDue { memory, sites })
    }
}
