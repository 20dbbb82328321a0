//! Shortest paths by Bellman-Ford over the (min, +) semiring on the 494-bus
//! power network (embedded; edge weights are |a(i, j)|).
//!
//! ```text
//! cargo run --release --example sssp [-- FILE.mtx [SOURCE]]
//! ```

use std::process::ExitCode;
use warpfit::apps::{self, Graph};
use warpfit::runtime::sparse::mm;
use warpfit::{Device, LaunchConfig};

const BUS: &str = include_str!("../tests/data/494_bus.mtx");

fn run() -> warpfit::Result<()> {
    let mut args = std::env::args().skip(1);
    let a = match args.next() {
        Some(path) => mm::read_csr::<f32>(std::path::Path::new(&path))?,
        None => mm::read_from::<_, f32>(BUS.as_bytes(), "494_bus.mtx")?.to_csr()?,
    };
    let source = match args.next() {
        Some(s) => s
            .parse()
            .map_err(|_| warpfit::Error::invalid(format!("source `{s}` is not a vertex index")))?,
        None => 0,
    };
    let device = Device::best();
    let g = Graph::from_matrix(&a)?;
    let (dist, rounds) = apps::sssp(&device, &LaunchConfig::default(), &g, source)?;
    let reached: Vec<f32> = dist.iter().copied().filter(|d| d.is_finite()).collect();
    let far = (0..dist.len())
        .filter(|&v| dist[v].is_finite())
        .max_by(|&i, &j| dist[i].total_cmp(&dist[j]))
        .unwrap_or(source);
    println!(
        "sssp from vertex {source} on {} vertices, {} edges: {rounds} relaxation rounds ({})",
        g.len(),
        g.edges(),
        device.backend_name()
    );
    println!(
        "  {} vertices reached, mean distance {:.4}, farthest vertex {far} at {:.4}",
        reached.len(),
        reached.iter().map(|&d| d as f64).sum::<f64>() / reached.len().max(1) as f64,
        dist[far]
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
