//! Times sssp, bfs and cc under every driver on the CPU backend, each graph
//! generated (or read) once, every result checked against the sequential
//! references (Dijkstra, queue BFS, union-find) bit for bit. Prints one
//! Markdown table row per (graph, app, driver): the fastest of `--runs`
//! runs of the rounds (set-up excluded; the drivers take turns, one run
//! each per turn), and that run's rounds, host synchronisations, items
//! processed and worklist growths with the time they took.
//!
//! ```text
//! cargo run --release --example drivers_bench -- [--gen SPEC]... [--mtx FILE]...
//!     [--apps sssp,bfs,cc] [--drivers topo,topo:rounds,data:fifo,data:nearfar,hybrid,auto]
//!     [--runs 3] [--source V|hub] [--capacity N|n] [--no-dedup]
//! ```
//!
//! `--source hub` (the default) starts sssp and bfs at a vertex of the
//! largest degree, inside the giant component of a power-law graph;
//! `--capacity n` preallocates worklists of the vertex count (no growth with
//! deduplicating lists), to compare with the default `n / 5`.

use std::process::ExitCode;
use std::time::Duration;
use warpfit::apps::{self, DriveOptions, DrivenReport, DriverChoice};
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::sparse::mm;
use warpfit::runtime::{reference, Csr};
use warpfit::{Device, LaunchConfig, Result};

struct Args {
    graphs: Vec<(String, Csr<f32>)>,
    apps: Vec<String>,
    drivers: Vec<String>,
    runs: usize,
    source: Option<usize>,
    capacity: Option<String>,
    dedup: bool,
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
    app: &str,
    a: &Csr<f32>,
    source: usize,
    options: &DriveOptions,
) -> Result<(Vec<u32>, DrivenReport)> {
    let (device, config) = (Device::cpu(), LaunchConfig::default());
    Ok(match app {
        "sssp" => {
            let (d, r) = apps::sssp_driven(&device, &config, a, source, options)?;
            (d.iter().map(|x| x.to_bits()).collect(), r)
        }
        "bfs" => {
            let (l, r) = apps::bfs_driven(&device, &config, a, source, options)?;
            (l.iter().map(|&x| x as u32).collect(), r)
        }
        "cc" => apps::cc_driven(&device, &config, a, options)?,
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

fn bench() -> Result<()> {
    let args = parse()?;
    println!(
        "| graph | app | driver | ms (best of {}) | rounds | host syncs | items processed | growths (ms) | vs reference |",
        args.runs
    );
    println!("|---|---|---|---|---|---|---|---|---|");
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
        eprintln!("{name}: source {source}");
        for app in &args.apps {
            let want = reference_of(app, a, source)?;
            let drivers: Vec<&String> = args
                .drivers
                .iter()
                .filter(|d| app == "sssp" || !d.starts_with("data:nearfar"))
                .collect();
            let mut best = vec![Duration::MAX; drivers.len()];
            let mut last = vec![None; drivers.len()];
            // Rounds of one run per driver, so that the host's load falls
            // alike on every driver.
            for _ in 0..args.runs.max(1) {
                for (i, driver) in drivers.iter().enumerate() {
                    let options = DriveOptions {
                        initial_capacity: capacity,
                        dedup: args.dedup,
                        ..DriveOptions::new(driver.parse::<DriverChoice>()?)
                    };
                    let (values, report) = run_once(app, a, source, &options)?;
                    if values != want {
                        return Err(warpfit::Error::invalid(format!(
                            "{name}, {app}, {driver}: differs from the reference"
                        )));
                    }
                    // The fastest run's report.
                    if report.run < best[i] {
                        best[i] = report.run;
                        last[i] = Some(report);
                    }
                }
            }
            for (i, driver) in drivers.iter().enumerate() {
                let r = last[i].take().expect("at least one run");
                let shown = match &r.note {
                    Some(_) => format!("{driver} ({})", r.driver),
                    None => driver.to_string(),
                };
                let growth = r
                    .rounds_report
                    .as_ref()
                    .map_or(0.0, |g| g.growth_time.as_secs_f64() * 1e3);
                println!(
                    "| {name} | {app} | {shown} | {:.1} | {} | {} | {} | {} ({growth:.2}) | equal |",
                    best[i].as_secs_f64() * 1e3,
                    r.rounds,
                    r.syncs,
                    r.processed,
                    r.growths
                );
            }
        }
    }
    Ok(())
}
