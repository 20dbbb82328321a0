//! `warpfit gen KIND … -o FILE.mtx`: writes a generated matrix.

use super::output::OutputFile;
use std::path::PathBuf;
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::sparse::mm;
use warpfit::Result;

#[derive(Debug, Clone, clap::Args)]
pub struct GenArgs {
    #[command(subcommand)]
    pub kind: GenKind,
    /// Output Matrix Market file (required; checked before generating).
    #[arg(short, long, value_name = "FILE.mtx", global = true)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum GenKind {
    /// RMAT / Kronecker graph (Graph500 a=.57 b=.19 c=.19): 2^scale rows, edge_factor·2^scale entries.
    Rmat {
        #[arg(long, default_value_t = 16)]
        scale: u32,
        #[arg(long, default_value_t = 16)]
        edge_factor: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Symmetrise: A + Aᵀ, edge directions ignored (the smaller value
        /// where both directions were drawn).
        #[arg(long)]
        sym: bool,
    },
    /// `n` rows of `per_row` uniformly random columns.
    Uniform {
        #[arg(long, default_value_t = 65536)]
        n: u64,
        #[arg(long, default_value_t = 16)]
        per_row: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// 2D random geometric graph, radius 0.55·sqrt(ln n / n) (DIMACS10).
    Rgg {
        #[arg(long, default_value_t = 65536)]
        n: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Vertex order: `random` or `spatial`.
        #[arg(long, default_value = "random")]
        order: String,
    },
    /// 5-point stencil on a side×side grid.
    Grid2d {
        #[arg(long, default_value_t = 256)]
        side: u64,
    },
    /// Road-network-like graph: the side×side grid, each edge removed with
    /// probability `drop`, the others weighted uniformly in (0, 1];
    /// symmetric, degree ≤ 4, diameter about 2·side.
    Road {
        #[arg(long, default_value_t = 256)]
        side: u64,
        /// The fraction of grid edges removed, in [0, 1].
        #[arg(long, default_value = "0.15")]
        drop: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Vertex order: `random` (a random permutation) or `natural`.
        #[arg(long, default_value = "random")]
        order: String,
    },
    /// 2D Poisson matrix (the 5-point Laplacian of grid2d): SPD.
    Poisson2d {
        #[arg(long, default_value_t = 256)]
        side: u64,
    },
    /// 3D Poisson matrix, 7-point Laplacian on a side³ grid: SPD.
    Poisson3d {
        #[arg(long, default_value_t = 64)]
        side: u64,
        /// Row numbering: `natural` or `random` (a symmetric renumbering).
        #[arg(long, default_value = "natural")]
        order: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

impl GenKind {
    /// The equivalent `--gen` spec.
    pub fn spec(&self) -> String {
        match self {
            GenKind::Rmat {
                scale,
                edge_factor,
                seed,
                sym,
            } => format!("rmat:scale={scale},edge_factor={edge_factor},seed={seed},sym={sym}"),
            GenKind::Uniform { n, per_row, seed } => {
                format!("uniform:n={n},per_row={per_row},seed={seed}")
            }
            GenKind::Rgg { n, seed, order } => format!("rgg:n={n},seed={seed},order={order}"),
            GenKind::Grid2d { side } => format!("grid2d:side={side}"),
            GenKind::Road {
                side,
                drop,
                seed,
                order,
            } => format!("road:side={side},drop={drop},seed={seed},order={order}"),
            GenKind::Poisson2d { side } => format!("poisson2d:side={side}"),
            GenKind::Poisson3d { side, order, seed } => {
                format!("poisson3d:side={side},order={order},seed={seed}")
            }
        }
    }
}

pub fn run(args: &GenArgs) -> Result<()> {
    let spec: GenSpec = args.kind.spec().parse()?;
    let path = args
        .output
        .as_ref()
        .ok_or_else(|| warpfit::Error::invalid("missing -o FILE.mtx"))?;
    let output = OutputFile::open(path, "-o")?;
    let a = spec.generate()?;
    output.write_with(|w| mm::write_to(w, &a))?;
    eprintln!(
        "{spec}: {} x {}, {} nonzeros -> {}",
        a.nrows(),
        a.ncols(),
        a.nnz(),
        path.display()
    );
    Ok(())
}
