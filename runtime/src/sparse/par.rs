//! Parallel building blocks shared by the sparse conversions: a stable
//! parallel counting sort (COO → CSR, transpose) and a splitter that hands
//! disjoint blocks of rows to rayon workers (sorting, merging duplicates).
//!
//! Everything here is sized for matrices of a few hundred million entries on
//! machines with few cores: no per-entry allocation, no extra copy of the
//! input, and per-thread histograms only when they pay for themselves.

use rayon::prelude::*;
use std::ops::Range;

/// Below this many entries, rayon's fork/join costs more than it saves.
pub(crate) const PAR_MIN: usize = 1 << 15;

/// A raw pointer that may cross threads. Every user writes disjoint indices
/// only; the safety argument lives at each use.
#[derive(Clone, Copy)]
pub(crate) struct SyncPtr<T>(pub(crate) *mut T);
// SAFETY: the pointer is only dereferenced at indices that one thread owns.
unsafe impl<T: Send> Send for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    /// Writes `value` at `index`.
    ///
    /// # Safety
    /// `index` is inside the allocation and no other thread reads or writes it
    /// concurrently.
    #[inline(always)]
    pub(crate) unsafe fn write(self, index: usize, value: T) {
        // SAFETY: per the caller's contract.
        unsafe { self.0.add(index).write(value) }
    }
}

/// Entries to bucket, split into chunks whose concatenation is the input
/// order. Implementations must visit exactly the same entries, in the same
/// order, every time [`EntrySource::for_each`] is called for a chunk, and every
/// bucket must be `< nbuckets` given to [`bucket_sort`].
pub(crate) trait EntrySource<T>: Sync {
    /// Number of chunks.
    fn nchunks(&self) -> usize;
    /// Calls `f(bucket, column, value)` for every entry of `chunk`, in order.
    fn for_each<F: FnMut(u32, u32, T)>(&self, chunk: usize, f: F);
}

/// How many chunks a counting sort of `nnz` entries into `nbuckets` buckets
/// should use: one histogram of `nbuckets` counters per chunk costs memory and
/// a prefix pass, so chunks beyond one are only worth it when each chunk has
/// clearly more entries than there are buckets to scan.
pub(crate) fn sort_chunks(nnz: usize, nbuckets: usize) -> usize {
    if nnz < PAR_MIN {
        return 1;
    }
    let threads = rayon::current_num_threads().max(1);
    threads.min((2 * nnz / nbuckets.max(1)).max(1))
}

/// Splits `0..len` into `parts` contiguous ranges of near-equal length.
pub(crate) fn even_ranges(len: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1);
    (0..parts)
        .map(|p| (len * p / parts)..(len * (p + 1) / parts))
        .collect()
}

/// Stable counting sort of the entries of `src` by bucket.
///
/// Returns `(ptr, cols, values)`: `ptr` has `nbuckets + 1` offsets and bucket
/// `b` holds, in input order, the entries whose bucket is `b`. The caller
/// guarantees that `nnz` (the number of entries `src` yields) fits in u32.
pub(crate) fn bucket_sort<T, S>(
    nbuckets: usize,
    nnz: usize,
    src: &S,
) -> (Vec<u32>, Vec<u32>, Vec<T>)
where
    T: Copy + Send + Sync,
    S: EntrySource<T>,
{
    let nchunks = src.nchunks();
    // Pass 1: one histogram per chunk.
    let mut counts: Vec<Vec<u32>> = (0..nchunks)
        .into_par_iter()
        .map(|c| {
            let mut h = vec![0u32; nbuckets];
            src.for_each(c, |b, _, _| h[b as usize] += 1);
            h
        })
        .collect();
    // Turn the histograms into per-chunk write cursors: within a bucket, the
    // entries of chunk c go after those of chunks < c (this is the stability).
    let mut ptr = vec![0u32; nbuckets + 1];
    let mut running = 0u32;
    for b in 0..nbuckets {
        ptr[b] = running;
        for h in counts.iter_mut() {
            let n = h[b];
            h[b] = running;
            running += n;
        }
    }
    ptr[nbuckets] = running;
    assert_eq!(
        running as usize, nnz,
        "entry source yielded a different count"
    );

    // Pass 2: scatter.
    let mut cols: Vec<u32> = Vec::with_capacity(nnz);
    let mut vals: Vec<T> = Vec::with_capacity(nnz);
    let cp = SyncPtr(cols.as_mut_ptr());
    let vp = SyncPtr(vals.as_mut_ptr());
    counts
        .into_par_iter()
        .enumerate()
        .for_each(|(c, mut cursor)| {
            src.for_each(c, |b, col, v| {
                let p = cursor[b as usize] as usize;
                cursor[b as usize] += 1;
                // SAFETY: the cursors of chunk c for bucket b cover exactly the
                // slots [start, start + count) computed above from the same
                // entries; these ranges are disjoint across (chunk, bucket) and
                // tile 0..nnz, so every slot is written once, by one thread, and
                // lies inside the capacity reserved above.
                unsafe {
                    cp.write(p, col);
                    vp.write(p, v);
                }
            });
        });
    // SAFETY: every slot in 0..nnz was written exactly once (see above).
    unsafe {
        cols.set_len(nnz);
        vals.set_len(nnz);
    }
    (ptr, cols, vals)
}

/// Row boundaries that cut `row_ptr` into about `parts` blocks of similar
/// entry counts (long rows are never split). Always starts at 0 and ends at
/// `nrows`.
pub(crate) fn row_blocks(row_ptr: &[u32], parts: usize) -> Vec<usize> {
    let nrows = row_ptr.len() - 1;
    let nnz = row_ptr[nrows] as usize;
    let mut bounds = vec![0usize];
    for p in 1..parts.max(1) {
        let target = (nnz * p / parts) as u32;
        let r = row_ptr.partition_point(|&x| x < target).min(nrows);
        if r > *bounds.last().unwrap() {
            bounds.push(r);
        }
    }
    if *bounds.last().unwrap() != nrows || bounds.len() == 1 {
        bounds.push(nrows);
    }
    bounds
}

/// Number of row blocks to use for a per-row pass over `nnz` entries.
pub(crate) fn row_parts(nnz: usize) -> usize {
    if nnz < PAR_MIN {
        1
    } else {
        4 * rayon::current_num_threads().max(1)
    }
}

/// Runs `f(rows, cols, vals)` on disjoint blocks of rows in parallel; `cols`
/// and `vals` are the entries of exactly those rows (offset by
/// `row_ptr[rows.start]`). Returns the blocks' results in row order.
pub(crate) fn par_rows_mut<T, R, F>(
    row_ptr: &[u32],
    cols: &mut [u32],
    vals: &mut [T],
    f: F,
) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(Range<usize>, &mut [u32], &mut [T]) -> R + Sync,
{
    let bounds = row_blocks(row_ptr, row_parts(cols.len()));
    let mut blocks = Vec::with_capacity(bounds.len());
    let (mut cols, mut vals) = (cols, vals);
    for w in bounds.windows(2) {
        let len = (row_ptr[w[1]] - row_ptr[w[0]]) as usize;
        let (c, rest_c) = std::mem::take(&mut cols).split_at_mut(len);
        let (v, rest_v) = std::mem::take(&mut vals).split_at_mut(len);
        cols = rest_c;
        vals = rest_v;
        blocks.push((w[0]..w[1], c, v));
    }
    blocks
        .into_par_iter()
        .map(|(rows, c, v)| f(rows, c, v))
        .collect()
}
