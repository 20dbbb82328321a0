//! Unstructured tetrahedral meshes for the cell-centred finite-volume
//! solver (Rodinia's `euler3d`): per cell its volume, its four face
//! neighbours and the four faces' area vectors.
//!
//! [`tetmesh`] splits the unit cube's `side³` cubes into six tetrahedra each
//! (Kuhn's subdivision: every cube along the same main diagonal, so the
//! faces of neighbouring cubes match) and finds each face's neighbour by
//! its three vertices. [`TetMesh::read_domn`] reads Rodinia's `.domn` files.

use super::poisson::random_permutation;
use crate::{Error, Result};
use std::collections::HashMap;
use std::io::BufRead;

/// A neighbour slot that is a solid wall (Rodinia's wing surface): the face
/// carries pressure only.
pub const WALL: i32 = -1;
/// A neighbour slot on the far-field boundary: the face sees the
/// free-stream state.
pub const FAR_FIELD: i32 = -2;

/// The numbering of a generated mesh's cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeshOrder {
    /// Cube by cube (x fastest), six tetrahedra each: neighbours are near
    /// in memory.
    Natural,
    /// The natural mesh renumbered by a random permutation (as a mesh read
    /// in file order, the default).
    Random,
}

/// A tetrahedral mesh as the solver reads it: four face slots per cell.
#[derive(Debug, Clone, PartialEq)]
pub struct TetMesh {
    /// Each cell's volume (Rodinia's `areas`).
    pub volume: Vec<f32>,
    /// Slot `4·c + j`: the cell across face `j` of cell `c`, or [`WALL`] or
    /// [`FAR_FIELD`].
    pub neighbour: Vec<i32>,
    /// Slot `4·c + j`: face `j`'s area vector, pointing into the cell (the
    /// sign Rodinia's solver holds its normals in), per axis.
    pub normal: [Vec<f32>; 3],
}

impl TetMesh {
    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.volume.len()
    }

    /// Checks the mesh's shape: four slots and normals per cell, each
    /// neighbour a cell or a boundary marker, and the neighbour relation
    /// symmetric (`c` is across some face of each of its neighbours).
    pub fn check(&self) -> Result<()> {
        let n = self.cells();
        let slots = n
            .checked_mul(4)
            .ok_or_else(|| Error::invalid(format!("{n} cells: four slots each overflow")))?;
        if self.neighbour.len() != slots || self.normal.iter().any(|a| a.len() != slots) {
            return Err(Error::invalid(format!(
                "a mesh of {n} cells has 4 neighbour slots and normals per cell ({slots}), found {} neighbours and {:?} normals",
                self.neighbour.len(),
                self.normal.iter().map(Vec::len).collect::<Vec<_>>()
            )));
        }
        for (s, &nb) in self.neighbour.iter().enumerate() {
            let c = s / 4;
            if nb == WALL || nb == FAR_FIELD {
                continue;
            }
            let ok = nb >= 0 && (nb as usize) < n && {
                let back = &self.neighbour[4 * nb as usize..4 * nb as usize + 4];
                back.contains(&(c as i32))
            };
            if !ok {
                return Err(Error::invalid(format!(
                    "cell {c}, face {}: neighbour {nb} is not a cell below {n} that has {c} as a neighbour, nor {WALL} (wall) or {FAR_FIELD} (far field)",
                    s % 4
                )));
            }
        }
        Ok(())
    }

    /// Reads Rodinia's `.domn` format: the cell count, then per cell its
    /// volume and four times a neighbour (1-based; `-1` a wall, `-2` the
    /// far field) and the face's outward normal `x y z`. Normals are
    /// stored inward, as Rodinia's solver negates them on reading.
    ///
    /// # Errors
    /// I/O errors, and a file that is short, holds something else than
    /// numbers, or describes a mesh [`TetMesh::check`] refuses, with the
    /// token's position.
    pub fn read_domn(reader: impl BufRead) -> Result<Self> {
        let mut tokens = Tokens::new(reader);
        let n: usize = tokens.next("the cell count")?;
        // Each cell takes at least 4 + 4·4 = 20 tokens of 2 bytes: refuse a
        // count no file could hold before allocating for it.
        crate::mem::check_elems::<[f32; 17]>("the mesh's cells", n)?;
        let mut mesh = TetMesh {
            volume: Vec::with_capacity(n.min(1 << 24)),
            neighbour: Vec::new(),
            normal: [Vec::new(), Vec::new(), Vec::new()],
        };
        for c in 0..n {
            mesh.volume
                .push(tokens.next(&format!("cell {c}'s volume"))?);
            for j in 0..4 {
                let nb: i64 = tokens.next(&format!("cell {c}'s neighbour {j}"))?;
                let nb = match nb {
                    -1 => WALL,
                    -2 => FAR_FIELD,
                    v if v >= 1 && v <= n as i64 => (v - 1) as i32,
                    v => {
                        return Err(Error::invalid(format!(
                            "cell {c}, face {j}: neighbour {v} is not a cell (1 to {n}), -1 (wall) or -2 (far field)"
                        )))
                    }
                };
                mesh.neighbour.push(nb);
                for (axis, a) in mesh.normal.iter_mut().enumerate() {
                    let v: f32 = tokens.next(&format!("cell {c}'s normal {j}, axis {axis}"))?;
                    a.push(-v);
                }
            }
        }
        mesh.check()?;
        Ok(mesh)
    }
}

/// Whitespace-separated tokens of a text file, parsed one at a time.
struct Tokens<R> {
    reader: R,
    line: String,
    at: usize,
    line_no: usize,
}

impl<R: BufRead> Tokens<R> {
    fn new(reader: R) -> Self {
        Tokens {
            reader,
            line: String::new(),
            at: 0,
            line_no: 0,
        }
    }

    fn next<T: std::str::FromStr>(&mut self, what: &str) -> Result<T> {
        loop {
            let rest = &self.line[self.at..];
            if let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
                let tok = &rest[start..];
                let len = tok.find(char::is_whitespace).unwrap_or(tok.len());
                let text = &tok[..len];
                self.at += start + len;
                return text.parse().map_err(|_| {
                    Error::invalid(format!(
                        "line {}: {what} is `{text}`, not a number of the expected kind",
                        self.line_no
                    ))
                });
            }
            self.line.clear();
            self.at = 0;
            self.line_no += 1;
            // One line of a mesh file is a few numbers: a longer one is no
            // such file, refused before it is held whole.
            let read = std::io::Read::take(&mut self.reader, 1 << 20)
                .read_line(&mut self.line)
                .map_err(|e| Error::invalid(format!("line {}: {e}", self.line_no)))?;
            if read == 0 {
                return Err(Error::invalid(format!(
                    "the mesh file ends before {what} (line {})",
                    self.line_no
                )));
            }
            if self.line.len() >= 1 << 20 && !self.line.ends_with('\n') {
                return Err(Error::invalid(format!(
                    "line {} is longer than 1 MiB: not a mesh file",
                    self.line_no
                )));
            }
        }
    }
}

/// A generated mesh's parameters, as `tetmesh:side=S,order=natural|random,seed=N`
/// spells them (keys and values in any letter case; defaults: side 32,
/// random order, seed 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TetMeshSpec {
    pub side: usize,
    pub order: MeshOrder,
    pub seed: u64,
}

impl TetMeshSpec {
    /// The mesh.
    pub fn generate(&self) -> Result<TetMesh> {
        tetmesh(self.side, self.order, self.seed)
    }
}

impl std::str::FromStr for TetMeshSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        let rest = lower.strip_prefix("tetmesh").ok_or_else(|| {
            Error::invalid(format!(
                "`{s}` is not a mesh spec: write `tetmesh:side=S,order=natural|random,seed=N`"
            ))
        })?;
        let mut spec = TetMeshSpec {
            side: 32,
            order: MeshOrder::Random,
            seed: 1,
        };
        let rest = match rest.strip_prefix(':') {
            Some(r) => r,
            None if rest.is_empty() => "",
            None => {
                return Err(Error::invalid(format!(
                    "`{s}`: expected `tetmesh:KEY=VALUE,..`"
                )))
            }
        };
        for kv in rest.split(',').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| Error::invalid(format!("tetmesh: `{kv}` is not KEY=VALUE")))?;
            let bad =
                |what: &str| Error::invalid(format!("tetmesh: `{k}` expects {what}, found `{v}`"));
            match k {
                "side" => spec.side = v.parse().map_err(|_| bad("a cube count per axis"))?,
                "seed" => spec.seed = v.parse().map_err(|_| bad("an unsigned integer"))?,
                "order" => {
                    spec.order = match v {
                        "natural" => MeshOrder::Natural,
                        "random" => MeshOrder::Random,
                        _ => return Err(bad("natural or random")),
                    }
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "tetmesh: unknown key `{k}` (keys: side, order, seed)"
                    )))
                }
            }
        }
        Ok(spec)
    }
}

/// The mesh of the unit cube's `side³` cubes, six tetrahedra each (Kuhn's
/// subdivision), numbered by `order` (`seed` for [`MeshOrder::Random`]).
/// Faces on the planes `x = 0` and `x = 1` are far field (inflow and
/// outflow of a flow along x), the others walls: a channel, closed, on
/// which a uniform flow along x is a steady state.
///
/// # Errors
/// `side` 0, or more cells than u32 and the neighbour slots' i32 hold.
pub fn tetmesh(side: usize, order: MeshOrder, seed: u64) -> Result<TetMesh> {
    let cubes = super::side_power("tetmesh cubes", side, 3)?;
    if side == 0 {
        return Err(Error::invalid("tetmesh: side must be at least 1"));
    }
    let cells = cubes
        .checked_mul(6)
        .filter(|&c| c <= i32::MAX as usize / 4)
        .ok_or_else(|| {
            Error::invalid(format!(
                "tetmesh: side {side} gives {} cells, more than the {} a mesh's i32 neighbour slots address",
                6 * cubes as u128,
                i32::MAX / 4
            ))
        })?;
    // Per cell: the mesh (17 numbers), its vertices (4 indices), at most
    // two faces waiting in the face map, and the renumbered copy: 256
    // bytes covers them, checked before anything is allocated.
    crate::mem::check_elems::<[u64; 32]>(
        "the mesh's cells and the generator's working memory",
        cells,
    )?;
    let s = side + 1;
    let h = 1.0 / side as f64;
    let point = |v: usize| {
        [
            (v % s) as f64 * h,
            (v / s % s) as f64 * h,
            (v / (s * s)) as f64 * h,
        ]
    };
    // Kuhn's subdivision: one tetrahedron per order of the three axes,
    // walking from the cube's low corner to its high one.
    const ORDERS: [[usize; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let step = [1, s, s * s];
    let mut tets: Vec<[usize; 4]> = Vec::with_capacity(cells);
    for z in 0..side {
        for y in 0..side {
            for x in 0..side {
                let base = x + s * (y + s * z);
                for o in ORDERS {
                    let v1 = base + step[o[0]];
                    let v2 = v1 + step[o[1]];
                    tets.push([base, v1, v2, v2 + step[o[2]]]);
                }
            }
        }
    }
    let mut mesh = TetMesh {
        volume: Vec::with_capacity(cells),
        neighbour: vec![0; 4 * cells],
        normal: [
            vec![0.0; 4 * cells],
            vec![0.0; 4 * cells],
            vec![0.0; 4 * cells],
        ],
    };
    let mut faces: HashMap<[usize; 3], usize> = HashMap::with_capacity(2 * cells);
    for (c, t) in tets.iter().enumerate() {
        let p = t.map(point);
        let centre = [0, 1, 2].map(|a| p.iter().map(|q| q[a]).sum::<f64>() / 4.0);
        mesh.volume.push(volume(&p) as f32);
        for j in 0..4 {
            // Face j: the three vertices other than vertex j.
            let mut f = [t[(j + 1) % 4], t[(j + 2) % 4], t[(j + 3) % 4]];
            let (a, b, d) = (point(f[0]), point(f[1]), point(f[2]));
            let mut n = cross(sub(b, a), sub(d, a)).map(|v| 0.5 * v);
            let mid = [0, 1, 2].map(|k| (a[k] + b[k] + d[k]) / 3.0);
            // Inward: against the direction from the cell's centre to the face.
            if dot(n, sub(mid, centre)) > 0.0 {
                n = n.map(|v| -v);
            }
            for (axis, arr) in mesh.normal.iter_mut().enumerate() {
                arr[4 * c + j] = n[axis] as f32;
            }
            f.sort_unstable();
            match faces.remove(&f) {
                Some(slot) => {
                    // Each slot names the other cell.
                    mesh.neighbour[slot] = c as i32;
                    mesh.neighbour[4 * c + j] = (slot / 4) as i32;
                }
                None => {
                    faces.insert(f, 4 * c + j);
                }
            }
        }
    }
    // Faces left unmatched lie on the cube's surface.
    for (f, slot) in faces {
        let on_x = |x: f64| f.iter().all(|&v| (point(v)[0] - x).abs() < 0.5 * h);
        mesh.neighbour[slot] = if on_x(0.0) || on_x(1.0) {
            FAR_FIELD
        } else {
            WALL
        };
    }
    if order == MeshOrder::Random {
        mesh = renumber(&mesh, &random_permutation(cells, seed));
    }
    Ok(mesh)
}

/// The mesh with cell `c` renamed `perm[c]`.
fn renumber(m: &TetMesh, perm: &[u32]) -> TetMesh {
    let n = m.cells();
    let mut out = TetMesh {
        volume: vec![0.0; n],
        neighbour: vec![0; 4 * n],
        normal: [vec![0.0; 4 * n], vec![0.0; 4 * n], vec![0.0; 4 * n]],
    };
    for c in 0..n {
        let to = perm[c] as usize;
        out.volume[to] = m.volume[c];
        for j in 0..4 {
            let nb = m.neighbour[4 * c + j];
            out.neighbour[4 * to + j] = if nb >= 0 {
                perm[nb as usize] as i32
            } else {
                nb
            };
            for a in 0..3 {
                out.normal[a][4 * to + j] = m.normal[a][4 * c + j];
            }
        }
    }
    out
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn volume(p: &[[f64; 3]; 4]) -> f64 {
    dot(sub(p[1], p[0]), cross(sub(p[2], p[0]), sub(p[3], p[0]))).abs() / 6.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kuhn_cubes_make_a_closed_conforming_mesh() {
        for order in [MeshOrder::Natural, MeshOrder::Random] {
            let m = tetmesh(3, order, 7).unwrap();
            m.check().unwrap();
            assert_eq!(m.cells(), 6 * 27);
            // Volumes add up to the cube's.
            let v: f64 = m.volume.iter().map(|&v| v as f64).sum();
            assert!((v - 1.0).abs() < 1e-6, "{v}");
            // Every cell is closed: its face vectors sum to zero.
            for c in 0..m.cells() {
                for a in 0..3 {
                    let s: f32 = m.normal[a][4 * c..4 * c + 4].iter().sum();
                    assert!(s.abs() < 1e-6, "cell {c} axis {a}: {s}");
                }
            }
            // Boundary faces: 6 sides of 3x3 squares, 2 triangles each;
            // far field on the two x sides.
            let far = m.neighbour.iter().filter(|&&n| n == FAR_FIELD).count();
            let wall = m.neighbour.iter().filter(|&&n| n == WALL).count();
            assert_eq!((far, wall), (2 * 18, 4 * 18));
        }
        assert!(tetmesh(0, MeshOrder::Natural, 1).is_err());
        assert!(tetmesh(1 << 12, MeshOrder::Natural, 1).is_err());
    }

    #[test]
    fn mesh_specs_parse_in_any_case_and_refuse_the_rest() {
        let s: TetMeshSpec = "TetMesh:Side=4,ORDER=Natural,seed=9".parse().unwrap();
        assert_eq!((s.side, s.order, s.seed), (4, MeshOrder::Natural, 9));
        let d: TetMeshSpec = "tetmesh".parse().unwrap();
        assert_eq!((d.side, d.order, d.seed), (32, MeshOrder::Random, 1));
        for (bad, why) in [
            ("rmat:scale=3", "not a mesh spec"),
            ("tetmesh:side=x", "`side` expects"),
            ("tetmesh:order=spatial", "natural or random"),
            ("tetmesh:n=3", "unknown key"),
            ("tetmesh:side", "KEY=VALUE"),
        ] {
            let e = bad.parse::<TetMeshSpec>().unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn domn_files_read_as_rodinia_reads_them() {
        // Two cells sharing one face, the others wall and far field.
        let text = "2\n0.5\n2 1 0 0\n-1 0 1 0\n-2 0 0 1\n-1 -1 0 0\n0.25\n1 -1 0 0\n-1 0 -1 0\n-2 0 0 -1\n-1 1 0 0\n";
        let m = TetMesh::read_domn(text.as_bytes()).unwrap();
        assert_eq!(m.volume, [0.5, 0.25]);
        assert_eq!(
            m.neighbour,
            [1, WALL, FAR_FIELD, WALL, 0, WALL, FAR_FIELD, WALL]
        );
        assert_eq!(m.normal[0][..4], [-1.0, 0.0, 0.0, 1.0]);
        for (bad, why) in [
            ("3\n0.5\n", "ends before"),
            ("1\n0.5\n5 1 0 0\n", "not a cell"),
            ("1\nx\n", "`x`"),
            ("2\n0.5\n2 1 0 0\n-1 0 1 0\n-2 0 0 1\n-1 -1 0 0\n0.25\n-1 -1 0 0\n-1 0 -1 0\n-2 0 0 -1\n-1 1 0 0\n", "has 0 as a neighbour"),
        ] {
            let e = TetMesh::read_domn(bad.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }
}
