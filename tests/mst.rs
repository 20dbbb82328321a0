//! Minimum spanning forests by Borůvka's rounds on the CPU backend against
//! Kruskal's algorithm (`runtime::reference::kruskal`), edge for edge.
//! (The same kernels on CUDA against the CPU: tests/mst_gpu.rs.)

use warpfit::apps::{mst, MstGraph};
use warpfit::runtime::gen::{self, RoadOrder};
use warpfit::runtime::{reference, Csr};
use warpfit::{Device, LaunchConfig};

/// `a` made symmetric with weights `|a(i, j)| + |a(j, i)|`, diagonal kept.
fn symmetric(a: &Csr<f32>) -> Csr<f32> {
    let mut t: Vec<(usize, usize, f32)> = Vec::new();
    for i in 0..a.nrows() {
        let (cols, vals) = a.row(i);
        for (&j, &v) in cols.iter().zip(vals) {
            t.push((i, j as usize, v.abs()));
            t.push((j as usize, i, v.abs()));
        }
    }
    let mut s = Csr::from_triplets(a.nrows(), a.ncols(), t).unwrap();
    s.merge_duplicates(|x, y| *x += y);
    s
}

fn check(what: &str, a: &Csr<f32>) {
    let want = reference::kruskal(a).unwrap();
    let got = mst(&Device::cpu(), &LaunchConfig::default(), a).unwrap();
    let mut want_sorted = want.clone();
    want_sorted.sort_unstable_by_key(|&(u, v, _)| (u, v));
    assert_eq!(got.edges, want_sorted, "{what}");
    let w: f64 = want_sorted.iter().map(|&(_, _, w)| w as f64).sum();
    assert_eq!(got.weight, w, "{what}");
    assert_eq!(got.trees, a.nrows() - want.len(), "{what}");
    assert_eq!(
        got.trees,
        {
            let mut c = reference::components(a).unwrap();
            c.sort_unstable();
            c.dedup();
            c.len()
        },
        "{what}: one tree per component"
    );
}

#[test]
fn boruvka_finds_kruskals_forest() {
    check(
        "road 24 random",
        &gen::road(24, 0.1, 3, RoadOrder::Random).unwrap(),
    );
    check(
        "road 16 natural",
        &gen::road(16, 0.3, 5, RoadOrder::Natural).unwrap(),
    );
    check("rmat 9", &gen::rmat_symmetric(9, 8, 2).unwrap());
    check("uniform 300", &symmetric(&gen::uniform(300, 5, 7).unwrap()));
}

#[test]
fn equal_weights_are_ordered_by_the_endpoints() {
    // Every weight 1: the forest is the one Kruskal takes in (u, v) order.
    let mut a = gen::rmat_symmetric(8, 6, 9).unwrap();
    a.values_mut().iter_mut().for_each(|w| *w = -1.0);
    check("rmat 8, all weights -1", &a);
    let mut r = gen::road(12, 0.0, 1, RoadOrder::Random).unwrap();
    r.values_mut().iter_mut().for_each(|w| *w = 2.0);
    check("road 12, all weights 2", &r);
}

#[test]
fn forests_of_disconnected_graphs_and_small_cases() {
    // Two triangles, an isolated vertex, a self loop on it.
    let mut t = Vec::new();
    for (u, v, w) in [
        (0, 1, 3.0f32),
        (1, 2, 1.0),
        (0, 2, 2.0),
        (3, 4, 5.0),
        (4, 5, 5.0),
        (3, 5, 5.0),
        (6, 6, 1.0),
    ] {
        t.push((u, v, w));
        t.push((v, u, w));
    }
    let a = Csr::from_triplets(7, 7, t).unwrap();
    let f = mst(&Device::cpu(), &LaunchConfig::default(), &a).unwrap();
    assert_eq!(
        f.edges,
        [(0, 2, 2.0), (1, 2, 1.0), (3, 4, 5.0), (3, 5, 5.0)]
    );
    assert_eq!((f.trees, f.weight), (3, 13.0));
    check("two triangles", &a);
    for n in [0, 1] {
        let empty = Csr::<f32>::new(n, n, vec![0; n + 1], vec![], vec![]).unwrap();
        let f = mst(&Device::cpu(), &LaunchConfig::default(), &empty).unwrap();
        assert!(f.edges.is_empty());
        assert_eq!(f.trees, n);
    }
}

#[test]
fn asymmetric_nan_and_rectangular_inputs_are_errors() {
    let a = Csr::from_triplets(3, 3, [(0, 1, 1.0f32)]).unwrap();
    let e = MstGraph::from_matrix(&a).unwrap_err().to_string();
    assert!(e.contains("symmetric") && e.contains("a(1, 2)"), "{e}");
    let nan = Csr::from_triplets(2, 2, [(0, 1, f32::NAN), (1, 0, f32::NAN)]).unwrap();
    let e = MstGraph::from_matrix(&nan).unwrap_err().to_string();
    assert!(e.contains("symmetric") || e.contains("NaN"), "{e}");
    let rect = Csr::new(1, 2, vec![0, 1], vec![1], vec![1.0f32]).unwrap();
    assert!(MstGraph::from_matrix(&rect).is_err());
}

#[test]
fn every_decomposition_gives_the_same_forest() {
    use warpfit::Decomposition;
    let a = gen::road(20, 0.2, 11, RoadOrder::Random).unwrap();
    let want = mst(&Device::cpu(), &LaunchConfig::default(), &a).unwrap();
    for d in [Decomposition::Thread, Decomposition::SubWarp(8)] {
        let got = mst(&Device::cpu(), &LaunchConfig::new(d), &a).unwrap();
        assert_eq!(got.edges, want.edges, "{d:?}");
    }
}

#[test]
fn later_rounds_scan_only_vertices_with_edges_leaving_their_component() {
    use warpfit::apps::MST_FRONTIER_SHARE as FRONTIER_SHARE;
    let a = symmetric(&gen::road(64, 0.2, 5, RoadOrder::Random).unwrap());
    let n = a.nrows();
    let f = mst(&Device::cpu(), &LaunchConfig::default(), &a).unwrap();
    assert_eq!((f.scanned.len(), f.active.len()), (f.rounds, f.rounds));
    assert_eq!((f.scanned[0], f.active[0]), (n, n));
    // Components grow and the interior of each drops out; a round scans
    // the list once it is short, every vertex before.
    assert!(f.active.windows(2).all(|w| w[1] <= w[0]), "{:?}", f.active);
    for (r, (&s, &l)) in f.scanned.iter().zip(&f.active).enumerate() {
        let want = if r > 0 && l <= n / FRONTIER_SHARE {
            l
        } else {
            n
        };
        assert_eq!(s, want, "round {r}: {:?} {:?}", f.scanned, f.active);
    }
    assert!(
        f.scanned.iter().any(|&s| s < n),
        "no round over the list: {:?}",
        f.active
    );
    let mut want = reference::kruskal(&a).unwrap();
    want.sort_unstable_by_key(|&(u, v, _)| (u, v));
    assert_eq!(want, f.edges);
}
