//! `#[throttled]` kernels' generated handles on the CPU backend: every
//! policy's launches equal a plain loop written here (the CPU runs the twin
//! over the original arrays, so a comparison with an unthrottled launch
//! would compare the twin with itself), host and device-resident arguments
//! alike; the same kernels run by the CPU plan executor (`run_plan` over
//! CF, single-launch and SJ schedules, `run_carried` over part-major
//! layouts) against the same loops; the attribute's defaults and the
//! parameter roles; errors for remapping a kernel that cannot be remapped
//! and for arguments that do not fit. (The CUDA schedules against the CPU
//! twin: tests/macro_gpu.rs.)

mod macro_common;

use macro_common::*;
use std::ops::Range;
use warpfit::__private::{SharedOut, WorkGraph};
use warpfit::prelude::*;
use warpfit::runtime::schedule::{
    recombine, run_carried, run_plan, CacheFitPlan, CarriedLayout, PlanOrder,
};
use warpfit::runtime::{gen, Csr};
use warpfit::{CacheSize, Partitioner, ThrottleStatus};

/// `y = A·x` by a plain loop: each row summed in f32 from 0 in storage
/// order, the twin's operations in the twin's order (so its bits).
fn spmv_in_row_order(a: &Csr<f32>, x: &[f32]) -> Vec<f32> {
    (0..a.nrows())
        .map(|r| {
            let (cols, vals) = a.row(r);
            let mut s = 0f32;
            for (&c, &v) in cols.iter().zip(vals) {
                s += v * x[c as usize];
            }
            s
        })
        .collect()
}

/// `got` against `A·x` summed in f64: a schedule that splits and reorders a
/// row's f32 sum is within `len · ε(f32) · Σ|terms|` of it.
fn assert_near_spmv(what: &str, got: &[f32], a: &Csr<f32>, x: &[f32]) {
    assert_eq!(got.len(), a.nrows(), "{what}");
    for (r, &g) in got.iter().enumerate() {
        let (cols, vals) = a.row(r);
        let terms = cols
            .iter()
            .zip(vals)
            .map(|(&c, &v)| v as f64 * x[c as usize] as f64);
        let (sum, size) = terms.fold((0.0, 0.0), |(s, t), v| (s + v, t + v.abs()));
        let tol = (cols.len() as f64 + 1.0) * f32::EPSILON as f64 * size;
        assert!(
            (g as f64 - sum).abs() <= tol,
            "{what}: row {r}: {g} against {sum} (tolerance {tol:e})"
        );
    }
}

/// The cache-fit plan of `graph` under `opts` (a byte-size cache: the CPU
/// has no L2 to resolve `l2` against here).
fn plan_of(graph: &WorkGraph, opts: &ThrottleOptions) -> CacheFitPlan {
    let p = opts.partition(graph, None, None).unwrap();
    CacheFitPlan::new(graph, &p).unwrap()
}

/// The launch lists the CPU plan executor follows: CF (each partition
/// alone), one launch of everything (`org_r`, CF-Q) and SJ's recombination
/// of the tree, each node timed by its edge count.
fn schedules(plan: &CacheFitPlan) -> Vec<(&'static str, Vec<Range<usize>>)> {
    let times: Vec<f64> = plan
        .tree()
        .nodes()
        .iter()
        .map(|n| n.edges() as f64)
        .collect();
    let sj = plan
        .node_launches(&recombine(plan.tree(), &times).unwrap().nodes)
        .unwrap();
    vec![
        ("cf", plan.cf_launches()),
        ("single launch", plan.single_launch()),
        ("sj", sj),
    ]
}

/// Partitioners and a cache small enough that the test matrices need many
/// partitions, with rows split across them.
fn plan_options(partitioner: Partitioner) -> ThrottleOptions {
    ThrottleOptions::default()
        .with_cache(CacheSize::Bytes(2048))
        .with_partitioner(partitioner)
}

const POLICIES: [ThrottlePolicy; 7] = ThrottlePolicy::ALL;

#[test]
fn every_policy_and_the_plan_executor_on_the_cpu_equal_a_plain_loop() {
    let dev = Device::cpu();
    for a in [
        gen::rmat(10, 8, 1).unwrap(),
        gen::uniform(700, 9, 2).unwrap(),
    ] {
        let (n, m) = (a.nrows(), a.ncols());
        let x = quarters(m, 5);
        let want = spmv_in_row_order(&a, &x);
        assert_near_spmv("the plain loop", &want, &a, &x);
        for policy in POLICIES {
            let opts = spmv::throttle_options().unwrap().with_policy(policy);
            let mut t =
                spmv::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), a.values()).unwrap();
            let mut y = vec![f32::NAN; n];
            t.launch(&x, &mut y[..]).unwrap();
            assert_eq!(y, want, "{policy}, host arrays");
            // Device-resident arguments, launched again on the same plan.
            let xd = dev.upload(&x).unwrap();
            let mut yd = dev.alloc::<f32>(n).unwrap();
            t.launch(&xd, &mut yd).unwrap();
            assert_eq!(yd.to_vec().unwrap(), want, "{policy}, DeviceVecs");
            let r = t.report();
            assert_eq!(r.asked, policy);
            assert_eq!(r.chosen, ThrottlePolicy::Org, "the CPU runs the twin");
        }
        // What the handle does not run on the CPU: the kernel through its
        // cache-fit plans, partitions and rows split across them.
        let graph = spmv::work_graph(n, a.row_ptr(), a.col_idx(), a.values(), &x).unwrap();
        let mut split = 0;
        for partitioner in [Partitioner::Kd, Partitioner::Bisect, Partitioner::Columns] {
            let plan = plan_of(&graph, &plan_options(partitioner));
            assert!(plan.len() > 1, "{partitioner}: {} partitions", plan.len());
            split += plan.split_tasks().len();
            for (name, launches) in schedules(&plan) {
                let mut y = vec![f32::NAN; n];
                let k = spmv::Kernel {
                    row_ptr: a.row_ptr(),
                    col: a.col_idx(),
                    val: a.values(),
                    x: &x,
                    y: SharedOut::new(&mut y),
                };
                run_plan(&PlanOrder::new(&k, &plan), &plan, &launches).unwrap();
                assert_near_spmv(&format!("{partitioner}, {name}"), &y, &a, &x);
            }
            // The carried passes over the part-major layout, with the
            // fine-task arrays in its order.
            let layout = CarriedLayout::new(&plan).unwrap();
            let col = layout.permute_fine(a.col_idx()).unwrap();
            let val = layout.permute_fine(a.values()).unwrap();
            let mut y = vec![f32::NAN; n];
            let k = spmv::Kernel {
                row_ptr: a.row_ptr(),
                col: &col,
                val: &val,
                x: &x,
                y: SharedOut::new(&mut y),
            };
            run_carried(&k, &layout.parts()).unwrap();
            assert_near_spmv(&format!("{partitioner}, carried"), &y, &a, &x);
        }
        assert!(split > 0, "no plan splits a row");
    }
}

#[test]
fn integer_and_min_plus_kernels_are_exact() {
    let dev = Device::cpu();
    let a = gen::rmat(9, 8, 3).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let (ptr, col) = (a.row_ptr(), a.col_idx());
    let val: Vec<u32> = (0..a.nnz() as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let xu: Vec<u32> = (0..m as u32).map(|i| i ^ 0x5bd1_e995).collect();
    // Wrapping (+, ×) by a plain loop: exact in any order.
    let want: Vec<u32> = (0..n)
        .map(|r| {
            (ptr[r] as usize..ptr[r + 1] as usize).fold(0u32, |s, k| {
                s.wrapping_add(val[k].wrapping_mul(xu[col[k] as usize]))
            })
        })
        .collect();
    let opts = spmv_u32::throttle_options().unwrap();
    let mut t = spmv_u32::throttle(&dev, &opts, n, m, ptr, col, &val).unwrap();
    let mut got = vec![0u32; n];
    t.launch(&xu, &mut got[..]).unwrap();
    assert_eq!(got, want);
    // The plan executor, on the kernel's own partitioner (kd) and columns.
    let graph = spmv_u32::work_graph(n, ptr, col, &val, &xu).unwrap();
    for partitioner in [Partitioner::Kd, Partitioner::Columns] {
        let plan = plan_of(&graph, &plan_options(partitioner));
        for (name, launches) in schedules(&plan) {
            let mut got = vec![u32::MAX; n];
            let k = spmv_u32::Kernel {
                row_ptr: ptr,
                col,
                val: &val,
                x: &xu,
                y: SharedOut::new(&mut got),
            };
            run_plan(&PlanOrder::new(&k, &plan), &plan, &launches).unwrap();
            assert_eq!(got, want, "spmv_u32, {partitioner}, {name}");
        }
    }

    let w = weights(a.nnz());
    let dist = quarters(m, 7);
    // One Bellman-Ford step over (min, +) by a plain loop: exact in any
    // order, the sums being the same.
    let want: Vec<f32> = (0..n)
        .map(|v| {
            (ptr[v] as usize..ptr[v + 1] as usize)
                .fold(dist[v], |d, e| d.min(dist[col[e] as usize] + w[e]))
        })
        .collect();
    let mut t = relax::throttle(
        &dev,
        &relax::throttle_options().unwrap(),
        n,
        m,
        ptr,
        col,
        &w,
    )
    .unwrap();
    let mut got = vec![0f32; n];
    t.launch(&dist, &mut got[..]).unwrap();
    assert_eq!(got, want);
    let graph = relax::work_graph(n, ptr, col, &w, &dist).unwrap();
    // The kernel's own partitioner (columns) and kd tiling, each with a
    // cache a fraction of `dist`.
    for opts in [
        relax::throttle_options()
            .unwrap()
            .with_cache(CacheSize::Bytes(512)),
        plan_options(Partitioner::Kd),
    ] {
        let plan = plan_of(&graph, &opts);
        assert!(
            plan.len() > 1,
            "{}: {} partitions",
            opts.partitioner,
            plan.len()
        );
        for (name, launches) in schedules(&plan) {
            let mut got = vec![f32::NAN; n];
            let k = relax::Kernel {
                ptr,
                src: col,
                w: &w,
                dist: &dist,
                next: SharedOut::new(&mut got),
            };
            run_plan(&PlanOrder::new(&k, &plan), &plan, &launches).unwrap();
            assert_eq!(got, want, "relax, {}, {name}", opts.partitioner);
        }
    }
}

#[test]
fn the_attribute_sets_the_default_options() {
    let o = relax::throttle_options().unwrap();
    assert_eq!(o.policy, ThrottlePolicy::Cf);
    assert_eq!(o.cache, CacheSize::Bytes(4096));
    assert_eq!(o.partitioner, Partitioner::Columns);
    assert_eq!(
        spmv::throttle_options().unwrap(),
        ThrottleOptions::default()
    );
    assert_eq!(
        spmv_u32::throttle_options().unwrap().partitioner,
        Partitioner::Kd
    );
    assert_eq!(spmv::THROTTLE_ROLES.range, 0);
    assert_eq!(spmv::THROTTLE_ROLES.fine, &[1, 2]);
    // Remapping renames `col`'s values and permutes `y` by task.
    assert_eq!(spmv::THROTTLE_ROLES.gathered, [3]);
    assert_eq!(spmv::THROTTLE_ROLES.index, Some(1));
    assert_eq!(spmv::THROTTLE_ROLES.task_indexed, &[4]);
    assert_eq!(spmv::THROTTLE_ROLES.overwritten, &[4]);
    // An output read (`+=`) or stored under a condition keeps old values
    // that a remapped launch must carry into the plan's order.
    assert_eq!(spmv_add_u32::THROTTLE_ROLES.task_indexed, &[4]);
    assert!(spmv_add_u32::THROTTLE_ROLES.overwritten.is_empty());
    assert_eq!(spmv_nonzero_u32::THROTTLE_ROLES.task_indexed, &[4]);
    assert!(spmv_nonzero_u32::THROTTLE_ROLES.overwritten.is_empty());
    assert_eq!(spmv::THROTTLE_ROLES.remap_refused, "");
    // `relax` folds from `dist[v]`: the gathered array read at the task,
    // remapped with one permutation for tasks and gathered elements.
    assert_eq!(relax::THROTTLE_ROLES.index, Some(1));
    const { assert!(relax::THROTTLE_ROLES.gathered_at_task) };
    const { assert!(!spmv::THROTTLE_ROLES.gathered_at_task) };
    // `relax_anchored` reads `dist[0]`: not remapped, but its gather still
    // goes through `src`, which plans made on the device group each task's
    // fine tasks by.
    assert_eq!(relax_anchored::THROTTLE_ROLES.index, None);
    assert_eq!(relax_anchored::THROTTLE_ROLES.gather_index, Some(1));
    assert_eq!(spmv::THROTTLE_ROLES.gather_index, Some(1));
    // PageRank reads `dangling[0]`: the same element in any numbering, so
    // it can be remapped, with `dangling` passed as it is.
    let pr = warpfit::apps::pagerank_pull_resident::THROTTLE_ROLES;
    assert_eq!(pr.index, Some(1), "{}", pr.remap_refused);
    assert_eq!(pr.task_indexed, &[6]);
    assert!(
        relax_anchored::THROTTLE_ROLES
            .remap_refused
            .contains("reads `dist` other than through `src`"),
        "{}",
        relax_anchored::THROTTLE_ROLES.remap_refused
    );
}

#[test]
fn a_resident_handle_needs_a_cuda_device_and_the_model() {
    let dev = Device::cpu();
    let a = gen::uniform(64, 4, 1).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let (ptr, col, val) = (
        dev.upload(a.row_ptr()).unwrap(),
        dev.upload(a.col_idx()).unwrap(),
        dev.upload(a.values()).unwrap(),
    );
    let e = spmv::throttle_resident(&dev, &ThrottleOptions::default(), n, m, &ptr, &col, &val)
        .unwrap_err()
        .to_string();
    assert!(e.contains("CUDA device"), "{e}");
    // Handed over by value, the same.
    let e = spmv::throttle_owned(&dev, &ThrottleOptions::default(), n, m, ptr, col, val)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("throttle_owned takes arrays on a CUDA device"),
        "{e}"
    );
}

#[test]
fn remapping_an_unfit_kernel_and_unfit_arguments_are_errors() {
    let dev = Device::cpu();
    let a = gen::uniform(64, 4, 1).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    for opts in [
        ThrottleOptions::default().with_policy(ThrottlePolicy::OrgR),
        ThrottleOptions::default()
            .with_policy(ThrottlePolicy::Cf)
            .with_remap(true),
    ] {
        let e = relax_anchored::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), a.values())
            .unwrap_err()
            .to_string();
        assert!(e.contains("a remapped plan") && e.contains("`dist`"), "{e}");
        // `relax` is remapped with as many tasks as gathered elements only.
        assert!(relax::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), a.values()).is_ok());
        let e = relax::throttle(&dev, &opts, n, m + 1, a.row_ptr(), a.col_idx(), a.values())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{n} tasks but {} gathered elements", m + 1)),
            "{e}"
        );
    }
    let bad = ThrottleOptions::default().with_safety(0.0);
    let e = spmv::throttle(&dev, &bad, n, m, a.row_ptr(), a.col_idx(), a.values()).unwrap_err();
    assert!(e.to_string().contains("safety"), "{e}");
    // A column index past the stated gathered length: the plan's index check.
    let e = spmv::throttle(
        &dev,
        &ThrottleOptions::default(),
        n,
        m / 2,
        a.row_ptr(),
        a.col_idx(),
        a.values(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("spmv"), "{e}");
    // A launch whose `x` is too short faults like a plain launch, and the
    // handle still works afterwards.
    let mut t = spmv::throttle(
        &dev,
        &ThrottleOptions::default(),
        n,
        m,
        a.row_ptr(),
        a.col_idx(),
        a.values(),
    )
    .unwrap();
    let mut y = vec![0f32; n];
    assert!(t.launch(&vec![1.0f32; m / 2], &mut y[..]).is_err());
    t.launch(&vec![1.0f32; m], &mut y[..]).unwrap();
    let sums: Vec<f32> = (0..n)
        .map(|r| a.values()[a.row_range(r)].iter().sum())
        .collect();
    assert_eq!(y, sums);
}

#[test]
fn a_pipelined_handle_on_the_cpu_runs_the_twin_at_once() {
    let dev = Device::cpu();
    let a = gen::rmat(9, 8, 2).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let x = quarters(m, 3);
    let want = spmv_in_row_order(&a, &x);
    let opts = ThrottleOptions::default().with_policy(ThrottlePolicy::Cf);
    let mut t = spmv::throttle_pipelined(
        &dev,
        &opts,
        n,
        m,
        a.row_ptr().to_vec(),
        a.col_idx().to_vec(),
        a.values().to_vec(),
    )
    .unwrap();
    assert_eq!(t.status(), ThrottleStatus::Running(ThrottlePolicy::Org));
    let mut y = vec![0f32; n];
    t.launch(&x, &mut y[..]).unwrap();
    assert_eq!(y, want);
    t.wait_for_plan().unwrap();
    assert_eq!(t.report().launches_before_plan, 0);
}

#[test]
fn plan_order_and_enqueued_launches_on_the_cpu() {
    let dev = Device::cpu();
    let a = gen::uniform(300, 5, 4).unwrap();
    let (n, m) = (a.nrows(), a.ncols());
    let x = quarters(m, 2);
    let want = spmv_in_row_order(&a, &x);
    let opts = ThrottleOptions::default()
        .with_policy(ThrottlePolicy::OrgR)
        .with_remap(true);
    let mut t = spmv::throttle(&dev, &opts, n, m, a.row_ptr(), a.col_idx(), a.values()).unwrap();
    // The CPU runs the twin: there is no plan order, and asking is an error.
    let mut y = vec![0f32; n];
    t.launch(&x, &mut y[..]).unwrap();
    assert_eq!(y, want);
    assert!(t.plan_order().is_none());
    let e = t.launch_in_plan_order(&x, &mut y[..]).unwrap_err();
    assert!(e.to_string().contains("no plan order"), "{e}");
    // Enqueued launches take DeviceVecs and report faults at `check`.
    let xd = dev.upload(&x).unwrap();
    let yd = dev.alloc::<f32>(n).unwrap();
    t.enqueue(&xd, &yd).unwrap();
    t.check().unwrap();
    assert_eq!(yd.to_vec().unwrap(), want);
}

/// PageRank by power iteration in f64, by plain loops over the matrix's
/// rows (`a(u, v)`: the edge `u → v`): from `1/n`, each iteration gives
/// every vertex `(1 − d)/n + d·(dangling rank)/n + d·Σ rank(u)/outdeg(u)`
/// over its in-edges, a vertex without out-edges being dangling.
fn pagerank_reference(a: &Csr<f32>, damping: f64, iterations: usize) -> Vec<f64> {
    let n = a.nrows();
    let mut rank = vec![1.0 / n as f64; n];
    for _ in 0..iterations {
        let mut dangling = 0.0;
        let mut pulled = vec![0.0; n];
        for (u, &r) in rank.iter().enumerate() {
            let (cols, _) = a.row(u);
            if cols.is_empty() {
                dangling += r;
            }
            for &v in cols {
                pulled[v as usize] += r / cols.len() as f64;
            }
        }
        let base = (1.0 - damping) / n as f64 + damping * dangling / n as f64;
        rank = pulled.iter().map(|p| base + damping * p).collect();
    }
    rank
}

/// f32 ranks against the f64 reference: within `2e-6` of the largest rank
/// (f32 rounding over a few iterations is about `1e-7` of it).
fn assert_near_ranks(what: &str, got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}");
    let tol = 2e-6 * want.iter().fold(0.0f64, |m, &r| m.max(r));
    for (v, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= tol,
            "{what}: vertex {v}: {g} against {w} (tolerance {tol:e})"
        );
    }
}

/// PageRank whose pull runs through the CPU plan executor: the apps'
/// per-vertex shares and dangling rank computed here, the throttled pull
/// kernel run over `plan` under `launches` each iteration.
fn pagerank_by_the_plan_executor(
    g: &warpfit::apps::Graph,
    damping: f32,
    iterations: usize,
    plan: &CacheFitPlan,
    launches: &[Range<usize>],
) -> Vec<f32> {
    use warpfit::apps::pagerank_pull_resident;
    let n = g.len();
    let mut rank = vec![1.0 / n as f32; n];
    let mut next = vec![f32::NAN; n];
    for _ in 0..iterations {
        let contrib: Vec<f32> = rank
            .iter()
            .zip(&g.out_degree)
            .map(|(&r, &d)| if d == 0 { 0.0 } else { r / d as f32 })
            .collect();
        let dangling: f64 = rank
            .iter()
            .zip(&g.out_degree)
            .filter(|&(_, &d)| d == 0)
            .map(|(&r, _)| r as f64)
            .sum();
        let k = pagerank_pull_resident::Kernel {
            ptr: g.incoming.row_ptr(),
            src: g.incoming.col_idx(),
            contrib: &contrib,
            dangling: &[dangling],
            damping,
            n: n as f64,
            next: SharedOut::new(&mut next),
        };
        run_plan(&PlanOrder::new(&k, plan), plan, launches).unwrap();
        std::mem::swap(&mut rank, &mut next);
    }
    rank
}

/// Unpreconditioned CG in f64 by plain loops, from `x = 0`, until
/// `‖r‖ ≤ tol·‖b‖`: the solution and the iterations it took.
fn cg_reference(a: &Csr<f64>, b: &[f64], tol: f64, max_iters: usize) -> (Vec<f64>, usize) {
    let dot = |u: &[f64], v: &[f64]| u.iter().zip(v).map(|(a, b)| a * b).sum::<f64>();
    let times = |p: &[f64]| -> Vec<f64> {
        (0..a.nrows())
            .map(|r| {
                let (cols, vals) = a.row(r);
                cols.iter()
                    .zip(vals)
                    .map(|(&c, &v)| v * p[c as usize])
                    .sum()
            })
            .collect()
    };
    let n = a.nrows();
    let (mut x, mut r, mut p) = (vec![0.0; n], b.to_vec(), b.to_vec());
    let b_norm = dot(b, b).sqrt();
    let mut rr = dot(&r, &r);
    let mut k = 0;
    while rr.sqrt() > tol * b_norm && k < max_iters {
        let q = times(&p);
        let alpha = rr / dot(&p, &q);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        let next = dot(&r, &r);
        let beta = next / rr;
        for i in 0..n {
            p[i] = r[i] + beta * p[i];
        }
        rr = next;
        k += 1;
    }
    (x, k)
}

#[test]
fn throttled_pagerank_and_cg_on_the_cpu_equal_plain_loops() {
    use warpfit::apps::{self, CgOptions, Graph, PageRankOptions};
    let dev = Device::cpu();
    let config = LaunchConfig::default();
    let matrix = gen::rmat(10, 8, 3).unwrap();
    let g = Graph::from_matrix(&matrix).unwrap();
    let plain = PageRankOptions {
        iterations: 7,
        ..PageRankOptions::default()
    };
    let reference = pagerank_reference(&matrix, plain.damping as f64, plain.iterations);
    let want = apps::pagerank(&dev, &config, &g, plain).unwrap();
    assert_near_ranks("pagerank", &want, &reference);
    // The throttled pull through its plans on the CPU: the kernel's own
    // partitioner (columns) and kd, every schedule.
    let n = g.len();
    let graph = {
        let zeros = vec![0f32; n];
        let k = apps::pagerank_pull_resident::Kernel {
            ptr: g.incoming.row_ptr(),
            src: g.incoming.col_idx(),
            contrib: &zeros,
            dangling: &[0.0],
            damping: plain.damping,
            n: n as f64,
            next: SharedOut::new(&mut []),
        };
        WorkGraph::from_kernel(&k, n).unwrap()
    };
    for opts in [
        apps::pagerank_pull_resident::throttle_options()
            .unwrap()
            .with_cache(CacheSize::Bytes(1024)),
        plan_options(Partitioner::Kd),
    ] {
        let plan = plan_of(&graph, &opts);
        assert!(
            plan.len() > 1,
            "{}: {} partitions",
            opts.partitioner,
            plan.len()
        );
        for (name, launches) in schedules(&plan) {
            let rank = pagerank_by_the_plan_executor(
                &g,
                plain.damping,
                plain.iterations,
                &plan,
                &launches,
            );
            assert_near_ranks(
                &format!("pagerank, {}, {name}", opts.partitioner),
                &rank,
                &reference,
            );
        }
    }
    let spd: warpfit::runtime::Csr<f64> = "poisson3d:side=7,order=random,seed=2"
        .parse::<gen::GenSpec>()
        .unwrap()
        .generate()
        .unwrap()
        .map_values(|&v| v as f64);
    let b = apps::rhs_for_ones(&spd).unwrap();
    let cg_defaults = CgOptions::default();
    let (x_ref, iters_ref) = cg_reference(&spd, &b, cg_defaults.tol, cg_defaults.max_iters);
    // A CG result against the plain CG: the same iterations give the same
    // solution up to rounding, and the solution of `A·x = A·1` is 1.
    let check_cg = |what: &str, x: &[f64], iterations: usize, converged: bool| {
        assert!(converged, "{what}");
        assert!(
            iterations.abs_diff(iters_ref) <= 1,
            "{what}: {iterations} iterations, the plain loop {iters_ref}"
        );
        for (i, (&got, &want)) in x.iter().zip(&x_ref).enumerate() {
            assert!(
                (got - want).abs() <= 1e-6 && (got - 1.0).abs() <= 1e-4,
                "{what}: x[{i}] = {got}, the plain loop {want}"
            );
        }
    };
    let cg_want = apps::cg(&dev, &config, &spd, &b, &cg_defaults).unwrap();
    check_cg("cg", &cg_want.x, cg_want.iterations, cg_want.converged);
    for policy in [ThrottlePolicy::Cf, ThrottlePolicy::Auto] {
        for plan_first in [false, true] {
            let what = format!("{policy}, plan first {plan_first}");
            let opts = PageRankOptions {
                throttle: Some(
                    apps::pagerank_pull_resident::throttle_options()
                        .unwrap()
                        .with_policy(policy),
                ),
                plan_first,
                ..plain
            };
            let (rank, timings, run) =
                apps::pagerank_throttled(&dev, &config, &g, opts, &mut |_| {}).unwrap();
            assert_near_ranks(&format!("pagerank {what}"), &rank, &reference);
            assert_eq!(rank, want, "pagerank {what}");
            let run = run.expect("a throttled run reports");
            assert_eq!(timings.iterations.len(), opts.iterations, "{what}");
            if let Some(from) = run.planned_from {
                assert!(from < timings.iterations.len(), "{what}: {from}");
            }
            if plan_first {
                assert_eq!(run.planned_from, Some(0), "{what}");
                assert!(
                    matches!(run.status, ThrottleStatus::Running(_)),
                    "{what}: {:?}",
                    run.status
                );
            }
            let cg_opts = CgOptions {
                throttle: Some(
                    apps::spmv::f64::throttle_options()
                        .unwrap()
                        .with_policy(policy),
                ),
                plan_first,
                ..CgOptions::default()
            };
            let got = apps::cg(&dev, &config, &spd, &b, &cg_opts).unwrap();
            check_cg(&format!("cg {what}"), &got.x, got.iterations, got.converged);
            assert_eq!(got.x, cg_want.x, "cg {what}");
            assert_eq!(got.iterations, cg_want.iterations, "cg {what}");
            assert!(
                got.throttle.is_some() && cg_want.throttle.is_none(),
                "{what}"
            );
        }
    }
}
