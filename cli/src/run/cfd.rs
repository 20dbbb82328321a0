//! `warpfit run cfd`: Rodinia's euler3d on a generated or `.domn` mesh,
//! its flux throttled with `--throttle`.

use super::{print_timing, write_output, AppRun};
use crate::progress::Steps;
use std::time::Instant;
use warpfit::apps::{self, CfdThrottled};
use warpfit::runtime::gen::{MeshOrder, TetMesh, TetMeshSpec};
use warpfit::runtime::mem;
use warpfit::{Error, Result};

impl AppRun<'_> {
    /// Rodinia's euler3d on the mesh of `--gen tetmesh:..` or `--mesh`.
    pub(super) fn cfd(self) -> Result<()> {
        let args = self.args;
        let device = &self.device;
        let iterations = self.iters.unwrap_or(apps::CFD_ITERATIONS);
        let read_start = Instant::now();
        let (label, mesh) = match (&args.mesh, &args.input.gen) {
            (Some(path), _) => {
                let file = std::fs::File::open(path)
                    .map_err(|e| Error::invalid(format!("--mesh {}: {e}", path.display())))?;
                let mesh = TetMesh::read_domn(std::io::BufReader::new(file))
                    .map_err(|e| Error::invalid(format!("--mesh {}: {e}", path.display())))?;
                (path.display().to_string(), mesh)
            }
            (None, Some(spec)) => {
                let spec: TetMeshSpec = spec.parse()?;
                // Six cells a cube, 17 numbers a cell on the host and on
                // the device, and 20 more of state on the device.
                let cubes = (spec.side as u128).pow(3);
                let bytes = cubes.saturating_mul(6 * 4 * (17 + 17 + 20));
                mem::check(
                    "the cfd mesh and its state",
                    u64::try_from(bytes).unwrap_or(u64::MAX),
                )?;
                let s = format!(
                    "tetmesh:side={},order={},seed={}",
                    spec.side,
                    match spec.order {
                        MeshOrder::Natural => "natural",
                        MeshOrder::Random => "random",
                    },
                    spec.seed
                );
                (s, spec.generate()?)
            }
            (None, None) => unreachable!("checked in check_options"),
        };
        let read = read_start.elapsed();
        let backend = device.backend_name();
        say!("{label}: {} cells; backend {backend}", mesh.cells());
        let throttle = self.throttle_options(apps::cfd_flux_faces::throttle_options, iterations)?;
        let mut steps = Steps::new("cfd", Some(iterations as u64));
        let r = match &throttle {
            None => apps::cfd_observed(device, &self.config, &mesh, iterations, &mut |_| {
                steps.step()
            })?,
            Some(options) => {
                let initial = apps::free_stream_state(mesh.cells());
                apps::cfd_throttled(device, options, &mesh, &initial, iterations, &mut |_| {
                    steps.step()
                })?
            }
        };
        drop(steps);
        apps::check_finite(&r)?;
        let per = r
            .timings
            .median_iteration()
            .unwrap_or_default()
            .as_secs_f64();
        let mass: f64 = r.variables[0]
            .iter()
            .zip(&mesh.volume)
            .map(|(&d, &v)| d as f64 * v as f64)
            .sum();
        say!(
            "cfd: {iterations} iterations ({} RK stages each), {:.3} ms/iter, {:.1} M cells/s, mass {:.6} ({backend})",
            apps::RK,
            per * 1e3,
            mesh.cells() as f64 / per.max(1e-12) / 1e6,
            mass
        );
        if let Some(t) = &r.throttle {
            print_cfd_throttle(t);
        }
        print_timing(read, &r.timings, "iterations");
        let [d, mx, my, mz, e] = &r.variables;
        write_output(
            self.output,
            (0..mesh.cells()).map(|c| format!("{} {} {} {} {}", d[c], mx[c], my[c], mz[c], e[c])),
        )
    }
}

/// What the throttled flux ran: the schedule, whether the solver ran in
/// its numbering, and the model's reason.
fn print_cfd_throttle(t: &CfdThrottled) {
    let r = &t.report;
    let order = match r.remap_order {
        Some(o) => format!(" ({o} order)"),
        None => String::new(),
    };
    say!(
        "throttle: {} asked, {}{order} chosen, {} partitions{}",
        r.asked,
        r.chosen,
        r.partitions,
        if t.renumbered {
            "; the solver ran in the plan's numbering from its second iteration"
        } else {
            ""
        }
    );
    if let Some(m) = &r.model {
        say!(
            "throttle model: {} ({:.1} ms)",
            m.reason,
            m.planning.as_secs_f64() * 1e3
        );
    }
}
