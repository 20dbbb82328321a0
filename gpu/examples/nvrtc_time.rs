//! Host-side NVRTC time of the SpMV kernel (`gpu/tests/fixtures/spmv_f32.rs`,
//! the same functor as the app's `spmv`), without a GPU:
//! `nvrtc_time [--arch 90] [--runs N]`. Prints, best of N runs, the time to
//! compile all entry points in one module, each entry point alone, and what
//! the first small CTE launch waits for from an empty cache: the size
//! kernel compiled on this thread while the task-list kernel (and the
//! merge, given a third core) compile on others, as `CudaDevice` does. Run with
//! `CUDA_CACHE_DISABLE=1` where a CUDA driver is installed.

#[path = "../tests/fixtures/spmv_f32.rs"]
mod spmv_f32;

use spmv_f32::SPMV_F32;
use std::time::Instant;
use warpfit_gpu::__private::compile::{compile_uncached, entry_point_unit, translation_unit};
use warpfit_gpu::__private::ENTRY_POINTS;
use warpfit_gpu::Arch;

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Best wall time of `runs` calls of `f`, in milliseconds.
fn best_ms(runs: usize, mut f: impl FnMut() -> AnyResult<()>) -> AnyResult<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(best)
}

fn compile_entry(ep: &str, arch: Arch) -> AnyResult<()> {
    let tu = entry_point_unit(&SPMV_F32, &[ep])?;
    compile_uncached(&format!("spmv_f32.{ep}"), &tu, arch)?;
    Ok(())
}

fn main() -> AnyResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut arch, mut runs) = (Arch::new(9, 0), 3usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--arch" => {
                let cc: u32 = it
                    .next()
                    .ok_or("--arch needs a value such as 90")?
                    .parse()?;
                arch = Arch::new(cc / 10, cc % 10);
            }
            "--runs" => runs = it.next().ok_or("--runs needs a count")?.parse()?,
            other => return Err(format!("unknown argument `{other}`").into()),
        }
    }
    let runs = runs.max(1);
    println!("NVRTC host time, kernel spmv_f32, {arch}, best of {runs}\n");
    println!("| compiled | ms |\n|---|---:|");
    let whole = translation_unit(&SPMV_F32);
    let ms = best_ms(runs, || {
        compile_uncached("spmv_f32", &whole, arch)?;
        Ok(())
    })?;
    println!(
        "| all {} entry points, one module | {ms:.0} |",
        ENTRY_POINTS.len()
    );
    let mut sum = 0.0;
    for ep in ENTRY_POINTS {
        let ms = best_ms(runs, || compile_entry(ep, arch))?;
        sum += ms;
        println!("| `{ep}` alone | {ms:.0} |");
    }
    println!("| sum of the entry points alone | {sum:.0} |");
    for (label, on_this_thread, on_others) in [
        (
            "`wf_sizes`, then `wf_cte_list` (sequential)",
            &["wf_sizes", "wf_cte_list"][..],
            &[][..],
        ),
        (
            "`wf_sizes` here, `wf_cte_list` on another thread",
            &["wf_sizes"][..],
            &["wf_cte_list"][..],
        ),
        (
            "`wf_sizes` here, `wf_cte_list` and `wf_merge` on two other threads",
            &["wf_sizes"][..],
            &["wf_cte_list", "wf_merge"][..],
        ),
    ] {
        let ms = best_ms(runs, || {
            std::thread::scope(|s| {
                let others: Vec<_> = on_others
                    .iter()
                    .map(|ep| s.spawn(move || compile_entry(ep, arch).map_err(|e| e.to_string())))
                    .collect();
                for ep in on_this_thread {
                    compile_entry(ep, arch)?;
                }
                for h in others {
                    h.join().map_err(|_| "compile thread panicked")??;
                }
                Ok(())
            })
        })?;
        println!("| {label} | {ms:.0} |");
    }
    Ok(())
}
