//! The road-network-like generator and symmetrised RMAT: structure,
//! determinism and their `--gen` specs.

use warpfit_runtime::gen::{self, GenSpec, RoadOrder};
use warpfit_runtime::sparse::Csr;
use warpfit_runtime::Error;

/// Structure every road graph has: square, sorted rows, symmetric (values
/// too), no self loop, at most 4 entries per row, positive weights in (0, 1],
/// and (natural order) only grid neighbours.
fn assert_road_structure(name: &str, g: &Csr<f32>, side: usize, natural: bool) {
    assert_eq!((g.nrows(), g.ncols()), (side * side, side * side), "{name}");
    assert!(g.is_sorted(), "{name}");
    assert!(g.is_symmetric(), "{name}");
    for v in 0..g.nrows() {
        let (cols, vals) = g.row(v);
        assert!(
            cols.len() <= 4,
            "{name}: row {v} has {} entries",
            cols.len()
        );
        for (&c, &w) in cols.iter().zip(vals) {
            assert_ne!(c as usize, v, "{name}: self loop at {v}");
            assert!(w > 0.0 && w <= 1.0, "{name}: weight {w}");
            if natural {
                let (i, j) = (v / side, v % side);
                let (ci, cj) = (c as usize / side, c as usize % side);
                assert_eq!(i.abs_diff(ci) + j.abs_diff(cj), 1, "{name}: {v} — {c}");
            }
        }
    }
}

#[test]
fn road_structure_in_both_orders() {
    for side in [0usize, 1, 2, 5, 40] {
        for order in [RoadOrder::Natural, RoadOrder::Random] {
            let g = gen::road(side, 0.15, 3, order).unwrap();
            let name = format!("road:side={side},order={order}");
            assert_road_structure(&name, &g, side, order == RoadOrder::Natural);
        }
    }
}

#[test]
fn road_edge_count_is_near_the_expectation() {
    let side = 200;
    let edges = 2 * side * (side - 1);
    for drop in [0.0, 0.15, 0.5] {
        let g = gen::road(side, drop, 1, RoadOrder::Random).unwrap();
        let kept = g.nnz() / 2;
        let mean = edges as f64 * (1.0 - drop);
        let sigma = (edges as f64 * drop * (1.0 - drop)).sqrt();
        assert!(
            (kept as f64 - mean).abs() <= 5.0 * sigma + 1e-9,
            "drop {drop}: {kept} edges kept, expected {mean} ± {sigma}"
        );
    }
    // Nothing removed: the full grid, with grid2d's off-diagonal pattern.
    let full = gen::road(30, 0.0, 1, RoadOrder::Natural).unwrap();
    let grid = gen::grid2d(30).unwrap();
    let off_diagonal: Vec<(usize, u32)> = (0..grid.nrows())
        .flat_map(|r| grid.row(r).0.iter().map(move |&c| (r, c)))
        .filter(|&(r, c)| r != c as usize)
        .collect();
    let road: Vec<(usize, u32)> = (0..full.nrows())
        .flat_map(|r| full.row(r).0.iter().map(move |&c| (r, c)))
        .collect();
    assert_eq!(road, off_diagonal);
    // Everything removed.
    assert_eq!(gen::road(30, 1.0, 1, RoadOrder::Random).unwrap().nnz(), 0);
}

#[test]
fn road_is_deterministic_seeded_and_thread_count_free() {
    let a = gen::road(60, 0.15, 7, RoadOrder::Random).unwrap();
    assert_eq!(a, gen::road(60, 0.15, 7, RoadOrder::Random).unwrap());
    assert_ne!(a, gen::road(60, 0.15, 8, RoadOrder::Random).unwrap());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    // Large enough for several random streams (chunks of 2^16 edges).
    for order in [RoadOrder::Natural, RoadOrder::Random] {
        let big = gen::road(300, 0.15, 2, order).unwrap();
        assert_eq!(
            big,
            pool.install(|| gen::road(300, 0.15, 2, order).unwrap())
        );
    }
}

#[test]
fn random_order_renumbers_the_natural_graph() {
    // Same seed: the same edges and weights, renumbered.
    let natural = gen::road(50, 0.2, 4, RoadOrder::Natural).unwrap();
    let random = gen::road(50, 0.2, 4, RoadOrder::Random).unwrap();
    assert_eq!(natural.nnz(), random.nnz());
    let profile = |g: &Csr<f32>| {
        let mut rows: Vec<Vec<u32>> = (0..g.nrows())
            .map(|v| {
                let mut w: Vec<u32> = g.row(v).1.iter().map(|x| x.to_bits()).collect();
                w.sort_unstable();
                w
            })
            .collect();
        rows.sort_unstable();
        rows
    };
    assert_eq!(profile(&natural), profile(&random));
    // And the numbering is not the identity: neighbours are scattered.
    let far = (0..random.nrows())
        .flat_map(|v| random.row(v).0.iter().map(move |&c| v.abs_diff(c as usize)))
        .filter(|&d| d > 50)
        .count();
    assert!(far > random.nnz() / 2, "{far} of {}", random.nnz());
}

#[test]
fn road_golden_fingerprint() {
    // Pins the documented derivation; a change here changes every road input.
    let fp = |m: &Csr<f32>| {
        let mut h = 0xcbf29ce484222325u64;
        let mut eat = |x: u32| {
            for b in x.to_le_bytes() {
                h = (h ^ b as u64).wrapping_mul(0x100000001b3);
            }
        };
        m.row_ptr().iter().for_each(|&x| eat(x));
        m.col_idx().iter().for_each(|&x| eat(x));
        m.values().iter().for_each(|&x| eat(x.to_bits()));
        h
    };
    let got = [
        fp(&gen::road(20, 0.15, 1, RoadOrder::Natural).unwrap()),
        fp(&gen::road(20, 0.15, 1, RoadOrder::Random).unwrap()),
        fp(&gen::rmat_symmetric(8, 8, 1).unwrap()),
    ];
    assert_eq!(
        got,
        [0x27ce0cad7412eb81, 0x7cb53eeefddc4b60, 0x1f8708655e445269],
        "{got:#x?}"
    );
}

#[test]
fn road_bad_parameters_are_errors() {
    for drop in [-0.1, 1.5, f64::NAN] {
        let e = gen::road(4, drop, 1, RoadOrder::Natural).unwrap_err();
        assert!(e.to_string().contains("must lie in [0, 1]"), "{e}");
    }
    let e = gen::road(1 << 16, 0.1, 1, RoadOrder::Natural).unwrap_err();
    assert!(e.to_string().contains("side at most 65535"), "{e}");
    // 1.6·10⁹ vertices fit u32, the 6.4·10⁹ possible entries do not.
    assert!(matches!(
        gen::road(40_000, 0.1, 1, RoadOrder::Natural),
        Err(Error::U32Overflow { .. })
    ));
}

#[test]
fn rmat_symmetric_is_a_plus_a_transpose() {
    let a = gen::rmat(9, 8, 5).unwrap();
    let s = gen::rmat_symmetric(9, 8, 5).unwrap();
    assert!(s.is_sorted() && s.is_symmetric());
    // Every entry of A or Aᵀ is there, with the smaller value of the two.
    let get = |m: &Csr<f32>, r: usize, c: usize| m.get(r, c).copied();
    let mut expected = 0;
    for r in 0..a.nrows() {
        for c in 0..a.ncols() {
            let want = match (get(&a, r, c), get(&a, c, r)) {
                (None, None) => None,
                (Some(x), None) | (None, Some(x)) => Some(x),
                (Some(x), Some(y)) => Some(x.min(y)),
            };
            expected += usize::from(want.is_some());
            assert_eq!(get(&s, r, c), want, "({r}, {c})");
        }
    }
    assert_eq!(s.nnz(), expected);
    assert!(s.nnz() > a.nnz() && s.nnz() <= 2 * a.nnz());
}

#[test]
fn specs_parse_display_and_generate() {
    let cases = [
        ("road", "road:side=256,drop=0.15,seed=1,order=random"),
        (
            "road:order=natural,drop=0.5,side=8,seed=2",
            "road:side=8,drop=0.5,seed=2,order=natural",
        ),
        ("road:drop=0", "road:side=256,drop=0,seed=1,order=random"),
        ("road:drop=1", "road:side=256,drop=1,seed=1,order=random"),
        (
            "road:drop=.000125",
            "road:side=256,drop=0.000125,seed=1,order=random",
        ),
        (
            "rmat:sym=true",
            "rmat:scale=16,edge_factor=16,seed=1,sym=true",
        ),
        ("rmat:sym=false", "rmat:scale=16,edge_factor=16,seed=1"),
    ];
    for (input, canonical) in cases {
        let spec: GenSpec = input.parse().unwrap();
        assert_eq!(spec.to_string(), canonical, "for `{input}`");
        assert_eq!(canonical.parse::<GenSpec>().unwrap(), spec);
    }
    let spec: GenSpec = "road:side=12,drop=0.25,seed=9,order=natural"
        .parse()
        .unwrap();
    assert_eq!(spec.kind(), "road");
    assert_eq!(
        spec.generate().unwrap(),
        gen::road(12, 0.25, 9, RoadOrder::Natural).unwrap()
    );
    let spec: GenSpec = "rmat:scale=7,edge_factor=4,seed=2,sym=true"
        .parse()
        .unwrap();
    assert_eq!(
        spec.generate().unwrap(),
        gen::rmat_symmetric(7, 4, 2).unwrap()
    );
    let err = |s: &str| s.parse::<GenSpec>().unwrap_err().to_string();
    assert!(err("road:drop=1.5").contains("must lie in [0, 1]"));
    assert!(err("road:drop=-0.5").contains("must lie in [0, 1]"));
    assert!(err("road:drop=abc").contains("expects a fraction"));
    assert!(err("road:drop=0.1234567").contains("more than six decimals"));
    assert!(err("road:order=hilbert").contains("random or natural"));
    assert!(err("road:width=3").contains("side, drop, seed, order"));
    assert!(err("rmat:sym=yes").contains("true or false"));
    assert!(err("kron").contains("road"));
}
