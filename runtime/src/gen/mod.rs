//! Deterministic input generators: RMAT (Graph500 Kronecker, also
//! symmetrised), uniform random rows, 2D random geometric graphs (DIMACS10
//! recipe), 2D grids, road-network-like grids (weighted, edges removed, high
//! diameter) and the 2D and 3D Poisson matrices (symmetric positive
//! definite, for solvers), magnitude-pruned neural-network layers
//! ([`pruned()`], [`alexnet_fc`]; not a `--gen` spec), plus
//! [`GenSpec`], the `--gen SPEC` syntax that names one of them.
//!
//! Every generator is deterministic for a given seed on every machine and for
//! every thread count: randomness comes from `rand_chacha::ChaCha8Rng` keyed
//! with the seed (little-endian in the first 8 key bytes, the rest zero) and
//! one ChaCha *stream* per fixed-size chunk of work, so chunks can be
//! generated in parallel and still draw the same numbers. Sizes (rows,
//! entries) are checked against u32.

mod grid;
mod poisson;
pub mod pruned;
mod rgg;
mod rmat;
mod road;
mod tetmesh;
mod uniform;
mod values;

pub use grid::grid2d;
pub use poisson::{poisson2d, poisson3d, Poisson3dOrder};
pub use pruned::{alexnet_fc, pruned, PrunedLayer, ALEXNET_FC, PRUNED_MAX_ENTRIES};
pub use rgg::{rgg, rgg_radius, rgg_with, RggOrder};
pub use rmat::{rmat, rmat_row_blocks, rmat_rows, rmat_symmetric, RmatSide};
pub use road::{road, RoadOrder};
pub use tetmesh::{tetmesh, MeshOrder, TetMesh, TetMeshSpec, FAR_FIELD, WALL};
pub use uniform::uniform;
pub use values::random_values;

use crate::error::excerpt;
use crate::sparse::Csr;
use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// A generator and its parameters, as written after `--gen`:
///
/// | spec | defaults |
/// |---|---|
/// | `rmat:scale=S,edge_factor=E,seed=X,sym=false\|true` | scale 16, edge_factor 16, seed 1, sym false |
/// | `uniform:n=N,per_row=K,seed=X` | n 65536, per_row 16, seed 1 |
/// | `rgg:n=N,seed=X,order=random\|spatial` | n 65536, seed 1, order random |
/// | `grid2d:side=S` | side 256 |
/// | `road:side=S,drop=F,seed=X,order=random\|natural` | side 256, drop 0.15, seed 1, order random |
/// | `poisson2d:side=S` | side 256 |
/// | `poisson3d:side=S,order=natural\|random,seed=X` | side 64, order natural, seed 1 |
///
/// Every key is optional (`rmat` alone is valid); keys may come in any order
/// but at most once. [`fmt::Display`] gives the canonical spec back, with
/// every key (`sym` only when true), so a printed spec regenerates the same
/// matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenSpec {
    /// [`rmat`].
    Rmat {
        /// log2 of the vertex count.
        scale: u32,
        /// Edges per vertex before duplicate removal.
        edge_factor: u64,
        /// Seed.
        seed: u64,
        /// Symmetrised ([`rmat_symmetric`]): edge directions ignored.
        sym: bool,
    },
    /// [`uniform`].
    Uniform {
        /// Rows and columns.
        n: u64,
        /// Entries per row.
        per_row: u64,
        /// Seed.
        seed: u64,
    },
    /// [`rgg_with`].
    Rgg {
        /// Vertices.
        n: u64,
        /// Seed.
        seed: u64,
        /// Vertex numbering.
        order: RggOrder,
    },
    /// [`grid2d`].
    Grid2d {
        /// Grid side (side² rows).
        side: u64,
    },
    /// [`road`].
    Road {
        /// Grid side (side² vertices).
        side: u64,
        /// The fraction of grid edges removed, in millionths (0 to 10⁶):
        /// written as a decimal (`drop=0.15`), stored exactly.
        drop_millionths: u32,
        /// Seed.
        seed: u64,
        /// Vertex numbering.
        order: RoadOrder,
    },
    /// [`poisson2d`]: the matrix of `grid2d`, named for solvers.
    Poisson2d {
        /// Grid side (side² rows).
        side: u64,
    },
    /// [`poisson3d`].
    Poisson3d {
        /// Grid side (side³ rows).
        side: u64,
        /// Row numbering.
        order: Poisson3dOrder,
        /// Seed of the random numbering (unused in natural order).
        seed: u64,
    },
}

const KINDS: &str = "rmat, uniform, rgg, grid2d, road, poisson2d, poisson3d";

impl GenSpec {
    /// Generates the matrix.
    pub fn generate(&self) -> Result<Csr<f32>> {
        match *self {
            GenSpec::Rmat {
                scale,
                edge_factor,
                seed,
                sym,
            } => {
                let edge_factor = to_usize("edge_factor", edge_factor)?;
                if sym {
                    rmat_symmetric(scale, edge_factor, seed)
                } else {
                    rmat(scale, edge_factor, seed)
                }
            }
            GenSpec::Uniform { n, per_row, seed } => {
                uniform(to_usize("n", n)?, to_usize("per_row", per_row)?, seed)
            }
            GenSpec::Rgg { n, seed, order } => rgg_with(to_usize("n", n)?, seed, order),
            GenSpec::Grid2d { side } => grid2d(to_usize("side", side)?),
            GenSpec::Road {
                side,
                drop_millionths,
                seed,
                order,
            } => road(
                to_usize("side", side)?,
                drop_millionths as f64 / 1e6,
                seed,
                order,
            ),
            GenSpec::Poisson2d { side } => poisson2d(to_usize("side", side)?),
            GenSpec::Poisson3d { side, order, seed } => {
                poisson3d(to_usize("side", side)?, order, seed)
            }
        }
    }

    /// The generator's name (`rmat`, `uniform`, `rgg`, `grid2d`, `road`,
    /// `poisson2d`, `poisson3d`).
    pub fn kind(&self) -> &'static str {
        match self {
            GenSpec::Rmat { .. } => "rmat",
            GenSpec::Uniform { .. } => "uniform",
            GenSpec::Rgg { .. } => "rgg",
            GenSpec::Grid2d { .. } => "grid2d",
            GenSpec::Road { .. } => "road",
            GenSpec::Poisson2d { .. } => "poisson2d",
            GenSpec::Poisson3d { .. } => "poisson3d",
        }
    }
}

fn to_usize(what: &'static str, v: u64) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::U32Overflow { what, value: v })
}

impl fmt::Display for RggOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RggOrder::Random => "random",
            RggOrder::Spatial => "spatial",
        })
    }
}

impl fmt::Display for GenSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenSpec::Rmat {
                scale,
                edge_factor,
                seed,
                sym,
            } => {
                write!(
                    f,
                    "rmat:scale={scale},edge_factor={edge_factor},seed={seed}"
                )?;
                if *sym {
                    f.write_str(",sym=true")?;
                }
                Ok(())
            }
            GenSpec::Uniform { n, per_row, seed } => {
                write!(f, "uniform:n={n},per_row={per_row},seed={seed}")
            }
            GenSpec::Rgg { n, seed, order } => write!(f, "rgg:n={n},seed={seed},order={order}"),
            GenSpec::Grid2d { side } => write!(f, "grid2d:side={side}"),
            GenSpec::Road {
                side,
                drop_millionths,
                seed,
                order,
            } => write!(
                f,
                "road:side={side},drop={},seed={seed},order={order}",
                Millionths(*drop_millionths)
            ),
            GenSpec::Poisson2d { side } => write!(f, "poisson2d:side={side}"),
            GenSpec::Poisson3d { side, order, seed } => {
                write!(f, "poisson3d:side={side},order={order},seed={seed}")
            }
        }
    }
}

/// `side^dims`, the vertices of a grid generator, when it fits the `u32`
/// indices; otherwise an error giving the exact count (computed in `u128`,
/// so a side of 2^32 is not reported as a saturated number) and the largest
/// side that fits.
pub(crate) fn side_power(what: &str, side: usize, dims: u32) -> Result<usize> {
    let n = (side as u128).checked_pow(dims);
    if let Some(n) = n.filter(|&n| n <= u128::from(u32::MAX)) {
        return Ok(n as usize);
    }
    let max_side = (1u64..)
        .take_while(|s| u128::from(*s).pow(dims) <= u128::from(u32::MAX))
        .last()
        .unwrap_or(0);
    let power = if dims == 2 { "²" } else { "³" };
    let n = n.map_or(format!("{side}{power}"), |n| n.to_string());
    Err(Error::invalid(format!(
        "{what} (side{power}) = {n} do not fit in u32 (max {}): side at most {max_side}",
        u32::MAX
    )))
}

impl FromStr for GenSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        // Names, keys and enumerated values in any letter case, as every
        // enumerated value warpfit parses.
        let lowered = s.trim().to_ascii_lowercase();
        let s = lowered.as_str();
        let (kind, params) = match s.split_once(':') {
            Some((k, p)) => (k.trim(), p.trim()),
            None => (s, ""),
        };
        let keys: &[&str] = match kind {
            "rmat" => &["scale", "edge_factor", "seed", "sym"],
            "uniform" => &["n", "per_row", "seed"],
            "rgg" => &["n", "seed", "order"],
            "grid2d" | "poisson2d" => &["side"],
            "road" => &["side", "drop", "seed", "order"],
            "poisson3d" => &["side", "order", "seed"],
            "" => {
                return Err(Error::invalid(format!(
                    "empty generator spec: expected one of {KINDS}, e.g. `rmat:scale=20`"
                )))
            }
            other => {
                return Err(Error::invalid(format!(
                    "unknown generator `{}`: expected one of {KINDS}",
                    excerpt(other.as_bytes())
                )))
            }
        };
        // Parse `key=value` pairs, checking names and repetitions.
        let mut values: Vec<Option<&str>> = vec![None; keys.len()];
        for pair in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').ok_or_else(|| {
                Error::invalid(format!(
                    "{kind}: expected `key=value`, found `{}`",
                    excerpt(pair.as_bytes())
                ))
            })?;
            let (key, value) = (key.trim(), value.trim());
            let slot = keys.iter().position(|k| *k == key).ok_or_else(|| {
                Error::invalid(format!(
                    "{kind}: unknown key `{}`; valid keys are {}",
                    excerpt(key.as_bytes()),
                    keys.join(", ")
                ))
            })?;
            if values[slot].replace(value).is_some() {
                return Err(Error::invalid(format!("{kind}: key `{key}` given twice")));
            }
        }
        let get = |key: &str| values[keys.iter().position(|k| *k == key).unwrap()];
        let num = |key: &str, default: u64| -> Result<u64> {
            match get(key) {
                None => Ok(default),
                Some(v) => v.parse::<u64>().map_err(|_| {
                    let shown = excerpt(v.as_bytes());
                    Error::invalid(if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                        format!("{kind}: `{key}` = {shown} is too large (max {})", u64::MAX)
                    } else {
                        format!("{kind}: `{key}` expects a non-negative integer, found `{shown}`")
                    })
                }),
            }
        };
        Ok(match kind {
            "rmat" => {
                let scale = num("scale", 16)?;
                GenSpec::Rmat {
                    scale: u32::try_from(scale)
                        .ok()
                        .filter(|&s| s <= 31)
                        .ok_or_else(|| {
                            Error::invalid(format!(
                                "rmat: scale = {scale} is too large (max 31: the 2^scale \
                                 vertices must fit in u32)"
                            ))
                        })?,
                    edge_factor: num("edge_factor", 16)?,
                    seed: num("seed", 1)?,
                    sym: match get("sym") {
                        None | Some("false") => false,
                        Some("true") => true,
                        Some(other) => {
                            return Err(Error::invalid(format!(
                                "rmat: `sym` expects true or false, found `{}`",
                                excerpt(other.as_bytes())
                            )))
                        }
                    },
                }
            }
            "uniform" => GenSpec::Uniform {
                n: num("n", 65536)?,
                per_row: num("per_row", 16)?,
                seed: num("seed", 1)?,
            },
            "rgg" => GenSpec::Rgg {
                n: num("n", 65536)?,
                seed: num("seed", 1)?,
                order: match get("order") {
                    None | Some("random") => RggOrder::Random,
                    Some("spatial") => RggOrder::Spatial,
                    Some(other) => {
                        return Err(Error::invalid(format!(
                            "rgg: `order` expects random or spatial, found `{}`",
                            excerpt(other.as_bytes())
                        )))
                    }
                },
            },
            "road" => GenSpec::Road {
                side: num("side", 256)?,
                drop_millionths: match get("drop") {
                    None => 150_000,
                    Some(v) => parse_fraction("road", "drop", v)?,
                },
                seed: num("seed", 1)?,
                order: match get("order") {
                    None | Some("random") => RoadOrder::Random,
                    Some("natural") => RoadOrder::Natural,
                    Some(other) => {
                        return Err(Error::invalid(format!(
                            "road: `order` expects random or natural, found `{}`",
                            excerpt(other.as_bytes())
                        )))
                    }
                },
            },
            "poisson2d" => GenSpec::Poisson2d {
                side: num("side", 256)?,
            },
            "poisson3d" => GenSpec::Poisson3d {
                side: num("side", 64)?,
                order: match get("order") {
                    None | Some("natural") => Poisson3dOrder::Natural,
                    Some("random") => Poisson3dOrder::Random,
                    Some(other) => {
                        return Err(Error::invalid(format!(
                            "poisson3d: `order` expects natural or random, found `{}`",
                            excerpt(other.as_bytes())
                        )))
                    }
                },
                seed: num("seed", 1)?,
            },
            _ => GenSpec::Grid2d {
                side: num("side", 256)?,
            },
        })
    }
}

/// A fraction in millionths, written as the shortest decimal (`150000` →
/// `0.15`, `0` → `0`, `1000000` → `1`).
struct Millionths(u32);

impl fmt::Display for Millionths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = (self.0 / 1_000_000, self.0 % 1_000_000);
        if frac == 0 {
            return write!(f, "{whole}");
        }
        let digits = format!("{frac:06}");
        write!(f, "{whole}.{}", digits.trim_end_matches('0'))
    }
}

/// Parses a fraction in `[0, 1]` with at most six decimals into millionths.
fn parse_fraction(kind: &str, key: &str, v: &str) -> Result<u32> {
    let shown = excerpt(v.as_bytes());
    let x: f64 = v.parse().map_err(|_| {
        Error::invalid(format!(
            "{kind}: `{key}` expects a fraction in [0, 1] such as 0.15, found `{shown}`"
        ))
    })?;
    if !(0.0..=1.0).contains(&x) {
        return Err(Error::invalid(format!(
            "{kind}: `{key}` = {shown} must lie in [0, 1]"
        )));
    }
    let m = (x * 1e6).round();
    if (x * 1e6 - m).abs() > 1e-6 {
        return Err(Error::invalid(format!(
            "{kind}: `{key}` = {shown} has more than six decimals"
        )));
    }
    Ok(m as u32)
}
