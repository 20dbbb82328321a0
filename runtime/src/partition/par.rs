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

use super::dbwp::Unique;
use super::work_graph::WorkGraphOf;
use crate::mem;
use crate::{Error, Result};
use rayon::prelude::*;
#[cfg(test)]
use std::sync::atomic::Ordering;
use std::sync::Mutex;

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
    huge_pages(ptr.cast::<u8>(), layout.size());
    // SAFETY: `ptr` was allocated by the global allocator with the layout of
    // `n` `T`s (what `Vec<T>` with capacity `n` deallocates), and all its
    // bytes are zero, a valid `T` (`ZeroValid`).
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// Asks the system to back a large fresh allocation with huge pages where
/// it can (Linux `MADV_HUGEPAGE`): one fault per 2 MiB instead of per
/// 4 KiB when the arrays are first touched. Advice only: ignored where
/// transparent huge pages are off, and a no-op elsewhere.
pub(crate) fn huge_pages(ptr: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        const MADV_HUGEPAGE: std::os::raw::c_int = 14;
        extern "C" {
            fn madvise(
                addr: *mut std::ffi::c_void,
                len: usize,
                advice: std::os::raw::c_int,
            ) -> std::os::raw::c_int;
        }
        if len < 2 * HUGE {
            return;
        }
        // The whole huge pages inside the allocation.
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + len) / HUGE * HUGE;
        if end > start {
            // SAFETY: the range lies inside one live allocation of ours;
            // MADV_HUGEPAGE changes how its pages are backed, never their
            // contents, and failure leaves them as they are.
            unsafe {
                madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// [`zeroed`] u32s.
pub(crate) fn zeroed_u32(what: &str, n: usize) -> Result<Vec<u32>> {
    zeroed(what, n)
}

/// `dst` becomes `src` (same length), copied in parallel chunks.
pub(crate) fn copy(dst: &mut [u32], src: &[u32]) {
    dst.par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
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

/// The distinct tasks of one chunk of ascending tuple ids: the first and
/// last task and how many; `None` for no tuple.
type TaskSpan = Option<(u32, u32, u32)>;

/// Tracks the task of ascending tuple ids, counting distinct tasks.
struct TaskCounter<'a> {
    ptr: &'a [u32],
    span: TaskSpan,
    /// End of the current task's tuple range (0 before the first id, so
    /// that the first id starts a task).
    end: u32,
}

impl<'a> TaskCounter<'a> {
    fn new(ptr: &'a [u32]) -> Self {
        TaskCounter {
            ptr,
            span: None,
            end: 0,
        }
    }

    /// Takes the next tuple id (ascending): one comparison unless the id
    /// starts another task.
    #[inline(always)]
    fn push(&mut self, id: u32) {
        if id >= self.end {
            self.next_task(id);
        }
    }

    #[inline(never)]
    fn next_task(&mut self, id: u32) {
        let t = match self.span {
            Some((_, last, _)) => super::dbwp::task_from(self.ptr, last as usize, id),
            None => self.ptr.partition_point(|&p| p <= id) - 1,
        };
        self.end = self.ptr[t + 1];
        self.span = Some(match self.span {
            Some((first, _, count)) => (first, t as u32, count + 1),
            None => (t as u32, t as u32, 1),
        });
    }
}

/// Distinct tasks over chunks in order: a task whose tuples straddle
/// chunks is the last task of one and the first of the next non-empty one,
/// and is counted once.
fn join_spans(spans: impl IntoIterator<Item = TaskSpan>) -> u32 {
    let (mut total, mut prev_last) = (0u32, None);
    for (first, last, count) in spans.into_iter().flatten() {
        total += count - u32::from(prev_last == Some(first));
        prev_last = Some(last);
    }
    total
}

/// A set of gathered elements being marked by many threads: one private
/// bitset per worker thread (plain stores, no atomics: a shared bitset
/// would bounce its cache lines between the cores that set bits in them),
/// joined by [`Marking::finish`].
pub(crate) struct Marking {
    /// Per worker thread (its rayon index; callers outside the pool share
    /// the last slot, under its lock), allocated on first use.
    slots: Vec<Mutex<Vec<u64>>>,
    words: usize,
}

impl Marking {
    /// The empty set over `n` gathered elements.
    pub(crate) fn new(n: usize) -> Self {
        Marking {
            slots: (0..=rayon::current_num_threads())
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
            words: n.div_ceil(64),
        }
    }

    /// Runs `f` with this thread's bitset (`f` must not call into rayon).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Bits<'_>) -> R) -> R {
        let last = self.slots.len() - 1;
        let slot = rayon::current_thread_index().map_or(last, |i| i.min(last));
        let mut bits = self.slots[slot].lock().unwrap_or_else(|e| e.into_inner());
        if bits.len() < self.words {
            *bits = vec![0u64; self.words];
        }
        f(&mut Bits(&mut bits))
    }

    /// The union of the threads' sets.
    pub(crate) fn finish(self) -> Marks {
        let sets: Vec<Vec<u64>> = self
            .slots
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
            .filter(|b| !b.is_empty())
            .collect();
        let words = (0..self.words)
            .into_par_iter()
            .with_min_len(1 << 12)
            .map(|w| sets.iter().fold(0u64, |acc, s| acc | s[w]))
            .collect();
        Marks(words)
    }
}

/// One thread's bitset of a [`Marking`].
pub(crate) struct Bits<'a>(&'a mut [u64]);

impl Bits<'_> {
    /// Marks `v`.
    #[inline]
    pub(crate) fn mark(&mut self, v: usize) {
        self.0[v / 64] |= 1u64 << (v % 64);
    }

    /// Asks for `v`'s word ahead of its [`mark`](Self::mark): marks land
    /// at random in a bitset larger than a core's L2 cache, and a pass
    /// that fetches the words of the tuples some way ahead keeps many
    /// misses in flight instead of one.
    #[inline(always)]
    pub(crate) fn prefetch(&self, v: usize) {
        if let Some(w) = self.0.get(v / 64) {
            prefetch(w);
        }
    }
}

/// How many tuples ahead a pass prefetches the bitset words it will mark.
pub(crate) const AHEAD: usize = 32;

/// A hint to load the cache line of `p` (no-op off x86-64).
#[inline(always)]
fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and has no effect beyond the cache;
    // SSE is part of the x86-64 baseline.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((p as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A set of gathered elements, as a bitset.
pub(crate) struct Marks(Vec<u64>);

impl Marks {
    /// Elements marked in `self` or `other` (sets over the same elements).
    pub(crate) fn union_count(&self, other: &Marks) -> u32 {
        self.0
            .par_iter()
            .zip(other.0.par_iter())
            .with_min_len(1 << 12)
            .map(|(a, b)| (a | b).count_ones())
            .sum()
    }

    /// Marked elements in `lo..hi`.
    pub(crate) fn count(&self, lo: usize, hi: usize) -> u32 {
        let hi = hi.min(self.0.len() * 64);
        if lo >= hi {
            return 0;
        }
        let (first, last) = (lo / 64, (hi - 1) / 64);
        let edge = |w: usize| {
            let mut x = self.0[w];
            if w == first {
                x &= u64::MAX << (lo % 64);
            }
            if w == last && hi - w * 64 < 64 {
                x &= (1u64 << (hi - w * 64)) - 1;
            }
            x.count_ones()
        };
        if first == last {
            return edge(first);
        }
        edge(first)
            + edge(last)
            + self.0[first + 1..last]
                .par_iter()
                .with_min_len(1 << 12)
                .map(|x| x.count_ones())
                .sum::<u32>()
    }
}

/// What counting a subset leaves for its gathered cut: the set of its
/// gathered elements (the halves' gathered elements are counted from it)
/// and the histogram of their high bits (the median's first digit).
pub(crate) struct Tally {
    pub marks: Marks,
    top: Vec<u32>,
}

/// Bits of one digit of the radix select: 2,048 counters, 8 KiB, stay in
/// a core's L1 cache while a pass increments them at random.
const DIGIT_BITS: u32 = 11;

/// The radix select's first digit: the high [`DIGIT_BITS`] bits of the
/// gathered indices (all of them when they have fewer); returns the
/// number of low bits below the digit and the digit's bucket count.
fn top_digit(n_gathered: usize) -> (u32, usize) {
    let top = (n_gathered as u64).saturating_sub(1);
    let bits = 64 - top.leading_zeros();
    let lo_bits = bits.saturating_sub(DIGIT_BITS);
    (lo_bits, 1 << (bits - lo_bits))
}

/// Unique vertices of ascending tuple ids in one pass; with `tally`, also
/// the subset's [`Tally`] for a gathered cut (the histogram costs one
/// increment in a core's cache per tuple, a pass of its own would cost
/// another read of the subset).
pub(crate) fn count_unique(
    g: &WorkGraphOf<'_>,
    ids: &[u32],
    tally: bool,
) -> (Unique, Option<Tally>) {
    let gathered = g.gathered();
    let marking = Marking::new(g.n_gathered());
    let (lo_bits, buckets) = top_digit(g.n_gathered());
    type Acc = (Vec<TaskSpan>, Vec<u32>);
    let (spans, top): Acc = ids
        .par_chunks(CHUNK)
        .fold(
            || {
                (
                    Vec::new(),
                    if tally {
                        vec![0u32; buckets]
                    } else {
                        Vec::new()
                    },
                )
            },
            |(mut spans, mut top), c| {
                let mut tc = TaskCounter::new(g.ptr());
                marking.with(|bits| {
                    for (i, &id) in c.iter().enumerate() {
                        if let Some(&ahead) = c.get(i + AHEAD) {
                            bits.prefetch(gathered[ahead as usize] as usize);
                        }
                        tc.push(id);
                        let v = gathered[id as usize];
                        bits.mark(v as usize);
                        if tally {
                            top[(v >> lo_bits) as usize] += 1;
                        }
                    }
                });
                spans.push(tc.span);
                (spans, top)
            },
        )
        .reduce_with(|(mut a, mut ta), (b, tb)| {
            a.extend(b);
            for (x, y) in ta.iter_mut().zip(&tb) {
                *x += y;
            }
            (a, ta)
        })
        .unwrap_or_default();
    let marks = marking.finish();
    let unique = Unique {
        tasks: join_spans(spans),
        gathered: marks.count(0, g.n_gathered()),
    };
    (unique, tally.then_some(Tally { marks, top }))
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

/// The median gathered index of a subset and how its chunks hold it.
pub(crate) struct MedianCut {
    /// The gathered index at rank `len / 2` (what `select_nth_unstable(len
    /// / 2)` over the gathered indices finds).
    pub pivot: u32,
    /// Tuples reading less than `pivot`.
    pub lt: usize,
    /// Tuples reading `pivot`.
    pub eq: usize,
    /// Per chunk of [`CHUNK`] ids: tuples reading less, reading `pivot`.
    chunks: Vec<(usize, usize)>,
}

/// The median gathered index of `ids` by a radix select: a histogram of
/// the high bits of the gathered indices ([`DIGIT_BITS`] of them) finds
/// the median's bucket; then, when the bucket holds few tuples (the usual
/// case), one pass collects per chunk the tuples below the bucket and the
/// low bits of those inside it, and the median is selected among the
/// latter: two passes in all, with the per-chunk counts the partition
/// needs. A bucket of many tuples (a few gathered elements read by most
/// tuples) is refined digit by digit, a histogram pass each, then counted
/// per chunk.
///
/// `top`, the subset's [`Tally`], saves the first digit's pass.
pub(crate) fn median_cut(g: &WorkGraphOf<'_>, ids: &[u32], top: Option<&Tally>) -> MedianCut {
    let gathered = g.gathered();
    let r = ids.len() / 2;
    let (mut lo_bits, buckets) = top_digit(g.n_gathered());
    let counted_top;
    let h1: &[u32] = match top {
        Some(t) => &t.top,
        None => {
            counted_top = histogram(g, ids, buckets, |_| true, |v| (v >> lo_bits) as usize);
            &counted_top
        }
    };
    let (d1, mut below) = bucket_of_rank(h1, r);
    // The median's bits above `lo_bits`, and the tuples in its bucket.
    let (mut prefix, mut inside) = (d1 as u32, h1[d1] as usize);
    while lo_bits > 0 {
        if inside <= ids.len() / 16 {
            return select_in_bucket(g, ids, prefix, lo_bits, below, r);
        }
        let step = lo_bits.min(DIGIT_BITS);
        let next = lo_bits - step;
        let mask = (1u32 << step) - 1;
        let h = histogram(
            g,
            ids,
            1 << step,
            |v| v >> lo_bits == prefix,
            |v| ((v >> next) & mask) as usize,
        );
        let (d, b) = bucket_of_rank(&h, r - below);
        (prefix, inside, below, lo_bits) =
            ((prefix << step) | d as u32, h[d] as usize, below + b, next);
    }
    let pivot = prefix;
    let chunks = ids
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
    MedianCut {
        pivot,
        lt: below,
        eq: inside,
        chunks,
    }
}

/// The rest of [`median_cut`] when the median's bucket (the gathered
/// indices whose bits above `lo_bits` are `prefix`, `below` tuples under
/// it) holds few tuples: one pass collects them per chunk, with the
/// tuples below the bucket, and the median (rank `r`) is selected among
/// the collected ones.
fn select_in_bucket(
    g: &WorkGraphOf<'_>,
    ids: &[u32],
    prefix: u32,
    lo_bits: u32,
    below: usize,
    r: usize,
) -> MedianCut {
    let gathered = g.gathered();
    let per_chunk: Vec<(usize, Vec<u32>)> = ids
        .par_chunks(CHUNK)
        .map(|c| {
            let (mut under, mut bucket) = (0usize, Vec::new());
            for &id in c {
                let v = gathered[id as usize];
                let d = v >> lo_bits;
                under += usize::from(d < prefix);
                if d == prefix {
                    bucket.push(v);
                }
            }
            (under, bucket)
        })
        .collect();
    let mut all: Vec<u32> = per_chunk.iter().flat_map(|c| c.1.iter().copied()).collect();
    let (_, &mut pivot, _) = all.select_nth_unstable(r - below);
    let lt = below + all.iter().filter(|&&v| v < pivot).count();
    let eq = all.iter().filter(|&&v| v == pivot).count();
    let chunks = per_chunk
        .par_iter()
        .map(|(under, bucket)| {
            let lt = bucket.iter().filter(|&&v| v < pivot).count();
            let eq = bucket.iter().filter(|&&v| v == pivot).count();
            (under + lt, eq)
        })
        .collect();
    MedianCut {
        pivot,
        lt,
        eq,
        chunks,
    }
}

/// The halves of a gathered cut: the left one's length and both halves'
/// distinct tasks.
pub(crate) struct Halves {
    pub left: usize,
    pub tasks: [u32; 2],
}

/// Stable partition of `ids` around `cut.pivot` into `scratch` (the
/// first `ids.len()` entries; `ids` is left as it was): tuples reading
/// less go left, more go right, and of those reading `pivot` the first
/// `eq_left` (in order) go left. Every chunk writes its tuples at its
/// offsets (from the cut's per-chunk counts), counting each half's
/// distinct tasks on the way.
pub(crate) fn partition_gathered(
    g: &WorkGraphOf<'_>,
    ids: &[u32],
    scratch: &mut [u32],
    cut: &MedianCut,
    eq_left: usize,
) -> Halves {
    let gathered = g.gathered();
    let n = ids.len();
    let pivot = cut.pivot;
    // Each chunk's share of the pivot's tuples that go left, in order.
    let mut eq_rest = eq_left;
    let shares: Vec<(usize, usize)> = cut
        .chunks
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
    let spans: Vec<[TaskSpan; 2]> = ids
        .par_chunks(CHUNK)
        .zip(outs.into_par_iter())
        .map(|(c, (l, r, mut e))| {
            let (mut wl, mut wr) = (0, 0);
            let (mut tl, mut tr) = (TaskCounter::new(g.ptr()), TaskCounter::new(g.ptr()));
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
                    tl.push(id);
                } else {
                    r[wr] = id;
                    wr += 1;
                    tr.push(id);
                }
            }
            [tl.span, tr.span]
        })
        .collect();
    Halves {
        left,
        tasks: [
            join_spans(spans.iter().map(|s| s[0])),
            join_spans(spans.iter().map(|s| s[1])),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::WorkGraph;

    /// Random tasks of up to `len` tuples; 30 % of reads go to gathered
    /// elements 0..4, and with `hub`, 60 % to element `n_gathered / 3`
    /// (the median's bucket then holds most tuples).
    fn graph(n_tasks: usize, n_gathered: usize, len: usize, seed: u64, hub: bool) -> WorkGraph {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut ptr = vec![0u32];
        let mut gathered = Vec::new();
        for _ in 0..n_tasks {
            let l = rng.random_range(0..=len);
            // Skewed: a few gathered elements take most reads.
            for _ in 0..l {
                let v = if hub && rng.random_bool(0.6) {
                    n_gathered / 3
                } else if rng.random_bool(0.3) {
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
        for (n_gathered, seed, hub) in [
            (1, 1, false),
            (7, 2, false),
            (300, 3, false),
            (1 << 17, 4, false),
            (100_000, 5, false),
            (100_000, 6, true),
            (1 << 23, 7, true),
            (3 << 21, 8, false),
        ] {
            let g = graph(20_000, n_gathered, 40, seed, hub);
            let m = g.n_tuples() as u32;
            // Every other tuple, ascending: chunks straddle tasks.
            let ids: Vec<u32> = (0..m).filter(|i| i % 3 != 1).collect();
            pool.install(|| {
                let (u, tally) = count_unique(&g, &ids, true);
                let tally = tally.unwrap();
                assert_eq!(u, count_unique(&g, &ids, false).0);
                assert_eq!(
                    u,
                    Unique {
                        tasks: super::super::dbwp::count_tasks(&g, &ids),
                        gathered: super::super::dbwp::count_gathered(&g, &ids)
                    }
                );
                let marks = &tally.marks;
                assert_eq!(marks.count(0, n_gathered), u.gathered);
                let cut = median_cut(&g, &ids, Some(&tally));
                let again = median_cut(&g, &ids, None);
                assert_eq!(
                    (cut.pivot, cut.lt, cut.eq, &cut.chunks),
                    (again.pivot, again.lt, again.eq, &again.chunks)
                );
                let (pivot, lt, eq) = (cut.pivot, cut.lt, cut.eq);
                let mut cols: Vec<u32> = ids.iter().map(|&i| g.gathered()[i as usize]).collect();
                cols.sort_unstable();
                assert_eq!(pivot, cols[ids.len() / 2]);
                assert_eq!(lt, cols.iter().filter(|&&c| c < pivot).count());
                assert_eq!(eq, cols.iter().filter(|&&c| c == pivot).count());
                for eq_left in [0, eq / 2, eq] {
                    let mut a = vec![0; ids.len()];
                    let halves = partition_gathered(&g, &ids, &mut a, &cut, eq_left);
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
                    assert_eq!((halves.left, &a), (lb, &b));
                    let (l, r) = b.split_at(lb);
                    assert_eq!(
                        halves.tasks,
                        [
                            super::super::dbwp::count_tasks(&g, l),
                            super::super::dbwp::count_tasks(&g, r)
                        ]
                    );
                    // The halves' gathered elements from the marks.
                    let gl = marks.count(0, pivot as usize) + u32::from(eq_left > 0);
                    let gr = marks.count(pivot as usize + 1, n_gathered) + u32::from(eq_left < eq);
                    assert_eq!(
                        [gl, gr],
                        [
                            super::super::dbwp::count_gathered(&g, l),
                            super::super::dbwp::count_gathered(&g, r)
                        ]
                    );
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
