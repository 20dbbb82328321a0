//! What a throttled launch is asked to do: the policy, the cache to fit, the
//! partitioner and their parameters.

use crate::error::excerpt;
use crate::mem::parse_bytes;
use crate::partition::{
    column_blocks, dbwp, Bisection, Capacity, CoarsenOptions, Partition, PartitionOptions,
    WorkGraphOf, DEFAULT_SAFETY,
};
use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// How the cache-fit partitions of a throttled kernel are scheduled
/// (Section 3 of Chen et al., ATC'18).
///
/// Parsed case-insensitively from `org`, `org_r`, `cf`, `cfq`, `sj`, `sjq`
/// or `auto`; [`Display`](fmt::Display) writes the same lower-case names.
///
/// ```
/// use warpfit_runtime::schedule::ThrottlePolicy;
/// assert_eq!("CfQ".parse::<ThrottlePolicy>()?, ThrottlePolicy::Cfq);
/// assert_eq!(ThrottlePolicy::OrgR.to_string(), "org_r");
/// assert!("cf-q".parse::<ThrottlePolicy>().is_err());
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ThrottlePolicy {
    /// The unthrottled launch: every task whole, in task order.
    Org,
    /// The original schedule (one launch) on remapped data with fine tasks
    /// reordered: what data layout alone gives. On the GPU each task's fine
    /// tasks are sorted by their new gathered element, as a library kernel
    /// reads the remapped matrix (by partition where `remap` puts the
    /// cache-fit schedules in the same numbering).
    OrgR,
    /// Cache-fit: one launch per partition, in partition order (strict
    /// barriers between partitions).
    Cf,
    /// Cache-fit queue: one launch whose warps take chunks of segments from
    /// a queue in partition order (relaxed barriers), see
    /// [`ChunkQueue`](super::ChunkQueue).
    Cfq,
    /// Split-join: SJ-tree nodes profiled stand-alone, the cheapest set
    /// cover chosen by [`recombine`](super::recombine), one launch per
    /// chosen node.
    Sj,
    /// Split-join with a chunk queue inside each chosen node's launch.
    Sjq,
    /// Chooses among the above: on CUDA by a cost model and one timed run
    /// of each candidate it keeps, or by timing every schedule
    /// ([`ThrottleOptions::exhaustive`]).
    #[default]
    Auto,
}

impl ThrottlePolicy {
    /// Every policy, in the order of its names in [`ThrottlePolicy::NAMES`].
    pub const ALL: [ThrottlePolicy; 7] = [
        ThrottlePolicy::Org,
        ThrottlePolicy::OrgR,
        ThrottlePolicy::Cf,
        ThrottlePolicy::Cfq,
        ThrottlePolicy::Sj,
        ThrottlePolicy::Sjq,
        ThrottlePolicy::Auto,
    ];

    /// The names [`FromStr`] accepts (case-insensitively).
    pub const NAMES: [&'static str; 7] = ["org", "org_r", "cf", "cfq", "sj", "sjq", "auto"];

    /// The policy's name, as [`FromStr`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            ThrottlePolicy::Org => "org",
            ThrottlePolicy::OrgR => "org_r",
            ThrottlePolicy::Cf => "cf",
            ThrottlePolicy::Cfq => "cfq",
            ThrottlePolicy::Sj => "sj",
            ThrottlePolicy::Sjq => "sjq",
            ThrottlePolicy::Auto => "auto",
        }
    }

    /// Whether the policy needs SJ-tree profiling before it can launch.
    pub fn needs_profiling(self) -> bool {
        matches!(
            self,
            ThrottlePolicy::Sj | ThrottlePolicy::Sjq | ThrottlePolicy::Auto
        )
    }

    /// Whether the policy launches from a device chunk queue.
    pub fn uses_queue(self) -> bool {
        matches!(self, ThrottlePolicy::Cfq | ThrottlePolicy::Sjq)
    }

    /// Whether the policy needs a partition at all (`org` does not).
    pub fn needs_partition(self) -> bool {
        self != ThrottlePolicy::Org
    }
}

impl fmt::Display for ThrottlePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ThrottlePolicy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        parse_named(s, &Self::ALL, Self::name, "throttling policy")
    }
}

/// The value of `all` whose name is `s` (trimmed, any case), else an error
/// quoting `s` and listing the names: the parser of the named choices.
fn parse_named<T: Copy>(s: &str, all: &[T], name: fn(T) -> &'static str, what: &str) -> Result<T> {
    let lower = s.trim().to_ascii_lowercase();
    all.iter()
        .copied()
        .find(|&v| name(v) == lower)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|&v| name(v)).collect();
            Error::invalid(format!(
                "unknown {what} `{}`: expected one of {}",
                excerpt(s.as_bytes()),
                names.join(", ")
            ))
        })
}

/// Which renumbering a remapped schedule runs in
/// ([`ThrottleOptions::remap_order`]).
///
/// Parsed case-insensitively from `partitions` or `levels`.
///
/// ```
/// use warpfit_runtime::schedule::RemapOrder;
/// assert_eq!("Levels".parse::<RemapOrder>()?, RemapOrder::Levels);
/// assert_eq!(RemapOrder::default().to_string(), "partitions");
/// assert!("bfs".parse::<RemapOrder>().is_err());
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RemapOrder {
    /// Algorithm 5 of the plan's partition
    /// ([`Remapping::new`](crate::partition::Remapping::new), or
    /// [`Remapping::symmetric`](crate::partition::Remapping::symmetric) for
    /// a square kernel): packs each partition's data. The paper's remapping.
    #[default]
    Partitions,
    /// The breadth-first (Cuthill–McKee) order of the tasks' tuples from
    /// task 0, one permutation for both sides
    /// ([`Remapping::levels_of`](crate::partition::Remapping::levels_of)):
    /// brings a randomly numbered mesh's neighbours together, which no
    /// partition of the index space can. Square kernels only. The
    /// partitions are still those of the kernel's own numbering; where the
    /// order gives the locality, `org_r` needs none.
    Levels,
}

impl RemapOrder {
    /// Both orders, in the order of [`RemapOrder::NAMES`].
    pub const ALL: [RemapOrder; 2] = [RemapOrder::Partitions, RemapOrder::Levels];
    /// The names [`FromStr`] accepts (case-insensitively).
    pub const NAMES: [&'static str; 2] = ["partitions", "levels"];

    /// The order's name, as [`FromStr`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            RemapOrder::Partitions => "partitions",
            RemapOrder::Levels => "levels",
        }
    }
}

impl fmt::Display for RemapOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RemapOrder {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        parse_named(s, &Self::ALL, Self::name, "remapping order")
    }
}

/// The cache a partition's data must fit.
///
/// Parsed from `l2` (case-insensitive: the device's L2, resolved by
/// [`CacheSize::resolve`]) or a byte size as [`parse_bytes`] reads it
/// (`8MiB`, `512KiB`, `50MB`, `1048576`). [`Display`](fmt::Display) writes a
/// form that parses back to the same value.
///
/// On the CPU backend, `l2` stands for the cache a CPU pass can count on:
/// the share of the last-level cache that [`cpu_cache_share`] gives
/// (the whole LLC when the executor's threads cover every CPU sharing it),
/// passed to [`CacheSize::resolve`] in place of the device's L2.
///
/// [`cpu_cache_share`]: super::cpu_cache_share
///
/// ```
/// use warpfit_runtime::schedule::CacheSize;
/// assert_eq!("L2".parse::<CacheSize>()?, CacheSize::L2);
/// assert_eq!("8MiB".parse::<CacheSize>()?, CacheSize::Bytes(8 << 20));
/// assert_eq!(CacheSize::Bytes(8 << 20).to_string(), "8MiB");
/// assert_eq!(CacheSize::L2.resolve(Some(50 << 20))?, 50 << 20);
/// assert!(CacheSize::L2.resolve(None).is_err());
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CacheSize {
    /// The L2 of the device the kernel runs on (on the CPU backend: its
    /// share of the last-level cache, [`cpu_cache_share`](super::cpu_cache_share)).
    #[default]
    L2,
    /// An explicit size in bytes.
    Bytes(u64),
}

impl CacheSize {
    /// The size in bytes, taking `l2_bytes` (the device's L2, `None` when it
    /// has none or does not say) for [`CacheSize::L2`].
    ///
    /// # Errors
    /// [`CacheSize::L2`] without an L2 size, or a size of 0 bytes.
    pub fn resolve(self, l2_bytes: Option<u64>) -> Result<u64> {
        let bytes = match self {
            CacheSize::Bytes(b) => b,
            CacheSize::L2 => l2_bytes.ok_or_else(|| {
                Error::invalid(
                    "cache size `l2`: this device reports no L2 size; give a byte size such as 8MiB",
                )
            })?,
        };
        if bytes == 0 {
            return Err(Error::invalid("cache size must be at least 1 byte, got 0"));
        }
        Ok(bytes)
    }
}

impl fmt::Display for CacheSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CacheSize::L2 => f.write_str("l2"),
            CacheSize::Bytes(b) if b != 0 && b % (1 << 30) == 0 => write!(f, "{}GiB", b >> 30),
            CacheSize::Bytes(b) if b != 0 && b % (1 << 20) == 0 => write!(f, "{}MiB", b >> 20),
            CacheSize::Bytes(b) if b != 0 && b % (1 << 10) == 0 => write!(f, "{}KiB", b >> 10),
            CacheSize::Bytes(b) => write!(f, "{b}"),
        }
    }
}

impl FromStr for CacheSize {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        if s.trim().eq_ignore_ascii_case("l2") {
            return Ok(CacheSize::L2);
        }
        parse_bytes(s)
            .map(CacheSize::Bytes)
            .map_err(|e| Error::invalid(format!("cache size (`l2` or a byte size): {e}")))
    }
}

/// How a throttled kernel's work is cut into cache-fit partitions: DBWP
/// with `kd` tiling or coarsened `bisect`ion, or `columns` blocks
/// (case-insensitive).
///
/// ```
/// use warpfit_runtime::partition::Bisection;
/// use warpfit_runtime::schedule::Partitioner;
/// let p: Partitioner = "KD".parse()?;
/// assert_eq!(p.bisection(), Some(Bisection::KdTiling));
/// assert_eq!(Partitioner::Bisect.to_string(), "bisect");
/// assert_eq!("columns".parse::<Partitioner>()?.bisection(), None);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Partitioner {
    /// K-D tiling ([`Bisection::KdTiling`]): O(n) per split, the fast choice
    /// when planning time matters (pipelined planning, few iterations).
    #[default]
    Kd,
    /// Coarsened multilevel bisection ([`Bisection::Coarsened`] with default
    /// [`CoarsenOptions`]): slower, fewer replicated vertices.
    Bisect,
    /// Column blocks ([`column_blocks`](crate::partition::column_blocks)):
    /// the gathered array cut into the fewest equal ranges that fit the
    /// cache, every task streamed through all of them. For kernels whose
    /// only reuse is the gathered array (SpMV with `x` beyond the cache).
    Columns,
}

impl Partitioner {
    /// The partitioner's DBWP [`Bisection`] (with default
    /// [`CoarsenOptions`]), or `None` for column blocks.
    pub fn bisection(self) -> Option<Bisection> {
        match self {
            Partitioner::Kd => Some(Bisection::KdTiling),
            Partitioner::Bisect => Some(Bisection::Coarsened(CoarsenOptions::default())),
            Partitioner::Columns => None,
        }
    }

    /// The partitioner's name, as [`FromStr`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            Partitioner::Kd => "kd",
            Partitioner::Bisect => "bisect",
            Partitioner::Columns => "columns",
        }
    }
}

impl fmt::Display for Partitioner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Partitioner {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "kd" => Ok(Partitioner::Kd),
            "bisect" => Ok(Partitioner::Bisect),
            "columns" => Ok(Partitioner::Columns),
            _ => Err(Error::invalid(format!(
                "unknown partitioner `{}`: expected kd (K-D tiling), bisect (coarsened bisection) or columns (column blocks)",
                excerpt(s.as_bytes())
            ))),
        }
    }
}

/// Default CF-Q / SJ-Q chunk size, in work units (fine tasks; a segment
/// counts at least 1): the work budget of one packed CTE warp on the GPU
/// (`Split::Budget(512)`), so one dequeue feeds a warp about as much work
/// as a packed warp of the unthrottled launch. To be re-measured per device.
pub const DEFAULT_CHUNK: u32 = 512;

/// The options of a throttled kernel: run-time overrides of the
/// `#[throttled(..)]` attribute's defaults.
///
/// A plain struct with public fields and `with_*` builders; `Default` is
/// `auto` on the device's L2 at [`DEFAULT_SAFETY`], K-D tiling, chunks of
/// [`DEFAULT_CHUNK`], no remapping.
///
/// ```
/// use warpfit_runtime::schedule::{CacheSize, Partitioner, ThrottleOptions, ThrottlePolicy};
/// let opts = ThrottleOptions::default()
///     .with_policy("cfq".parse()?)
///     .with_cache("8MiB".parse()?)
///     .with_chunk(256);
/// opts.validate()?;
/// assert_eq!(opts.policy, ThrottlePolicy::Cfq);
/// assert_eq!(opts.cache, CacheSize::Bytes(8 << 20));
/// assert_eq!(opts.partitioner, Partitioner::Kd);
/// assert!(ThrottleOptions::default().with_safety(1.5).validate().is_err());
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ThrottleOptions {
    /// The schedule (default [`ThrottlePolicy::Auto`]).
    pub policy: ThrottlePolicy,
    /// The cache partitions must fit (default [`CacheSize::L2`]).
    pub cache: CacheSize,
    /// The bisection method (default [`Partitioner::Kd`]).
    pub partitioner: Partitioner,
    /// Fraction of the cache a partition may fill, in `(0, 1]` (default
    /// [`DEFAULT_SAFETY`]; see there why half).
    pub safety: f64,
    /// Work units (fine tasks, a segment counting at least 1) per chunk of
    /// the CF-Q and SJ-Q queues, at least 1 (default [`DEFAULT_CHUNK`]).
    pub chunk: u32,
    /// Whether `cf`, `cfq`, `sj` and `sjq` also remap tasks and gathered
    /// elements (Algorithm 5, [`Remapping`](crate::partition::Remapping)),
    /// which changes the order of the user's vectors. `org_r` always remaps
    /// and `org` never does. Default `false`: fine tasks are reordered in
    /// every throttled policy (that needs no change visible to the user);
    /// remapping is opt-in.
    pub remap: bool,
    /// The renumbering of the remapped schedules. `None` (the default):
    /// Algorithm 5 ([`RemapOrder::Partitions`]), and `auto` on a square
    /// kernel whose cache-fit schedules are not remapped (`remap` off)
    /// times `org_r` in the level order as well and keeps the faster
    /// ([`ThrottleOptions::remap_orders_to_time`]). `Some(order)`: that
    /// order only.
    pub remap_order: Option<RemapOrder>,
    /// Whether the handle's layouts hold the gather's index array as 16-bit
    /// offsets from the task where every entry fits (CUDA; default `true`).
    /// A mesh or geometric graph in a local numbering has all its columns
    /// within a few thousand of the row, and an SpMV that streams its
    /// matrix at copy bandwidth then moves 6 bytes per nonzero instead of 8.
    /// `org` always reads the arrays as given; the CPU backend never
    /// narrows.
    pub narrow_index: bool,
    /// How `auto` chooses on CUDA. `false` (the default): by a cost model
    /// over the kernel's shape (the gathered array against the cache, the
    /// share of a warp's gathers that fall in one cache line, in the
    /// kernel's numbering and in the level order), then one timed run of
    /// each candidate it keeps, inside real launches; plans made on the
    /// device. `true`: the plan made on the host and every schedule, warp
    /// budget, serial bound and queue timed on the first launch (slow;
    /// what `warpfit bench throttle` measures the model against).
    pub exhaustive: bool,
    /// Whether a model-driven `auto` reads and writes its decision in the
    /// plan cache on disk (beside the kernel cache; default `true`), so
    /// that a later run over the same arrays, options and device is
    /// throttled from its first launch.
    pub plan_cache: bool,
    /// How many launches the caller expects to make with the handle (an
    /// application's iteration count), or `None` (the default) when it
    /// does not know. A model-driven `auto` builds a candidate only where
    /// its preparation can pay for itself within this many launches; a
    /// short run (five iterations) then stays with `org` instead of
    /// spending tens of milliseconds on a plan it cannot earn back. `None`
    /// weighs preparations over 20 launches. At least 1
    /// ([`ThrottleOptions::validate`]).
    pub expected_launches: Option<u64>,
    /// Whether the caller renumbers its own vectors and matrix when a
    /// model-driven `auto` on CUDA chooses the level order (default
    /// `false`). CG does: its solve switches to the renumbered matrix once
    /// the order is known, so a layout of the handle's own in that order
    /// would be built, prepared and timed for one launch only. With this
    /// set, the handle makes the order, keeps it for
    /// `device_level_order` and the plan cache, and runs `org` (whose
    /// timed run is the launch's result); the caller confirms the order by
    /// timing its own renumbered launch against `org`'s timed run
    /// (`ModelReport::timed`) and goes back where it is slower.
    pub caller_renumbers: bool,
}

impl Default for ThrottleOptions {
    fn default() -> Self {
        ThrottleOptions {
            policy: ThrottlePolicy::default(),
            cache: CacheSize::default(),
            partitioner: Partitioner::default(),
            safety: DEFAULT_SAFETY,
            chunk: DEFAULT_CHUNK,
            remap: false,
            remap_order: None,
            narrow_index: true,
            exhaustive: false,
            plan_cache: true,
            expected_launches: None,
            caller_renumbers: false,
        }
    }
}

impl ThrottleOptions {
    /// The same options with another policy.
    pub fn with_policy(self, policy: ThrottlePolicy) -> Self {
        ThrottleOptions { policy, ..self }
    }
    /// The same options with another cache size.
    pub fn with_cache(self, cache: CacheSize) -> Self {
        ThrottleOptions { cache, ..self }
    }
    /// The same options with another partitioner.
    pub fn with_partitioner(self, partitioner: Partitioner) -> Self {
        ThrottleOptions {
            partitioner,
            ..self
        }
    }
    /// The same options with another safety factor (checked by
    /// [`ThrottleOptions::validate`]).
    pub fn with_safety(self, safety: f64) -> Self {
        ThrottleOptions { safety, ..self }
    }
    /// The same options with another chunk size (checked by
    /// [`ThrottleOptions::validate`]).
    pub fn with_chunk(self, chunk: u32) -> Self {
        ThrottleOptions { chunk, ..self }
    }
    /// The same options with the narrow index layouts on or off.
    pub fn with_narrow_index(self, narrow_index: bool) -> Self {
        ThrottleOptions {
            narrow_index,
            ..self
        }
    }
    /// The same options with `auto`'s exhaustive sweep on or off
    /// ([`ThrottleOptions::exhaustive`]).
    pub fn with_exhaustive(self, exhaustive: bool) -> Self {
        ThrottleOptions { exhaustive, ..self }
    }
    /// The same options with the plan cache on or off
    /// ([`ThrottleOptions::plan_cache`]).
    pub fn with_plan_cache(self, plan_cache: bool) -> Self {
        ThrottleOptions { plan_cache, ..self }
    }
    /// The same options expecting `launches` launches
    /// ([`ThrottleOptions::expected_launches`]; checked by
    /// [`ThrottleOptions::validate`]).
    ///
    /// ```
    /// use warpfit_runtime::schedule::ThrottleOptions;
    /// let o = ThrottleOptions::default().with_expected_launches(50);
    /// assert_eq!(o.expected_launches, Some(50));
    /// assert!(o.validate().is_ok());
    /// assert!(ThrottleOptions::default().with_expected_launches(0).validate().is_err());
    /// ```
    pub fn with_expected_launches(self, launches: u64) -> Self {
        ThrottleOptions {
            expected_launches: Some(launches),
            ..self
        }
    }
    /// The same options with [`ThrottleOptions::caller_renumbers`] on or
    /// off.
    ///
    /// ```
    /// use warpfit_runtime::schedule::ThrottleOptions;
    /// assert!(!ThrottleOptions::default().caller_renumbers);
    /// assert!(ThrottleOptions::default().with_caller_renumbers(true).caller_renumbers);
    /// ```
    pub fn with_caller_renumbers(self, caller_renumbers: bool) -> Self {
        ThrottleOptions {
            caller_renumbers,
            ..self
        }
    }
    /// Whether `auto` on a CUDA device decides by the cost model with
    /// plans made on the device (not [`ThrottleOptions::exhaustive`]).
    pub fn decides_by_model(&self) -> bool {
        self.policy == ThrottlePolicy::Auto && !self.exhaustive
    }
    /// The same options with remapping on or off.
    pub fn with_remap(self, remap: bool) -> Self {
        ThrottleOptions { remap, ..self }
    }

    /// The same options with the remapping order pinned to `order`.
    pub fn with_remap_order(self, order: RemapOrder) -> Self {
        ThrottleOptions {
            remap_order: Some(order),
            ..self
        }
    }

    /// The renumberings a throttled handle makes for these options and a
    /// kernel that can be remapped (`square`: as many tasks as gathered
    /// elements), the one remapped schedules run in first; empty when no
    /// schedule of the policy runs remapped. Only `auto` gets two: an
    /// unpinned order, a square kernel and `remap` off, where `org_r` is the
    /// one remapped candidate and is timed in both.
    ///
    /// ```
    /// use warpfit_runtime::schedule::{RemapOrder, ThrottleOptions, ThrottlePolicy};
    /// let auto = ThrottleOptions::default().with_policy(ThrottlePolicy::Auto);
    /// assert_eq!(auto.remap_orders_to_time(true), [RemapOrder::Partitions, RemapOrder::Levels]);
    /// assert_eq!(auto.remap_orders_to_time(false), [RemapOrder::Partitions]);
    /// let pinned = auto.with_remap_order(RemapOrder::Levels);
    /// assert_eq!(pinned.remap_orders_to_time(true), [RemapOrder::Levels]);
    /// let cf = ThrottleOptions::default().with_policy(ThrottlePolicy::Cf);
    /// assert!(cf.remap_orders_to_time(true).is_empty());
    /// ```
    pub fn remap_orders_to_time(&self, square: bool) -> Vec<RemapOrder> {
        let any = self.remap || matches!(self.policy, ThrottlePolicy::OrgR | ThrottlePolicy::Auto);
        match (any, self.remap_order) {
            (false, _) => Vec::new(),
            (true, Some(order)) => vec![order],
            (true, None) if square && !self.remap && self.policy == ThrottlePolicy::Auto => {
                vec![RemapOrder::Partitions, RemapOrder::Levels]
            }
            (true, None) => vec![RemapOrder::Partitions],
        }
    }

    /// Whether the policy's launches run on remapped data: always for
    /// `org_r`, never for `org`, else as [`ThrottleOptions::remap`] says.
    pub fn remaps(&self) -> bool {
        match self.policy {
            ThrottlePolicy::Org => false,
            ThrottlePolicy::OrgR => true,
            _ => self.remap,
        }
    }

    /// Checks the numeric options.
    ///
    /// # Errors
    /// `safety` outside `(0, 1]` (NaN included), `chunk` of 0, or an
    /// expected launch count of 0.
    pub fn validate(&self) -> Result<()> {
        if !(self.safety > 0.0 && self.safety <= 1.0) {
            return Err(Error::invalid(format!(
                "throttle safety factor must be in (0, 1], got {:?}",
                self.safety
            )));
        }
        if self.chunk == 0 {
            return Err(Error::invalid(
                "throttle chunk size must be at least 1 work unit, got 0",
            ));
        }
        if self.expected_launches == Some(0) {
            return Err(Error::invalid(
                "the expected launch count of a throttled handle must be at least 1, got 0",
            ));
        }
        Ok(())
    }

    /// The [`PartitionOptions`] of `graph` under these options: the
    /// capacity T from the cache (`l2_bytes` for [`CacheSize::L2`]), the
    /// safety factor and the graph's element sizes, and the partitioner's
    /// bisection.
    ///
    /// # Errors
    /// Invalid options ([`ThrottleOptions::validate`]), an unresolvable cache
    /// ([`CacheSize::resolve`]), or a cache too small for two elements.
    ///
    /// Column blocks have no DBWP options: their capacity counts gathered
    /// elements only ([`ThrottleOptions::partition`]).
    pub fn partition_options(
        &self,
        graph: &WorkGraphOf<'_>,
        l2_bytes: Option<u64>,
    ) -> Result<PartitionOptions> {
        self.validate()?;
        let bisection = self.partitioner.bisection().ok_or_else(|| {
            Error::invalid("column blocks are not a DBWP bisection: use ThrottleOptions::partition")
        })?;
        let bytes = self.cache.resolve(l2_bytes)?;
        let capacity = Capacity::for_graph(graph, bytes)
            .with_safety(self.safety)
            .vertices()?;
        Ok(PartitionOptions {
            capacity,
            bisection,
        })
    }

    /// The cache-fit partition of `graph` under these options: DBWP with
    /// [`ThrottleOptions::partition_options`], or column blocks of at most
    /// `safety × cache / gathered element size` gathered elements.
    ///
    /// # Errors
    /// As [`ThrottleOptions::partition_options`], and the partitioner's.
    pub fn partition(
        &self,
        graph: &WorkGraphOf<'_>,
        l2_bytes: Option<u64>,
        progress: Option<&(dyn Fn(u64) + Sync)>,
    ) -> Result<Partition> {
        self.validate()?;
        match self.partitioner {
            Partitioner::Columns => {
                let bytes = self.cache.resolve(l2_bytes)? as f64 * self.safety;
                let elem = graph.gathered_elem_bytes().max(1) as f64;
                let capacity = (bytes / elem).floor().clamp(1.0, f64::from(u32::MAX)) as u32;
                column_blocks(graph, capacity)
            }
            _ => dbwp(graph, &self.partition_options(graph, l2_bytes)?, progress),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_round_trip_case_insensitively() {
        for (p, n) in ThrottlePolicy::ALL.into_iter().zip(ThrottlePolicy::NAMES) {
            assert_eq!(p.to_string(), n);
            assert_eq!(n.parse::<ThrottlePolicy>().unwrap(), p);
            assert_eq!(n.to_uppercase().parse::<ThrottlePolicy>().unwrap(), p);
        }
        let e = "cf-q".parse::<ThrottlePolicy>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown throttling policy `cf-q`: expected one of org, org_r, cf, cfq, sj, sjq, auto"
        );
        let e = "\u{1b}[2J"
            .parse::<ThrottlePolicy>()
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\u{1b}') && !e.contains('\n'), "{e}");
        assert!(ThrottlePolicy::Sjq.uses_queue() && ThrottlePolicy::Sjq.needs_profiling());
        assert!(!ThrottlePolicy::Org.needs_partition());
    }

    #[test]
    fn cache_sizes_parse_and_print_back() {
        let cases = [
            ("l2", CacheSize::L2),
            (" L2 ", CacheSize::L2),
            ("8MiB", CacheSize::Bytes(8 << 20)),
            ("512KiB", CacheSize::Bytes(512 << 10)),
            ("50MB", CacheSize::Bytes(50_000_000)),
            ("1048576", CacheSize::Bytes(1 << 20)),
            ("1000", CacheSize::Bytes(1000)),
            ("2GiB", CacheSize::Bytes(2 << 30)),
        ];
        for (s, want) in cases {
            let got: CacheSize = s.parse().unwrap();
            assert_eq!(got, want, "{s}");
            assert_eq!(got.to_string().parse::<CacheSize>().unwrap(), got);
        }
        assert_eq!(CacheSize::Bytes(1 << 20).to_string(), "1MiB");
        let e = "8 parsecs".parse::<CacheSize>().unwrap_err().to_string();
        assert!(e.starts_with("cache size (`l2` or a byte size): "), "{e}");
        assert!(CacheSize::Bytes(0).resolve(None).is_err());
        assert_eq!(CacheSize::Bytes(7).resolve(None).unwrap(), 7);
        let e = CacheSize::L2.resolve(None).unwrap_err().to_string();
        assert!(e.contains("no L2 size"), "{e}");
    }

    #[test]
    fn partitioner_names() {
        assert_eq!(
            "bisect".parse::<Partitioner>().unwrap(),
            Partitioner::Bisect
        );
        assert_eq!(" Kd".parse::<Partitioner>().unwrap(), Partitioner::Kd);
        assert!(matches!(
            Partitioner::Bisect.bisection(),
            Some(Bisection::Coarsened(_))
        ));
        let e = "metis".parse::<Partitioner>().unwrap_err().to_string();
        assert!(e.contains("`metis`") && e.contains("kd") && e.contains("bisect"));
    }

    #[test]
    fn options_validate_and_give_partition_options() {
        let o = ThrottleOptions::default();
        assert_eq!(o.policy, ThrottlePolicy::Auto);
        assert!(o.validate().is_ok() && !o.remaps());
        assert!(o.with_policy(ThrottlePolicy::OrgR).remaps());
        assert!(!o.with_remap(true).with_policy(ThrottlePolicy::Org).remaps());
        assert!(o.with_chunk(0).validate().is_err());
        assert!(o.with_safety(f64::NAN).validate().is_err());
        assert!(o.with_safety(0.0).validate().is_err());
        let g = crate::partition::WorkGraph::new(vec![0, 2], vec![0, 1], 2, 8, 4).unwrap();
        let p = o
            .with_cache(CacheSize::Bytes(1 << 10))
            .partition_options(&g, None)
            .unwrap();
        assert_eq!(p.capacity, 64); // 0.5 × 1024 / 8
        assert_eq!(p.bisection, Bisection::KdTiling);
        assert!(o.partition_options(&g, None).is_err());
        assert_eq!(
            o.with_safety(1.0)
                .partition_options(&g, Some(1 << 10))
                .unwrap()
                .capacity,
            128
        );
    }
}
