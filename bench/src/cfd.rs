//! The CFD flux against a hand-written one: the generated
//! [`cfd_flux`](fn@warpfit::apps::cfd_flux) (a 5-tuple fold over each cell's
//! faces) against a CUDA kernel written the way Rodinia's `compute_flux`
//! is: structure of arrays (`neighbour[j·n + c]`, `normal[(j + 4·axis)·n +
//! c]`), one thread per cell, its four faces unrolled, the same
//! arithmetic. Both read the same state (the free stream with a bump of
//! density and energy in a tenth of the cells, so that no flux is zero);
//! the baseline's fluxes are checked against the generated kernel's CPU
//! twin first, then each kernel is timed with CUDA events (L2 flushed
//! before each run). Beside them: the flux in the throttling shape
//! ([`cfd_flux_faces`](fn@warpfit::apps::cfd_flux_faces)) unthrottled, and
//! throttled by `auto`'s choice, timed as the solver runs it (in the plan's
//! numbering when the plan renumbers cells: the state renumbered once).

use crate::input::{median, timed_runs};
use cudarc::driver::{LaunchConfig as Grid, PushKernelArg};
use std::fmt::Write as _;
use warpfit::__private::compile::compile_uncached;
use warpfit::__private::EventTimer;
use warpfit::apps::{cfd_flux, cfd_flux_faces, faces, free_stream, perturbed_free_stream};
use warpfit::runtime::gen::{tetmesh, MeshOrder, TetMesh};
use warpfit::{CudaDevice, Decomposition, Device, DeviceVec, Error, LaunchConfig, Result};

/// Rodinia's `compute_flux`, structure of arrays, one thread per cell.
pub const BASELINE_CUDA: &str = r#"
extern "C" __global__ void __launch_bounds__(192) rodinia_flux(
    int n, const int* __restrict__ nbr, const float* __restrict__ normals,
    const float* __restrict__ d, const float* __restrict__ mx, const float* __restrict__ my,
    const float* __restrict__ mz, const float* __restrict__ e, const float* __restrict__ ff,
    float* fd, float* fmx, float* fmy, float* fmz, float* fe) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float di = d[i], mxi = mx[i], myi = my[i], mzi = mz[i], ei = e[i];
    const float vxi = mxi / di, vyi = myi / di, vzi = mzi / di;
    const float ssi = vxi * vxi + vyi * vyi + vzi * vzi;
    const float pi = (1.4f - 1.0f) * (ei - 0.5f * di * ssi);
    const float ci = sqrtf(1.4f * pi / di);
    const float speed_i = sqrtf(ssi);
    const float dep_i = ei + pi;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int nb = nbr[i + j * n];
        const float ax = normals[i + j * n], ay = normals[i + (j + 4) * n], az = normals[i + (j + 8) * n];
        const float hx = 0.5f * ax, hy = 0.5f * ay, hz = 0.5f * az;
        if (nb >= 0) {
            const float dn = d[nb], mxn = mx[nb], myn = my[nb], mzn = mz[nb], en = e[nb];
            const float vxn = mxn / dn, vyn = myn / dn, vzn = mzn / dn;
            const float ssn = vxn * vxn + vyn * vyn + vzn * vzn;
            const float pn = (1.4f - 1.0f) * (en - 0.5f * dn * ssn);
            const float cn = sqrtf(1.4f * pn / dn);
            const float dep_n = en + pn;
            const float len = sqrtf(ax * ax + ay * ay + az * az);
            const float visc = -len * 0.2f * 0.5f * (speed_i + sqrtf(ssn) + ci + cn);
            a0 += visc * (di - dn) + hx * (mxn + mxi) + hy * (myn + myi) + hz * (mzn + mzi);
            a1 += visc * (mxi - mxn) + hx * (vxn * mxn + pn + vxi * mxi + pi) + hy * (vxn * myn + vxi * myi)
                + hz * (vxn * mzn + vxi * mzi);
            a2 += visc * (myi - myn) + hx * (vxn * myn + vxi * myi) + hy * (vyn * myn + pn + vyi * myi + pi)
                + hz * (vyn * mzn + vyi * mzi);
            a3 += visc * (mzi - mzn) + hx * (vxn * mzn + vxi * mzi) + hy * (vyn * mzn + vyi * mzi)
                + hz * (vzn * mzn + pn + vzi * mzi + pi);
            a4 += visc * (ei - en) + hx * (vxn * dep_n + vxi * dep_i) + hy * (vyn * dep_n + vyi * dep_i)
                + hz * (vzn * dep_n + vzi * dep_i);
        } else if (nb == -1) {
            a1 += ax * pi;
            a2 += ay * pi;
            a3 += az * pi;
        } else {
            a0 += hx * (ff[1] + mxi) + hy * (ff[2] + myi) + hz * (ff[3] + mzi);
            a1 += hx * (ff[5] + vxi * mxi + pi) + hy * (ff[6] + vxi * myi) + hz * (ff[7] + vxi * mzi);
            a2 += hx * (ff[8] + vxi * myi) + hy * (ff[9] + vyi * myi + pi) + hz * (ff[10] + vyi * mzi);
            a3 += hx * (ff[11] + vxi * mzi) + hy * (ff[12] + vyi * mzi) + hz * (ff[13] + vzi * mzi + pi);
            a4 += hx * (ff[14] + vxi * dep_i) + hy * (ff[15] + vyi * dep_i) + hz * (ff[16] + vzi * dep_i);
        }
    }
    fd[i] = a0; fmx[i] = a1; fmy[i] = a2; fmz[i] = a3; fe[i] = a4;
}
"#;

/// One mesh's timings (ms, medians).
#[derive(Debug, Clone)]
pub struct CfdRow {
    pub label: String,
    pub cells: usize,
    pub baseline_ms: f64,
    /// `(decomposition name, median ms)` of the generated flux.
    pub generated: Vec<(String, f64)>,
    /// `auto`'s choice for the throttled flux: the schedule, its planning
    /// and first-launch time (ms), and what the model said.
    pub throttled: Option<ThrottledChoice>,
}

/// What `auto` chose for the throttled flux and what the choice cost.
#[derive(Debug, Clone)]
pub struct ThrottledChoice {
    pub schedule: String,
    pub planning_ms: f64,
    pub first_launch_ms: f64,
    pub reason: String,
}

/// `out` against the CPU twin's fluxes `want`, within 1e-4 of each
/// variable's largest flux.
fn check_against(out: &[DeviceVec<f32>; 5], want: &[Vec<f32>; 5], what: &str) -> Result<()> {
    for (v, (o, w)) in out.iter().zip(want).enumerate() {
        let got = o.to_vec()?;
        let scale = w.iter().fold(1e-6f32, |m, x| m.max(x.abs()));
        if let Some(c) = got
            .iter()
            .zip(w)
            .position(|(g, w)| (g - w).abs() > 1e-4 * scale)
        {
            return Err(Error::invalid(format!(
                "cfd bench: {what}: variable {v} of cell {c} is {} against the CPU twin's {}",
                got[c], w[c]
            )));
        }
    }
    Ok(())
}

/// The baseline's layout: neighbours and normals by face, then cell.
fn by_face(mesh: &TetMesh) -> (Vec<i32>, Vec<f32>) {
    let n = mesh.cells();
    let mut nbr = vec![0i32; 4 * n];
    let mut normals = vec![0f32; 12 * n];
    for c in 0..n {
        for j in 0..4 {
            nbr[j * n + c] = mesh.neighbour[4 * c + j];
            for a in 0..3 {
                normals[(j + 4 * a) * n + c] = mesh.normal[a][4 * c + j];
            }
        }
    }
    (nbr, normals)
}

fn ptr_of(v: &DeviceVec<impl warpfit::Scalar>, what: &str) -> Result<u64> {
    v.cuda_ptr()
        .ok_or_else(|| Error::invalid(format!("cfd bench: {what} is not on a CUDA device")))
}

/// Times the flux of `side³ · 6`-cell meshes in natural and random order:
/// the baseline, then the generated kernel under each of `decompositions`.
///
/// # Errors
/// No CUDA device, a baseline whose fluxes differ from the CPU twin's by
/// more than 1e-4 of each variable's largest flux, device errors.
pub fn run_cfd(
    device: &Device,
    side: usize,
    decompositions: &[Decomposition],
    warmup: usize,
    runs: usize,
) -> Result<Vec<CfdRow>> {
    let cuda = device.cuda().ok_or_else(|| {
        Error::invalid("the cfd bench times CUDA kernels and needs an NVIDIA GPU")
    })?;
    let compiled = compile_uncached("rodinia_flux", BASELINE_CUDA, cuda.arch())?;
    let module = cuda
        .context()
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
        .map_err(|e| Error::invalid(format!("loading the baseline flux: {e}")))?;
    let func = module
        .load_function("rodinia_flux")
        .map_err(|e| Error::invalid(format!("the baseline flux: {e}")))?;
    let timer = EventTimer::new(cuda)?;
    let mut rows = Vec::new();
    for order in [MeshOrder::Natural, MeshOrder::Random] {
        let mesh = tetmesh(side, order, 1)?;
        let label = format!(
            "tetmesh:side={side},order={}",
            if order == MeshOrder::Natural {
                "natural"
            } else {
                "random"
            }
        );
        let row = time_mesh(
            device,
            cuda,
            &func,
            &timer,
            &mesh,
            decompositions,
            warmup,
            runs,
        )?;
        rows.push(CfdRow { label, ..row });
    }
    Ok(rows)
}

/// Times one mesh's flux kernels, each checked first: the baseline, the
/// generated flux in both shapes, and the throttled flux (label left empty).
#[allow(clippy::too_many_arguments)]
fn time_mesh(
    device: &Device,
    cuda: &CudaDevice,
    func: &cudarc::driver::CudaFunction,
    timer: &EventTimer,
    mesh: &TetMesh,
    decompositions: &[Decomposition],
    warmup: usize,
    runs: usize,
) -> Result<CfdRow> {
    let n = mesh.cells();
    let state = perturbed_free_stream(n);
    let ff = free_stream();
    let ptr: Vec<u32> = (0..=n as u32).map(|c| 4 * c).collect();
    let bench = MeshBench {
        device,
        timer,
        cells: n,
        want: cpu_fluxes(mesh, &ptr, &state, &ff)?,
        warmup,
        runs,
    };
    let arrays = FluxArrays::upload(device, &state, &ff)?;
    let baseline_ms = time_baseline(&bench, cuda, func, mesh, &arrays)?;
    let (ptr_d, nbr_d) = (device.upload(&ptr)?, device.upload(&mesh.neighbour)?);
    let up = |a: &[f32]| device.upload(a);
    let normal = [
        up(&mesh.normal[0])?,
        up(&mesh.normal[1])?,
        up(&mesh.normal[2])?,
    ];
    let mut generated = time_generated(&bench, (&ptr_d, &nbr_d), &normal, &arrays, decompositions)?;
    let (nbr_u, side) = faces(mesh)?;
    let (nbr_u, side) = (device.upload(&nbr_u)?, device.upload(&side)?);
    generated.extend(time_faces(
        &bench,
        (&ptr_d, &nbr_u, &side),
        &normal,
        &arrays,
        decompositions,
    )?);
    let [d, mx, my, mz, e] = &arrays.state;
    let [nx, ny, nz] = &normal;
    let (ms, choice) = time_throttled(
        device,
        timer,
        [&ptr_d, &nbr_u],
        &side,
        [nx, ny, nz],
        (&state, [d, mx, my, mz, e]),
        &arrays.ff,
        &arrays.out,
        &bench.want,
        (warmup, runs),
    )?;
    generated.push((format!("throttled auto: {}", choice.schedule), ms));
    Ok(CfdRow {
        label: String::new(),
        cells: n,
        baseline_ms,
        generated,
        throttled: Some(choice),
    })
}

/// What every kernel timed on one mesh shares: the device, the timer, the
/// mesh's cell count, the CPU twin's fluxes each is checked against, and
/// the run counts.
struct MeshBench<'a> {
    device: &'a Device,
    timer: &'a EventTimer,
    cells: usize,
    want: [Vec<f32>; 5],
    warmup: usize,
    runs: usize,
}

impl MeshBench<'_> {
    /// Runs `run` once, checks `out` against the CPU twin (as `what`), then
    /// returns the median ms of the timed runs (0 where there is none).
    fn checked_median(
        &self,
        out: &[DeviceVec<f32>; 5],
        what: &str,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<f64> {
        run()?;
        check_against(out, &self.want, what)?;
        Ok(median(&timed_runs(Some(self.timer), self.warmup, self.runs, run)?).unwrap_or(0.0))
    }
}

/// The flux's inputs and outputs on the device: the five state variables,
/// the free stream and the five fluxes.
struct FluxArrays {
    state: [DeviceVec<f32>; 5],
    ff: DeviceVec<f32>,
    out: [DeviceVec<f32>; 5],
}

impl FluxArrays {
    /// Uploads `state` and `ff` and allocates the fluxes.
    fn upload(device: &Device, state: &[Vec<f32>; 5], ff: &[f32]) -> Result<Self> {
        let n = state[0].len();
        let up = |a: &[f32]| device.upload(a);
        let state = [
            up(&state[0])?,
            up(&state[1])?,
            up(&state[2])?,
            up(&state[3])?,
            up(&state[4])?,
        ];
        let out: [DeviceVec<f32>; 5] = [
            device.alloc(n)?,
            device.alloc(n)?,
            device.alloc(n)?,
            device.alloc(n)?,
            device.alloc(n)?,
        ];
        let ff = up(ff)?;
        Ok(FluxArrays { state, ff, out })
    }
}

/// The CPU twin's fluxes: what every GPU kernel is checked against.
fn cpu_fluxes(
    mesh: &TetMesh,
    ptr: &[u32],
    state: &[Vec<f32>; 5],
    ff: &[f32],
) -> Result<[Vec<f32>; 5]> {
    let n = mesh.cells();
    let cpu = Device::cpu();
    let mut want: [Vec<f32>; 5] = std::array::from_fn(|_| vec![0.0; n]);
    let [wd, wmx, wmy, wmz, we] = &mut want;
    cfd_flux::launch(
        &cpu,
        n,
        ptr,
        &mesh.neighbour,
        &mesh.normal[0],
        &mesh.normal[1],
        &mesh.normal[2],
        &state[0],
        &state[1],
        &state[2],
        &state[3],
        &state[4],
        ff,
        &mut wd[..],
        &mut wmx[..],
        &mut wmy[..],
        &mut wmz[..],
        &mut we[..],
    )?;
    Ok(want)
}

/// The Rodinia-style baseline on the mesh in its by-face layout: checked,
/// then its median ms.
fn time_baseline(
    bench: &MeshBench,
    cuda: &CudaDevice,
    func: &cudarc::driver::CudaFunction,
    mesh: &TetMesh,
    arrays: &FluxArrays,
) -> Result<f64> {
    let n = bench.cells;
    let (nbr_t, normals_t) = by_face(mesh);
    let (nbr_d, normals_d) = (
        bench.device.upload(&nbr_t)?,
        bench.device.upload(&normals_t)?,
    );
    let p = |v: &DeviceVec<f32>| ptr_of(v, "an array");
    let ([d, mx, my, mz, e], out) = (&arrays.state, &arrays.out);
    let args: [u64; 13] = [
        ptr_of(&nbr_d, "neighbours")?,
        p(&normals_d)?,
        p(d)?,
        p(mx)?,
        p(my)?,
        p(mz)?,
        p(e)?,
        p(&arrays.ff)?,
        p(&out[0])?,
        p(&out[1])?,
        p(&out[2])?,
        p(&out[3])?,
        p(&out[4])?,
    ];
    let n_i32 =
        i32::try_from(n).map_err(|_| Error::invalid("cfd bench: more cells than i32 holds"))?;
    let grid = Grid {
        grid_dim: ((n as u32).div_ceil(192).max(1), 1, 1),
        block_dim: (192, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut baseline = || -> Result<()> {
        let mut b = cuda.stream().launch_builder(func);
        b.arg(&n_i32);
        for a in &args {
            b.arg(a);
        }
        // SAFETY: the arguments are the kernel's parameters in order (an
        // int, then 13 device pointers to arrays of the lengths it reads).
        unsafe { b.launch(grid) }
            .map(|_| ())
            .map_err(|e| Error::invalid(format!("launching the baseline flux: {e}")))
    };
    bench.checked_median(out, "the baseline", &mut baseline)
}

/// The generated flux (each cell folding over its faces) under each of
/// `decompositions`, each checked, then its name and median ms.
fn time_generated(
    bench: &MeshBench,
    (ptr, nbr): (&DeviceVec<u32>, &DeviceVec<i32>),
    [nx, ny, nz]: &[DeviceVec<f32>; 3],
    arrays: &FluxArrays,
    decompositions: &[Decomposition],
) -> Result<Vec<(String, f64)>> {
    let ([d, mx, my, mz, e], out) = (&arrays.state, &arrays.out);
    let mut generated = Vec::new();
    for &dec in decompositions {
        let launch = cfd_flux::prepare(
            bench.device,
            &LaunchConfig::new(dec),
            bench.cells,
            ptr,
            nbr,
            nx,
            ny,
            nz,
            d,
            mx,
            my,
            mz,
            e,
            &arrays.ff,
            &out[0],
            &out[1],
            &out[2],
            &out[3],
            &out[4],
        )?;
        let what = format!("the generated flux ({dec:?})");
        let ms = bench.checked_median(out, &what, &mut || launch.run())?;
        generated.push((format!("{dec:?}").to_lowercase(), ms));
    }
    Ok(generated)
}

/// The flux in the throttling shape (unsigned neighbours, each face's
/// side) under each of `decompositions`, unthrottled, each checked, then
/// its name and median ms.
fn time_faces(
    bench: &MeshBench,
    (ptr, nbr, side): (&DeviceVec<u32>, &DeviceVec<u32>, &DeviceVec<u8>),
    [nx, ny, nz]: &[DeviceVec<f32>; 3],
    arrays: &FluxArrays,
    decompositions: &[Decomposition],
) -> Result<Vec<(String, f64)>> {
    let ([d, mx, my, mz, e], out) = (&arrays.state, &arrays.out);
    let mut generated = Vec::new();
    for &dec in decompositions {
        let launch = cfd_flux_faces::prepare(
            bench.device,
            &LaunchConfig::new(dec),
            bench.cells,
            ptr,
            nbr,
            side,
            nx,
            ny,
            nz,
            d,
            mx,
            my,
            mz,
            e,
            &arrays.ff,
            &out[0],
            &out[1],
            &out[2],
            &out[3],
            &out[4],
        )?;
        let what = format!("faces, {dec:?}").to_lowercase();
        let check = format!("the generated flux ({what})");
        let ms = bench.checked_median(out, &check, &mut || launch.run())?;
        generated.push((what, ms));
    }
    Ok(generated)
}

/// The flux throttled by `auto` (L2, the model's choice), checked, then
/// timed as [`cfd_throttled`](warpfit::apps::cfd_throttled) runs it: in the
/// plan's numbering over the state renumbered once where the plan
/// renumbers cells, else in the mesh's.
#[allow(clippy::too_many_arguments)]
fn time_throttled(
    device: &Device,
    timer: &EventTimer,
    [ptr, nbr]: [&DeviceVec<u32>; 2],
    side: &DeviceVec<u8>,
    [nx, ny, nz]: [&DeviceVec<f32>; 3],
    (state, [d, mx, my, mz, e]): (&[Vec<f32>; 5], [&DeviceVec<f32>; 5]),
    ffd: &DeviceVec<f32>,
    out: &[DeviceVec<f32>; 5],
    want: &[Vec<f32>; 5],
    (warmup, runs): (usize, usize),
) -> Result<(f64, ThrottledChoice)> {
    let n = state[0].len();
    let options = cfd_flux_faces::throttle_options()?;
    let planned = std::time::Instant::now();
    let mut t =
        cfd_flux_faces::throttle_resident(device, &options, n, n, ptr, nbr, side, nx, ny, nz)?;
    let planning_ms = planned.elapsed().as_secs_f64() * 1e3;
    let first = std::time::Instant::now();
    let [o0, o1, o2, o3, o4] = out;
    t.enqueue(d, mx, my, mz, e, ffd, o0, o1, o2, o3, o4)?;
    t.check()?;
    let first_launch_ms = first.elapsed().as_secs_f64() * 1e3;
    check_against(out, want, "the throttled flux (first launch)")?;
    let report = t.report().clone();
    let reason = report
        .model
        .as_ref()
        .map(|m| m.reason.clone())
        .unwrap_or_default();
    let mut schedule = report.chosen.to_string();
    if let Some(o) = report.remap_order {
        schedule = format!("{schedule} ({o})");
    }
    let order = t.plan_order().map(|p| p.tasks.to_vec());
    let ms = match order {
        None => {
            let ms = median(&timed_runs(Some(timer), warmup, runs, &mut || {
                t.enqueue(d, mx, my, mz, e, ffd, o0, o1, o2, o3, o4)
            })?);
            check_against(out, want, "the throttled flux")?;
            ms
        }
        Some(order) => {
            // The state in the plan's numbering (`order[new] = old`).
            let renumbered =
                |v: &[f32]| -> Vec<f32> { order.iter().map(|&o| v[o as usize]).collect() };
            let up = |v: &[f32]| device.upload(&renumbered(v));
            let [pd, pmx, pmy, pmz, pe] = [
                up(&state[0])?,
                up(&state[1])?,
                up(&state[2])?,
                up(&state[3])?,
                up(&state[4])?,
            ];
            let ms = median(&timed_runs(Some(timer), warmup, runs, &mut || {
                t.enqueue_in_plan_order(&pd, &pmx, &pmy, &pmz, &pe, ffd, o0, o1, o2, o3, o4)
            })?);
            t.check()?;
            // Numbered back: out[new] is cell order[new]'s flux.
            let mut back: [Vec<f32>; 5] = Default::default();
            for (v, slot) in back.iter_mut().enumerate() {
                let got = out[v].to_vec()?;
                let mut b = vec![0f32; n];
                for (new, &old) in order.iter().enumerate() {
                    b[old as usize] = got[new];
                }
                *slot = b;
            }
            let back = back.map(|b| device.upload(&b));
            let [b0, b1, b2, b3, b4] = back;
            check_against(
                &[b0?, b1?, b2?, b3?, b4?],
                want,
                "the throttled flux in plan order",
            )?;
            ms
        }
    };
    Ok((
        ms.unwrap_or(0.0),
        ThrottledChoice {
            schedule,
            planning_ms,
            first_launch_ms,
            reason,
        },
    ))
}

/// The rows as a Markdown table: each generated kernel's time and the
/// baseline's time over it.
pub fn to_markdown(rows: &[CfdRow], command: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Command: `{command}`. Median ms (CUDA events, L2 flushed before each run), results checked against the CPU twin first.\n");
    let _ = writeln!(
        s,
        "| mesh | cells | baseline (Rodinia-style) | generated | ms | baseline / generated |"
    );
    let _ = writeln!(s, "|---|---:|---:|---|---:|---:|");
    for r in rows {
        for (name, ms) in &r.generated {
            let _ = writeln!(
                s,
                "| {} | {} | {:.4} | {name} | {ms:.4} | {:.3}× |",
                r.label,
                r.cells,
                r.baseline_ms,
                r.baseline_ms / ms.max(1e-12)
            );
        }
    }
    for r in rows {
        if let Some(c) = &r.throttled {
            let _ = writeln!(
                s,
                "\n{}: `auto` chose {} (handle made in {:.1} ms, first launch with the model's decision {:.1} ms): {}",
                r.label, c.schedule, c.planning_ms, c.first_launch_ms, c.reason
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_is_refused_without_a_gpu_and_its_source_is_one_kernel() {
        let e = run_cfd(&Device::cpu(), 2, &[Decomposition::Cte], 1, 1).unwrap_err();
        assert!(e.to_string().contains("needs an NVIDIA GPU"), "{e}");
        assert_eq!(BASELINE_CUDA.matches("__global__").count(), 1);
        let s = perturbed_free_stream(20);
        assert_eq!(s[0][3], free_stream()[0] * 1.15);
        assert_eq!(s[1][3], free_stream()[1]);
    }

    /// The hand-written kernel compiles with NVRTC (fails under `CI=true`
    /// without NVRTC, as every kernel form's compile test does).
    #[test]
    fn the_baseline_compiles_with_nvrtc() {
        use warpfit::gpu::probe::{self, Library};
        if let Err(e) = probe::require(Library::Nvrtc) {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("CI=true and NVRTC cannot be loaded: {e}");
            }
            eprintln!("skipping: {e}");
            return;
        }
        let arch = warpfit::__private::compile::Arch::new(9, 0);
        let c = compile_uncached("rodinia_flux", BASELINE_CUDA, arch).unwrap();
        assert_eq!(&c.cubin[..4], b"\x7fELF");
    }
}
