//! The SpMV benchmark behind `warpfit bench spmv`: every decomposition of
//! warpfit against cuSPARSE on a suite of generated and real matrices.
//!
//! Protocol, per matrix and variant: prepare (upload, compile, plan), run
//! once and check `y` against an f64 CPU reference, warm up, then time each
//! run with CUDA events around the kernels alone, after clearing the
//! timer's lead buffer (512 MiB, [`EventTimer`]) so that no run starts with
//! the matrix or `x` in cache; report the median. The device-to-device copy
//! bandwidth, measured in the same process, is the physical reference for
//! the effective bandwidth.

use crate::baseline::{CusparseSpmv, CusparseSpmvOn, SpmvAlg};
use crate::input::{gens, MatrixSource, SpmvReference, TOLERANCE};
use std::time::Instant;
use warpfit::__private::EventTimer;
use warpfit::__private::{cuda_err, AccType, Arg, CudaLaunch, KernelSpec, ParamKind, ScalarType};
use warpfit::runtime::{Csr, Error, Result, Tasks};
use warpfit::{CudaDevice, DeviceBuffer};
use warpfit::{Decomposition, LaunchConfig, Split};

/// A small suite for smoke runs.
///
/// # Errors
/// None in practice (the specs are fixed).
pub fn small_suite() -> Result<Vec<MatrixSource>> {
    gens(&[
        "rmat:scale=16,edge_factor=16,seed=1",
        "uniform:n=262144,per_row=16,seed=1",
        "grid2d:side=512",
    ])
}

/// The parameters (kind and element type, in order) of the SpMV kernel the
/// benchmark times, and its accumulator.
const SPMV_SIGNATURE: [(ScalarType, ParamKind); 5] = [
    (ScalarType::U32, ParamKind::Input),
    (ScalarType::U32, ParamKind::Input),
    (ScalarType::F32, ParamKind::Input),
    (ScalarType::F32, ParamKind::Input),
    (ScalarType::F32, ParamKind::Output),
];

/// Benchmark options.
#[derive(Debug, Clone)]
pub struct SpmvBenchOptions {
    /// The kernel timed: a `(row_ptr: &[u32], col: &[u32], val: &[f32],
    /// x: &[f32], y: &mut [f32])` SpMV with an f32 accumulator. `warpfit
    /// bench` passes the generated `warpfit::apps::spmv::f32::SPEC`; the
    /// `spmv_bench` example the same functor written out
    /// (`gpu/tests/fixtures/spmv_f32.rs`).
    pub kernel: &'static KernelSpec,
    pub matrices: Vec<MatrixSource>,
    /// Timed runs per variant (the median is reported); at least 20 is the protocol.
    pub runs: usize,
    pub warmup: usize,
    /// Fixed CTE segment lengths timed besides the automatic choice.
    pub segment_lens: Vec<u32>,
    /// Fixed CTE warp work budgets ([`Split::Budget`]) timed besides the
    /// automatic choice.
    pub budgets: Vec<u32>,
    /// `cte_serial_max` of the CTE variants (besides the tuning variants).
    pub cte_serial_max: u32,
    /// The warpfit variants timed, by name (`thread`, `subwarp:8`, `cte`,
    /// `cte:S=64`, ...); empty: all of them. cuSPARSE is always timed, as
    /// the reference of every ratio.
    pub variants: Vec<String>,
    /// `y += A·x` with the signature of `kernel`, for [`COL_BLOCKS`]
    /// (which is skipped without it).
    pub add_kernel: Option<&'static KernelSpec>,
    /// Column-block counts of [`COL_BLOCKS`] (`cte:cbK` and
    /// `cusparse:cbK` per count); empty: the count at which a block's `x`
    /// fills half of L2, when `x` alone exceeds that.
    pub col_blocks: Vec<usize>,
    /// The partitioner of the cache-fit variants (default column blocks).
    pub partitioner: warpfit::runtime::schedule::Partitioner,
}

impl SpmvBenchOptions {
    /// The protocol's defaults (the default suite, 20 timed runs, every
    /// variant) for `kernel`.
    ///
    /// # Errors
    /// None in practice (the default suite's specs are fixed).
    pub fn new(kernel: &'static KernelSpec) -> Result<Self> {
        Ok(SpmvBenchOptions {
            kernel,
            matrices: crate::input::default_suite()?,
            runs: 20,
            warmup: 3,
            segment_lens: vec![8, 16, 32, 64, 256],
            budgets: vec![256, 512, 1024, 2048],
            cte_serial_max: LaunchConfig::default().cte_serial_max,
            variants: Vec::new(),
            add_kernel: None,
            col_blocks: Vec::new(),
            partitioner: warpfit::runtime::schedule::Partitioner::Columns,
        })
    }
}

/// One timed variant on one matrix.
#[derive(Debug, Clone)]
pub struct VariantResult {
    pub variant: String,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Largest error relative to the row's Σ|a·x| (checked before timing).
    pub max_rel_err: f64,
}

/// All variants on one matrix.
#[derive(Debug, Clone)]
pub struct MatrixResult {
    pub name: String,
    pub nrows: usize,
    pub ncols: usize,
    pub nnz: usize,
    pub max_row: usize,
    /// What the automatic split chose for `cte`, and its serial-fallback
    /// bound.
    pub auto_split: Option<Split>,
    pub auto_serial_max: u32,
    /// The cache-fit plan of `cte:cf`, when timed.
    pub cache_fit: Option<CacheFitFacts>,
    pub variants: Vec<VariantResult>,
}

/// What the cache-fit variants launch: the matrix's column indices and
/// values reordered by partition within each row
/// ([`CacheFitPlan`](warpfit::runtime::schedule::CacheFitPlan)), the
/// segments in partition order (hubs cut), and each partition's segments.
struct CacheFitLaunch {
    col: Vec<u32>,
    val: Vec<f32>,
    list: warpfit::runtime::TaskList,
    /// Each partition's segments of `list` (a range of it).
    ranges: Vec<std::ops::Range<usize>>,
    /// The plan part by part: column indices, values, each partition's
    /// range array.
    pm_col: Vec<u32>,
    pm_val: Vec<f32>,
    pm_ptrs: Vec<Vec<u32>>,
}

/// How `cte:cf` planned: the partitioner, partitions of the device's L2,
/// the segments of the fine-task reordering, and the host time it took.
#[derive(Debug, Clone)]
pub struct CacheFitFacts {
    pub partitioner: warpfit::runtime::schedule::Partitioner,
    pub partitions: usize,
    pub segments: usize,
    pub split_tasks: usize,
    pub plan_s: f64,
}

impl MatrixResult {
    /// Bytes an SpMV must move at least: 8·nnz + 4·(n+1) + 4·n + 4·ncols.
    pub fn bytes(&self) -> f64 {
        8.0 * self.nnz as f64
            + 4.0 * (self.nrows + 1) as f64
            + 4.0 * self.nrows as f64
            + 4.0 * self.ncols as f64
    }

    fn best(&self, pred: impl Fn(&str) -> bool) -> Option<&VariantResult> {
        self.variants
            .iter()
            .filter(|v| pred(&v.variant))
            .min_by(|a, b| a.median_ms.total_cmp(&b.median_ms))
    }

    /// Fastest cuSPARSE algorithm.
    pub fn best_cusparse(&self) -> Option<&VariantResult> {
        self.best(|v| v.starts_with("cusparse"))
    }

    /// Fastest sub-warp width.
    pub fn best_subwarp(&self) -> Option<&VariantResult> {
        self.best(|v| v.starts_with("subwarp"))
    }

    /// Fastest warpfit variant.
    pub fn best_warpfit(&self) -> Option<&VariantResult> {
        self.best(|v| !v.starts_with("cusparse"))
    }

    /// The variant by name.
    pub fn get(&self, name: &str) -> Option<&VariantResult> {
        self.variants.iter().find(|v| v.variant == name)
    }
}

/// The whole run.
#[derive(Debug, Clone)]
pub struct SpmvReport {
    pub device: String,
    pub arch: String,
    pub l2_bytes: usize,
    /// Device-to-device copy bandwidth (bytes read + written per second).
    pub copy_gbs: f64,
    pub matrices: Vec<MatrixResult>,
}

/// Median, min and max of `runs` timings of `f` (ms) after `warmup`
/// untimed calls, each run between CUDA events after an L2 eviction
/// ([`timed_runs`](crate::input::timed_runs)).
fn time(
    timer: &EventTimer,
    warmup: usize,
    runs: usize,
    f: &dyn Fn() -> Result<()>,
) -> Result<(f64, f64, f64)> {
    let t = crate::input::timed_runs(Some(timer), warmup, runs, &mut || f())?;
    Ok((t[t.len() / 2], t[0], t[t.len() - 1]))
}

/// Device-to-device copy bandwidth in GB/s (read + write), over a buffer of
/// 512 MiB or a quarter of free memory, whichever is smaller.
fn copy_bandwidth(dev: &CudaDevice, timer: &EventTimer) -> Result<f64> {
    let (free, _) = dev
        .context()
        .mem_get_info()
        .map_err(cuda_err("reading free memory"))?;
    let bytes = (512usize << 20).min(free / 4);
    let src = DeviceBuffer::<u8>::zeros(dev, bytes)?;
    let mut dst = DeviceBuffer::<u8>::zeros(dev, bytes)?;
    let stream = dev.stream().clone();
    let cell = std::cell::RefCell::new(&mut dst);
    let (ms, _, _) = time(timer, 3, 20, &|| {
        let mut d = cell.borrow_mut();
        stream
            .memcpy_dtod(src.as_slice(), d.as_slice_mut())
            .map_err(cuda_err("device-to-device copy"))
    })?;
    Ok(2.0 * bytes as f64 / (ms * 1e-3) / 1e9)
}

/// Runs the benchmark; `log` receives progress lines.
pub fn run_spmv(
    dev: &CudaDevice,
    opts: &SpmvBenchOptions,
    log: &mut dyn FnMut(&str),
) -> Result<SpmvReport> {
    if opts.runs < 1 {
        return Err(Error::invalid("at least one timed run is needed"));
    }
    let shape: Vec<(ScalarType, ParamKind)> =
        opts.kernel.params.iter().map(|p| (p.ty, p.kind)).collect();
    if shape != SPMV_SIGNATURE || opts.kernel.acc != AccType::Scalar(ScalarType::F32) {
        return Err(Error::invalid(format!(
            "kernel `{}` does not have the SpMV signature (row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32])",
            opts.kernel.name
        )));
    }
    let configs = variant_configs(opts)?;
    let t0 = Instant::now();
    let timer = EventTimer::new(dev)?;
    let copy_gbs = copy_bandwidth(dev, &timer)?;
    log(&format!(
        "{} ({}, L2 {} MiB): device-to-device copy {copy_gbs:.0} GB/s",
        dev.name(),
        dev.arch(),
        dev.l2_bytes() >> 20
    ));
    let mut results = Vec::new();
    for src in &opts.matrices {
        let name = src.name();
        let a = src.load::<f32>()?;
        let n = a.nrows();
        let max_row = (0..n).map(|r| a.row_range(r).len()).max().unwrap_or(0);
        log(&format!(
            "[{:6.1}s] {name}: {n} rows, {} nnz, longest row {max_row}",
            t0.elapsed().as_secs_f64(),
            a.nnz()
        ));
        let bench = OneMatrix::new(&name, &a)?;
        let mut variants = Vec::new();
        let (mut auto_split, mut auto_serial_max) = (None, 0);
        for (vname, cfg) in &configs {
            let (v, prepared) = bench.warpfit(dev, opts, &timer, vname, cfg)?;
            if vname == "cte" {
                auto_split = prepared.0;
                auto_serial_max = prepared.1;
            }
            variants.push(v);
        }
        let mut cache_fit = None;
        let wants =
            |name: &str| opts.variants.is_empty() || opts.variants.iter().any(|v| v == name);
        let other_cf: Vec<_> = CACHE_FIT_OTHER
            .iter()
            .filter(|(v, _)| opts.variants.iter().any(|w| w == v))
            .collect();
        if wants(CACHE_FIT) || wants(CACHE_FIT_ONE) || wants(CACHE_FIT_LIST) || !other_cf.is_empty()
        {
            let (plan, facts) = bench.plan_cache_fit(dev, opts.partitioner)?;
            log(&format!(
                "    cte:cf plan ({}): {} partitions, {} segments, {} rows split, {:.2} s",
                facts.partitioner,
                facts.partitions,
                facts.segments,
                facts.split_tasks,
                facts.plan_s
            ));
            if wants(CACHE_FIT) {
                let cfg = LaunchConfig {
                    decomposition: Decomposition::Cte,
                    split: Split::Auto,
                    cte_serial_max: opts.cte_serial_max,
                };
                variants.push(bench.cache_fit_carried(dev, opts, &timer, &plan, CACHE_FIT, &cfg)?);
            }
            for &&(vname, d) in &other_cf {
                let cfg = LaunchConfig {
                    decomposition: d,
                    split: Split::Never,
                    ..LaunchConfig::default()
                };
                variants.push(bench.cache_fit_carried(dev, opts, &timer, &plan, vname, &cfg)?);
            }
            if wants(CACHE_FIT_LIST) {
                variants.push(bench.cache_fit(dev, opts, &timer, &plan, true)?);
            }
            if wants(CACHE_FIT_ONE) {
                variants.push(bench.cache_fit(dev, opts, &timer, &plan, false)?);
            }
            cache_fit = Some(facts);
        }
        for name in &opts.variants {
            if let Some((policy, remap)) = throttle_variant(name)? {
                let (v, line) = bench.throttled(dev, opts, &timer, name, policy, remap)?;
                log(&line);
                variants.push(v);
            }
        }
        if wants(COL_BLOCKS) {
            match opts.add_kernel {
                Some(add) => {
                    for k in col_block_counts(opts, a.ncols(), dev.l2_bytes()) {
                        variants.extend(bench.col_blocks(dev, opts, add, &timer, k)?);
                    }
                }
                None => log("    cte:cb skipped: no y += A·x kernel given"),
            }
        }
        for alg in [SpmvAlg::Default, SpmvAlg::CsrAlg2] {
            variants.push(bench.cusparse(dev, opts, &timer, alg)?);
        }
        let m = MatrixResult {
            name: name.clone(),
            nrows: n,
            ncols: a.ncols(),
            nnz: a.nnz(),
            max_row,
            auto_split,
            auto_serial_max,
            cache_fit,
            variants,
        };
        for v in &m.variants {
            log(&format!(
                "    {:<20} {:8.4} ms  {:7.1} GFLOP/s  {:7.1} GB/s",
                v.variant,
                v.median_ms,
                2.0 * m.nnz as f64 / (v.median_ms * 1e6),
                m.bytes() / (v.median_ms * 1e6)
            ));
        }
        results.push(m);
    }
    Ok(SpmvReport {
        device: dev.name().to_string(),
        arch: dev.arch().sm(),
        l2_bytes: dev.l2_bytes(),
        copy_gbs,
        matrices: results,
    })
}

/// The cache-fit variant (the `cf` schedule): the matrix partitioned for
/// the device's L2 (`partitioner`, default safety) into a
/// [`CacheFitPlan`](warpfit::runtime::schedule::CacheFitPlan), laid out part
/// by part ([`PartMajor`](warpfit::runtime::schedule::PartMajor)), and run
/// as one launch per partition over its own range array with the rows'
/// folds carried between launches ([`CarriedLaunch`](warpfit::__private::CarriedLaunch)),
/// each launch with the automatic split. Planning runs on the host before
/// timing; its time is reported apart.
pub const CACHE_FIT: &str = "cte:cf";

/// [`CACHE_FIT`] with another decomposition in every launch (no split):
/// the thread, 4-lane and 8-lane sub-warp forms, for the partitions' short
/// row shares.
pub const CACHE_FIT_OTHER: [(&str, Decomposition); 3] = [
    ("thread:cf", Decomposition::Thread),
    ("sub4:cf", Decomposition::SubWarp(4)),
    ("sub8:cf", Decomposition::SubWarp(8)),
];

/// The throttled handle ([`Throttled`](warpfit::Throttled)) with policy
/// `auto` and the partitioner given: planned (host time reported), its
/// first launch timing every schedule and keeping the fastest, then the
/// chosen schedule timed alone over the staged arrays. Any policy runs the
/// same way as `throttle:POLICY`, in the remapped numbering as
/// `throttle:POLICY:remap`.
pub const THROTTLE_AUTO: &str = "throttle:auto";

/// The policy and remapping of a `throttle:POLICY[:remap]` variant
/// (`None`: not a throttled variant).
fn throttle_variant(
    name: &str,
) -> Result<Option<(warpfit::runtime::schedule::ThrottlePolicy, bool)>> {
    let Some(rest) = name.strip_prefix("throttle:") else {
        return Ok(None);
    };
    let (policy, remap) = match rest.strip_suffix(":remap") {
        Some(p) => (p, true),
        None => (rest, false),
    };
    Ok(Some((policy.parse()?, remap)))
}

/// [`CACHE_FIT`]'s plan as a segment list (rows reordered by partition
/// within each row, hubs cut), run as one CTE launch per partition's
/// segments ([`CudaLaunch::in_ranges`]) and one merge of split rows.
pub const CACHE_FIT_LIST: &str = "cte:cf-list";

/// [`CACHE_FIT_LIST`]'s list run as one CTE launch over all partitions'
/// segments in partition order.
pub const CACHE_FIT_ONE: &str = "cte:cf-one";

/// Column blocks: the matrix cut into `K` blocks of consecutive columns
/// (equal widths), each block's nonzeros a CSR slice over all rows, run one
/// block after another, the first writing `y` and the others adding onto it
/// (`add_kernel`). While a block runs, only its share of `x` is gathered, so
/// with `K` large enough that share stays in L2. Timed with CTE (`cte:cbK`)
/// and with cuSPARSE (`cusparse:cbK`, `beta = 1` after the first block) in
/// each block: the crudest cache-fit schedule, the reference the
/// partitioner's plans have to beat.
pub const COL_BLOCKS: &str = "cte:cb";

/// The column-block counts [`COL_BLOCKS`] times for a matrix of `ncols`
/// f32 columns on a GPU with `l2_bytes` of L2.
fn col_block_counts(opts: &SpmvBenchOptions, ncols: usize, l2_bytes: usize) -> Vec<usize> {
    if !opts.col_blocks.is_empty() {
        return opts
            .col_blocks
            .iter()
            .map(|&k| k.clamp(1, ncols.max(1)))
            .collect();
    }
    let half = (l2_bytes / 2).max(1);
    let x_bytes = ncols * std::mem::size_of::<f32>();
    if x_bytes <= half {
        Vec::new()
    } else {
        vec![x_bytes.div_ceil(half)]
    }
}

/// The longest segment of [`CACHE_FIT`]'s list.
const CACHE_FIT_SEGMENT: u32 = 512;

/// The warpfit variants to time, by name, in report order: every
/// decomposition unsplit, CTE with the automatic split, unsplit, by
/// segment length and by budget, and with the serial fallback off and
/// wider; only `opts.variants` when given (an unknown name is an error
/// listing the known ones).
fn variant_configs(opts: &SpmvBenchOptions) -> Result<Vec<(String, LaunchConfig)>> {
    let mut configs: Vec<(String, LaunchConfig)> = Decomposition::ALL
        .into_iter()
        .filter(|&d| d != Decomposition::Cte)
        .map(|d| {
            let c = LaunchConfig {
                decomposition: d,
                split: Split::Never,
                ..LaunchConfig::default()
            };
            (d.to_string(), c)
        })
        .collect();
    let cte = |split| LaunchConfig {
        decomposition: Decomposition::Cte,
        split,
        cte_serial_max: opts.cte_serial_max,
    };
    configs.push(("cte".into(), cte(Split::Auto)));
    configs.push(("cte:whole".into(), cte(Split::Never)));
    for &s in &opts.segment_lens {
        configs.push((format!("cte:S={s}"), cte(Split::Max(s))));
    }
    for &b in &opts.budgets {
        configs.push((format!("cte:B={b}"), cte(Split::Budget(b))));
    }
    // The serial fallback off and wider, for tuning `cte_serial_max`.
    for serial in [0u32, 32] {
        let c = LaunchConfig {
            cte_serial_max: serial,
            ..cte(Split::Auto)
        };
        configs.push((format!("cte:serial={serial}"), c));
    }
    if let Some(unknown) = opts.variants.iter().find(|v| {
        !matches!(throttle_variant(v), Ok(Some(_)))
            && ![
                CACHE_FIT,
                CACHE_FIT_LIST,
                CACHE_FIT_ONE,
                COL_BLOCKS,
                THROTTLE_AUTO,
            ]
            .contains(&v.as_str())
            && !CACHE_FIT_OTHER.iter().any(|(n, _)| n == v)
            && !configs.iter().any(|(name, _)| name == *v)
    }) {
        let known: Vec<&str> = configs
            .iter()
            .map(|(n, _)| n.as_str())
            .chain([
                CACHE_FIT,
                CACHE_FIT_LIST,
                CACHE_FIT_ONE,
                COL_BLOCKS,
                THROTTLE_AUTO,
            ])
            .chain(CACHE_FIT_OTHER.iter().map(|(n, _)| *n))
            .collect();
        return Err(Error::invalid(format!(
            "unknown benchmark variant `{unknown}`; the variants are {}",
            known.join(", ")
        )));
    }
    if !opts.variants.is_empty() {
        configs.retain(|(v, _)| opts.variants.contains(v));
    }
    Ok(configs)
}

/// One matrix of the benchmark: its input vector and the f64 reference
/// every variant is checked against before it is timed.
struct OneMatrix<'a> {
    name: &'a str,
    a: &'a Csr<f32>,
    x: Vec<f32>,
    reference: SpmvReference,
}

impl<'a> OneMatrix<'a> {
    fn new(name: &'a str, a: &'a Csr<f32>) -> Result<Self> {
        let x: Vec<f32> = warpfit::runtime::gen::random_values(a.ncols(), 17)?
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let reference = SpmvReference::new(a, &x)?;
        Ok(OneMatrix {
            name,
            a,
            x,
            reference,
        })
    }

    /// `y` checked against the reference, or the error naming `variant`.
    fn check(&self, variant: &str, y: &[f32]) -> Result<f64> {
        let err = self.reference.max_rel_err(y)?;
        if err > TOLERANCE {
            return Err(Error::Cuda {
                context: format!("benchmark {} / {variant}", self.name),
                message: format!(
                    "result differs from the CPU reference (max relative error {err:.3e})"
                ),
            });
        }
        Ok(err)
    }

    /// A warpfit variant, checked then timed; also what `Split::Auto`
    /// chose and the serial-fallback bound used.
    fn warpfit(
        &self,
        dev: &CudaDevice,
        opts: &SpmvBenchOptions,
        timer: &EventTimer,
        vname: &str,
        cfg: &LaunchConfig,
    ) -> Result<(VariantResult, (Option<Split>, u32))> {
        let a = self.a;
        let mut y = vec![f32::NAN; a.nrows()];
        fn args<'b>(a: &'b Csr<f32>, x: &'b [f32], y: &'b mut [f32]) -> [Arg<'b>; 5] {
            [
                Arg::input(a.row_ptr()),
                Arg::input(a.col_idx()),
                Arg::input(a.values()),
                Arg::input(x),
                Arg::output(y),
            ]
        }
        let tasks = Tasks::All(a.nrows());
        let prepared = CudaLaunch::new(dev, opts.kernel, cfg, tasks, &args(a, &self.x, &mut y))?;
        prepared.run()?;
        prepared.finish(&mut args(a, &self.x, &mut y))?;
        let err = self.check(vname, &y)?;
        let (med, min, max) = time(timer, opts.warmup, opts.runs, &|| prepared.run())?;
        let chosen = (prepared.chosen_split(), prepared.cte_serial_max());
        Ok((
            VariantResult {
                variant: vname.to_string(),
                median_ms: med,
                min_ms: min,
                max_ms: max,
                max_rel_err: err,
            },
            chosen,
        ))
    }

    /// The cache-fit plan of the matrix for the device's L2 (see
    /// [`CACHE_FIT`]) and what it took.
    fn plan_cache_fit(
        &self,
        dev: &CudaDevice,
        partitioner: warpfit::runtime::schedule::Partitioner,
    ) -> Result<(CacheFitLaunch, CacheFitFacts)> {
        use warpfit::runtime::partition::WorkGraphOf;
        use warpfit::runtime::schedule::{CacheFitPlan, ChunkQueue, PartMajor, ThrottleOptions};
        let a = self.a;
        let start = Instant::now();
        let graph = WorkGraphOf::borrow_csr(a)?.with_elem_bytes(4, 4)?;
        let partition = ThrottleOptions::default()
            .with_partitioner(partitioner)
            .partition(&graph, Some(dev.l2_bytes() as u64), None)?;
        let plan = CacheFitPlan::new(&graph, &partition)?;
        let parts = PartMajor::new(&plan)?;
        // Hubs' shares cut like the automatic split's budget does.
        let queue = ChunkQueue::new(&plan, CACHE_FIT_SEGMENT)?;
        let (chunk_ptr, k) = (queue.chunk_ptr(), plan.len());
        let ranges = (0..k)
            .map(|p| {
                let chunks = queue.chunks_of(p..p + 1)?;
                Ok(chunk_ptr[chunks.start as usize] as usize
                    ..chunk_ptr[chunks.end as usize] as usize)
            })
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .filter(|r| !r.is_empty())
            .collect();
        let launch = CacheFitLaunch {
            col: plan.permute_fine(a.col_idx())?,
            val: plan.permute_fine(a.values())?,
            list: queue.task_list()?,
            ranges,
            pm_col: parts.permute_fine(a.col_idx())?,
            pm_val: parts.permute_fine(a.values())?,
            pm_ptrs: (0..parts.len())
                .map(|p| parts.part_ptr(p).to_vec())
                .collect(),
        };
        let facts = CacheFitFacts {
            partitioner,
            partitions: plan.len(),
            segments: launch.list.len(),
            split_tasks: plan.split_tasks().len(),
            plan_s: start.elapsed().as_secs_f64(),
        };
        Ok((launch, facts))
    }

    /// [`CACHE_FIT`] (`per_partition`) or [`CACHE_FIT_ONE`]: checked, then
    /// timed.
    fn cache_fit(
        &self,
        dev: &CudaDevice,
        opts: &SpmvBenchOptions,
        timer: &EventTimer,
        plan: &CacheFitLaunch,
        per_partition: bool,
    ) -> Result<VariantResult> {
        let a = self.a;
        let name = if per_partition {
            CACHE_FIT_LIST
        } else {
            CACHE_FIT_ONE
        };
        let cfg = LaunchConfig {
            decomposition: Decomposition::Cte,
            split: Split::Auto,
            cte_serial_max: opts.cte_serial_max,
        };
        let mut y = vec![f32::NAN; a.nrows()];
        fn args<'b>(
            p: &'b [u32],
            c: &'b [u32],
            v: &'b [f32],
            x: &'b [f32],
            y: &'b mut [f32],
        ) -> [Arg<'b>; 5] {
            [
                Arg::input(p),
                Arg::input(c),
                Arg::input(v),
                Arg::input(x),
                Arg::output(y),
            ]
        }
        let host_args = args(a.row_ptr(), &plan.col, &plan.val, &self.x, &mut y);
        let prepared = if per_partition {
            CudaLaunch::in_ranges(dev, opts.kernel, &cfg, &plan.list, &plan.ranges, &host_args)?
        } else {
            CudaLaunch::new(dev, opts.kernel, &cfg, Tasks::List(&plan.list), &host_args)?
        };
        prepared.run()?;
        prepared.finish(&mut args(
            a.row_ptr(),
            &plan.col,
            &plan.val,
            &self.x,
            &mut y,
        ))?;
        let err = self.check(name, &y)?;
        let (med, min, max) = time(timer, opts.warmup, opts.runs, &|| prepared.run())?;
        Ok(VariantResult {
            variant: name.into(),
            median_ms: med,
            min_ms: min,
            max_ms: max,
            max_rel_err: err,
        })
    }

    /// [`THROTTLE_AUTO`]: planned, launched once (auto's choice), checked,
    /// then the chosen schedule timed.
    fn throttled(
        &self,
        dev: &CudaDevice,
        opts: &SpmvBenchOptions,
        timer: &EventTimer,
        name: &str,
        policy: warpfit::runtime::schedule::ThrottlePolicy,
        remap: bool,
    ) -> Result<(VariantResult, String)> {
        use warpfit::runtime::partition::WorkGraphOf;
        use warpfit::runtime::schedule::ThrottleOptions;
        let a = self.a;
        let graph = WorkGraphOf::borrow_csr(a)?
            .with_elem_bytes(4, 4)?
            .into_owned();
        let options = ThrottleOptions::default()
            .with_partitioner(opts.partitioner)
            .with_policy(policy)
            .with_exhaustive(true)
            .with_remap(remap);
        let device = warpfit::Device::Cuda(dev.clone());
        fn no_cpu(_: &warpfit::__private::CpuArgs<'_>, _: usize) -> Result<()> {
            Err(Error::invalid(
                "the benchmark's throttled handle runs on CUDA only",
            ))
        }
        let shape = [
            Some(Arg::input(a.row_ptr())),
            Some(Arg::input(a.col_idx())),
            Some(Arg::input(a.values())),
            None,
            None,
        ];
        let mut t = warpfit::Throttled::new(
            &device,
            opts.kernel,
            warpfit::apps::spmv::f32::THROTTLE_ROLES,
            &options,
            &LaunchConfig::default(),
            a.nrows(),
            a.ncols(),
            Some(&graph),
            &shape,
            no_cpu,
        )?;
        let mut y = vec![0f32; a.nrows()];
        t.launch(&mut [Arg::input(&self.x), Arg::output(&mut y)])?;
        let err = self.check(name, &y)?;
        let r = t.report().clone();
        let line = format!(
            "    {name}: {} partitions planned in {:.2} s, {} chosen{} after {:.2} s of layouts and profiling ({}; host s per schedule: {}){}",
            r.partitions,
            r.planning.as_secs_f64(),
            r.chosen,
            if r.remapped { " (remapped)" } else { "" },
            r.profiling.as_secs_f64(),
            r.profile
                .iter()
                .map(|(p, ms)| format!("{p} {ms:.3} ms"))
                .collect::<Vec<_>>()
                .join(", "),
            r.profiling_by_policy
                .iter()
                .map(|(p, d)| format!("{p} {:.2}", d.as_secs_f64()))
                .collect::<Vec<_>>()
                .join(", "),
            if r.sj_launches.is_empty() {
                String::new()
            } else {
                format!(", SJ launches {:?}", r.sj_launches)
            }
        );
        let (med, min, max) = time(timer, opts.warmup, opts.runs, &|| t.enqueue_again())?;
        Ok((
            VariantResult {
                variant: format!("{name} ({})", r.chosen),
                median_ms: med,
                min_ms: min,
                max_ms: max,
                max_rel_err: err,
            },
            line,
        ))
    }

    /// [`CACHE_FIT`]: checked, then timed.
    fn cache_fit_carried(
        &self,
        dev: &CudaDevice,
        opts: &SpmvBenchOptions,
        timer: &EventTimer,
        plan: &CacheFitLaunch,
        vname: &str,
        cfg: &LaunchConfig,
    ) -> Result<VariantResult> {
        let device = warpfit::Device::Cuda(dev.clone());
        let col = device.upload(&plan.pm_col)?;
        let val = device.upload(&plan.pm_val)?;
        let ptrs = plan
            .pm_ptrs
            .iter()
            .map(|p| device.upload(p))
            .collect::<Result<Vec<_>>>()?;
        let x = device.upload(&self.x)?;
        let y = device.alloc::<f32>(self.a.nrows())?;
        let parts = ptrs
            .iter()
            .map(|ptr| {
                vec![
                    Arg::resident_input(ptr),
                    Arg::resident_input(&col),
                    Arg::resident_input(&val),
                    Arg::resident_input(&x),
                    Arg::resident_output(&y),
                ]
            })
            .collect();
        let launch =
            warpfit::__private::CarriedLaunch::cuda(dev, opts.kernel, cfg, self.a.nrows(), parts)?;
        launch.run()?;
        launch.check()?;
        let err = self.check(vname, &y.to_vec()?)?;
        let (med, min, max) = time(timer, opts.warmup, opts.runs, &|| launch.run())?;
        Ok(VariantResult {
            variant: vname.into(),
            median_ms: med,
            min_ms: min,
            max_ms: max,
            max_rel_err: err,
        })
    }

    /// [`COL_BLOCKS`] with `k` blocks: CTE, then cuSPARSE, in each block;
    /// both checked, then timed.
    fn col_blocks(
        &self,
        dev: &CudaDevice,
        opts: &SpmvBenchOptions,
        add: &'static KernelSpec,
        timer: &EventTimer,
        k: usize,
    ) -> Result<Vec<VariantResult>> {
        let a = self.a;
        let (n, ncols) = (a.nrows(), a.ncols());
        let width = ncols.div_ceil(k.max(1)).max(1);
        let device = warpfit::Device::Cuda(dev.clone());
        let x = device.upload(&self.x)?;
        let y = device.alloc::<f32>(n)?;
        let mut blocks = Vec::with_capacity(k);
        for b in 0..k {
            let (c0, c1) = (b * width, ((b + 1) * width).min(ncols));
            let mut row_ptr = Vec::with_capacity(n + 1);
            row_ptr.push(0u32);
            let (mut col, mut val) = (Vec::new(), Vec::new());
            for r in 0..n {
                let range = a.row_range(r);
                for (&c, &v) in a.col_idx()[range.clone()].iter().zip(&a.values()[range]) {
                    if (c0..c1).contains(&(c as usize)) {
                        col.push(c);
                        val.push(v);
                    }
                }
                row_ptr.push(warpfit::runtime::error::to_u32(
                    "block nonzeros",
                    col.len(),
                )?);
            }
            blocks.push((
                device.upload(&row_ptr)?,
                device.upload(&col)?,
                device.upload(&val)?,
            ));
        }
        let cfg = LaunchConfig {
            decomposition: Decomposition::Cte,
            split: Split::Auto,
            cte_serial_max: opts.cte_serial_max,
        };
        let launches = blocks
            .iter()
            .enumerate()
            .map(|(b, (row_ptr, col, val))| {
                let kernel = if b == 0 { opts.kernel } else { add };
                let args = vec![
                    Arg::resident_input(row_ptr),
                    Arg::resident_input(col),
                    Arg::resident_input(val),
                    Arg::resident_input(&x),
                    Arg::resident_output(&y),
                ];
                warpfit::PreparedLaunch::cuda(dev, kernel, &cfg, Tasks::All(n), args)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(2);
        let name = format!("{COL_BLOCKS}{k}");
        let run = || launches.iter().try_for_each(warpfit::PreparedLaunch::run);
        run()?;
        launches
            .iter()
            .try_for_each(warpfit::PreparedLaunch::check)?;
        let err = self.check(&name, &y.to_vec()?)?;
        let (med, min, max) = time(timer, opts.warmup, opts.runs, &run)?;
        out.push(VariantResult {
            variant: name,
            median_ms: med,
            min_ms: min,
            max_ms: max,
            max_rel_err: err,
        });
        drop(launches);
        let spmvs = blocks
            .iter()
            .map(|(row_ptr, col, val)| {
                CusparseSpmvOn::new(dev, ncols, row_ptr, col, val, &x, &y, SpmvAlg::Default)
            })
            .collect::<Result<Vec<_>>>()?;
        let run = || {
            spmvs.iter().enumerate().try_for_each(
                |(b, s)| {
                    if b == 0 {
                        s.run()
                    } else {
                        s.run_add()
                    }
                },
            )
        };
        let name = format!("cusparse:cb{k}");
        run()?;
        let err = self.check(&name, &y.to_vec()?)?;
        let (med, min, max) = time(timer, opts.warmup, opts.runs, &run)?;
        out.push(VariantResult {
            variant: name,
            median_ms: med,
            min_ms: min,
            max_ms: max,
            max_rel_err: err,
        });
        Ok(out)
    }

    /// cuSPARSE with `alg`, checked then timed.
    fn cusparse(
        &self,
        dev: &CudaDevice,
        opts: &SpmvBenchOptions,
        timer: &EventTimer,
        alg: SpmvAlg,
    ) -> Result<VariantResult> {
        let a = self.a;
        let s = CusparseSpmv::new(
            dev,
            a.nrows(),
            a.ncols(),
            a.row_ptr(),
            a.col_idx(),
            a.values(),
            &self.x,
            alg,
        )?;
        s.run()?;
        let err = self.check(alg.name(), &s.y()?)?;
        let (med, min, max) = time(timer, opts.warmup, opts.runs, &|| s.run())?;
        Ok(VariantResult {
            variant: alg.name().into(),
            median_ms: med,
            min_ms: min,
            max_ms: max,
            max_rel_err: err,
        })
    }
}

impl SpmvReport {
    /// The report as Markdown: one table per matrix, then the summary
    /// against the targets.
    pub fn to_markdown(&self, command: &str) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Device: {} ({}, L2 {} MiB). Command: `{command}`.",
            self.device,
            self.arch,
            self.l2_bytes >> 20
        );
        let _ = writeln!(
            s,
            "Device-to-device copy bandwidth (read + write), same run: **{:.0} GB/s**.\n",
            self.copy_gbs
        );
        let _ = writeln!(
            s,
            "Median of the timed runs (CUDA events, L2 flushed before each run, results checked against an f64 CPU reference first). \
             Effective bytes = 8·nnz + 4·(n+1) + 4·n + 4·ncols. `cte` is the automatic split; `cte:B=…` warps packed by fixed work budgets; `cte:S=…` fixed segment lengths, 32 per warp; `cte:whole` no split; `cte:serial=N` the automatic split with a serial-fallback bound of N (raised to 64, as for `cte`, in a large launch with local gathers).\n"
        );
        for m in &self.matrices {
            let cus = m.best_cusparse().map_or(f64::NAN, |v| v.median_ms);
            let _ = writeln!(
                s,
                "### {}\n\n{} rows, {} nnz, longest row {}; `cte` chose {}, serial fallback up to {}\n",
                m.name,
                m.nrows,
                m.nnz,
                m.max_row,
                match m.auto_split {
                    Some(Split::Budget(b)) => format!("warps packed by {b} nonzeros (longer rows split)"),
                    Some(Split::Max(s)) => format!("segments of at most {s}, 32 per warp"),
                    _ => "32 rows per warp, none split".to_string(),
                },
                m.auto_serial_max
            );
            if let Some(cf) = &m.cache_fit {
                let _ = writeln!(
                    s,
                    "`{CACHE_FIT}` planned {} partitions of the L2 ({}), {} segments, {} rows split, in {:.2} s on the host\n",
                    cf.partitions, cf.partitioner, cf.segments, cf.split_tasks, cf.plan_s
                );
            }
            let _ = writeln!(s, "| variant | ms (median) | min–max | GFLOP/s | GB/s | % copy BW | vs best cuSPARSE |");
            let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
            for v in &m.variants {
                let gbs = m.bytes() / (v.median_ms * 1e6);
                let _ = writeln!(
                    s,
                    "| {} | {:.4} | {:.4}–{:.4} | {:.1} | {:.0} | {:.0}% | {:.2}× |",
                    v.variant,
                    v.median_ms,
                    v.min_ms,
                    v.max_ms,
                    2.0 * m.nnz as f64 / (v.median_ms * 1e6),
                    gbs,
                    100.0 * gbs / self.copy_gbs,
                    cus / v.median_ms
                );
            }
            s.push('\n');
        }
        let _ = writeln!(s, "### Summary against the targets\n");
        let _ = writeln!(s, "`cte` is the default configuration (`Split::Auto`: warps packed by work when rows are long, segments of 4 on small launches with long rows; serial fallback for warps whose longest row is at most 8, or 64 in a large launch with local gathers).\n");
        let _ = writeln!(s, "| matrix | CTE ms | best sub-warp | CTE speed-up over it | best cuSPARSE | CTE vs it | best warpfit GB/s (% copy) |");
        let _ = writeln!(s, "|---|---:|---|---:|---|---:|---:|");
        let mut logs = Vec::new();
        for m in &self.matrices {
            let (Some(c), Some(sw), Some(cu), Some(bw)) = (
                m.get("cte"),
                m.best_subwarp(),
                m.best_cusparse(),
                m.best_warpfit(),
            ) else {
                continue;
            };
            logs.push((cu.median_ms / c.median_ms).ln());
            let gbs = m.bytes() / (bw.median_ms * 1e6);
            let _ = writeln!(
                s,
                "| {} | {:.4} | {} {:.4} | {:.2}× | {} {:.4} | {:.2}× | {} {:.0} ({:.0}%) |",
                m.name,
                c.median_ms,
                sw.variant,
                sw.median_ms,
                sw.median_ms / c.median_ms,
                cu.variant,
                cu.median_ms,
                cu.median_ms / c.median_ms,
                bw.variant,
                gbs,
                100.0 * gbs / self.copy_gbs
            );
        }
        if !logs.is_empty() {
            let g = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
            let _ = writeln!(
                s,
                "\nGeometric mean of CTE's speed-up over the best cuSPARSE algorithm: **{g:.2}×**."
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_are_listed_filtered_and_checked() {
        // The variants do not depend on the kernel.
        let mut opts = SpmvBenchOptions::new(&warpfit::apps::spmv::f32::SPEC).unwrap();
        let all = variant_configs(&opts).unwrap();
        let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        assert!(
            names.contains(&"cte") && names.contains(&"cte:whole"),
            "{names:?}"
        );
        assert!(names.contains(&"cte:serial=0"), "{names:?}");
        assert_eq!(all.iter().filter(|(n, _)| n == "cte").count(), 1);
        opts.variants = vec!["cte".into(), "thread".into()];
        let some = variant_configs(&opts).unwrap();
        assert_eq!(some.len(), 2);
        assert_eq!(some[1].1.split, Split::Auto);
        opts.variants = vec![CACHE_FIT.into()];
        assert!(variant_configs(&opts).unwrap().is_empty(), "planned apart");
        opts.variants = vec!["cte:nope".into()];
        let e = variant_configs(&opts).unwrap_err().to_string();
        assert!(
            e.contains("cte:nope") && e.contains("cte:whole") && e.contains(CACHE_FIT),
            "{e}"
        );
    }
}
