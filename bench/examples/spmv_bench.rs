//! `warpfit bench spmv` without the CLI, over the written-out SpMV functor
//! of the device crate's tests: `spmv_bench [--small] [--runs N] [--variants cte,thread,...] [--segment-lens 8,16,...] [--budgets 256,1024,...] [--col-blocks 2,4] [--partitioner columns|kd|bisect] [--gen SPEC]... [--mtx FILE]... [--out FILE]`.
//! Prints progress, then the Markdown report (also written to `--out`).

use warpfit::CudaDevice;
use warpfit_bench::spmv::{run_spmv, small_suite, SpmvBenchOptions};
use warpfit_bench::{default_suite, MatrixSource};

/// The timed kernel: the f32 SpMV functor written out, as `#[nested_reduce]`
/// emits it (`tests/apps.rs` checks it has the generated kernel's shape).
#[path = "../../gpu/tests/fixtures/spmv_f32.rs"]
mod spmv_f32;

/// `y += A·x`, for the cache-fit variant run as slices.
#[path = "../../gpu/tests/fixtures/spmv_add_f32.rs"]
mod spmv_add_f32;

/// The comma-separated list that follows `flag`.
fn list<T>(value: Option<&String>, flag: &str) -> Result<Vec<T>, Box<dyn std::error::Error>>
where
    T: std::str::FromStr,
    T::Err: std::error::Error + 'static,
{
    let v = value.ok_or_else(|| format!("{flag} needs a comma-separated list"))?;
    Ok(v.split(',').map(str::parse).collect::<Result<_, _>>()?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = SpmvBenchOptions::new(&spmv_f32::SPMV_F32)?;
    opts.add_kernel = Some(&spmv_add_f32::SPMV_ADD_F32);
    let mut out = None;
    let mut i = 0;
    let mut extra = Vec::new();
    let mut gens = Vec::new();
    while i < args.len() {
        match args[i].as_str() {
            "--small" => opts.matrices = small_suite()?,
            "--runs" => {
                i += 1;
                opts.runs = args.get(i).ok_or("--runs needs a value")?.parse()?;
            }
            "--serial-max" => {
                i += 1;
                opts.cte_serial_max = args.get(i).ok_or("--serial-max needs a value")?.parse()?;
            }
            "--variants" => {
                i += 1;
                opts.variants = list(args.get(i), "--variants")?;
            }
            "--segment-lens" => {
                i += 1;
                opts.segment_lens = list(args.get(i), "--segment-lens")?;
            }
            "--budgets" => {
                i += 1;
                opts.budgets = list(args.get(i), "--budgets")?;
            }
            "--mtx" => {
                i += 1;
                extra.push(MatrixSource::Mtx(
                    args.get(i).ok_or("--mtx needs a file")?.into(),
                ));
            }
            "--gen" => {
                i += 1;
                gens.push(MatrixSource::Gen(
                    args.get(i).ok_or("--gen needs a spec")?.parse()?,
                ));
            }
            "--col-blocks" => {
                i += 1;
                opts.col_blocks = list(args.get(i), "--col-blocks")?;
            }
            "--partitioner" => {
                i += 1;
                opts.partitioner = args.get(i).ok_or("--partitioner needs a value")?.parse()?;
            }
            "--out" => {
                i += 1;
                out = Some(args.get(i).ok_or("--out needs a file")?.clone());
            }
            a => return Err(format!("unknown argument `{a}`").into()),
        }
        i += 1;
    }
    if !gens.is_empty() {
        opts.matrices = gens;
    } else if opts.matrices.is_empty() {
        opts.matrices = default_suite()?;
    }
    opts.matrices.extend(extra);
    let dev = CudaDevice::new(0)?;
    let report = run_spmv(&dev, &opts, &mut |l| eprintln!("{l}"))?;
    let cmd = format!("warpfit bench spmv {}", args.join(" "));
    let md = report.to_markdown(cmd.trim());
    println!("{md}");
    if let Some(p) = out {
        std::fs::write(&p, &md)?;
    }
    Ok(())
}
