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
///
/// With few buckets (their counters fit in cache) this is one histogram pass
/// and one scatter pass. With many buckets and random keys (COO read from a
/// column-major file, transposes) a direct scatter misses the cache and the
/// TLB on every entry, so the entries are first partitioned by the high bits
/// of their bucket into a few hundred cache-sized partitions (a stable MSD
/// radix pass into a temporary copy), then each partition is sorted in cache,
/// in parallel. `src` is dropped between the two passes, so a caller that
/// hands over ownership of its input frees it before the output is
/// allocated: peak memory is the larger of input + temporary and temporary +
/// output (the temporary stores a 16-bit key, the column and the value).
pub(crate) fn bucket_sort<T, S>(nbuckets: usize, nnz: usize, src: S) -> (Vec<u32>, Vec<u32>, Vec<T>)
where
    T: Copy + Send + Sync,
    S: EntrySource<T>,
{
    if nbuckets <= DIRECT_MAX_BUCKETS || nnz < (1 << 20) {
        direct_sort(nbuckets, nnz, &src)
    } else {
        partitioned_sort(nbuckets, nnz, src)
    }
}

/// Up to this many buckets, per-chunk counters fit in L2 and one scatter pass
/// is fastest.
const DIRECT_MAX_BUCKETS: usize = 1 << 16;

/// Turns per-chunk histograms into per-chunk write cursors, bucket-major and
/// chunk-minor (chunk c writes after chunks < c: the stability), starting at
/// `base`; returns the bucket start offsets (`ptr`, without the final entry)
/// and the total.
fn cursors(counts: &mut [Vec<u32>], nbuckets: usize, base: u32, ptr: &mut [u32]) -> u32 {
    let mut running = base;
    for b in 0..nbuckets {
        ptr[b] = running;
        for h in counts.iter_mut() {
            let n = h[b];
            h[b] = running;
            running += n;
        }
    }
    running
}

fn direct_sort<T, S>(nbuckets: usize, nnz: usize, src: &S) -> (Vec<u32>, Vec<u32>, Vec<T>)
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
    let mut ptr = vec![0u32; nbuckets + 1];
    let total = cursors(&mut counts, nbuckets, 0, &mut ptr);
    ptr[nbuckets] = total;
    assert_eq!(
        total as usize, nnz,
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

fn partitioned_sort<T, S>(nbuckets: usize, nnz: usize, src: S) -> (Vec<u32>, Vec<u32>, Vec<T>)
where
    T: Copy + Send + Sync,
    S: EntrySource<T>,
{
    // Buckets per partition: 2^shift, aiming at ~2^17 entries per partition
    // (a partition's temporary and output then fit in L2/L3) with at most
    // 2^16 buckets (the in-partition key is 16 bits).
    let ideal = (nbuckets as u128 * (1 << 17) / nnz.max(1) as u128).max(1);
    let shift = (127 - ideal.leading_zeros()).clamp(8, 16);
    let nparts = (nbuckets + (1 << shift) - 1) >> shift;
    let nchunks = src.nchunks();

    // Pass A: stable partition by the high bits into (low key, col, value).
    let mut counts: Vec<Vec<u32>> = (0..nchunks)
        .into_par_iter()
        .map(|c| {
            let mut h = vec![0u32; nparts];
            src.for_each(c, |b, _, _| h[(b >> shift) as usize] += 1);
            h
        })
        .collect();
    let mut part_ptr = vec![0u32; nparts + 1];
    let total = cursors(&mut counts, nparts, 0, &mut part_ptr);
    part_ptr[nparts] = total;
    assert_eq!(
        total as usize, nnz,
        "entry source yielded a different count"
    );
    let mut keys: Vec<u16> = Vec::with_capacity(nnz);
    let mut tcols: Vec<u32> = Vec::with_capacity(nnz);
    let mut tvals: Vec<T> = Vec::with_capacity(nnz);
    let (kp, cp, vp) = (
        SyncPtr(keys.as_mut_ptr()),
        SyncPtr(tcols.as_mut_ptr()),
        SyncPtr(tvals.as_mut_ptr()),
    );
    let mask = (1u32 << shift) - 1;
    counts
        .into_par_iter()
        .enumerate()
        .for_each(|(c, mut cursor)| {
            src.for_each(c, |b, col, v| {
                let part = (b >> shift) as usize;
                let p = cursor[part] as usize;
                cursor[part] += 1;
                // SAFETY: as in `direct_sort`, with partitions for buckets: the
                // (chunk, partition) cursor ranges are disjoint and tile 0..nnz.
                unsafe {
                    kp.write(p, (b & mask) as u16);
                    cp.write(p, col);
                    vp.write(p, v);
                }
            });
        });
    // SAFETY: every slot in 0..nnz was written exactly once (see above).
    unsafe {
        keys.set_len(nnz);
        tcols.set_len(nnz);
        tvals.set_len(nnz);
    }
    // The input is no longer needed; release it before allocating the output.
    drop(src);

    // Pass B: each partition is a contiguous range of buckets and of output
    // slots; sort it by its low key, in cache, partitions in parallel.
    let mut ptr = vec![0u32; nbuckets + 1];
    ptr[nbuckets] = total;
    let mut cols: Vec<u32> = Vec::with_capacity(nnz);
    let mut vals: Vec<T> = Vec::with_capacity(nnz);
    {
        let mut work = Vec::with_capacity(nparts);
        let mut ptr_rest = &mut ptr[..nbuckets];
        let mut cols_rest = &mut cols.spare_capacity_mut()[..nnz];
        let mut vals_rest = &mut vals.spare_capacity_mut()[..nnz];
        for p in 0..nparts {
            let (lo, hi) = (part_ptr[p] as usize, part_ptr[p + 1] as usize);
            let nb = (1usize << shift).min(nbuckets - (p << shift));
            let (pp, r) = std::mem::take(&mut ptr_rest).split_at_mut(nb);
            ptr_rest = r;
            let (oc, r) = std::mem::take(&mut cols_rest).split_at_mut(hi - lo);
            cols_rest = r;
            let (ov, r) = std::mem::take(&mut vals_rest).split_at_mut(hi - lo);
            vals_rest = r;
            work.push((lo..hi, pp, oc, ov));
        }
        let (keys, tcols, tvals) = (&keys, &tcols, &tvals);
        work.into_par_iter().for_each_init(
            || vec![0u32; 1 << shift],
            |hist, (range, pp, oc, ov)| {
                let base = range.start;
                let k = &keys[range.clone()];
                let (c, v) = (&tcols[range.clone()], &tvals[range]);
                hist[..pp.len()].fill(0);
                for &key in k {
                    hist[key as usize] += 1;
                }
                let mut running = 0u32;
                for (b, slot) in pp.iter_mut().enumerate() {
                    *slot = base as u32 + running;
                    let n = hist[b];
                    hist[b] = running;
                    running += n;
                }
                for i in 0..k.len() {
                    let key = k[i] as usize;
                    let at = hist[key] as usize;
                    hist[key] += 1;
                    oc[at].write(c[i]);
                    ov[at].write(v[i]);
                }
            },
        );
    }
    // SAFETY: the partitions' output slices tile 0..nnz and each partition's
    // local counting sort writes every slot of its slice exactly once.
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
