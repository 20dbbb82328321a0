//! Generators: determinism, structural properties and the `--gen` spec.

use warpfit_runtime::gen::{self, GenSpec, RggOrder};
use warpfit_runtime::sparse::Csr;
use warpfit_runtime::Error;

fn degrees(m: &Csr<f32>) -> Vec<usize> {
    (0..m.nrows()).map(|r| m.row_range(r).len()).collect()
}

#[test]
fn rmat_deterministic_and_seed_sensitive() {
    let a = gen::rmat(12, 8, 7).unwrap();
    let b = gen::rmat(12, 8, 7).unwrap();
    assert_eq!(a, b);
    let c = gen::rmat(12, 8, 8).unwrap();
    assert_ne!(a.col_idx(), c.col_idx());
    // Thread count does not matter.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let d = pool.install(|| gen::rmat(12, 8, 7).unwrap());
    assert_eq!(a, d);
}

#[test]
fn rmat_structure() {
    let m = gen::rmat(14, 16, 1).unwrap();
    let n = 1 << 14;
    assert_eq!((m.nrows(), m.ncols()), (n, n));
    // Duplicates removed: canonical and at most edge_factor·n entries, but
    // most edges survive at this density.
    assert!(m.is_sorted());
    assert!(m.nnz() <= 16 * n && m.nnz() > 10 * n, "nnz {}", m.nnz());
    // Values in (0, 1].
    assert!(m.values().iter().all(|&v| v > 0.0 && v <= 1.0));
    // Power-law skew: the max degree dwarfs the mean, many rows are empty.
    let deg = degrees(&m);
    let mean = m.nnz() as f64 / n as f64;
    let max = *deg.iter().max().unwrap() as f64;
    assert!(max > 20.0 * mean, "max {max} mean {mean}");
    let empty = deg.iter().filter(|&&d| d == 0).count();
    assert!(empty > n / 10, "empty rows {empty}");
    // Scrambled labels: the heaviest row is not vertex 0.
    let heaviest = deg.iter().enumerate().max_by_key(|&(_, d)| *d).unwrap().0;
    assert_ne!(heaviest, 0);
}

#[test]
fn rmat_size_checks() {
    // The message names the largest scale, not a saturated 2^scale.
    for scale in [32, 99] {
        match gen::rmat(scale, 1, 1) {
            Err(Error::InvalidArgument(m)) => {
                assert!(
                    m.contains("max scale 31") && !m.contains("1844674407"),
                    "{m}"
                )
            }
            other => panic!("scale {scale}: {other:?}"),
        }
    }
    assert!(matches!(
        gen::rmat(30, 8, 1),
        Err(Error::U32Overflow { .. })
    ));
    let tiny = gen::rmat(0, 3, 1).unwrap();
    assert_eq!((tiny.nrows(), tiny.nnz()), (1, 1));
}

#[test]
fn uniform_structure_and_determinism() {
    let m = gen::uniform(10_000, 16, 3).unwrap();
    assert_eq!(m.nnz(), 160_000);
    assert!(m.is_sorted());
    assert!(degrees(&m).iter().all(|&d| d == 16));
    assert_eq!(m, gen::uniform(10_000, 16, 3).unwrap());
    assert_ne!(m.col_idx(), gen::uniform(10_000, 16, 4).unwrap().col_idx());
    // Columns cover the range roughly evenly.
    let mut hits = vec![0u32; 10];
    for &c in m.col_idx() {
        hits[c as usize / 1000] += 1;
    }
    assert!(
        hits.iter().all(|&h| (15_000..17_000).contains(&h)),
        "{hits:?}"
    );
    // Dense rows use the hash-set path of Floyd's sampling.
    let d = gen::uniform(100, 100, 1).unwrap();
    assert!(d.is_sorted());
    assert!((0..100).all(|r| d.row(r).0 == (0..100).collect::<Vec<u32>>()));
    assert!(matches!(
        gen::uniform(10, 11, 1),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        gen::uniform(1 << 20, 1 << 12, 1),
        Err(Error::U32Overflow { .. })
    ));
}

#[test]
fn rgg_symmetric_with_expected_degree() {
    let n = 1 << 16;
    let m = gen::rgg(n, 5).unwrap();
    assert!(m.is_sorted());
    assert!(m.is_symmetric());
    assert!((0..n).all(|i| m.get(i, i).is_none()));
    let r = gen::rgg_radius(n);
    let nf = n as f64;
    // Expected degree in the unit square, border included:
    // n (π r² − 8 r³ / 3 + r⁴ / 2).
    let expected = nf * (std::f64::consts::PI * r * r - 8.0 * r.powi(3) / 3.0 + r.powi(4) / 2.0);
    let mean = m.nnz() as f64 / nf;
    assert!(
        (mean - expected).abs() < 0.02 * expected,
        "mean degree {mean}, expected {expected}"
    );
    assert_eq!(m, gen::rgg(n, 5).unwrap());
    assert_ne!(m, gen::rgg(n, 6).unwrap());
}

#[test]
fn rgg_spatial_is_a_relabeling_with_locality() {
    let n = 1 << 14;
    let a = gen::rgg_with(n, 9, RggOrder::Random).unwrap();
    let s = gen::rgg_with(n, 9, RggOrder::Spatial).unwrap();
    assert!(s.is_symmetric());
    assert_eq!(a.nnz(), s.nnz());
    let mut da = degrees(&a);
    let mut ds = degrees(&s);
    da.sort_unstable();
    ds.sort_unstable();
    assert_eq!(da, ds);
    // Spatial order puts neighbours close in index.
    let spread = |m: &Csr<f32>| {
        (0..n)
            .flat_map(|r| {
                m.row(r)
                    .0
                    .iter()
                    .map(move |&c| (c as i64 - r as i64).unsigned_abs())
            })
            .sum::<u64>() as f64
            / m.nnz() as f64
    };
    assert!(
        spread(&s) * 20.0 < spread(&a),
        "{} vs {}",
        spread(&s),
        spread(&a)
    );
    assert_eq!(gen::rgg(1, 1).unwrap().nnz(), 0);
    assert_eq!(gen::rgg(0, 1).unwrap().nrows(), 0);
}

#[test]
fn grid2d_stencil() {
    for side in [1usize, 2, 3, 17] {
        let m = gen::grid2d(side).unwrap();
        assert_eq!(m.nrows(), side * side);
        assert_eq!(m.nnz(), 5 * side * side - 4 * side);
        assert!(m.is_sorted());
        assert!(m.is_symmetric());
        // Rows sum to 0 inside, positive on the border.
        for r in 0..side * side {
            assert_eq!(m.get(r, r), Some(&4.0));
            let s: f32 = m.row(r).1.iter().sum();
            let (i, j) = (r / side, r % side);
            let border = [i == 0, j == 0, i + 1 == side, j + 1 == side];
            assert_eq!(s, border.iter().filter(|&&b| b).count() as f32);
        }
    }
    let m = gen::grid2d(4).unwrap();
    assert_eq!(m.row(5).0, &[1, 4, 5, 6, 9]);
    assert_eq!(m.row(5).1, &[-1.0, -1.0, 4.0, -1.0, -1.0]);
    assert_eq!(gen::grid2d(0).unwrap().nnz(), 0);
    let e = gen::grid2d(1 << 16).unwrap_err().to_string();
    assert!(e.contains("= 4294967296 do not fit in u32"), "{e}");
    assert!(e.contains("side at most 65535"), "{e}");
    // The exact count, not a saturated one.
    let e = gen::grid2d(1 << 32).unwrap_err().to_string();
    assert!(e.contains("= 18446744073709551616 do not"), "{e}");
    assert!(matches!(
        gen::grid2d(30_000),
        Err(Error::U32Overflow { .. })
    ));
}

#[test]
fn genspec_parse_defaults_and_display() {
    let cases = [
        ("rmat", "rmat:scale=16,edge_factor=16,seed=1"),
        (
            "rmat:scale=20,edge_factor=16,seed=1",
            "rmat:scale=20,edge_factor=16,seed=1",
        ),
        (
            " rmat : seed=3 , scale=10 ",
            "rmat:scale=10,edge_factor=16,seed=3",
        ),
        ("uniform", "uniform:n=65536,per_row=16,seed=1"),
        (
            "uniform:n=1048576,per_row=16,seed=1",
            "uniform:n=1048576,per_row=16,seed=1",
        ),
        ("rgg", "rgg:n=65536,seed=1,order=random"),
        (
            "rgg:n=1048576,seed=1,order=spatial",
            "rgg:n=1048576,seed=1,order=spatial",
        ),
        ("grid2d", "grid2d:side=256"),
        ("grid2d:side=4096", "grid2d:side=4096"),
        ("grid2d:", "grid2d:side=256"),
    ];
    for (input, canonical) in cases {
        let spec: GenSpec = input.parse().unwrap();
        assert_eq!(spec.to_string(), canonical, "for `{input}`");
        assert_eq!(canonical.parse::<GenSpec>().unwrap(), spec);
    }
    assert_eq!(
        "rgg:order=spatial".parse::<GenSpec>().unwrap(),
        GenSpec::Rgg {
            n: 65536,
            seed: 1,
            order: RggOrder::Spatial
        }
    );
}

#[test]
fn genspec_errors() {
    let err = |s: &str| s.parse::<GenSpec>().unwrap_err().to_string();
    let e = err("kron:scale=3");
    assert!(
        e.contains("unknown generator `kron`") && e.contains("rmat, uniform, rgg, grid2d"),
        "{e}"
    );
    let e = err("rmat:scal=3");
    assert!(
        e.contains("unknown key `scal`") && e.contains("scale, edge_factor, seed"),
        "{e}"
    );
    let e = err("rgg:n=10,order=hilbert");
    assert!(e.contains("random or spatial"), "{e}");
    let e = err("uniform:n=-5");
    assert!(
        e.contains("`n` expects a non-negative integer, found `-5`"),
        "{e}"
    );
    let e = err("grid2d:side");
    assert!(e.contains("expected `key=value`"), "{e}");
    let e = err("rmat:seed=1,seed=2");
    assert!(e.contains("given twice"), "{e}");
    assert!(err("").contains("empty generator spec"));
    assert!(err("rmat:scale=99999999999").contains("too large"));
}

#[test]
fn genspec_generates() {
    let m = "grid2d:side=8"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    assert_eq!(m, gen::grid2d(8).unwrap());
    let m = "rmat:scale=8,edge_factor=4,seed=2"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    assert_eq!(m, gen::rmat(8, 4, 2).unwrap());
    let m = "uniform:n=100,per_row=3,seed=2"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    assert_eq!(m, gen::uniform(100, 3, 2).unwrap());
    let m = "rgg:n=500,seed=2,order=spatial"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    assert_eq!(m, gen::rgg_with(500, 2, RggOrder::Spatial).unwrap());
    let e = "rmat:scale=31,edge_factor=4"
        .parse::<GenSpec>()
        .unwrap()
        .generate();
    assert!(matches!(e, Err(Error::U32Overflow { .. })));
}

/// FNV-1a over the structure and value bits: a fingerprint of a matrix.
fn fingerprint(m: &Csr<f32>) -> u64 {
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
}

#[test]
fn golden_fingerprints() {
    // Pins the documented derivation (ChaCha8 keyed by the seed, one stream
    // per chunk, our own sampling formulas): a change here changes every
    // benchmark input, on every machine.
    let got = [
        fingerprint(&gen::rmat(10, 8, 1).unwrap()),
        fingerprint(&gen::uniform(1000, 5, 1).unwrap()),
        fingerprint(&gen::rgg_with(2000, 1, RggOrder::Random).unwrap()),
        fingerprint(&gen::rgg_with(2000, 1, RggOrder::Spatial).unwrap()),
        fingerprint(&gen::grid2d(10).unwrap()),
    ];
    assert_eq!(
        got,
        [
            0xf0da072c14c41213,
            0x8d65faa9e34b7aa9,
            0x03880ecb030bc5bd,
            0x8a0e78ce0f9b5358,
            0x32a3fa139ba598fe,
        ]
    );
}

/// The structure every SPD generator promises: square, sorted, symmetric, a
/// positive diagonal that dominates its row (row sums ≥ 0 with non-positive
/// off-diagonal entries), and some row strictly dominant.
fn assert_spd_structure(name: &str, m: &Csr<f32>, diagonal: f32) {
    assert_eq!(m.nrows(), m.ncols(), "{name}");
    assert!(m.is_sorted(), "{name}");
    assert!(m.is_symmetric(), "{name}");
    let mut strict = m.nrows() == 0;
    for r in 0..m.nrows() {
        let (cols, vals) = m.row(r);
        let mut diag = None;
        let mut off = 0.0f32;
        for (&c, &v) in cols.iter().zip(vals) {
            if c as usize == r {
                diag = Some(v);
            } else {
                assert!(v <= 0.0, "{name}: ({r}, {c}) = {v}");
                off += v.abs();
            }
        }
        assert_eq!(diag, Some(diagonal), "{name}: row {r}");
        assert!(
            diagonal >= off,
            "{name}: row {r} is not diagonally dominant"
        );
        strict |= diagonal > off;
        let sum: f32 = vals.iter().sum();
        assert!(sum >= 0.0, "{name}: row {r} sums to {sum}");
    }
    assert!(strict, "{name}: no strictly dominant row");
}

#[test]
fn poisson2d_is_the_grid2d_laplacian() {
    for side in [0usize, 1, 2, 7, 20] {
        let m = gen::poisson2d(side).unwrap();
        assert_eq!(m, gen::grid2d(side).unwrap());
        assert_eq!(m.nnz(), (5 * side * side).saturating_sub(4 * side));
        assert_spd_structure(&format!("poisson2d:side={side}"), &m, 4.0);
    }
    let spec: GenSpec = "poisson2d:side=9".parse().unwrap();
    assert_eq!(spec.generate().unwrap(), gen::grid2d(9).unwrap());
}

#[test]
fn poisson3d_stencil_in_both_orders() {
    use gen::Poisson3dOrder::{Natural, Random};
    for side in [0usize, 1, 2, 3, 9] {
        let n = side * side * side;
        let natural = gen::poisson3d(side, Natural, 1).unwrap();
        assert_eq!(natural.nrows(), n);
        assert_eq!(natural.nnz(), (7 * n).saturating_sub(6 * side * side));
        assert_spd_structure(&format!("poisson3d:side={side}"), &natural, 6.0);
        // Row sums count the missing neighbours: 0 inside, 1 per face on the
        // boundary.
        for r in 0..n {
            let (i, j, k) = (r / (side * side), (r / side) % side, r % side);
            let faces = [i, j, k]
                .iter()
                .map(|&x| usize::from(x == 0) + usize::from(x + 1 == side))
                .sum::<usize>();
            let sum: f32 = natural.row(r).1.iter().sum();
            assert_eq!(sum, faces as f32, "side {side}, row {r}");
        }
        let random = gen::poisson3d(side, Random, 7).unwrap();
        assert_eq!(random.nnz(), natural.nnz());
        assert_spd_structure(&format!("poisson3d:side={side},order=random"), &random, 6.0);
        // A renumbering: the same multiset of row lengths and row sums.
        let profile = |m: &Csr<f32>| {
            let mut p: Vec<(usize, i64)> = (0..m.nrows())
                .map(|r| (m.row(r).0.len(), m.row(r).1.iter().sum::<f32>() as i64))
                .collect();
            p.sort_unstable();
            p
        };
        assert_eq!(profile(&random), profile(&natural));
        // Deterministic per seed.
        assert_eq!(gen::poisson3d(side, Random, 7).unwrap(), random);
    }
    let m = gen::poisson3d(3, Natural, 1).unwrap();
    // The centre point (1, 1, 1) = row 13 has all six neighbours.
    assert_eq!(m.row(13).0, &[4, 10, 12, 13, 14, 16, 22]);
    assert_eq!(m.row(13).1, &[-1.0, -1.0, -1.0, 6.0, -1.0, -1.0, -1.0]);
    // Another seed gives another numbering.
    let a = gen::poisson3d(9, Random, 1).unwrap();
    let b = gen::poisson3d(9, Random, 2).unwrap();
    assert_ne!(a, b);
    assert_ne!(a, gen::poisson3d(9, Natural, 1).unwrap());
    for side in [1 << 11, usize::MAX] {
        let e = gen::poisson3d(side, Natural, 1).unwrap_err().to_string();
        assert!(e.contains("side at most 1625"), "{e}");
    }
}

#[test]
fn poisson_specs_parse_and_print() {
    let cases = [
        ("poisson2d", "poisson2d:side=256"),
        ("poisson2d:side=2048", "poisson2d:side=2048"),
        ("poisson3d", "poisson3d:side=64,order=natural,seed=1"),
        (
            "poisson3d:order=random,side=10",
            "poisson3d:side=10,order=random,seed=1",
        ),
        (
            "poisson3d:side=5,order=random,seed=9",
            "poisson3d:side=5,order=random,seed=9",
        ),
    ];
    for (input, canonical) in cases {
        let spec: GenSpec = input.parse().unwrap();
        assert_eq!(spec.to_string(), canonical, "for `{input}`");
        assert_eq!(canonical.parse::<GenSpec>().unwrap(), spec);
    }
    let spec: GenSpec = "poisson3d:side=4,order=random,seed=3".parse().unwrap();
    assert_eq!(spec.kind(), "poisson3d");
    assert_eq!(
        spec.generate().unwrap(),
        gen::poisson3d(4, gen::Poisson3dOrder::Random, 3).unwrap()
    );
    let err = |s: &str| s.parse::<GenSpec>().unwrap_err().to_string();
    let e = err("poisson3d:order=spatial");
    assert!(e.contains("expects natural or random"), "{e}");
    let e = err("poisson2d:seed=1");
    assert!(e.contains("unknown key `seed`"), "{e}");
    assert!(err("poisson").contains("poisson2d, poisson3d"));
}
