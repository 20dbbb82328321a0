//! Per-thread scratch arrays indexed by vertex, reset in O(1) by epochs.
//!
//! Counting the unique vertices of a tuple subset needs a "seen" mark per
//! vertex. Clearing an array of `n_vertices` marks per subset would make every
//! DBWP node cost O(n_vertices); an epoch stamp makes it O(subset). Each rayon
//! worker keeps its own array, so parallel recursion shares nothing.

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
    static MARKS: RefCell<Marks> = const { RefCell::new(Marks::new()) };
    static MAP: RefCell<(Marks, Vec<u32>)> = const { RefCell::new((Marks::new(), Vec::new())) };
}

/// Runs `f` with a cleared mark array of at least `n` entries and its epoch.
///
/// `f` must not call into rayon: a stolen job on this thread would need the
/// same array.
pub(crate) fn with_marks<R>(n: usize, f: impl FnOnce(&mut [u32], u32) -> R) -> R {
    MARKS.with(|m| {
        let mut m = m.borrow_mut();
        let epoch = m.begin(n);
        f(&mut m.stamp, epoch)
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

/// Runs `f` with a cleared [`IdMap`] over ids `< n`. Same rayon caveat as
/// [`with_marks`].
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
