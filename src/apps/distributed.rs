//! SpMV, PageRank and CG on a [`DeviceGroup`] (BFS is in `distributed_bfs`): the kernels of the
//! single-device apps, each member running its part of the rows, with the
//! gathered vector's halo exchanged before every launch
//! ([`crate::distributed`]) and the global sums (dangling rank, dot
//! products) as all-reduces.
//!
//! A group of one member runs the same code with no exchange: the baseline
//! the scaling figures are measured against on the same machine.

use super::graph::{Graph, PageRankOptions};
use super::kernels::{
    cg_direction, cg_step, dangling_rank, dot, pagerank_contrib, pagerank_pull_add,
    pagerank_pull_resident, spmv, spmv_add,
};
use crate::distributed::{DeviceGroup, DistVec, Distributed, ExchangeStats, PartitionKind};
use crate::{split_one_task, DeviceVec, Error, LaunchConfig, OneTaskSplit, PreparedLaunch, Result};
use std::time::{Duration, Instant};
use warpfit_runtime::Csr;

/// What a distributed run returns.
#[derive(Debug, Clone)]
pub struct GroupRun<T> {
    /// The result, in the caller's order.
    pub result: Vec<T>,
    /// The group, in words.
    pub group: String,
    /// Partitioning, uploading and preparing.
    pub setup: Duration,
    /// Wall time of each timed step (a launch, an iteration), waited for.
    pub steps: Vec<Duration>,
    /// What one exchange moves.
    pub exchange: ExchangeStats,
    /// Iterations run (CG: to convergence or the limit).
    pub iterations: usize,
    /// CG: `‖r‖ / ‖b‖` of the recurrence at the end.
    pub relative_residual: f64,
    /// What else the app reports, in words (BFS: the rounds each way and
    /// the bitmaps' size); empty for the others.
    pub detail: String,
}

impl<T> GroupRun<T> {
    /// The median step time.
    pub fn median_step(&self) -> Duration {
        let mut s = self.steps.clone();
        s.sort_unstable();
        s.get(s.len() / 2).copied().unwrap_or_default()
    }
}

fn run_all(launches: &[PreparedLaunch<'_>]) -> Result<()> {
    launches.iter().try_for_each(PreparedLaunch::run)
}

fn check_all(launches: &[PreparedLaunch<'_>]) -> Result<()> {
    launches.iter().try_for_each(PreparedLaunch::check)
}

/// `out[slot] = aᵀb` over a member's `n` entries, split over its device
/// (`split` made for that slot).
fn dot_launch<'a>(
    device: &'a crate::Device,
    split: &'a OneTaskSplit,
    n: usize,
    a: &'a DeviceVec<f64>,
    b: &'a DeviceVec<f64>,
    out: &'a DeviceVec<f64>,
) -> Result<PreparedLaunch<'a>> {
    dot::f64::prepare(device, &split.config, &split.tasks, n as u32, a, b, out)
}

/// One zeroed array of `len` per member.
fn small<T: crate::Scalar>(group: &DeviceGroup, len: usize) -> Result<Vec<DeviceVec<T>>> {
    group.devices().iter().map(|d| d.alloc::<T>(len)).collect()
}

/// `y = A·x` on `group`, `launches` times after two warm-up launches, each
/// launch the halo exchange of `x` and every member's SpMV, timed to the
/// end of the slowest member. Equal to the single-device SpMV bit for bit
/// (rows stay whole, each member runs the same kernel on them).
pub fn spmv_group(
    group: &DeviceGroup,
    kind: PartitionKind,
    config: &LaunchConfig,
    a: &Csr<f32>,
    x: &[f32],
    launches: usize,
) -> Result<GroupRun<f32>> {
    spmv_on_group(group, kind, config, a, x, launches, false)
}

/// [`spmv_group`] with the exchange beside the arithmetic: each member's
/// rows are split by where their entries' `x` comes from
/// ([`Distributed::source_blocks`]); the owned block runs while the halo
/// is in flight, then one `y +=` launch per sender. A row's sum is then
/// taken block by block: equal to [`spmv_group`]'s within rounding.
pub fn spmv_group_overlapped(
    group: &DeviceGroup,
    kind: PartitionKind,
    config: &LaunchConfig,
    a: &Csr<f32>,
    x: &[f32],
    launches: usize,
) -> Result<GroupRun<f32>> {
    spmv_on_group(group, kind, config, a, x, launches, true)
}

fn spmv_on_group(
    group: &DeviceGroup,
    kind: PartitionKind,
    config: &LaunchConfig,
    a: &Csr<f32>,
    x: &[f32],
    launches: usize,
    overlap: bool,
) -> Result<GroupRun<f32>> {
    if x.len() != a.ncols() {
        return Err(Error::length("SpMV's x", a.ncols(), x.len()));
    }
    let start = Instant::now();
    let d = Distributed::new(group, kind, a.row_ptr(), a.col_idx(), a.ncols())?;
    // Overlapped: the rows split by source; else each member's fine arrays whole.
    let blocks = match overlap {
        true => d.source_blocks(a.values())?,
        false => Vec::new(),
    };
    let val = match overlap {
        true => None,
        false => Some(d.fine(a.values())?),
    };
    let xs = d.gathered(x)?;
    let ys = d.outputs::<f32>()?;
    let ex = d.exchange_of(&xs)?;
    // `first` reads owned entries only when overlapped; `rest` adds the halo.
    let (mut first, mut rest) = (Vec::new(), Vec::new());
    for p in 0..group.len() {
        let (dev, tasks, x, y) = (d.device(p), d.tasks(p), xs.part(p), ys.part(p));
        if let Some(val) = &val {
            first.push(spmv::f32::prepare(
                dev,
                config,
                tasks,
                d.row_ptr(p),
                d.col(p),
                val.part(p),
                x,
                y,
            )?);
            continue;
        }
        for (k, b) in blocks.get(p).into_iter().flatten().enumerate() {
            let (ptr, col, v) = (&b.row_ptr, &b.col, &b.val);
            if k == 0 {
                first.push(spmv::f32::prepare(dev, config, tasks, ptr, col, v, x, y)?);
            } else if let Some(list) = &b.tasks {
                rest.push(spmv_add::prepare(dev, config, list, ptr, col, v, x, y)?);
            } else {
                rest.push(spmv_add::prepare(dev, config, tasks, ptr, col, v, x, y)?);
            }
        }
    }
    let setup = start.elapsed();
    let mut steps = Vec::new();
    for i in 0..launches + 2 {
        let t = Instant::now();
        if overlap {
            ex.start()?;
            run_all(&first)?;
            ex.join()?;
            run_all(&rest)?;
        } else {
            ex.run()?;
            run_all(&first)?;
        }
        group.synchronize()?;
        if i >= 2 {
            steps.push(t.elapsed());
        }
    }
    ex.check()?;
    check_all(&first)?;
    check_all(&rest)?;
    spmv_run(&d, &ys, setup, steps, String::new())
}

/// An SpMV group run's result: the last `y`, in the caller's order.
pub(super) fn spmv_run(
    d: &Distributed<'_>,
    ys: &DistVec<f32>,
    setup: Duration,
    steps: Vec<Duration>,
    detail: String,
) -> Result<GroupRun<f32>> {
    Ok(GroupRun {
        result: d.collect_tasks(ys)?,
        group: d.group().describe(),
        setup,
        iterations: steps.len(),
        steps,
        exchange: d.stats(),
        relative_residual: 0.0,
        detail,
    })
}

/// PageRank ([`super::pagerank`]'s iteration: shares, dangling rank, pull)
/// on `group`: the shares' halo exchanged and the dangling rank all-reduced
/// every iteration. The ranks equal the single-device run's up to the order
/// of the dangling rank's f64 sum.
pub fn pagerank_group(
    group: &DeviceGroup,
    kind: PartitionKind,
    config: &LaunchConfig,
    g: &Graph,
    opts: &PageRankOptions,
) -> Result<GroupRun<f32>> {
    pagerank_on_group(group, kind, config, g, opts, false)
}

/// [`pagerank_group`] with the shares' exchange beside the pull: each
/// member's in-edges are split by where their source's share comes from
/// ([`Distributed::source_patterns`]); the owned block is pulled while the
/// halo is in flight, then each halo block adds its sum
/// ([`fn@super::pagerank_pull_add`]). A vertex's sum is then taken block
/// by block: the ranks equal [`pagerank_group`]'s within rounding.
pub fn pagerank_group_overlapped(
    group: &DeviceGroup,
    kind: PartitionKind,
    config: &LaunchConfig,
    g: &Graph,
    opts: &PageRankOptions,
) -> Result<GroupRun<f32>> {
    pagerank_on_group(group, kind, config, g, opts, true)
}

fn pagerank_on_group(
    group: &DeviceGroup,
    kind: PartitionKind,
    config: &LaunchConfig,
    g: &Graph,
    opts: &PageRankOptions,
    overlap: bool,
) -> Result<GroupRun<f32>> {
    let start = Instant::now();
    let inc = &g.incoming;
    let d = Distributed::new(group, kind, inc.row_ptr(), inc.col_idx(), inc.nrows())?;
    pagerank_on(&d, config, &g.out_degree, opts, start, overlap)
}

/// [`pagerank_group`]'s iterations on a distributed in-edge pattern `d`
/// (its set-up counted from `start`), `out_degree` every vertex's; with
/// `overlap`, [`pagerank_group_overlapped`]'s.
pub(super) fn pagerank_on(
    d: &Distributed<'_>,
    config: &LaunchConfig,
    out_degree: &[u32],
    opts: &PageRankOptions,
    start: Instant,
    overlap: bool,
) -> Result<GroupRun<f32>> {
    if opts.throttle.is_some() {
        return Err(Error::invalid("a device group runs PageRank unthrottled"));
    }
    let (group, n) = (d.group(), out_degree.len());
    let degree = d.per_task(out_degree)?;
    let rank = d.per_task(&vec![1.0 / n.max(1) as f32; n])?;
    let next = d.outputs::<f32>()?;
    let contrib = d.gathered_zeros::<f32>()?;
    let dangling = small::<f64>(group, 1)?;
    let dangling_refs: Vec<&DeviceVec<f64>> = dangling.iter().collect();
    let ex = d.exchange_of(&contrib)?;
    let splits = (0..group.len())
        .map(|p| split_one_task(d.device(p), 0, 0..d.tasks(p)))
        .collect::<Result<Vec<_>>>()?;
    // Overlapped: each member's in-edges by source, block 0 its own.
    let blocks = match overlap {
        true => d.source_patterns()?,
        false => Vec::new(),
    };
    // One set of launches per direction, as the single-device driver;
    // `halo` holds the pulls of the halo blocks (overlapped only).
    let mut sets = Vec::with_capacity(2);
    for (from, to) in [(&rank, &next), (&next, &rank)] {
        let (mut shares, mut pulls, mut halo) = (Vec::new(), Vec::new(), Vec::new());
        for p in 0..group.len() {
            let (dev, tasks) = (d.device(p), d.tasks(p));
            shares.push(pagerank_contrib::prepare(
                dev,
                config,
                tasks,
                from.part(p),
                degree.part(p),
                contrib.part(p),
            )?);
            let s = &splits[p];
            shares.push(dangling_rank::prepare(
                dev,
                &s.config,
                &s.tasks,
                tasks as u32,
                from.part(p),
                degree.part(p),
                &dangling[p],
            )?);
            let (own_ptr, own_col) = match blocks.get(p).and_then(|b| b.first()) {
                Some(b) => (&b.row_ptr, &b.col),
                None => (d.row_ptr(p), d.col(p)),
            };
            pulls.push(pagerank_pull_resident::prepare(
                dev,
                config,
                tasks,
                own_ptr,
                own_col,
                contrib.part(p),
                &dangling[p],
                opts.damping,
                n as f64,
                to.part(p),
            )?);
            for b in blocks.get(p).into_iter().flatten().skip(1) {
                let (ptr, col, c, t) = (&b.row_ptr, &b.col, contrib.part(p), to.part(p));
                halo.push(match &b.tasks {
                    Some(list) => {
                        pagerank_pull_add::prepare(dev, config, list, ptr, col, c, opts.damping, t)?
                    }
                    None => pagerank_pull_add::prepare(
                        dev,
                        config,
                        tasks,
                        ptr,
                        col,
                        c,
                        opts.damping,
                        t,
                    )?,
                });
            }
        }
        sets.push((shares, pulls, halo));
    }
    let setup = start.elapsed();
    let mut steps = Vec::new();
    for it in 0..opts.iterations {
        let t = Instant::now();
        let (shares, pulls, halo) = &sets[it % 2];
        run_all(shares)?;
        if overlap {
            // The dangling rank first: the owned pull reads it.
            group.all_reduce_sum(&dangling_refs, 0..1)?;
            ex.start()?;
            run_all(pulls)?;
            ex.join()?;
            run_all(halo)?;
        } else {
            ex.run()?;
            group.all_reduce_sum(&dangling_refs, 0..1)?;
            run_all(pulls)?;
        }
        group.synchronize()?;
        steps.push(t.elapsed());
    }
    ex.check()?;
    for (shares, pulls, halo) in &sets {
        check_all(shares)?;
        check_all(pulls)?;
        check_all(halo)?;
    }
    let last: &DistVec<f32> = if opts.iterations % 2 == 1 {
        &next
    } else {
        &rank
    };
    Ok(GroupRun {
        result: d.collect_tasks(last)?,
        group: group.describe(),
        setup,
        steps,
        exchange: d.stats(),
        iterations: opts.iterations,
        relative_residual: 0.0,
        detail: String::new(),
    })
}

/// Conjugate gradient in f64 (no preconditioner, `x₀ = 0`) on `group`:
/// the search direction's halo exchanged before each SpMV, `pᵀq` and `rᵀr`
/// all-reduced. Stops when `‖r‖ ≤ tol·‖b‖` (the recurrence residual, as
/// [`super::cg`]) or after `max_iters`.
pub fn cg_group(
    group: &DeviceGroup,
    kind: PartitionKind,
    config: &LaunchConfig,
    a: &Csr<f64>,
    b: &[f64],
    tol: f64,
    max_iters: usize,
) -> Result<GroupRun<f64>> {
    let n = a.nrows();
    if a.ncols() != n || b.len() != n {
        return Err(Error::invalid(format!(
            "CG needs a square matrix and a right-hand side of its size, got {} x {} and {}",
            n,
            a.ncols(),
            b.len()
        )));
    }
    let start = Instant::now();
    let d = Distributed::new(group, kind, a.row_ptr(), a.col_idx(), n)?;
    let val = d.fine(a.values())?;
    let x = d.outputs::<f64>()?;
    let r = d.per_task(b)?;
    let p = d.gathered(b)?;
    let q = d.outputs::<f64>()?;
    // CG's scalars per member, alternating: slot 0 pᵀq, slot 1 rᵀr.
    let scalars = [small::<f64>(group, 3)?, small::<f64>(group, 3)?];
    let refs = |k: usize| scalars[k].iter().collect::<Vec<_>>();
    let b_norm2: f64 = b.iter().map(|v| v * v).sum();
    let stop = tol * tol * b_norm2;
    let ex = d.exchange_of(&p)?;
    let split = |slot| {
        (0..group.len())
            .map(|m| split_one_task(d.device(m), slot, 0..d.tasks(m)))
            .collect::<Result<Vec<_>>>()
    };
    let (pq_split, rr_split) = (split(0)?, split(1)?);
    // rᵀr of r₀ = b into the first "previous" set.
    for m in 0..group.len() {
        let (rm, out) = (r.part(m), &scalars[1][m]);
        dot_launch(d.device(m), &rr_split[m], d.tasks(m), rm, rm, out)?.run()?;
    }
    group.all_reduce_sum(&refs(1), 1..2)?;
    // Per direction (prev, cur): SpMV, pᵀq, the update, rᵀr, the direction.
    let mut sets = Vec::with_capacity(2);
    for (prev, cur) in [(1, 0), (0, 1)] {
        let (mut spmvs, mut pqs, mut steps, mut rrs, mut dirs) =
            (vec![], vec![], vec![], vec![], vec![]);
        for m in 0..group.len() {
            let (dev, tasks) = (d.device(m), d.tasks(m));
            let (pv, cv) = (&scalars[prev][m], &scalars[cur][m]);
            spmvs.push(spmv::f64::prepare(
                dev,
                config,
                tasks,
                d.row_ptr(m),
                d.col(m),
                val.part(m),
                p.part(m),
                q.part(m),
            )?);
            pqs.push(dot_launch(
                dev,
                &pq_split[m],
                tasks,
                p.part(m),
                q.part(m),
                cv,
            )?);
            steps.push(cg_step::f64::prepare(
                dev,
                config,
                tasks,
                pv,
                cv,
                stop,
                p.part(m),
                q.part(m),
                x.part(m),
                r.part(m),
            )?);
            rrs.push(dot_launch(
                dev,
                &rr_split[m],
                tasks,
                r.part(m),
                r.part(m),
                cv,
            )?);
            dirs.push(cg_direction::f64::prepare(
                dev,
                config,
                tasks,
                pv,
                cv,
                r.part(m),
                p.part(m),
            )?);
        }
        sets.push((spmvs, pqs, steps, rrs, dirs, cur));
    }
    let setup = start.elapsed();
    let mut times = Vec::new();
    let (mut iterations, mut rr) = (0, b_norm2);
    while iterations < max_iters && rr > stop {
        let t = Instant::now();
        let (spmvs, pqs, steps, rrs, dirs, cur) = &sets[iterations % 2];
        ex.run()?;
        run_all(spmvs)?;
        run_all(pqs)?;
        group.all_reduce_sum(&refs(*cur), 0..1)?;
        run_all(steps)?;
        run_all(rrs)?;
        group.all_reduce_sum(&refs(*cur), 1..2)?;
        run_all(dirs)?;
        group.synchronize()?;
        let mut s = [0.0f64; 3];
        scalars[*cur][0].download(&mut s)?;
        iterations += 1;
        times.push(t.elapsed());
        if s[0] <= 0.0 && s[1] > stop {
            return Err(Error::invalid(format!(
                "CG broke down at iteration {iterations}: pᵀAp = {} (the matrix is not positive definite)",
                s[0]
            )));
        }
        rr = s[1];
    }
    ex.check()?;
    for (a, b, c, e, f, _) in &sets {
        for l in [a, b, c, e, f] {
            check_all(l)?;
        }
    }
    Ok(GroupRun {
        result: d.collect_tasks(&x)?,
        group: group.describe(),
        setup,
        steps: times,
        exchange: d.stats(),
        iterations,
        relative_residual: (rr / b_norm2.max(f64::MIN_POSITIVE)).sqrt(),
        detail: String::new(),
    })
}
