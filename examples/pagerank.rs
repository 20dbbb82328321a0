//! PageRank on Zachary's karate club (embedded), with the built-in kernels
//! (`pagerank_contrib`, `dangling_rank`, `pagerank_pull_resident`) on
//! device-resident vectors; prints the five highest-ranked members.
//!
//! ```text
//! cargo run --release --example pagerank [-- FILE.mtx]
//! ```

use std::process::ExitCode;
use warpfit::apps::{self, Graph, PageRankOptions};
use warpfit::runtime::sparse::mm;
use warpfit::{Device, LaunchConfig};

const KARATE: &str = include_str!("../tests/data/karate.mtx");

fn run() -> warpfit::Result<()> {
    let a = match std::env::args().nth(1) {
        Some(path) => mm::read_csr::<f32>(std::path::Path::new(&path))?,
        None => mm::read_from::<_, f32>(KARATE.as_bytes(), "karate.mtx")?.to_csr()?,
    };
    let device = Device::best();
    let g = Graph::from_matrix(&a)?;
    let opts = PageRankOptions {
        iterations: 50,
        ..PageRankOptions::default()
    };
    let rank = apps::pagerank(&device, &LaunchConfig::default(), &g, opts)?;
    let mut order: Vec<usize> = (0..rank.len()).collect();
    order.sort_by(|&i, &j| rank[j].total_cmp(&rank[i]));
    println!(
        "pagerank on {} vertices, {} edges, {} iterations, damping {} ({})",
        g.len(),
        g.edges(),
        opts.iterations,
        opts.damping,
        device.backend_name()
    );
    for &v in order.iter().take(5) {
        println!(
            "  vertex {:>6} (1-based {:>6}): rank {:.5}, out-degree {}",
            v,
            v + 1,
            rank[v],
            g.out_degree[v]
        );
    }
    println!(
        "  rank sum {:.6}",
        rank.iter().map(|&r| r as f64).sum::<f64>()
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
