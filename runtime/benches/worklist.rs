//! Worklist benchmark: what deduplication costs on the CPU. Pushes every
//! edge's target of a generated graph into a plain and a deduplicating
//! `Worklist` from all cores (rayon, one task per vertex, as a push
//! kernel's CPU twin does), then clears the list; prints the best of
//! several runs, for BENCHMARKS.md.
//!
//! ```text
//! cargo bench -p warpfit-runtime --bench worklist -- [SPEC...]
//! ```
//! SPEC is a generator spec (default `rmat:scale=20` and `grid2d:side=1024`).

use rayon::prelude::*;
use std::time::Instant;
use warpfit_runtime::gen::GenSpec;
use warpfit_runtime::worklist::{push, Worklist};
use warpfit_runtime::Result;

/// Runs of each measurement; the best is printed.
const RUNS: usize = 7;

fn main() -> Result<()> {
    let mut specs: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if specs.is_empty() {
        specs = vec!["rmat:scale=20".into(), "grid2d:side=1024".into()];
    }
    println!("threads: {}", rayon::current_num_threads());
    println!("| graph | list | pushes | stored | push (ms) | ns / push | clear (ms) |");
    println!("|---|---|---|---|---|---|---|");
    for spec in specs {
        let a = spec.parse::<GenSpec>()?.generate()?;
        let (n, ptr, dst) = (a.nrows(), a.row_ptr(), a.col_idx());
        let m = dst.len();
        for dedup in [false, true] {
            let mut list = if dedup {
                Worklist::new_dedup(n, m)?
            } else {
                Worklist::new(n, m)?
            };
            let (mut push_ms, mut clear_ms) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..RUNS {
                let t = Instant::now();
                (0..n).into_par_iter().with_min_len(512).for_each(|v| {
                    for &u in &dst[ptr[v] as usize..ptr[v + 1] as usize] {
                        push(&list, u);
                    }
                });
                push_ms = push_ms.min(t.elapsed().as_secs_f64() * 1e3);
                // The clear after a round: a plain list resets its count, a
                // deduplicating one also the bits of the items it stored.
                let t = Instant::now();
                list.clear();
                clear_ms = clear_ms.min(t.elapsed().as_secs_f64() * 1e3);
            }
            for v in 0..n {
                for &u in &dst[ptr[v] as usize..ptr[v + 1] as usize] {
                    push(&list, u);
                }
            }
            let stored = list.len();
            println!(
                "| {spec} | {} | {m} | {stored} | {push_ms:.2} | {:.2} | {clear_ms:.3} |",
                if dedup { "dedup" } else { "plain" },
                push_ms * 1e6 / m as f64
            );
        }
    }
    Ok(())
}
