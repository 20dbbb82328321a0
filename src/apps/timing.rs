//! What an app's run took: set-up (uploads, kernel preparation and
//! compilation) apart from its iterations, in memory that does not grow with
//! the iteration count.

use std::time::Duration;

/// Iterations whose times are kept one by one (1 MiB of them); the
/// iterations after these are counted in an [`IterationTimes`]' histogram.
pub const KEPT_ITERATIONS: usize = 1 << 16;

/// Histogram buckets: exact below [`SUB_BUCKETS`] ns, then [`SUB_BUCKETS`]
/// per power of two up to 2^64 ns. The widest bucket is 1/64 of its lower
/// bound, so a median read from it is within 0.8% of the true one.
const SUB_BUCKETS: usize = 64;
const SUB_BITS: u32 = SUB_BUCKETS.trailing_zeros();
const BUCKETS: usize = SUB_BUCKETS + (64 - SUB_BITS as usize) * SUB_BUCKETS;

/// The bucket of `ns` nanoseconds.
fn bucket_of(ns: u64) -> usize {
    if ns < SUB_BUCKETS as u64 {
        return ns as usize;
    }
    let top = 63 - ns.leading_zeros(); // >= SUB_BITS
    let shift = top - SUB_BITS;
    let sub = (ns >> shift) as usize & (SUB_BUCKETS - 1);
    SUB_BUCKETS + shift as usize * SUB_BUCKETS + sub
}

/// The middle of bucket `b`, the value a histogram's median reports.
fn bucket_middle(b: usize) -> Duration {
    if b < SUB_BUCKETS {
        return Duration::from_nanos(b as u64);
    }
    let shift = ((b - SUB_BUCKETS) / SUB_BUCKETS) as u32;
    let sub = ((b - SUB_BUCKETS) % SUB_BUCKETS) as u64;
    let low = (SUB_BUCKETS as u64 + sub) << shift;
    Duration::from_nanos(low.saturating_add((1u64 << shift) / 2))
}

/// The wall time of each iteration of a run, in bounded memory: the first
/// [`KEPT_ITERATIONS`] one by one, every later one in a fixed histogram
/// (64 buckets per power of two, 30 KiB, made when the first of them
/// comes). The count and the total are exact; a median is exact while the
/// run is no longer than the kept iterations and within 0.8% after.
///
/// ```
/// use std::time::Duration;
/// use warpfit::apps::IterationTimes;
///
/// let mut t = IterationTimes::new();
/// for ms in [5, 1, 3] {
///     t.push(Duration::from_millis(ms));
/// }
/// assert_eq!(t.median(), Some(Duration::from_millis(3)));
/// assert_eq!(t.total(), Duration::from_millis(9));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IterationTimes {
    kept: Vec<Duration>,
    /// Counts per bucket of the iterations after the kept ones; empty until
    /// the first of them.
    tail: Vec<u64>,
    len: usize,
    total: Duration,
}

impl IterationTimes {
    /// No iterations.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the next iteration's time.
    pub fn push(&mut self, d: Duration) {
        self.len = self.len.saturating_add(1);
        self.total = self.total.saturating_add(d);
        if self.kept.len() < KEPT_ITERATIONS {
            self.kept.push(d);
            return;
        }
        if self.tail.is_empty() {
            self.tail = vec![0; BUCKETS];
        }
        self.tail[bucket_of(nanos(d))] += 1;
    }

    /// Records `other`'s iterations after these: one by one while room is
    /// left among the kept ones, then in the histogram.
    pub fn append(&mut self, other: &IterationTimes) {
        other.kept.iter().for_each(|&d| self.push(d));
        if other.tail.is_empty() {
            return;
        }
        let (count, total) = other.after_kept();
        if self.tail.is_empty() {
            self.tail = vec![0; BUCKETS];
        }
        for (mine, theirs) in self.tail.iter_mut().zip(&other.tail) {
            *mine += theirs;
        }
        self.len = self.len.saturating_add(count);
        self.total = self.total.saturating_add(total);
    }

    /// The number of iterations recorded.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none was recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The iterations' total time (exact; saturating).
    pub fn total(&self) -> Duration {
        self.total
    }

    /// The first iterations' times, one by one: all of them up to
    /// [`KEPT_ITERATIONS`].
    pub fn kept(&self) -> &[Duration] {
        &self.kept
    }

    /// The iterations after the kept ones: their count and total time.
    pub fn after_kept(&self) -> (usize, Duration) {
        let kept_total: Duration = self.kept.iter().sum();
        (
            self.len - self.kept.len(),
            self.total.saturating_sub(kept_total),
        )
    }

    /// The first iteration's time.
    pub fn first(&self) -> Option<Duration> {
        self.kept.first().copied()
    }

    /// The median time (the upper one of an even count); `None` when
    /// nothing was recorded.
    pub fn median(&self) -> Option<Duration> {
        self.median_from(0)
    }

    /// The median of the iterations from index `start` to the end (the
    /// upper one of an even count; the kept iterations before `start` left
    /// out); `None` when there are none.
    pub fn median_from(&self, start: usize) -> Option<Duration> {
        if start >= self.kept.len() {
            // Only histogram counts are left: a start past the kept ones
            // counts from the first of them.
            return median_of_buckets(&self.tail);
        }
        let kept = &self.kept[start..];
        if self.tail.is_empty() {
            return median_of(kept);
        }
        let mut buckets = self.tail.clone();
        for d in kept {
            buckets[bucket_of(nanos(*d))] += 1;
        }
        median_of_buckets(&buckets)
    }

    /// The median of the iterations before index `end` (the upper one of an
    /// even count); past the kept iterations, of the kept ones.
    pub fn median_before(&self, end: usize) -> Option<Duration> {
        median_of(&self.kept[..end.min(self.kept.len())])
    }
}

impl FromIterator<Duration> for IterationTimes {
    fn from_iter<I: IntoIterator<Item = Duration>>(iter: I) -> Self {
        let mut t = Self::new();
        iter.into_iter().for_each(|d| t.push(d));
        t
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The median of `times` (the upper one of an even count), `None` for none.
fn median_of(times: &[Duration]) -> Option<Duration> {
    let mut t = times.to_vec();
    t.sort_unstable();
    t.get(t.len() / 2).copied()
}

/// The median of the counts in `buckets` (the upper one of an even count).
fn median_of_buckets(buckets: &[u64]) -> Option<Duration> {
    let n: u64 = buckets.iter().sum();
    if n == 0 {
        return None;
    }
    let mut seen = 0;
    for (b, &c) in buckets.iter().enumerate() {
        seen += c;
        if seen > n / 2 {
            return Some(bucket_middle(b));
        }
    }
    None
}

/// The wall time of an app's set-up and of each of its iterations. An
/// iteration's time is the interval between the host receiving its small
/// readback (a count, a residual) and the previous iteration's; the drivers
/// keep a few iterations enqueued ahead, so it is the device's pace, plus
/// whatever host overhead the queue does not hide.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timings {
    /// Uploading the inputs, preparing the launches (on CUDA this compiles
    /// the kernels, or loads them from the kernel cache) and any first pass
    /// before the iterations.
    pub setup: Duration,
    /// The iterations, in order (bounded memory however many).
    pub iterations: IterationTimes,
    /// Of `setup`, the time the app's throttleable kernel (PageRank's
    /// pull) took to be made ready: its unthrottled launches prepared, or
    /// its throttled handle made (whose own preparation comes in its first
    /// launch, an iteration). Throttling end to end costs this plus the
    /// iterations, against the same for the unthrottled run. `None` where
    /// the app does not time it apart.
    pub kernel_setup: Option<Duration>,
}

impl Timings {
    /// `setup` and `iterations`, the throttleable kernel's part not timed
    /// apart.
    pub fn new(setup: Duration, iterations: IterationTimes) -> Self {
        Timings {
            setup,
            iterations,
            kernel_setup: None,
        }
    }

    /// The median iteration time (the upper one of an even count); `None`
    /// when nothing was iterated.
    pub fn median_iteration(&self) -> Option<Duration> {
        self.iterations.median()
    }

    /// The median of `times` (the upper one of an even count), `None` for
    /// none: of a part of a run's iterations.
    pub fn median_of(times: &[Duration]) -> Option<Duration> {
        median_of(times)
    }

    /// The iterations' total time.
    pub fn iterations_total(&self) -> Duration {
        self.iterations.total()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty_runs() {
        let ms = Duration::from_millis;
        let mut t = Timings {
            setup: ms(9),
            iterations: [ms(5), ms(1), ms(3)].into_iter().collect(),
            kernel_setup: None,
        };
        assert_eq!(t.median_iteration(), Some(ms(3)));
        assert_eq!(t.iterations_total(), ms(9));
        t.iterations.push(ms(4));
        assert_eq!(t.median_iteration(), Some(ms(4)));
        assert_eq!(t.iterations.median_from(1), Some(ms(3)));
        assert_eq!(t.iterations.median_before(2), Some(ms(5)));
        assert_eq!(Timings::default().median_iteration(), None);
        assert_eq!(IterationTimes::new().median_from(3), None);
    }

    #[test]
    fn buckets_hold_their_values_within_their_width() {
        let large = (SUB_BITS..64).flat_map(|s| [1u64 << s, (1u64 << s) + (1u64 << s) / 3]);
        let mut last = 0;
        for ns in (0..SUB_BUCKETS as u64).chain(large).chain([u64::MAX]) {
            let b = bucket_of(ns);
            assert!(b < BUCKETS, "{ns} in bucket {b}");
            let mid = nanos(bucket_middle(b)) as f64;
            let err = (mid - ns as f64).abs() / (ns as f64).max(1.0);
            assert!(err <= 1.0 / SUB_BUCKETS as f64, "{ns} ~ {mid}");
            assert!(b >= last, "buckets rise with the value");
            last = b;
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn memory_stays_bounded_and_counts_stay_exact_past_the_kept_iterations() {
        let n = KEPT_ITERATIONS * 8 + 3;
        let mut t = IterationTimes::new();
        for i in 0..n {
            // Odd iterations take 1 ms, even ones 3 ms: the upper median
            // of n (odd) values is 3 ms.
            t.push(Duration::from_micros(if i % 2 == 1 { 1000 } else { 3000 }));
        }
        assert_eq!(t.len(), n);
        assert_eq!(t.kept().len(), KEPT_ITERATIONS);
        assert_eq!(t.tail.len(), BUCKETS);
        assert!(t.kept.capacity() <= 2 * KEPT_ITERATIONS);
        let evens = (n as u64).div_ceil(2);
        let want = Duration::from_micros(3000 * evens + 1000 * (n as u64 - evens));
        assert_eq!(t.total(), want);
        let m = t.median().unwrap().as_secs_f64();
        assert!((m - 3e-3).abs() / 3e-3 < 0.01, "{m}");
        let (after, after_total) = t.after_kept();
        assert_eq!(after, n - KEPT_ITERATIONS);
        assert_eq!(after_total + t.kept().iter().sum::<Duration>(), want);
        // Past the kept iterations only the histogram is left: its median
        // is the tail's (half 1 ms, half 3 ms: the upper one).
        let m = t.median_from(KEPT_ITERATIONS + 5).unwrap().as_secs_f64();
        assert!((m - 3e-3).abs() / 3e-3 < 0.01, "{m}");
        let m = t.median_before(usize::MAX).unwrap();
        assert_eq!(m, Duration::from_micros(3000));
    }

    #[test]
    fn appended_runs_keep_their_order_count_and_total() {
        let us = Duration::from_micros;
        let mut a: IterationTimes = (0..10).map(us).collect();
        let mut long = IterationTimes::new();
        for i in 0..KEPT_ITERATIONS + 50 {
            long.push(us(i as u64 % 7));
        }
        a.append(&long);
        assert_eq!(a.len(), 10 + KEPT_ITERATIONS + 50);
        assert_eq!(a.kept().len(), KEPT_ITERATIONS);
        assert_eq!(&a.kept()[..10], &(0..10).map(us).collect::<Vec<_>>()[..]);
        assert_eq!(a.total(), us(45) + long.total());
        let (after, after_total) = a.after_kept();
        assert_eq!(after, 60);
        assert_eq!(after_total + a.kept().iter().sum::<Duration>(), a.total());
    }

    #[test]
    fn a_saturated_total_does_not_panic() {
        let mut t = IterationTimes::new();
        t.push(Duration::MAX);
        t.push(Duration::MAX);
        assert_eq!(t.total(), Duration::MAX);
        assert_eq!(t.len(), 2);
    }
}
