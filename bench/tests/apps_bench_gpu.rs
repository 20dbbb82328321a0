//! The bench crate's GPU parts: the cuSPARSE baseline against the CPU twin,
//! cuSPARSE SpMV over a solver's device vectors against warpfit's SpMV, the CUDA-event timer, and a whole small
//! run whose report must be complete (every app timed, CG's iteration counts
//! equal with either SpMV, PageRank's CUDA and CPU ranks close).
//! Needs a CUDA GPU; skipped without one, unless `WARPFIT_REQUIRE_GPU=1`
//! (scripts/gpu-check runs it so).

use warpfit::__private::EventTimer;
use warpfit::apps::spmv;
use warpfit::runtime::gen::GenSpec;
use warpfit::{Device, LaunchConfig};
use warpfit_bench::apps::{run_apps_bench, AppsBenchOptions};
use warpfit_bench::baseline::{CusparseSpmv, CusparseSpmvOn, SpmvAlg};
use warpfit_bench::MatrixSource;

/// The root crate's GPU check, shared by every GPU suite.
#[path = "../../tests/gpu_common/mod.rs"]
mod gpu_common;

use gpu_common::gpu;

#[test]
fn cusparse_baseline_matches_the_cpu() {
    let Some(device) = gpu() else { return };
    let dev = device.cuda().unwrap().clone();
    let a = warpfit::runtime::gen::rmat(12, 16, 9).unwrap();
    let x: Vec<f32> = warpfit::runtime::gen::random_values(a.ncols(), 3)
        .unwrap()
        .iter()
        .map(|&v| v as f32)
        .collect();
    let want = warpfit::apps::spmv_csr(&Device::cpu(), &LaunchConfig::default(), &a, &x).unwrap();
    for alg in [SpmvAlg::Default, SpmvAlg::CsrAlg1, SpmvAlg::CsrAlg2] {
        let s = CusparseSpmv::new(
            &dev,
            a.nrows(),
            a.ncols(),
            a.row_ptr(),
            a.col_idx(),
            a.values(),
            &x,
            alg,
        )
        .unwrap();
        s.run().unwrap();
        let y = s.y().unwrap();
        for i in 0..a.nrows() {
            assert!(
                (y[i] - want[i]).abs() <= 1e-4 * (1.0 + want[i].abs()),
                "{alg:?} row {i}: {} vs {}",
                y[i],
                want[i]
            );
        }
    }
}

#[test]
fn cusparse_on_device_vectors_equals_warpfit_spmv_and_checks_its_arrays() {
    let Some(device) = gpu() else { return };
    let cuda = device.cuda().unwrap().clone();
    let a = "poisson2d:side=40"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap()
        .map_values(|&v| v as f64);
    let n = a.nrows();
    let x_host: Vec<f64> = (0..n).map(|i| 1.0 + (i % 5) as f64 * 0.25).collect();
    let (ptr, col, val) = (
        device.upload(a.row_ptr()).unwrap(),
        device.upload(a.col_idx()).unwrap(),
        device.upload(a.values()).unwrap(),
    );
    let x = device.upload(&x_host).unwrap();
    let y_ours = device.alloc::<f64>(n).unwrap();
    let y_theirs = device.alloc::<f64>(n).unwrap();
    let ours = spmv::f64::prepare(
        &device,
        &LaunchConfig::default(),
        n,
        &ptr,
        &col,
        &val,
        &x,
        &y_ours,
    )
    .unwrap();
    let theirs =
        CusparseSpmvOn::new(&cuda, n, &ptr, &col, &val, &x, &y_theirs, SpmvAlg::Default).unwrap();
    ours.run().unwrap();
    theirs.run().unwrap();
    ours.check().unwrap();
    let (a_y, b_y) = (y_ours.to_vec().unwrap(), y_theirs.to_vec().unwrap());
    for (i, (p, q)) in a_y.iter().zip(&b_y).enumerate() {
        assert!(
            (p - q).abs() <= 1e-12 * p.abs().max(1.0),
            "row {i}: {p} vs {q}"
        );
    }
    // The event timer sees the launch's device time.
    let timer = EventTimer::new(&cuda).unwrap();
    let ms = timer.time_ms(3, &mut || ours.run()).unwrap();
    assert!(ms > 0.0 && ms < 1000.0, "{ms}");

    // Arrays on the CPU, y = x, wrong lengths: errors naming the problem.
    let cpu_x = Device::cpu().upload(&x_host).unwrap();
    let e = CusparseSpmvOn::new(
        &cuda,
        n,
        &ptr,
        &col,
        &val,
        &cpu_x,
        &y_theirs,
        SpmvAlg::Default,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("x is on the CPU"), "{e}");
    let e = CusparseSpmvOn::new(&cuda, n, &ptr, &col, &val, &x, &x, SpmvAlg::Default)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("another array than x"), "{e}");
    let e = CusparseSpmvOn::new(
        &cuda,
        n + 1,
        &ptr,
        &col,
        &val,
        &x,
        &y_theirs,
        SpmvAlg::Default,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("cuSPARSE SpMV x"), "{e}");
}

#[test]
fn a_small_bench_apps_run_reports_every_measurement() {
    let Some(device) = gpu() else { return };
    let g = |s: &str| MatrixSource::Gen(s.parse().unwrap());
    let opts = AppsBenchOptions {
        graph_inputs: vec![g("rmat:scale=10,edge_factor=8,seed=1"), g("grid2d:side=30")],
        cg_inputs: vec![g("poisson2d:side=24")],
        kernel_repeats: 2,
        spmv_iters: 3,
        cg_f32_iters: 10,
        ..AppsBenchOptions::small().unwrap()
    };
    let mut snapshots = 0;
    let report =
        run_apps_bench(&device, &opts, "test", &mut |_| {}, &mut |_| snapshots += 1).unwrap();
    // One snapshot per input: one CG input, then two graph inputs.
    assert_eq!(snapshots, 3);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    // spmv, pagerank, sssp, bfs per graph input; cg f64 and f32.
    assert_eq!(report.apps.len(), 2 * 4 + 2, "{:?}", report.apps);
    for a in &report.apps {
        assert!(a.iterations > 0 && a.iteration_ms > 0.0, "{a:?}");
        assert!(a.kernel_sum_ms() > 0.0, "{a:?}");
    }
    assert_eq!(report.cg.len(), 1);
    let c = &report.cg[0];
    assert!(c.iterations_agree(), "{c:?}");
    assert!(
        c.cusparse_ops.iter().any(|o| o.name == "cusparseSpMV"),
        "{c:?}"
    );
    assert_eq!(report.pagerank.len(), 1);
    let p = &report.pagerank[0];
    assert!(p.max_abs_diff.unwrap() < 1e-5, "{p:?}");
    let md = report.to_markdown();
    assert!(
        md.contains("### CG (f64) against CG with cuSPARSE SpMV"),
        "{md}"
    );
}
