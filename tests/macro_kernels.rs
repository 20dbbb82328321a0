//! `#[nested_reduce]` kernels run on the CPU twin: against plain reference
//! loops, against the plain function each macro keeps, over all tasks and over
//! task lists that split long rows; faults; Rust release semantics.

mod macro_common;

use macro_common::*;
use warpfit::__private::{AccType, GatherKernel, NestedKernel, ScalarType, SharedOut};
use warpfit::prelude::*;

#[test]
fn spmv_matches_reference_and_plain_function() {
    let (ptr, col) = graph();
    let n = ptr.len() - 1;
    let val = weights(col.len());
    let x: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
    let mut want = vec![0.0f32; n];
    for r in 0..n {
        for k in ptr[r] as usize..ptr[r + 1] as usize {
            want[r] += val[k] * x[col[k] as usize];
        }
    }
    let mut plain = vec![0.0f32; n];
    for r in 0..n {
        spmv(r, &ptr, &col, &val, &x, &mut plain);
    }
    assert_eq!(plain, want);
    let mut y = vec![f32::NAN; n];
    spmv::launch(&Device::cpu(), n, &ptr, &col, &val, &x, &mut y).unwrap();
    assert_eq!(y, want);
    for list in task_lists(&ptr) {
        let mut y = vec![f32::NAN; n];
        spmv::launch(&Device::cpu(), &list, &ptr, &col, &val, &x, &mut y).unwrap();
        assert_eq!(y, want, "{list:?}");
    }
    assert_eq!(spmv::SPEC.acc, AccType::Scalar(ScalarType::F32));
    assert_eq!(spmv::SPEC.params.len(), 5);
    assert_eq!(spmv::GATHERED, Some("x"));
}

#[test]
fn relax_matches_reference_over_split_tasks() {
    let (ptr, src) = graph();
    let n = ptr.len() - 1;
    let w = weights(src.len());
    let dist = vec![0.0, 4.0, f32::INFINITY, 1.5, 2.0, f32::INFINITY];
    let want: Vec<f32> = (0..n)
        .map(|v| {
            (ptr[v] as usize..ptr[v + 1] as usize)
                .fold(dist[v], |d, e| d.min(dist[src[e] as usize] + w[e]))
        })
        .collect();
    for list in task_lists(&ptr) {
        let mut next = vec![f32::NAN; n];
        relax::launch(&Device::cpu(), &list, &ptr, &src, &w, &dist, &mut next).unwrap();
        assert_eq!(next, want);
    }
    let mut next = vec![0.0; n];
    relax::launch_with(
        &Device::cpu(),
        &LaunchConfig::default(),
        n,
        &ptr,
        &src,
        &w,
        &dist,
        &mut next,
    )
    .unwrap();
    assert_eq!(next, want);
}

#[test]
fn pagerank_matches_reference() {
    let (ptr, src) = graph();
    let n = ptr.len() - 1;
    let rank: Vec<f32> = (0..n).map(|i| 0.125 * (i + 1) as f32).collect();
    let inv_deg = vec![1.0, 0.5, 0.25, 1.0, 0.5, 0.5];
    let (base, damping) = (0.025f32, 0.75f32);
    let want: Vec<f32> = (0..n)
        .map(|v| {
            let s: f32 = (ptr[v] as usize..ptr[v + 1] as usize)
                .map(|e| rank[src[e] as usize] * inv_deg[src[e] as usize])
                .fold(0.0, |a, b| a + b);
            base + damping * s
        })
        .collect();
    for list in task_lists(&ptr) {
        let mut next = vec![0.0; n];
        pagerank::launch(
            &Device::cpu(),
            &list,
            &ptr,
            &src,
            &rank,
            &inv_deg,
            base,
            damping,
            &mut next,
        )
        .unwrap();
        assert_eq!(next, want);
    }
    let mut plain = vec![0.0; n];
    for v in 0..n {
        pagerank(v, &ptr, &src, &rank, &inv_deg, base, damping, &mut plain);
    }
    assert_eq!(plain, want);
    // Two gathered arrays at one index: one work graph, a tuple per edge.
    assert_eq!(pagerank::GATHERED, Some("rank, inv_deg"));
    let g = pagerank::work_graph(n, &ptr, &src, &rank, &inv_deg, base, damping).unwrap();
    assert_eq!(g.n_tasks(), n);
    assert_eq!(g.gathered(), &src[..]);
    // A gather at another index expression is not a throttling shape.
    let err = gather_two_indices::work_graph(n, &ptr, &src, &rank).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("`x` through several different index expressions")),
        "{err}"
    );
}

/// Reads `x` at two index expressions: no single gathered index.
#[nested_reduce]
fn gather_two_indices(v: usize, ptr: &[u32], src: &[u32], x: &[f32], y: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    y[v] = (lo..hi)
        .map(|e| x[src[e] as usize] * x[src[e] as usize / 2])
        .fold(0.0, |a, b| a + b);
}

#[test]
fn bfs_levels_reach_every_vertex() {
    let (ptr, src) = graph();
    let n = ptr.len() - 1;
    let mut level = vec![-1i32; n];
    level[0] = 0;
    let mut cur = 0;
    loop {
        let mut next = vec![0i32; n];
        let mut changed = vec![7u32; n];
        bfs_step::launch(
            &Device::cpu(),
            n,
            &ptr,
            &src,
            &level,
            cur,
            &mut next,
            &mut changed,
        )
        .unwrap();
        let mut plain_next = vec![0i32; n];
        let mut plain_changed = vec![0u32; n];
        for v in 0..n {
            bfs_step(
                v,
                &ptr,
                &src,
                &level,
                cur,
                &mut plain_next,
                &mut plain_changed,
            );
        }
        assert_eq!((&next, &changed), (&plain_next, &plain_changed));
        level = next;
        cur += 1;
        if changed.iter().all(|&c| c == 0) {
            break;
        }
    }
    // In-edges of `graph`: 0 -> 2, 3; 2 -> 4; 3 -> 5; nothing reaches 1.
    assert_eq!(level, vec![0, -1, 1, 1, 2, 2]);
}

#[test]
fn device_fn_reduce_matches_reference() {
    let (ptr, src) = graph();
    let n = ptr.len() - 1;
    let w = weights(src.len());
    let dist = vec![0.0, 4.0, -1.0, 1.5, 2.0, 3.0];
    let want: Vec<f32> = (0..n)
        .map(|v| {
            (ptr[v] as usize..ptr[v + 1] as usize).fold(f32::NEG_INFINITY, |d, e| {
                d.max(dist[src[e] as usize] + w[e])
            })
        })
        .collect();
    for list in task_lists(&ptr) {
        let mut next = vec![0.0; n];
        longest::launch(&Device::cpu(), &list, &ptr, &src, &w, &dist, &mut next).unwrap();
        assert_eq!(next, want);
    }
    assert_eq!(longest::SPEC.device_fns.len(), 1);
    assert_eq!(longest::SPEC.device_fns[0].name, "max_plus");
    let src_text = longest::SPEC.assembled_source();
    assert!(src_text.contains(
        "template <class F> __device__ __forceinline__ float max_plus(float a, float b, F& wf_f)"
    ));
    assert!(src_text.contains("return warpfit_user::max_plus(wf_a, wf_b, wf_f);"));
}

#[test]
fn literal_arguments_take_the_parameter_type_and_task_copies_own_outputs() {
    let ptr = [0u32, 3, 3, 5];
    let val = [1.0f32, -4.0, 2.5, -0.75, 0.0];
    let (want_y, want_z) = literal_args_reference(&ptr, &val);
    let split = TaskList::chunked(&ptr, 1).unwrap();
    let (mut y, mut z) = (vec![9.0f32; 3], vec![9i64; 3]);
    literal_args::launch(&Device::cpu(), 3, &ptr, &val, &mut y, &mut z).unwrap();
    assert_eq!((&y, &z), (&want_y, &want_z));
    let (mut y, mut z) = (vec![9.0f32; 3], vec![9i64; 3]);
    literal_args::launch(&Device::cpu(), &split, &ptr, &val, &mut y, &mut z).unwrap();
    assert_eq!((&y, &z), (&want_y, &want_z));
    assert_eq!(want_y, vec![5.75, -0.25, 1.25]);
    // The CUDA passes the literals in spellings that convert exactly to the
    // parameters' types, whichever they are.
    let cuda = literal_args::CUDA_SOURCE;
    assert!(cuda.contains("warpfit_user::add1(") && cuda.contains(", 1.0, wf_f)"));
    assert!(cuda.contains(", 0.5, wf_f)") && cuda.contains(", -0.25, wf_f)"));
    assert!(cuda.contains("int64_t(-3ll), wf_f)"));
}

#[test]
fn any_and_all_match_reference_over_split_tasks() {
    let (ptr, src) = skewed_graph(700, 5);
    let n = ptr.len() - 1;
    let level: Vec<i32> = (0..n as i32)
        .map(|v| if v % 7 == 0 { v % 3 } else { -1 })
        .collect();
    let parents = |v: usize, cur: i32| {
        src[ptr[v] as usize..ptr[v + 1] as usize]
            .iter()
            .any(|&u| level[u as usize] == cur)
    };
    let reached = |v: usize| {
        src[ptr[v] as usize..ptr[v + 1] as usize]
            .iter()
            .all(|&u| level[u as usize] >= 0)
    };
    let cpu = Device::cpu();
    for cur in [0, 1, 2, 5] {
        let want: Vec<u8> = (0..n).map(|v| parents(v, cur) as u8).collect();
        assert!(want.contains(&1) || cur == 5);
        let mut got = vec![9u8; n];
        has_parent::launch(&cpu, n, &ptr, &src, &level, cur, &mut got).unwrap();
        assert_eq!(got, want, "all tasks, level {cur}");
        for len in [1, 3, 16] {
            let list = TaskList::chunked(&ptr, len).unwrap();
            let mut got = vec![9u8; n];
            has_parent::launch(&cpu, &list, &ptr, &src, &level, cur, &mut got).unwrap();
            assert_eq!(got, want, "chunks of {len}, level {cur}");
        }
        // The plain function the macro keeps.
        let mut plain = vec![9u8; n];
        for v in 0..n {
            has_parent(v, &ptr, &src, &level, cur, &mut plain);
        }
        assert_eq!(plain, want);
    }
    let want: Vec<bool> = (0..n).map(reached).collect();
    assert!(want.contains(&true) && want.contains(&false));
    for list in [
        TaskList::from_ptr(&ptr).unwrap(),
        TaskList::chunked(&ptr, 2).unwrap(),
    ] {
        let mut got = vec![false; n];
        all_reached::launch(&cpu, &list, &ptr, &src, &level, &mut got).unwrap();
        assert_eq!(got, want);
    }
}

#[test]
fn any_stops_at_the_first_true_element() {
    // Fine task 1 of task 0 settles `any`; fine task 2 would gather out of
    // range. Rust's `any` never evaluates it, and neither does the twin's
    // serial fold, so the launch succeeds as the plain function does.
    let ptr = [0u32, 3, 4];
    let src = [1u32, 0, 99, 1];
    let level = [1i32, -1];
    let mut found = [9u8; 2];
    has_parent(0, &ptr, &src, &level, 1, &mut found);
    has_parent::launch(&Device::cpu(), 2, &ptr, &src, &level, 1, &mut found).unwrap();
    assert_eq!(found, [1, 0]);
    // Without a settling element the out-of-range gather is reached.
    let err = has_parent::launch(&Device::cpu(), 2, &ptr, &src, &level, 7, &mut found).unwrap_err();
    assert!(
        matches!(
            err,
            Error::IndexOutOfRange {
                index: 99,
                len: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(has_parent::CUDA_SOURCE.contains("static constexpr bool short_circuit = true;"));
    assert!(all_reached::CUDA_SOURCE.contains("return wf_a == false;"));
}

#[test]
fn out_of_range_index_is_an_error() {
    let ptr = [0u32, 2, 3];
    let col = [0u32, 7, 1];
    let val = [1.0f32; 3];
    let x = [1.0f32, 2.0];
    let mut y = [0.0f32; 2];
    let err = spmv::launch(&Device::cpu(), 2, &ptr, &col, &val, &x, &mut y).unwrap_err();
    match err {
        Error::IndexOutOfRange { what, index, len } => {
            assert_eq!((index, len), (7, 2));
            assert!(
                what.contains("`spmv`") && what.contains("task 0") && what.contains("`x`"),
                "{what}"
            );
        }
        other => panic!("expected IndexOutOfRange, got {other}"),
    }
    // A pointer array shorter than the task count faults in the prologue.
    let err =
        spmv::launch(&Device::cpu(), 3, &ptr, &[0, 1, 1], &val, &x, &mut [0.0; 3]).unwrap_err();
    assert!(
        matches!(err, Error::IndexOutOfRange { ref what, index: 3, len: 3 } if what.contains("`row_ptr`")),
        "{err}"
    );
    // An output shorter than the task count faults in the epilogue.
    let err =
        spmv::launch(&Device::cpu(), 2, &ptr, &[0, 1, 1], &val, &x, &mut [0.0; 1]).unwrap_err();
    assert!(
        matches!(err, Error::IndexOutOfRange { ref what, index: 1, len: 1 } if what.contains("`y`")),
        "{err}"
    );
}

#[test]
fn division_by_zero_is_an_error_and_min_over_minus_one_wraps() {
    let ptr = [0u32, 2, 3];
    let num = [i32::MIN, 7, 9];
    let den = [-1, 2, 0];
    let mut y = [0i32; 2];
    let err = quotient::launch(&Device::cpu(), 2, &ptr, &num, &den, &mut y).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DivisionByZero {
                kernel: "quotient",
                task: 1
            }
        ),
        "{err}"
    );
    let mut y = [0i32; 1];
    quotient::launch(&Device::cpu(), 1, &ptr, &num, &den, &mut y).unwrap();
    // MIN / -1 wraps to MIN; MIN % 1000 = -648; 7 / 2 % 1000 = 3.
    assert_eq!(y, [(i32::MIN % 1000).wrapping_add(3)]);
    let err =
        ratios::launch(&Device::cpu(), 2, &ptr, &[1, 2, 3], &[1, 1, 0], &mut [0; 2]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DivisionByZero {
                kernel: "ratios",
                task: 1
            }
        ),
        "{err}"
    );
}

#[test]
fn integer_arithmetic_wraps_as_in_release_builds() {
    let ptr = [0u32, 3, 3, 4];
    let val = [3000, -7, 1234, i32::MIN];
    for shift in [0u32, 1, 33] {
        let mut y = [0i32; 3];
        let mut z = [0u8; 3];
        wrap_sum::launch(&Device::cpu(), 3, &ptr, &val, shift, &mut y, &mut z).unwrap();
        for r in 0..3 {
            let s = (ptr[r] as usize..ptr[r + 1] as usize).fold(i32::MAX, |a, k| {
                a.wrapping_add(val[k].wrapping_mul(1_000_000))
            });
            assert_eq!(
                y[r],
                s.wrapping_shl(shift).wrapping_div(-1),
                "row {r} shift {shift}"
            );
            assert_eq!(
                z[r],
                (s as u8).wrapping_mul(200).wrapping_add(100),
                "row {r}"
            );
        }
    }
}

#[test]
fn expression_forms_follow_rust() {
    let ptr = [0u32, 3, 3, 5];
    let val = [1.5f32, -9.0, f32::NAN, 0.25, 0.5];
    let (mut y, mut sat, mut acc) = ([0.0f32; 3], [0i32; 3], [0.0f64; 3]);
    forms::launch(
        &Device::cpu(),
        3,
        &ptr,
        &val,
        2.0,
        &mut y,
        &mut sat,
        &mut acc,
    )
    .unwrap();
    let (mut py, mut psat, mut pacc) = ([0.0f32; 3], [0i32; 3], [0.0f64; 3]);
    for r in 0..3 {
        forms(r, &ptr, &val, 2.0, &mut py, &mut psat, &mut pacc);
    }
    assert_eq!((y, sat, acc), (py, psat, pacc));
    // Row 0: max(1.5, 2.0 (clamped 9), NaN -> 0) = 2; 2 * 0.5 + (3 * 2 + 1) + 1.
    assert_eq!(y[0], 9.0);
    // Saturating float -> int: 2e10 -> i32::MAX; -inf row -> i32::MIN.
    assert_eq!(sat, [i32::MAX, i32::MIN, 5_000_000_000f32 as i32]);
    assert_eq!(acc[1], f32::NEG_INFINITY as f64);
    assert!(forms::CUDA_SOURCE.contains("0.5f"));
}

#[test]
fn an_order_dependent_fold_gives_the_first_match_whole_or_split() {
    let n = 1100;
    let (ptr, val) = offset_rows(n);
    // The GPU test's input: groups of 32 rows start at every offset
    // modulo 32, some with an empty first row.
    let starts = group_starts(&ptr);
    assert_eq!(starts[..32], (0..32).collect::<Vec<u32>>()[..]);
    assert!((0..n).step_by(32).any(|r| ptr[r + 1] == ptr[r]));
    let want: Vec<u32> = (0..n)
        .map(|r| {
            (ptr[r]..ptr[r + 1])
                .find(|&k| val[k as usize] % 2 == 1)
                .unwrap_or(u32::MAX)
        })
        .collect();
    assert!(want.contains(&u32::MAX) && want.iter().any(|&k| k != u32::MAX));
    let cpu = Device::cpu();
    whole_and_split_give(&ptr, &[1, 5, 32], &want, |tasks, y| {
        first_odd::launch(&cpu, tasks, &ptr, &val, y).unwrap()
    });
}

/// `launch` over all tasks of `ptr`, and over them cut into segments of
/// each length in `lens`, gives `want`.
fn whole_and_split_give(
    ptr: &[u32],
    lens: &[u32],
    want: &[u32],
    launch: impl Fn(Tasks<'_>, &mut [u32]),
) {
    let mut y = vec![0u32; want.len()];
    launch(Tasks::All(want.len()), &mut y);
    assert_eq!(y, want);
    for &len in lens {
        let mut y = vec![7u32; want.len()];
        let list = TaskList::chunked(ptr, len).unwrap();
        launch(Tasks::List(&list), &mut y);
        assert_eq!(y, want, "segments of {len}");
    }
}

#[test]
fn a_commuting_fold_gives_each_rows_least_value_whole_or_split() {
    let n = 2100;
    let (ptr, val) = long_offset_rows(n);
    // The GPU test's input: warps start at every offset modulo 32 and many
    // rounds lie inside one row, the first round of aligned warps too.
    assert_eq!(group_starts(&ptr)[..32], (0..32).collect::<Vec<u32>>()[..]);
    assert!((0..n).filter(|&r| ptr[r + 1] - ptr[r] >= 96).count() > n / 10);
    assert!((0..n)
        .step_by(1024)
        .all(|r| ptr[r] % 32 == 0 && ptr[r + 1] - ptr[r] > 64));
    let want: Vec<u32> = (0..n)
        .map(|r| {
            let row = &val[ptr[r] as usize..ptr[r + 1] as usize];
            row.iter().copied().min().unwrap_or(u32::MAX)
        })
        .collect();
    assert!(want.contains(&u32::MAX) && !val.contains(&0));
    let cpu = Device::cpu();
    whole_and_split_give(&ptr, &[1, 33, 64], &want, |tasks, y| {
        row_min::launch(&cpu, tasks, &ptr, &val, y).unwrap()
    });
}

#[test]
fn usize_index_arithmetic_folds_into_u64() {
    let ptr = [0u32, 3, 3, 5];
    let mut y = [0u64; 3];
    index_sum::launch(
        &Device::cpu(),
        &TaskList::chunked(&ptr, 2).unwrap(),
        &ptr,
        &mut y,
    )
    .unwrap();
    assert_eq!(y, [3, 0, 2000 + 2000 + 3 + 4]);
    assert_eq!(index_sum::SPEC.acc, AccType::Scalar(ScalarType::U64));
}

#[test]
fn f32_accumulators_stay_f32_in_cuda() {
    for src in [
        spmv::CUDA_SOURCE,
        relax::CUDA_SOURCE,
        pagerank::CUDA_SOURCE,
        longest::CUDA_SOURCE,
    ] {
        assert!(!src.contains("double"), "{src}");
        assert!(src.contains("typedef float acc_t;"), "{src}");
    }
    assert!(spmv::CUDA_SOURCE.contains("return 0.0f;"));
    assert!(forms::CUDA_SOURCE.contains("typedef float acc_t;"));
}

#[test]
fn work_graph_of_a_gather_kernel() {
    let (ptr, col) = graph();
    let n = ptr.len() - 1;
    let val = weights(col.len());
    let x = vec![0.0f32; n];
    let g = spmv::work_graph(n, &ptr, &col, &val, &x).unwrap();
    assert_eq!(g.n_tasks(), n);
    assert_eq!(g.n_tuples(), col.len());
    assert_eq!(g.gathered(), &col[..]);
    assert_eq!(g.gathered_elem_bytes(), 4);
    // The twin's GatherKernel view agrees.
    let kernel = spmv::Kernel {
        row_ptr: &ptr,
        col: &col,
        val: &val,
        x: &x,
        y: SharedOut::new(&mut []),
    };
    assert_eq!(<spmv::Kernel as GatherKernel>::GATHERED, "x");
    let (ctx, lo, hi) = kernel.prologue(2).unwrap();
    let got: Vec<usize> = (lo..hi)
        .map(|k| kernel.gathered_index(2, &ctx, k).unwrap())
        .collect();
    assert_eq!(
        got,
        col[2..9].iter().map(|&c| c as usize).collect::<Vec<_>>()
    );
    // A gathered index past the gathered array is an error, not a panic.
    let err = spmv::work_graph(n, &ptr, &col, &val, &x[..3]).unwrap_err();
    assert!(matches!(err, Error::IndexOutOfRange { .. }), "{err}");
    let err = row_sum::work_graph(n, &ptr, &val).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("row_sum") && m.contains("no array")),
        "{err}"
    );
    assert_eq!(row_sum::GATHERED, None);
    assert_eq!(relax::GATHERED, Some("dist"));
}

/// Two gathers: through an unsigned `u8` index (its range maximum is checked
/// once per row) and through a signed `i32` one (checked per element).
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
fn two_gathers(
    row: usize,
    ptr: &[u32],
    a: &[u8],
    b: &[i32],
    val: &[f32],
    x: &[f32],
    z: &[f32],
    y: &mut [f32],
) {
    let lo = ptr[row] as usize;
    let hi = ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[a[k] as usize] + z[b[k] as usize])
        .fold(0.0, |p, q| p + q);
}

mod random_inputs {
    use super::*;
    use proptest::prelude::*;

    /// What `two_gathers` must give: each row folded in order, or the first
    /// out-of-range gather of the lowest faulting row.
    fn two_gathers_reference(
        ptr: &[u32],
        a: &[u8],
        b: &[i32],
        val: &[f32],
        x: &[f32],
        z: &[f32],
    ) -> Result<Vec<f32>, (usize, &'static str, usize)> {
        (0..ptr.len() - 1)
            .map(|r| {
                (ptr[r] as usize..ptr[r + 1] as usize).try_fold(0.0f32, |s, k| {
                    let (i, j) = (a[k] as usize, b[k] as usize);
                    let xv = *x.get(i).ok_or((r, "`x`", i))?;
                    let zv = *z.get(j).ok_or((r, "`z`", j))?;
                    Ok(s + val[k] * xv + zv)
                })
            })
            .collect()
    }

    /// A random CSR structure (rows of 0..40 entries, columns in range),
    /// values that sum exactly in any order, and a segment bound.
    fn csr() -> impl Strategy<Value = (Vec<u32>, Vec<u32>, Vec<f32>, Vec<f32>, u32)> {
        (1usize..40, 1u32..9).prop_flat_map(|(n, chunk)| {
            prop::collection::vec(0usize..40, n).prop_flat_map(move |degs| {
                let nnz: usize = degs.iter().sum();
                let ptr: Vec<u32> = std::iter::once(0)
                    .chain(degs.iter().scan(0u32, |s, &d| {
                        *s += d as u32;
                        Some(*s)
                    }))
                    .collect();
                (
                    Just(ptr),
                    prop::collection::vec(0..n as u32, nnz),
                    prop::collection::vec((0u8..9).prop_map(|v| v as f32 * 0.25), nnz),
                    prop::collection::vec((0u8..17).prop_map(|v| v as f32 * 0.5 - 4.0), n),
                    Just(chunk),
                )
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The twin over split task lists equals a plain loop and the plain function.
        #[test]
        fn spmv_and_relax_match_references((ptr, col, val, x, chunk) in csr()) {
            let n = ptr.len() - 1;
            let list = TaskList::chunked(&ptr, chunk).unwrap();
            let mut y = vec![f32::NAN; n];
            spmv::launch(&Device::cpu(), &list, &ptr, &col, &val, &x, &mut y).unwrap();
            let mut plain = vec![0.0; n];
            for r in 0..n {
                spmv(r, &ptr, &col, &val, &x, &mut plain);
            }
            prop_assert_eq!(&y, &plain);
            let mut next = vec![f32::NAN; n];
            relax::launch(&Device::cpu(), &list, &ptr, &col, &val, &x, &mut next).unwrap();
            for v in 0..n {
                let want = (ptr[v] as usize..ptr[v + 1] as usize)
                    .fold(x[v], |d, e| d.min(x[col[e] as usize] + val[e]));
                prop_assert_eq!(next[v], want);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Gathers with indices that are sometimes out of range (and negative,
        /// for the signed index): the twin, whole rows or split, gives the
        /// reference's result or exactly its fault.
        #[test]
        fn gathers_fault_like_a_checked_loop(
            degs in prop::collection::vec(0usize..50, 1..30),
            seed in any::<u64>(),
            nx in 1usize..300,
            nz in 1usize..40,
            bad_a in 0u32..3,
            bad_b in 0u32..3,
            chunk in 1u32..9,
        ) {
            let nnz: usize = degs.iter().sum();
            let ptr: Vec<u32> = std::iter::once(0)
                .chain(degs.iter().scan(0u32, |s, &d| {
                    *s += d as u32;
                    Some(*s)
                }))
                .collect();
            // A small deterministic generator: out-of-range values are rare
            // (bad_* = 0: never), so both the fast and the checked loops run.
            let mut state = seed | 1;
            let mut next = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            let a: Vec<u8> = (0..nnz)
                .map(|_| {
                    let r = next();
                    if bad_a > 0 && r % 97 < bad_a as u64 { 255 } else { (r % nx.min(256) as u64) as u8 }
                })
                .collect();
            let b: Vec<i32> = (0..nnz)
                .map(|_| {
                    let r = next();
                    if bad_b > 0 && r % 89 < bad_b as u64 { -((r % 3) as i32) - 1 } else { (r % nz as u64) as i32 }
                })
                .collect();
            let val: Vec<f32> = (0..nnz).map(|k| (k % 5) as f32 * 0.5).collect();
            let x: Vec<f32> = (0..nx).map(|i| (i % 7) as f32 - 3.0).collect();
            let z: Vec<f32> = (0..nz).map(|i| (i % 3) as f32).collect();
            let n = ptr.len() - 1;
            let want = two_gathers_reference(&ptr, &a, &b, &val, &x, &z);
            if let Ok(w) = &want {
                let mut plain = vec![0.0; n];
                for r in 0..n {
                    two_gathers(r, &ptr, &a, &b, &val, &x, &z, &mut plain);
                }
                prop_assert_eq!(&plain, w);
            }
            let list = TaskList::chunked(&ptr, chunk).unwrap();
            for tasks in [Tasks::from(n), Tasks::from(&list)] {
                let mut y = vec![f32::NAN; n];
                let got = two_gathers::launch(&Device::cpu(), tasks, &ptr, &a, &b, &val, &x, &z, &mut y);
                match (&want, got) {
                    (Ok(w), Ok(())) => prop_assert_eq!(&y, w),
                    (Err((row, array, index)), Err(Error::IndexOutOfRange { what, index: i, .. })) => {
                        prop_assert_eq!(i, *index as u64);
                        prop_assert!(what.contains(array) && what.contains(&format!("task {row}")), "{}", what);
                    }
                    (w, g) => prop_assert!(false, "want {:?}, got {:?}", w, g),
                }
            }
        }
    }
}

#[test]
fn per_task_maps_match_their_reference_over_tasks_and_lists() {
    let n = 5000;
    let x: Vec<f32> = (0..n).map(|i| (i % 17) as f32 * 0.25).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 5) as f32 - 2.0).collect();
    let want: Vec<f32> = (0..n).map(|i| 1.5 * x[i] + y0[i]).collect();
    let mut plain = y0.clone();
    for i in 0..n {
        axpy(i, 1.5, &x, &mut plain);
    }
    assert_eq!(plain, want);
    let mut y = y0.clone();
    axpy::launch(&Device::cpu(), n, 1.5, &x, &mut y).unwrap();
    assert_eq!(y, want);
    assert!(axpy::SPEC.elementwise);
    assert!(!spmv::SPEC.elementwise);
    // A task list runs the tasks it names, each once: a task's segments are
    // all empty (its range is 0..0), and one named twice still runs once.
    let list = TaskList::new(vec![
        Segment::new(7, 0, 0),
        Segment::new(3, 0, 0),
        Segment::new(7, 0, 0),
    ])
    .unwrap();
    let mut y = y0.clone();
    axpy::launch(&Device::cpu(), &list, 1.5, &x, &mut y).unwrap();
    for (i, (&got, &old)) in y.iter().zip(&y0).enumerate() {
        let expect = if i == 3 || i == 7 { want[i] } else { old };
        assert_eq!(got, expect, "task {i}");
    }
    // A segment with fine tasks lies outside the map's empty range.
    let bad = TaskList::new(vec![Segment::new(0, 0, 1)]).unwrap();
    let e = axpy::launch(&Device::cpu(), &bad, 1.5, &x, &mut y).unwrap_err();
    assert!(
        e.to_string().contains("outside the task's range 0..0"),
        "{e}"
    );
    // Out-of-range tasks are index faults naming the array.
    let e = axpy::launch(&Device::cpu(), n + 1, 1.5, &x, &mut y).unwrap_err();
    assert!(e.to_string().contains(&format!("task {n}: `x`")), "{e}");
    assert!(axpy::work_graph(n, 1.5, &x).is_err());
}

#[test]
fn per_task_maps_with_branches_and_calls_match_their_reference() {
    let x: Vec<i32> = (0..3000).map(|i| ((i * 7919) % 201) - 100).collect();
    let (want_d, want_b) = diff_clamp_reference(&x, -40);
    let (mut d, mut b) = (vec![0i32; x.len()], vec![9u8; x.len()]);
    diff_clamp::launch(&Device::cpu(), x.len(), &x, -40, &mut d, &mut b).unwrap();
    assert_eq!(d, want_d);
    assert_eq!(b, want_b);
    let (mut pd, mut pb) = (vec![0i32; x.len()], vec![9u8; x.len()]);
    for i in 0..x.len() {
        diff_clamp(i, &x, -40, &mut pd, &mut pb);
    }
    assert_eq!((pd, pb), (want_d, want_b));
}

#[test]
fn global_reductions_run_split_over_one_task() {
    let dev = Device::cpu();
    for n in [0usize, 1, 1000, 100_003] {
        // Exact values: every fold order gives the same sum.
        let x: Vec<f64> = (0..n).map(|i| (i % 7) as f64 * 0.5).collect();
        let y: Vec<f64> = (0..n).map(|i| (i % 3) as f64 - 1.0).collect();
        let want: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
        let split = warpfit::split_one_task(&dev, 0, 0..n).unwrap();
        assert_eq!(split.tasks.len(), (n / 1024).max(1));
        let mut out = [f64::NAN];
        dot::launch_with(
            &dev,
            &split.config,
            &split.tasks,
            n as u32,
            &x,
            &y,
            &mut out,
        )
        .unwrap();
        assert_eq!(out[0], want, "n = {n}");
        // One whole task gives the same here (exact values).
        let mut whole = [f64::NAN];
        dot::launch(&dev, 1, n as u32, &x, &y, &mut whole).unwrap();
        assert_eq!(whole[0], want);

        let xs: Vec<f32> = (0..n).map(|i| (i % 4) as f32).collect();
        let mut norm_out = [f32::NAN];
        let s = warpfit::split_one_task(&dev, 0, 0..n).unwrap();
        norm::launch_with(&dev, &s.config, &s.tasks, n as u32, &xs, &mut norm_out).unwrap();
        let sq: f32 = xs.iter().map(|v| v * v).sum();
        assert_eq!(norm_out[0], sq.sqrt());

        let xi: Vec<i64> = (0..n as i64).map(|i| i * 0x3fff_ffff_ffff - 17).collect();
        let want_i = xi.iter().fold(0i64, |a, &b| a.wrapping_add(b));
        let mut got = [0i64];
        isum::launch_with(&dev, &s.config, &s.tasks, n as u32, &xi, &mut got).unwrap();
        assert_eq!(got[0], want_i);
    }
}

#[test]
fn float_reductions_are_deterministic_and_fold_in_segment_order() {
    // Values whose sum depends on the order: the split result is the same
    // on every run, and equals the fold of each segment in turn, segments
    // in list order.
    let n = 300_000;
    let x: Vec<f32> = (0..n).map(|i| 1.0 + (i as f32).sin() * 1e-3).collect();
    let dev = Device::cpu();
    let split = warpfit::split_one_task(&dev, 0, 0..n).unwrap();
    let mut first = [0.0f32];
    norm::launch_with(&dev, &split.config, &split.tasks, n as u32, &x, &mut first).unwrap();
    for _ in 0..5 {
        let mut again = [0.0f32];
        norm::launch_with(&dev, &split.config, &split.tasks, n as u32, &x, &mut again).unwrap();
        assert_eq!(again[0].to_bits(), first[0].to_bits());
    }
    let by_segments = split
        .tasks
        .segments()
        .iter()
        .map(|s| {
            let v = &x[s.lo as usize..s.hi as usize];
            v[1..].iter().fold(v[0] * v[0], |a, b| a + b * b)
        })
        .fold(0.0f32, |a, b| a + b);
    assert_eq!(first[0].to_bits(), by_segments.sqrt().to_bits());
}

#[test]
fn split_every_task_matches_whole_tasks() {
    let (ptr, col) = graph();
    let n = ptr.len() - 1;
    let val = weights(col.len());
    let x: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
    let mut want = vec![0.0f32; n];
    spmv::launch(&Device::cpu(), n, &ptr, &col, &val, &x, &mut want).unwrap();
    for k in [1, 2, 3, 100] {
        let list = TaskList::split_every_task(&ptr, k).unwrap();
        let mut y = vec![f32::NAN; n];
        spmv::launch(&Device::cpu(), &list, &ptr, &col, &val, &x, &mut y).unwrap();
        assert_eq!(y, want, "k = {k}");
    }
}

/// `A·x` over wrapping u32 (+, ×) by a plain loop, row by row.
fn wrapping_spmv(ptr: &[u32], col: &[u32], val: &[u32], x: &[u32]) -> Vec<u32> {
    ptr.windows(2)
        .map(|w| {
            let mut s = 0u32;
            for k in w[0] as usize..w[1] as usize {
                s = s.wrapping_add(val[k].wrapping_mul(x[col[k] as usize]));
            }
            s
        })
        .collect()
}

/// The u32 SpMV kernels whose twins give the expected values of the GPU
/// suite (tests/macro_gpu.rs) against plain wrapping loops, exactly: over
/// all tasks and over task lists that split every row, on generated
/// matrices whose products and sums overflow, with rows whose sum is 0
/// (empty rows, zero values) where `spmv_nonzero_u32` keeps the old value.
#[test]
fn u32_spmv_twins_equal_plain_wrapping_loops() {
    use warpfit::runtime::gen;
    let dev = Device::cpu();
    let matrices = [
        gen::rmat(9, 8, 5).unwrap(),
        gen::uniform(700, 9, 3).unwrap(),
        "road:side=24,drop=0.2,seed=4"
            .parse::<gen::GenSpec>()
            .unwrap()
            .generate()
            .unwrap(),
    ];
    for a in &matrices {
        let (n, m) = (a.nrows(), a.ncols());
        let (ptr, col) = (a.row_ptr(), a.col_idx());
        // Every seventh value 0, and every value of every eleventh row; the
        // rest large enough that products wrap.
        let mut val: Vec<u32> = (0..a.nnz() as u32)
            .map(|k| {
                if k % 7 == 3 {
                    0
                } else {
                    k.wrapping_mul(2_654_435_761) | 1
                }
            })
            .collect();
        for r in (5..n).step_by(11) {
            val[ptr[r] as usize..ptr[r + 1] as usize].fill(0);
        }
        let x: Vec<u32> = (0..m as u32)
            .map(|j| (j ^ 0x5bd1_e995).wrapping_mul(40_503))
            .collect();
        let old: Vec<u32> = (0..n as u32).map(|r| r.wrapping_mul(0x9e37_79b9)).collect();
        let sums = wrapping_spmv(ptr, col, &val, &x);
        assert!(
            sums.contains(&0) && sums.iter().any(|&s| s > u32::MAX / 2),
            "the loop's sums cover 0 and large values"
        );
        let added: Vec<u32> = old
            .iter()
            .zip(&sums)
            .map(|(&o, &s)| o.wrapping_add(s))
            .collect();
        let nonzero: Vec<u32> = old
            .iter()
            .zip(&sums)
            .map(|(&o, &s)| if s != 0 { s } else { o })
            .collect();
        let lists = [
            TaskList::chunked(ptr, 3).unwrap(),
            TaskList::split_every_task(ptr, 4).unwrap(),
        ];
        let mut y = vec![u32::MAX; n];
        spmv_u32::launch(&dev, n, ptr, col, &val, &x, &mut y[..]).unwrap();
        assert_eq!(y, sums, "spmv_u32, all tasks");
        let mut y = old.clone();
        spmv_add_u32::launch(&dev, n, ptr, col, &val, &x, &mut y[..]).unwrap();
        assert_eq!(y, added, "spmv_add_u32, all tasks");
        let mut y = old.clone();
        spmv_nonzero_u32::launch(&dev, n, ptr, col, &val, &x, &mut y[..]).unwrap();
        assert_eq!(y, nonzero, "spmv_nonzero_u32, all tasks");
        for list in &lists {
            let what = format!("{} segments", list.len());
            let mut y = vec![u32::MAX; n];
            spmv_u32::launch(&dev, list, ptr, col, &val, &x, &mut y[..]).unwrap();
            assert_eq!(y, sums, "spmv_u32, {what}");
            let mut y = old.clone();
            spmv_add_u32::launch(&dev, list, ptr, col, &val, &x, &mut y[..]).unwrap();
            assert_eq!(y, added, "spmv_add_u32, {what}");
            let mut y = old.clone();
            spmv_nonzero_u32::launch(&dev, list, ptr, col, &val, &x, &mut y[..]).unwrap();
            assert_eq!(y, nonzero, "spmv_nonzero_u32, {what}");
        }
    }
}
