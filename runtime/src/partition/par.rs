//! Parallel forms of the partitioner's passes over one large tuple subset.
//!
//! DBWP recurses on both halves of a bisection in parallel, but its top
//! levels have one, two, four subsets: without parallel passes inside a
//! subset, the root's counts and median cuts over all tuples run on one
//! core while the others wait. Every pass here computes exactly what its
//! sequential form computes (counts, the median's value, a stable
//! partition), so the partition does not depend on the thread count or
//! on which form ran.
//!
//! The passes cut a subset into fixed chunks of [`CHUNK`] tuple ids; rayon
//! spreads the chunks over its threads, and per-chunk results are combined
//! in chunk order.

use super::graph::WorkGraphOf;
use crate::mem;
use crate::{Error, Result};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Subsets with at least this many tuples use the parallel passes: below
/// it one core finishes a pass in about a millisecond, which the fixed
/// costs of a parallel pass (a bitset over all gathered elements, the
/// histograms) would not repay.
pub(crate) const PAR_MIN: usize = 1 << 20;

/// Tuple ids per chunk of a parallel pass.
pub(crate) const CHUNK: usize = 1 << 16;

/// Whether a subset of `n` tuples is worth the parallel passes.
#[inline]
pub(crate) fn worth(n: usize) -> bool {
    n >= par_min() && rayon::current_num_threads() > 1
}

#[cfg(not(test))]
#[inline]
fn par_min() -> usize {
    PAR_MIN
}

/// Unit tests lower the threshold so that small inputs take the parallel
/// passes too (both forms give the same results, so tests running beside
/// them are unaffected).
#[cfg(test)]
pub(crate) static PAR_MIN_FOR_TESTS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(PAR_MIN);

#[cfg(test)]
fn par_min() -> usize {
    PAR_MIN_FOR_TESTS.load(Ordering::Relaxed)
}

/// Element types whose all-zero bytes are a valid value.
///
/// # Safety
/// Implement only for types made of integers (no references, no niches).
pub(crate) unsafe trait ZeroValid: Copy {}
// SAFETY: plain integers and a `repr(C)` struct of three u32s.
unsafe impl ZeroValid for u8 {}
unsafe impl ZeroValid for u32 {}
unsafe impl ZeroValid for crate::exec::Segment {}

/// `n` zeros, checked against the memory limit and allocated zeroed: the
/// pages are zero-filled by the system on first touch, by the thread that
/// touches them, instead of by one thread writing the whole array up front.
pub(crate) fn zeroed<T: ZeroValid>(what: &str, n: usize) -> Result<Vec<T>> {
    mem::check(what, mem::bytes_of::<T>(what, n)?)?;
    let layout = std::alloc::Layout::array::<T>(n)
        .map_err(|_| Error::invalid(format!("out of memory: {what} of {n} elements")))?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(Error::MemoryLimit {
            what: what.to_string(),
            needed: layout.size() as u64,
            limit: mem::limit().ok().flatten().map_or(u64::MAX, |l| l.0),
            source_of_limit: "the allocator (it refused the request)".into(),
        });
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of
    // `n` `T`s (what `Vec<T>` with capacity `n` deallocates), and all its
    // bytes are zero, a valid `T` (`ZeroValid`).
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// [`zeroed`] u32s.
pub(crate) fn zeroed_u32(what: &str, n: usize) -> Result<Vec<u32>> {
    zeroed(what, n)
}

/// `0, 1, ..., n - 1`, written in parallel.
pub(crate) fn iota(what: &str, n: u32) -> Result<Vec<u32>> {
    let mut v = zeroed_u32(what, n as usize)?;
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| {
        let base = (c * CHUNK) as u32;
        for (i, x) in out.iter_mut().enumerate() {
            *x = base + i as u32;
        }
    });
    Ok(v)
}

/// Distinct tasks among ascending tuple ids. Each chunk counts its own
/// distinct tasks; a task whose tuples straddle a chunk boundary is the
/// last task of one chunk and the first of the next, and is counted once.
pub(crate) fn count_tasks(g: &WorkGraphOf<'_>, ids: &[u32]) -> u32 {
    let ptr = g.ptr();
    let per_chunk: Vec<(u32, u32, u32)> = ids
        .par_chunks(CHUNK)
        .map(|c| {
            let first = g.task_of(c[0]) as usize;
            let (mut t, mut end, mut count) = (first, ptr[first + 1], 1u32);
            for &id in &c[1..] {
                if id >= end {
                    t = super::dbwp::task_from(ptr, t, id);
                    end = ptr[t + 1];
                    count += 1;
                }
            }
            (first as u32, t as u32, count)
        })
        .collect();
    let total: u32 = per_chunk.iter().map(|c| c.2).sum();
    let straddling = per_chunk.windows(2).filter(|w| w[0].1 == w[1].0).count() as u32;
    total - straddling
}

/// Distinct gathered elements among tuple ids: one shared bitset, a bit
/// set (and counted) by the one `fetch_or` that finds it clear.
pub(crate) fn count_gathered(g: &WorkGraphOf<'_>, ids: &[u32]) -> u32 {
    let gathered = g.gathered();
    let bits: Vec<AtomicU64> = (0..g.n_gathered().div_ceil(64))
        .into_par_iter()
        .map(|_| AtomicU64::new(0))
        .collect();
    ids.par_chunks(CHUNK)
        .map(|c| {
            let mut count = 0u32;
            for &id in c {
                let v = gathered[id as usize] as usize;
                let (word, m) = (&bits[v / 64], 1u64 << (v % 64));
                // A plain load first: most tuples find their bit set, and a
                // load does not take the cache line exclusively.
                if word.load(Ordering::Relaxed) & m == 0
                    && word.fetch_or(m, Ordering::Relaxed) & m == 0
                {
                    count += 1;
                }
            }
            count
        })
        .sum()
}

/// Per-chunk histograms of `digit(v)` over the gathered indices `v` of
/// `ids` for which `keep(v)` holds, summed.
fn histogram(
    g: &WorkGraphOf<'_>,
    ids: &[u32],
    buckets: usize,
    keep: impl Fn(u32) -> bool + Sync,
    digit: impl Fn(u32) -> usize + Sync,
) -> Vec<u32> {
    let gathered = g.gathered();
    ids.par_chunks(CHUNK)
        .fold(
            || vec![0u32; buckets],
            |mut h, c| {
                for &id in c {
                    let v = gathered[id as usize];
                    if keep(v) {
                        h[digit(v)] += 1;
                    }
                }
                h
            },
        )
        .reduce_with(|mut a, b| {
            for (x, y) in a.iter_mut().zip(&b) {
                *x += y;
            }
            a
        })
        .unwrap_or_else(|| vec![0u32; buckets])
}

/// The bucket of `h` that holds rank `r` (0-based) and the count below it.
fn bucket_of_rank(h: &[u32], r: usize) -> (usize, usize) {
    let mut below = 0usize;
    for (b, &c) in h.iter().enumerate() {
        if r < below + c as usize {
            return (b, below);
        }
        below += c as usize;
    }
    // Unreachable for r < sum(h); the last bucket otherwise.
    (h.len().saturating_sub(1), below)
}

/// The gathered index at rank `len / 2` among `ids` (what
/// `select_nth_unstable(len / 2)` over their gathered indices finds), with
/// the number of tuples reading less than it and reading it: a radix
/// select, one histogram of the high 16 bits, then one of the low bits
/// inside the median's bucket.
pub(crate) fn median_gathered(g: &WorkGraphOf<'_>, ids: &[u32]) -> (u32, usize, usize) {
    let r = ids.len() / 2;
    let top = (g.n_gathered() as u64).saturating_sub(1);
    let bits = 64 - top.leading_zeros();
    let lo_bits = bits.saturating_sub(16);
    let h1 = histogram(
        g,
        ids,
        1 << (bits - lo_bits),
        |_| true,
        |v| (v >> lo_bits) as usize,
    );
    let (d1, below1) = bucket_of_rank(&h1, r);
    if lo_bits == 0 {
        return (d1 as u32, below1, h1[d1] as usize);
    }
    let mask = (1u32 << lo_bits) - 1;
    let h2 = histogram(
        g,
        ids,
        1 << lo_bits,
        |v| (v >> lo_bits) as usize == d1,
        |v| (v & mask) as usize,
    );
    let (d2, below2) = bucket_of_rank(&h2, r - below1);
    (
        ((d1 as u32) << lo_bits) | d2 as u32,
        below1 + below2,
        h2[d2] as usize,
    )
}

/// Stable partition of `ids` around gathered index `pivot`: tuples reading
/// less go left, more go right, and of those reading `pivot` the first
/// `eq_left` (in order) go left. Every chunk counts its tuples per side,
/// then writes them at its offsets into `scratch`, which is copied back.
/// Returns the left side's length.
pub(crate) fn partition_gathered(
    g: &WorkGraphOf<'_>,
    ids: &mut [u32],
    scratch: &mut [u32],
    pivot: u32,
    eq_left: usize,
) -> usize {
    let gathered = g.gathered();
    let n = ids.len();
    let counts: Vec<(usize, usize)> = ids
        .par_chunks(CHUNK)
        .map(|c| {
            let (mut lt, mut eq) = (0usize, 0usize);
            for &id in c {
                let v = gathered[id as usize];
                lt += usize::from(v < pivot);
                eq += usize::from(v == pivot);
            }
            (lt, eq)
        })
        .collect();
    // Each chunk's share of the pivot's tuples that go left, in order.
    let mut eq_rest = eq_left;
    let shares: Vec<(usize, usize)> = counts
        .iter()
        .map(|&(lt, eq)| {
            let e = eq.min(eq_rest);
            eq_rest -= e;
            (lt + e, e)
        })
        .collect();
    let left: usize = shares.iter().map(|s| s.0).sum();
    // Disjoint output slices per chunk, cut in order from both sides.
    let (mut lrest, mut rrest) = scratch[..n].split_at_mut(left);
    let mut outs = Vec::with_capacity(shares.len());
    for (c, &(nl, e)) in shares.iter().enumerate() {
        let len = CHUNK.min(n - c * CHUNK);
        let (l, lt) = std::mem::take(&mut lrest).split_at_mut(nl);
        let (r, rt) = std::mem::take(&mut rrest).split_at_mut(len - nl);
        (lrest, rrest) = (lt, rt);
        outs.push((l, r, e));
    }
    ids.par_chunks(CHUNK)
        .zip(outs.into_par_iter())
        .for_each(|(c, (l, r, mut e))| {
            let (mut wl, mut wr) = (0, 0);
            for &id in c {
                let v = gathered[id as usize];
                let go_left = if v == pivot {
                    let take = e > 0;
                    e -= usize::from(take);
                    take
                } else {
                    v < pivot
                };
                if go_left {
                    l[wl] = id;
                    wl += 1;
                } else {
                    r[wr] = id;
                    wr += 1;
                }
            }
        });
    ids.par_chunks_mut(CHUNK)
        .zip(scratch[..n].par_chunks(CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
    left
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::WorkGraph;

    fn graph(n_tasks: usize, n_gathered: usize, len: usize, seed: u64) -> WorkGraph {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut ptr = vec![0u32];
        let mut gathered = Vec::new();
        for _ in 0..n_tasks {
            let l = rng.random_range(0..=len);
            // Skewed: a few gathered elements take most reads.
            for _ in 0..l {
                let v = if rng.random_bool(0.3) {
                    rng.random_range(0..4.min(n_gathered))
                } else {
                    rng.random_range(0..n_gathered)
                };
                gathered.push(v as u32);
            }
            ptr.push(gathered.len() as u32);
        }
        WorkGraph::new(ptr, gathered, n_gathered, 4, 4).unwrap()
    }

    #[test]
    fn parallel_passes_equal_the_sequential_ones() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        for (n_gathered, seed) in [(1, 1), (7, 2), (300, 3), (1 << 17, 4), (100_000, 5)] {
            let g = graph(20_000, n_gathered, 40, seed);
            let m = g.n_tuples() as u32;
            // Every other tuple, ascending: chunks straddle tasks.
            let ids: Vec<u32> = (0..m).filter(|i| i % 3 != 1).collect();
            pool.install(|| {
                assert_eq!(
                    count_tasks(&g, &ids),
                    super::super::dbwp::count_tasks(&g, &ids)
                );
                assert_eq!(
                    count_gathered(&g, &ids),
                    super::super::dbwp::count_gathered(&g, &ids)
                );
                let (pivot, lt, eq) = median_gathered(&g, &ids);
                let mut cols: Vec<u32> = ids.iter().map(|&i| g.gathered()[i as usize]).collect();
                cols.sort_unstable();
                assert_eq!(pivot, cols[ids.len() / 2]);
                assert_eq!(lt, cols.iter().filter(|&&c| c < pivot).count());
                assert_eq!(eq, cols.iter().filter(|&&c| c == pivot).count());
                for eq_left in [0, eq / 2, eq] {
                    let mut a = ids.clone();
                    let mut sa = vec![0; a.len()];
                    let la = partition_gathered(&g, &mut a, &mut sa, pivot, eq_left);
                    let mut b = ids.clone();
                    let mut sb = vec![0; b.len()];
                    let mut e = eq_left;
                    let lb = crate::partition::stable_partition(&mut b, &mut sb, |id| {
                        let v = g.gathered()[id as usize];
                        if v == pivot {
                            let t = e > 0;
                            e = e.saturating_sub(1);
                            t
                        } else {
                            v < pivot
                        }
                    });
                    assert_eq!((la, &a), (lb, &b));
                }
            });
        }
    }

    /// Everything planning builds, as comparable values.
    type Planned = (
        Vec<u32>,
        Vec<u32>,
        crate::partition::SjTree,
        crate::schedule::CacheFitPlan,
        crate::schedule::PartMajor,
    );

    fn plan_all(g: &WorkGraph, partitioner: Option<u32>, capacity: u32) -> Planned {
        use crate::partition::{column_blocks, dbwp, Bisection, PartitionOptions};
        use crate::schedule::{CacheFitPlan, PartMajor};
        let p = match partitioner {
            None => column_blocks(g, capacity).unwrap(),
            Some(_) => dbwp(
                g,
                &PartitionOptions {
                    capacity,
                    bisection: Bisection::KdTiling,
                },
                None,
            )
            .unwrap(),
        };
        let plan = CacheFitPlan::new(g, &p).unwrap();
        let via_plan = PartMajor::new(&plan).unwrap();
        let (order, part_ptr, tree) = (p.order().to_vec(), p.part_ptr().to_vec(), p.tree().clone());
        let direct = PartMajor::from_partition(g, p).unwrap();
        assert_eq!(direct, via_plan);
        (order, part_ptr, tree, plan, direct)
    }

    #[test]
    fn plans_do_not_depend_on_the_thread_count_or_the_passes() {
        // With the threshold lowered, every pool of more than one thread
        // runs the parallel passes on all but the smallest subsets; one
        // thread runs the sequential ones.
        PAR_MIN_FOR_TESTS.store(256, Ordering::Relaxed);
        let inputs = [
            crate::gen::rmat(12, 8, 3).unwrap(),
            crate::gen::uniform(3000, 7, 4).unwrap(),
            crate::gen::rgg(4000, 5).unwrap(),
        ];
        for a in &inputs {
            let g = WorkGraph::from_csr(a).unwrap();
            for (partitioner, capacity) in [(Some(0), 600), (Some(0), 64), (None, 500), (None, 37)]
            {
                let runs: Vec<Planned> = [1, 2, 3, 4]
                    .into_iter()
                    .map(|threads| {
                        rayon::ThreadPoolBuilder::new()
                            .num_threads(threads)
                            .build()
                            .unwrap()
                            .install(|| plan_all(&g, partitioner, capacity))
                    })
                    .collect();
                assert!(
                    runs[0].1.len() > 2,
                    "{partitioner:?} {capacity}: one partition"
                );
                for r in &runs[1..] {
                    assert!(*r == runs[0], "{partitioner:?} {capacity}");
                }
            }
        }
    }

    #[test]
    fn zeroed_and_iota() {
        assert!(zeroed_u32("nothing", 0).unwrap().is_empty());
        let z = zeroed_u32("zeros", 1000).unwrap();
        assert!(z.len() == 1000 && z.iter().all(|&x| x == 0));
        let i = iota("ids", 200_000).unwrap();
        assert!(i.iter().enumerate().all(|(k, &x)| x == k as u32));
    }
}
