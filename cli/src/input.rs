//! The matrix a subcommand works on: a Matrix Market file or a generator spec.

use std::path::PathBuf;
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::sparse::{mm, Csr};
use warpfit::{Error, Result};

/// `--matrix FILE.mtx` or `--gen SPEC`, exactly one.
#[derive(Debug, Clone, clap::Args)]
#[group(required = true, multiple = false)]
pub struct MatrixInput {
    /// Matrix Market file (coordinate; real, integer or pattern).
    #[arg(long, value_name = "FILE.mtx")]
    pub matrix: Option<PathBuf>,
    /// Generated input, e.g. `rmat:scale=20,edge_factor=16,seed=1`,
    /// `rmat:scale=20,sym=true`, `uniform:n=1048576,per_row=16`, `rgg:n=1048576,order=spatial`,
    /// `grid2d:side=4096`, `road:side=2048,drop=0.15,order=random`, `poisson2d:side=2048`,
    /// `poisson3d:side=128,order=random,seed=1`.
    #[arg(long = "gen", value_name = "SPEC")]
    pub gen: Option<String>,
}

impl MatrixInput {
    /// Reads or generates the matrix, with f32 values.
    pub fn load(&self) -> Result<Csr<f32>> {
        match (&self.matrix, &self.gen) {
            (Some(path), None) => mm::read_csr::<f32>(path),
            (None, Some(spec)) => spec.parse::<GenSpec>()?.generate(),
            _ => Err(Error::invalid(
                "give exactly one of --matrix FILE or --gen SPEC",
            )),
        }
    }

    /// A Matrix Market file's banner and size line (`None` for a generated
    /// matrix): what reading it will allocate, known before it is read.
    pub fn header(&self) -> Result<Option<mm::MmHeader>> {
        self.matrix.as_deref().map(mm::read_header).transpose()
    }

    /// Reads the matrix with values of type `T` (a generated matrix, made
    /// with f32 values, is converted: its values are small integers, exact in
    /// either type).
    pub fn load_as<T: warpfit::apps::CgScalar>(&self) -> Result<Csr<T>> {
        match (&self.matrix, &self.gen) {
            (Some(path), None) => mm::read_csr::<T>(path),
            _ => Ok(self.load()?.map_values(|&v| T::from_f64(v as f64))),
        }
    }

    /// A short name for summaries: the file name or the canonical spec.
    pub fn label(&self) -> String {
        match (&self.matrix, &self.gen) {
            (Some(p), _) => p.display().to_string(),
            (_, Some(s)) => s
                .parse::<GenSpec>()
                .map_or_else(|_| s.clone(), |g| g.to_string()),
            _ => String::new(),
        }
    }
}
