//! Per-thread scratch arrays indexed by vertex, reset in O(subset).
//!
//! Counting the unique vertices of a tuple subset needs a "seen" mark per
//! vertex. Clearing an array of `n_vertices` marks per subset would make every
//! DBWP node cost O(n_vertices); clearing only what was set (bitsets) or
//! epoch stamps (maps) make it O(subset). Each rayon worker keeps its own
//! arrays, so parallel recursion shares nothing.

use std::cell::RefCell;

/// Stamp array plus the current epoch: `stamp[v] == epoch` means "marked".
pub(crate) struct Marks {
    stamp: Vec<u32>,
    epoch: u32,
}

impl Marks {
    const fn new() -> Self {
        Marks {
            stamp: Vec::new(),
            epoch: 0,
        }
    }

    /// Starts a fresh marking over `n` ids and returns the epoch to compare with.
    fn begin(&mut self, n: usize) -> u32 {
        if self.stamp.len() < n {
            self.stamp.resize(n, 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // Wrapped: stale stamps could collide with the new epoch.
            self.stamp.fill(0);
            self.epoch = 1;
        }
        self.epoch
    }
}

thread_local! {
    static BITS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    static MAP: RefCell<(Marks, Vec<u32>)> = const { RefCell::new((Marks::new(), Vec::new())) };
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

/// A cleared sparse map from ids `< n` to u32 values: `get` is `None` until
/// `insert`. Used to give the vertices of a subset compact local ids.
pub(crate) struct IdMap<'a> {
    stamp: &'a mut [u32],
    value: &'a mut [u32],
    epoch: u32,
}

impl IdMap<'_> {
    #[inline]
    pub(crate) fn get(&self, id: u32) -> Option<u32> {
        let i = id as usize;
        (self.stamp[i] == self.epoch).then(|| self.value[i])
    }

    #[inline]
    pub(crate) fn insert(&mut self, id: u32, v: u32) {
        let i = id as usize;
        self.stamp[i] = self.epoch;
        self.value[i] = v;
    }
}

/// Runs `f` with a cleared [`IdMap`] over ids `< n`.
///
/// `f` must not call into rayon: a stolen job on this thread would need the
/// same map.
pub(crate) fn with_id_map<R>(n: usize, f: impl FnOnce(&mut IdMap<'_>) -> R) -> R {
    MAP.with(|m| {
        let mut guard = m.borrow_mut();
        let (marks, values) = &mut *guard;
        let epoch = marks.begin(n);
        if values.len() < n {
            values.resize(n, 0);
        }
        let mut map = IdMap {
            stamp: &mut marks.stamp,
            value: values,
            epoch,
        };
        f(&mut map)
    })
}
