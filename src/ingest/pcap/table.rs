//! The table of live connections: key → slot in one hash lookup, the values in a slab,
//! and the slots threaded on a doubly linked list in order of last use, so that
//! marking a connection used and finding the least recently used one are each a few
//! index writes. Written here because the LRU crates either key their order by a
//! second hash lookup per use or do not let a value be taken out while its slot keeps
//! its place (the reader needs both: a connection is worked on outside the table).

use foldhash::{HashMap, HashMapExt};
use std::hash::Hash;

/// No slot: the end of the list.
const NIL: u32 = u32::MAX;

struct Slot<K, V> {
    key: K,
    /// `None` while the value is out for work (`take`), or when the slot is free.
    value: Option<V>,
    /// Neighbours in recency order (`prev` is less recent).
    prev: u32,
    next: u32,
}

pub(super) struct Table<K, V> {
    index: HashMap<K, u32>,
    slots: Vec<Slot<K, V>>,
    /// Slots of removed entries, for reuse.
    free: Vec<u32>,
    /// Least and most recently used slots.
    oldest: u32,
    newest: u32,
}

impl<K: Copy + Hash + Eq, V> Table<K, V> {
    pub(super) fn new() -> Self {
        Table {
            index: HashMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            oldest: NIL,
            newest: NIL,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.index.len()
    }

    pub(super) fn find(&self, key: &K) -> Option<u32> {
        self.index.get(key).copied()
    }

    pub(super) fn get(&self, slot: u32) -> Option<&V> {
        self.slots.get(slot as usize)?.value.as_ref()
    }

    /// Adds `key` as the most recently used entry; the caller has checked that it
    /// is not in the table.
    pub(super) fn insert(&mut self, key: K, value: V) -> u32 {
        let slot = match self.free.pop() {
            Some(s) => {
                if let Some(x) = self.slots.get_mut(s as usize) {
                    x.key = key;
                    x.value = Some(value);
                }
                s
            }
            None => {
                self.slots.push(Slot {
                    key,
                    value: Some(value),
                    prev: NIL,
                    next: NIL,
                });
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(key, slot);
        self.link_newest(slot);
        slot
    }

    /// Takes the value out to be worked on; the slot keeps its key and its place.
    pub(super) fn take(&mut self, slot: u32) -> Option<V> {
        self.slots.get_mut(slot as usize)?.value.take()
    }

    /// Puts a taken value back and marks it the most recently used.
    pub(super) fn put_back(&mut self, slot: u32, value: V) {
        if let Some(x) = self.slots.get_mut(slot as usize) {
            x.value = Some(value);
        }
        self.unlink(slot);
        self.link_newest(slot);
    }

    /// Puts a taken value back where it was in the order of use: work that no
    /// packet of its own caused.
    pub(super) fn restore(&mut self, slot: u32, value: V) {
        if let Some(x) = self.slots.get_mut(slot as usize) {
            x.value = Some(value);
        }
    }

    /// Every value not out for work, with its slot, in slot order.
    pub(super) fn values(&self) -> impl Iterator<Item = (u32, &V)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i as u32, s.value.as_ref()?)))
    }

    /// Removes the entry in `slot`, returning its value unless it is out for work.
    pub(super) fn remove(&mut self, slot: u32) -> Option<V> {
        let x = self.slots.get_mut(slot as usize)?;
        let value = x.value.take();
        let key = x.key;
        self.index.remove(&key);
        self.unlink(slot);
        self.free.push(slot);
        value
    }

    /// Removes the least recently used entry.
    pub(super) fn pop_oldest(&mut self) -> Option<V> {
        match self.oldest {
            NIL => None,
            slot => self.remove(slot),
        }
    }

    /// Empties the table, values in no particular order.
    pub(super) fn drain(&mut self) -> Vec<V> {
        self.index.clear();
        self.free.clear();
        self.oldest = NIL;
        self.newest = NIL;
        self.slots.drain(..).filter_map(|s| s.value).collect()
    }

    fn unlink(&mut self, slot: u32) {
        let Some(x) = self.slots.get(slot as usize) else {
            return;
        };
        let (prev, next) = (x.prev, x.next);
        match self.slots.get_mut(prev as usize) {
            Some(p) => p.next = next,
            None => self.oldest = next,
        }
        match self.slots.get_mut(next as usize) {
            Some(n) => n.prev = prev,
            None => self.newest = prev,
        }
        if let Some(x) = self.slots.get_mut(slot as usize) {
            x.prev = NIL;
            x.next = NIL;
        }
    }

    fn link_newest(&mut self, slot: u32) {
        let newest = self.newest;
        if let Some(x) = self.slots.get_mut(slot as usize) {
            x.prev = newest;
            x.next = NIL;
        }
        match self.slots.get_mut(newest as usize) {
            Some(n) => n.next = slot,
            None => self.oldest = slot,
        }
        self.newest = slot;
    }

    #[cfg(test)]
    fn order(&self) -> Vec<K> {
        let mut out = Vec::new();
        let mut s = self.oldest;
        while let Some(x) = self.slots.get(s as usize) {
            out.push(x.key);
            s = x.next;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone)]
    enum Op {
        Use(u8),
        Remove(u8),
        PopOldest,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..24).prop_map(Op::Use),
            1 => (0u8..24).prop_map(Op::Remove),
            1 => Just(Op::PopOldest),
        ]
    }

    proptest! {
        /// The table against a plain model: a map of key → last use, the least
        /// recent being the smallest. Any slip in the list (a stale neighbour, a
        /// reused slot still linked) shows as a different order or a lost entry.
        #[test]
        fn keeps_recency_order_like_a_map_of_last_use(ops in prop::collection::vec(op(), 0..300)) {
            let mut t: Table<u8, u32> = Table::new();
            let mut model: BTreeMap<u8, (u64, u32)> = BTreeMap::new();
            let mut clock = 0u64;
            for (n, o) in ops.into_iter().enumerate() {
                let n = n as u32;
                clock += 1;
                match o {
                    Op::Use(k) => {
                        match t.find(&k) {
                            Some(s) => {
                                let v = t.take(s).expect("present");
                                prop_assert_eq!(Some(&v), model.get(&k).map(|m| &m.1));
                                prop_assert!(t.get(s).is_none(), "out for work");
                                t.put_back(s, n);
                            }
                            None => {
                                t.insert(k, n);
                            }
                        }
                        model.insert(k, (clock, n));
                    }
                    Op::Remove(k) => {
                        let got = t.find(&k).and_then(|s| t.remove(s));
                        prop_assert_eq!(got, model.remove(&k).map(|m| m.1));
                    }
                    Op::PopOldest => {
                        let want = model.iter().min_by_key(|(_, m)| m.0).map(|(k, m)| (*k, m.1));
                        if let Some((k, _)) = want {
                            model.remove(&k);
                        }
                        prop_assert_eq!(t.pop_oldest(), want.map(|w| w.1));
                    }
                }
                let mut by_use: Vec<(u64, u8)> = model.iter().map(|(k, m)| (m.0, *k)).collect();
                by_use.sort_unstable();
                let want: Vec<u8> = by_use.into_iter().map(|(_, k)| k).collect();
                prop_assert_eq!(t.order(), want);
                prop_assert_eq!(t.len(), model.len());
            }
            let mut left = t.drain();
            left.sort_unstable();
            let mut want: Vec<u32> = model.values().map(|m| m.1).collect();
            want.sort_unstable();
            prop_assert_eq!(left, want);
            prop_assert_eq!(t.len(), 0);
            prop_assert!(t.pop_oldest().is_none());
        }
    }

    #[test]
    fn a_slot_reused_after_removal_starts_as_the_newest() {
        let mut t: Table<u8, &str> = Table::new();
        let a = t.insert(1, "a");
        t.insert(2, "b");
        t.insert(3, "c");
        assert_eq!(t.remove(a), Some("a"));
        let d = t.insert(4, "d");
        assert_eq!(d, a, "the freed slot is reused");
        assert_eq!(t.order(), vec![2, 3, 4]);
        assert_eq!(t.pop_oldest(), Some("b"));
        assert_eq!(t.find(&2), None);
        assert_eq!(t.order(), vec![3, 4]);
    }
}
