//! A straightforward sequential `euler3d` (Rodinia's loops, array of
//! structures, one accumulation per term) that the solver is checked
//! against, and a perturbed initial state that makes the flow move.
// The reference indexes cells, faces and variables as Rodinia's loops do.
#![allow(dead_code, clippy::needless_range_loop)]

use warpfit::apps::{free_stream, GAMMA, RK};
use warpfit::runtime::gen::{TetMesh, FAR_FIELD, WALL};

type State = Vec<[f32; 5]>;

fn pressure(u: &[f32; 5]) -> (f32, [f32; 3], f32, f32) {
    let v = [u[1] / u[0], u[2] / u[0], u[3] / u[0]];
    let ss = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    let p = (GAMMA - 1.0) * (u[4] - 0.5 * u[0] * ss);
    let c = (GAMMA * p / u[0]).sqrt();
    (p, v, ss, c)
}

/// `F_axis` of `[ρ, ρu, ρv, ρw, ρE]`: the flux through a unit normal
/// along `axis`, per variable.
fn flux_along(u: &[f32; 5], axis: usize) -> [f32; 5] {
    let (p, v, _, _) = pressure(u);
    let mut f = [
        u[1 + axis],
        v[axis] * u[1],
        v[axis] * u[2],
        v[axis] * u[3],
        v[axis] * (u[4] + p),
    ];
    f[1 + axis] += p;
    f
}

/// `iterations` iterations from `initial`, as Rodinia's CPU code runs them.
pub fn euler3d(mesh: &TetMesh, initial: &[Vec<f32>; 5], iterations: usize) -> [Vec<f32>; 5] {
    let n = mesh.cells();
    let ffv = free_stream();
    let ff: [f32; 5] = [ffv[0], ffv[1], ffv[2], ffv[3], ffv[4]];
    let mut u: State = (0..n)
        .map(|c| std::array::from_fn(|v| initial[v][c]))
        .collect();
    for _ in 0..iterations {
        let old = u.clone();
        let step: Vec<f32> = (0..n)
            .map(|c| {
                let (_, _, ss, sound) = pressure(&u[c]);
                0.5 / (mesh.volume[c].sqrt() * (ss.sqrt() + sound))
            })
            .collect();
        for j in 0..RK {
            let mut flux = vec![[0f32; 5]; n];
            for c in 0..n {
                let (pi, _, ssi, ci) = pressure(&u[c]);
                for s in 4 * c..4 * c + 4 {
                    let nrm = [mesh.normal[0][s], mesh.normal[1][s], mesh.normal[2][s]];
                    let nb = mesh.neighbour[s];
                    let mut face = [0f32; 5];
                    if nb == WALL {
                        for a in 0..3 {
                            face[1 + a] = nrm[a] * pi;
                        }
                    } else {
                        let other = if nb == FAR_FIELD { ff } else { u[nb as usize] };
                        if nb != FAR_FIELD {
                            let (_, _, ssn, cn) = pressure(&other);
                            let len = (nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2]).sqrt();
                            let visc = -len * 0.2 * 0.5 * (ssi.sqrt() + ssn.sqrt() + ci + cn);
                            for v in 0..5 {
                                face[v] += visc * (u[c][v] - other[v]);
                            }
                        }
                        for (a, &na) in nrm.iter().enumerate() {
                            let (fi, fo) = (flux_along(&u[c], a), flux_along(&other, a));
                            for v in 0..5 {
                                face[v] += 0.5 * na * (fo[v] + fi[v]);
                            }
                        }
                    }
                    for v in 0..5 {
                        flux[c][v] += face[v];
                    }
                }
            }
            for c in 0..n {
                let f = step[c] / (RK + 1 - j) as f32;
                for v in 0..5 {
                    u[c][v] = old[c][v] + f * flux[c][v];
                }
            }
        }
    }
    std::array::from_fn(|v| u.iter().map(|x| x[v]).collect())
}

/// The free stream with a bump of density and energy, so that the flow
/// moves.
pub use warpfit::apps::perturbed_free_stream as perturbed;

/// The largest difference between two states, relative to each variable's
/// largest magnitude.
pub fn max_relative_difference(a: &[Vec<f32>; 5], b: &[Vec<f32>; 5]) -> f32 {
    let mut worst = 0f32;
    for v in 0..5 {
        let scale = a[v].iter().fold(1e-6f32, |m, x| m.max(x.abs()));
        for (x, y) in a[v].iter().zip(&b[v]) {
            worst = worst.max((x - y).abs() / scale);
        }
    }
    worst
}

/// Asserts that every variable of every cell is the free stream's within
/// `tol` of the largest conserved value.
pub fn assert_free_stream(variables: &[Vec<f32>; 5], tol: f32) {
    let ff = free_stream();
    let scale = ff[..5].iter().fold(0f32, |m, x| m.max(x.abs()));
    for (v, values) in variables.iter().enumerate() {
        for (c, x) in values.iter().enumerate() {
            assert!(
                (x - ff[v]).abs() <= tol * scale,
                "variable {v} of cell {c}: {x} against {}",
                ff[v]
            );
        }
    }
}
