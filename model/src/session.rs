//! The session and its connection: connecting, reconnecting, a new
//! session or a restart under the same one, and the host clock that the
//! view extrapolates while no event comes.

use std::time::Duration;

use serde::Serialize;
use typhon_live_reader::State;

use crate::history::Chunk;
use crate::marks::{MarkKind, Marks};
use crate::Model;

/// The connection, as the view reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Connection {
    /// Trying to connect.
    Connecting {
        /// Attempts so far, this one included.
        attempt: u32,
    },
    /// Receiving.
    Connected {
        /// The peer's address.
        peer: String,
    },
    /// The connection dropped; trying again.
    Reconnecting {
        /// Attempts so far, this one included.
        attempt: u32,
        /// How the connection dropped.
        reason: String,
    },
    /// The connection dropped; waiting before connecting again.
    Waiting {
        /// How the connection dropped.
        reason: String,
        /// The wait left before the next attempt.
        retry_in_ms: u64,
    },
    /// The session ended (Shutdown received, or gave up).
    Ended {
        /// Why.
        reason: String,
    },
    /// Read from a trace file.
    File {
        /// The file.
        path: String,
    },
}

impl Model {
    /// The connection was made again after one was lost: if the first
    /// time read on it is far behind, the process restarted meanwhile.
    pub fn reconnected(&mut self) {
        self.reader.reconnected();
        self.marks.add(self.host_now, MarkKind::Reconnect, 1);
    }

    /// A new session: what the model knew of the last one goes, but for
    /// the connection, the notice and what the caps kept out; its figures
    /// count from here.
    pub(crate) fn reset_session(&mut self, state: &State) {
        let keep = Model {
            connection: self.connection.clone(),
            refused: self.refused,
            notice: self.notice.take(),
            reader: std::mem::take(&mut self.reader),
            base: *state.tally(),
            ..Model::with_history(self.history_seconds, self.history_bytes)
        };
        *self = keep;
    }

    /// The process restarted without a new session id (the reader
    /// tells): the names and lanes of its Init stay; the time windows and
    /// the history start over.
    pub(crate) fn clock_went_back(&mut self, from: u64, to: u64, now: Duration) {
        self.notice = Some(format!(
            "restarted: the clock went back from {:.3} s to {:.3} s \
             under the same session id",
            self.seconds(from),
            self.seconds(to)
        ));
        self.host_now = to;
        self.host_now_at = Some(now);
        self.open_tasks.clear();
        self.field_owners.clear();
        self.logs.clear();
        // A site's id is its run's.
        self.memory.clear();
        self.ticks.clear();
        for lane in self.lanes.values_mut() {
            lane.child_time.clear();
        }
        // The timeline is by time: the old run's records would overlap
        // the new one's.
        self.history.clear();
        self.chunk = Chunk::default();
        self.marks = Marks::default();
        self.marks.add(to, MarkKind::Restart, 1);
    }

    pub(crate) fn advance_host_now(&mut self, time: u64, now: Duration) {
        if let Some(kind) = self.mark_pending.take() {
            self.marks.add(time, kind, 1);
        }
        if time > self.host_now {
            self.host_now = time;
            self.host_now_at = Some(now);
        }
    }

    /// The host clock now, extrapolated from the last time seen while the
    /// session is live.
    pub(crate) fn host_time(&self, now: Duration) -> u64 {
        match (self.host_now_at, &self.connection) {
            (Some(at), Connection::Connected { .. }) => {
                let elapsed = now.saturating_sub(at).as_nanos();
                self.host_now
                    .saturating_add(u64::try_from(elapsed).unwrap_or(u64::MAX))
            }
            _ => self.host_now,
        }
    }
}
