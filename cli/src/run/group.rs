//! `warpfit run spmv|pagerank|cg|bfs --gpus N`: the app on a device group (N
//! GPUs over NCCL, or N CPU parts with `--backend cpu`), its tasks split by
//! `--partition` and the gathered vector's halo exchanged every launch.

use super::{write_output, App, AppRun, Outcome, RunArgs, PAGERANK_ITERS, SPMV_ITERS};
use crate::vector::read_vector;
use std::time::Instant;
use warpfit::apps::{self, CgOrder, Graph, PageRankOptions};
use warpfit::distributed::{DeviceGroup, ExchangeStats, GroupSize, PartitionKind};
use warpfit::runtime::Csr;
use warpfit::{Error, Result};

/// Rejects what a group run does not take.
pub(super) fn check_options(args: &RunArgs) -> Result<()> {
    if args.gpus.is_none() {
        if args.partition.is_some() {
            return Err(Error::invalid("--partition applies with --gpus"));
        }
        if args.overlap {
            return Err(Error::invalid("--overlap applies with --gpus"));
        }
        return Ok(());
    }
    if args.overlap && !matches!(args.app, App::Spmv | App::Pagerank) {
        return Err(Error::invalid(
            "--overlap applies to spmv and pagerank on a group",
        ));
    }
    if args.overlap && args.throttle.is_some() {
        return Err(Error::invalid(
            "--overlap does not combine with --throttle: a throttled group runs its parts whole",
        ));
    }
    if let Some(g) = &args.gpus {
        GroupSize::parse(g)?;
    }
    if let Some(p) = &args.partition {
        PartitionKind::from_name(p)?;
    }
    if !matches!(args.app, App::Spmv | App::Pagerank | App::Cg | App::Bfs) {
        return Err(Error::invalid(
            "--gpus applies to spmv, pagerank, cg and bfs",
        ));
    }
    if let Some(policy) = &args.throttle {
        if args.app != App::Spmv || policy != "auto" {
            return Err(Error::invalid(format!(
                "--throttle {policy} does not combine with --gpus: a group throttles spmv's parts, each member by `auto` (the cost model), from the arrays on it"
            )));
        }
    }
    let refused = [
        ("--driver", args.driver.is_some()),
        ("--worklist-capacity", args.worklist_capacity.is_some()),
        ("--rounds-per-sync", args.rounds_per_sync.is_some()),
        (
            "--throttle-exhaustive",
            args.throttle_exhaustive && args.throttle.is_some(),
        ),
        ("--order", args.order.is_some()),
        (
            "--precond",
            args.precond.is_some_and(|p| p != super::PrecondArg::None),
        ),
        (
            "--precision f32",
            args.precision == Some(super::Precision::F32),
        ),
    ];
    if let Some((name, _)) = refused.iter().find(|(_, given)| *given) {
        return Err(Error::invalid(format!(
            "{name} does not combine with --gpus: a device group runs the unthrottled kernels but spmv's (cg: f64, no preconditioner, the given order; bfs: direction-optimising over bitmaps)"
        )));
    }
    Ok(())
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn exchange_line(e: &ExchangeStats) -> String {
    format!(
        "exchange: {} entries per launch ({:.2}× the vector's length; the largest part receives {}), {} messages; replication R {}",
        e.entries,
        e.fraction(),
        e.max_entries,
        e.messages,
        e.replication
    )
}

impl AppRun<'_> {
    fn group(&self) -> Result<(DeviceGroup, PartitionKind)> {
        let size = GroupSize::parse(self.args.gpus.as_deref().unwrap_or("1"))?;
        let kind = match &self.args.partition {
            Some(p) => PartitionKind::from_name(p)?,
            None => PartitionKind::default(),
        };
        Ok((DeviceGroup::like(&self.device, size)?, kind))
    }

    /// spmv or pagerank on a group.
    pub(super) fn group_app(self, a: &Csr<f32>, read: std::time::Duration) -> Result<Outcome> {
        let (group, kind) = self.group()?;
        let (run, what) = match self.args.app {
            App::Spmv => {
                let iters = self.iters.unwrap_or(SPMV_ITERS);
                let x = apps::spmv_input(a.ncols());
                let run = match self.throttle_options(apps::spmv::f32::throttle_options, iters)? {
                    Some(o) => apps::spmv_group_throttled(&group, kind, a, &x, iters, &o)?,
                    // Exchange first unless asked: measured at or near 2× on
                    // two GPUs on every matrix of BENCHMARKS.md, where the
                    // overlapped form's range is wider (see "Several GPUs
                    // over NCCL").
                    None if self.args.overlap => {
                        apps::spmv_group_overlapped(&group, kind, &self.config, a, &x, iters)?
                    }
                    None => apps::spmv_group(&group, kind, &self.config, a, &x, iters)?,
                };
                let per = run.median_step().as_secs_f64();
                let mut line = format!(
                    "spmv: median {:.3} ms/iter, {:.2} GFLOP/s ({iters} iterations, {}, partition {})",
                    per * 1e3,
                    2.0 * a.nnz() as f64 / per / 1e9,
                    run.group,
                    kind.name()
                );
                if !run.detail.is_empty() {
                    line += &format!("\nthrottle: {}", run.detail);
                }
                (run, line)
            }
            App::Pagerank => {
                let g = Graph::from_matrix(a)?;
                let opts = PageRankOptions {
                    iterations: self.iters.unwrap_or(PAGERANK_ITERS),
                    ..PageRankOptions::default()
                };
                let run = match self.args.overlap {
                    true => apps::pagerank_group_overlapped(&group, kind, &self.config, &g, &opts)?,
                    false => apps::pagerank_group(&group, kind, &self.config, &g, &opts)?,
                };
                let per = run.median_step().as_secs_f64();
                let sum = run.result.iter().map(|&r| r as f64).sum::<f64>() + 0.0;
                let line = format!(
                    "pagerank: {} iterations, {:.3} ms/iter, {:.1} M edges/s, rank sum {sum:.6} ({}, partition {})",
                    opts.iterations,
                    per * 1e3,
                    g.edges() as f64 / per.max(f64::MIN_POSITIVE) / 1e6,
                    run.group,
                    kind.name()
                );
                (run, line)
            }
            App::Bfs => {
                let g = Graph::from_matrix(a)?;
                let source = self.args.source.unwrap_or(0);
                let run = apps::bfs_group(
                    &group,
                    kind,
                    &self.config,
                    &g,
                    source,
                    apps::BfsDirection::Auto,
                )?;
                let reached = run.result.iter().filter(|&&l| l >= 0).count();
                let depth = run.result.iter().copied().max().unwrap_or(0);
                let total = run.steps.iter().sum::<std::time::Duration>();
                let line = format!(
                    "bfs: {reached} of {} vertices reached from {source}, {} levels, {} rounds, {:.3} ms ({:.1} M edges/s; {}, partition {})",
                    g.incoming.nrows(),
                    depth + 1,
                    run.iterations,
                    ms(total),
                    g.edges() as f64 / total.as_secs_f64().max(f64::MIN_POSITIVE) / 1e6,
                    run.group,
                    kind.name()
                );
                say!("{line}");
                say!(
                    "exchange: frontier bitmaps, {} vertex bits received per round by all parts; {}",
                    run.exchange.entries,
                    run.detail
                );
                say!(
                    "timing: read {:.1} ms; partition and set-up {:.1} ms; rounds {:.1} ms",
                    ms(read),
                    ms(run.setup),
                    ms(total)
                );
                write_output(self.output, run.result.iter().map(|v| v.to_string()))?;
                return Ok(Outcome::Done);
            }
            _ => {
                return Err(Error::invalid(
                    "--gpus applies to spmv, pagerank, cg and bfs",
                ))
            }
        };
        say!("{what}");
        say!("{}", exchange_line(&run.exchange));
        say!(
            "timing: read {:.1} ms; partition and set-up {:.1} ms; total {:.1} ms",
            ms(read),
            ms(run.setup),
            ms(run.steps.iter().sum())
        );
        write_output(self.output, run.result.iter().map(|v| v.to_string()))?;
        Ok(Outcome::Done)
    }

    /// cg (f64, no preconditioner) on a group.
    pub(super) fn group_cg(self) -> Result<Outcome> {
        let args = self.args;
        let read_start = Instant::now();
        // Sized from the file's header before any entry is read, as `run cg` does.
        if let Some(h) = args.input.header()? {
            super::check_cg_memory::<f64>(h.nrows, super::stored_upper_bound(&h), CgOrder::Given)?;
        }
        let a = args.input.load_as::<f64>()?;
        super::check_cg_memory::<f64>(a.nrows(), a.nnz(), CgOrder::Given)?;
        super::check_symmetric(&a)?;
        let b = match &args.rhs {
            Some(path) => read_vector(path, "--rhs", a.nrows())?,
            None => apps::rhs_for_ones(&a)?,
        };
        let read = read_start.elapsed();
        self.print_header(&a);
        let (group, kind) = self.group()?;
        let tol = args.tol.unwrap_or(1e-6);
        let max_iters = args.max_iters.unwrap_or(1000);
        let run = apps::cg_group(&group, kind, &self.config, &a, &b, tol, max_iters)?;
        let converged = run.relative_residual <= tol;
        say!(
            "cg: {} after {} iterations, relative residual {:.3e}, {:.3} ms per iteration (f64, no preconditioner, {}, partition {})",
            if converged { "converged" } else { "NOT converged" },
            run.iterations,
            run.relative_residual,
            ms(run.median_step()),
            run.group,
            kind.name()
        );
        say!("{}", exchange_line(&run.exchange));
        say!(
            "timing: read {:.1} ms; partition and set-up {:.1} ms; iterations {:.1} ms",
            ms(read),
            ms(run.setup),
            ms(run.steps.iter().sum())
        );
        write_output(self.output, run.result.iter().map(|v| v.to_string()))?;
        if converged {
            Ok(Outcome::Done)
        } else {
            Ok(Outcome::NotConverged(format!(
                "--max-iters {max_iters} ran out at relative residual {:.1e}",
                run.relative_residual
            )))
        }
    }
}
