//! The connections held at once, and which goes when a new one needs the
//! room: the one that has moved no byte, either way, for longest.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// When a connection last moved a byte, as ms since the table's epoch:
/// stamped by its reads and writes, read by the table and the idle
/// deadline.
#[derive(Clone, Debug)]
pub(crate) struct Progress {
    epoch: Instant,
    last_ms: Arc<AtomicU64>,
}

impl Progress {
    fn new(epoch: Instant) -> Self {
        let progress = Progress {
            epoch,
            last_ms: Arc::default(),
        };
        progress.stamp();
        progress
    }

    /// A byte moved now.
    pub(crate) fn stamp(&self) {
        let now = self.epoch.elapsed().as_millis() as u64;
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// How long ago a byte last moved.
    pub(crate) fn idle(&self) -> Duration {
        let now = self.epoch.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_ms.load(Ordering::Relaxed)))
    }

    fn last_ms(&self) -> u64 {
        self.last_ms.load(Ordering::Relaxed)
    }
}

struct Held {
    progress: Progress,
    evict: Arc<Notify>,
}

/// The connection table: at most `capacity` entries.
pub(crate) struct Table {
    capacity: usize,
    epoch: Instant,
    next_id: AtomicU64,
    held: Mutex<HashMap<u64, Held>>,
    evicted: AtomicU64,
}

/// A connection's place in the table, given up when dropped.
pub(crate) struct Entry {
    table: Arc<Table>,
    id: u64,
    /// Stamped by the connection's reads and writes.
    pub(crate) progress: Progress,
    /// Notified when the table evicts this connection.
    pub(crate) evict: Arc<Notify>,
}

impl Table {
    pub(crate) fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Table {
            capacity: capacity.max(1),
            epoch: Instant::now(),
            next_id: AtomicU64::new(0),
            held: Mutex::new(HashMap::new()),
            evicted: AtomicU64::new(0),
        })
    }

    /// A place for a new connection; when the table is full, the entry
    /// that has moved no byte for longest is told to go, and its place
    /// taken.
    pub(crate) fn admit(self: &Arc<Self>) -> Entry {
        let progress = Progress::new(self.epoch);
        let evict = Arc::new(Notify::new());
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.len() >= self.capacity {
            let idlest = held
                .iter()
                .min_by_key(|(id, h)| (h.progress.last_ms(), **id))
                .map(|(id, _)| *id);
            if let Some(victim) = idlest.and_then(|id| held.remove(&id)) {
                // A permit is stored if the connection is not waiting yet.
                victim.evict.notify_one();
                self.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        held.insert(
            id,
            Held {
                progress: progress.clone(),
                evict: Arc::clone(&evict),
            },
        );
        Entry {
            table: Arc::clone(self),
            id,
            progress,
            evict,
        }
    }

    /// Connections held now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.held.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Connections evicted so far.
    #[cfg(test)]
    pub(crate) fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        let mut held = self.table.held.lock().unwrap_or_else(|p| p.into_inner());
        held.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_evicts_the_entry_idle_longest_and_only_that() {
        let table = Table::new(3);
        let [a, b, c] = [(); 3].map(|()| table.admit());
        // Made idle for different times: b longest, then a; c just moved.
        b.progress.last_ms.store(0, Ordering::Relaxed);
        a.progress.last_ms.store(5, Ordering::Relaxed);
        c.progress.last_ms.store(50, Ordering::Relaxed);
        let d = table.admit();
        assert_eq!(table.len(), 3);
        assert_eq!(table.evicted(), 1);
        let told = |e: &Entry| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            rt.block_on(async {
                tokio::time::timeout(Duration::from_millis(20), e.evict.notified())
                    .await
                    .is_ok()
            })
        };
        assert!(told(&b), "the idlest is told to go");
        assert!(!told(&a) && !told(&c) && !told(&d));
        drop(b);
        assert_eq!(table.len(), 3, "an evicted entry's place is already taken");
        drop(a);
        assert_eq!(table.len(), 2);
    }
}
