//! `warpfit partition`: cache-fit partitions of a matrix's work graph (DBWP).

use super::input::MatrixInput;
use super::output::{refuse_input_as_output, OutputFile};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use warpfit::runtime::mem::{parse_bytes, HeapMeter};
use warpfit::runtime::partition::{
    dbwp, Bisection, Capacity, CoarsenOptions, Metrics, Partition, PartitionOptions, WorkGraph,
    DEFAULT_SAFETY,
};
use warpfit::{Device, Error, Result};

/// Work graphs with at least this many tuples get a progress bar (on a
/// terminal): below it partitioning takes well under a second.
const PROGRESS_MIN_TUPLES: usize = 1 << 20;

/// Options of `warpfit partition`.
#[derive(Debug, Clone, clap::Args)]
pub struct PartitionArgs {
    #[command(flatten)]
    pub input: MatrixInput,
    /// Cache size the partitions must fit: `50MB`, `8MiB`, `52428800`.
    /// Defaults to the GPU's L2 when there is one.
    #[arg(long, value_name = "BYTES")]
    pub cache: Option<String>,
    /// Bisection method: `kd` (K-D tiling, fast) or `bisect` (coarsened
    /// multilevel bisection, fewer replicas).
    #[arg(long, value_name = "kd|bisect", default_value = "kd")]
    pub partitioner: String,
    /// Coarsened bisection only: skip refinement on this many of the finest levels.
    #[arg(long, value_name = "L", default_value_t = 0)]
    pub skip_levels: u32,
    /// Fraction of the cache a partition may fill, in (0, 1].
    #[arg(long, value_name = "F", default_value_t = DEFAULT_SAFETY)]
    pub safety: f64,
    /// Prints one JSON object instead of a table. Besides the metrics it
    /// carries `csr_bytes` (the loaded matrix) and `peak_heap_bytes`: the
    /// most heap bytes the partitioning held at once, result included,
    /// beyond the matrix it reads.
    #[arg(long)]
    pub json: bool,
    /// Writes the partition id of every tuple, one per line, in CSR order
    /// (row by row, entries in stored order).
    #[arg(long, value_name = "FILE")]
    pub assignments: Option<PathBuf>,
}

/// The cache size: `--cache`, else the GPU's L2.
fn cache_bytes(args: &PartitionArgs) -> Result<u64> {
    match &args.cache {
        Some(s) => parse_bytes(s),
        // Not `Device::best`, which notes the CPU fallback on stderr: the
        // error below is the one line this case prints.
        None => Device::open_cuda(0)
            .ok()
            .and_then(|d| d.describe().l2_bytes)
            .map(|b| b as u64)
            .ok_or_else(|| {
                Error::invalid(
                    "no GPU here to take the L2 size from: give --cache BYTES (e.g. 8MiB)",
                )
            }),
    }
}

fn bisection(args: &PartitionArgs) -> Result<Bisection> {
    match args.partitioner.parse::<Bisection>()? {
        Bisection::Coarsened(c) => Ok(Bisection::Coarsened(CoarsenOptions {
            skip_levels: args.skip_levels,
            ..c
        })),
        Bisection::KdTiling if args.skip_levels != 0 => Err(Error::invalid(
            "--skip-levels applies to --partitioner bisect only",
        )),
        kd => Ok(kd),
    }
}

/// What one `warpfit partition` run measured.
struct Report {
    nrows: usize,
    ncols: usize,
    tuples: usize,
    cache: u64,
    /// Bytes of the loaded CSR: row pointers and column indices (u32) plus
    /// values (f32).
    csr_bytes: u64,
    /// Heap high mark of the partitioning (see [`HeapMeter`]), when the
    /// binary counts its heap.
    peak_heap_bytes: Option<u64>,
    metrics: Metrics,
    tree_depth: u32,
}

/// Loads the input and partitions it; writes the assignments file if asked.
///
/// Memory: the work graph takes the CSR's row pointers and column indices
/// over (moved, not copied) and the values are freed, since the
/// partitioner does not read them. The heap is metered from there to the end
/// of partitioning: what the partitioner allocates, its result included,
/// but not the matrix it reads.
fn execute(args: &PartitionArgs) -> Result<Report> {
    if let Some(assignments) = &args.assignments {
        refuse_input_as_output(
            assignments,
            "--assignments",
            &[("--matrix", args.input.matrix.as_deref())],
        )?;
    }
    let bisection = bisection(args)?;
    let cache = cache_bytes(args)?;
    if !(args.safety > 0.0 && args.safety <= 1.0) {
        return Err(Error::invalid(format!(
            "--safety must be in (0, 1], got {:?}",
            args.safety
        )));
    }
    let assignments = args
        .assignments
        .as_deref()
        .map(|p| OutputFile::open(p, "--assignments"))
        .transpose()?;
    let csr = args.input.load()?;
    let csr_bytes = (std::mem::size_of_val(csr.row_ptr())
        + std::mem::size_of_val(csr.col_idx())
        + std::mem::size_of_val(csr.values())) as u64;
    let (nrows, ncols, row_ptr, col_idx, values) = csr.into_parts();
    drop(values);
    let meter = HeapMeter::start().ok();
    let elem = std::mem::size_of::<f32>();
    let graph = WorkGraph::new(row_ptr, col_idx, ncols, elem, elem)?;
    let capacity = Capacity::for_graph(&graph, cache)
        .with_safety(args.safety)
        .vertices()?;
    let opts = PartitionOptions {
        capacity,
        bisection,
    };
    let partition = partition_with_progress(&graph, &opts, !args.json)?;
    let peak_heap_bytes = meter.and_then(|m| m.peak_bytes().ok());
    let metrics = Metrics::of(&graph, &partition)?;
    if let Some(file) = assignments {
        write_assignments(file, &partition)?;
    }
    Ok(Report {
        nrows,
        ncols,
        tuples: graph.n_tuples(),
        cache,
        csr_bytes,
        peak_heap_bytes,
        metrics,
        tree_depth: partition.tree().depth(),
    })
}

impl Report {
    fn json(&self, args: &PartitionArgs) -> serde_json::Value {
        let m = &self.metrics;
        serde_json::json!({
            "input": args.input.label(),
            "rows": self.nrows,
            "cols": self.ncols,
            "tuples": self.tuples,
            "partitioner": args.partitioner,
            "skip_levels": args.skip_levels,
            "cache_bytes": self.cache,
            "safety": args.safety,
            "capacity": m.capacity,
            "partitions": m.partitions,
            "max_unique": m.max_unique,
            "mean_unique": m.mean_unique,
            "replication": m.replication,
            "split_tasks": m.split_tasks,
            "min_edges": m.min_edges,
            "mean_edges": m.mean_edges,
            "max_edges": m.max_edges,
            "tree_depth": self.tree_depth,
            "seconds": m.seconds,
            "csr_bytes": self.csr_bytes,
            "peak_heap_bytes": self.peak_heap_bytes,
        })
    }

    fn print_table(&self, args: &PartitionArgs) {
        let m = &self.metrics;
        let (nrows, ncols) = (self.nrows, self.ncols);
        say!(
            "input:        {} ({nrows} x {ncols}, {} tuples)",
            args.input.label(),
            self.tuples
        );
        say!(
            "capacity:     T = {} unique vertices ({} bytes of cache at safety {:?})",
            m.capacity,
            self.cache,
            args.safety
        );
        say!("partitioner:  {}", args.partitioner);
        say!(
            "partitions:   {} (SJ-tree depth {})",
            m.partitions,
            self.tree_depth
        );
        say!(
            "unique:       max {}, mean {:.1}",
            m.max_unique,
            m.mean_unique
        );
        say!(
            "edges:        min {}, mean {:.1}, max {}",
            m.min_edges,
            m.mean_edges,
            m.max_edges
        );
        say!("replication:  R = {}", m.replication);
        say!("split tasks:  {}", m.split_tasks);
        say!("time:         {:.3} s", m.seconds);
        if let Some(peak) = self.peak_heap_bytes {
            say!(
                "heap peak:    {:.2} MB = {:.2}x the {:.2} MB CSR",
                peak as f64 / 1e6,
                peak as f64 / self.csr_bytes.max(1) as f64,
                self.csr_bytes as f64 / 1e6
            );
        }
    }
}

/// Runs `warpfit partition`.
pub fn run(args: &PartitionArgs) -> Result<()> {
    let report = execute(args)?;
    if args.json {
        say!("{}", report.json(args));
    } else {
        report.print_table(args);
    }
    Ok(())
}

/// DBWP with a progress bar on stderr for large inputs (hidden when stderr is
/// not a terminal).
fn partition_with_progress(
    graph: &WorkGraph,
    opts: &PartitionOptions,
    show: bool,
) -> Result<Partition> {
    if !show || graph.n_tuples() < PROGRESS_MIN_TUPLES {
        return dbwp(graph, opts, None);
    }
    let bar = indicatif::ProgressBar::new(graph.n_tuples() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "partitioning [{elapsed_precise}] {wide_bar} {pos}/{len} tuples",
        )
        .map_err(|e| Error::invalid(format!("progress bar template: {e}")))?,
    );
    // Reports arrive from several threads, possibly out of order: keep the max.
    let high = AtomicU64::new(0);
    let report = |done: u64| {
        if high.fetch_max(done, Ordering::Relaxed) < done {
            bar.set_position(done);
        }
    };
    let result = dbwp(graph, opts, Some(&report));
    bar.finish_and_clear();
    result
}

/// One partition id per line, tuples in CSR order.
fn write_assignments(file: OutputFile, partition: &Partition) -> Result<()> {
    file.write_with(|out| {
        for a in partition.assignments() {
            writeln!(out, "{a}")?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashMap};
    use std::sync::Mutex;

    /// The heap meter has one window per process: tests that partition run
    /// one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn args(gen: &str, cache: &str, partitioner: &str, out: Option<PathBuf>) -> PartitionArgs {
        PartitionArgs {
            input: MatrixInput {
                matrix: None,
                gen: Some(gen.into()),
            },
            cache: Some(cache.into()),
            partitioner: partitioner.into(),
            skip_levels: 0,
            safety: 1.0,
            json: true,
            assignments: out,
        }
    }

    /// The assignments file alone lets anyone check the partition: every
    /// tuple has an id, and each partition's rows + columns fit the capacity.
    #[test]
    fn assignments_file_checks_independently() {
        let _serial = serial();
        let gen = "grid2d:side=30";
        let csr = warpfit::runtime::gen::grid2d(30).unwrap();
        for partitioner in ["kd", "bisect"] {
            let path = std::env::temp_dir().join(format!(
                "warpfit-partition-{}-{partitioner}.txt",
                std::process::id()
            ));
            // 1600 bytes / 4-byte f32 = 400 vertices per partition.
            run(&args(gen, "1600", partitioner, Some(path.clone()))).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::remove_file(&path).unwrap();
            let ids: Vec<u32> = text.lines().map(|l| l.parse().unwrap()).collect();
            assert_eq!(ids.len(), csr.nnz());
            let mut vertices: HashMap<u32, (BTreeSet<u32>, BTreeSet<u32>)> = HashMap::new();
            for r in 0..csr.nrows() {
                for k in csr.row_range(r) {
                    let e = vertices.entry(ids[k]).or_default();
                    e.0.insert(r as u32);
                    e.1.insert(csr.col_idx()[k]);
                }
            }
            assert!(
                vertices.len() > 1,
                "{partitioner}: expected several partitions"
            );
            for (p, (rows, cols)) in &vertices {
                assert!(
                    rows.len() + cols.len() <= 400,
                    "{partitioner}: partition {p} too big"
                );
            }
        }
    }

    /// `--json` carries the CSR size and the counted heap peak of the
    /// partitioning (the binary's global allocator counts).
    #[test]
    fn json_reports_the_counted_heap_peak() {
        let _serial = serial();
        for partitioner in ["kd", "bisect"] {
            let a = args("grid2d:side=40", "1600", partitioner, None);
            let csr = warpfit::runtime::gen::grid2d(40).unwrap();
            let v = execute(&a).unwrap().json(&a);
            let csr_bytes = 4 * (csr.nrows() + 1 + 2 * csr.nnz()) as u64;
            assert_eq!(v["csr_bytes"].as_u64(), Some(csr_bytes));
            let peak = v["peak_heap_bytes"]
                .as_u64()
                .unwrap_or_else(|| panic!("{partitioner}: no peak_heap_bytes in {v}"));
            // At least the partition's tuple order (4 bytes per tuple) is
            // allocated while it is metered.
            assert!(
                peak >= 4 * csr.nnz() as u64,
                "{partitioner}: peak {peak} below the result's size"
            );
        }
    }

    #[test]
    fn rejects_bad_options() {
        let _serial = serial();
        let mut a = args("grid2d:side=8", "1600", "metis", None);
        assert!(run(&a).is_err());
        a.partitioner = "kd".into();
        a.skip_levels = 2;
        assert!(run(&a).unwrap_err().to_string().contains("--skip-levels"));
        a.skip_levels = 0;
        a.cache = Some("12 parsecs".into());
        assert!(run(&a).is_err());
        a.cache = Some("4".into());
        assert!(run(&a).unwrap_err().to_string().contains("at least 2"));
    }
}
