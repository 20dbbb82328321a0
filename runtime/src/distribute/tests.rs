use super::*;
use crate::partition::level_order;
use proptest::collection::vec;
use proptest::prelude::*;
use std::collections::BTreeSet;

/// `row_ptr` and `col` of a pattern given row by row.
fn pattern(rows: &[Vec<u32>]) -> (Vec<u32>, Vec<u32>) {
    let mut ptr = vec![0u32];
    let mut col = Vec::new();
    for r in rows {
        col.extend_from_slice(r);
        ptr.push(col.len() as u32);
    }
    (ptr, col)
}

/// `y[t] = Σ val[e] · x[col[e]]` over task `t`'s fine tasks.
fn spmv(row_ptr: &[u32], col: &[u32], val: &[i64], x: &[i64]) -> Vec<i64> {
    row_ptr
        .windows(2)
        .map(|w| {
            (w[0] as usize..w[1] as usize)
                .map(|e| val[e] * x[col[e] as usize])
                .sum()
        })
        .collect()
}

/// The 6×6 hand example: a band plus the corner entries (2,5) and (5,0).
fn six() -> (Vec<u32>, Vec<u32>) {
    pattern(&[
        vec![0, 1],
        vec![0, 1, 2],
        vec![1, 2, 3, 5],
        vec![2, 3, 4],
        vec![3, 4, 5],
        vec![0, 5],
    ])
}

fn halo(part: usize, offset: usize, global: &[u32]) -> HaloFrom {
    HaloFrom {
        part,
        offset,
        global: global.to_vec(),
    }
}

fn send(part: usize, local: &[u32]) -> HaloTo {
    HaloTo {
        part,
        local: local.to_vec(),
    }
}

#[test]
fn six_by_six_over_two_parts() {
    let (ptr, col) = six();
    // Weights (fine + 1) 3 4 5 | 4 4 3: 12 and 11 of 23.
    let d = Distribution::new(PartitionKind::Rows, 2, &ptr, &col, 6).unwrap();
    assert_eq!(d.ownership().task_owner(), &[0, 0, 0, 1, 1, 1]);
    assert_eq!(d.ownership().x_owner(), &[0, 0, 0, 1, 1, 1]);
    let [a, b] = d.parts() else { panic!() };
    assert_eq!(a.tasks, [0, 1, 2]);
    assert_eq!(a.owned_x, [0, 1, 2]);
    assert_eq!(a.row_ptr, [0, 2, 5, 9]);
    // Local x = [x0 x1 x2 | x3 x5].
    assert_eq!(a.col, [0, 1, 0, 1, 2, 1, 2, 3, 4]);
    assert_eq!(a.halo, [halo(1, 3, &[3, 5])]);
    assert_eq!(a.sends, [send(1, &[0, 2])]);
    assert_eq!(b.tasks, [3, 4, 5]);
    assert_eq!(b.row_ptr, [0, 3, 6, 8]);
    // Local x = [x3 x4 x5 | x0 x2].
    assert_eq!(b.col, [4, 0, 1, 0, 1, 2, 3, 2]);
    assert_eq!(b.halo, [halo(0, 3, &[0, 2])]);
    assert_eq!(b.sends, [send(0, &[0, 2])]);
    assert_eq!((a.local_x_len(), b.local_x_len()), (5, 5));
    assert_eq!((d.exchanged(), d.replication()), (4, 4));
    assert_eq!((d.max_halo(), d.max_fine()), (2, 9));
    check(&d, &ptr, &col, 6, Some(PartitionKind::Rows));
}

#[test]
fn six_by_six_over_three_parts() {
    let (ptr, col) = six();
    let d = Distribution::new(PartitionKind::Rows, 3, &ptr, &col, 6).unwrap();
    assert_eq!(d.ownership().task_owner(), &[0, 0, 1, 1, 2, 2]);
    let [a, b, c] = d.parts() else { panic!() };
    // Local x = [x0 x1 | x2].
    assert_eq!(
        (&a.row_ptr[..], &a.col[..]),
        (&[0, 2, 5][..], &[0, 1, 0, 1, 2][..])
    );
    assert_eq!(a.halo, [halo(1, 2, &[2])]);
    assert_eq!(a.sends, [send(1, &[1]), send(2, &[0])]);
    // Local x = [x2 x3 | x1 | x4 x5].
    assert_eq!(b.tasks, [2, 3]);
    assert_eq!(b.row_ptr, [0, 4, 7]);
    assert_eq!(b.col, [2, 0, 1, 4, 0, 1, 3]);
    assert_eq!(b.halo, [halo(0, 2, &[1]), halo(2, 3, &[4, 5])]);
    assert_eq!(b.sends, [send(0, &[0]), send(2, &[1])]);
    // Local x = [x4 x5 | x0 | x3].
    assert_eq!(c.tasks, [4, 5]);
    assert_eq!(c.col, [3, 0, 1, 2, 1]);
    assert_eq!(c.halo, [halo(0, 2, &[0]), halo(1, 3, &[3])]);
    assert_eq!(c.sends, [send(1, &[0, 1])]);
    // U_p = 3 + 5 + 4 entries, U = 6.
    assert_eq!((d.exchanged(), d.replication()), (6, 6));
    assert_eq!((d.max_halo(), d.max_fine()), (3, 7));
    let x: Vec<i64> = (10..16).collect();
    let mut local: Vec<Vec<i64>> = (0..3)
        .map(|p| {
            let mut v = d.owned_x_part(p, &x).unwrap();
            v.resize(d.parts()[p].local_x_len(), -1);
            v
        })
        .collect();
    d.exchange_host(&mut local).unwrap();
    assert_eq!(
        local,
        [
            vec![10, 11, 12],
            vec![12, 13, 11, 14, 15],
            vec![14, 15, 10, 13]
        ]
    );
    assert_eq!(d.assemble_x(&local).unwrap(), x);
    check(&d, &ptr, &col, 6, Some(PartitionKind::Rows));
}

#[test]
fn a_rectangular_kernel_splits_x_into_equal_blocks() {
    // 2 tasks reading an x of 7 entries, over 3 parts: x blocks 0..3 3..5 5..7.
    let (ptr, col) = pattern(&[vec![6, 0, 3], vec![4, 4, 1]]);
    let own = Ownership::new(PartitionKind::Rows, 3, &ptr, &col, 7).unwrap();
    assert_eq!(own.x_owner(), &[0, 0, 0, 1, 1, 2, 2]);
    assert_eq!(own.task_owner(), &[0, 2]);
    let d = Distribution::from_ownership(own, &ptr, &col, 7).unwrap();
    let [a, b, c] = d.parts() else { panic!() };
    assert!(b.tasks.is_empty() && b.col.is_empty() && b.halo.is_empty());
    assert_eq!(b.row_ptr, [0]);
    assert_eq!(a.halo, [halo(1, 3, &[3]), halo(2, 4, &[6])]);
    assert_eq!(a.col, [4, 0, 3]);
    // Part 2 owns x5 x6 and reads x1 (part 0) and x4 (part 1).
    assert_eq!(c.halo, [halo(0, 2, &[1]), halo(1, 3, &[4])]);
    assert_eq!(c.col, [3, 3, 2]);
    assert_eq!(b.sends, [send(0, &[0]), send(2, &[1])]);
    assert_eq!(
        (a.sends.clone(), c.sends.clone()),
        (vec![send(2, &[1])], vec![send(0, &[1])])
    );
    check(&d, &ptr, &col, 7, Some(PartitionKind::Rows));
}

#[test]
fn errors_name_the_problem() {
    let (ptr, col) = six();
    let err = |r: Result<Distribution>| r.unwrap_err().to_string();
    let rows = PartitionKind::Rows;
    assert!(err(Distribution::new(rows, 0, &ptr, &col, 6)).contains("at least 1"));
    assert!(err(Distribution::new(rows, 1025, &ptr, &col, 6)).contains("at most 1024"));
    let d = Distribution::new(rows, 2, &ptr, &col, 6).unwrap();
    for share in [-0.5, 1.5, f64::NAN] {
        let e = err(d.clone().with_whole_blocks(share));
        assert!(e.contains("fraction in 0..=1"), "{e}");
    }
    let e = err(Distribution::new(rows, 2, &ptr, &col, 5));
    assert!(e.contains("col[8]") && e.contains("index 5"), "{e}");
    assert!(err(Distribution::new(rows, 2, &[], &[], 0)).contains("n_tasks + 1"));
    assert!(err(Distribution::new(rows, 2, &[1, 1], &[0], 1)).contains("row_ptr[0] = 1"));
    let e = err(Distribution::new(rows, 2, &[0, 2, 1, 2], &[0, 0], 1));
    assert!(e.contains("decreases at task 1"), "{e}");
    let e = err(Distribution::new(rows, 2, &[0, 1, 3], &[0, 0], 1));
    assert!(e.contains("expected length 3, got 2"), "{e}");
    let e = err(Distribution::new(PartitionKind::Levels, 2, &ptr, &col, 7));
    assert!(e.contains("square") && e.contains("x_len = 7"), "{e}");
    let own = Ownership::new(rows, 2, &ptr, &col, 6).unwrap();
    let e = err(Distribution::from_ownership(own.clone(), &ptr, &col, 7));
    assert!(e.contains("x_owner"), "{e}");
    let e = err(Distribution::from_ownership(own, &ptr[..6], &col[..15], 6));
    assert!(e.contains("task_owner"), "{e}");
    let e = Ownership::from_owners(2, vec![0, 2], vec![])
        .unwrap_err()
        .to_string();
    assert!(e.contains("task_owner[1]"), "{e}");
    let e = PartitionKind::from_name("metis").unwrap_err().to_string();
    assert!(e.contains("`metis`") && e.contains("rows, levels"), "{e}");
    assert_eq!(
        " Levels".parse::<PartitionKind>().unwrap(),
        PartitionKind::Levels
    );
    assert_eq!(PartitionKind::default().to_string(), "rows");
    // The array helpers check their lengths and parts.
    let d = Distribution::new(rows, 2, &ptr, &col, 6).unwrap();
    assert!(d.fine_part(0, &[0u8; 16]).is_err());
    assert!(d.fine_part(2, &[0u8; 17]).is_err());
    assert!(d.task_part(0, &[0u8; 5]).is_err());
    assert!(d.x_part(0, &[0u8; 7]).is_err());
    assert!(d.assemble_tasks(&[vec![0u8; 3]]).is_err());
    assert!(d.assemble_tasks(&[vec![0u8; 3], vec![0u8; 2]]).is_err());
    assert!(d.assemble_x(&[vec![0u8; 3], vec![0u8; 4]]).is_err());
    assert!(d.exchange_host(&mut [vec![0u8; 5], vec![0u8; 4]]).is_err());
    assert!(d.exchange_host(&mut [vec![0u8; 5]]).is_err());
}

#[test]
fn empty_kernels_distribute() {
    let d = Distribution::new(PartitionKind::Levels, 3, &[0], &[], 0).unwrap();
    assert!(d
        .parts()
        .iter()
        .all(|p| p.row_ptr == [0] && p.local_x_len() == 0));
    assert_eq!((d.exchanged(), d.replication(), d.max_fine()), (0, 0, 0));
    assert_eq!(
        d.assemble_tasks::<u8>(&[vec![], vec![], vec![]]).unwrap(),
        []
    );
    // Empty rows still weigh one each.
    let own = Ownership::new(PartitionKind::Rows, 4, &[0; 9], &[], 3).unwrap();
    assert_eq!(own.task_owner(), &[0, 0, 1, 1, 2, 2, 3, 3]);
    assert_eq!(own.x_owner(), &[0, 1, 2]);
}

/// A `side`² grid's 5-point pattern (self included), numbered by a random
/// permutation.
fn shuffled_grid(side: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let n = side * side;
    let mut name: Vec<u32> = (0..n as u32).collect();
    let mut rng = crate::rng::chunk_rng(seed, crate::rng::PERMUTATION, 0);
    for i in (1..n).rev() {
        name.swap(i, crate::rng::below(&mut rng, i as u32 + 1) as usize);
    }
    let mut rows = vec![Vec::new(); n];
    for y in 0..side {
        for x in 0..side {
            let v = y * side + x;
            let mut row = vec![name[v]];
            if x > 0 {
                row.push(name[v - 1]);
            }
            if x + 1 < side {
                row.push(name[v + 1]);
            }
            if y > 0 {
                row.push(name[v - side]);
            }
            if y + 1 < side {
                row.push(name[v + side]);
            }
            rows[name[v] as usize] = row;
        }
    }
    pattern(&rows)
}

#[test]
fn levels_cut_a_shuffled_grid_with_a_small_halo() {
    let (ptr, col) = shuffled_grid(32, 11);
    let n = ptr.len() - 1;
    let rows = Distribution::new(PartitionKind::Rows, 4, &ptr, &col, n).unwrap();
    let levels = Distribution::new(PartitionKind::Levels, 4, &ptr, &col, n).unwrap();
    let (r, l) = (rows.exchanged(), levels.exchanged());
    assert!(3 * l < r, "levels exchange {l} entries, rows {r}");
    assert!(levels.replication() <= l && rows.replication() <= r);
    // Both stay balanced: 1024 tasks of ≈ 5 fine tasks over 4 parts.
    for d in [&rows, &levels] {
        assert!(d.max_fine() <= col.len() / 4 + 6, "{}", d.max_fine());
    }
    check(&levels, &ptr, &col, n, Some(PartitionKind::Levels));
}

/// Checks every property of a distribution of the pattern against brute
/// force, an integer SpMV included (so that equality is exact); with a
/// kind, also that the ownership is that kind's balanced blocks.
fn check(d: &Distribution, ptr: &[u32], col: &[u32], x_len: usize, kind: Option<PartitionKind>) {
    check_widened(d, ptr, col, x_len, kind, 1.0);
}

/// [`check`] of a distribution widened by
/// [`Distribution::with_whole_blocks`]`(share)`: a halo holding at least
/// `share` of its sender's entries holds all of them.
fn check_widened(
    d: &Distribution,
    ptr: &[u32],
    col: &[u32],
    x_len: usize,
    kind: Option<PartitionKind>,
    share: f64,
) {
    let n = ptr.len() - 1;
    let nnz = col.len();
    let own = d.ownership();
    let parts = own.parts();
    assert_eq!((d.n_tasks(), d.x_len(), d.fine_len()), (n, x_len, nnz));
    assert_eq!(d.parts().len(), parts);
    if let Some(kind) = kind {
        check_ownership(own, ptr, col, x_len, kind);
    }
    let val: Vec<i64> = (0..nnz as i64).map(|e| e % 7 - 3).collect();
    let x: Vec<i64> = (0..x_len as i64).map(|i| (i * 37) % 11 - 5).collect();
    let fine_ids: Vec<u32> = (0..nnz as u32).collect();
    let mut fine_seen = vec![0; nnz];
    let mut unique_sum = 0;
    let mut read_any = BTreeSet::new();
    let mut local_x = Vec::new();
    for (p, l) in d.parts().iter().enumerate() {
        assert_eq!(l.tasks, own_list(own.task_owner(), p));
        assert_eq!(l.owned_x, own_list(own.x_owner(), p));
        assert_eq!(l.row_ptr.len(), l.tasks.len() + 1);
        assert_eq!(l.row_ptr[0], 0);
        // Fine tasks: each global one in its task's part, in task order.
        let ids = d.fine_part(p, &fine_ids).unwrap();
        assert_eq!(ids.len(), l.fine_len());
        let mut reads: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); parts];
        for (i, &t) in l.tasks.iter().enumerate() {
            let (lo, hi) = (l.row_ptr[i] as usize, l.row_ptr[i + 1] as usize);
            let want: Vec<u32> = (ptr[t as usize]..ptr[t as usize + 1]).collect();
            assert_eq!(ids[lo..hi], want[..]);
            for (&e, &c) in ids[lo..hi].iter().zip(&l.col[lo..hi]) {
                fine_seen[e as usize] += 1;
                let g = col[e as usize];
                reads[own.x_owner()[g as usize] as usize].insert(g);
                assert_eq!(global_of(l, c as usize, p, own), g);
            }
        }
        unique_sum += reads.iter().map(BTreeSet::len).sum::<usize>();
        read_any.extend(reads.iter().flatten().copied());
        // The halo is exactly the remote entries read, in part order, or
        // all the sender's entries where it reads `share` of them.
        let mut offset = l.owned_x.len();
        let expected: Vec<HaloFrom> = (0..parts)
            .filter(|&q| q != p && !reads[q].is_empty())
            .map(|q| {
                let all = own_list(own.x_owner(), q);
                let got: Vec<u32> = if reads[q].len() as f64 >= share * all.len() as f64 {
                    all
                } else {
                    reads[q].iter().copied().collect()
                };
                let h = halo(q, offset, &got);
                offset += h.global.len();
                h
            })
            .collect();
        assert_eq!(l.halo, expected);
        assert_eq!(l.local_x_len(), offset);
        // Sends mirror the receivers' halos.
        let receivers: Vec<usize> = (0..parts)
            .filter(|&r| d.parts()[r].halo_from(p).is_some())
            .collect();
        assert_eq!(
            l.sends.iter().map(|s| s.part).collect::<Vec<_>>(),
            receivers
        );
        for s in &l.sends {
            let h = d.parts()[s.part].halo_from(p).unwrap();
            let sent: Vec<u32> = s.local.iter().map(|&i| l.owned_x[i as usize]).collect();
            assert_eq!(sent, h.global);
        }
        // Run the part on garbage halos filled by the exchange below.
        let mut lx = d.owned_x_part(p, &x).unwrap();
        lx.resize(l.local_x_len(), i64::MIN);
        local_x.push(lx);
    }
    assert!(fine_seen.iter().all(|&c| c == 1));
    assert_eq!(d.replication(), unique_sum - read_any.len());
    let halo_total: usize = d.parts().iter().map(PartLayout::halo_len).sum();
    let send_total: usize = d.parts().iter().map(PartLayout::send_len).sum();
    assert_eq!((d.exchanged(), send_total), (halo_total, halo_total));
    d.exchange_host(&mut local_x).unwrap();
    let mut y_parts = Vec::new();
    for (p, l) in d.parts().iter().enumerate() {
        assert_eq!(local_x[p], d.x_part(p, &x).unwrap());
        let v = d.fine_part(p, &val).unwrap();
        y_parts.push(spmv(&l.row_ptr, &l.col, &v, &local_x[p]));
    }
    assert_eq!(
        d.assemble_tasks(&y_parts).unwrap(),
        spmv(ptr, col, &val, &x)
    );
    assert_eq!(d.assemble_x(&local_x).unwrap(), x);
    let t: Vec<u32> = (0..n as u32).map(|t| t * 3 + 1).collect();
    let t_parts: Vec<Vec<u32>> = (0..parts).map(|p| d.task_part(p, &t).unwrap()).collect();
    assert_eq!(d.assemble_tasks(&t_parts).unwrap(), t);
}

/// Indices whose owner is `p`, ascending.
fn own_list(owner: &[u32], p: usize) -> Vec<u32> {
    (0..owner.len() as u32)
        .filter(|&i| owner[i as usize] as usize == p)
        .collect()
}

/// The global entry at local x index `c` of part `p`.
fn global_of(l: &PartLayout, c: usize, p: usize, own: &Ownership) -> u32 {
    if c < l.owned_x.len() {
        return l.owned_x[c];
    }
    let h = l
        .halo
        .iter()
        .find(|h| (h.offset..h.offset + h.global.len()).contains(&c))
        .expect("a local index inside the local x");
    let g = h.global[c - h.offset];
    assert_eq!(own.x_owner()[g as usize] as usize, h.part);
    assert_ne!(h.part, p);
    g
}

/// Owners cover everything once, cut the kind's order into balanced
/// contiguous blocks, and x follows tasks on square kernels.
fn check_ownership(own: &Ownership, ptr: &[u32], col: &[u32], x_len: usize, kind: PartitionKind) {
    let n = ptr.len() - 1;
    let parts = own.parts();
    assert_eq!(own.task_owner().len(), n);
    assert_eq!(own.x_owner().len(), x_len);
    assert!(own.task_owner().iter().all(|&o| (o as usize) < parts));
    let order: Vec<u32> = match kind {
        PartitionKind::Rows => (0..n as u32).collect(),
        PartitionKind::Levels => {
            let a = crate::Csr::new(n, n, ptr.to_vec(), col.to_vec(), vec![(); col.len()]);
            level_order(&a.unwrap(), 0).unwrap()
        }
    };
    let owners: Vec<u32> = order
        .iter()
        .map(|&t| own.task_owner()[t as usize])
        .collect();
    assert!(owners.windows(2).all(|w| w[0] <= w[1]), "{owners:?}");
    let weight = |t: u32| u64::from(ptr[t as usize + 1] - ptr[t as usize]) + 1;
    let total: u64 = (0..n as u32).map(weight).sum();
    let max_w = (0..n as u32).map(weight).max().unwrap_or(0);
    let mut per_part = vec![0u64; parts];
    for t in 0..n as u32 {
        per_part[own.task_owner()[t as usize] as usize] += weight(t);
    }
    let share = total.div_ceil(parts as u64);
    assert!(per_part.iter().all(|&w| w <= share + max_w), "{per_part:?}");
    if x_len == n {
        assert_eq!(own.x_owner(), own.task_owner());
    } else {
        let sizes: Vec<usize> = (0..parts)
            .map(|p| own_list(own.x_owner(), p).len())
            .collect();
        assert!(own.x_owner().windows(2).all(|w| w[0] <= w[1]));
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
    }
}

proptest! {
    /// Random patterns, square or not, over 1 to 5 parts (often more parts
    /// than tasks), both kinds where they apply: every property of
    /// [`check`].
    #[test]
    fn distributions_are_exact(
        n in 0usize..=60,
        square in any::<bool>(),
        x_rect in 1usize..=60,
        rows in vec(vec(any::<u32>(), 0..7), 60),
        parts in 1usize..=5,
        levels in any::<bool>(),
        share in prop_oneof![Just(0.0), Just(1.0), 0.0f64..=1.0],
    ) {
        let x_len = if square { n } else { x_rect };
        let rows: Vec<Vec<u32>> = rows[..n]
            .iter()
            .map(|r| r.iter().map(|&c| c % x_len as u32).collect())
            .collect();
        let (ptr, col) = pattern(&rows);
        let kind = if levels && x_len == n { PartitionKind::Levels } else { PartitionKind::Rows };
        let d = Distribution::new(kind, parts, &ptr, &col, x_len).unwrap();
        check(&d, &ptr, &col, x_len, Some(kind));
        if x_len != n {
            let e = Distribution::new(PartitionKind::Levels, parts, &ptr, &col, x_len);
            prop_assert!(e.unwrap_err().to_string().contains("square"));
        }
        // Any ownership at all distributes exactly too.
        let shift = |o: &[u32]| o.iter().enumerate().map(|(i, &p)| (p + i as u32) % parts as u32).collect();
        let own = Ownership::from_owners(parts, shift(d.ownership().task_owner()), shift(d.ownership().x_owner())).unwrap();
        let scattered = Distribution::from_ownership(own, &ptr, &col, x_len).unwrap();
        check(&scattered, &ptr, &col, x_len, None);
        // Widened halos (whole blocks where a pair reads `share` of its
        // sender) exchange and compute exactly too.
        let wide = scattered.with_whole_blocks(share).unwrap();
        check_widened(&wide, &ptr, &col, x_len, None, share);
    }
}

proptest! {
    /// A square pattern given as contiguous row blocks distributes exactly
    /// as the whole pattern with the blocks' ownership: the same layouts,
    /// exchange and replication; and it has no global fine array to cut.
    #[test]
    fn row_blocks_distribute_as_the_whole(
        n in 1usize..=60,
        rows in vec(vec(any::<u32>(), 0..7), 60),
        cuts in vec(0usize..=60, 0..5),
    ) {
        let rows: Vec<Vec<u32>> = rows[..n]
            .iter()
            .map(|r| r.iter().map(|&c| c % n as u32).collect())
            .collect();
        let (ptr, col) = pattern(&rows);
        let mut edges: Vec<usize> = cuts.iter().map(|&c| c.min(n)).collect();
        edges.push(0);
        edges.push(n);
        edges.sort_unstable();
        let blocks: Vec<(Vec<u32>, Vec<u32>)> = edges
            .windows(2)
            .map(|w| pattern(&rows[w[0]..w[1]]))
            .collect();
        let refs: Vec<(&[u32], &[u32])> =
            blocks.iter().map(|(p, c)| (&p[..], &c[..])).collect();
        let d = Distribution::from_row_blocks(&refs).unwrap();
        let owner: Vec<u32> = edges
            .windows(2)
            .enumerate()
            .flat_map(|(p, w)| std::iter::repeat(p as u32).take(w[1] - w[0]))
            .collect();
        let own = Ownership::from_owners(blocks.len(), owner.clone(), owner).unwrap();
        let whole = Distribution::from_ownership(own, &ptr, &col, n).unwrap();
        prop_assert_eq!(d.parts(), whole.parts());
        prop_assert_eq!(d.ownership(), whole.ownership());
        prop_assert_eq!(
            (d.exchanged(), d.replication(), d.fine_len()),
            (whole.exchanged(), whole.replication(), whole.fine_len())
        );
        let e = d.fine_part(0, &col).unwrap_err().to_string();
        prop_assert!(e.contains("row blocks"), "{}", e);
    }
}
