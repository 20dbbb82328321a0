//! The CFD solver (`apps::cfd`, Rodinia's `euler3d`) on the CPU backend:
//! against a straightforward sequential reference, free-stream
//! preservation on a closed mesh, the mesh generator's and reader's errors.
//! (CUDA against the CPU: tests/cfd_gpu.rs.)

mod cfd_common;

use cfd_common::{assert_free_stream, euler3d, max_relative_difference, perturbed};
use warpfit::apps::{
    cfd, cfd_flux_faces, cfd_from, cfd_throttled, check_finite, faces, free_stream,
};
use warpfit::runtime::gen::{tetmesh, MeshOrder, TetMesh, FAR_FIELD, WALL};
use warpfit::{CacheSize, Device, LaunchConfig, ThrottlePolicy};

#[test]
fn the_solver_follows_the_sequential_reference() {
    for order in [MeshOrder::Natural, MeshOrder::Random] {
        let mesh = tetmesh(4, order, 3).unwrap();
        let initial = perturbed(mesh.cells());
        let want = euler3d(&mesh, &initial, 4);
        let got = cfd_from(
            &Device::cpu(),
            &LaunchConfig::default(),
            &mesh,
            &initial,
            4,
            &mut |_| {},
        )
        .unwrap();
        check_finite(&got).unwrap();
        // The flow moved, and the solver moved it as the reference did (the
        // fold adds each face's terms at once, the reference term by term:
        // rounding only).
        assert!(
            max_relative_difference(&want, &initial) > 1e-3,
            "{order:?}: nothing moved"
        );
        let diff = max_relative_difference(&want, &got.variables);
        assert!(diff < 1e-5, "{order:?}: {diff}");
        assert_eq!(got.timings.iterations.len(), 4);
    }
}

#[test]
fn a_uniform_free_stream_stays_uniform() {
    // A channel along x: walls parallel to the flow, far field at both
    // ends. Every cell is closed, so the uniform state's fluxes cancel.
    let mesh = tetmesh(5, MeshOrder::Random, 9).unwrap();
    let r = cfd(&Device::cpu(), &LaunchConfig::default(), &mesh, 50).unwrap();
    assert_free_stream(&r.variables, 1e-5);
}

#[test]
fn bad_meshes_and_states_are_errors() {
    let mut m = tetmesh(2, MeshOrder::Natural, 1).unwrap();
    m.neighbour[0] = 10_000;
    let e = cfd(&Device::cpu(), &LaunchConfig::default(), &m, 1).unwrap_err();
    assert!(e.to_string().contains("neighbour 10000"), "{e}");
    let m = tetmesh(2, MeshOrder::Natural, 1).unwrap();
    let short: [Vec<f32>; 5] = Default::default();
    let e = cfd_from(
        &Device::cpu(),
        &LaunchConfig::default(),
        &m,
        &short,
        1,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("initial variable 0"), "{e}");
    let empty = TetMesh {
        volume: vec![],
        neighbour: vec![],
        normal: Default::default(),
    };
    let r = cfd(&Device::cpu(), &LaunchConfig::default(), &empty, 3).unwrap();
    assert!(r.variables.iter().all(Vec::is_empty));
}

#[test]
fn the_throttled_solver_follows_the_sequential_reference() {
    let mesh = tetmesh(4, MeshOrder::Random, 3).unwrap();
    let initial = perturbed(mesh.cells());
    let want = euler3d(&mesh, &initial, 3);
    for policy in [
        ThrottlePolicy::Auto,
        ThrottlePolicy::Org,
        ThrottlePolicy::OrgR,
        ThrottlePolicy::Cf,
        ThrottlePolicy::Sj,
    ] {
        let options = cfd_flux_faces::throttle_options()
            .unwrap()
            .with_policy(policy)
            .with_cache(CacheSize::Bytes(4 << 10));
        let got = cfd_throttled(&Device::cpu(), &options, &mesh, &initial, 3, &mut |_| {}).unwrap();
        check_finite(&got).unwrap();
        let diff = max_relative_difference(&want, &got.variables);
        assert!(diff < 1e-5, "{policy}: {diff}");
        assert_eq!(got.timings.iterations.len(), 3);
        // The CPU runs the twin in the mesh's numbering.
        assert!(!got.throttle.unwrap().renumbered, "{policy}");
    }
    // A closed channel stays uniform under throttling too.
    let mesh = tetmesh(4, MeshOrder::Random, 9).unwrap();
    let ff = free_stream();
    let uniform: [Vec<f32>; 5] = std::array::from_fn(|v| vec![ff[v]; mesh.cells()]);
    let options = cfd_flux_faces::throttle_options().unwrap();
    let r = cfd_throttled(&Device::cpu(), &options, &mesh, &uniform, 30, &mut |_| {}).unwrap();
    assert_free_stream(&r.variables, 1e-5);
}

#[test]
fn faces_name_their_cell_on_the_boundary() {
    let mesh = tetmesh(2, MeshOrder::Random, 4).unwrap();
    let (nbr, side) = faces(&mesh).unwrap();
    assert_eq!(
        (nbr.len(), side.len()),
        (mesh.neighbour.len(), mesh.neighbour.len())
    );
    for (slot, &nb) in mesh.neighbour.iter().enumerate() {
        let (want_nbr, want_side) = match nb {
            WALL => ((slot / 4) as u32, warpfit::apps::SIDE_WALL),
            FAR_FIELD => ((slot / 4) as u32, warpfit::apps::SIDE_FAR_FIELD),
            nb => (nb as u32, warpfit::apps::SIDE_INTERIOR),
        };
        assert_eq!(
            (nbr[slot], side[slot]),
            (want_nbr, want_side),
            "slot {slot}"
        );
    }
    // Both kinds of boundary occur in the channel.
    assert!(
        side.contains(&warpfit::apps::SIDE_WALL) && side.contains(&warpfit::apps::SIDE_FAR_FIELD)
    );
    let mut bad = mesh.clone();
    bad.neighbour[5] = -7;
    let e = faces(&bad).unwrap_err().to_string();
    assert!(e.contains("cell 1, face 1: neighbour -7"), "{e}");
    let e = cfd_throttled(
        &Device::cpu(),
        &cfd_flux_faces::throttle_options().unwrap(),
        &bad,
        &perturbed(bad.cells()),
        1,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("neighbour -7"), "{e}");
}
