//! Graph drivers over a matrix read as a directed graph: entry `(i, j)` is the
//! edge `i → j`. Kernels pull along in-edges, so each driver works on the
//! transposed pattern and every vertex is written by its own task.
//!
//! The drivers keep the graph and their vectors on the device and prepare
//! each launch once: two sets of launches, one per direction of the swap
//! between the current and the next vector, alternate. An iteration
//! downloads at most one number (sssp, bfs: how many vertices changed;
//! pagerank: nothing, a marker paces the host), read a few
//! iterations behind the launches (`driver`), so the device never waits
//! for the host.

use super::kernels::{
    bfs_pull, count_changed, dangling_rank, pagerank_contrib, pagerank_pull_resident, permute,
    relax,
};
use super::pipelined::{pipelined, slot_of, Probe, Rounds, DEPTH};
use super::throttled::{plan_numbering, ThrottledRun};
use super::timing::{IterationTimes, Timings};
use crate::runtime::{mem, Csr};
use crate::{
    split_one_task, Device, DeviceVec, Error, LaunchConfig, OneTaskSplit, PreparedLaunch, Result,
    ThrottleOptions,
};
use std::time::{Duration, Instant};

/// In-edges of every vertex plus out-degrees, built once per matrix.
#[derive(Debug, Clone)]
pub struct Graph {
    /// Row `v` lists the sources `u` of the edges `u → v`; its values are the
    /// edge weights `|a(u, v)|` (1 for a pattern matrix).
    pub incoming: Csr<f32>,
    /// Number of out-edges of every vertex (stored entries of its row).
    pub out_degree: Vec<u32>,
}

impl Graph {
    /// Reads a square matrix as a graph.
    pub fn from_matrix(a: &Csr<f32>) -> Result<Self> {
        if a.nrows() != a.ncols() {
            return Err(Error::invalid(format!(
                "graph apps need a square matrix, got {} x {}",
                a.nrows(),
                a.ncols()
            )));
        }
        let mut incoming = a.transpose();
        incoming.values_mut().iter_mut().for_each(|w| *w = w.abs());
        let out_degree = a.row_ptr().windows(2).map(|w| w[1] - w[0]).collect();
        Ok(Graph {
            incoming,
            out_degree,
        })
    }

    /// Number of vertices.
    pub fn len(&self) -> usize {
        self.out_degree.len()
    }

    /// Whether the graph has no vertex.
    pub fn is_empty(&self) -> bool {
        self.out_degree.is_empty()
    }

    /// Number of edges.
    pub fn edges(&self) -> usize {
        self.incoming.nnz()
    }

    /// The in-edges on `device`: row pointers, sources.
    pub(crate) fn upload_pattern(
        &self,
        device: &Device,
    ) -> Result<(DeviceVec<u32>, DeviceVec<u32>)> {
        Ok((
            device.upload(self.incoming.row_ptr())?,
            device.upload(self.incoming.col_idx())?,
        ))
    }

    /// The vertex count as the u32 a whole-array reduction takes.
    pub(crate) fn len_u32(&self) -> Result<u32> {
        u32::try_from(self.len())
            .map_err(|_| Error::invalid(format!("{} vertices are more than u32 holds", self.len())))
    }

    fn check_source(&self, source: usize) -> Result<()> {
        if source >= self.len() {
            return Err(Error::out_of_range("source vertex", source, self.len()));
        }
        Ok(())
    }
}

/// PageRank parameters.
#[derive(Debug, Clone, Copy)]
pub struct PageRankOptions {
    /// Probability of following an edge; the rest teleports uniformly.
    pub damping: f32,
    /// Number of pull iterations (fixed, no convergence test).
    pub iterations: usize,
    /// Cache-fit throttling of the pull ([`fn@pagerank_pull_resident`]'s
    /// throttled handle, planned on a CPU thread while the first iterations
    /// run unthrottled); `None`: unthrottled.
    pub throttle: Option<ThrottleOptions>,
    /// With `throttle`: wait for the plan before the first iteration instead
    /// of running unthrottled meanwhile (every iteration then runs the
    /// plan's schedule).
    pub plan_first: bool,
    /// With `throttle`, a plan in at the first iteration (made on the
    /// device, or `plan_first`) and a renumbering schedule chosen: a run of
    /// at least this many iterations moves to the schedule's numbering
    /// after its first (see [`pagerank_throttled`]). Default
    /// [`RENUMBER_FROM_ITERATIONS`].
    pub renumber_from: usize,
}

/// The default [`PageRankOptions::renumber_from`]. Moving a run to a
/// renumbering schedule's numbering costs its first iteration's shares
/// apart and the schedule prepared again for the plan's numbering, and
/// saves the permutations around every pull: on rgg 2^24 in random order
/// (H100, the level order) the pulls went from 1.63 to 0.83 ms per
/// iteration, and the run paid for the move after about 100.
pub const RENUMBER_FROM_ITERATIONS: usize = 100;

impl Default for PageRankOptions {
    fn default() -> Self {
        PageRankOptions {
            damping: 0.85,
            iterations: 20,
            throttle: None,
            plan_first: false,
            renumber_from: RENUMBER_FROM_ITERATIONS,
        }
    }
}

/// PageRank by power iteration from the uniform vector `1/n`; the rank of
/// dangling vertices (no out-edge) is spread uniformly over all vertices.
pub fn pagerank(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    opts: PageRankOptions,
) -> Result<Vec<f32>> {
    Ok(pagerank_observed(device, config, g, opts, &mut |_| {})?.0)
}

/// [`pagerank`], calling `on_step(k)` after iteration `k` (from 1), for
/// progress reports; also returns the set-up and iteration times.
///
/// An iteration is three prepared launches: the per-vertex shares
/// `rank / outdeg`, the dangling rank (a whole-array reduction in f64) and
/// the pull, which computes the teleport term from the dangling rank on the
/// device. Nothing is downloaded until the end; the driver waits for a
/// marker a few iterations behind, to time them and to keep the launch
/// queue short.
pub fn pagerank_observed(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    opts: PageRankOptions,
    on_step: &mut dyn FnMut(usize),
) -> Result<(Vec<f32>, Timings)> {
    let (rank, timings, _) = pagerank_throttled(device, config, g, opts, on_step)?;
    Ok((rank, timings))
}

/// [`pagerank_observed`], also saying what throttling did when
/// [`PageRankOptions::throttle`] asks for it: the pull runs through
/// [`fn@pagerank_pull_resident`]'s throttled handle, built pipelined (the
/// first iterations run unthrottled while a CPU thread plans), each
/// iteration enqueued without waiting. The ranks are in the caller's vertex
/// order under every policy; they equal the unthrottled run's up to the
/// order of each vertex's f32 sum (throttling splits it by partition).
pub fn pagerank_throttled(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    opts: PageRankOptions,
    on_step: &mut dyn FnMut(usize),
) -> Result<(Vec<f32>, Timings, Option<ThrottledRun>)> {
    let n = g.len();
    if !(0.0..=1.0).contains(&opts.damping) {
        return Err(Error::invalid(format!(
            "damping must lie in [0, 1], got {}",
            opts.damping
        )));
    }
    if n == 0 {
        return Ok((Vec::new(), Timings::default(), None));
    }
    let setup_start = Instant::now();
    let n32 = g.len_u32()?;
    let pattern = g.upload_pattern(device)?;
    let made = Instant::now();
    let (mut pull, pattern) = PullThrottle::new(device, g, &opts, pattern)?;
    let handle_made = made.elapsed();
    let mut v = RankVectors::new(device, g, n32)?;
    let mut first = IterationTimes::new();
    let done = match pull.first_iteration_apart(device, &opts, &mut v)? {
        Some(took) => {
            first.push(took);
            on_step(1);
            1
        }
        None => 0,
    };
    let (sets, pull_prepared) = prepare_directions(
        device,
        config,
        &opts,
        &v,
        pattern.as_ref().filter(|_| pull.handle.is_none()),
    )?;
    let kernel_setup = match pull.handle {
        Some(_) => handle_made,
        None => pull_prepared,
    };
    let (forward, backward) = (&sets[0], &sets[1]);
    let setup = setup_start.elapsed().saturating_sub(first.total());
    let rounds = run_rounds(device, &opts, done, &sets, &v, &mut pull, on_step)?;
    check_faults(forward.iter().chain(backward))?;
    if let Some(t) = &pull.handle {
        t.check()?;
    }
    let result = if opts.iterations % 2 == 1 {
        &v.next
    } else {
        &v.rank
    };
    let mut iterations = first;
    iterations.append(&rounds.times);
    let PullThrottle {
        handle,
        numbering,
        first_steps,
        planned_from,
        ..
    } = pull;
    let run = handle.map(|t| ThrottledRun {
        report: t.report().clone(),
        status: t.status(),
        renumbered: numbering.is_some(),
        first_steps,
        planned_from,
    });
    // In the caller's numbering: `out[old] = result[position[old]]`.
    let ranks = match &numbering {
        Some((_, position)) => {
            drop(sets);
            permute::f32::launch(device, n, position, result, &mut v.contrib)?;
            v.contrib.to_vec()?
        }
        None => result.to_vec()?,
    };
    let timings = Timings {
        setup,
        iterations,
        kernel_setup: Some(kernel_setup),
    };
    Ok((ranks, timings, run))
}

/// PageRank's vectors on the device: the out-degrees, the two rank vectors
/// the iterations swap between, the shares, the dangling rank, and the
/// split of its whole-array reduction.
struct RankVectors {
    n: usize,
    n32: u32,
    out_degree: DeviceVec<u32>,
    rank: DeviceVec<f32>,
    next: DeviceVec<f32>,
    contrib: DeviceVec<f32>,
    dangling: DeviceVec<f64>,
    split: OneTaskSplit,
}

impl RankVectors {
    /// The out-degrees and the uniform rank `1/n` uploaded, the rest
    /// allocated.
    fn new(device: &Device, g: &Graph, n32: u32) -> Result<Self> {
        let n = g.len();
        let out_degree = device.upload(&g.out_degree)?;
        let uniform = vec![1.0 / n as f32; n];
        let rank = device.upload(&uniform)?;
        drop(uniform);
        Ok(RankVectors {
            n,
            n32,
            out_degree,
            rank,
            next: device.alloc::<f32>(n)?,
            contrib: device.alloc::<f32>(n)?,
            dangling: device.alloc::<f64>(1)?,
            split: split_one_task(device, 0, 0..n)?,
        })
    }
}

/// A graph's in-edges on the device: the range array and the sources.
type Pattern = (DeviceVec<u32>, DeviceVec<u32>);

/// The throttled pull's handle (`None`: unthrottled) and what the run
/// notes of it: whether its first launch runs the plan, the numbering the
/// run moved to, the first iteration's steps, and the first iteration
/// that ran after the plan was in.
struct PullThrottle {
    handle: Option<pagerank_pull_resident::Throttle>,
    plan_at_first: bool,
    numbering: Option<(DeviceVec<u32>, DeviceVec<u32>)>,
    first_steps: Vec<(&'static str, std::time::Duration)>,
    planned_from: Option<usize>,
}

impl PullThrottle {
    /// The handle `opts.throttle` asks for: planned on the device over the
    /// pattern already there, which it takes (`None` back), else pipelined
    /// over a host copy; waited for where `opts.plan_first` says so.
    fn new(
        device: &Device,
        g: &Graph,
        opts: &PageRankOptions,
        pattern: Pattern,
    ) -> Result<(Self, Option<Pattern>)> {
        let n = g.len();
        let planned_on_device = opts
            .throttle
            .as_ref()
            .is_some_and(|t| !crate::Throttled::needs_work_graph(device, t));
        let mut pattern = Some(pattern);
        let mut handle = match (&opts.throttle, pattern.take_if(|_| planned_on_device)) {
            (None, _) => None,
            // Planned on the device: the handle keeps the pattern already
            // there, which nothing else reads.
            (Some(t), Some((ptr, src))) => Some(pagerank_pull_resident::throttle_owned(
                device, t, n, n, ptr, src,
            )?),
            (Some(t), None) => {
                mem::check(
                    "the throttled handle's host copy of the graph's in-edges",
                    4 * (n as u64 + 1) + 4 * g.edges() as u64,
                )?;
                Some(pagerank_pull_resident::throttle_pipelined(
                    device,
                    t,
                    n,
                    n,
                    g.incoming.row_ptr().to_vec(),
                    g.incoming.col_idx().to_vec(),
                )?)
            }
        };
        if let (Some(t), true) = (&mut handle, opts.plan_first) {
            t.wait_for_plan()?;
        }
        let pull = PullThrottle {
            handle,
            plan_at_first: planned_on_device || opts.plan_first,
            numbering: None,
            first_steps: Vec::new(),
            planned_from: None,
        };
        Ok((pull, pattern))
    }

    /// Runs the first iteration apart, returning its wall time, where the
    /// first launch runs the plan (made on the device, deciding there, or
    /// waited for) and the run is long enough to pay for the move
    /// (`renumber_from`); where the schedule renumbers vertices the rest of
    /// the run moves to its numbering (the vectors renumbered once, not
    /// permuted around every pull), as CG and CFD do. `None`: not run (a
    /// plan still being made when the run starts comes in later and runs in
    /// the caller's numbering).
    fn first_iteration_apart(
        &mut self,
        device: &Device,
        opts: &PageRankOptions,
        v: &mut RankVectors,
    ) -> Result<Option<std::time::Duration>> {
        let Some(t) = &mut self.handle else {
            return Ok(None);
        };
        if !(self.plan_at_first && opts.iterations > 0 && opts.iterations >= opts.renumber_from) {
            return Ok(None);
        }
        let n = v.n;
        let started = Instant::now();
        let mut step = Instant::now();
        pagerank_contrib::launch(device, n, &v.rank, &v.out_degree, &mut v.contrib)?;
        dangling_rank::launch_with(
            device,
            &v.split.config,
            &v.split.tasks,
            v.n32,
            &v.rank,
            &v.out_degree,
            &mut v.dangling,
        )?;
        device.synchronize()?;
        self.first_steps.push(("shares", step.elapsed()));
        step = Instant::now();
        t.enqueue(&v.contrib, &v.dangling, opts.damping, n as f64, &v.next)?;
        t.check()?;
        self.first_steps.push(("pull", step.elapsed()));
        step = Instant::now();
        ThrottledRun::note(&mut self.planned_from, 0, true);
        if opts.iterations > 1 {
            self.numbering = plan_numbering(device, t.device_level_order()?, || {
                t.plan_order().map(|p| p.tasks.to_vec())
            })?;
        }
        if let Some((order, _)) = &self.numbering {
            // `next` holds the first iteration's ranks; `rank` is
            // written before it is read again.
            let mut renumbered = device.alloc::<f32>(n)?;
            permute::f32::launch(device, n, order, &v.next, &mut renumbered)?;
            v.next = renumbered;
            let mut degrees = device.alloc::<u32>(n)?;
            permute::u32::launch(device, n, order, &v.out_degree, &mut degrees)?;
            v.out_degree = degrees;
            device.synchronize()?;
            self.first_steps.push(("renumbering", step.elapsed()));
        }
        Ok(Some(started.elapsed()))
    }
}

/// One set of launches per direction, `rank` → `next` then back: the
/// shares and the dangling rank, and the pull itself where `pull` (no
/// throttled handle runs it), with the time the pulls took to prepare.
fn prepare_directions<'a>(
    device: &'a Device,
    config: &LaunchConfig,
    opts: &PageRankOptions,
    v: &'a RankVectors,
    pull: Option<&'a Pattern>,
) -> Result<(Vec<Vec<PreparedLaunch<'a>>>, Duration)> {
    let n = v.n;
    let mut sets = Vec::with_capacity(2);
    let mut pull_prepared = Duration::ZERO;
    for (from, to) in [(&v.rank, &v.next), (&v.next, &v.rank)] {
        let mut set = vec![
            pagerank_contrib::prepare(device, config, n, from, &v.out_degree, &v.contrib)?,
            dangling_rank::prepare(
                device,
                &v.split.config,
                &v.split.tasks,
                v.n32,
                from,
                &v.out_degree,
                &v.dangling,
            )?,
        ];
        if let Some((ptr, src)) = pull {
            let started = Instant::now();
            set.push(pagerank_pull_resident::prepare(
                device,
                config,
                n,
                ptr,
                src,
                &v.contrib,
                &v.dangling,
                opts.damping,
                n as f64,
                to,
            )?);
            pull_prepared += started.elapsed();
        }
        sets.push(set);
    }
    Ok((sets, pull_prepared))
}

/// The iterations after the first `done`, pipelined: each runs its
/// direction's launches, and the throttled pull (in plan order where the
/// run moved to the plan's numbering). No value decides anything: markers
/// pace the host behind the device.
fn run_rounds(
    device: &Device,
    opts: &PageRankOptions,
    done: usize,
    sets: &[Vec<PreparedLaunch<'_>>],
    v: &RankVectors,
    pull: &mut PullThrottle,
    on_step: &mut dyn FnMut(usize),
) -> Result<Rounds> {
    let n = v.n;
    let (forward, backward) = (&sets[0], &sets[1]);
    let in_plan_order = pull.numbering.is_some();
    pipelined::<u8>(
        device,
        Probe::Marker,
        DEPTH,
        opts.iterations - done,
        &mut |round| {
            let iteration = round + done;
            let (launches, to) = if iteration % 2 == 1 {
                (forward, &v.next)
            } else {
                (backward, &v.rank)
            };
            match &mut pull.handle {
                None => launches.iter().try_for_each(|l| l.run()),
                Some(t) => {
                    launches[..2].iter().try_for_each(|l| l.run())?;
                    let before = t.report().launches_before_plan;
                    match in_plan_order {
                        true => t.enqueue_in_plan_order(
                            &v.contrib,
                            &v.dangling,
                            opts.damping,
                            n as f64,
                            to,
                        )?,
                        false => t.enqueue(&v.contrib, &v.dangling, opts.damping, n as f64, to)?,
                    }
                    let planned = t.report().launches_before_plan == before;
                    ThrottledRun::note(&mut pull.planned_from, iteration - 1, planned);
                    Ok(())
                }
            }
        },
        &mut |round, _| {
            on_step(round + done);
            Ok(false)
        },
    )
}

/// Reports the first kernel fault of the launches run so far, if any.
fn check_faults<'a, 'b: 'a>(
    launches: impl IntoIterator<Item = &'a PreparedLaunch<'b>>,
) -> Result<()> {
    launches.into_iter().try_for_each(|l| l.check())
}

/// One fixed-point round's launches: the step `from` → `to` per direction
/// (0: `vectors[0]` → `vectors[1]`, 1: back), and the count of changed
/// entries into slot `s` of the host-mapped `changed`, per slot and
/// direction.
pub(super) struct FixedPoint<'a, T: crate::Scalar> {
    pub(super) vectors: [&'a DeviceVec<T>; 2],
    pub(super) steps: [PreparedLaunch<'a>; 2],
    pub(super) counts: Vec<[PreparedLaunch<'a>; 2]>,
    pub(super) changed: &'a DeviceVec<u32>,
}

/// The split task lists of the changed counts, one per slot of a
/// [`DEPTH`]-slot mapped array, and that array.
pub(super) fn count_slots(
    device: &Device,
    n: usize,
) -> Result<(Vec<OneTaskSplit>, DeviceVec<u32>)> {
    let splits = (0..DEPTH)
        .map(|slot| split_one_task(device, slot, 0..n))
        .collect::<Result<Vec<_>>>()?;
    Ok((splits, device.alloc_mapped::<u32>(DEPTH)?))
}

/// The changed counts of a fixed point over `vectors`, per slot (one
/// split task list each) and direction, by `prepare(split, from, to)`.
pub(super) fn count_launches<'a, T: crate::Scalar>(
    splits: &'a [OneTaskSplit],
    vectors: [&'a DeviceVec<T>; 2],
    prepare: impl Fn(&'a OneTaskSplit, &'a DeviceVec<T>, &'a DeviceVec<T>) -> Result<PreparedLaunch<'a>>,
) -> Result<Vec<[PreparedLaunch<'a>; 2]>> {
    let [a, b] = vectors;
    splits
        .iter()
        .map(|split| Ok([prepare(split, a, b)?, prepare(split, b, a)?]))
        .collect()
}

impl<'a, T: crate::Scalar> FixedPoint<'a, T> {
    /// Runs rounds until one changes nothing, or `max_rounds`: round `k`
    /// runs direction `(k - 1) % 2` and counts into slot
    /// [`slot_of`]`(k, DEPTH)`. Returns the vector holding the result, the
    /// rounds counted and the round times.
    ///
    /// The count is written by the round's last kernel into host-mapped
    /// memory and read [`DEPTH`] rounds behind the launches ([`pipelined`]),
    /// so up to `DEPTH - 1` rounds run past the one that changed nothing;
    /// they change nothing either (both vectors already hold the fixed
    /// point), so the result and the round count are those of a loop that
    /// reads every count at once.
    pub(super) fn run(
        &self,
        device: &Device,
        max_rounds: usize,
        on_step: &mut dyn FnMut(usize),
    ) -> Result<(&'a DeviceVec<T>, usize, super::IterationTimes)> {
        let rounds = pipelined(
            device,
            Probe::Mapped {
                slots: self.changed,
                len: 1,
            },
            DEPTH,
            max_rounds,
            &mut |round| {
                let direction = (round - 1) % 2;
                self.steps[direction].run()?;
                self.counts[slot_of(round, DEPTH)][direction].run()
            },
            &mut |round, count| {
                on_step(round);
                Ok(count[0] == 0)
            },
        )?;
        check_faults(self.steps.iter().chain(self.counts.iter().flatten()))?;
        // Round k writes vectors[k % 2]; a stopped loop's extra rounds
        // rewrote the same values.
        Ok((
            self.vectors[rounds.inspected % 2],
            rounds.inspected,
            rounds.times,
        ))
    }
}

/// Single-source shortest paths by Bellman-Ford relaxation to a fixed point.
/// Weights are `|a(u, v)|`; unreachable vertices stay at `f32::INFINITY`.
/// Returns the distances and the number of relaxation rounds.
pub fn sssp(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    source: usize,
) -> Result<(Vec<f32>, usize)> {
    let (dist, rounds, _) = sssp_observed(device, config, g, source, &mut |_| {})?;
    Ok((dist, rounds))
}

/// [`sssp`], calling `on_step(round)` after each relaxation round; also
/// returns the set-up and round times. A round is the relaxation and a
/// count of the changed distances, the one number downloaded.
pub fn sssp_observed(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    source: usize,
    on_step: &mut dyn FnMut(usize),
) -> Result<(Vec<f32>, usize, Timings)> {
    g.check_source(source)?;
    let n = g.len();
    let setup_start = Instant::now();
    let n32 = g.len_u32()?;
    let (ptr, src) = g.upload_pattern(device)?;
    let weights = device.upload(g.incoming.values())?;
    let mut start = vec![f32::INFINITY; n];
    start[source] = 0.0;
    let dist = device.upload(&start)?;
    drop(start);
    let next = device.alloc::<f32>(n)?;
    let (splits, changed) = count_slots(device, n)?;
    let vectors = [&dist, &next];
    let rounds = FixedPoint {
        vectors,
        steps: [
            relax::prepare(device, config, n, &ptr, &src, &weights, &dist, &next)?,
            relax::prepare(device, config, n, &ptr, &src, &weights, &next, &dist)?,
        ],
        counts: count_launches(&splits, [&dist, &next], |split, from, to| {
            count_changed::f32::prepare(
                device,
                &split.config,
                &split.tasks,
                n32,
                from,
                to,
                &changed,
            )
        })?,
        changed: &changed,
    };
    let setup = setup_start.elapsed();
    // Non-negative weights converge in at most n - 1 rounds; one more proves it.
    let (result, rounds, iterations) = rounds.run(device, n, on_step)?;
    Ok((result.to_vec()?, rounds, Timings::new(setup, iterations)))
}

/// Breadth-first levels from `source`; unreachable vertices get -1.
/// Returns the levels and the number of steps.
pub fn bfs(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    source: usize,
) -> Result<(Vec<i32>, usize)> {
    let (level, steps, _) = bfs_observed(device, config, g, source, &mut |_| {})?;
    Ok((level, steps))
}

/// [`bfs`], calling `on_step(k)` after step `k` (from 1); also returns the
/// set-up and step times. A step is [`fn@bfs_pull`] and a count of the changed
/// levels, the one number downloaded.
pub fn bfs_observed(
    device: &Device,
    config: &LaunchConfig,
    g: &Graph,
    source: usize,
    on_step: &mut dyn FnMut(usize),
) -> Result<(Vec<i32>, usize, Timings)> {
    g.check_source(source)?;
    let n = g.len();
    // Levels are i32: the deepest possible level, n - 1, must fit.
    i32::try_from(n)
        .map_err(|_| Error::invalid(format!("BFS levels are i32: {n} vertices are too many")))?;
    let setup_start = Instant::now();
    let n32 = g.len_u32()?;
    let (ptr, src) = g.upload_pattern(device)?;
    let mut start = vec![-1i32; n];
    start[source] = 0;
    let level = device.upload(&start)?;
    drop(start);
    let next = device.alloc::<i32>(n)?;
    let (splits, changed) = count_slots(device, n)?;
    let rounds = FixedPoint {
        vectors: [&level, &next],
        steps: [
            bfs_pull::prepare(device, config, n, &ptr, &src, &level, &next)?,
            bfs_pull::prepare(device, config, n, &ptr, &src, &next, &level)?,
        ],
        counts: count_launches(&splits, [&level, &next], |split, from, to| {
            count_changed::i32::prepare(
                device,
                &split.config,
                &split.tasks,
                n32,
                from,
                to,
                &changed,
            )
        })?,
        changed: &changed,
    };
    let setup = setup_start.elapsed();
    let (result, steps, iterations) = rounds.run(device, n, on_step)?;
    Ok((result.to_vec()?, steps, Timings::new(setup, iterations)))
}
