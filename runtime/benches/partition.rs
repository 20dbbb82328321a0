//! Partitioner benchmark: times DBWP on a generated or Matrix Market input
//! and reports quality and peak memory, for BENCHMARKS.md.
//!
//! ```text
//! cargo bench -p warpfit-runtime --bench partition -- INPUT CACHE METHOD... [--skip-levels L]
//! ```
//! INPUT is a generator spec (`rmat:scale=22`) or a `.mtx` path; CACHE a byte
//! size (`8MiB`); METHOD `kd` or `bisect` (several may be given: each runs on
//! the same work graph, and ratios to the first are printed).
//!
//! Memory: the CSR stays alive, as in a program that partitions a matrix and
//! then runs its kernel on it, and the work graph reads it in place
//! ([`WorkGraphOf::borrow_csr`]). `peak_heap` is the most heap bytes live at
//! once during one method's run beyond those live before it (the counting
//! allocator below; the partitioner's arrays and its result, not the CSR);
//! `peak_rss` is the process's resident high mark since the input was loaded,
//! which includes the CSR and everything the process keeps resident.

use std::time::Instant;
use warpfit_runtime::gen::GenSpec;
use warpfit_runtime::mem::{parse_bytes, CountingAlloc, HeapMeter};
use warpfit_runtime::partition::{
    dbwp, Bisection, Capacity, CoarsenOptions, Metrics, PartitionOptions, WorkGraphOf,
};
use warpfit_runtime::{Error, Result};

#[global_allocator]
static HEAP: CountingAlloc = CountingAlloc;

/// Peak resident set size in bytes since the last [`reset_peak`] (Linux).
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// CPU time of all threads of this process so far, in seconds (Linux
/// schedstat, nanosecond resolution). On a shared machine this measures the
/// work done independently of the other load.
fn cpu_seconds() -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    dir.filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum::<u64>() as f64
        * 1e-9
}

/// Resets the peak RSS to the current RSS (Linux >= 4.0), so that the peak of
/// the partitioning alone is measured, not that of generating the input.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mut skip = 0u32;
    let mut pos = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--skip-levels" {
            let v = it
                .next()
                .ok_or_else(|| Error::invalid("--skip-levels needs a value"))?;
            skip = v
                .parse()
                .map_err(|_| Error::invalid(format!("bad --skip-levels `{v}`")))?;
        } else {
            pos.push(a.as_str());
        }
    }
    if pos.len() < 3 {
        return Err(Error::invalid(
            "usage: partition INPUT CACHE METHOD... [--skip-levels L]",
        ));
    }
    let t0 = Instant::now();
    let csr = if pos[0].ends_with(".mtx") {
        let c = warpfit_runtime::sparse::mm::read_csr::<f32>(std::path::Path::new(pos[0]))?;
        c.pattern().with_values(vec![1.0f32; c.nnz()])?
    } else {
        pos[0].parse::<GenSpec>()?.generate()?
    };
    let csr_bytes = 4 * (csr.nrows() + 1 + 2 * csr.nnz()) as u64;
    println!(
        "input {}: {} x {}, {} tuples, CSR {:.1} MB, loaded in {:.2} s",
        pos[0],
        csr.nrows(),
        csr.ncols(),
        csr.nnz(),
        csr_bytes as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );
    reset_peak();
    let meter = HeapMeter::start()?;
    let g = WorkGraphOf::borrow_csr(&csr)?;
    println!(
        "work graph read in place from the CSR ({} heap bytes)",
        meter.peak_bytes()?
    );
    let cache = parse_bytes(pos[1])?;
    let capacity = Capacity::for_graph(&g, cache).vertices()?;
    let mut first: Option<(u64, f64, f64)> = None;
    for name in &pos[2..] {
        let bisection = match *name {
            "bisect" => Bisection::Coarsened(CoarsenOptions {
                skip_levels: skip,
                ..CoarsenOptions::default()
            }),
            other => other.parse()?,
        };
        let cpu0 = cpu_seconds();
        let meter = HeapMeter::start()?;
        let p = dbwp(
            &g,
            &PartitionOptions {
                capacity,
                bisection,
            },
            None,
        )?;
        let cpu = cpu_seconds() - cpu0;
        let heap = meter.peak_bytes()?;
        let m = Metrics::of(&g, &p)?;
        let peak = peak_rss().unwrap_or(0);
        print!(
            "{name:>6}: T {} partitions {} max_unique {} mean_unique {:.0} R {} split_tasks {} \
             edges {}..{} depth {} time {:.3} s cpu {:.3} s peak_heap {:.2} MB ({:.2}x CSR) \
             peak_rss {:.1} MB ({:.2}x CSR)",
            m.capacity,
            m.partitions,
            m.max_unique,
            m.mean_unique,
            m.replication,
            m.split_tasks,
            m.min_edges,
            m.max_edges,
            p.tree().depth(),
            m.seconds,
            cpu,
            heap as f64 / 1e6,
            heap as f64 / csr_bytes as f64,
            peak as f64 / 1e6,
            peak as f64 / csr_bytes as f64
        );
        match first {
            None => {
                first = Some((m.replication, m.seconds, cpu));
                println!();
            }
            Some((r, s, c)) => println!(
                "  | R ratio {:.3}, time ratio {:.1}, cpu ratio {:.1}",
                m.replication as f64 / r.max(1) as f64,
                m.seconds / s,
                cpu / c
            ),
        }
    }
    Ok(())
}
