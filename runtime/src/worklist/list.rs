//! [`Worklist`]: a bounded list of `u32` items that tasks push to
//! concurrently, which never drops an item and never writes out of bounds.
//!
//! A push reserves a slot with one atomic add on the list's counter. When
//! the slot lies past the capacity the item goes into the *spill bitmap*
//! instead (one bit per element of the universe), so a full list loses
//! nothing: the driver grows it ([`Worklist::grow`]), which moves the
//! spilled items in, and the round's output is exactly what a large enough
//! list would have held (as a set). The counter keeps counting past the
//! capacity, so [`Worklist::needed`] tells the driver how much room the
//! round wanted.
//!
//! With deduplication ([`Worklist::new_dedup`]) a second bitmap remembers
//! which items were pushed since the last [`Worklist::clear`]; a push of one
//! of them is skipped (one atomic `or` on the bitmap word per push).
//!
//! ```
//! use warpfit_runtime::worklist::Worklist;
//!
//! let mut wl = Worklist::new(10, 2)?; // items 0..10, room for 2
//! for item in [7, 3, 9] {
//!     wl.push(item).unwrap();
//! }
//! assert!(wl.overflowed()); // 9 was spilled, not dropped
//! assert_eq!(wl.needed(), 3);
//! wl.grow(4)?;
//! assert_eq!(wl.items(), [7, 3, 9]);
//! assert!(wl.push(10).is_err()); // outside the universe
//! # Ok::<(), warpfit_runtime::Error>(())
//! ```

use crate::{mem, Error, Result};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// A push that could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PushError {
    /// The item is not an element of the list's universe.
    #[error("pushed item {item} is outside the worklist's universe 0..{universe}")]
    OutOfUniverse { item: u32, universe: usize },
}

impl From<PushError> for Error {
    fn from(e: PushError) -> Self {
        match e {
            PushError::OutOfUniverse { item, universe } => {
                Error::out_of_range("item pushed to a worklist", item, universe)
            }
        }
    }
}

/// [`Worklist::take_fault`]'s "no fault" value (items are `u32`).
const NO_FAULT: u64 = u64::MAX;

/// The default initial capacity of a list over `universe` elements: a
/// fifth of the universe (at least 1), the starting point the growth
/// protocol doubles from.
pub fn default_capacity(universe: usize) -> usize {
    (universe / 5).max(1)
}

/// A bounded list of `u32` items from `0..universe`, pushed to
/// concurrently. A push past the capacity goes into a spill bitmap instead
/// of being dropped; [`Worklist::grow`] moves the spilled items in.
pub struct Worklist {
    universe: usize,
    /// Stored items: slots `0..min(count, capacity)`.
    slots: Box<[AtomicU32]>,
    /// Pushes since the last clear (stored + spilled); the next free slot.
    count: AtomicUsize,
    /// One bit per universe element: items pushed when the list was full.
    spill: Box<[AtomicU64]>,
    /// One bit per universe element: items pushed since the last clear
    /// (deduplicating lists only).
    seen: Option<Box<[AtomicU64]>>,
    /// The first item pushed outside the universe, or [`NO_FAULT`].
    fault: AtomicU64,
}

impl std::fmt::Debug for Worklist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worklist")
            .field("universe", &self.universe)
            .field("capacity", &self.capacity())
            .field("needed", &self.needed())
            .field("dedup", &self.dedup())
            .finish_non_exhaustive()
    }
}

/// `count` zeroed atomics, checked against the memory budget first.
fn zeroed<A>(what: &str, count: usize, zero: impl Fn() -> A) -> Result<Box<[A]>> {
    let mut v = Vec::new();
    mem::try_reserve(&mut v, count, what)?;
    v.resize_with(count, zero);
    Ok(v.into_boxed_slice())
}

fn bitmap(what: &str, universe: usize) -> Result<Box<[AtomicU64]>> {
    zeroed(what, universe.div_ceil(64), || AtomicU64::new(0))
}

impl Worklist {
    /// An empty list over items `0..universe` with room for `capacity`
    /// items. Allocates `capacity` slots and a spill bitmap of `universe`
    /// bits, both checked against the memory budget.
    ///
    /// # Errors
    /// `universe` exceeds `u32::MAX + 1` (items are `u32`), or the memory
    /// does not fit the budget.
    pub fn new(universe: usize, capacity: usize) -> Result<Self> {
        if universe as u64 > u64::from(u32::MAX) + 1 {
            return Err(Error::invalid(format!(
                "worklist universe {universe} is larger than the u32 items can name (2^32)"
            )));
        }
        Ok(Worklist {
            universe,
            slots: zeroed("worklist items", capacity, || AtomicU32::new(0))?,
            count: AtomicUsize::new(0),
            spill: bitmap("worklist spill bitmap", universe)?,
            seen: None,
            fault: AtomicU64::new(NO_FAULT),
        })
    }

    /// As [`Worklist::new`], deduplicating: a push of an item already
    /// pushed since the last [`clear`](Self::clear) is skipped. Costs a
    /// second bitmap of `universe` bits and an atomic `or` per push.
    pub fn new_dedup(universe: usize, capacity: usize) -> Result<Self> {
        let mut wl = Self::new(universe, capacity)?;
        wl.seen = Some(bitmap("worklist dedup bitmap", universe)?);
        Ok(wl)
    }

    /// Items this list can store before it spills.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The items are `0..universe`.
    pub fn universe(&self) -> usize {
        self.universe
    }

    /// Whether the list deduplicates its pushes.
    pub fn dedup(&self) -> bool {
        self.seen.is_some()
    }

    /// Items stored (at most the capacity).
    pub fn len(&self) -> usize {
        self.needed().min(self.capacity())
    }

    /// Whether nothing was pushed since the last clear.
    pub fn is_empty(&self) -> bool {
        self.needed() == 0
    }

    /// Pushes since the last clear, stored or spilled (a deduplicating
    /// list counts the pushes it did not skip): the capacity that would
    /// have held them all.
    pub fn needed(&self) -> usize {
        self.count.load(Relaxed)
    }

    /// Whether some pushed items are in the spill bitmap, not the list.
    pub fn overflowed(&self) -> bool {
        self.needed() > self.capacity()
    }

    /// The stored items, in the order their slots were reserved. Needs the
    /// list exclusively: a push in flight on another thread may still be
    /// writing a slot it reserved (see [`Worklist::get`] for shared access).
    pub fn items(&mut self) -> &[u32] {
        let len = self.len();
        // SAFETY: `AtomicU32` has `u32`'s layout, and `&mut self` rules out
        // any concurrent (atomic) access while the plain view lives.
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr().cast::<u32>(), len) }
    }

    /// Stored item `i` (a `Relaxed` load), or `None` past [`len`](Self::len).
    /// Usable while other tasks push: they only write slots past the length
    /// they saw, and a slot reserved but not yet written reads as an
    /// earlier value, so read between rounds for exact contents.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u32> {
        (i < self.len()).then(|| self.slots[i].load(Relaxed))
    }

    /// Stored item `i < len()` (a `Relaxed` load), for executors that
    /// read a frontier while other lists are pushed to.
    #[inline]
    pub(crate) fn slot(&self, i: usize) -> u32 {
        self.slots[i].load(Relaxed)
    }

    /// Pushes `item`: stores it, or spills it into the bitmap when the list
    /// is full (never dropped, never written out of bounds), or skips it
    /// when deduplicating and it was pushed already.
    ///
    /// # Errors
    /// `item >= universe`: nothing is pushed, and the item is also recorded
    /// for [`take_fault`](Self::take_fault).
    #[inline]
    pub fn push(&self, item: u32) -> Result<(), PushError> {
        let i = item as usize;
        if i >= self.universe {
            let _ = self
                .fault
                .compare_exchange(NO_FAULT, u64::from(item), Relaxed, Relaxed);
            return Err(PushError::OutOfUniverse {
                item,
                universe: self.universe,
            });
        }
        let (word, bit) = (i / 64, 1u64 << (i % 64));
        if let Some(seen) = &self.seen {
            // Read first: an item pushed already costs no write to the line.
            if seen[word].load(Relaxed) & bit != 0 || seen[word].fetch_or(bit, Relaxed) & bit != 0 {
                return Ok(());
            }
        }
        let slot = self.count.fetch_add(1, Relaxed);
        match self.slots.get(slot) {
            Some(s) => s.store(item, Relaxed),
            None => {
                self.spill[word].fetch_or(bit, Relaxed);
            }
        }
        Ok(())
    }

    /// The first item pushed outside the universe since the last call (or
    /// `clear`), as the error its push returned; `None` when every push
    /// was valid.
    pub fn take_fault(&self) -> Option<PushError> {
        let f = self.fault.swap(NO_FAULT, Relaxed);
        (f != NO_FAULT).then_some(PushError::OutOfUniverse {
            item: f as u32,
            universe: self.universe,
        })
    }

    /// Items in the spill bitmap (distinct items, not pushes).
    pub fn spilled(&self) -> usize {
        if !self.overflowed() {
            return 0;
        }
        self.spill
            .iter()
            .map(|w| w.load(Relaxed).count_ones() as usize)
            .sum()
    }

    /// Grows the storage to `capacity` slots, keeping the stored items,
    /// then moves spilled items in (ascending) while they fit. With
    /// `capacity >= needed()` the list afterwards holds exactly the items
    /// pushed (as a set), as a list preallocated that large would; with
    /// less, the items that still do not fit stay spilled and
    /// [`overflowed`](Self::overflowed) stays true.
    ///
    /// # Errors
    /// `capacity` is below the current capacity, or the memory does not fit
    /// the budget (the list is unchanged then).
    pub fn grow(&mut self, capacity: usize) -> Result<()> {
        if capacity < self.capacity() {
            return Err(Error::invalid(format!(
                "a worklist grows, it does not shrink: capacity {capacity} < {}",
                self.capacity()
            )));
        }
        let len = self.len();
        let overflowed = self.overflowed();
        let mut slots = Vec::new();
        mem::try_reserve(&mut slots, capacity, "worklist items")?;
        slots.extend(
            self.slots[..len]
                .iter()
                .map(|s| AtomicU32::new(s.load(Relaxed))),
        );
        slots.resize_with(capacity, || AtomicU32::new(0));
        self.slots = slots.into_boxed_slice();
        self.count = AtomicUsize::new(len);
        if overflowed {
            self.unspill();
        }
        Ok(())
    }

    /// Moves spilled items into free slots, ascending, while they fit; the
    /// count then covers the stored items and the ones still spilled.
    fn unspill(&mut self) {
        let mut len = *self.count.get_mut();
        let mut left = 0usize;
        for (w, word) in self.spill.iter_mut().enumerate() {
            let mut bits = *word.get_mut();
            while bits != 0 && len < self.slots.len() {
                let b = bits.trailing_zeros() as usize;
                *self.slots[len].get_mut() = (w * 64 + b) as u32;
                len += 1;
                bits &= bits - 1;
            }
            left += bits.count_ones() as usize;
            *word.get_mut() = bits;
        }
        *self.count.get_mut() = len + left;
    }

    /// [`clear`](Self::clear) through a shared borrow, for a list that
    /// prepared launches hold: words are reset with `Relaxed` stores, so
    /// call it between rounds (a push racing with it may or may not
    /// survive; nothing is unsound either way). Costs what `clear` costs.
    pub fn reset(&self) {
        let count = self.needed();
        if count > self.capacity() {
            for w in self
                .spill
                .iter()
                .chain(self.seen.iter().flat_map(|s| s.iter()))
            {
                w.store(0, Relaxed);
            }
        } else if let Some(seen) = &self.seen {
            for s in &self.slots[..count] {
                seen[s.load(Relaxed) as usize / 64].store(0, Relaxed);
            }
        }
        self.count.store(0, Relaxed);
        self.fault.store(NO_FAULT, Relaxed);
    }

    /// A list over an empty universe with no room: every push is a fault.
    /// Allocates nothing (a stand-in where a kernel needs a list it will
    /// not push to).
    pub fn empty() -> Self {
        Worklist {
            universe: 0,
            slots: Box::new([]),
            count: AtomicUsize::new(0),
            spill: Box::new([]),
            seen: None,
            fault: AtomicU64::new(NO_FAULT),
        }
    }

    /// Empties the list, its spill bitmap and (deduplicating) its record of
    /// pushed items, and forgets a recorded fault. Costs the items stored,
    /// or the bitmaps' size after an overflow.
    pub fn clear(&mut self) {
        let len = self.len();
        if self.overflowed() {
            for w in self.spill.iter_mut() {
                *w.get_mut() = 0;
            }
            if let Some(seen) = &mut self.seen {
                for w in seen.iter_mut() {
                    *w.get_mut() = 0;
                }
            }
        } else if let Some(seen) = &mut self.seen {
            // Not overflowed: every item pushed is stored, so clearing
            // their bits clears the bitmap.
            for s in &mut self.slots[..len] {
                let i = *s.get_mut() as usize;
                *seen[i / 64].get_mut() = 0;
            }
        }
        *self.count.get_mut() = 0;
        *self.fault.get_mut() = NO_FAULT;
    }
}

/// The language's `push(wl, item)`: pushes `item` (see
/// [`Worklist::push`]). A bad item is not pushed and is recorded in the
/// list for [`Worklist::take_fault`] (the kernel's CPU twin reports it as a
/// fault); this function never panics.
#[inline]
pub fn push(wl: &Worklist, item: u32) {
    let _ = wl.push(item);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rayon::prelude::*;
    use std::collections::BTreeSet;

    fn sorted(wl: &mut Worklist) -> Vec<u32> {
        let mut v = wl.items().to_vec();
        v.sort_unstable();
        v
    }

    #[test]
    fn spills_when_full_and_grows_back() {
        let mut wl = Worklist::new(200, 3).unwrap();
        for i in [5, 150, 7, 64, 63, 150] {
            wl.push(i).unwrap();
        }
        assert_eq!(wl.len(), 3);
        assert_eq!(wl.needed(), 6);
        assert!(wl.overflowed());
        // 64, 63 and the second 150: three bits (150 is also stored).
        assert_eq!(wl.spilled(), 3);
        assert_eq!(wl.items(), [5, 150, 7]);
        // Too small: one more fits, two stay spilled.
        wl.grow(4).unwrap();
        assert_eq!(wl.items(), [5, 150, 7, 63]);
        assert!(wl.overflowed());
        assert_eq!(wl.needed(), 6);
        wl.grow(wl.needed()).unwrap();
        assert_eq!(wl.items(), [5, 150, 7, 63, 64, 150]);
        assert!(!wl.overflowed());
        assert!(wl.grow(2).is_err());
        wl.clear();
        assert!(wl.is_empty());
        assert_eq!(wl.spilled(), 0);
        wl.push(0).unwrap();
        assert_eq!(wl.items(), [0]);
    }

    #[test]
    fn bad_items_are_errors_and_recorded() {
        let wl = Worklist::new(10, 4).unwrap();
        assert_eq!(
            wl.push(10),
            Err(PushError::OutOfUniverse {
                item: 10,
                universe: 10
            })
        );
        push(&wl, 12);
        assert_eq!(wl.len(), 0);
        assert_eq!(
            wl.take_fault().map(|e| e.to_string()).as_deref(),
            Some("pushed item 10 is outside the worklist's universe 0..10")
        );
        assert_eq!(wl.take_fault(), None);
        let e: Error = PushError::OutOfUniverse {
            item: 3,
            universe: 0,
        }
        .into();
        assert!(
            e.to_string().contains("index 3 out of range for length 0"),
            "{e}"
        );
        assert!(Worklist::new(1 << 33, 1).is_err());
        assert!(Worklist::new(10, usize::MAX / 2).is_err());
        assert!(Worklist::new(1 << 32, 0).is_ok());
    }

    #[test]
    fn zero_capacity_spills_everything() {
        let mut wl = Worklist::new(5, 0).unwrap();
        for i in (0..5).rev() {
            push(&wl, i);
        }
        assert!(wl.items().is_empty());
        assert_eq!(wl.spilled(), 5);
        wl.grow(8).unwrap();
        assert_eq!(wl.items(), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn dedup_skips_repeats_until_cleared() {
        let mut wl = Worklist::new_dedup(100, 2).unwrap();
        for i in [3, 3, 70, 3, 99, 70, 99] {
            wl.push(i).unwrap();
        }
        assert_eq!(wl.needed(), 3);
        wl.grow(3).unwrap();
        assert_eq!(wl.items(), [3, 70, 99]);
        wl.clear();
        wl.push(3).unwrap();
        wl.push(3).unwrap();
        assert_eq!(wl.items(), [3]);
        // Cleared after an overflow too.
        let mut wl = Worklist::new_dedup(100, 1).unwrap();
        for i in [1, 2, 2] {
            push(&wl, i);
        }
        wl.clear();
        push(&wl, 2);
        push(&wl, 1);
        assert_eq!(wl.items(), [2]);
        assert_eq!(wl.needed(), 2);
    }

    #[test]
    fn reset_clears_through_a_shared_borrow() {
        let mut wl = Worklist::new_dedup(70, 1).unwrap();
        for i in [3, 66, 3] {
            push(&wl, i);
        }
        push(&wl, 99);
        wl.reset();
        assert!(wl.is_empty() && !wl.overflowed() && wl.take_fault().is_none());
        push(&wl, 66);
        assert_eq!(wl.items(), [66]);
        let e = Worklist::empty();
        assert_eq!((e.universe(), e.capacity()), (0, 0));
        assert!(e.push(0).is_err());
    }

    #[test]
    fn get_reads_while_shared() {
        let wl = Worklist::new(10, 4).unwrap();
        push(&wl, 9);
        assert_eq!(wl.get(0), Some(9));
        assert_eq!(wl.get(1), None);
    }

    proptest! {
        #[test]
        fn concurrent_pushes_keep_every_item(
            universe in 1usize..300,
            raw in proptest::collection::vec(any::<u32>(), 0..600),
            capacity in 0usize..200,
            dedup in any::<bool>(),
        ) {
            // Some items outside the universe, most inside.
            let items: Vec<u32> = raw
                .iter()
                .map(|&r| if r % 17 == 0 { r } else { r % universe as u32 })
                .collect();
            let make = |cap| if dedup { Worklist::new_dedup(universe, cap) } else { Worklist::new(universe, cap) };
            let mut small = make(capacity).unwrap();
            let mut big = make(items.len()).unwrap();
            let refused: Vec<bool> = items
                .par_iter()
                .map(|&i| {
                    push(&big, i);
                    small.push(i).is_err()
                })
                .collect();
            for (&i, &r) in items.iter().zip(&refused) {
                prop_assert_eq!(r, i as usize >= universe);
            }
            let valid: Vec<u32> = items.iter().copied().filter(|&i| (i as usize) < universe).collect();
            let want: BTreeSet<u32> = valid.iter().copied().collect();
            // Every valid push is stored or spilled.
            let mut stored: BTreeSet<u32> = small.items().iter().copied().collect();
            for i in 0..universe as u32 {
                if small.spill[i as usize / 64].load(Relaxed) >> (i % 64) & 1 == 1 {
                    stored.insert(i);
                }
            }
            prop_assert_eq!(&stored, &want);
            prop_assert!(small.len() <= capacity);
            if dedup {
                prop_assert_eq!(small.needed(), want.len());
                prop_assert_eq!(big.items().len(), want.len());
            } else {
                prop_assert_eq!(small.needed(), valid.len());
                let mut all = sorted(&mut big);
                let mut v = valid.clone();
                v.sort_unstable();
                all.dedup();
                v.dedup();
                prop_assert_eq!(all, v);
            }
            prop_assert_eq!(small.take_fault().is_some(), valid.len() < items.len());
            // Growth to `needed` gives the preallocated list's set.
            let needed = small.needed().max(capacity);
            small.grow(needed).unwrap();
            prop_assert!(!small.overflowed());
            let grown: BTreeSet<u32> = small.items().iter().copied().collect();
            let pre: BTreeSet<u32> = big.items().iter().copied().collect();
            prop_assert_eq!(&grown, &pre);
            // Reset (shared borrow) and clear leave the same empty list:
            // the same pushes again give the same contents.
            big.reset();
            small.clear();
            for &i in &items {
                push(&big, i);
                push(&small, i);
            }
            prop_assert_eq!(big.needed(), small.needed());
            prop_assert_eq!(big.items(), small.items());
        }
    }
}
