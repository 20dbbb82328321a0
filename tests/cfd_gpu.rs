//! The CFD solver on a CUDA GPU against the CPU backend (the same kernels):
//! every decomposition of the flux, and free-stream preservation. Needs a
//! CUDA GPU; skipped without one, unless `WARPFIT_REQUIRE_GPU=1`.

mod cfd_common;
mod gpu_common;

use cfd_common::{assert_free_stream, max_relative_difference, perturbed};
use gpu_common::gpu;
use warpfit::apps::{cfd, cfd_flux_faces, cfd_from, cfd_throttled, free_stream};
use warpfit::runtime::gen::{tetmesh, MeshOrder};
use warpfit::{CacheSize, Decomposition, Device, LaunchConfig, ThrottlePolicy};

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

#[test]
fn every_throttled_schedule_follows_the_cpu() {
    let Some(dev) = gpu() else { return };
    let small = std::env::var("WARPFIT_SMALL").is_ok_and(|v| v == "1");
    let mesh = tetmesh(if small { 6 } else { 14 }, MeshOrder::Random, 8).unwrap();
    let initial = perturbed(mesh.cells());
    let want = cfd_from(
        &Device::cpu(),
        &LaunchConfig::default(),
        &mesh,
        &initial,
        4,
        &mut |_| {},
    )
    .unwrap();
    for policy in [
        ThrottlePolicy::Org,
        ThrottlePolicy::OrgR,
        ThrottlePolicy::Cf,
        ThrottlePolicy::Cfq,
        ThrottlePolicy::Sj,
        ThrottlePolicy::Sjq,
        ThrottlePolicy::Auto,
    ] {
        for exhaustive in [false, true] {
            if exhaustive && policy != ThrottlePolicy::Auto {
                continue;
            }
            // A small cache: several partitions.
            let options = cfd_flux_faces::throttle_options()
                .unwrap()
                .with_policy(policy)
                .with_exhaustive(exhaustive)
                .with_cache(CacheSize::Bytes(64 << 10));
            let got = cfd_throttled(&dev, &options, &mesh, &initial, 4, &mut |_| {})
                .unwrap_or_else(|e| panic!("{policy} exhaustive {exhaustive}: {e}"));
            let run = got.throttle.as_ref().unwrap();
            let diff = max_relative_difference(&want.variables, &got.variables);
            assert!(
                diff < 1e-5,
                "{policy} exhaustive {exhaustive}: {diff}; {:?}",
                run.report
            );
            // Where the schedule renumbers, the solver ran in its numbering.
            assert_eq!(run.renumbered, run.report.remapped, "{policy}");
            if policy == ThrottlePolicy::OrgR {
                assert!(run.renumbered, "org_r runs in the plan's numbering");
            }
        }
    }
}

#[test]
fn auto_by_the_model_follows_the_cpu() {
    let Some(dev) = gpu() else { return };
    let small = std::env::var("WARPFIT_SMALL").is_ok_and(|v| v == "1");
    let mesh = tetmesh(if small { 8 } else { 24 }, MeshOrder::Random, 2).unwrap();
    let initial = perturbed(mesh.cells());
    let want = cfd_from(
        &dev,
        &LaunchConfig::default(),
        &mesh,
        &initial,
        6,
        &mut |_| {},
    )
    .unwrap();
    // A cache far smaller than the five variables: the model weighs its
    // candidates (`cfd_bench` shows its choice on a 2M-cell mesh).
    let options = cfd_flux_faces::throttle_options()
        .unwrap()
        .with_cache(CacheSize::Bytes(256 << 10))
        .with_plan_cache(false);
    // The kernels compiled first: the model weighs a candidate's
    // preparation by `org`'s, which would otherwise include NVRTC.
    let org = options.with_policy(ThrottlePolicy::Org);
    cfd_throttled(&dev, &org, &mesh, &initial, 1, &mut |_| {}).unwrap();
    let got = cfd_throttled(&dev, &options, &mesh, &initial, 6, &mut |_| {}).unwrap();
    let run = got.throttle.as_ref().unwrap();
    // The model decided (on a mesh this small, a candidate's preparation
    // may not pay back: org), and said why.
    let model = run.report.model.as_ref().expect("auto by the model");
    assert!(!model.reason.is_empty());
    assert_eq!(run.renumbered, run.report.remapped, "{:?}", run.report);
    let diff = max_relative_difference(&want.variables, &got.variables);
    assert!(diff < 1e-5, "{diff}; {:?}", run.report);
    // Throttled, renumbered or not, a closed channel stays uniform.
    let ff = free_stream();
    let uniform: [Vec<f32>; 5] = std::array::from_fn(|v| vec![ff[v]; mesh.cells()]);
    let r = cfd_throttled(&dev, &options, &mesh, &uniform, 20, &mut |_| {}).unwrap();
    assert_free_stream(&r.variables, 1e-5);
}
