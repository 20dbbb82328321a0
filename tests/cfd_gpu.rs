//! The CFD solver on a CUDA GPU against the CPU backend (the same kernels):
//! every decomposition of the flux, and free-stream preservation. Needs a
//! CUDA GPU; skipped without one, unless `WARPFIT_REQUIRE_GPU=1`.

mod cfd_common;
mod gpu_common;

use cfd_common::{assert_free_stream, max_relative_difference, perturbed};
use gpu_common::gpu;
use warpfit::apps::{cfd, cfd_from};
use warpfit::runtime::gen::{tetmesh, MeshOrder};
use warpfit::{Decomposition, Device, LaunchConfig};

#[test]
fn cuda_follows_the_cpu() {
    let Some(dev) = gpu() else { return };
    let small = std::env::var("WARPFIT_SMALL").is_ok_and(|v| v == "1");
    let mesh = tetmesh(if small { 4 } else { 12 }, MeshOrder::Random, 5).unwrap();
    let initial = perturbed(mesh.cells());
    let want = cfd_from(
        &Device::cpu(),
        &LaunchConfig::default(),
        &mesh,
        &initial,
        5,
        &mut |_| {},
    )
    .unwrap();
    for d in [
        Decomposition::Cte,
        Decomposition::Thread,
        Decomposition::SubWarp(4),
    ] {
        let got = cfd_from(&dev, &LaunchConfig::new(d), &mesh, &initial, 5, &mut |_| {}).unwrap();
        // The flux's four faces may be added in another order: rounding.
        let diff = max_relative_difference(&want.variables, &got.variables);
        assert!(diff < 1e-5, "{d:?}: {diff}");
    }
    let r = cfd(&dev, &LaunchConfig::default(), &mesh, 20).unwrap();
    assert_free_stream(&r.variables, 1e-5);
}
