//! Planning benchmark: every host stage of a cache-fit plan for a CSR SpMV,
//! timed on its own, for BENCHMARKS.md.
//!
//! ```text
//! cargo bench -p warpfit-runtime --bench plan -- INPUT [--cache BYTES] [--partitioner kd|columns|bisect]...
//!     [--val-bytes 4|8] [--threads N] [--repeat N] [--via-plan | --sequential-permute]
//! ```
//! INPUT is a generator spec (`rmat:scale=22`) or a `.mtx` path. The stages
//! are those of a throttled launch's planning on the host (`plan_on_host` in
//! `warpfit-gpu`): the work graph enumerated from the kernel's twin (an SpMV
//! here, with the twin's stand-in gathered array, f32 or with 8-byte values
//! f64, which sets the capacity), the partition, the
//! part-major layout straight from the partition, and the part-major
//! copies of the fine arrays (`col`, 4 B, and `val`, `--val-bytes`).
//! `--via-plan` builds the layout through a [`CacheFitPlan`] instead;
//! `--sequential-permute` copies the fine arrays on one thread, as the
//! first throttled handle did. `--threads` sizes rayon's pool; `--repeat`
//! plans N times and keeps each stage's least time (on a shared machine,
//! the run least disturbed).
//!
//! Per stage: wall seconds, user and system CPU seconds of all threads (on
//! a shared machine, the work done independently of the load; system time
//! is mostly first touches of fresh pages), and the heap high mark of the
//! stage beyond what was live when planning started (the CSR), with what
//! the stage leaves live.

use std::time::Instant;
use warpfit_runtime::exec::{Fault, GatherKernel, NestedKernel};
use warpfit_runtime::gen::GenSpec;
use warpfit_runtime::mem::{parse_bytes, CountingAlloc, HeapMeter};
use warpfit_runtime::partition::WorkGraph;
use warpfit_runtime::schedule::{CacheFitPlan, CacheSize, PartMajor, Partitioner, ThrottleOptions};
use warpfit_runtime::{Csr, Error, Result};

#[global_allocator]
static HEAP: CountingAlloc = CountingAlloc;

/// CPU time of all threads of this process so far, in seconds: user and
/// system (`/proc/self/stat`, clock ticks of 10 ms). System time is mostly
/// the kernel zeroing and mapping pages that fresh arrays touch first.
fn cpu_seconds() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |r| r.1);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    // utime and stime are fields 14 and 15, the 12th and 13th after ')'.
    (tick(11), tick(12))
}

/// Peak resident set size in bytes (Linux).
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The SpMV twin as `#[throttled]` builds it for the work graph: the range
/// and column arrays, a stand-in gathered array of the right length.
struct Twin<'a, T> {
    ptr: &'a [u32],
    col: &'a [u32],
    x: &'a [T],
}

fn ld<T: Copy>(a: &[T], i: usize, name: &'static str) -> std::result::Result<T, Fault> {
    a.get(i).copied().ok_or(Fault::index(name, i, a.len()))
}

impl<T: Copy + Default + Send + Sync> NestedKernel for Twin<'_, T> {
    const NAME: &'static str = "spmv";
    type Acc = T;
    type Ctx = ();
    fn prologue(&self, t: usize) -> std::result::Result<((), usize, usize), Fault> {
        Ok((
            (),
            ld(self.ptr, t, "ptr")? as usize,
            ld(self.ptr, t + 1, "ptr")? as usize,
        ))
    }
    fn init(&self, _: usize, _: &()) -> std::result::Result<T, Fault> {
        Ok(T::default())
    }
    fn map(&self, _: usize, _: &(), k: usize) -> std::result::Result<T, Fault> {
        ld(self.x, ld(self.col, k, "col")? as usize, "x")
    }
    fn reduce(&self, a: T, _: T) -> std::result::Result<T, Fault> {
        Ok(a)
    }
    fn epilogue(&self, _: usize, _: &(), _: T) -> std::result::Result<(), Fault> {
        Ok(())
    }
}

impl<T: Copy + Default + Send + Sync> GatherKernel for Twin<'_, T> {
    const GATHERED: &'static str = "x";
    const GATHERED_ELEM_BYTES: usize = std::mem::size_of::<T>();
    const OUTPUT_ELEM_BYTES: usize = std::mem::size_of::<T>();
    fn gathered_len(&self) -> usize {
        self.x.len()
    }
    fn gathered_index(&self, _: usize, _: &(), k: usize) -> std::result::Result<usize, Fault> {
        Ok(ld(self.col, k, "col")? as usize)
    }
}

/// The sequential byte permutation the first throttled handle used.
fn permute_bytes_sequential(src: &[u8], size: usize, perm: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len());
    for &p in perm {
        let p = p as usize;
        out.extend_from_slice(&src[p * size..(p + 1) * size]);
    }
    out.extend_from_slice(&src[perm.len() * size..]);
    out
}

/// Per stage: name, wall, user and system CPU seconds (the least over the
/// repetitions), heap peak and heap left live (the most).
struct Stages {
    base: u64,
    rows: Vec<(String, f64, f64, f64, u64, u64)>,
    /// The next stage's row in this repetition.
    at: usize,
}

impl Stages {
    fn run<R>(&mut self, name: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let meter = HeapMeter::start()?;
        let (t, c) = (Instant::now(), cpu_seconds());
        let r = f()?;
        let (wall, c2) = (t.elapsed().as_secs_f64(), cpu_seconds());
        let peak = meter.base_bytes() + meter.peak_bytes()?;
        let live = warpfit_runtime::mem::live_heap_bytes()?;
        let row = (
            name.to_string(),
            wall,
            c2.0 - c.0,
            c2.1 - c.1,
            peak.saturating_sub(self.base),
            live.saturating_sub(self.base),
        );
        match self.rows.get_mut(self.at) {
            Some(r) => {
                r.1 = r.1.min(row.1);
                r.2 = r.2.min(row.2);
                r.3 = r.3.min(row.3);
                r.4 = r.4.max(row.4);
                r.5 = r.5.max(row.5);
            }
            None => self.rows.push(row),
        }
        self.at += 1;
        Ok(r)
    }

    fn print(&self, csr_bytes: u64) {
        println!(
            "  {:<24} {:>8} {:>8} {:>8} {:>10} {:>10}",
            "stage", "wall s", "user s", "sys s", "peak MB", "live MB"
        );
        let (mut w, mut u, mut y, mut p) = (0.0, 0.0, 0.0, 0u64);
        for (name, wall, user, sys, peak, live) in &self.rows {
            println!(
                "  {name:<24} {wall:>8.3} {user:>8.2} {sys:>8.2} {:>10.1} {:>10.1}",
                *peak as f64 / 1e6,
                *live as f64 / 1e6
            );
            w += wall;
            u += user;
            y += sys;
            p = p.max(*peak);
        }
        println!(
            "  {:<24} {w:>8.3} {u:>8.2} {y:>8.2} {:>10.1}   ({:.2}x CSR)",
            "total",
            p as f64 / 1e6,
            p as f64 / csr_bytes as f64
        );
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mut input = None;
    let mut cache = 50u64 << 20;
    let mut partitioners = Vec::new();
    let mut val_bytes = 4usize;
    let mut via_plan = false;
    let mut sequential = false;
    let mut threads = 0usize;
    let mut repeat = 1usize;
    let mut it = args.iter();
    let value = |it: &mut std::slice::Iter<'_, String>, flag: &str| {
        it.next()
            .cloned()
            .ok_or_else(|| Error::invalid(format!("{flag} needs a value")))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--cache" => cache = parse_bytes(&value(&mut it, a)?)?,
            "--partitioner" => partitioners.push(value(&mut it, a)?.parse::<Partitioner>()?),
            "--val-bytes" => {
                val_bytes = value(&mut it, a)?
                    .parse()
                    .map_err(|_| Error::invalid("--val-bytes: 4 or 8"))?
            }
            "--threads" => {
                threads = value(&mut it, a)?
                    .parse()
                    .map_err(|_| Error::invalid("--threads: a count"))?
            }
            "--repeat" => {
                repeat = value(&mut it, a)?
                    .parse::<usize>()
                    .map_err(|_| Error::invalid("--repeat: a count"))?
                    .max(1)
            }
            "--via-plan" => via_plan = true,
            "--sequential-permute" => sequential = true,
            _ if input.is_none() => input = Some(a.clone()),
            _ => return Err(Error::invalid(format!("unexpected argument `{a}`"))),
        }
    }
    let input = input.ok_or_else(|| {
        Error::invalid("usage: plan INPUT [--cache BYTES] [--partitioner P]... [--val-bytes 4|8] [--threads N] [--repeat N] [--via-plan | --sequential-permute]")
    })?;
    if partitioners.is_empty() {
        partitioners = vec![Partitioner::Kd, Partitioner::Columns];
    }
    if threads > 0 {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()
            .map_err(|e| Error::invalid(format!("thread pool: {e}")))?;
    }
    let t0 = Instant::now();
    let csr: Csr<f32> = if input.ends_with(".mtx") {
        let c = warpfit_runtime::sparse::mm::read_csr::<f32>(std::path::Path::new(&input))?;
        c.pattern().with_values(vec![1.0f32; c.nnz()])?
    } else {
        input.parse::<GenSpec>()?.generate()?
    };
    let m = csr.nnz();
    // The fine arrays as the handle holds them: `col` and `val` of
    // `val_bytes` each (f64 values for CG).
    let wide: Vec<u8> = if val_bytes == 4 {
        Vec::new()
    } else {
        vec![1u8; m * val_bytes]
    };
    let csr_bytes = (4 * (csr.nrows() + 1 + m) + val_bytes * m) as u64;
    println!(
        "input {input}: {} x {}, {m} nonzeros, CSR {:.1} MB ({val_bytes}-byte values), made in {:.1} s, {} threads",
        csr.nrows(),
        csr.ncols(),
        csr_bytes as f64 / 1e6,
        t0.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );
    let col_bytes: &[u8] = {
        let c = csr.col_idx();
        // SAFETY: u32 has no padding; the byte view covers the same memory.
        unsafe { std::slice::from_raw_parts(c.as_ptr().cast::<u8>(), std::mem::size_of_val(c)) }
    };
    let val: &[u8] = if val_bytes == 4 {
        let v = csr.values();
        // SAFETY: f32 has no padding; the byte view covers the same memory.
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
    } else {
        &wide
    };
    for partitioner in partitioners {
        let base = warpfit_runtime::mem::live_heap_bytes()?;
        let mut st = Stages {
            base,
            rows: Vec::new(),
            at: 0,
        };
        let opts = ThrottleOptions::default()
            .with_cache(CacheSize::Bytes(cache))
            .with_partitioner(partitioner);
        let mut k = 0;
        // A stage that fails (a layout beyond the memory limit) ends this
        // partitioner's runs; what was measured is still printed.
        let mut outcome = || -> Result<()> {
            for _ in 0..repeat {
                st.at = 0;
                let graph = st.run("work graph", || {
                    fn twin<T: Copy + Default + Send + Sync>(csr: &Csr<f32>) -> Result<WorkGraph> {
                        let x = vec![T::default(); csr.ncols()];
                        let twin = Twin {
                            ptr: csr.row_ptr(),
                            col: csr.col_idx(),
                            x: &x,
                        };
                        WorkGraph::from_kernel(&twin, csr.nrows())
                    }
                    if val_bytes == 8 {
                        twin::<f64>(&csr)
                    } else {
                        twin::<f32>(&csr)
                    }
                })?;
                let partition = st.run("partition", || opts.partition(&graph, None, None))?;
                k = partition.len();
                if via_plan {
                    let plan =
                        st.run("cache-fit plan", || CacheFitPlan::new(&graph, &partition))?;
                    let pm = st.run("part-major from plan", || PartMajor::new(&plan))?;
                    drop(plan);
                    drop(partition);
                    let fine = st.run("permute col+val", || {
                        Ok((
                            pm.permute_bytes(col_bytes, 4)?,
                            pm.permute_bytes(val, val_bytes)?,
                        ))
                    })?;
                    drop(fine);
                } else if sequential {
                    let pm = st.run("part-major", || {
                        PartMajor::from_partition(&graph, partition)
                    })?;
                    let fine = st.run("permute col+val (seq)", || {
                        Ok((
                            permute_bytes_sequential(col_bytes, 4, pm.fine_perm()),
                            permute_bytes_sequential(val, val_bytes, pm.fine_perm()),
                        ))
                    })?;
                    drop(fine);
                } else {
                    let pm = st.run("part-major", || {
                        PartMajor::from_partition(&graph, partition)
                    })?;
                    let fine = st.run("permute col+val", || {
                        Ok((
                            pm.permute_bytes(col_bytes, 4)?,
                            pm.permute_bytes(val, val_bytes)?,
                        ))
                    })?;
                    drop(fine);
                }
                drop(graph);
            }
            Ok(())
        };
        let outcome = outcome();
        println!(
            "{partitioner} at {}: {k} partitions; best of {repeat}; peak RSS {:.1} MB",
            CacheSize::Bytes(cache),
            peak_rss().unwrap_or(0) as f64 / 1e6
        );
        st.print(csr_bytes);
        if let Err(e) = outcome {
            println!("  stopped: {e}");
        }
    }
    Ok(())
}
