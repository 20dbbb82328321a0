//! Drivers: how the rounds of an iterative graph computation are scheduled,
//! apart from what one round computes and where it runs.
//!
//! A computation is given as up to two kernels and a key, which a backend
//! holds ([`CpuRounds`] on the CPU; a device backend the same way):
//!
//! - the **frontier kernel** runs once per item of an input worklist and
//!   pushes the items it activates onto an output list (data-driven: SSSP's
//!   relaxation of a vertex's out-edges, BFS's top-down step);
//! - the **topology kernel** runs once per element of the universe
//!   `0..n` and pushes the elements it changed (topology-driven: a pull over
//!   a vertex's in-edges, BFS's bottom-up step);
//! - the **key** of an item orders the work of a priority-ordered driver
//!   (SSSP's tentative distance).
//!
//! A [`Driver`] decides which rounds run, over which lists, and when the
//! computation is over, through the [`RoundBackend`] trait; the strategies
//! (Nasre, Burtscher and Pingali, "Data-driven versus topology-driven
//! irregular computations on GPUs"):
//!
//! - [`Strategy::Topology`]: every element every round, to a fixed point
//!   (a round that pushes nothing);
//! - [`Strategy::Data`] with [`Order::Fifo`]: the frontier, round after
//!   round, until it is empty;
//! - [`Strategy::Data`] with [`Order::NearFar`]: priority-ordered (near-far
//!   piles, Davidson et al.): only items whose key lies in the current
//!   bucket `[lo, hi)` run, the others wait on a *far* pile; when the near
//!   pile empties, the bucket advances and the far pile is split;
//! - [`Strategy::Hybrid`]: the paper's temporal hybrid (V-A), data-driven
//!   while the frontier is small and topology-driven while it is large.
//!
//! [`auto`](GraphShape::auto_strategy) picks one from the graph's shape.
//!
//! ## Several rounds per host synchronisation
//!
//! A backend may run rounds asynchronously (a GPU queue): the driver
//! enqueues up to `2k − 1` rounds ahead and waits for `k` at a time (`k`,
//! [`DriverOptions::rounds_per_sync`], is the paper's kernel unrolling, IV-B,
//! done by the queue), so the device does not wait for the host between
//! short rounds. Rounds enqueued past the end must change nothing: a round
//! over an empty list does nothing, and a topology round at a fixed point
//! pushes nothing (the driver checks both and reports a kernel that breaks
//! it as an error).
//!
//! ## Growth on demand (paper, VI-F)
//!
//! Lists start at a fraction of the universe
//! ([`DriverOptions::initial_capacity`], default `n / 5`). A full list
//! never drops an item: it spills into its bitmap ([`Worklist`]). When a
//! round's output overflows, the backend **halts**: every later round is
//! skipped, touching nothing, until [`RoundBackend::resume`]. The driver
//! waits for the skipped rounds, grows the list to the capacity the round
//! needed (doubling), which moves the spilled items in, resumes, and enqueues
//! the skipped rounds again: the computation goes on exactly as if the list
//! had been large enough, no round run twice.
//!
//! ## Preparing ahead
//!
//! [`Driver::prepare`] makes a run's lists and asks the backend to prepare
//! whatever it makes the first time a round of each shape the strategy uses
//! runs ([`RoundBackend::prepare`]: on a GPU, the launches over each pair
//! of lists); a run after it keeps those lists and launches, so that one
//! preparation serves every run from another start (BFS from many sources)
//! and a run's time is its rounds'.
//!
//! [`Worklist`]: super::Worklist

mod cpu;
mod engine;
mod round_plan;
mod shape;

pub use cpu::{CpuRounds, Step};
pub use engine::MAX_ROUNDS_PER_SYNC;
pub use shape::{GraphShape, SKEW};

use crate::{Error, Result};
use std::fmt;
use std::time::Duration;

/// One of a backend's lists, numbered from 0 by the driver
/// ([`RoundBackend::make_lists`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListId(pub u8);

impl ListId {
    /// The list's position among the backend's lists.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The priority filter of a frontier round (near-far): which input items
/// run now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// Items whose key is below `lo` are dropped: stale copies of items that
    /// already ran with a smaller key.
    pub lo: f64,
    /// Items whose key is at least `hi` are pushed onto `deferred` (the far
    /// pile) instead of running.
    pub hi: f64,
    /// The far pile.
    pub deferred: ListId,
    /// Whether `deferred` is cleared before the round (a far pile being
    /// split into a new one) or appended to.
    pub clear_deferred: bool,
}

/// A round for a backend to run. `index` counts rounds from 1; kernels see
/// it ([`Step::round`]), e.g. BFS's bottom-up step looks for parents on
/// level `index - 1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Round {
    /// The topology kernel on every element `0..n`; `out` is cleared first
    /// and receives its pushes.
    Topology {
        /// Round number, from 1.
        index: u32,
        /// Receives the pushes.
        out: ListId,
        /// Whether a later round reads `out`: if not, its overflow does not
        /// halt the backend (only the count of pushes matters).
        consumed: bool,
        /// Whether the outcome reports the least key among `out`'s items
        /// ([`Outcome::min_key`]).
        min_key: bool,
    },
    /// The frontier kernel on every item of `input` (those whose key lies
    /// in the bucket, with one); `out` (and `deferred` when
    /// [`Bucket::clear_deferred`]) is cleared first. `input`, `out` and the
    /// deferred list are distinct.
    Frontier {
        /// Round number, from 1.
        index: u32,
        /// The items to run.
        input: ListId,
        /// Receives the kernel's pushes.
        out: ListId,
        /// Near-far filtering, if any.
        bucket: Option<Bucket>,
    },
}

impl Round {
    /// The round's number.
    pub fn index(&self) -> u32 {
        match *self {
            Round::Topology { index, .. } | Round::Frontier { index, .. } => index,
        }
    }

    /// The list receiving the kernel's pushes.
    pub fn out(&self) -> ListId {
        match *self {
            Round::Topology { out, .. } | Round::Frontier { out, .. } => out,
        }
    }

    /// The lists and kernel the round uses.
    pub fn shape(&self) -> RoundShape {
        match *self {
            Round::Topology { out, .. } => RoundShape::Topology { out },
            Round::Frontier {
                input,
                out,
                bucket: None,
                ..
            } => RoundShape::Frontier { input, out },
            Round::Frontier {
                out,
                bucket: Some(_),
                ..
            } => RoundShape::Bucket { out },
        }
    }

    /// Whether the round must halt the backend when `out` overflows.
    pub fn out_consumed(&self) -> bool {
        match *self {
            Round::Topology { consumed, .. } => consumed,
            Round::Frontier { .. } => true,
        }
    }
}

/// The kernel and lists of a kind of round, whatever its number: what a
/// backend prepares once and runs round after round
/// ([`RoundBackend::prepare`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoundShape {
    /// The topology kernel over `0..n`, pushing onto `out`.
    Topology {
        /// Receives the pushes.
        out: ListId,
    },
    /// The frontier kernel over `input`'s items, pushing onto `out`.
    Frontier {
        /// The items to run.
        input: ListId,
        /// Receives the pushes.
        out: ListId,
    },
    /// A near-far round: the frontier kernel over the items of its input
    /// whose key lies in the bucket (gathered by the backend, whichever
    /// list they come from), pushing onto `out`.
    Bucket {
        /// Receives the pushes.
        out: ListId,
    },
}

/// What a finished round did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// The round's number.
    pub index: u32,
    /// The round did nothing because the backend was halted by an earlier
    /// round's overflow: it touched no list.
    pub skipped: bool,
    /// Kernel invocations (topology: `n`; frontier: the items that ran).
    pub processed: u64,
    /// Items pushed onto `out`, stored or spilled (its `needed()`): the next
    /// frontier's size, or the count of changed elements.
    pub pushed: u64,
    /// `out` spilled.
    pub out_overflowed: bool,
    /// Items moved to the far pile by this round.
    pub deferred: u64,
    /// Items on the far pile after the round (its `needed()`).
    pub deferred_len: u64,
    /// The far pile spilled.
    pub deferred_overflowed: bool,
    /// Items dropped as stale (key below the bucket).
    pub dropped: u64,
    /// The least key of the items deferred (frontier rounds with a bucket)
    /// or of `out`'s items (topology rounds asked for it); `+∞` if none.
    pub min_key: f64,
}

impl Outcome {
    /// The outcome of a round that was skipped.
    pub fn skipped(index: u32) -> Self {
        Outcome {
            index,
            skipped: true,
            ..Outcome::empty(index)
        }
    }

    /// A round that ran and did nothing.
    pub fn empty(index: u32) -> Self {
        Outcome {
            index,
            skipped: false,
            processed: 0,
            pushed: 0,
            out_overflowed: false,
            deferred: 0,
            deferred_len: 0,
            deferred_overflowed: false,
            dropped: 0,
            min_key: f64::INFINITY,
        }
    }
}

/// The first frontier of a data-driven run.
#[derive(Debug, Clone, Copy)]
pub enum Start<'a> {
    /// These items (SSSP and BFS: the source).
    Items(&'a [u32]),
    /// Every element `0..n` (connected components: every vertex is active).
    All,
}

impl Start<'_> {
    /// The number of items for a universe of `n`.
    pub fn len(&self, n: usize) -> usize {
        match self {
            Start::Items(items) => items.len(),
            Start::All => n,
        }
    }

    /// Whether there is no item.
    pub fn is_empty(&self, n: usize) -> bool {
        self.len(n) == 0
    }
}

/// What a backend needs to run a driver's rounds (see the module docs for
/// the protocol). Kernels are bound to the backend when it is built.
pub trait RoundBackend {
    /// The universe `n`: the elements of a topology round and the items of
    /// every list are `0..n`.
    fn universe(&self) -> usize;

    /// The rounds this backend runs per host synchronisation unless told
    /// otherwise: 1 where rounds run as they are enqueued (the CPU), more
    /// where they queue on a device.
    fn rounds_per_sync(&self) -> usize;

    /// Whether a frontier kernel, a topology kernel and a key are bound.
    fn kernels(&self) -> Kernels;

    /// Makes `count` empty lists (ids `0..count`) of at least `capacity`
    /// items each, deduplicating their pushes if `dedup`. Lists it has
    /// already, as many, deduplicating alike and at least that large (a
    /// run's lists, grown or not, for the next run), are emptied and kept,
    /// with what was prepared over them; otherwise they are replaced.
    fn make_lists(&mut self, count: usize, capacity: usize, dedup: bool) -> Result<()>;

    /// Prepares, over the lists made, whatever the backend would make the
    /// first time a round of each of `shapes` runs (a device backend's
    /// launches), so that the rounds do not pay for it. Only between runs,
    /// after [`make_lists`](RoundBackend::make_lists). A backend with
    /// nothing to prepare keeps the default, which does nothing.
    ///
    /// # Errors
    /// A shape over a list not made, or one whose kernel is not bound; as
    /// the round's own preparation.
    fn prepare(&mut self, shapes: &[RoundShape]) -> Result<()> {
        let _ = shapes;
        Ok(())
    }

    /// A list's capacity.
    fn capacity(&self, list: ListId) -> usize;

    /// Empties `list` and puts the start items in (which must fit its
    /// capacity and the universe).
    fn fill(&mut self, list: ListId, start: Start<'_>) -> Result<()>;

    /// Enqueues a round: it runs after every round enqueued before it, and
    /// is skipped if the backend is halted when it starts.
    fn enqueue(&mut self, round: &Round) -> Result<()>;

    /// Waits for the oldest `count` rounds whose outcomes were not returned
    /// yet (one host synchronisation) and returns their outcomes, oldest
    /// first. A kernel fault in any of them is an error.
    fn wait(&mut self, count: usize) -> Result<Vec<Outcome>>;

    /// Grows `list` to `capacity` (at least its capacity now), keeping its
    /// items and moving its spilled items in. Only between rounds: every
    /// enqueued round has been waited for.
    fn grow(&mut self, list: ListId, capacity: usize) -> Result<()>;

    /// Leaves the halted state: rounds enqueued from now on run.
    fn resume(&mut self) -> Result<()>;
}

/// Whether a backend's lists, given as each one's dedup flag and capacity,
/// serve for [`RoundBackend::make_lists`]`(count, capacity, dedup)` as they
/// are: as many, deduplicating alike, each at least that large. The rule
/// every backend keeps lists by from run to run.
///
/// ```
/// use warpfit_runtime::worklist::drivers::lists_fit;
/// let have = [(true, 800), (true, 200)];
/// assert!(lists_fit(have.into_iter(), 2, 200, true));
/// assert!(!lists_fit(have.into_iter(), 2, 400, true)); // one is smaller
/// assert!(!lists_fit(have.into_iter(), 2, 200, false)); // they deduplicate
/// assert!(!lists_fit(have.into_iter(), 4, 200, true)); // too few
/// ```
pub fn lists_fit(
    have: impl ExactSizeIterator<Item = (bool, usize)>,
    count: usize,
    capacity: usize,
    dedup: bool,
) -> bool {
    have.len() == count && { have }.all(|(d, c)| d == dedup && c >= capacity)
}

/// The kernels a backend has bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernels {
    /// A frontier kernel (data-driven rounds).
    pub frontier: bool,
    /// A topology kernel (topology-driven rounds).
    pub topology: bool,
    /// A key (near-far ordering).
    pub key: bool,
}

/// The order in which a data-driven driver runs its frontier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Order {
    /// Every item of the frontier, round after round (a FIFO of rounds).
    Fifo,
    /// Near-far piles: items whose key lies in the current bucket of width
    /// `delta` run; the others wait on the far pile.
    NearFar {
        /// The bucket width, in key units (> 0).
        delta: f64,
    },
}

/// How a driver schedules rounds (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Strategy {
    /// Topology-driven to a fixed point.
    Topology,
    /// Data-driven until the worklist is empty.
    Data(Order),
    /// Temporal hybrid: data-driven rounds (in `order`) while the frontier
    /// holds at most `to_topology · n` items, topology-driven rounds from
    /// there until a round changes fewer than `to_data · n` elements, and
    /// back. `0 ≤ to_data ≤ to_topology`.
    Hybrid {
        /// The order of the data-driven rounds.
        order: Order,
        /// Switch to topology-driven rounds above this fraction of `n`.
        to_topology: f64,
        /// Switch back to data-driven rounds below this fraction of `n`.
        to_data: f64,
    },
}

/// The hybrid's default switch to topology-driven rounds: a frontier of more
/// than this fraction of the universe (measured on the CPU: `docs/drivers.md`
/// and `BENCHMARKS.md`, "Worklists and drivers (CPU)").
pub const HYBRID_TO_TOPOLOGY: f64 = 0.05;

/// The hybrid's default switch back to data-driven rounds: a topology round
/// that changed fewer than this fraction of the universe.
pub const HYBRID_TO_DATA: f64 = 0.01;

impl Strategy {
    /// The temporal hybrid with the default thresholds
    /// ([`HYBRID_TO_TOPOLOGY`], [`HYBRID_TO_DATA`]).
    pub fn hybrid(order: Order) -> Self {
        Strategy::Hybrid {
            order,
            to_topology: HYBRID_TO_TOPOLOGY,
            to_data: HYBRID_TO_DATA,
        }
    }

    /// The kernels the strategy runs.
    pub fn needs(&self) -> Kernels {
        let (frontier, topology, order) = match self {
            Strategy::Topology => (false, true, None),
            Strategy::Data(order) => (true, false, Some(order)),
            Strategy::Hybrid { order, .. } => (true, true, Some(order)),
        };
        Kernels {
            frontier,
            topology,
            key: matches!(order, Some(Order::NearFar { .. })),
        }
    }

    fn check(&self) -> Result<()> {
        let order = match *self {
            Strategy::Topology => return Ok(()),
            Strategy::Data(order) => order,
            Strategy::Hybrid {
                order,
                to_topology,
                to_data,
            } => {
                let ordered = (0.0..=f64::INFINITY).contains(&to_data) && to_data <= to_topology;
                if !ordered {
                    return Err(Error::invalid(format!(
                        "hybrid thresholds: need 0 ≤ to_data ≤ to_topology, got to_data = \
                         {to_data}, to_topology = {to_topology}"
                    )));
                }
                order
            }
        };
        if let Order::NearFar { delta } = order {
            if !(delta.is_finite() && delta > 0.0) {
                return Err(Error::invalid(format!(
                    "near-far: the bucket width delta must be finite and positive, got {delta}"
                )));
            }
        }
        Ok(())
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Order::Fifo => f.write_str("fifo"),
            Order::NearFar { delta } => write!(f, "near-far (delta {delta})"),
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::Topology => f.write_str("topology-driven"),
            Strategy::Data(order) => write!(f, "data-driven, {order}"),
            Strategy::Hybrid {
                order,
                to_topology,
                to_data,
            } => write!(
                f,
                "hybrid ({order} below {to_topology}·n, topology-driven until fewer than {to_data}·n change)"
            ),
        }
    }
}

/// A driver's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriverOptions {
    /// The strategy.
    pub strategy: Strategy,
    /// The lists' initial capacity; `None`: a fifth of the universe
    /// ([`default_capacity`](super::default_capacity)). At most the
    /// universe: a larger capacity is clamped to it (a deduplicating list
    /// never holds more; any list grows on demand).
    pub initial_capacity: Option<usize>,
    /// Rounds per host synchronisation (`k`, 1 to
    /// [`MAX_ROUNDS_PER_SYNC`]); `None`: the
    /// backend's preference ([`RoundBackend::rounds_per_sync`]), at most 4
    /// for near-far runs (each bucket advance waits for a round that found
    /// the near pile empty, and the rounds queued behind it run empty).
    pub rounds_per_sync: Option<usize>,
    /// Whether the lists skip an item pushed twice since they were cleared
    /// (a bitmap test-and-set per push).
    pub dedup: bool,
    /// Rounds that processed something after which the run is an error (a
    /// kernel that never stops pushing); `None`: `4·n + 1024`. Empty rounds
    /// queued ahead (past the end, or past a near-far bucket's last item)
    /// do not count.
    pub max_rounds: Option<u64>,
}

impl DriverOptions {
    /// The defaults for `strategy`: lists of `n / 5`, the backend's rounds
    /// per synchronisation, deduplicating lists.
    pub fn new(strategy: Strategy) -> Self {
        DriverOptions {
            strategy,
            initial_capacity: None,
            rounds_per_sync: None,
            dedup: true,
            max_rounds: None,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// The strategy run.
    pub strategy: Strategy,
    /// Rounds up to the last one needed.
    pub rounds: u64,
    /// Of which topology-driven.
    pub topology_rounds: u64,
    /// Rounds enqueued in all: also those run past the end (no-ops) and
    /// those enqueued again after a growth.
    pub enqueued: u64,
    /// Host synchronisations ([`RoundBackend::wait`] calls).
    pub syncs: u64,
    /// Kernel invocations (items processed, `n` per topology round).
    pub processed: u64,
    /// Items pushed, over all rounds.
    pub pushed: u64,
    /// Lists grown after an overflow.
    pub growths: u64,
    /// Time spent on growth beyond the rounds: waiting for the skipped
    /// rounds, growing the lists (moving the spilled items in) and resuming.
    pub growth_time: Duration,
    /// The largest list capacity at the end.
    pub capacity: usize,
    /// Switches between data- and topology-driven rounds (hybrid).
    pub switches: u64,
    /// Far-pile splits (near-far: buckets advanced).
    pub far_rounds: u64,
    /// Wall time from the first enqueue to the last outcome.
    pub time: Duration,
    /// Per host synchronisation: the time since the previous one returned
    /// (the first: since the run started).
    pub sync_times: Vec<Duration>,
}

impl RunReport {
    /// An empty report of a run of `strategy`.
    pub(crate) fn new(strategy: Strategy) -> Self {
        RunReport {
            strategy,
            rounds: 0,
            topology_rounds: 0,
            enqueued: 0,
            syncs: 0,
            processed: 0,
            pushed: 0,
            growths: 0,
            growth_time: Duration::ZERO,
            capacity: 0,
            switches: 0,
            far_rounds: 0,
            time: Duration::ZERO,
            sync_times: Vec::new(),
        }
    }
}

/// A driver: runs a backend's kernels to the end under a [`Strategy`].
///
/// ```
/// use warpfit_runtime::worklist::drivers::{CpuRounds, Driver, DriverOptions, Order, Start, Strategy};
/// use warpfit_runtime::worklist::{atomic_min, push, Atomic};
///
/// // Hop counts along the path 0 → 1 → … → 9, data-driven.
/// let mut hops = vec![u32::MAX; 10];
/// hops[0] = 0;
/// let h = Atomic::from_mut_slice(&mut hops);
/// let mut cpu = CpuRounds::new(10)?.frontier(|v, step| {
///     let next = v + 1;
///     if next < 10 && h[v as usize].load() + 1 < atomic_min(&h[next as usize], h[v as usize].load() + 1) {
///         push(step.out, next);
///     }
/// });
/// let report = Driver::new(DriverOptions::new(Strategy::Data(Order::Fifo)))
///     .run(&mut cpu, Start::Items(&[0]))?;
/// assert_eq!(report.rounds, 10); // the tenth finds nothing to do
/// drop(cpu);
/// assert_eq!(hops, (0..10).collect::<Vec<u32>>());
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Driver {
    options: DriverOptions,
}

impl Driver {
    /// A driver with these options.
    pub fn new(options: DriverOptions) -> Self {
        Driver { options }
    }

    /// The options.
    pub fn options(&self) -> &DriverOptions {
        &self.options
    }

    /// Makes the lists a run under these options from `start` uses (sized
    /// for it; a run from a start as large or smaller keeps them) and has
    /// `backend` prepare every kind of round the strategy may run over them
    /// ([`RoundBackend::prepare`]), so that the runs after it (any number,
    /// from any start) keep both and spend their time on rounds only: what
    /// a device backend prepares the first time a launch runs (arguments,
    /// task sources, a work-donation board) costs it some hundred
    /// microseconds a launch, as much as a short round. Running without it
    /// prepares the same lazily, inside the run.
    ///
    /// ```
    /// use warpfit_runtime::worklist::drivers::{CpuRounds, Driver, DriverOptions, Order, Start, Strategy};
    /// use warpfit_runtime::worklist::{atomic_min, push, Atomic};
    ///
    /// let mut hops = vec![u32::MAX; 10];
    /// let h = Atomic::from_mut_slice(&mut hops);
    /// let mut cpu = CpuRounds::new(10)?.frontier(|v, step| {
    ///     let next = v + 1;
    ///     if next < 10 && h[v as usize].load() + 1 < atomic_min(&h[next as usize], h[v as usize].load() + 1) {
    ///         push(step.out, next);
    ///     }
    /// });
    /// let driver = Driver::new(DriverOptions::new(Strategy::Data(Order::Fifo)));
    /// driver.prepare(&mut cpu, Start::Items(&[0]))?;
    /// for source in [5, 0] {
    ///     h.iter().for_each(|c| c.store(u32::MAX));
    ///     h[source].store(0);
    ///     let report = driver.run(&mut cpu, Start::Items(&[source as u32]))?;
    ///     assert_eq!(report.rounds as usize, 10 - source);
    /// }
    /// drop(cpu);
    /// assert_eq!(hops, (0..10).collect::<Vec<u32>>());
    /// # Ok::<(), warpfit_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// Invalid options, a kernel the strategy needs that the backend lacks,
    /// the lists' memory, the backend's preparation.
    pub fn prepare<B: RoundBackend + ?Sized>(
        &self,
        backend: &mut B,
        start: Start<'_>,
    ) -> Result<()> {
        engine::prepare(backend, &self.options, start)
    }

    /// Runs `backend`'s kernels from `start` (the first frontier; unused by
    /// topology-driven rounds) until the strategy's end: an empty frontier
    /// and far pile, or a topology round that changed nothing.
    ///
    /// # Errors
    /// Invalid options, a kernel the strategy needs that the backend lacks,
    /// a backend or kernel fault, a round past the end that still pushed
    /// (a kernel that is not monotone), more than
    /// [`DriverOptions::max_rounds`] rounds.
    pub fn run<B: RoundBackend + ?Sized>(
        &self,
        backend: &mut B,
        start: Start<'_>,
    ) -> Result<RunReport> {
        engine::run(backend, &self.options, start, &mut |_| {})
    }

    /// [`Driver::run`], calling `on_sync(report)` after each host
    /// synchronisation with the report so far (rounds, items processed):
    /// for progress on long runs.
    ///
    /// # Errors
    /// As [`Driver::run`].
    pub fn run_observed<B: RoundBackend + ?Sized>(
        &self,
        backend: &mut B,
        start: Start<'_>,
        on_sync: &mut dyn FnMut(&RunReport),
    ) -> Result<RunReport> {
        engine::run(backend, &self.options, start, on_sync)
    }
}
