//! A source's ids (lanes, names) to the merged stream's, looked up for
//! every event, switch and record the relay passes on. A writer numbers
//! them densely from 0, so those below a bound are a table indexed by id:
//! a load, where a hash map costs a hash and a probe, which took a sixth
//! of the relay's instructions with SipHash. A peer picks its ids, so any
//! past the bound go to a hash map (foldhash), and neither grows past
//! what the bound and the merger's caps allow.

use std::collections::HashMap;

/// Ids below this are kept in the table: 4 096 entries, 32 KiB at most
/// for a name's, whatever a peer sends. typhon-live's lanes are numbered
/// below 1 024 and its names from 0.
const DENSE: u32 = 4096;

/// A map from a source's ids to the merged stream's.
#[derive(Clone, Debug)]
pub(crate) struct Ids<V> {
    dense: Vec<Option<V>>,
    sparse: HashMap<u32, V, foldhash::fast::RandomState>,
    len: usize,
}

impl<V> Default for Ids<V> {
    fn default() -> Self {
        Ids {
            dense: Vec::new(),
            sparse: HashMap::default(),
            len: 0,
        }
    }
}

impl<V: Copy> Ids<V> {
    /// What `id` maps to.
    #[inline]
    pub(crate) fn get(&self, id: impl Into<u32>) -> Option<V> {
        let id = id.into();
        if id < DENSE {
            self.dense.get(id as usize).copied().flatten()
        } else {
            self.sparse.get(&id).copied()
        }
    }

    /// Whether `id` is mapped.
    #[inline]
    pub(crate) fn contains(&self, id: impl Into<u32>) -> bool {
        self.get(id).is_some()
    }

    /// Maps `id` to `value`.
    pub(crate) fn insert(&mut self, id: impl Into<u32>, value: V) {
        let id = id.into();
        let old = if id < DENSE {
            let at = id as usize;
            if self.dense.len() <= at {
                self.dense.resize(at + 1, None);
            }
            self.dense[at].replace(value)
        } else {
            self.sparse.insert(id, value)
        };
        self.len += usize::from(old.is_none());
    }

    /// What `id` maps to, mapped to `make()` first if it is not.
    pub(crate) fn get_or_insert_with(&mut self, id: impl Into<u32>, make: impl FnOnce() -> V) -> V {
        let id = id.into();
        match self.get(id) {
            Some(value) => value,
            None => {
                let value = make();
                self.insert(id, value);
                value
            }
        }
    }

    /// Ids mapped.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Forgets every id.
    pub(crate) fn clear(&mut self) {
        self.dense.clear();
        self.sparse.clear();
        self.len = 0;
    }

    /// Every id and what it maps to, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, V)> + '_ {
        let dense =
            (self.dense.iter().enumerate()).filter_map(|(id, value)| Some((id as u32, (*value)?)));
        dense.chain(self.sparse.iter().map(|(&id, &value)| (id, value)))
    }

    /// Every value, in no order.
    pub(crate) fn values(&self) -> impl Iterator<Item = V> + '_ {
        self.iter().map(|(_, value)| value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_below_and_past_the_table_map_alike() {
        let mut ids: Ids<u16> = Ids::default();
        for id in [0u32, 7, DENSE - 1, DENSE, u32::MAX] {
            assert_eq!(ids.get(id), None);
            ids.insert(id, id as u16);
        }
        ids.insert(7u32, 70);
        assert_eq!(ids.len(), 5, "a second insert replaces");
        assert_eq!(ids.get(7u32), Some(70));
        assert_eq!(ids.get(DENSE), Some(DENSE as u16));
        assert_eq!(ids.get(u32::MAX), Some(u16::MAX));
        assert!(!ids.contains(8u32));
        assert_eq!(ids.get_or_insert_with(8u32, || 80), 80);
        assert_eq!(ids.get_or_insert_with(8u32, || 81), 80);
        let mut values: Vec<u16> = ids.values().collect();
        values.sort_unstable();
        assert_eq!(values, [0, 70, 80, 4095, 4096, u16::MAX]);
        // A peer's huge id costs a hash map entry, not a table that long.
        assert!(ids.dense.len() <= DENSE as usize);
        ids.clear();
        assert_eq!((ids.len(), ids.get(0u32)), (0, None));
    }
}
