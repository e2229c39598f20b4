//! The kept encoder states of an adapter, one per chain (a run's rounds), least recently used
//! first out. `anthropic` and `openai` reuse a chain's earlier work through one of these.
//!
//! Each item carries the [`ChainMark`] of the encode that last used it, so a request that
//! continues that encode (on the caller's word, [`crate::Continues`]) finds it without
//! comparing entries ([`Slots::take_marked`]).
//!
//! An item is taken out while it is used, so concurrent encodes never share one, and put back
//! afterwards; what its return evicts is handed back to be freed outside the lock.

use std::sync::Mutex;

use crate::provider::ChainMark;

/// What a kept item reports about itself.
pub(crate) trait Kept {
    /// How many entries it has encoded (longer items are tried first).
    fn entries(&self) -> usize;
    /// The bytes it holds (bounded over all items).
    fn bytes(&self) -> usize;
    /// The mark of the encode that last used it, if it has one.
    fn mark(&self) -> Option<ChainMark> {
        None
    }
}

/// At most `max_items` items holding at most `max_bytes`.
pub(crate) struct Slots<T> {
    /// Least recently used first.
    items: Mutex<Vec<T>>,
    max_items: usize,
    max_bytes: usize,
    /// How many items [`Slots::take_marked`] has handed out.
    #[cfg(test)]
    pub(crate) taken_by_mark: std::sync::atomic::AtomicUsize,
}

impl<T: Kept> Slots<T> {
    pub(crate) fn new(max_items: usize, max_bytes: usize) -> Self {
        Self {
            items: Mutex::new(Vec::new()),
            max_items,
            max_bytes,
            #[cfg(test)]
            taken_by_mark: Default::default(),
        }
    }

    /// How many items are kept.
    pub(crate) fn len(&self) -> usize {
        self.items.lock().map_or(0, |s| s.len())
    }

    /// Removes and returns the item with the most entries that `fits`. Items are tried longest
    /// first, so at most one full comparison succeeds.
    pub(crate) fn take(&self, fits: impl Fn(&T) -> bool) -> Option<T> {
        let mut items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(items[i].entries()));
        let best = order.into_iter().find(|&i| fits(&items[i]))?;
        Some(items.remove(best))
    }

    /// `f` of the kept items, least recently used first.
    #[cfg(test)]
    pub(crate) fn inspect<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        f(&self.items.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Removes and returns the item marked `mark`, if `fits` it (one check, of one item).
    pub(crate) fn take_marked(&self, mark: ChainMark, fits: impl Fn(&T) -> bool) -> Option<T> {
        let mut items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        let at = items.iter().rposition(|i| i.mark() == Some(mark))?;
        if !fits(&items[at]) {
            return None;
        }
        #[cfg(test)]
        self.taken_by_mark.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(items.remove(at))
    }

    /// Puts `item` back as the most recently used (unless it alone exceeds `max_bytes`);
    /// returns what this evicts, least recently used first, for the caller to free outside
    /// the lock.
    pub(crate) fn keep(&self, item: T) -> Vec<T> {
        if item.bytes() > self.max_bytes {
            return vec![item];
        }
        let mut items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        items.push(item);
        let mut kept: usize = items.iter().map(Kept::bytes).sum();
        let mut evict = 0;
        while items.len() - evict > self.max_items || kept > self.max_bytes {
            kept -= items[evict].bytes();
            evict += 1;
        }
        items.drain(..evict).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Item(usize, usize, ChainMark);

    fn item(entries: usize, bytes: usize) -> Item {
        Item(entries, bytes, ChainMark::fresh())
    }

    impl Kept for Item {
        fn entries(&self) -> usize {
            self.0
        }
        fn bytes(&self) -> usize {
            self.1
        }
        fn mark(&self) -> Option<ChainMark> {
            Some(self.2)
        }
    }

    #[test]
    fn longest_fit_first_and_bounded() {
        let slots = Slots::new(3, 100);
        for (n, bytes) in [(1, 10), (5, 10), (3, 10)] {
            assert!(slots.keep(item(n, bytes)).is_empty());
        }
        assert_eq!(slots.take(|i| i.0 <= 4).map(|i| i.0), Some(3));
        assert_eq!(slots.take(|i| i.0 > 9).map(|i| i.0), None);
        assert!(slots.keep(item(3, 10)).is_empty());
        let evicted = slots.keep(item(7, 10));
        assert_eq!(
            evicted.iter().map(|i| i.0).collect::<Vec<_>>(),
            [1],
            "the least recently used"
        );
        let evicted = slots.keep(item(8, 85));
        assert_eq!(evicted.iter().map(|i| i.0).collect::<Vec<_>>(), [5, 3], "bytes bound");
        assert_eq!(slots.keep(item(9, 101)).len(), 1, "too big to keep");
        assert_eq!(slots.len(), 2);
    }

    #[test]
    fn a_marked_item_is_found_by_its_mark_only_if_it_fits() {
        let slots = Slots::new(3, 100);
        let (a, b) = (item(1, 10), item(2, 10));
        let (mark_a, mark_b) = (a.2, b.2);
        slots.keep(a);
        slots.keep(b);
        assert!(
            slots.take_marked(ChainMark::fresh(), |_| true).is_none(),
            "an unknown mark"
        );
        assert!(
            slots.take_marked(mark_a, |i| i.0 > 1).is_none(),
            "found but not fitting"
        );
        assert_eq!(slots.len(), 2, "a refused item stays");
        assert_eq!(slots.take_marked(mark_a, |_| true).map(|i| i.0), Some(1));
        assert_eq!(slots.take_marked(mark_b, |_| true).map(|i| i.0), Some(2));
        assert_eq!(slots.len(), 0);
    }
}
