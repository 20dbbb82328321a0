//! Borůvka's minimum spanning forest on a CUDA GPU against the CPU backend
//! (the same kernels), edge for edge, and against Kruskal's algorithm.
//! Needs a CUDA GPU; skipped without one, unless `WARPFIT_REQUIRE_GPU=1`.

mod gpu_common;

use gpu_common::gpu;
use warpfit::apps::mst;
use warpfit::runtime::gen::{self, RoadOrder};
use warpfit::runtime::reference;
use warpfit::{Decomposition, Device, LaunchConfig};

#[test]
fn cuda_finds_the_cpu_forest_edge_for_edge() {
    let Some(dev) = gpu() else { return };
    let small = std::env::var("WARPFIT_SMALL").is_ok_and(|v| v == "1");
    let mut graphs = vec![
        (
            "road 64 random",
            gen::road(64, 0.1, 3, RoadOrder::Random).unwrap(),
        ),
        ("rmat 10", gen::rmat_symmetric(10, 8, 2).unwrap()),
    ];
    if !small {
        graphs.push((
            "road 512 random",
            gen::road(512, 0.05, 7, RoadOrder::Random).unwrap(),
        ));
        graphs.push(("rmat 16", gen::rmat_symmetric(16, 16, 5).unwrap()));
        let mut tied = gen::road(256, 0.0, 1, RoadOrder::Random).unwrap();
        tied.values_mut().iter_mut().for_each(|w| *w = 1.0);
        graphs.push(("road 256, equal weights", tied));
    }
    for (what, a) in graphs {
        let want = mst(&Device::cpu(), &LaunchConfig::default(), &a).unwrap();
        let mut kruskal = reference::kruskal(&a).unwrap();
        kruskal.sort_unstable_by_key(|&(u, v, _)| (u, v));
        assert_eq!(want.edges, kruskal, "{what}: CPU against Kruskal");
        for d in [
            Decomposition::Cte,
            Decomposition::Thread,
            Decomposition::SubWarp(8),
        ] {
            let got = mst(&dev, &LaunchConfig::new(d), &a).unwrap();
            assert_eq!(got.edges, want.edges, "{what} {d:?}");
            assert_eq!(
                (got.weight, got.trees),
                (want.weight, want.trees),
                "{what} {d:?}"
            );
        }
    }
}
