//! A reader's state written back out as the start of a stream: an Init
//! and a Catch-up that a new reader can begin from (the relay's late
//! viewers, a browser's tabs, a flight recorder's captures).

use alloc::vec;
use alloc::vec::Vec;

use typhon_live_core::catchup::write_catchup_of;
use typhon_live_core::definitions::write_names;
use typhon_live_core::frame::OVERHEAD;
use typhon_live_core::init::write_init;
use typhon_live_core::{EncodeError, Metadata, NameId, NameSource, OpenLane};

use crate::names::Names;
use crate::state::State;

/// The clock of a written start: the reader holds every time in ns.
pub const START_TICKS_PER_SECOND: u64 = 1_000_000_000;

/// A stream start: its bytes, and the sequence number of the frame that
/// goes on from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Start {
    /// The frames.
    pub bytes: Vec<u8>,
    /// The number the next frame after them carries.
    pub next_seq: u32,
}

/// Ids `0..count` of a table: the Init's names.
struct Prefix<'a> {
    names: &'a Names,
    count: u32,
}

impl NameSource for Prefix<'_> {
    fn count(&self) -> u32 {
        self.count
    }

    fn get(&self, id: NameId) -> Option<&str> {
        self.names.get(id)
    }
}

impl State {
    /// This state as a stream start, its clock in ns, its first
    /// sequenced frame numbered `seq`:
    ///
    /// - an Init of the session, naming `seq`, with its lanes and the
    ///   names with ids from 0 up to the first id not known;
    /// - a Definitions frame (names only) for each further run of known
    ///   ids, so that an id the reader never learnt stays unknown (`#id`)
    ///   to the next reader too;
    /// - a Catch-up of the spans open at the latest time read.
    ///
    /// Before any Init, the session is 0 and the process unnamed.
    pub fn write_start(&self, seq: u32) -> Result<Start, EncodeError> {
        let session = self.session.as_ref();
        let meta = Metadata {
            ticks_per_second: START_TICKS_PER_SECOND,
            session_id: session.map_or(0, |s| s.id),
            process_name: session.map_or("", |s| s.process_name.as_str()),
            process_id: session.map_or(0, |s| s.process_id),
            created_unix_ns: session.map_or(0, |s| s.created_unix_ns),
            ..Metadata::default()
        };
        let runs = runs(&self.names);
        let mut out = vec![0u8; self.start_len_bound(runs.len())];
        let prefix = match runs.first() {
            Some(&(0, count)) => count,
            _ => 0,
        };
        let names = Prefix {
            names: &self.names,
            count: prefix,
        };
        let lanes = self.lanes.values().map(|lane| lane.info);
        let mut len = write_init(&mut out, seq, &meta, &names, lanes)?;
        let mut next = seq;
        for &(first, count) in runs.iter().filter(|&&(first, _)| first > 0) {
            len += write_names(&mut out[len..], next, &self.names, first, count)?;
            next = next.wrapping_add(1);
        }
        let lanes = self.lanes.values().map(|lane| OpenLane {
            info: lane.info,
            name: self.names.get(lane.info.name).unwrap_or(""),
            open_depth: lane.open_depth,
            open: &lane.open,
        });
        let now = self.latest.unwrap_or(0);
        len += write_catchup_of(&mut out[len..], next, now, lanes)?;
        out.truncate(len);
        Ok(Start {
            bytes: out,
            next_seq: next.wrapping_add(1),
        })
    }

    /// Room enough for every frame, each varint at its longest.
    fn start_len_bound(&self, runs: usize) -> usize {
        const VARINT: usize = 10;
        let names = self.names.len() * VARINT + self.names.bytes();
        let lane_names: usize = self
            .lanes
            .values()
            .map(|lane| self.names.get(lane.info.name).map_or(0, str::len))
            .sum();
        let lanes = self.lanes.len() * 5 * VARINT + lane_names;
        let open: usize = self.lanes.values().map(|l| l.open.len()).sum();
        let process = self.session.as_ref().map_or(0, |s| s.process_name.len());
        (runs + 2) * (OVERHEAD + 2 * VARINT + 5)
            + 64
            + process
            + 8 * (VARINT + 5)
            + names
            + 2 * lanes
            + open * 3 * VARINT
    }
}

/// The runs of consecutive ids in `names`: `(first, count)` each.
fn runs(names: &Names) -> Vec<(NameId, u32)> {
    let mut runs: Vec<(NameId, u32)> = Vec::new();
    for (id, _) in names.iter() {
        match runs.last_mut() {
            Some((first, count)) if first.wrapping_add(*count) == id => *count += 1,
            _ => runs.push((id, 1)),
        }
    }
    runs
}
