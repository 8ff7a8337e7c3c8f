//! A reader's state written back out as the start of a stream: an Init
//! and a Catch-up that a new reader can begin from (the relay's late
//! viewers, a browser's tabs, a flight recorder's captures).

use alloc::vec;
use alloc::vec::Vec;

use typhon_live_core::catchup::write_catchup_of;
use typhon_live_core::definitions::write_names;
use typhon_live_core::frame::OVERHEAD;
use typhon_live_core::init::write_init;
use typhon_live_core::{EncodeError, Metadata, NameId, NameSource, OpenLane, OpenSpan};

use crate::clock::Clock;
use crate::names::Names;
use crate::state::{Lane, Session, State};

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
        let lanes: Vec<&Lane> = self.lanes.values().collect();
        write_start(
            self.session.as_ref(),
            Clock::NS,
            &self.names,
            &lanes,
            self.latest.unwrap_or(0),
            seq,
        )
    }

    /// What a stream start needs of this state besides its names, kept
    /// to be written later: a flight recorder's window starts. Costs a
    /// copy of the lane table, not of the names.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            session: self.session.clone(),
            clock: self.clock,
            lanes: self.lanes.values().cloned().collect(),
            time: self.latest.unwrap_or(0),
        }
    }
}

/// A state's session, lanes and open spans at a point of its stream,
/// without its names (see [`State::checkpoint`]). Names only grow within
/// a session, so the names a reader knows later, of the same session,
/// resolve every id the stream used at that point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    session: Option<Session>,
    clock: Clock,
    lanes: Vec<Lane>,
    time: u64,
}

impl Checkpoint {
    /// The latest time read when it was taken, ns.
    pub fn time(&self) -> u64 {
        self.time
    }

    /// The session it was taken in.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// Written out as [`State::write_start`] would have written the
    /// state then, with `names` (of the same session, known since), but
    /// in the session's own clock: so that the stream's frames after
    /// that point can follow it as they were received (a capture).
    pub fn write_start(&self, names: &Names, seq: u32) -> Result<Start, EncodeError> {
        let lanes: Vec<&Lane> = self.lanes.iter().collect();
        write_start(
            self.session.as_ref(),
            self.clock,
            names,
            &lanes,
            self.time,
            seq,
        )
    }
}

/// The start, its times written in `clock`'s ticks (the state holds ns).
fn write_start(
    session: Option<&Session>,
    clock: Clock,
    names: &Names,
    lanes: &[&Lane],
    now: u64,
    seq: u32,
) -> Result<Start, EncodeError> {
    let meta = Metadata {
        ticks_per_second: clock.ticks_per_second(),
        session_id: session.map_or(0, |s| s.id),
        process_name: session.map_or("", |s| s.process_name.as_str()),
        process_id: session.map_or(0, |s| s.process_id),
        created_unix_ns: session.map_or(0, |s| s.created_unix_ns),
        ..Metadata::default()
    };
    let runs = runs(names);
    let mut out = vec![0u8; start_len_bound(session, names, lanes, runs.len())];
    let prefix = match runs.first() {
        Some(&(0, count)) => count,
        _ => 0,
    };
    let prefix = Prefix {
        names,
        count: prefix,
    };
    let infos = lanes.iter().map(|lane| lane.info);
    let mut len = write_init(&mut out, seq, &meta, &prefix, infos)?;
    let mut next = seq;
    for &(first, count) in runs.iter().filter(|&&(first, _)| first > 0) {
        len += write_names(&mut out[len..], next, names, first, count)?;
        next = next.wrapping_add(1);
    }
    let in_ticks: Vec<Vec<OpenSpan>> = lanes
        .iter()
        .map(|lane| {
            let ticks = |open: &OpenSpan| OpenSpan {
                start: clock.ticks(open.start),
                ..*open
            };
            lane.open.iter().map(ticks).collect()
        })
        .collect();
    let open = lanes.iter().zip(&in_ticks).map(|(lane, open)| OpenLane {
        info: lane.info,
        name: names.get(lane.info.name).unwrap_or(""),
        open_depth: lane.open_depth,
        open,
    });
    len += write_catchup_of(&mut out[len..], next, clock.ticks(now), open)?;
    out.truncate(len);
    Ok(Start {
        bytes: out,
        next_seq: next.wrapping_add(1),
    })
}

/// Room enough for every frame, each varint at its longest.
fn start_len_bound(
    session: Option<&Session>,
    names: &Names,
    lanes: &[&Lane],
    runs: usize,
) -> usize {
    const VARINT: usize = 10;
    let name_bytes = names.len() * VARINT + names.bytes();
    let lane_names: usize = lanes
        .iter()
        .map(|lane| names.get(lane.info.name).map_or(0, str::len))
        .sum();
    let lane_bytes = lanes.len() * 5 * VARINT + lane_names;
    let open: usize = lanes.iter().map(|l| l.open.len()).sum();
    let process = session.map_or(0, |s| s.process_name.len());
    (runs + 2) * (OVERHEAD + 2 * VARINT + 5)
        + 64
        + process
        + 8 * (VARINT + 5)
        + name_bytes
        + 2 * lane_bytes
        + open * 3 * VARINT
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
