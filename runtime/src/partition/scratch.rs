//! Per-thread scratch arrays indexed by vertex, reset in O(subset).
//!
//! Counting the unique vertices of a tuple subset needs a "seen" mark per
//! vertex. Clearing an array of `n_vertices` marks per subset would make every
//! DBWP node cost O(n_vertices); clearing only what was set makes it
//! O(subset). Each rayon worker keeps its own
//! arrays, so parallel recursion shares nothing.

use std::cell::RefCell;

thread_local! {
    static BITS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    static SLOTS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// Number of distinct values `key(id)` (each `< n`) over `ids`.
///
/// A bitset of `n` bits (512 KiB for 4M values) stays in a core's L2 where a
/// stamp array of `4n` bytes would not; it is cleared after use by a second
/// pass over the same words (or one sequential clear for a subset larger
/// than the bitset), so a small subset costs O(subset), not O(n).
pub(crate) fn count_distinct(n: usize, ids: &[u32], key: impl Fn(u32) -> u32) -> u32 {
    BITS.with(|b| {
        let mut bits = b.borrow_mut();
        let words = n.div_ceil(64);
        if bits.len() < words {
            bits.resize(words, 0);
        }
        let mut count = 0u32;
        for &id in ids {
            let v = key(id) as usize;
            let (w, m) = (v / 64, 1u64 << (v % 64));
            count += u32::from(bits[w] & m == 0);
            bits[w] |= m;
        }
        if ids.len() >= words {
            // A large subset: one sequential clear beats a second gather pass.
            bits[..words].fill(0);
        } else {
            for &id in ids {
                bits[key(id) as usize / 64] = 0;
            }
        }
        count
    })
}

/// A map from ids `< n` to u32 values, empty when it is handed out: `get`
/// is `None` until `insert`. Used to give the vertices of a subset compact
/// local ids.
///
/// One slot per id, no epoch stamps: the inserted keys are remembered and
/// their slots cleared when the map is dropped, which costs O(subset) and
/// halves the per-thread array that lives for the whole run.
pub(crate) struct SparseMap<'a> {
    slot: &'a mut [u32],
    keys: Vec<u32>,
}

impl SparseMap<'_> {
    /// Marks an empty slot; not a storable value.
    const NONE: u32 = u32::MAX;

    #[inline]
    pub(crate) fn get(&self, id: u32) -> Option<u32> {
        let v = self.slot[id as usize];
        (v != Self::NONE).then_some(v)
    }

    /// Sets `id`'s value (`v != u32::MAX`).
    #[inline]
    pub(crate) fn insert(&mut self, id: u32, v: u32) {
        debug_assert_ne!(v, Self::NONE);
        let s = &mut self.slot[id as usize];
        if *s == Self::NONE {
            self.keys.push(id);
        }
        *s = v;
    }
}

impl Drop for SparseMap<'_> {
    fn drop(&mut self) {
        for &k in &self.keys {
            self.slot[k as usize] = Self::NONE;
        }
    }
}

/// Runs `f` with an empty [`SparseMap`] over ids `< n`.
///
/// `f` must not call into rayon: a stolen job on this thread would need the
/// same map.
pub(crate) fn with_sparse_map<R>(n: usize, f: impl FnOnce(&mut SparseMap<'_>) -> R) -> R {
    SLOTS.with(|s| {
        let mut slots = s.borrow_mut();
        if slots.len() < n {
            slots.resize(n, SparseMap::NONE);
        }
        let mut map = SparseMap {
            slot: &mut slots[..n],
            keys: Vec::new(),
        };
        f(&mut map)
    })
}

/// Hands freed heap memory back to the operating system.
///
/// A large bisection frees hierarchy levels of tens of MB while it builds
/// others. glibc serves most of them from its heap (its mmap threshold rises
/// to the size of the largest chunk freed), and freed heap pages stay
/// resident: without this the process kept the garbage of the first
/// bisections on top of the live hierarchies of the next ones.
/// Elsewhere a no-op.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: glibc's malloc_trim takes no pointer, may be called from
        // any thread at any time, and only releases pages of free chunks.
        unsafe {
            malloc_trim(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_map_is_empty_again_after_use() {
        with_sparse_map(100, |m| {
            m.insert(7, 0);
            m.insert(99, 1);
            m.insert(7, 2);
            assert_eq!((m.get(7), m.get(99), m.get(8)), (Some(2), Some(1), None));
        });
        // A smaller request reuses the slots: none may be left set.
        with_sparse_map(50, |m| assert!((0..50).all(|i| m.get(i).is_none())));
        with_sparse_map(100, |m| assert!((0..100).all(|i| m.get(i).is_none())));
    }

    #[test]
    fn distinct_counts_leave_the_bitset_clear() {
        let keys = [3u32, 3, 64, 200, 3];
        assert_eq!(
            count_distinct(256, &[0, 1, 2, 3, 4], |i| keys[i as usize]),
            3
        );
        assert_eq!(count_distinct(256, &[0, 1], |i| keys[i as usize]), 1);
        assert_eq!(count_distinct(8, &[], |i| i), 0);
    }
}
