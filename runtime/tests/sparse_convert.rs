//! COO/CSR construction, conversions, sorting, duplicates, transpose and the
//! `sprs` bridge, with property tests on random matrices.

use proptest::prelude::*;
use warpfit_runtime::sparse::{Coo, Csr};
use warpfit_runtime::Error;

/// Reference: entries of a CSR matrix as sorted `(row, col, value)` triplets.
fn triplets<T: Copy + PartialOrd>(m: &Csr<T>) -> Vec<(u32, u32, T)> {
    let mut t: Vec<(u32, u32, T)> = (0..m.nrows())
        .flat_map(|r| {
            let (c, v) = m.row(r);
            c.iter().zip(v).map(move |(&c, &v)| (r as u32, c, v))
        })
        .collect();
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    t
}

#[test]
fn coo_new_validates() {
    assert!(matches!(
        Coo::new(2, 2, vec![0, 1], vec![0], vec![1.0, 2.0]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        Coo::new(2, 2, vec![0], vec![0], vec![1.0, 2.0]),
        Err(Error::LengthMismatch { .. })
    ));
    let e = Coo::new(2, 3, vec![0, 2], vec![0, 1], vec![1.0, 2.0]).unwrap_err();
    assert!(e.to_string().contains("row index at position 1"), "{e}");
    let e = Coo::new(2, 3, vec![0, 1], vec![3, 1], vec![1.0, 2.0]).unwrap_err();
    assert!(e.to_string().contains("column index at position 0"), "{e}");
    assert!(matches!(
        Coo::<f32>::empty(1 << 32, 1),
        Err(Error::U32Overflow { what: "nrows", .. })
    ));
}

#[test]
fn coo_push_is_checked() {
    let mut c = Coo::empty(3, 4).unwrap();
    c.push(2, 3, 1.0f32).unwrap();
    assert!(matches!(
        c.push(3, 0, 1.0),
        Err(Error::IndexOutOfRange {
            index: 3,
            len: 3,
            ..
        })
    ));
    assert!(matches!(
        c.push(0, 4, 1.0),
        Err(Error::IndexOutOfRange {
            index: 4,
            len: 4,
            ..
        })
    ));
    // Beyond u32 is an overflow error, not a wrap to a small index.
    assert!(matches!(
        c.push((1usize << 32) + 1, 0, 1.0),
        Err(Error::U32Overflow { what: "COO row index", value }) if value == (1u64 << 32) + 1
    ));
    assert!(matches!(
        c.push(0, 1usize << 32, 1.0),
        Err(Error::U32Overflow {
            what: "COO column index",
            ..
        })
    ));
    assert_eq!(c.nnz(), 1);
    assert_eq!(
        (c.rows(), c.cols(), c.values()),
        (&[2][..], &[3][..], &[1.0][..])
    );
}

#[test]
fn to_csr_is_stable_and_keeps_duplicates() {
    let coo = Coo::new(
        3,
        4,
        vec![2, 0, 2, 0, 2],
        vec![3, 1, 0, 1, 3],
        vec![1, 2, 3, 4, 5],
    )
    .unwrap();
    let m = coo.to_csr().unwrap();
    assert_eq!(m.row_ptr(), &[0, 2, 2, 5]);
    assert_eq!(m.col_idx(), &[1, 1, 3, 0, 3]);
    assert_eq!(m.values(), &[2, 4, 1, 3, 5]);
    assert!(!m.has_sorted_columns());
    assert!(m.check_canonical().is_err());

    let c = coo.to_canonical_csr().unwrap();
    assert_eq!(c.row_ptr(), &[0, 1, 1, 3]);
    assert_eq!(c.col_idx(), &[1, 0, 3]);
    assert_eq!(c.values(), &[6, 3, 6]);
    assert!(c.is_sorted());
    c.check_canonical().unwrap();
}

#[test]
fn check_canonical_names_the_row() {
    let dup = Csr::new(2, 3, vec![0, 1, 3], vec![0, 2, 2], vec![1, 1, 1]).unwrap();
    let e = dup.check_canonical().unwrap_err().to_string();
    assert!(
        e.contains("row 1") && e.contains("duplicate column 2"),
        "{e}"
    );
    let unsorted = Csr::new(2, 3, vec![0, 2, 2], vec![2, 1], vec![1, 1]).unwrap();
    let e = unsorted.check_canonical().unwrap_err().to_string();
    assert!(
        e.contains("row 0") && e.contains("unsorted column 1"),
        "{e}"
    );
}

#[test]
fn sort_indices_is_stable_on_long_and_short_rows() {
    // A long row (> 32 entries, buffer path) and a short one (insertion).
    let mut cols: Vec<u32> = (0..100).map(|k| (k * 37 % 50) as u32).collect();
    cols.extend([3, 1, 3, 2]);
    let vals: Vec<u32> = (0..104).collect();
    let mut m = Csr::new(2, 50, vec![0, 100, 104], cols.clone(), vals).unwrap();
    m.sort_indices();
    assert!(m.has_sorted_columns());
    assert!(!m.is_sorted()); // duplicates remain
    for r in 0..2 {
        let (c, v) = m.row(r);
        for k in 1..c.len() {
            // Equal columns keep their storage order.
            if c[k - 1] == c[k] {
                assert!(v[k - 1] < v[k]);
            }
        }
    }
    assert_eq!(m.row(1).0, &[1, 2, 3, 3]);
    assert_eq!(m.row(1).1, &[101, 103, 100, 102]);
    m.merge_duplicates(|a, b| *a = (*a).max(b));
    assert!(m.is_sorted());
    assert_eq!(m.nnz(), 50 + 3);
    assert_eq!(m.row(1).1, &[101, 103, 102]);
    assert_eq!(m.row_ptr(), &[0, 50, 53]);
}

#[test]
fn transpose_small() {
    let m = Csr::from_triplets(2, 3, [(0, 2, 1.0), (1, 0, 2.0), (0, 0, 3.0), (1, 2, 4.0)]).unwrap();
    let t = m.transpose();
    assert_eq!((t.nrows(), t.ncols()), (3, 2));
    assert_eq!(t.row_ptr(), &[0, 2, 2, 4]);
    assert_eq!(t.col_idx(), &[0, 1, 0, 1]);
    assert_eq!(t.values(), &[3.0, 2.0, 1.0, 4.0]);
    assert!(t.is_sorted());
    let mut back = t.transpose();
    assert!(back.is_sorted());
    let mut m2 = m.clone();
    m2.sort_indices();
    back.sort_indices();
    assert_eq!(back, m2);
}

#[test]
fn values_pattern_and_accessors() {
    let m = Csr::from_triplets(2, 2, [(0, 1, 2.0f32), (1, 0, -1.0)]).unwrap();
    let d = m.map_values(|&v| v as f64 * 2.0);
    assert_eq!(d.values(), &[4.0, -2.0]);
    assert_eq!(d.col_idx(), m.col_idx());
    let p = m.pattern();
    assert_eq!(
        (p.nnz(), p.row_ptr(), p.col_idx()),
        (2, m.row_ptr(), m.col_idx())
    );
    let w = m.with_values(vec![7u8, 8]).unwrap();
    assert_eq!(w.get(1, 0), Some(&8));
    assert!(matches!(
        m.with_values(vec![1u8]),
        Err(Error::LengthMismatch {
            expected: 2,
            got: 1,
            ..
        })
    ));
    assert_eq!(m.get(5, 0), None);
    assert!(!m.is_symmetric());
    let s = Csr::from_triplets(2, 2, [(0, 1, 2.0f32), (1, 0, 2.0)]).unwrap();
    assert!(s.is_symmetric());
}

#[test]
fn from_triplets_checks_ranges() {
    assert!(matches!(
        Csr::from_triplets(2, 2, [(0, 0, 1.0), (2, 0, 1.0)]),
        Err(Error::IndexOutOfRange { .. })
    ));
}

#[test]
fn large_conversions_match_reference() {
    // Exercises the multi-chunk parallel paths (above the parallel threshold).
    let n = 3000usize;
    let mut rows = Vec::new();
    let mut cols = Vec::new();
    let mut vals = Vec::new();
    let mut x = 12345u64;
    for k in 0..200_000u32 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        rows.push(((x >> 33) % n as u64) as u32);
        cols.push(((x >> 13) % n as u64) as u32);
        vals.push(k as i64);
    }
    let coo = Coo::new(n, n, rows.clone(), cols.clone(), vals.clone()).unwrap();
    let m = coo.to_csr().unwrap();
    // Stability: within each row, values (= input positions) increase.
    for r in 0..n {
        assert!(m.row(r).1.windows(2).all(|w| w[0] < w[1]));
    }
    let mut reference: Vec<(u32, u32, i64)> = (0..rows.len())
        .map(|k| (rows[k], cols[k], vals[k]))
        .collect();
    reference.sort();
    assert_eq!(triplets(&m), reference);
    // Round trip through COO keeps storage order.
    assert_eq!(m.to_coo().to_csr().unwrap(), m);
    // Transpose twice gives the sorted matrix back.
    let mut sorted = m.clone();
    sorted.sort_indices();
    assert_eq!(m.transpose().transpose(), sorted);
    // Canonical: sums of duplicates.
    let c = coo.to_canonical_csr().unwrap();
    let mut sums = std::collections::BTreeMap::new();
    for &(r, col, v) in &reference {
        *sums.entry((r, col)).or_insert(0) += v;
    }
    let expect: Vec<(u32, u32, i64)> = sums.into_iter().map(|((r, c), v)| (r, c, v)).collect();
    assert_eq!(triplets(&c), expect);
    assert!(c.is_sorted());
}

#[test]
fn sprs_round_trip_csr_and_csc() {
    let m = Csr::from_triplets(3, 4, [(0, 3, 1.0), (0, 1, 2.0), (2, 0, 3.0), (1, 2, 4.0)]).unwrap();
    let s = m.to_sprs().unwrap();
    assert!(s.is_csr());
    assert_eq!(s.get(0, 3), Some(&1.0));
    assert_eq!(s.nnz(), 4);
    let back = Csr::from_sprs(&s).unwrap();
    let mut sorted = m.clone();
    sorted.sort_indices();
    assert_eq!(back, sorted);
    // CSC input.
    let csc = s.to_other_storage();
    assert!(!csc.is_csr());
    assert_eq!(Csr::from_sprs(&csc).unwrap(), sorted);
    // Views and u32-indexed sprs matrices work too.
    let small: sprs::CsMatI<f64, u32> = sprs::CsMatI::new(
        (3, 4),
        vec![0, 2, 3, 4],
        vec![1, 3, 2, 0],
        vec![2.0, 1.0, 4.0, 3.0],
    );
    assert_eq!(Csr::from_sprs(&small.view()).unwrap(), sorted);
    let via: sprs::CsMat<f64> = (&m).try_into().unwrap();
    assert_eq!(Csr::try_from(&via).unwrap(), sorted);
}

#[test]
fn sprs_rejects_duplicates_and_overflow() {
    let dup = Csr::from_triplets(2, 2, [(0, 1, 1.0), (0, 1, 2.0)]).unwrap();
    let e = dup.to_sprs().unwrap_err().to_string();
    assert!(e.contains("duplicate"), "{e}");
    let wide: sprs::CsMat<f32> = sprs::CsMat::new(
        (1, 1usize << 33),
        vec![0, 1],
        vec![(1usize << 32) + 5],
        vec![1.0],
    );
    assert!(matches!(
        Csr::from_sprs(&wide),
        Err(Error::U32Overflow { what: "ncols", .. })
    ));
    // An in-range shape but a huge matrix of rows: nrows overflow.
    let tall: sprs::CsMat<f32> =
        sprs::CsMat::new_csc((1usize << 32, 1), vec![0, 0], vec![], vec![]);
    assert!(matches!(
        Csr::from_sprs(&tall),
        Err(Error::U32Overflow { what: "nrows", .. })
    ));
}

fn coo_strategy() -> impl Strategy<Value = Coo<i32>> {
    (1usize..40, 1usize..40).prop_flat_map(|(nr, nc)| {
        prop::collection::vec((0..nr as u32, 0..nc as u32, -100i32..100), 0..300).prop_map(
            move |e| {
                let rows = e.iter().map(|t| t.0).collect();
                let cols = e.iter().map(|t| t.1).collect();
                let vals = e.iter().map(|t| t.2).collect();
                Coo::new(nr, nc, rows, cols, vals).unwrap()
            },
        )
    })
}

proptest! {
    #[test]
    fn coo_csr_coo_preserves_entries_and_row_order(coo in coo_strategy()) {
        let csr = coo.to_csr().unwrap();
        prop_assert_eq!(csr.nnz(), coo.nnz());
        let back = csr.to_coo();
        // Same multiset of entries.
        let mut a: Vec<_> = (0..coo.nnz()).map(|k| (coo.rows()[k], coo.cols()[k], coo.values()[k])).collect();
        let mut b: Vec<_> = (0..back.nnz()).map(|k| (back.rows()[k], back.cols()[k], back.values()[k])).collect();
        // Stable by row: the entries of each row appear in input order.
        let by_row = |v: &Vec<(u32, u32, i32)>, r: u32| v.iter().filter(|t| t.0 == r).copied().collect::<Vec<_>>();
        for r in 0..coo.nrows() as u32 {
            prop_assert_eq!(by_row(&a, r), by_row(&b, r));
        }
        prop_assert!(back.rows().windows(2).all(|w| w[0] <= w[1]));
        a.sort();
        b.sort();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn transpose_and_canonical_agree_with_reference(coo in coo_strategy()) {
        let csr = coo.to_canonical_csr().unwrap();
        prop_assert!(csr.is_sorted());
        let t = csr.transpose();
        prop_assert!(t.is_sorted());
        let swapped = Coo::new(coo.ncols(), coo.nrows(), coo.cols().to_vec(), coo.rows().to_vec(), coo.values().to_vec()).unwrap();
        prop_assert_eq!(&t, &swapped.to_canonical_csr().unwrap());
        prop_assert_eq!(Csr::from_sprs(&csr.to_sprs().unwrap()).unwrap(), csr);
    }
}

#[test]
fn many_buckets_use_the_partitioned_sort_correctly() {
    // > 2^16 rows and > 2^20 entries: the two-pass (partition, then in-cache)
    // counting sort; checked against a plain sort and against the COO input.
    let (nr, nc) = (300_007usize, 70_001usize);
    let nnz = 1_300_000usize;
    let mut x = 99u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let rows: Vec<u32> = (0..nnz).map(|_| (next() % nr as u64) as u32).collect();
    let cols: Vec<u32> = (0..nnz).map(|_| (next() % nc as u64) as u32).collect();
    let vals: Vec<u32> = (0..nnz as u32).collect();
    let coo = Coo::new(nr, nc, rows.clone(), cols.clone(), vals).unwrap();
    let m = coo.to_csr().unwrap();
    assert_eq!(m, coo.clone().into_csr().unwrap());
    let mut order: Vec<usize> = (0..nnz).collect();
    order.sort_by_key(|&k| rows[k]); // stable: input order within a row
    assert_eq!(
        m.col_idx(),
        order.iter().map(|&k| cols[k]).collect::<Vec<_>>()
    );
    assert_eq!(
        m.values(),
        order.iter().map(|&k| k as u32).collect::<Vec<_>>()
    );
    for r in [0, 1, 65_535, 65_536, 131_072, nr - 1] {
        let n = rows.iter().filter(|&&x| x as usize == r).count();
        assert_eq!(m.row_range(r).len(), n, "row {r}");
    }
    // Transpose (70001 buckets) and back (300007 buckets).
    let t = m.transpose();
    let mut order_t: Vec<usize> = (0..nnz).collect();
    order_t.sort_by_key(|&k| (cols[k], rows[k], k));
    assert_eq!(
        t.col_idx(),
        order_t.iter().map(|&k| rows[k]).collect::<Vec<_>>()
    );
    let mut sorted = m.clone();
    sorted.sort_indices();
    assert_eq!(t.transpose(), sorted);
}

#[test]
fn empty_shapes() {
    for (nr, nc) in [(0usize, 0usize), (0, 5), (5, 0), (3, 4)] {
        let coo = Coo::<f32>::empty(nr, nc).unwrap();
        let m = coo.to_csr().unwrap();
        assert_eq!((m.nrows(), m.ncols(), m.nnz()), (nr, nc, 0));
        assert_eq!(m.row_ptr(), vec![0u32; nr + 1]);
        let t = m.transpose();
        assert_eq!((t.nrows(), t.ncols(), t.nnz()), (nc, nr, 0));
        assert_eq!(m.to_coo(), coo);
        assert_eq!(m.clone().into_coo(), coo);
        let mut c = m.clone();
        c.sum_duplicates();
        assert_eq!(c, m);
        assert_eq!(Csr::from_sprs(&m.to_sprs().unwrap()).unwrap(), m);
        assert!(m.is_sorted() && m.check_canonical().is_ok());
    }
}

#[test]
fn into_coo_reuses_storage_order() {
    let m = Csr::new(3, 3, vec![0, 2, 2, 3], vec![2, 0, 1], vec![1, 2, 3]).unwrap();
    let c = m.clone().into_coo();
    assert_eq!(c.rows(), &[0, 0, 2]);
    assert_eq!(c.cols(), &[2, 0, 1]);
    assert_eq!(c.values(), &[1, 2, 3]);
    assert_eq!(c.into_csr().unwrap(), m);
}
