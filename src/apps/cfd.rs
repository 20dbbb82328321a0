//! The seeds' CFD solver: Rodinia's `euler3d`, a cell-centred finite-volume
//! solver of the compressible Euler equations on an unstructured
//! tetrahedral mesh ([`TetMesh`]), in the kernel language.
//!
//! Each cell holds five conserved variables: density, momentum (x, y, z)
//! and energy density, one array each. An iteration saves them, computes
//! each cell's time step ([`fn@cfd_step_factor`]) and takes three
//! Runge-Kutta stages, each [`fn@cfd_flux`] then [`fn@cfd_time_step`].
//! The flux of a cell is a fold of a 5-tuple over its four faces: the
//! centred flux through each face (of the neighbour, or of the free stream
//! on a far-field face) with a scalar artificial viscosity, and the
//! pressure alone on a wall. The state starts as the free stream: Mach
//! 1.2, angle of attack 0, γ = 1.4, density 1.4, pressure 1 (Rodinia's
//! constants, its formulas, its f32 arithmetic and its time step).

use super::throttled::plan_numbering;
use super::timing::{IterationTimes, Timings};
use crate::prelude::*;
use crate::runtime::gen::{TetMesh, FAR_FIELD, WALL};
use crate::{Device, DeviceVec, Error, LaunchConfig, PreparedLaunch, Result};
use std::time::Instant;

/// The ratio of specific heats.
pub const GAMMA: f32 = 1.4;
/// Runge-Kutta stages per iteration.
pub const RK: usize = 3;
/// Rodinia's iteration count.
pub const DEFAULT_ITERATIONS: usize = 2000;

/// The free stream: Mach 1.2 along x, density 1.4, pressure 1, as the
/// conserved variables `[ρ, ρu, ρv, ρw, ρE]` followed by the flux
/// contributions a far-field face reads (`F_x`, `F_y`, `F_z` of the x, y
/// and z momentum, then of the energy: 12 values).
pub fn free_stream() -> [f32; 17] {
    let (density, pressure, mach) = (1.4f32, 1.0f32, 1.2f32);
    let sound = (GAMMA * pressure / density).sqrt();
    let speed = mach * sound;
    let (vx, vy, vz) = (speed, 0.0f32, 0.0f32);
    let (mx, my, mz) = (density * vx, density * vy, density * vz);
    let energy = density * (0.5 * (speed * speed)) + pressure / (GAMMA - 1.0);
    let de_p = energy + pressure;
    [
        density,
        mx,
        my,
        mz,
        energy,
        vx * mx + pressure,
        vx * my,
        vx * mz,
        vx * my,
        vy * my + pressure,
        vy * mz,
        vx * mz,
        vy * mz,
        vz * mz + pressure,
        vx * de_p,
        vy * de_p,
        vz * de_p,
    ]
}

/// The free stream with density and energy raised by up to 30% in every
/// tenth cell (by index): a state whose fluxes are not zero, for
/// [`cfd_from`], the tests and the flux benchmark.
pub fn perturbed_free_stream(n: usize) -> [Vec<f32>; 5] {
    let ff = free_stream();
    std::array::from_fn(|v| {
        (0..n)
            .map(|c| {
                let bump = if c % 10 == 3 {
                    1.0 + 0.05 * (c % 7) as f32
                } else {
                    1.0
                };
                if v == 0 || v == 4 {
                    ff[v] * bump
                } else {
                    ff[v]
                }
            })
            .collect()
    })
}

/// Each cell's time step: `0.5 / (√volume · (|v| + c))`.
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn cfd_step_factor(
    c: usize,
    volume: &[f32],
    density: &[f32],
    mx: &[f32],
    my: &[f32],
    mz: &[f32],
    energy: &[f32],
    step: &mut [f32],
) {
    let d = density[c];
    let (vx, vy, vz) = (mx[c] / d, my[c] / d, mz[c] / d);
    let ss = vx * vx + vy * vy + vz * vz;
    let p = (1.4f32 - 1.0) * (energy[c] - 0.5 * d * ss);
    let sound = (1.4f32 * p / d).sqrt();
    step[c] = 0.5 / (volume[c].sqrt() * (ss.sqrt() + sound));
}

/// The flux of cell `c` through its faces `ptr[c]..ptr[c + 1]`, a fold of
/// `(ρ, ρu, ρv, ρw, ρE)` contributions. `ff` is [`free_stream`].
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn cfd_flux(
    c: usize,
    ptr: &[u32],
    nbr: &[i32],
    nx: &[f32],
    ny: &[f32],
    nz: &[f32],
    density: &[f32],
    mx: &[f32],
    my: &[f32],
    mz: &[f32],
    energy: &[f32],
    ff: &[f32],
    flux_d: &mut [f32],
    flux_mx: &mut [f32],
    flux_my: &mut [f32],
    flux_mz: &mut [f32],
    flux_e: &mut [f32],
) {
    let lo = ptr[c] as usize;
    let hi = ptr[c + 1] as usize;
    let di = density[c];
    let (mxi, myi, mzi, ei) = (mx[c], my[c], mz[c], energy[c]);
    let (vxi, vyi, vzi) = (mxi / di, myi / di, mzi / di);
    let ssi = vxi * vxi + vyi * vyi + vzi * vzi;
    let pi = (1.4f32 - 1.0) * (ei - 0.5 * di * ssi);
    let ci = (1.4f32 * pi / di).sqrt();
    let speed_i = ssi.sqrt();
    let dep_i = ei + pi;
    let (fd, fmx, fmy, fmz, fe) = (lo..hi)
        .map(|k| {
            let nb = nbr[k];
            let (ax, ay, az) = (nx[k], ny[k], nz[k]);
            let (hx, hy, hz) = (0.5 * ax, 0.5 * ay, 0.5 * az);
            if nb >= 0 {
                let j = nb as usize;
                let dn = density[j];
                let (mxn, myn, mzn, en) = (mx[j], my[j], mz[j], energy[j]);
                let (vxn, vyn, vzn) = (mxn / dn, myn / dn, mzn / dn);
                let ssn = vxn * vxn + vyn * vyn + vzn * vzn;
                let pn = (1.4f32 - 1.0) * (en - 0.5 * dn * ssn);
                let cn = (1.4f32 * pn / dn).sqrt();
                let dep_n = en + pn;
                let len = (ax * ax + ay * ay + az * az).sqrt();
                let visc = -len * 0.2 * 0.5 * (speed_i + ssn.sqrt() + ci + cn);
                (
                    visc * (di - dn) + hx * (mxn + mxi) + hy * (myn + myi) + hz * (mzn + mzi),
                    visc * (mxi - mxn)
                        + hx * (vxn * mxn + pn + vxi * mxi + pi)
                        + hy * (vxn * myn + vxi * myi)
                        + hz * (vxn * mzn + vxi * mzi),
                    visc * (myi - myn)
                        + hx * (vxn * myn + vxi * myi)
                        + hy * (vyn * myn + pn + vyi * myi + pi)
                        + hz * (vyn * mzn + vyi * mzi),
                    visc * (mzi - mzn)
                        + hx * (vxn * mzn + vxi * mzi)
                        + hy * (vyn * mzn + vyi * mzi)
                        + hz * (vzn * mzn + pn + vzi * mzi + pi),
                    visc * (ei - en)
                        + hx * (vxn * dep_n + vxi * dep_i)
                        + hy * (vyn * dep_n + vyi * dep_i)
                        + hz * (vzn * dep_n + vzi * dep_i),
                )
            } else if nb == -1 {
                (0.0, ax * pi, ay * pi, az * pi, 0.0)
            } else {
                (
                    hx * (ff[1] + mxi) + hy * (ff[2] + myi) + hz * (ff[3] + mzi),
                    hx * (ff[5] + vxi * mxi + pi)
                        + hy * (ff[6] + vxi * myi)
                        + hz * (ff[7] + vxi * mzi),
                    hx * (ff[8] + vxi * myi)
                        + hy * (ff[9] + vyi * myi + pi)
                        + hz * (ff[10] + vyi * mzi),
                    hx * (ff[11] + vxi * mzi)
                        + hy * (ff[12] + vyi * mzi)
                        + hz * (ff[13] + vzi * mzi + pi),
                    hx * (ff[14] + vxi * dep_i)
                        + hy * (ff[15] + vyi * dep_i)
                        + hz * (ff[16] + vzi * dep_i),
                )
            }
        })
        .fold((0.0, 0.0, 0.0, 0.0, 0.0), |a, b| {
            (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3, a.4 + b.4)
        });
    flux_d[c] = fd;
    flux_mx[c] = fmx;
    flux_my[c] = fmy;
    flux_mz[c] = fmz;
    flux_e[c] = fe;
}

/// [`fn@cfd_flux`] in the throttling shape, the kernel `--throttle` runs:
/// the same flux, with each face's neighbour a `u32` cell (a boundary face
/// names its own cell) and the face's side apart (`side[k]`: [`SIDE_INTERIOR`],
/// [`SIDE_WALL`] or [`SIDE_FAR_FIELD`]), so that every face gathers the
/// five variables at one index (the cell's own state, read in the prologue,
/// is not part of the work graph).
/// A cache-fit partition holds the five variables of its cells; a
/// remapped plan renumbers cells and neighbours by one permutation.
#[nested_reduce]
#[throttled(partitioner = columns)]
#[allow(clippy::too_many_arguments)]
pub fn cfd_flux_faces(
    c: usize,
    ptr: &[u32],
    nbr: &[u32],
    side: &[u8],
    nx: &[f32],
    ny: &[f32],
    nz: &[f32],
    density: &[f32],
    mx: &[f32],
    my: &[f32],
    mz: &[f32],
    energy: &[f32],
    ff: &[f32],
    flux_d: &mut [f32],
    flux_mx: &mut [f32],
    flux_my: &mut [f32],
    flux_mz: &mut [f32],
    flux_e: &mut [f32],
) {
    let lo = ptr[c] as usize;
    let hi = ptr[c + 1] as usize;
    let (di, mxi, myi, mzi, ei) = (density[c], mx[c], my[c], mz[c], energy[c]);
    let (vxi, vyi, vzi) = (mxi / di, myi / di, mzi / di);
    let ssi = vxi * vxi + vyi * vyi + vzi * vzi;
    let pi = (1.4f32 - 1.0) * (ei - 0.5 * di * ssi);
    let ci = (1.4f32 * pi / di).sqrt();
    let speed_i = ssi.sqrt();
    let dep_i = ei + pi;
    let (fd, fmx, fmy, fmz, fe) = (lo..hi)
        .map(|k| {
            let (ax, ay, az) = (nx[k], ny[k], nz[k]);
            let (hx, hy, hz) = (0.5 * ax, 0.5 * ay, 0.5 * az);
            let s = side[k];
            if s == 0 {
                let dn = density[nbr[k] as usize];
                let mxn = mx[nbr[k] as usize];
                let myn = my[nbr[k] as usize];
                let mzn = mz[nbr[k] as usize];
                let en = energy[nbr[k] as usize];
                let (vxn, vyn, vzn) = (mxn / dn, myn / dn, mzn / dn);
                let ssn = vxn * vxn + vyn * vyn + vzn * vzn;
                let pn = (1.4f32 - 1.0) * (en - 0.5 * dn * ssn);
                let cn = (1.4f32 * pn / dn).sqrt();
                let dep_n = en + pn;
                let len = (ax * ax + ay * ay + az * az).sqrt();
                let visc = -len * 0.2 * 0.5 * (speed_i + ssn.sqrt() + ci + cn);
                (
                    visc * (di - dn) + hx * (mxn + mxi) + hy * (myn + myi) + hz * (mzn + mzi),
                    visc * (mxi - mxn)
                        + hx * (vxn * mxn + pn + vxi * mxi + pi)
                        + hy * (vxn * myn + vxi * myi)
                        + hz * (vxn * mzn + vxi * mzi),
                    visc * (myi - myn)
                        + hx * (vxn * myn + vxi * myi)
                        + hy * (vyn * myn + pn + vyi * myi + pi)
                        + hz * (vyn * mzn + vyi * mzi),
                    visc * (mzi - mzn)
                        + hx * (vxn * mzn + vxi * mzi)
                        + hy * (vyn * mzn + vyi * mzi)
                        + hz * (vzn * mzn + pn + vzi * mzi + pi),
                    visc * (ei - en)
                        + hx * (vxn * dep_n + vxi * dep_i)
                        + hy * (vyn * dep_n + vyi * dep_i)
                        + hz * (vzn * dep_n + vzi * dep_i),
                )
            } else if s == 1 {
                (0.0, ax * pi, ay * pi, az * pi, 0.0)
            } else {
                (
                    hx * (ff[1] + mxi) + hy * (ff[2] + myi) + hz * (ff[3] + mzi),
                    hx * (ff[5] + vxi * mxi + pi)
                        + hy * (ff[6] + vxi * myi)
                        + hz * (ff[7] + vxi * mzi),
                    hx * (ff[8] + vxi * myi)
                        + hy * (ff[9] + vyi * myi + pi)
                        + hz * (ff[10] + vyi * mzi),
                    hx * (ff[11] + vxi * mzi)
                        + hy * (ff[12] + vyi * mzi)
                        + hz * (ff[13] + vzi * mzi + pi),
                    hx * (ff[14] + vxi * dep_i)
                        + hy * (ff[15] + vyi * dep_i)
                        + hz * (ff[16] + vzi * dep_i),
                )
            }
        })
        .fold((0.0, 0.0, 0.0, 0.0, 0.0), |a, b| {
            (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3, a.4 + b.4)
        });
    flux_d[c] = fd;
    flux_mx[c] = fmx;
    flux_my[c] = fmy;
    flux_mz[c] = fmz;
    flux_e[c] = fe;
}

/// `side[k]` of [`fn@cfd_flux_faces`]: a face between two cells.
pub const SIDE_INTERIOR: u8 = 0;
/// `side[k]`: a wall face (the pressure alone).
pub const SIDE_WALL: u8 = 1;
/// `side[k]`: a far-field face (the free stream beyond it).
pub const SIDE_FAR_FIELD: u8 = 2;

/// A mesh's faces in [`fn@cfd_flux_faces`]'s form: per slot the cell across
/// (the slot's own cell on a boundary face) and the face's side.
///
/// # Errors
/// A neighbour slot below zero other than [`WALL`] and [`FAR_FIELD`].
pub fn faces(mesh: &TetMesh) -> Result<(Vec<u32>, Vec<u8>)> {
    mesh.neighbour
        .iter()
        .enumerate()
        .map(|(slot, &nb)| match nb {
            WALL => Ok(((slot / 4) as u32, SIDE_WALL)),
            FAR_FIELD => Ok(((slot / 4) as u32, SIDE_FAR_FIELD)),
            nb => u32::try_from(nb).map(|nb| (nb, SIDE_INTERIOR)).map_err(|_| {
                Error::invalid(format!(
                    "cfd: cell {}, face {}: neighbour {nb} is neither a cell nor {WALL} (wall) or {FAR_FIELD} (far field)",
                    slot / 4,
                    slot % 4
                ))
            }),
        })
        .collect::<Result<Vec<_>>>()
        .map(|v| v.into_iter().unzip())
}

/// One Runge-Kutta stage: `U = U_old + step / stages_left · flux`, the
/// five variables at once.
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn cfd_time_step(
    c: usize,
    stages_left: f32,
    step: &[f32],
    od: &[f32],
    omx: &[f32],
    omy: &[f32],
    omz: &[f32],
    oe: &[f32],
    fd: &[f32],
    fmx: &[f32],
    fmy: &[f32],
    fmz: &[f32],
    fe: &[f32],
    d: &mut [f32],
    mx: &mut [f32],
    my: &mut [f32],
    mz: &mut [f32],
    e: &mut [f32],
) {
    let f = step[c] / stages_left;
    d[c] = od[c] + f * fd[c];
    mx[c] = omx[c] + f * fmx[c];
    my[c] = omy[c] + f * fmy[c];
    mz[c] = omz[c] + f * fmz[c];
    e[c] = oe[c] + f * fe[c];
}

/// Saves the five variables: `o* = *`.
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn cfd_save(
    c: usize,
    d: &[f32],
    mx: &[f32],
    my: &[f32],
    mz: &[f32],
    e: &[f32],
    od: &mut [f32],
    omx: &mut [f32],
    omy: &mut [f32],
    omz: &mut [f32],
    oe: &mut [f32],
) {
    od[c] = d[c];
    omx[c] = mx[c];
    omy[c] = my[c];
    omz[c] = mz[c];
    oe[c] = e[c];
}

/// The solver's state after [`cfd`].
#[derive(Debug, Clone)]
pub struct CfdResult {
    /// Per cell `[ρ, ρu, ρv, ρw, ρE]`, one vector per variable.
    pub variables: [Vec<f32>; 5],
    /// Upload and preparation; one time per iteration.
    pub timings: Timings,
    /// The throttled flux's plan and schedule ([`cfd_throttled`]).
    pub throttle: Option<CfdThrottled>,
}

/// What a throttled run ([`cfd_throttled`]) ran.
#[derive(Debug, Clone)]
pub struct CfdThrottled {
    /// The flux handle's report: the plan and the schedule chosen.
    pub report: crate::ThrottleReport,
    /// Whether the solver ran in the plan's numbering from its second
    /// iteration (a remapped schedule: the cells renumbered once, not
    /// permuted around every flux).
    pub renumbered: bool,
}

/// Runs `iterations` iterations of the solver on `mesh` from the free
/// stream, on `device`; `config` runs the flux (the other steps are
/// per-cell maps).
///
/// # Errors
/// A mesh [`TetMesh::check`] refuses or of more slots than u32 holds;
/// device errors and faults.
pub fn cfd(
    device: &Device,
    config: &LaunchConfig,
    mesh: &TetMesh,
    iterations: usize,
) -> Result<CfdResult> {
    cfd_observed(device, config, mesh, iterations, &mut |_| {})
}

/// [`cfd`], calling `on_iteration(i)` after each iteration.
pub fn cfd_observed(
    device: &Device,
    config: &LaunchConfig,
    mesh: &TetMesh,
    iterations: usize,
    on_iteration: &mut dyn FnMut(usize),
) -> Result<CfdResult> {
    let initial = free_stream_state(mesh.cells());
    cfd_from(device, config, mesh, &initial, iterations, on_iteration)
}

/// The free stream in each of `cells` cells: the solver's initial state.
pub fn free_stream_state(cells: usize) -> [Vec<f32>; 5] {
    let ff = free_stream();
    std::array::from_fn(|v| vec![ff[v]; cells])
}

/// The device state of a run: the variables, their saved copy, the
/// fluxes, the time steps, the volumes and the free stream.
struct Fields {
    u: [DeviceVec<f32>; 5],
    old: [DeviceVec<f32>; 5],
    flux: [DeviceVec<f32>; 5],
    step: DeviceVec<f32>,
    volume: DeviceVec<f32>,
    ff: DeviceVec<f32>,
}

/// The launches of an iteration other than the flux: save, time steps,
/// one update per Runge-Kutta stage.
struct Steps<'f> {
    save: PreparedLaunch<'f>,
    steps: PreparedLaunch<'f>,
    stages: Vec<PreparedLaunch<'f>>,
}

impl Fields {
    /// Checks `mesh` and `initial` and uploads them.
    fn upload(device: &Device, mesh: &TetMesh, initial: &[Vec<f32>; 5]) -> Result<Self> {
        mesh.check()?;
        let n = mesh.cells();
        if let Some(v) = initial.iter().position(|v| v.len() != n) {
            return Err(Error::invalid(format!(
                "cfd: initial variable {v} has {} values for {n} cells",
                initial[v].len()
            )));
        }
        crate::runtime::error::to_u32("cfd face slots", 4 * n)?;
        let five = |f: &dyn Fn(usize) -> Result<DeviceVec<f32>>| -> Result<[DeviceVec<f32>; 5]> {
            Ok([f(0)?, f(1)?, f(2)?, f(3)?, f(4)?])
        };
        Ok(Fields {
            u: five(&|v| device.upload(&initial[v]))?,
            old: five(&|_| device.alloc(n))?,
            flux: five(&|_| device.alloc(n))?,
            step: device.alloc(n)?,
            volume: device.upload(&mesh.volume)?,
            ff: device.upload(&free_stream())?,
        })
    }

    /// The per-cell launches over these fields.
    fn steps(&self, device: &Device) -> Result<Steps<'_>> {
        let n = self.step.len();
        let map = LaunchConfig::default();
        let [d, mx, my, mz, e] = &self.u;
        let [od, omx, omy, omz, oe] = &self.old;
        let [fd, fmx, fmy, fmz, fe] = &self.flux;
        let save = cfd_save::prepare(device, &map, n, d, mx, my, mz, e, od, omx, omy, omz, oe)?;
        let steps =
            cfd_step_factor::prepare(device, &map, n, &self.volume, d, mx, my, mz, e, &self.step)?;
        let stages = (0..RK)
            .map(|j| {
                let left = (RK + 1 - j) as f32;
                cfd_time_step::prepare(
                    device, &map, n, left, &self.step, od, omx, omy, omz, oe, fd, fmx, fmy, fmz,
                    fe, d, mx, my, mz, e,
                )
            })
            .collect::<Result<_>>()?;
        Ok(Steps {
            save,
            steps,
            stages,
        })
    }

    /// The variables, downloaded; in the given numbering by `position`
    /// (`position[old] = new`) when the run was renumbered.
    fn download(
        &mut self,
        device: &Device,
        position: Option<&DeviceVec<u32>>,
    ) -> Result<[Vec<f32>; 5]> {
        let mut out: [Vec<f32>; 5] = Default::default();
        for (v, slot) in out.iter_mut().enumerate() {
            *slot = match position {
                None => self.u[v].to_vec()?,
                Some(p) => {
                    let n = p.len();
                    super::kernels::permute::f32::launch(
                        device,
                        n,
                        p,
                        &self.u[v],
                        &mut self.flux[v],
                    )?;
                    self.flux[v].to_vec()?
                }
            };
        }
        Ok(out)
    }

    /// Renumbers the variables and the volumes by `order` (`order[new] =
    /// old`), through the fluxes and time steps as scratch (both are
    /// recomputed before they are next read).
    fn renumber(&mut self, device: &Device, order: &DeviceVec<u32>) -> Result<()> {
        let n = order.len();
        for v in 0..5 {
            super::kernels::permute::f32::launch(device, n, order, &self.u[v], &mut self.flux[v])?;
            super::kernels::copy::f32::launch(device, n, &self.flux[v], &mut self.u[v])?;
        }
        super::kernels::permute::f32::launch(device, n, order, &self.volume, &mut self.step)?;
        super::kernels::copy::f32::launch(device, n, &self.step, &mut self.volume)?;
        Ok(())
    }
}

impl Steps<'_> {
    /// One iteration, `flux` run before each stage's update.
    fn iteration(&self, flux: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        self.save.run()?;
        self.steps.run()?;
        for stage in &self.stages {
            flux()?;
            stage.run()?;
        }
        Ok(())
    }
}

/// [`cfd_observed`] from the state `initial` (`[ρ, ρu, ρv, ρw, ρE]` per
/// cell) instead of the free stream; the far field is the free stream.
///
/// # Errors
/// Those of [`cfd`], and an initial state whose vectors are not one value
/// per cell.
pub fn cfd_from(
    device: &Device,
    config: &LaunchConfig,
    mesh: &TetMesh,
    initial: &[Vec<f32>; 5],
    iterations: usize,
    on_iteration: &mut dyn FnMut(usize),
) -> Result<CfdResult> {
    let setup_start = Instant::now();
    let mut f = Fields::upload(device, mesh, initial)?;
    let n = mesh.cells();
    let ptr: Vec<u32> = (0..=n as u32).map(|c| 4 * c).collect();
    let up = |a: &[f32]| device.upload(a);
    let (ptr, nbr) = (device.upload(&ptr)?, device.upload(&mesh.neighbour)?);
    let [nx, ny, nz] = [
        up(&mesh.normal[0])?,
        up(&mesh.normal[1])?,
        up(&mesh.normal[2])?,
    ];
    let mut times = IterationTimes::new();
    let setup;
    {
        let steps = f.steps(device)?;
        let [d, mx, my, mz, e] = &f.u;
        let [fd, fmx, fmy, fmz, fe] = &f.flux;
        let fluxes = cfd_flux::prepare(
            device, config, n, &ptr, &nbr, &nx, &ny, &nz, d, mx, my, mz, e, &f.ff, fd, fmx, fmy,
            fmz, fe,
        )?;
        setup = setup_start.elapsed();
        for i in 0..iterations {
            let t = Instant::now();
            steps.iteration(&mut || fluxes.run())?;
            device.synchronize()?;
            times.push(t.elapsed());
            on_iteration(i + 1);
        }
    }
    Ok(CfdResult {
        variables: f.download(device, None)?,
        timings: Timings::new(setup, times),
        throttle: None,
    })
}

/// [`cfd_from`] with the flux throttled ([`fn@cfd_flux_faces`] under
/// `options`; `auto` by default, the model's choice on CUDA). When the
/// schedule renumbers cells (a remapped plan, such as the level order on a
/// randomly numbered mesh), the first iteration runs in the mesh's
/// numbering and the rest in the plan's: the variables and volumes are
/// renumbered once and the result numbered back at the end. The CPU
/// backend runs the flux's twin under every policy.
///
/// # Errors
/// Those of [`cfd_from`], and of the throttled handle (invalid options).
pub fn cfd_throttled(
    device: &Device,
    options: &crate::ThrottleOptions,
    mesh: &TetMesh,
    initial: &[Vec<f32>; 5],
    iterations: usize,
    on_iteration: &mut dyn FnMut(usize),
) -> Result<CfdResult> {
    let setup_start = Instant::now();
    let mut f = Fields::upload(device, mesh, initial)?;
    let n = mesh.cells();
    let ptr: Vec<u32> = (0..=n as u32).map(|c| 4 * c).collect();
    let (nbr, side) = faces(mesh)?;
    let [nx, ny, nz] = &mesh.normal;
    let mut t = if device.cuda().is_some() && !crate::Throttled::needs_work_graph(device, options) {
        let up = |a: &[f32]| device.upload(a);
        cfd_flux_faces::throttle_resident(
            device,
            options,
            n,
            n,
            &device.upload(&ptr)?,
            &device.upload(&nbr)?,
            &device.upload(&side)?,
            &up(nx)?,
            &up(ny)?,
            &up(nz)?,
        )?
    } else {
        cfd_flux_faces::throttle(device, options, n, n, &ptr, &nbr, &side, nx, ny, nz)?
    };
    let mut times = IterationTimes::new();
    let mut setup = setup_start.elapsed();
    let mut done = 0;
    let mut order = None;
    // The first iteration in the mesh's numbering: `auto` decides at its
    // first flux.
    if iterations > 0 {
        let steps = f.steps(device)?;
        setup = setup_start.elapsed();
        let started = Instant::now();
        let [d, mx, my, mz, e] = &f.u;
        let [fd, fmx, fmy, fmz, fe] = &f.flux;
        steps.iteration(&mut || t.enqueue(d, mx, my, mz, e, &f.ff, fd, fmx, fmy, fmz, fe))?;
        device.synchronize()?;
        t.check()?;
        drop(steps);
        // A remapped schedule: the rest in the plan's numbering, the
        // renumbering counted in this iteration.
        if iterations > 1 {
            order = plan_numbering(device, t.device_level_order()?, || {
                t.plan_order().map(|p| p.tasks.to_vec())
            })?;
        }
        if let Some((o, _)) = &order {
            f.renumber(device, o)?;
            device.synchronize()?;
        }
        times.push(started.elapsed());
        done = 1;
        on_iteration(1);
    }
    {
        let steps = f.steps(device)?;
        let [d, mx, my, mz, e] = &f.u;
        let [fd, fmx, fmy, fmz, fe] = &f.flux;
        let renumbered = order.is_some();
        for i in done..iterations {
            let started = Instant::now();
            steps.iteration(&mut || match renumbered {
                true => t.enqueue_in_plan_order(d, mx, my, mz, e, &f.ff, fd, fmx, fmy, fmz, fe),
                false => t.enqueue(d, mx, my, mz, e, &f.ff, fd, fmx, fmy, fmz, fe),
            })?;
            device.synchronize()?;
            t.check()?;
            times.push(started.elapsed());
            on_iteration(i + 1);
        }
    }
    Ok(CfdResult {
        variables: f.download(device, order.as_ref().map(|(_, position)| position))?,
        timings: Timings::new(setup, times),
        throttle: Some(CfdThrottled {
            report: t.report().clone(),
            renumbered: order.is_some(),
        }),
    })
}

/// Checks that a mesh's variables are numbers: a solver that blew up (a
/// mesh too coarse for its time step) says where.
pub fn first_non_finite(r: &CfdResult) -> Option<(usize, usize)> {
    r.variables
        .iter()
        .enumerate()
        .find_map(|(v, a)| a.iter().position(|x| !x.is_finite()).map(|c| (c, v)))
}

/// An error for a solution that is not finite, naming the cell.
pub fn check_finite(r: &CfdResult) -> Result<()> {
    match first_non_finite(r) {
        None => Ok(()),
        Some((c, v)) => Err(Error::invalid(format!(
            "cfd: variable {v} of cell {c} is not finite: the solution blew up"
        ))),
    }
}
