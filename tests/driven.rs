//! sssp, bfs and cc under every driver on the CPU backend, against the
//! sequential references (Dijkstra, queue BFS, union-find) bit for bit, on
//! road-like, symmetrised RMAT, rgg and real matrices; growth from tiny
//! worklists, several rounds per synchronisation, the `auto` choice and the
//! driver spec.

mod driver_common;

use driver_common::{drivers, hub};
use warpfit::apps::{self, DriveOptions, DrivenApp, DriverChoice, OrderChoice};
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::reference;
use warpfit::runtime::sparse::{mm, Csr};
use warpfit::runtime::worklist::drivers::{GraphShape, Order, Strategy};
use warpfit::{Device, LaunchConfig};

fn generated() -> Vec<(String, Csr<f32>)> {
    [
        "road:side=48,drop=0.15,seed=1,order=random",
        "road:side=40,drop=0.3,seed=2,order=natural",
        "rmat:scale=10,edge_factor=8,seed=3,sym=true",
        "rmat:scale=9,edge_factor=8,seed=4",
        "rgg:n=3000,seed=5",
    ]
    .iter()
    .map(|s| {
        (
            s.to_string(),
            s.parse::<GenSpec>().unwrap().generate().unwrap(),
        )
    })
    .collect()
}

/// The square matrices of tests/data and of the shared collection
/// (`$WARPFIT_MATRICES_DIR`, else `../shared/data/matrices` beside the
/// repository, when there).
fn real() -> Vec<(String, Csr<f32>)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("tests/data")];
    match std::env::var_os("WARPFIT_MATRICES_DIR") {
        Some(d) => dirs.push(d.into()),
        None => dirs.push(root.join("../shared/data/matrices")),
    }
    let mut out = Vec::new();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "mtx"))
            .collect();
        paths.sort();
        for path in paths {
            let a = mm::read_csr::<f32>(&path).unwrap();
            if a.nrows() == a.ncols() && a.nrows() > 0 {
                out.push((path.file_name().unwrap().to_string_lossy().into_owned(), a));
            }
        }
    }
    assert!(out.len() >= 3, "tests/data should hold real matrices");
    out
}

/// The hub: a vertex of the largest degree (in the giant component of a
/// power-law graph).
fn check_all(name: &str, a: &Csr<f32>, variants: &[DriveOptions]) {
    let (dev, cfg) = (Device::cpu(), LaunchConfig::default());
    for source in [0, hub(a)] {
        let dist = reference::dijkstra(a, source).unwrap();
        let levels = reference::bfs_levels(a, source).unwrap();
        for opts in variants {
            for driver in drivers(DrivenApp::Sssp) {
                let o = DriveOptions { driver, ..*opts };
                let (got, r) = apps::sssp_driven(&dev, &cfg, a, source, &o).unwrap();
                assert!(
                    got.iter()
                        .zip(&dist)
                        .all(|(g, w)| g.to_bits() == w.to_bits()),
                    "{name}: sssp from {source}, {o:?}"
                );
                assert!(r.rounds >= 1, "{name}: {r:?}");
            }
            for driver in drivers(DrivenApp::Bfs) {
                let o = DriveOptions { driver, ..*opts };
                let (got, r) = apps::bfs_driven(&dev, &cfg, a, source, &o).unwrap();
                assert_eq!(got, levels, "{name}: bfs from {source}, {o:?}");
                // Every driver is level-synchronous: depth + 1 rounds.
                let depth = *levels.iter().max().unwrap() as u64;
                assert_eq!(r.rounds, depth + 1, "{name}: bfs {o:?}");
            }
        }
    }
    let comps = reference::components(a).unwrap();
    for opts in variants {
        for driver in drivers(DrivenApp::Cc) {
            let o = DriveOptions { driver, ..*opts };
            let (got, _) = apps::cc_driven(&dev, &cfg, a, &o).unwrap();
            assert_eq!(got, comps, "{name}: cc, {o:?}");
        }
    }
}

#[test]
fn every_driver_equals_the_references_on_generated_graphs() {
    let defaults = DriveOptions::new(DriverChoice::Auto);
    for (name, a) in generated() {
        check_all(&name, &a, &[defaults]);
    }
}

#[test]
fn every_driver_equals_the_references_on_real_matrices() {
    let defaults = DriveOptions::new(DriverChoice::Auto);
    for (name, a) in real() {
        check_all(&name, &a, &[defaults]);
    }
}

#[test]
fn tiny_worklists_and_batched_rounds_change_nothing() {
    let variants = [
        DriveOptions {
            initial_capacity: Some(1),
            ..DriveOptions::new(DriverChoice::Auto)
        },
        DriveOptions {
            initial_capacity: Some(3),
            rounds_per_sync: Some(4),
            dedup: false,
            ..DriveOptions::new(DriverChoice::Auto)
        },
    ];
    let (name, a) = generated().swap_remove(0);
    check_all(&name, &a, &variants);
    // Growth happened, and the run reports it; the rounds enqueued behind
    // an overflowing one ran again after the growth.
    let (_, r) = apps::sssp_driven(
        &Device::cpu(),
        &LaunchConfig::default(),
        &a,
        0,
        &DriveOptions {
            initial_capacity: Some(1),
            rounds_per_sync: Some(3),
            ..DriveOptions::new(DriverChoice::Data(Some(OrderChoice::Fifo)))
        },
    )
    .unwrap();
    assert!(r.growths > 0, "{r:?}");
    let rr = r.rounds_report.unwrap();
    assert!(rr.capacity > 1 && rr.enqueued > rr.rounds, "{rr:?}");
}

#[test]
fn cc_labels_are_the_smallest_id_with_directions_ignored() {
    // 3 → 1, 4 → 3, 2 isolated, 5 → 0: components {0, 5}, {1, 3, 4}, {2}.
    let a = Csr::from_triplets(6, 6, [(3, 1, 1.0f32), (4, 3, 1.0), (5, 0, 1.0)]).unwrap();
    let (dev, cfg) = (Device::cpu(), LaunchConfig::default());
    for driver in drivers(DrivenApp::Cc) {
        let (got, _) = apps::cc_driven(&dev, &cfg, &a, &DriveOptions::new(driver)).unwrap();
        assert_eq!(got, [0, 1, 2, 1, 1, 0], "{driver:?}");
    }
    let und = apps::undirected(&a).unwrap();
    assert!(und.is_symmetric());
    assert_eq!(und.nnz(), 6);
    let empty = Csr::<f32>::new(0, 0, vec![0], vec![], vec![]).unwrap();
    let (got, r) =
        apps::cc_driven(&dev, &cfg, &empty, &DriveOptions::new(DriverChoice::Auto)).unwrap();
    assert!(got.is_empty() && r.rounds == 0);
}

#[test]
fn driver_specs_parse_and_bad_ones_are_errors() {
    let ok = [
        ("topo", DriverChoice::Topo),
        ("topo:rounds", DriverChoice::TopoRounds),
        ("data", DriverChoice::Data(None)),
        ("data:fifo", DriverChoice::Data(Some(OrderChoice::Fifo))),
        (
            "data:nearfar",
            DriverChoice::Data(Some(OrderChoice::NearFar(None))),
        ),
        (
            "data:nearfar:0.5",
            DriverChoice::Data(Some(OrderChoice::NearFar(Some(0.5)))),
        ),
        (
            "hybrid",
            DriverChoice::Hybrid {
                up: None,
                down: None,
            },
        ),
        (
            "hybrid:0.2:0.05",
            DriverChoice::Hybrid {
                up: Some(0.2),
                down: Some(0.05),
            },
        ),
        ("auto", DriverChoice::Auto),
    ];
    for (s, want) in ok {
        assert_eq!(s.parse::<DriverChoice>().unwrap(), want, "{s}");
    }
    for (s, needle) in [
        ("pull", "unknown driver"),
        ("data:lifo", "unknown driver"),
        ("data:nearfar:0", "positive"),
        ("data:nearfar:x", "positive"),
        ("hybrid:-1", "fraction"),
        ("hybrid:0.1:0.2:0.3", "unknown driver"),
    ] {
        let e = s.parse::<DriverChoice>().unwrap_err().to_string();
        assert!(e.contains(needle), "{s}: {e}");
    }
    // Near-far needs sssp's key.
    let a = "grid2d:side=4"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let o = DriveOptions::new("data:nearfar".parse().unwrap());
    let e = apps::bfs_driven(&Device::cpu(), &LaunchConfig::default(), &a, 0, &o)
        .unwrap_err()
        .to_string();
    assert!(e.contains("key"), "{e}");
    let e = apps::sssp_driven(&Device::cpu(), &LaunchConfig::default(), &a, 16, &o)
        .unwrap_err()
        .to_string();
    assert!(e.contains("source vertex"), "{e}");
}

#[test]
fn auto_follows_the_documented_rule() {
    let road = "road:side=64"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let rmat = "rmat:scale=12,sym=true"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let delta = 1.0;
    let cpu = warpfit::Device::cpu();
    let road_shape = GraphShape::of(road.row_ptr());
    let rmat_shape = GraphShape::of(rmat.row_ptr());
    // A bounded-degree graph runs data-driven (near-far for sssp), a skewed
    // one hybrid.
    assert_eq!(
        apps::auto_driver(DrivenApp::Sssp, &road_shape, delta, &cpu),
        Some(Strategy::Data(Order::NearFar { delta }))
    );
    assert_eq!(
        apps::auto_driver(DrivenApp::Bfs, &road_shape, delta, &cpu),
        Some(Strategy::Data(Order::Fifo))
    );
    assert!(matches!(
        apps::auto_driver(DrivenApp::Bfs, &rmat_shape, delta, &cpu),
        Some(Strategy::Hybrid { .. })
    ));
}

/// The observed runs report their rounds as they go, for progress: never
/// backwards, the last report the run's own round count, with the answer
/// of the plain run, under every driver.
#[test]
fn observed_runs_report_rising_round_counts_ending_at_the_runs_rounds() {
    let dev = Device::cpu();
    let config = LaunchConfig::default();
    let a = "road:side=24,order=random"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let check = |what: String, seen: &[u64], rounds: u64| {
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{what}: {seen:?}");
        assert_eq!(seen.last().copied(), Some(rounds), "{what}: {seen:?}");
    };
    for app in [DrivenApp::Sssp, DrivenApp::Bfs, DrivenApp::Cc] {
        for driver in drivers(app) {
            let o = DriveOptions::new(driver);
            let what = format!("{app} {driver:?}");
            let mut seen = Vec::new();
            let mut on = |r: u64| seen.push(r);
            let rounds = match app {
                DrivenApp::Sssp => {
                    let (got, r) =
                        apps::sssp_driven_observed(&dev, &config, &a, 3, &o, &mut on).unwrap();
                    assert_eq!(got, apps::sssp_driven(&dev, &config, &a, 3, &o).unwrap().0);
                    r.rounds
                }
                DrivenApp::Bfs => {
                    let (got, r) =
                        apps::bfs_driven_observed(&dev, &config, &a, 3, &o, &mut on).unwrap();
                    assert_eq!(got, apps::bfs_driven(&dev, &config, &a, 3, &o).unwrap().0);
                    r.rounds
                }
                DrivenApp::Cc => {
                    let (got, r) =
                        apps::cc_driven_observed(&dev, &config, &a, &o, &mut on).unwrap();
                    assert_eq!(got, apps::cc_driven(&dev, &config, &a, &o).unwrap().0);
                    r.rounds
                }
            };
            check(what, &seen, rounds);
        }
    }
}
