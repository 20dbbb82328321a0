//! Times sssp, bfs and cc under every driver on the CPU or CUDA backend,
//! each graph generated (or read) once, every result checked against the
//! sequential references (Dijkstra, queue BFS, union-find) bit for bit
//! before it is timed. Prints one Markdown table row per (graph, app,
//! driver): the median and the fastest of `--runs` timed runs of the rounds
//! after one warm-up run (set-up excluded: on CUDA the rounds' wall time
//! ends when the last outcome is read, which waits for the device; the
//! drivers take turns, one run each per turn), the edges of the reached
//! vertices per second at the median, and the median run's rounds, host
//! synchronisations, items processed and worklist growths with the time
//! they took.
//!
//! ```text
//! cargo run --release -p warpfit-bench --example drivers_bench -- [--gen SPEC]... [--mtx FILE]...
//!     [--backend cpu|cuda] [--apps sssp,bfs,cc]
//!     [--drivers topo,topo:rounds,data:fifo,data:nearfar,hybrid,auto]
//!     [--runs 3] [--source V|hub] [--capacity N|n] [--no-dedup] [--no-donate]
//!     [--rounds-per-sync K[,K...]] [--sync-times] [--decomposition cte|thread|subN]
//! ```
//!
//! `--source hub` (the default) starts sssp and bfs at a vertex of the
//! largest degree, inside the giant component of a power-law graph;
//! `--capacity n` preallocates worklists of the vertex count (no growth with
//! deduplicating lists), to compare with the default `n / 5`;
//! `--rounds-per-sync 1,8,16` runs every worklist driver with each `k`
//! (default: the backend's, 1 on the CPU and 8 on CUDA); `--sync-times`
//! prints each median run's set-up time and time per host synchronisation
//! (and BFS's level sizes, up to 64 levels) on stderr.

use std::process::ExitCode;
use warpfit::apps::{self, DriveOptions, DrivenReport, DriverChoice};
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::sparse::mm;
use warpfit::runtime::{reference, Csr};
use warpfit::{Decomposition, Device, LaunchConfig, Result};

struct Args {
    graphs: Vec<(String, Csr<f32>)>,
    apps: Vec<String>,
    drivers: Vec<String>,
    runs: usize,
    source: Option<usize>,
    capacity: Option<String>,
    dedup: bool,
    donate: bool,
    device: Device,
    rounds_per_sync: Vec<Option<usize>>,
    sync_times: bool,
    decomposition: Decomposition,
}

fn parse() -> Result<Args> {
    let mut a = Args {
        graphs: Vec::new(),
        apps: vec!["sssp".into(), "bfs".into(), "cc".into()],
        drivers: [
            "topo",
            "topo:rounds",
            "data:fifo",
            "data:nearfar",
            "hybrid",
            "auto",
        ]
        .map(String::from)
        .to_vec(),
        runs: 3,
        source: None,
        capacity: None,
        dedup: true,
        donate: true,
        device: Device::Cpu,
        rounds_per_sync: vec![None],
        sync_times: false,
        decomposition: Decomposition::Cte,
    };
    let mut it = std::env::args().skip(1);
    let bad = |m: String| warpfit::Error::invalid(m);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| bad(format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--gen" => {
                let spec: GenSpec = value()?.parse()?;
                eprintln!("generating {spec}");
                a.graphs.push((spec.to_string(), spec.generate()?));
            }
            "--mtx" => {
                let path = value()?;
                eprintln!("reading {path}");
                let m = mm::read_csr::<f32>(std::path::Path::new(&path))?;
                let name = std::path::Path::new(&path)
                    .file_name()
                    .map_or(path.clone(), |f| f.to_string_lossy().into_owned());
                a.graphs.push((name, m));
            }
            "--apps" => a.apps = value()?.split(',').map(String::from).collect(),
            "--drivers" => a.drivers = value()?.split(',').map(String::from).collect(),
            "--runs" => {
                a.runs = value()?
                    .parse()
                    .map_err(|_| bad("--runs takes a count".into()))?
            }
            "--source" => {
                let v = value()?;
                a.source = if v == "hub" {
                    None
                } else {
                    Some(
                        v.parse()
                            .map_err(|_| bad("--source takes V or hub".into()))?,
                    )
                };
            }
            "--capacity" => a.capacity = Some(value()?),
            "--no-dedup" => a.dedup = false,
            "--no-donate" => a.donate = false,
            "--sync-times" => a.sync_times = true,
            "--decomposition" => a.decomposition = value()?.parse()?,
            "--backend" => a.device = Device::from_name(&value()?)?,
            "--rounds-per-sync" => {
                a.rounds_per_sync = value()?
                    .split(',')
                    .map(|k| {
                        k.parse::<usize>()
                            .ok()
                            .filter(|&k| k > 0)
                            .map(Some)
                            .ok_or_else(|| {
                                bad(format!("--rounds-per-sync: `{k}` is not a count ≥ 1"))
                            })
                    })
                    .collect::<Result<_>>()?
            }
            other => return Err(bad(format!("unknown option {other}"))),
        }
    }
    if a.graphs.is_empty() {
        a.graphs.push((
            "road:side=256".into(),
            "road:side=256".parse::<GenSpec>()?.generate()?,
        ));
    }
    Ok(a)
}

/// The run's values, as bit patterns, and its report.
fn run_once(
    device: &Device,
    app: &str,
    a: &Csr<f32>,
    source: usize,
    options: &DriveOptions,
    decomposition: Decomposition,
) -> Result<(Vec<u32>, DrivenReport)> {
    let config = LaunchConfig {
        decomposition,
        ..LaunchConfig::default()
    };
    Ok(match app {
        "sssp" => {
            let (d, r) = apps::sssp_driven(device, &config, a, source, options)?;
            (d.iter().map(|x| x.to_bits()).collect(), r)
        }
        "bfs" => {
            let (l, r) = apps::bfs_driven(device, &config, a, source, options)?;
            (l.iter().map(|&x| x as u32).collect(), r)
        }
        "cc" => apps::cc_driven(device, &config, a, options)?,
        other => return Err(warpfit::Error::invalid(format!("unknown app {other}"))),
    })
}

fn reference_of(app: &str, a: &Csr<f32>, source: usize) -> Result<Vec<u32>> {
    Ok(match app {
        "sssp" => reference::dijkstra(a, source)?
            .iter()
            .map(|x| x.to_bits())
            .collect(),
        "bfs" => reference::bfs_levels(a, source)?
            .iter()
            .map(|&x| x as u32)
            .collect(),
        _ => reference::components(a)?,
    })
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Edges out of the vertices a run reached (sssp: finite distance; bfs: a
/// level; cc: every vertex), as the traversal rates count them.
fn reached_edges(app: &str, a: &Csr<f32>, want: &[u32]) -> u64 {
    (0..a.nrows())
        .filter(|&v| match app {
            "sssp" => f32::from_bits(want[v]).is_finite(),
            "bfs" => want[v] as i32 >= 0,
            _ => true,
        })
        .map(|v| a.row_range(v).len() as u64)
        .sum()
}

fn bench() -> Result<()> {
    let args = parse()?;
    let device = &args.device;
    println!(
        "| graph | app | driver | ms (median of {}, after a warm-up) | best ms | GTEPS (median) | rounds | host syncs | items processed | growths (ms) | vs reference |",
        args.runs
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, a) in &args.graphs {
        let hub = (0..a.nrows())
            .max_by_key(|&v| a.row_range(v).len())
            .unwrap_or(0);
        let source = args.source.unwrap_or(hub);
        let capacity = match args.capacity.as_deref() {
            None => None,
            Some("n") => Some(a.nrows().max(1)),
            Some(c) => Some(
                c.parse()
                    .map_err(|_| warpfit::Error::invalid("--capacity takes N or n"))?,
            ),
        };
        eprintln!("{name}: source {source}, {}", device.backend_name());
        for app in &args.apps {
            let want = reference_of(app, a, source)?;
            let edges = reached_edges(app, a, &want);
            if args.sync_times && app == "bfs" {
                // The level sizes, to read the synchronisations' times by.
                let mut sizes: Vec<u64> = Vec::new();
                for &l in &want {
                    if let Ok(l) = usize::try_from(l as i32) {
                        if sizes.len() <= l {
                            sizes.resize(l + 1, 0);
                        }
                        sizes[l] += 1;
                    }
                }
                if sizes.len() <= 64 {
                    eprintln!("bfs level sizes: {sizes:?}");
                }
            }
            // (label, options) per variant: every driver, the worklist
            // drivers once per rounds-per-sync asked.
            let mut variants: Vec<(String, DriveOptions)> = Vec::new();
            for driver in args
                .drivers
                .iter()
                .filter(|d| app == "sssp" || !d.starts_with("data:nearfar"))
            {
                let choice = driver.parse::<DriverChoice>()?;
                let ks: &[Option<usize>] = if choice == DriverChoice::Topo {
                    &[None]
                } else {
                    &args.rounds_per_sync
                };
                for &k in ks {
                    let label = match k {
                        Some(k) if args.rounds_per_sync.len() > 1 => format!("{driver} k={k}"),
                        _ => driver.clone(),
                    };
                    let options = DriveOptions {
                        initial_capacity: capacity,
                        rounds_per_sync: k,
                        dedup: args.dedup,
                        donate: args.donate,
                        ..DriveOptions::new(choice)
                    };
                    variants.push((label, options));
                }
            }
            // The warm-up (kernels compiled and cached, memory pools
            // primed) checks every result before anything is timed.
            for (label, options) in &variants {
                let (values, _) = run_once(device, app, a, source, options, args.decomposition)?;
                if values != want {
                    return Err(warpfit::Error::invalid(format!(
                        "{name}, {app}, {label}: differs from the reference"
                    )));
                }
            }
            let mut runs: Vec<Vec<DrivenReport>> = vec![Vec::new(); variants.len()];
            // Rounds of one run per driver, so that the host's load falls
            // alike on every driver.
            for _ in 0..args.runs.max(1) {
                for (i, (label, options)) in variants.iter().enumerate() {
                    let (values, report) =
                        run_once(device, app, a, source, options, args.decomposition)?;
                    if values != want {
                        return Err(warpfit::Error::invalid(format!(
                            "{name}, {app}, {label}: differs from the reference"
                        )));
                    }
                    runs[i].push(report);
                }
            }
            for (i, (label, _)) in variants.iter().enumerate() {
                let mut rs = std::mem::take(&mut runs[i]);
                rs.sort_by_key(|r| r.run);
                let best = rs[0].run;
                let r = &rs[rs.len() / 2];
                let shown = match &r.note {
                    Some(_) => format!("{label} ({})", r.driver),
                    None => label.clone(),
                };
                let growth = r
                    .rounds_report
                    .as_ref()
                    .map_or(0.0, |g| g.growth_time.as_secs_f64() * 1e3);
                let gteps = edges as f64 / r.run.as_secs_f64().max(1e-12) / 1e9;
                println!(
                    "| {name} | {app} | {shown} | {:.2} | {:.2} | {gteps:.2} | {} | {} | {} | {} ({growth:.2}) | equal |",
                    r.run.as_secs_f64() * 1e3,
                    best.as_secs_f64() * 1e3,
                    r.rounds,
                    r.syncs,
                    r.processed,
                    r.growths
                );
                if args.sync_times {
                    let ms: Vec<String> = r
                        .times
                        .kept()
                        .iter()
                        .map(|t| format!("{:.3}", t.as_secs_f64() * 1e3))
                        .collect();
                    eprintln!(
                        "{label}: set-up {:.3} ms (lists and launches prepared included); \
                         ms per synchronisation: {}",
                        r.setup.as_secs_f64() * 1e3,
                        ms.join(" ")
                    );
                }
            }
        }
    }
    Ok(())
}
