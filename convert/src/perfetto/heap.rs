//! Allocation sites (FORMAT.md, "Samples", "Memory") as Perfetto heap
//! profile dumps: each dump a `ProfilePacket` of the process's sites'
//! cumulative totals, as heapprofd writes them, so that ui.perfetto.dev
//! shows its flame graph of what is held.
//!
//! The stream re-sends each site's totals while they change; a dump is
//! written at most once a second of the stream's clock, of every site
//! known, and once more at the end. Each dump carries the strings,
//! frames and callstacks it uses, so that it reads alone.

use std::collections::BTreeMap;

use typhon_live_core::{Memory, NameId, SiteTotals, SiteView};
use typhon_live_reader::Names;

use super::proto::{
    Callstack, HeapSample, InternedString, Mapping, ProcessHeapSamples, ProfileFrame, ProfilePacket,
};

/// Sites kept at most, as the view model keeps them.
pub const MAX_SITES: usize = 4096;
/// A dump at most this often, ns of the stream's clock.
const DUMP_EVERY: u64 = 1_000_000_000;
/// The one mapping every frame is in: the stream does not say which
/// binary a frame is in.
const MAPPING: u64 = 1;

/// What the writer knows of the sites since the session began.
#[derive(Default)]
pub(crate) struct HeapDumps {
    sites: BTreeMap<u32, (Vec<NameId>, SiteTotals)>,
    memory: Option<Memory>,
    /// A site moved since the last dump.
    moved: bool,
    last_dump: Option<u64>,
    index: u64,
    /// Sites not kept, past [`MAX_SITES`].
    pub(crate) refused: u64,
}

impl HeapDumps {
    /// A new session: its sites are another process's.
    pub(crate) fn clear(&mut self) {
        let (index, refused) = (self.index, self.refused);
        *self = HeapDumps {
            index,
            refused,
            ..HeapDumps::default()
        };
    }

    pub(crate) fn memory(&mut self, memory: Memory) {
        self.memory = Some(memory);
    }

    pub(crate) fn site(&mut self, site: &SiteView<'_>) {
        if !self.sites.contains_key(&site.site) && self.sites.len() >= MAX_SITES {
            self.refused += 1;
            return;
        }
        self.sites
            .insert(site.site, (site.frames.iter().collect(), site.totals));
        self.moved = true;
    }

    /// A dump of every site at `time`, if one moved and the last dump is
    /// a second old (or `now_anyway`: the stream ended).
    pub(crate) fn dump(
        &mut self,
        time: u64,
        pid: u32,
        names: &Names,
        now_anyway: bool,
    ) -> Option<ProfilePacket> {
        // A peer's times may be anything: sums saturate.
        let due = (self.last_dump).is_none_or(|last| time >= last.saturating_add(DUMP_EVERY));
        if !self.moved || !(due || now_anyway) {
            return None;
        }
        self.moved = false;
        self.last_dump = Some(time);
        // Strings and frames by name id (+ 1: iids start at 1), the
        // mapping's name last.
        let mut strings: BTreeMap<NameId, ()> = BTreeMap::new();
        let mut callstacks = Vec::with_capacity(self.sites.len());
        let mut samples = Vec::with_capacity(self.sites.len());
        for (&site, (frames, totals)) in &self.sites {
            strings.extend(frames.iter().map(|&f| (f, ())));
            let iid = u64::from(site) + 1;
            callstacks.push(Callstack {
                iid: Some(iid),
                // Outermost first, as Perfetto reads them.
                frame_ids: frames.iter().rev().map(|&f| u64::from(f) + 1).collect(),
            });
            samples.push(HeapSample {
                callstack_id: Some(iid),
                self_allocated: Some(totals.allocated),
                self_freed: Some(totals.freed),
                alloc_count: Some(totals.allocations),
                free_count: Some(totals.frees),
            });
        }
        let mapping_name = strings
            .keys()
            .next_back()
            .map_or(1, |&last| u64::from(last) + 2);
        let mut interned: Vec<InternedString> = (strings.keys())
            .map(|&id| InternedString {
                iid: Some(u64::from(id) + 1),
                str: Some(names.show(id).into_owned().into_bytes()),
            })
            .collect();
        let frames = (strings.keys())
            .map(|&id| ProfileFrame {
                iid: Some(u64::from(id) + 1),
                function_name_id: Some(u64::from(id) + 1),
                mapping_id: Some(MAPPING),
                rel_pc: Some(0),
            })
            .collect();
        interned.push(InternedString {
            iid: Some(mapping_name),
            str: Some(b"typhon-live sampled allocations".to_vec()),
        });
        let index = self.index;
        self.index += 1;
        Some(ProfilePacket {
            strings: interned,
            frames,
            callstacks,
            mappings: vec![Mapping {
                iid: Some(MAPPING),
                path_string_ids: vec![mapping_name],
            }],
            process_dumps: vec![ProcessHeapSamples {
                pid: Some(u64::from(pid)),
                samples,
                timestamp: Some(time),
                heap_name: Some("malloc".into()),
                sampling_interval_bytes: self.memory.map(|m| m.sampling_mean),
            }],
            continued: Some(false),
            index: Some(index),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumps_at_a_peers_last_times_do_not_overflow() {
        let mut heap = HeapDumps::default();
        let names = Names::new();
        heap.moved = true;
        assert!(heap.dump(u64::MAX - 1, 1, &names, false).is_some());
        // A second after the last is past the clock's end: the bound
        // saturates, and the next dump is due at once.
        heap.moved = true;
        assert!(heap.dump(u64::MAX, 1, &names, false).is_some());
        assert_eq!(heap.index, 2);
    }
}
