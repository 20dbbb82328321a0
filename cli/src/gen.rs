//! `warpfit gen KIND … -o FILE.mtx`: writes a generated matrix
//! (`gen pruned --model alexnet-fc --output-dir DIR`: a network's layers).

use super::output::OutputFile;
use std::io::Write;
use std::path::{Path, PathBuf};
use warpfit::runtime::gen::{self, GenSpec, PrunedLayer};
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
    /// Magnitude-pruned fully connected layer (rows = outputs, cols =
    /// inputs): He-initialised Gaussian weights, N(0, 2/cols), of which the
    /// round(density·rows·cols) largest in magnitude are kept; or with
    /// `--model`, a network's pruned layers and biases.
    Pruned {
        #[arg(long, required_unless_present = "model")]
        rows: Option<usize>,
        #[arg(long, required_unless_present = "model")]
        cols: Option<usize>,
        /// The fraction of weights kept, in (0, 1].
        #[arg(long, required_unless_present = "model")]
        density: Option<f64>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// A network's layers instead of one: `alexnet-fc` (fc6 4096×9216
        /// and fc7 4096×4096 at density 0.09, fc8 1000×4096 at 0.25, as
        /// deep compression prunes them), written as NAME.mtx and
        /// NAME.bias.txt (one value per line) into --output-dir.
        #[arg(
            long,
            value_enum,
            conflicts_with_all = ["rows", "cols", "density"],
            requires = "output_dir"
        )]
        model: Option<Model>,
        /// The folder --model writes into (created when missing, its parent
        /// must exist).
        #[arg(long, value_name = "DIR", requires = "model")]
        output_dir: Option<PathBuf>,
    },
}

/// The networks of `gen pruned --model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Model {
    /// AlexNet's fully connected layers fc6, fc7, fc8.
    AlexnetFc,
}

impl GenKind {
    /// The equivalent `--gen` spec (none for `pruned`).
    pub fn spec(&self) -> Option<String> {
        Some(match self {
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
            GenKind::Pruned { .. } => return None,
        })
    }
}

pub fn run(args: &GenArgs) -> Result<()> {
    if let GenKind::Pruned {
        rows,
        cols,
        density,
        seed,
        model,
        output_dir,
    } = &args.kind
    {
        return match (model, output_dir) {
            (Some(model), Some(dir)) => run_model(*model, *seed, dir, args.output.as_deref()),
            (Some(_), None) => Err(warpfit::Error::invalid(
                "gen pruned --model needs --output-dir DIR",
            )),
            (None, Some(_)) => Err(warpfit::Error::invalid(
                "gen pruned --output-dir is for --model; one layer goes to -o FILE.mtx",
            )),
            (None, None) => match (rows, cols, density) {
                (Some(rows), Some(cols), Some(density)) => {
                    run_pruned(*rows, *cols, *density, *seed, args.output.as_deref())
                }
                _ => Err(warpfit::Error::invalid(
                    "gen pruned needs --rows, --cols and --density (or --model)",
                )),
            },
        };
    }
    let spec = args.kind.spec().expect("every other generator has a spec");
    let spec: GenSpec = spec.parse()?;
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

/// `gen pruned --rows R --cols C --density D [--seed N] -o FILE.mtx`.
fn run_pruned(
    rows: usize,
    cols: usize,
    density: f64,
    seed: u64,
    output: Option<&Path>,
) -> Result<()> {
    let path = output.ok_or_else(|| warpfit::Error::invalid("missing -o FILE.mtx"))?;
    let output = OutputFile::open(path, "-o")?;
    let a = gen::pruned(rows, cols, density, seed)?;
    output.write_with(|w| mm::write_to(w, &a))?;
    eprintln!(
        "pruned:rows={rows},cols={cols},density={density},seed={seed}: {} x {}, {} nonzeros -> {}",
        a.nrows(),
        a.ncols(),
        a.nnz(),
        path.display()
    );
    Ok(())
}

/// `gen pruned --model NAME [--seed N] --output-dir DIR`: every layer's
/// NAME.mtx and NAME.bias.txt, all opened before generating.
fn run_model(model: Model, seed: u64, dir: &Path, output: Option<&Path>) -> Result<()> {
    if output.is_some() {
        return Err(warpfit::Error::invalid(
            "gen pruned --model writes several files into --output-dir; -o is for one matrix",
        ));
    }
    let names: Vec<&str> = match model {
        Model::AlexnetFc => gen::ALEXNET_FC.iter().map(|l| l.0).collect(),
    };
    if !dir.is_dir() {
        std::fs::create_dir(dir).map_err(|source| {
            warpfit::Error::invalid(format!(
                "--output-dir {}: cannot create the folder: {source}",
                dir.display()
            ))
        })?;
    }
    let files = names
        .iter()
        .map(|name| {
            let matrix = dir.join(format!("{name}.mtx"));
            let bias = dir.join(format!("{name}.bias.txt"));
            Ok((
                OutputFile::open(&matrix, "--output-dir")?,
                OutputFile::open(&bias, "--output-dir")?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let layers: Vec<PrunedLayer> = match model {
        Model::AlexnetFc => gen::alexnet_fc(seed)?,
    };
    for (layer, (matrix, bias)) in layers.iter().zip(files) {
        let a = &layer.matrix;
        matrix.write_with(|w| mm::write_to(w, a))?;
        bias.write_with(|w| layer.bias.iter().try_for_each(|b| writeln!(w, "{b}")))?;
        eprintln!(
            "{}: {} x {}, {} nonzeros, density {:.4} -> {}",
            layer.name,
            a.nrows(),
            a.ncols(),
            a.nnz(),
            a.nnz() as f64 / (a.nrows() * a.ncols()) as f64,
            dir.join(format!("{}.{{mtx,bias.txt}}", layer.name))
                .display()
        );
    }
    Ok(())
}
