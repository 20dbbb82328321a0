//! Strong scaling of the distributed apps on a device group: SpMV (f32),
//! PageRank (50 iterations) and CG (f64) on 1, 2, … GPUs of one host, each
//! count's result checked against the one-GPU run (SpMV also against an
//! f64 host reference), with the exchanged volume per launch.
//!
//! ```text
//! NCCL_NVLS_ENABLE=0 group_bench [--gpus 1,2,4] [--partition rows|levels] [--runs N] [--overlap] \
//!     [--spmv SPEC]... [--pagerank SPEC]... [--cg SPEC]... [--bfs SPEC]... \
//!     [--bfs-direction auto,bottom-up,top-down] [--exchange-shares 1,0.85,0] \
//!     [--pagerank-parts SCALE]... [--pagerank-capacity SCALE]...
//! ```
//! `--pagerank-capacity` makes the graph in as many parts as the first GPU
//! count and runs it on each count, the parts several to a GPU where the
//! count is smaller (`--gpus 4,2`: four parts on 4 GPUs, then on 2).
//! `--overlap` runs SpMV and PageRank with the exchange beside each member's
//! owned block (with `--pagerank-parts`, both forms on the same graph).
//! Each `SPEC` is a generator (`uniform:n=67108864,per_row=16`); without
//! any, the suite of the multi-GPU issue at full size. `--backend cpu`
//! runs CPU groups (for trying the example without GPUs).

use std::process::ExitCode;
use std::time::Instant;
use warpfit::apps::{
    self, cg_group, pagerank_group, spmv_group, BfsDirection, Graph, GraphParts, GroupRun,
    PageRankOptions,
};
use warpfit::distributed::{DeviceGroup, Distributed, Distribution, GroupSize, PartitionKind};
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::Csr;
use warpfit::{Device, Error, LaunchConfig, Result};

struct Opts {
    gpus: Vec<usize>,
    kind: PartitionKind,
    runs: usize,
    cpu: bool,
    overlap: bool,
    spmv: Vec<String>,
    pagerank: Vec<String>,
    cg: Vec<String>,
    bfs: Vec<String>,
    directions: Vec<BfsDirection>,
    shares: Vec<f64>,
    pagerank_parts: Vec<u32>,
    pagerank_capacity: Vec<u32>,
}

fn parse() -> Result<Opts> {
    let mut o = Opts {
        gpus: vec![1, 2, 4],
        kind: PartitionKind::Rows,
        runs: 20,
        cpu: false,
        overlap: false,
        spmv: vec![],
        pagerank: vec![],
        cg: vec![],
        bfs: vec![],
        directions: vec![
            BfsDirection::Auto,
            BfsDirection::BottomUp,
            BfsDirection::TopDown,
        ],
        shares: vec![],
        pagerank_parts: vec![],
        pagerank_capacity: vec![],
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .ok_or_else(|| Error::invalid(format!("{a} needs a value")))
        };
        match a.as_str() {
            "--gpus" => {
                o.gpus = val()?
                    .split(',')
                    .map(|s| {
                        s.parse::<usize>()
                            .map_err(|_| Error::invalid(format!("--gpus: `{s}`")))
                    })
                    .collect::<Result<_>>()?
            }
            "--partition" => o.kind = PartitionKind::from_name(&val()?)?,
            "--runs" => o.runs = val()?.parse().map_err(|_| Error::invalid("--runs N"))?,
            "--backend" => o.cpu = val()? == "cpu",
            "--overlap" => o.overlap = true,
            "--spmv" => o.spmv.push(val()?),
            "--pagerank" => o.pagerank.push(val()?),
            "--cg" => o.cg.push(val()?),
            "--bfs" => o.bfs.push(val()?),
            "--exchange-shares" => {
                o.shares = val()?
                    .split(',')
                    .map(|s| {
                        s.parse::<f64>()
                            .map_err(|_| Error::invalid(format!("--exchange-shares: `{s}`")))
                    })
                    .collect::<Result<_>>()?
            }
            "--pagerank-capacity" => o.pagerank_capacity.push(
                val()?
                    .parse()
                    .map_err(|_| Error::invalid("--pagerank-capacity SCALE"))?,
            ),
            "--pagerank-parts" => o.pagerank_parts.push(
                val()?
                    .parse()
                    .map_err(|_| Error::invalid("--pagerank-parts SCALE"))?,
            ),
            "--bfs-direction" => {
                o.directions = val()?.split(',').map(str::parse).collect::<Result<_>>()?
            }
            _ => return Err(Error::invalid(format!("unknown option {a}"))),
        }
    }
    if o.spmv.is_empty()
        && o.pagerank.is_empty()
        && o.cg.is_empty()
        && o.bfs.is_empty()
        && o.pagerank_parts.is_empty()
        && o.pagerank_capacity.is_empty()
    {
        o.spmv = vec![
            "uniform:n=67108864,per_row=16,seed=1".into(),
            "rmat:scale=26".into(),
            "grid2d:side=16384".into(),
        ];
        o.pagerank = vec!["rmat:scale=26".into()];
        o.cg = vec!["poisson3d:side=512,order=natural".into()];
        o.bfs = vec!["rmat:scale=26,sym=true".into()];
    }
    Ok(o)
}

fn group(o: &Opts, first: &Device, n: usize) -> Result<DeviceGroup> {
    if o.cpu {
        DeviceGroup::cpu(n)
    } else {
        DeviceGroup::like(first, GroupSize::Count(n))
    }
}

/// A run's ranks against the first run's, or their sum where it is the
/// first.
fn rank_check(first: Option<&[f32]>, ranks: &[f32]) -> String {
    match first {
        None => {
            let sum: f64 = ranks.iter().map(|&r| r as f64).sum();
            format!("rank sum {sum:.6}")
        }
        Some(f) => format!("first run ± {:.1e}", max_rel(ranks, f, 1e-12)),
    }
}

/// Largest |a − b| / max(|b|, floor) over the entries.
fn max_rel<A: Copy + Into<f64>, B: Copy + Into<f64>>(a: &[A], b: &[B], floor: f64) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let (x, y): (f64, f64) = (x.into(), y.into());
            (x - y).abs() / y.abs().max(floor)
        })
        .fold(0.0, f64::max)
}

struct Row {
    app: &'static str,
    spec: String,
    nnz: usize,
    gpus: usize,
    ms: f64,
    speedup: f64,
    entries: usize,
    bytes: usize,
    fraction: f64,
    replication: usize,
    check: String,
    extra: String,
}

fn row<T>(
    app: &'static str,
    spec: &str,
    nnz: usize,
    elem: usize,
    run: &GroupRun<T>,
    base: Option<f64>,
    check: String,
) -> Row {
    let ms = run.median_step().as_secs_f64() * 1e3;
    Row {
        app,
        spec: spec.to_string(),
        nnz,
        gpus: run
            .group
            .split(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        ms,
        speedup: base.map_or(1.0, |b| b / ms),
        entries: run.exchange.entries,
        bytes: run.exchange.entries * elem,
        fraction: run.exchange.fraction(),
        replication: run.exchange.replication,
        check,
        extra: String::new(),
    }
}

fn spmv_rows(o: &Opts, dev: &Device, spec: &str) -> Result<()> {
    let t = Instant::now();
    let a = spec.parse::<GenSpec>()?.generate()?;
    eprintln!("{spec}: generated in {:.1} s", t.elapsed().as_secs_f64());
    let x = apps::spmv_input(a.ncols());
    let (reference, scale) = host_spmv(&a, &x);
    let cfg = LaunchConfig::default();
    let (mut base, mut one): (Option<f64>, Option<Vec<f32>>) = (None, None);
    for &n in &o.gpus {
        let g = group(o, dev, n)?;
        let run = if o.overlap {
            apps::spmv_group_overlapped(&g, o.kind, &cfg, &a, &x, o.runs)?
        } else {
            spmv_group(&g, o.kind, &cfg, &a, &x, o.runs)?
        };
        let vs_host = run
            .result
            .iter()
            .zip(reference.iter().zip(&scale))
            .map(|(&y, (&r, &m))| (y as f64 - r).abs() / m.max(f64::MIN_POSITIVE))
            .fold(0.0, f64::max);
        if vs_host > 1e-4 {
            return Err(Error::invalid(format!(
                "{spec} on {n}: off the host reference by {vs_host:e}"
            )));
        }
        let check = match &one {
            None => format!("host f64 ≤ {vs_host:.1e} of Σ abs(a·x)"),
            Some(o1) if *o1 == run.result => "= 1 GPU".into(),
            Some(o1) => format!("1 GPU ± {:.1e}", max_rel(&run.result, o1, 1e-3)),
        };
        let app = if o.overlap {
            "spmv f32, overlapped"
        } else {
            "spmv f32"
        };
        let r = row(app, spec, a.nnz(), 4, &run, base, check);
        eprintln!(
            "  {n}: {:.3} ms, setup {:.1} s",
            r.ms,
            run.setup.as_secs_f64()
        );
        base.get_or_insert(r.ms);
        one.get_or_insert(run.result);
        print_row(&r);
    }
    if !o.shares.is_empty() {
        exchange_rows(o, dev, spec, &a, &x, &reference)?;
    }
    Ok(())
}

/// SpMV with its exchange, and the exchange alone, for each whole-block
/// share of `--exchange-shares` (`Distribution::with_whole_blocks`: 1
/// packs exact halos, 0 sends every exchanging pair whole, an all-gather).
fn exchange_rows(
    o: &Opts,
    dev: &Device,
    spec: &str,
    a: &Csr<f32>,
    x: &[f32],
    reference: &[f64],
) -> Result<()> {
    use warpfit::apps::spmv;
    let cfg = LaunchConfig::default();
    for &n in o.gpus.iter().filter(|&&n| n >= 2) {
        let g = group(o, dev, n)?;
        for &share in &o.shares {
            let dist = Distribution::new(o.kind, n, a.row_ptr(), a.col_idx(), a.ncols())?
                .with_whole_blocks(share)?;
            let whole = dist
                .parts()
                .iter()
                .map(|p| {
                    let all = p.owned_x.len();
                    p.sends.iter().filter(|s| s.local.len() == all).count()
                })
                .sum::<usize>();
            let d = Distributed::from_distribution(&g, dist)?;
            let (val, xs, ys) = (d.fine(a.values())?, d.gathered(x)?, d.outputs::<f32>()?);
            let ex = d.exchange_of(&xs)?;
            let spmvs = (0..n)
                .map(|p| {
                    spmv::f32::prepare(
                        d.device(p),
                        &cfg,
                        d.tasks(p),
                        d.row_ptr(p),
                        d.col(p),
                        val.part(p),
                        xs.part(p),
                        ys.part(p),
                    )
                })
                .collect::<Result<Vec<_>>>()?;
            let time = |with_spmv: bool| -> Result<f64> {
                let mut t = Vec::new();
                for i in 0..o.runs + 2 {
                    let s = Instant::now();
                    ex.run()?;
                    if with_spmv {
                        spmvs.iter().try_for_each(|l| l.run())?;
                    }
                    g.synchronize()?;
                    if i >= 2 {
                        t.push(s.elapsed().as_secs_f64() * 1e3);
                    }
                }
                t.sort_by(f64::total_cmp);
                Ok(t[t.len() / 2])
            };
            let (alone, with) = (time(false)?, time(true)?);
            ex.check()?;
            spmvs.iter().try_for_each(|l| l.check())?;
            let y = d.collect_tasks(&ys)?;
            let off = max_rel(&y, reference, 1e-3);
            let st = d.stats();
            print_row(&Row {
                app: "spmv f32, exchange by share",
                spec: spec.to_string(),
                nnz: a.nnz(),
                gpus: n,
                ms: with,
                speedup: 1.0,
                entries: st.entries,
                bytes: st.entries * 4,
                fraction: st.fraction(),
                replication: st.replication,
                check: format!("host f64 ± {off:.1e}"),
                extra: format!(
                    "share {share}: exchange alone {alone:.3} ms; {whole} of {} moves whole",
                    st.messages
                ),
            });
        }
    }
    Ok(())
}

/// `A·x` in f64 on the host, with each row's `Σ |a_ij·x_j|`: the scale a
/// float sum's rounding is measured against (a row whose terms cancel has
/// a small result and the same absolute error).
fn host_spmv(a: &Csr<f32>, x: &[f32]) -> (Vec<f64>, Vec<f64>) {
    use rayon::prelude::*;
    (0..a.nrows())
        .into_par_iter()
        .map(|r| {
            let (c, v) = a.row(r);
            c.iter().zip(v).fold((0.0, 0.0), |(s, m), (&c, &v)| {
                let t = v as f64 * x[c as usize] as f64;
                (s + t, m + t.abs())
            })
        })
        .unzip()
}

fn pagerank_rows(o: &Opts, dev: &Device, spec: &str) -> Result<()> {
    let a = spec.parse::<GenSpec>()?.generate()?;
    let g = Graph::from_matrix(&a)?;
    drop(a);
    let opts = PageRankOptions {
        iterations: 50,
        ..Default::default()
    };
    let cfg = LaunchConfig::default();
    // The single-device app is the reference the group runs are checked against.
    let want = apps::pagerank(dev, &cfg, &g, opts)?;
    let mut base = None;
    for &n in &o.gpus {
        let gr = group(o, dev, n)?;
        let run = match o.overlap {
            false => pagerank_group(&gr, o.kind, &cfg, &g, &opts)?,
            true => apps::pagerank_group_overlapped(&gr, o.kind, &cfg, &g, &opts)?,
        };
        let err = max_rel(&run.result, &want, 1e-9);
        if err > 1e-4 {
            return Err(Error::invalid(format!(
                "pagerank {spec} on {n}: off the single-device ranks by {err:e}"
            )));
        }
        let r = row(
            if o.overlap {
                "pagerank ×50, overlapped"
            } else {
                "pagerank ×50"
            },
            spec,
            g.edges(),
            4,
            &run,
            base,
            format!("app ± {err:.1e}"),
        );
        eprintln!("  {n}: {:.3} ms/iter", r.ms);
        base.get_or_insert(r.ms);
        print_row(&r);
    }
    Ok(())
}

fn cg_rows(o: &Opts, dev: &Device, spec: &str) -> Result<()> {
    let a = spec
        .parse::<GenSpec>()?
        .generate()?
        .map_values(|v| *v as f64);
    let b = apps::rhs_for_ones(&a)?;
    let cfg = LaunchConfig::default();
    let (mut base, mut one): (Option<f64>, Option<Vec<f64>>) = (None, None);
    for &n in &o.gpus {
        let g = group(o, dev, n)?;
        // 200 iterations, as the target counts them (tol 0 runs them all).
        let run = cg_group(&g, o.kind, &cfg, &a, &b, 0.0, 200)?;
        let err = one
            .as_ref()
            .map_or(0.0, |o1| max_rel(&run.result, o1, 1e-9));
        let x_err = run
            .result
            .iter()
            .map(|v| (v - 1.0).abs())
            .fold(0.0, f64::max);
        let mut r = row(
            "cg f64 ×200",
            spec,
            a.nnz(),
            8,
            &run,
            base,
            format!("1 GPU ± {err:.1e}"),
        );
        r.extra = format!(
            "‖r‖/‖b‖ {:.2e}, max error of x {x_err:.1e}",
            run.relative_residual
        );
        eprintln!("  {n}: {:.3} ms/iter", r.ms);
        base.get_or_insert(r.ms);
        one.get_or_insert(run.result);
        print_row(&r);
    }
    Ok(())
}

fn bfs_rows(o: &Opts, dev: &Device, spec: &str) -> Result<()> {
    let a = spec.parse::<GenSpec>()?.generate()?;
    let g = Graph::from_matrix(&a)?;
    let cfg = LaunchConfig::default();
    // From the vertex of most out-edges (in the giant component, as a
    // Graph500 search key is).
    let source = (0..g.out_degree.len())
        .max_by_key(|&v| (g.out_degree[v], std::cmp::Reverse(v)))
        .unwrap_or(0);
    let (want, _) = apps::bfs(dev, &cfg, &g, source)?;
    drop(a);
    // The single-device app (a pull over every vertex per level), timed
    // the same way: its rounds, the second search.
    let (_, _, t) = apps::bfs_observed(dev, &cfg, &g, source, &mut |_| {})?;
    print_row(&Row {
        app: "bfs, one device's pull app",
        spec: spec.to_string(),
        nnz: g.edges(),
        gpus: 1,
        ms: t.iterations.total().as_secs_f64() * 1e3,
        speedup: 1.0,
        entries: 0,
        bytes: 0,
        fraction: 0.0,
        replication: 0,
        check: "reference".into(),
        extra: format!("{} rounds", t.iterations.len()),
    });
    for &direction in &o.directions {
        bfs_direction_rows(o, dev, spec, &g, source, &want, direction)?;
    }
    Ok(())
}

/// One direction's rows of `bfs_rows`, each GPU count against the first.
fn bfs_direction_rows(
    o: &Opts,
    dev: &Device,
    spec: &str,
    g: &Graph,
    source: usize,
    want: &[i32],
    direction: BfsDirection,
) -> Result<()> {
    let cfg = LaunchConfig::default();
    let mut base = None;
    for &n in &o.gpus {
        let gr = group(o, dev, n)?;
        // The second search on the same group: the first loads the
        // kernels' modules on every GPU.
        apps::bfs_group(&gr, o.kind, &cfg, g, source, direction)?;
        let run = apps::bfs_group(&gr, o.kind, &cfg, g, source, direction)?;
        if run.result != want {
            return Err(Error::invalid(format!(
                "bfs {spec} ({direction}) on {n}: levels differ from the single-device run"
            )));
        }
        // The whole search, not a round: rounds are not comparable units.
        let total: std::time::Duration = run.steps.iter().sum();
        let mut r = row(
            "bfs (whole search)",
            spec,
            g.edges(),
            0,
            &run,
            None,
            "= single device".into(),
        );
        r.bytes = run.exchange.entries / 8;
        r.ms = total.as_secs_f64() * 1e3;
        r.speedup = base.map_or(1.0, |b: f64| b / r.ms);
        let rounds: Vec<String> = run
            .steps
            .iter()
            .map(|d| format!("{:.2}", d.as_secs_f64() * 1e3))
            .collect();
        r.extra = format!(
            "{direction}, from {source}: {}; rounds (ms): {}",
            run.detail,
            rounds.join(" ")
        );
        eprintln!("  {n} ({direction}): {:.3} ms", r.ms);
        base.get_or_insert(r.ms);
        print_row(&r);
    }
    Ok(())
}

/// PageRank (50 iterations) on RMAT `scale` (edge factor 16, seed 1) made
/// block by block for each GPU count, one block per GPU
/// (`GraphParts::rmat`): the weak-scaling and capacity runs, past what one
/// u32-indexed CSR holds. Each count's ranks are checked against the first
/// count's; the rate is edges per second per GPU.
fn pagerank_parts_rows(o: &Opts, dev: &Device, scale: u32) -> Result<()> {
    let cfg = LaunchConfig::default();
    let opts = PageRankOptions {
        iterations: 50,
        ..Default::default()
    };
    let spec = format!("rmat:scale={scale}, made in parts");
    let (mut first, mut base): (Option<Vec<f32>>, Option<f64>) = (None, None);
    for &n in &o.gpus {
        let t = Instant::now();
        let g = GraphParts::rmat(scale, 16, 1, n)?;
        eprintln!(
            "{spec}: {n} blocks in {:.1} s, {} edges",
            t.elapsed().as_secs_f64(),
            g.edges()
        );
        let gr = group(o, dev, n)?;
        // With --overlap, both forms on the same graph: exchange first,
        // then the owned block pulled beside the exchange.
        let forms: &[bool] = if o.overlap { &[false, true] } else { &[false] };
        for &overlap in forms {
            let run = match overlap {
                false => apps::pagerank_group_parts(&gr, &cfg, &g, &opts)?,
                true => apps::pagerank_group_parts_overlapped(&gr, &cfg, &g, &opts)?,
            };
            let check = rank_check(first.as_deref(), &run.result);
            let app = match overlap {
                false => "pagerank ×50, made in parts",
                true => "pagerank ×50, made in parts, overlapped",
            };
            let mut r = row(app, &spec, g.edges() as usize, 4, &run, base, check);
            let per = run.median_step().as_secs_f64();
            r.extra = format!(
                "{:.2} G edges/s per GPU; set-up {:.1} s",
                g.edges() as f64 / per.max(f64::MIN_POSITIVE) / n as f64 / 1e9,
                run.setup.as_secs_f64()
            );
            base.get_or_insert(r.ms);
            first.get_or_insert(run.result);
            print_row(&r);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("group_bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let o = parse()?;
    let dev = if o.cpu {
        Device::cpu()
    } else {
        Device::open_cuda(0)?
    };
    for s in o.spmv.clone() {
        spmv_rows(&o, &dev, &s)?;
    }
    for s in o.pagerank.clone() {
        pagerank_rows(&o, &dev, &s)?;
    }
    for s in o.cg.clone() {
        cg_rows(&o, &dev, &s)?;
    }
    for s in o.bfs.clone() {
        bfs_rows(&o, &dev, &s)?;
    }
    for &scale in &o.pagerank_parts {
        pagerank_parts_rows(&o, &dev, scale)?;
    }
    for &scale in &o.pagerank_capacity {
        pagerank_capacity_rows(&o, &dev, scale)?;
    }
    Ok(())
}

/// PageRank (50 iterations) on RMAT `scale` made once in as many blocks as
/// the first GPU count, its distribution made once, then run on each
/// count in turn: one GPU per part (NCCL) for the first, the parts placed
/// several to a GPU (`DeviceGroup::cuda_parts`, device copies) for a
/// smaller count. The capacity run: RMAT 29 in four parts (each within a
/// part's 32-bit indices) on 4 GPUs, then on 2; each count's ranks checked
/// against the first's.
fn pagerank_capacity_rows(o: &Opts, dev: &Device, scale: u32) -> Result<()> {
    use warpfit::distributed::Distributed;
    let parts = o.gpus.first().copied().unwrap_or(1);
    let cfg = LaunchConfig::default();
    let opts = PageRankOptions {
        iterations: 50,
        ..Default::default()
    };
    let spec = format!("rmat:scale={scale}, {parts} parts");
    let t = Instant::now();
    let g = GraphParts::rmat(scale, 16, 1, parts)?;
    eprintln!(
        "{spec}: made in {:.1} s, {} edges",
        t.elapsed().as_secs_f64(),
        g.edges()
    );
    let t = Instant::now();
    let mut dist = Some(g.distribution()?);
    eprintln!("{spec}: distributed in {:.1} s", t.elapsed().as_secs_f64());
    let (mut first, mut base): (Option<Vec<f32>>, Option<f64>) = (None, None);
    for &n in &o.gpus {
        let gr = if o.cpu || n == parts {
            group(o, dev, parts)?
        } else {
            let placement: Vec<usize> = (0..parts).map(|p| p * n / parts).collect();
            DeviceGroup::cuda_parts(&placement)?
        };
        let t = Instant::now();
        let d = Distributed::from_distribution(
            &gr,
            dist.take()
                .ok_or_else(|| Error::invalid("no distribution"))?,
        )?;
        let placed = t.elapsed();
        let run = apps::pagerank_on_parts(&d, &cfg, &g, &opts)?;
        dist = Some(d.into_distribution());
        let check = rank_check(first.as_deref(), &run.result);
        let mut r = row(
            "pagerank ×50, capacity",
            &spec,
            g.edges() as usize,
            4,
            &run,
            base,
            check,
        );
        r.gpus = n;
        r.extra = format!(
            "{}; placed in {:.1} s, launches prepared in {:.1} s",
            run.group,
            placed.as_secs_f64(),
            run.setup.as_secs_f64()
        );
        base.get_or_insert(r.ms);
        first.get_or_insert(run.result);
        print_row(&r);
    }
    Ok(())
}

/// Prints a table row (the header before the first), as soon as it is
/// measured, so that a run cut short keeps what it measured.
fn print_row(r: &Row) {
    static HEADER: std::sync::Once = std::sync::Once::new();
    HEADER.call_once(|| {
        println!("| app | matrix | nonzeros | GPUs | ms per launch/iteration (median) | speed-up | exchanged per launch | × vector | R | check | |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
    });
    {
        println!(
            "| {} | {} | {} | {} | {:.3} | {:.2}× | {} entries, {:.1} MB | {:.2} | {} | {} | {} |",
            r.app,
            r.spec,
            r.nnz,
            r.gpus,
            r.ms,
            r.speedup,
            r.entries,
            r.bytes as f64 / 1e6,
            r.fraction,
            r.replication,
            r.check,
            r.extra
        );
    }
}
