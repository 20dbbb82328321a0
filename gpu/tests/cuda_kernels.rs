//! The GPU suite: every fixture kernel × decomposition × task source against
//! the CPU twin, on generated matrices (RMAT, uniform, rgg, grid), the real
//! matrices of `tests/data/` and edge cases (rows longer than a warp, empty
//! rows, a single row, no rows); faults come back as the CPU twin's errors.
//!
//! Needs a CUDA GPU. Without one each test is skipped, unless
//! `WARPFIT_REQUIRE_GPU=1` (set by `scripts/gpu-check`), where it fails.

mod common;

use common::{Relax, Spmv, RELAX, SPMV_F32, SPMV_F64};
use warpfit_gpu::__private::Arg;
use warpfit_gpu::{CudaDevice, Decomposition, LaunchConfig, Split};
use warpfit_runtime::exec::{cpu, SharedOut};
use warpfit_runtime::{gen, Csr, Segment, TaskList, Tasks};

fn device() -> Option<CudaDevice> {
    match CudaDevice::new(0) {
        Ok(d) => Some(d),
        Err(e) => {
            if std::env::var("WARPFIT_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("WARPFIT_REQUIRE_GPU=1 and no CUDA device: {e}");
            }
            common::skip::skipped(env!("CARGO_CRATE_NAME"), &e);
            None
        }
    }
}

/// Deterministic values in [-1, 1), from the runtime's generator.
fn values(n: usize, seed: u64) -> Vec<f64> {
    warpfit_runtime::gen::random_values(n, seed).expect("a small test vector")
}

/// A matrix from explicit row lengths (columns pseudo-random).
fn from_lengths(lengths: &[usize], ncols: usize) -> Csr<f32> {
    let mut row_ptr = vec![0u32];
    let mut col = Vec::new();
    for (r, &l) in lengths.iter().enumerate() {
        for k in 0..l {
            col.push(((r * 7919 + k * 104_729) % ncols.max(1)) as u32);
        }
        row_ptr.push(col.len() as u32);
    }
    let val = values(col.len(), 7).into_iter().map(|v| v as f32).collect();
    Csr::new(lengths.len(), ncols, row_ptr, col, val).unwrap()
}

/// The suite's matrices; with `WARPFIT_SMALL=1` only the small edge cases
/// (what the compute-sanitizer pass runs).
fn matrices() -> Vec<(String, Csr<f32>)> {
    let small = std::env::var("WARPFIT_SMALL").is_ok_and(|v| v == "1");
    let mut m = if small {
        vec![]
    } else {
        vec![
            (
                "rmat:scale=14,ef=16".to_string(),
                gen::rmat(14, 16, 1).unwrap(),
            ),
            (
                "uniform:n=16384,per_row=16".into(),
                gen::uniform(16384, 16, 2).unwrap(),
            ),
            (
                "rgg:n=16384,random".into(),
                gen::rgg_with(16384, 3, gen::RggOrder::Random).unwrap(),
            ),
            (
                "rgg:n=16384,spatial".into(),
                gen::rgg_with(16384, 3, gen::RggOrder::Spatial).unwrap(),
            ),
            ("grid2d:side=128".into(), gen::grid2d(128).unwrap()),
        ]
    };
    // Long rows (hub of 5000, rows of 33 and 64 around a warp), empty rows.
    let mut lengths = vec![0usize; if small { 300 } else { 3000 }];
    for (i, l) in lengths.iter_mut().enumerate() {
        *l = match i % 97 {
            0 => 5000,
            1 | 2 => 0,
            3 => 33,
            4 => 64,
            5 => 31,
            _ => i % 9,
        };
    }
    m.push(("long-and-empty-rows".into(), from_lengths(&lengths, 4000)));
    m.push(("single-row-4097".into(), from_lengths(&[4097], 5000)));
    m.push(("all-empty-70".into(), from_lengths(&[0; 70], 10)));
    m.push(("no-rows".into(), from_lengths(&[], 10)));
    m.push(("tail-of-33-rows".into(), from_lengths(&[40; 33], 100)));
    if small {
        return m;
    }
    let dir = std::env::var("WARPFIT_TEST_DATA")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data").to_string());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "mtx"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .mtx files in {dir}");
    for p in files {
        let a = warpfit_runtime::sparse::mm::read_csr::<f32>(&p).unwrap_or_else(|e| panic!("{e}"));
        m.push((p.file_name().unwrap().to_string_lossy().into_owned(), a));
    }
    m
}

/// Every way the suite launches: decomposition, task source, split.
fn configs(a: &Csr<f32>) -> Vec<(String, LaunchConfig, Option<TaskList>)> {
    let mut out = Vec::new();
    for d in Decomposition::ALL {
        let splits: &[Split] = if d == Decomposition::Cte {
            &[
                Split::Never,
                Split::Auto,
                Split::Max(8),
                Split::Budget(40),
                Split::Queued(40),
            ]
        } else {
            &[Split::Never]
        };
        for &s in splits {
            for serial in if d == Decomposition::Cte {
                vec![0, 8, 64]
            } else {
                vec![8]
            } {
                let cfg = LaunchConfig {
                    decomposition: d,
                    split: s,
                    cte_serial_max: serial,
                };
                out.push((format!("{d} all split={s:?} serial={serial}"), cfg, None));
            }
        }
        for max in [7u32, 64, u32::MAX] {
            let list = TaskList::chunked(a.row_ptr(), max).unwrap();
            out.push((
                format!("{d} list chunked({max})"),
                LaunchConfig {
                    decomposition: d,
                    ..LaunchConfig::default()
                },
                Some(list),
            ));
        }
    }
    // A list in reversed order with a split row's pieces out of order.
    let n = a.nrows() as u32;
    let mut segs: Vec<Segment> = (0..n)
        .rev()
        .flat_map(|t| {
            let (lo, hi) = (a.row_ptr()[t as usize], a.row_ptr()[t as usize + 1]);
            let mid = lo + (hi - lo) / 2;
            [Segment::new(t, mid, hi), Segment::new(t, lo, mid)]
        })
        .collect();
    segs.truncate(segs.len());
    let list = TaskList::new(segs).unwrap();
    out.push((
        "cte list reversed-halves".into(),
        LaunchConfig::default(),
        Some(list.clone()),
    ));
    out.push((
        "subwarp:4 list reversed-halves".into(),
        LaunchConfig::new(Decomposition::SubWarp(4)),
        Some(list),
    ));
    out
}

/// `|d| <= tol`, false for a NaN difference (a NaN result never passes).
fn within(d: f64, tol: f64) -> bool {
    d.abs() <= tol
}

fn tasks_of(n: usize, list: &Option<TaskList>) -> Tasks<'_> {
    match list {
        Some(l) => Tasks::List(l),
        None => Tasks::All(n),
    }
}

/// Σ|val·x| per row, for a tolerance scaled by the row's magnitude and length.
fn abs_rows(a: &Csr<f32>, x: &[f64]) -> Vec<(f64, usize)> {
    (0..a.nrows())
        .map(|r| {
            let rr = a.row_range(r);
            let s = rr
                .clone()
                .map(|k| (f64::from(a.values()[k]) * x[a.col_idx()[k] as usize]).abs())
                .sum();
            (s, rr.len())
        })
        .collect()
}

#[test]
fn every_kernel_decomposition_and_task_source_matches_the_cpu() {
    let Some(dev) = device() else { return };
    let mut failures = Vec::new();
    let mut launches = 0usize;
    for (mname, a) in matrices() {
        let n = a.nrows();
        let x64 = values(a.ncols(), 11);
        let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
        let val64: Vec<f64> = a.values().iter().map(|&v| f64::from(v)).collect();
        let mags = abs_rows(&a, &x64);
        let dist: Vec<f32> = values(n.max(a.ncols()), 5)
            .iter()
            .map(|v| (v.abs() * 10.0) as f32)
            .collect();
        let dist = &dist[..n.max(a.ncols()).max(1).min(dist.len())];
        for (cname, cfg, list) in configs(&a) {
            // spmv f32
            let mut want = vec![f32::NAN; n];
            cpu::run(
                &Spmv {
                    row_ptr: a.row_ptr(),
                    col: a.col_idx(),
                    val: a.values(),
                    x: &x32,
                    y: SharedOut::new(&mut want),
                },
                tasks_of(n, &list),
            )
            .unwrap();
            let mut got = vec![f32::NAN; n];
            let r = dev.launch(
                &SPMV_F32,
                &cfg,
                tasks_of(n, &list),
                &mut [
                    Arg::input(a.row_ptr()),
                    Arg::input(a.col_idx()),
                    Arg::input(a.values()),
                    Arg::input(&x32),
                    Arg::output(&mut got),
                ],
            );
            launches += 1;
            match r {
                Err(e) => failures.push(format!("{mname} / spmv_f32 / {cname}: {e}")),
                Ok(()) => {
                    if let Some(i) = (0..n).find(|&i| {
                        let tol =
                            4.0 * f64::from(f32::EPSILON) * (mags[i].1 as f64 + 1.0) * mags[i].0
                                + 1e-30;
                        !within(f64::from(got[i]) - f64::from(want[i]), tol)
                    }) {
                        failures.push(format!(
                            "{mname} / spmv_f32 / {cname}: row {i}: got {} want {}",
                            got[i], want[i]
                        ));
                    }
                }
            }
            // spmv f64
            let mut want = vec![f64::NAN; n];
            cpu::run(
                &Spmv {
                    row_ptr: a.row_ptr(),
                    col: a.col_idx(),
                    val: &val64,
                    x: &x64,
                    y: SharedOut::new(&mut want),
                },
                tasks_of(n, &list),
            )
            .unwrap();
            let mut got = vec![f64::NAN; n];
            let r = dev.launch(
                &SPMV_F64,
                &cfg,
                tasks_of(n, &list),
                &mut [
                    Arg::input(a.row_ptr()),
                    Arg::input(a.col_idx()),
                    Arg::input(&val64),
                    Arg::input(&x64),
                    Arg::output(&mut got),
                ],
            );
            launches += 1;
            match r {
                Err(e) => failures.push(format!("{mname} / spmv_f64 / {cname}: {e}")),
                Ok(()) => {
                    if let Some(i) = (0..n).find(|&i| {
                        let tol =
                            4.0 * f64::EPSILON * (mags[i].1 as f64 + 1.0) * mags[i].0 + 1e-300;
                        !within(got[i] - want[i], tol)
                    }) {
                        failures.push(format!(
                            "{mname} / spmv_f64 / {cname}: row {i}: got {} want {}",
                            got[i], want[i]
                        ));
                    }
                }
            }
            // relax (min, +): exact.
            let w: Vec<f32> = a.values().iter().map(|v| v.abs()).collect();
            if a.ncols() <= dist.len() && n <= dist.len() {
                let mut want = vec![f32::NAN; n];
                cpu::run(
                    &Relax {
                        ptr: a.row_ptr(),
                        src: a.col_idx(),
                        w: &w,
                        dist,
                        scale: 7,
                        next: SharedOut::new(&mut want),
                    },
                    tasks_of(n, &list),
                )
                .unwrap();
                let mut got = vec![f32::NAN; n];
                let r = dev.launch(
                    &RELAX,
                    &cfg,
                    tasks_of(n, &list),
                    &mut [
                        Arg::input(a.row_ptr()),
                        Arg::input(a.col_idx()),
                        Arg::input(&w),
                        Arg::input(dist),
                        Arg::scalar(7u32),
                        Arg::output(&mut got),
                    ],
                );
                launches += 1;
                match r {
                    Err(e) => failures.push(format!("{mname} / relax / {cname}: {e}")),
                    Ok(()) => {
                        if let Some(i) = (0..n).find(|&i| got[i].to_bits() != want[i].to_bits()) {
                            failures.push(format!(
                                "{mname} / relax / {cname}: row {i}: got {} want {}",
                                got[i], want[i]
                            ));
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "{launches} launches compared with the CPU twin, {} mismatches",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {launches} launches differ from the CPU:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// One out-of-range gather in the middle of a long row: every launch reports
/// exactly the CPU twin's fault (task, array, index), whichever path ran it:
/// the lean-checked CTE expansion and its exact replay, the serial
/// fallback, sub-warps, whole or split tasks.
/// Split tasks merge their pieces' partials in list order, whatever order
/// the pieces ran in: a prepared launch run again gives the same bits every
/// time, and a fault inside a split task is the CPU twin's exact error.
#[test]
fn a_prepared_split_launch_gives_the_same_bits_on_every_run() {
    let Some(dev) = device() else { return };
    let a = gen::rmat(14, 16, 3).unwrap();
    let n = a.nrows();
    let x64 = values(a.ncols(), 13);
    let x: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
    let mags = abs_rows(&a, &x64);
    let mut bad_col = a.col_idx().to_vec();
    let long = (0..n).max_by_key(|&r| a.row_range(r).len()).unwrap();
    bad_col[a.row_range(long).start + a.row_range(long).len() / 2] = u32::MAX;
    let mut failures = Vec::new();
    let mut runs = 0usize;
    for (cname, cfg, list) in configs(&a) {
        let is_split = list.as_ref().is_some_and(|l| !l.split_tasks().is_empty())
            || (list.is_none() && cfg.split != Split::Never);
        if !is_split {
            continue;
        }
        let mut want = vec![f32::NAN; n];
        cpu::run(
            &Spmv {
                row_ptr: a.row_ptr(),
                col: a.col_idx(),
                val: a.values(),
                x: &x,
                y: SharedOut::new(&mut want),
            },
            tasks_of(n, &list),
        )
        .unwrap();
        let mut y = vec![f32::NAN; n];
        let prepared = warpfit_gpu::__private::CudaLaunch::new(
            &dev,
            &SPMV_F32,
            &cfg,
            tasks_of(n, &list),
            &[
                Arg::input(a.row_ptr()),
                Arg::input(a.col_idx()),
                Arg::input(a.values()),
                Arg::input(&x),
                Arg::output(&mut y),
            ],
        )
        .unwrap();
        // A queued split runs its packed groups from the device queue (the
        // head zeroed before every run below), a budget on a static grid.
        let first_entry = prepared.entry_points().first().copied();
        match (cfg.split, &list) {
            (Split::Queued(_), None) => assert_eq!(first_entry, Some("wf_cte_queue"), "{cname}"),
            (Split::Budget(_), None) => assert_eq!(first_entry, Some("wf_cte_list"), "{cname}"),
            _ => {}
        }
        let mut first: Option<Vec<f32>> = None;
        for round in 0..4 {
            let mut got = vec![f32::NAN; n];
            let r = prepared.run().and_then(|()| {
                prepared.finish(&mut [
                    Arg::input(a.row_ptr()),
                    Arg::input(a.col_idx()),
                    Arg::input(a.values()),
                    Arg::input(&x),
                    Arg::output(&mut got),
                ])
            });
            runs += 1;
            if let Err(e) = r {
                failures.push(format!("{cname} run {round}: {e}"));
                break;
            }
            match &first {
                None => {
                    if let Some(i) = (0..n).find(|&i| {
                        let tol =
                            4.0 * f64::from(f32::EPSILON) * (mags[i].1 as f64 + 1.0) * mags[i].0
                                + 1e-30;
                        !within(f64::from(got[i]) - f64::from(want[i]), tol)
                    }) {
                        failures.push(format!("{cname}: row {i}: got {} want {}", got[i], want[i]));
                    }
                    first = Some(got);
                }
                Some(f) => {
                    if let Some(i) = (0..n).find(|&i| f[i].to_bits() != got[i].to_bits()) {
                        failures.push(format!(
                            "{cname} run {round}: row {i}: {} then {}",
                            f[i], got[i]
                        ));
                    }
                }
            }
        }
        // A fault in the longest (split) row: the CPU twin's exact error.
        let mut sink = vec![0f32; n];
        let cpu_err = cpu::run(
            &Spmv {
                row_ptr: a.row_ptr(),
                col: &bad_col,
                val: a.values(),
                x: &x,
                y: SharedOut::new(&mut sink),
            },
            tasks_of(n, &list),
        )
        .unwrap_err();
        let prepared = warpfit_gpu::__private::CudaLaunch::new(
            &dev,
            &SPMV_F32,
            &cfg,
            tasks_of(n, &list),
            &[
                Arg::input(a.row_ptr()),
                Arg::input(&bad_col),
                Arg::input(a.values()),
                Arg::input(&x),
                Arg::output(&mut sink),
            ],
        )
        .unwrap();
        match prepared.run().and_then(|()| prepared.check_fault()) {
            Err(e) if e.to_string() == cpu_err.to_string() => {}
            other => failures.push(format!("{cname} fault: gpu {other:?}, cpu {cpu_err}")),
        }
    }
    assert!(runs >= 20, "only {runs} split launches ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_single_fault_is_reported_exactly_by_every_path() {
    let Some(dev) = device() else { return };
    let lengths: Vec<usize> = (0..200).map(|r| 9 + (r * 37) % 90).collect();
    let a = from_lengths(&lengths, 1000);
    let n = a.nrows();
    let row = (100..n).find(|&r| lengths[r] > 60).unwrap();
    let mut col = a.col_idx().to_vec();
    col[a.row_ptr()[row] as usize + 45] = 5000;
    let x = vec![1.0f32; 1000];
    let mut failures = Vec::new();
    for (cname, cfg, list) in configs(&a) {
        let mut want = vec![0f32; n];
        let cpu_err = cpu::run(
            &Spmv {
                row_ptr: a.row_ptr(),
                col: &col,
                val: a.values(),
                x: &x,
                y: SharedOut::new(&mut want),
            },
            tasks_of(n, &list),
        )
        .unwrap_err();
        let mut got = vec![0f32; n];
        let gpu = dev.launch(
            &SPMV_F32,
            &cfg,
            tasks_of(n, &list),
            &mut [
                Arg::input(a.row_ptr()),
                Arg::input(&col),
                Arg::input(a.values()),
                Arg::input(&x),
                Arg::output(&mut got),
            ],
        );
        match gpu {
            Err(e) if e.to_string() == cpu_err.to_string() => {}
            other => failures.push(format!("{cname}: gpu {other:?}, cpu {cpu_err}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn faults_come_back_as_the_cpu_twins_errors() {
    let Some(dev) = device() else { return };
    let a = from_lengths(&[3, 40, 0, 5000, 2], 50);
    let n = a.nrows();
    // x shorter than the column range: an index fault in `x`.
    let x: Vec<f32> = vec![1.0; 10];
    for d in Decomposition::ALL {
        let mut want = vec![0f32; n];
        let cpu_err = cpu::run(
            &Spmv {
                row_ptr: a.row_ptr(),
                col: a.col_idx(),
                val: a.values(),
                x: &x,
                y: SharedOut::new(&mut want),
            },
            Tasks::All(n),
        )
        .unwrap_err();
        let mut got = vec![0f32; n];
        let gpu_err = dev
            .launch(
                &SPMV_F32,
                &LaunchConfig::new(d),
                Tasks::All(n),
                &mut [
                    Arg::input(a.row_ptr()),
                    Arg::input(a.col_idx()),
                    Arg::input(a.values()),
                    Arg::input(&x),
                    Arg::output(&mut got),
                ],
            )
            .unwrap_err();
        // Which faulting task is reported first may differ; the kind, array and length may not.
        let (c, g) = (cpu_err.to_string(), gpu_err.to_string());
        assert!(
            g.contains("`x`: index") && g.contains("out of range for length 10"),
            "{d}: gpu `{g}` vs cpu `{c}`"
        );
        assert!(
            matches!(
                gpu_err,
                warpfit_runtime::Error::IndexOutOfRange { len: 10, .. }
            ),
            "{d}: {gpu_err:?}"
        );
    }
    // Division by zero: scale = 0.
    let w = vec![1.0f32; a.nnz()];
    let dist = vec![0.5f32; 50];
    let mut next = vec![0f32; n];
    let e = dev
        .launch(
            &RELAX,
            &LaunchConfig::default(),
            Tasks::All(n),
            &mut [
                Arg::input(a.row_ptr()),
                Arg::input(a.col_idx()),
                Arg::input(&w),
                Arg::input(&dist),
                Arg::scalar(0u32),
                Arg::output(&mut next),
            ],
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            warpfit_runtime::Error::DivisionByZero {
                kernel: "relax",
                ..
            }
        ),
        "{e:?}"
    );
    // A segment outside its task's range: the same error as the CPU executor.
    let list = TaskList::new(vec![Segment::new(0, 0, 3), Segment::new(1, 3, 60)]).unwrap();
    let mut want = vec![0f32; n];
    let xs = vec![1.0f32; 50];
    let cpu_err = cpu::run(
        &Spmv {
            row_ptr: a.row_ptr(),
            col: a.col_idx(),
            val: a.values(),
            x: &xs,
            y: SharedOut::new(&mut want),
        },
        Tasks::List(&list),
    )
    .unwrap_err();
    let mut got = vec![0f32; n];
    let gpu_err = dev
        .launch(
            &SPMV_F32,
            &LaunchConfig::default(),
            Tasks::List(&list),
            &mut [
                Arg::input(a.row_ptr()),
                Arg::input(a.col_idx()),
                Arg::input(a.values()),
                Arg::input(&xs),
                Arg::output(&mut got),
            ],
        )
        .unwrap_err();
    assert_eq!(gpu_err.to_string(), cpu_err.to_string());
    // Wrong argument types are rejected before any launch.
    let xd = vec![1.0f64; 50];
    let e = dev
        .launch(
            &SPMV_F32,
            &LaunchConfig::default(),
            Tasks::All(n),
            &mut [
                Arg::input(a.row_ptr()),
                Arg::input(a.col_idx()),
                Arg::input(a.values()),
                Arg::input(&xd),
                Arg::output(&mut got),
            ],
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("argument 3 (`x`) must be &[f32], got &[f64]"),
        "{e}"
    );
}

#[test]
fn a_warm_launch_does_not_recompile() {
    let Some(dev) = device() else { return };
    let dir = std::env::temp_dir().join(format!("warpfit-cache-test-{}", std::process::id()));
    let tu = warpfit_gpu::__private::compile::translation_unit(&SPMV_F32);
    let cold =
        warpfit_gpu::__private::compile::compile_cached("spmv_f32", &tu, dev.arch(), Some(&dir))
            .unwrap();
    let warm =
        warpfit_gpu::__private::compile::compile_cached("spmv_f32", &tu, dev.arch(), Some(&dir))
            .unwrap();
    assert!(!cold.cached && warm.cached);
    assert_eq!(cold.cubin, warm.cubin);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A small SpMV launch (4096 rows of 8) with the default configuration (CTE,
/// automatic split: the size kernel, then the task-list kernel), checked
/// against the CPU twin.
fn small_spmv_matches_the_cpu(dev: &CudaDevice) {
    let a = gen::uniform(4096, 8, 5).unwrap();
    let x: Vec<f32> = values(a.ncols(), 4).iter().map(|&v| v as f32).collect();
    let mut want = vec![0f32; a.nrows()];
    cpu::run(
        &Spmv {
            row_ptr: a.row_ptr(),
            col: a.col_idx(),
            val: a.values(),
            x: &x,
            y: SharedOut::new(&mut want),
        },
        Tasks::All(a.nrows()),
    )
    .unwrap();
    let mut got = vec![0f32; a.nrows()];
    dev.launch(
        &SPMV_F32,
        &LaunchConfig::default(),
        Tasks::All(a.nrows()),
        &mut [
            Arg::input(a.row_ptr()),
            Arg::input(a.col_idx()),
            Arg::input(a.values()),
            Arg::input(&x),
            Arg::output(&mut got),
        ],
    )
    .unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "row {i}: {g} vs {w}"
        );
    }
}

/// An empty directory of its own under the temporary one.
fn fresh_cache_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("warpfit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_first_launch_compiles_only_the_entry_points_it_uses() {
    if device().is_none() {
        return;
    }
    let dir = fresh_cache_dir("first-launch");
    let t = std::time::Instant::now();
    let cold = CudaDevice::with_cache_dir(0, Some(dir.clone())).unwrap();
    small_spmv_matches_the_cpu(&cold);
    let cold_ms = t.elapsed().as_secs_f64() * 1e3;
    drop(cold);
    let t = std::time::Instant::now();
    let warm = CudaDevice::with_cache_dir(0, Some(dir.clone())).unwrap();
    small_spmv_matches_the_cpu(&warm);
    let warm_ms = t.elapsed().as_secs_f64() * 1e3;
    // What BENCHMARKS.md reports as the first launch (`--nocapture`).
    eprintln!(
        "small SpMV launch incl. context creation: {cold_ms:.0} ms from an empty kernel \
         cache, {warm_ms:.0} ms from the warm cache"
    );
    // The size and the CTE task-list kernels were compiled and cached; the
    // thread task-list kernel (a small launch's serial segments) and the
    // merges may have been compiled ahead of need (on spare cores); nothing
    // else was compiled.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".wfk"))
        .collect();
    for ep in ["wf_sizes", "wf_cte_list"] {
        assert!(
            names
                .iter()
                .any(|n| n.starts_with(&format!("spmv_f32.{ep}-"))),
            "{ep} not cached: {names:?}"
        );
    }
    for n in &names {
        assert!(
            [
                "wf_sizes-",
                "wf_cte_list-",
                "wf_merge-",
                "wf_merge_wide-",
                "wf_thread_list-",
            ]
            .iter()
            .any(|ep| n.starts_with(&format!("spmv_f32.{ep}"))),
            "compiled but not used: {n}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A device opened expecting a launch starts that launch's entry points
/// before its context exists: the launch then takes them (same result),
/// and exactly the announced guess is compiled, nothing twice.
#[test]
fn a_device_opened_expecting_a_launch_compiles_its_entry_points_ahead() {
    if device().is_none() {
        return;
    }
    let dir = fresh_cache_dir("expected-launch");
    let t = std::time::Instant::now();
    let expected = warpfit_gpu::ExpectedLaunch {
        spec: &SPMV_F32,
        config: LaunchConfig::default(),
        n_tasks: 4096,
    };
    let dev = CudaDevice::open_expecting(0, Some(dir.clone()), &[expected]).unwrap();
    small_spmv_matches_the_cpu(&dev);
    eprintln!(
        "small SpMV launch incl. context creation, opened expecting it: {:.0} ms from an empty \
         kernel cache",
        t.elapsed().as_secs_f64() * 1e3
    );
    drop(dev);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".wfk"))
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("spmv_f32.wf_sizes-")),
        "{names:?}"
    );
    // An expected launch on a warm cache compiles nothing and still runs.
    let warm = CudaDevice::open_expecting(0, Some(dir.clone()), &[expected]).unwrap();
    small_spmv_matches_the_cpu(&warm);
    drop(warm);
    let again = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".wfk"))
        })
        .count();
    assert_eq!(again, names.len(), "a warm open compiled again");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cached_binary_the_driver_refuses_is_recompiled_and_replaced() {
    use warpfit_gpu::__private::compile::{
        compile_uncached, entry_point_unit, lookup_cached, store_cached,
    };
    let Some(dev) = device() else { return };
    let arch = dev.arch();
    let dir = fresh_cache_dir("refused-binary");
    // Well-formed entries (checksum, lengths, source, an ELF image) that
    // only the driver can refuse: CUBIN for an architecture of another
    // major version, which the GPU cannot run. (Not junk after an ELF
    // magic: the driver takes no length and would follow its offsets.)
    let other = if arch.major == 9 {
        warpfit_gpu::Arch::new(8, 0)
    } else {
        warpfit_gpu::Arch::new(9, 0)
    };
    let entry = |ep: &str| {
        let label = format!("spmv_f32.{ep}");
        (label, entry_point_unit(&SPMV_F32, &[ep]).unwrap())
    };
    let mut planted = Vec::new();
    for ep in ["wf_sizes", "wf_cte_list", "wf_cte_all", "wf_merge"] {
        let (label, src) = entry(ep);
        let foreign = compile_uncached(&label, &src, other).unwrap().cubin;
        store_cached(&label, &src, arch, &dir, &foreign).unwrap();
        let hit = lookup_cached(&label, &src, arch, Some(&dir)).unwrap();
        assert_eq!(hit.unwrap().cubin, foreign);
        planted.push(foreign);
    }
    let dev = CudaDevice::with_cache_dir(0, Some(dir.clone())).unwrap();
    small_spmv_matches_the_cpu(&dev);
    for (ep, foreign) in ["wf_sizes", "wf_cte_list"].iter().zip(&planted) {
        let (label, src) = entry(ep);
        let replaced = lookup_cached(&label, &src, arch, Some(&dir))
            .unwrap()
            .expect("a valid entry");
        assert_ne!(&replaced.cubin, foreign, "{ep} not replaced");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn readbacks_arrive_in_order_behind_the_work_enqueued_before_them() {
    let Some(cuda) = device() else { return };
    let device = warpfit_gpu::Device::Cuda(cuda);
    let mut v = device.alloc::<u32>(2).unwrap();
    let mut rb = device.readback::<u32>(2, 3).unwrap();
    // Copies are enqueued on the stream: each sees the value written just
    // before it, even though none was waited for.
    for k in 0..3u32 {
        v.copy_from(&[k, 10 * k]).unwrap();
        rb.push(&v).unwrap();
    }
    assert!(rb.is_full());
    assert!(rb.push(&v).is_err(), "a full ring refuses");
    for k in 0..3u32 {
        assert_eq!(rb.take().unwrap(), &[k, 10 * k]);
    }
    assert!(rb.take().is_err(), "an empty ring refuses");
    // The ring wraps; a marker returns nothing.
    v.copy_from(&[7, 8]).unwrap();
    rb.push(&v).unwrap();
    rb.push_marker().unwrap();
    assert_eq!(rb.take().unwrap(), &[7, 8]);
    assert!(rb.take().unwrap().is_empty());
    // A length mismatch and an array on the CPU are errors.
    let short = device.alloc::<u32>(1).unwrap();
    assert!(rb.push(&short).is_err());
    let host = warpfit_gpu::Device::cpu().upload(&[1u32, 2]).unwrap();
    let e = rb.push(&host).unwrap_err().to_string();
    assert!(e.contains("the CPU"), "{e}");
}

#[test]
fn a_mapped_array_is_read_after_a_marker_without_a_copy() {
    let Some(cuda) = device() else { return };
    let device = warpfit_gpu::Device::Cuda(cuda);
    let mut m = device.alloc_mapped::<f64>(3).unwrap();
    assert!(m.location().contains("mapped"), "{}", m.location());
    assert!(m.cuda_ptr().is_some());
    m.copy_from(&[1.0, 2.0, 3.0]).unwrap();
    let mut rb = device.readback::<f64>(1, 1).unwrap();
    rb.push_marker().unwrap();
    assert!(rb.take().unwrap().is_empty());
    let mut out = [0.0; 2];
    m.read_completed(1, &mut out).unwrap();
    assert_eq!(out, [2.0, 3.0]);
    assert!(m.read_completed(2, &mut out).is_err(), "out of range");
    m.fill(-1.5).unwrap();
    assert_eq!(m.to_vec().unwrap(), vec![-1.5; 3]);
    // An array in device memory is not read this way.
    let d = device.alloc::<f64>(2).unwrap();
    assert!(d.read_completed(0, &mut out).is_err());
    // Page-locked memory beyond the host's is refused before the driver is asked.
    let e = device.alloc_mapped::<u8>(1 << 62).unwrap_err().to_string();
    assert!(e.contains("mapped"), "{e}");
}

/// The cache-fit plans of a small matrix (column blocks and K-D tiling,
/// a cache small enough for several partitions).
fn small_plans() -> Vec<(String, Csr<f32>, warpfit_runtime::schedule::CacheFitPlan)> {
    use warpfit_runtime::partition::WorkGraphOf;
    use warpfit_runtime::schedule::{CacheFitPlan, CacheSize, Partitioner, ThrottleOptions};
    let mut out = Vec::new();
    for (name, a) in [
        ("rmat:scale=12", gen::rmat(12, 16, 3).unwrap()),
        ("uniform 2^12", gen::uniform(1 << 12, 16, 3).unwrap()),
        (
            // More columns than the 4096-byte cache holds, so that the
            // column partitioner (which counts `x` only) splits too.
            "rows longer than a warp",
            from_lengths(&[0, 700, 3, 0, 90, 33, 1], 5000),
        ),
    ] {
        for partitioner in [Partitioner::Columns, Partitioner::Kd] {
            let graph = WorkGraphOf::borrow_csr(&a).unwrap();
            let opts = ThrottleOptions::default()
                .with_partitioner(partitioner)
                .with_cache(CacheSize::Bytes(4096));
            let partition = opts.partition(&graph, None, None).unwrap();
            let plan = CacheFitPlan::new(&graph, &partition).unwrap();
            assert!(plan.len() > 1, "{name} {partitioner}: one partition");
            out.push((format!("{name} {partitioner}"), a.clone(), plan));
        }
    }
    out
}

const DECOMPOSITIONS: [Decomposition; 3] = [
    Decomposition::Cte,
    Decomposition::Thread,
    Decomposition::SubWarp(8),
];

/// A plan's segment list run as one launch per partition
/// (`CudaLaunch::in_ranges`) gives what one launch over the same list gives:
/// bit for bit for the thread and sub-warp decompositions, whose fold of a
/// segment does not depend on its neighbours (CTE's rounds do), and the
/// CPU twin's result for every decomposition and any cut of the list.
#[test]
fn launches_per_partition_equal_one_launch_over_the_plan() {
    use warpfit_runtime::schedule::ChunkQueue;
    let Some(dev) = device() else { return };
    for (name, a, plan) in small_plans() {
        let queue = ChunkQueue::new(&plan, 64).unwrap();
        let list = queue.task_list().unwrap();
        let per_part: Vec<_> = (0..plan.len())
            .map(|p| {
                let c = queue.chunks_of(p..p + 1).unwrap();
                let ptr = queue.chunk_ptr();
                ptr[c.start as usize] as usize..ptr[c.end as usize] as usize
            })
            .filter(|r| !r.is_empty())
            .collect();
        // Every third segment a launch of its own, besides.
        let cuts: Vec<_> = (0..list.len())
            .step_by(3)
            .map(|s| s..(s + 3).min(list.len()))
            .collect();
        let col = plan.permute_fine(a.col_idx()).unwrap();
        let val = plan.permute_fine(a.values()).unwrap();
        let x: Vec<f32> = values(a.ncols(), 9).iter().map(|&v| v as f32).collect();
        let mut want = vec![f32::NAN; a.nrows()];
        cpu::run(
            &Spmv {
                row_ptr: a.row_ptr(),
                col: &col,
                val: &val,
                x: &x,
                y: SharedOut::new(&mut want),
            },
            Tasks::List(&list),
        )
        .unwrap();
        let run = |cfg: &LaunchConfig, ranges: Option<&[std::ops::Range<usize>]>| {
            let mut y = vec![f32::NAN; a.nrows()];
            {
                let mut args = [
                    Arg::input(a.row_ptr()),
                    Arg::input(&col),
                    Arg::input(&val),
                    Arg::input(&x),
                    Arg::output(&mut y),
                ];
                let p = match ranges {
                    Some(r) => warpfit_gpu::__private::CudaLaunch::in_ranges(
                        &dev, &SPMV_F32, cfg, &list, r, &args,
                    ),
                    None => warpfit_gpu::__private::CudaLaunch::new(
                        &dev,
                        &SPMV_F32,
                        cfg,
                        Tasks::List(&list),
                        &args,
                    ),
                }
                .unwrap();
                p.run().unwrap();
                p.finish(&mut args).unwrap();
            }
            y
        };
        let close = |got: &[f32], what: &str| {
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "{name} {what}: row {i}: {g} vs {w}"
                );
            }
        };
        for d in DECOMPOSITIONS {
            let cfg = LaunchConfig {
                decomposition: d,
                ..LaunchConfig::default()
            };
            let one = run(&cfg, None);
            close(&one, &format!("{d:?}, one launch"));
            for ranges in [&per_part, &cuts] {
                let got = run(&cfg, Some(ranges));
                close(&got, &format!("{d:?}, {} launches", ranges.len()));
                if d != Decomposition::Cte {
                    assert!(
                        got.iter()
                            .zip(&one)
                            .all(|(g, o)| g.to_bits() == o.to_bits()),
                        "{name} {d:?}: {} launches differ from one",
                        ranges.len()
                    );
                }
            }
        }
        // Ranges that do not cover the list are errors.
        let cfg = LaunchConfig::default();
        let mut y = vec![0f32; a.nrows()];
        let args = [
            Arg::input(a.row_ptr()),
            Arg::input(&col),
            Arg::input(&val),
            Arg::input(&x),
            Arg::output(&mut y),
        ];
        let short: Vec<_> = std::iter::once(0..list.len() - 1).collect();
        assert!(warpfit_gpu::__private::CudaLaunch::in_ranges(
            &dev, &SPMV_F32, &cfg, &list, &short, &args
        )
        .is_err());
    }
}

/// A plan laid out part by part and run as one launch per partition with
/// the rows' folds carried between launches (`CarriedLaunch`): the thread
/// decomposition folds every row in the plan's order, so it equals the CPU
/// twin over the plan's reordered arrays bit for bit; CTE (automatic
/// split: hubs split and merged inside a partition, then carried) and
/// sub-warp agree within rounding; a min-plus kernel is exact under every
/// decomposition, against the CPU twin on the original arrays.
#[test]
fn carried_launches_over_partitions_equal_the_cpu_twin() {
    use warpfit_runtime::schedule::PartMajor;
    let Some(dev) = device() else { return };
    let device = warpfit_gpu::Device::Cuda(dev.clone());
    for (name, a, plan) in small_plans() {
        let n = a.nrows();
        let parts = PartMajor::new(&plan).unwrap();
        let x: Vec<f32> = values(a.ncols(), 9).iter().map(|&v| v as f32).collect();
        // The CPU twin, every row whole, over the plan's (task-major) order.
        let mut want = vec![f32::NAN; n];
        let (tcol, tval) = (
            plan.permute_fine(a.col_idx()).unwrap(),
            plan.permute_fine(a.values()).unwrap(),
        );
        cpu::run(
            &Spmv {
                row_ptr: a.row_ptr(),
                col: &tcol,
                val: &tval,
                x: &x,
                y: SharedOut::new(&mut want),
            },
            Tasks::All(n),
        )
        .unwrap();
        let col = device
            .upload(&parts.permute_fine(a.col_idx()).unwrap())
            .unwrap();
        let val = device
            .upload(&parts.permute_fine(a.values()).unwrap())
            .unwrap();
        let ptrs: Vec<_> = (0..parts.len())
            .map(|p| device.upload(parts.part_ptr(p)).unwrap())
            .collect();
        let xd = device.upload(&x).unwrap();
        for d in DECOMPOSITIONS {
            let y = device.alloc::<f32>(n).unwrap();
            let cfg = LaunchConfig {
                decomposition: d,
                ..LaunchConfig::default()
            };
            let launch = warpfit_gpu::__private::CarriedLaunch::cuda(
                &dev,
                &SPMV_F32,
                &cfg,
                n,
                ptrs.iter()
                    .map(|ptr| {
                        vec![
                            Arg::resident_input(ptr),
                            Arg::resident_input(&col),
                            Arg::resident_input(&val),
                            Arg::resident_input(&xd),
                            Arg::resident_output(&y),
                        ]
                    })
                    .collect(),
            )
            .unwrap();
            assert_eq!(launch.len(), plan.len());
            // Twice: the carry of one run must not leak into the next.
            for _ in 0..2 {
                launch.run().unwrap();
                launch.check().unwrap();
            }
            let got = y.to_vec().unwrap();
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                if d == Decomposition::Thread {
                    assert_eq!(
                        g.to_bits(),
                        w.to_bits(),
                        "{name} {d:?}: row {i}: {g} vs {w}"
                    );
                } else {
                    assert!(
                        (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                        "{name} {d:?}: row {i}: {g} vs {w}"
                    );
                }
            }
        }
        // Min-plus relaxation: exact, against the original arrays.
        let w: Vec<f32> = values(a.nnz(), 5)
            .iter()
            .map(|v| (v.abs() * 9.0) as f32)
            .collect();
        let dist: Vec<f32> = values(n.max(a.ncols()), 6)
            .iter()
            .map(|v| (v.abs() * 50.0) as f32)
            .collect();
        let mut want = vec![f32::NAN; n];
        cpu::run(
            &Relax {
                ptr: a.row_ptr(),
                src: a.col_idx(),
                w: &w,
                dist: &dist,
                scale: 7,
                next: SharedOut::new(&mut want),
            },
            Tasks::All(n),
        )
        .unwrap();
        let src = col;
        let wd = device.upload(&parts.permute_fine(&w).unwrap()).unwrap();
        let distd = device.upload(&dist).unwrap();
        for d in DECOMPOSITIONS {
            let next = device.alloc::<f32>(n).unwrap();
            let cfg = LaunchConfig {
                decomposition: d,
                ..LaunchConfig::default()
            };
            let launch = warpfit_gpu::__private::CarriedLaunch::cuda(
                &dev,
                &RELAX,
                &cfg,
                n,
                ptrs.iter()
                    .map(|ptr| {
                        vec![
                            Arg::resident_input(ptr),
                            Arg::resident_input(&src),
                            Arg::resident_input(&wd),
                            Arg::resident_input(&distd),
                            Arg::scalar(7u32),
                            Arg::resident_output(&next),
                        ]
                    })
                    .collect(),
            )
            .unwrap();
            launch.run().unwrap();
            launch.check().unwrap();
            let got = next.to_vec().unwrap();
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(g, w)| g.to_bits() == w.to_bits()),
                "{name} relax {d:?} differs from the CPU twin"
            );
        }
    }
}

/// Ranges as the size kernel writes them (`lo, hi` per task) for rows of
/// `lengths`, one after the other from `start`.
fn ranges_of(lengths: &[u32], start: u32) -> Vec<u32> {
    let mut at = start;
    lengths
        .iter()
        .flat_map(|&l| {
            let r = [at, at + l];
            at += l;
            r
        })
        .collect()
}

/// The task list cut on the device is the host's word for word: segments,
/// whole flags, split tasks and their segments, packed warp groups and
/// their whole runs, the wide merge; ranges that do not follow one
/// another stay on the host.
#[test]
fn the_device_task_cut_is_the_hosts_word_for_word() {
    let Some(dev) = device() else { return };
    use warpfit_gpu::__private::{cut_both_ways, PACK_CHUNK};
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |m: u32| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % u64::from(m.max(1))) as u32
    };
    let mut cases: Vec<(String, Vec<u32>)> = vec![
        ("one empty task".into(), ranges_of(&[0], 0)),
        ("one task".into(), ranges_of(&[7], 3)),
        ("one long task".into(), ranges_of(&[100_000], 0)),
        ("all empty".into(), ranges_of(&vec![0; 5000], 11)),
        ("a hub among empties".into(), {
            let mut l = vec![0; 3000];
            l[1500] = 70_000;
            ranges_of(&l, 0)
        }),
    ];
    for (i, &n) in [100usize, 2 * PACK_CHUNK + 17, 40_000].iter().enumerate() {
        let lengths: Vec<u32> = (0..n)
            .map(|_| match next(100) {
                0 => 2000 + next(40_000),
                1..=20 => 0,
                _ => next(64),
            })
            .collect();
        cases.push((
            format!("random {i} ({n} tasks)"),
            ranges_of(&lengths, next(1000)),
        ));
    }
    let mut failures = Vec::new();
    for (name, ranges) in &cases {
        for max_len in [4u32, 512, 1024] {
            for budget in [None, Some(64u32), Some(max_len), Some(2048)] {
                let (host, device) = cut_both_ways(&dev, ranges, max_len, budget).unwrap();
                match device {
                    Some(d) if d == host => {}
                    Some(d) => failures.push(format!(
                        "{name}, max {max_len}, budget {budget:?}: {} segments on the host, {} on the device; first difference in {}",
                        host.segments.len() / 3,
                        d.segments.len() / 3,
                        if d.segments != host.segments { "segments" } else if d.whole != host.whole { "whole" } else if d.split != host.split { "split" } else if d.split_segments != host.split_segments { "split segments" } else if d.packed != host.packed { "packed" } else { "wide merge" }
                    )),
                    None => failures.push(format!("{name}: contiguous ranges left to the host")),
                }
            }
        }
    }
    // Gaps and overlaps: the host cuts them.
    let gapped = [0u32, 5, 7, 9, 9, 20];
    let (_, device) = cut_both_ways(&dev, &gapped, 4, Some(64)).unwrap();
    assert!(device.is_none(), "ranges with a gap were cut on the device");
    assert!(cut_both_ways(&dev, &[0, u32::MAX], 4, None).is_err());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The SpMV fixture's arguments over `a`'s rows with columns `col`.
fn spmv_args<'a>(a: &'a Csr<f32>, col: &'a [u32], x: &'a [f32], y: &'a mut [f32]) -> Vec<Arg<'a>> {
    vec![
        Arg::input(a.row_ptr()),
        Arg::input(col),
        Arg::input(a.values()),
        Arg::input(x),
        Arg::output(y),
    ]
}

/// A launch large enough to cut its tasks on the device (hub rows split,
/// warps packed by work) gives the CPU twin's results, runs the list the
/// host would have cut, and names a fault in a split row as the twin does
/// (the segment read back from the device).
#[test]
fn a_launch_cut_on_the_device_matches_the_twin() {
    let Some(dev) = device() else { return };
    let n = warpfit_gpu::__private::DEVICE_CUT_MIN_TASKS + 1000;
    let lengths: Vec<usize> = (0..n)
        .map(|r| match r % 50_000 {
            7 => 30_000 + r % 977,
            _ => ((r * 2_654_435_761usize) >> 7) % 24,
        })
        .collect();
    let a = from_lengths(&lengths, 1 << 16);
    let x: Vec<f32> = values(a.ncols(), 5).iter().map(|&v| v as f32).collect();
    let mags = abs_rows(&a, &values(a.ncols(), 5));
    let cfg = LaunchConfig {
        decomposition: Decomposition::Cte,
        split: Split::Auto,
        ..LaunchConfig::default()
    };
    // The twin's result (or fault) and a prepared launch, over `col`.
    let twin = |col: &[u32]| {
        let mut y = vec![0f32; n];
        let spmv = Spmv {
            row_ptr: a.row_ptr(),
            col,
            val: a.values(),
            x: &x,
            y: SharedOut::new(&mut y),
        };
        cpu::run(&spmv, Tasks::All(n)).map(|()| y)
    };
    let mut y = vec![0f32; n];
    let prepare = |col: &[u32], y: &mut [f32]| {
        warpfit_gpu::__private::CudaLaunch::new(
            &dev,
            &SPMV_F32,
            &cfg,
            Tasks::All(n),
            &spmv_args(&a, col, &x, y),
        )
        .unwrap()
    };
    let prepared = prepare(a.col_idx(), &mut y);
    assert_eq!(prepared.chosen_split(), Some(Split::Budget(512)));
    let words = prepared.task_list_words().unwrap().expect("a task list");
    let ranges: Vec<u32> = a.row_ptr().windows(2).flat_map(|w| [w[0], w[1]]).collect();
    let (host, _) = warpfit_gpu::__private::cut_both_ways(&dev, &ranges, 512, Some(512)).unwrap();
    assert_eq!(words, host, "the launch's list is not the host's cut");
    let list = prepared.task_list().unwrap().expect("a task list");
    assert_eq!(list, TaskList::chunked(a.row_ptr(), 512).unwrap());
    prepared.run().unwrap();
    prepared
        .finish(&mut spmv_args(&a, a.col_idx(), &x, &mut y))
        .unwrap();
    let want = twin(a.col_idx()).unwrap();
    for i in 0..n {
        let tol = 4.0 * f64::from(f32::EPSILON) * (mags[i].1 as f64 + 1.0) * mags[i].0 + 1e-30;
        assert!(
            within(f64::from(y[i]) - f64::from(want[i]), tol),
            "row {i}: got {} want {}",
            y[i],
            want[i]
        );
    }
    // A fault in a hub row, cut into many segments.
    let hub = 50_007usize;
    let mut bad_col = a.col_idx().to_vec();
    bad_col[a.row_range(hub).start + 20_000] = u32::MAX;
    let cpu_err = twin(&bad_col).unwrap_err();
    let mut sink = vec![0f32; n];
    let prepared = prepare(&bad_col, &mut sink);
    let gpu_err = prepared
        .run()
        .and_then(|()| prepared.check_fault())
        .unwrap_err();
    assert_eq!(gpu_err.to_string(), cpu_err.to_string());
}

/// Freed device memory stays in the device's pool for the next
/// allocations; an allocation that does not fit beside what the pool
/// keeps gets it back from the pool, and `release_unused_memory` hands
/// it to the driver.
#[test]
fn freed_memory_is_kept_and_given_back_when_an_allocation_needs_it() {
    let Some(dev) = device() else { return };
    let free = || dev.context().mem_get_info().unwrap().0;
    let d = warpfit_gpu::Device::Cuda(dev.clone());
    let before = free();
    let a = d.alloc::<u8>(before / 10 * 6).unwrap();
    drop(a);
    d.synchronize().unwrap();
    // Kept: the driver does not count it free.
    assert!(free() < before / 10 * 6, "{} of {before} free", free());
    // Larger than the driver's free memory, smaller than it plus the pool's.
    let b = d.alloc::<u8>(before / 10 * 7).unwrap();
    assert_eq!(b.len(), before / 10 * 7);
    drop(b);
    d.release_unused_memory().unwrap();
    assert!(free() > before / 10 * 9, "{} of {before} free", free());
}

#[test]
fn a_kept_level_order_is_taken_only_as_a_permutation() {
    let Some(dev) = device() else { return };
    use warpfit_gpu::__private::level_order_inverse;
    // Permutations of several sizes, one a warp's rows and ones that are
    // not multiples of a block: inverted exactly.
    for n in [1usize, 32, 1000, 70_001] {
        let order: Vec<u32> = (0..n as u64)
            .map(|r| ((r * 7919 + 13) % n as u64) as u32)
            .collect();
        if n > 1 {
            assert_ne!(order[0], 0, "not the identity");
        }
        let position = level_order_inverse(&dev, &order).unwrap();
        for (r, &old) in order.iter().enumerate() {
            assert_eq!(position[old as usize] as usize, r, "n {n}, row {r}");
        }
    }
    // A repeated row (another missing), a row out of range, a single
    // row 0 repeated everywhere: refused.
    let good: Vec<u32> = (0..1000u32).rev().collect();
    let mut repeated = good.clone();
    repeated[500] = repeated[10];
    let mut beyond = good.clone();
    beyond[999] = 1000;
    for (what, order) in [
        ("repeated", repeated),
        ("beyond", beyond),
        ("zeros", vec![0u32; 1000]),
    ] {
        let e = level_order_inverse(&dev, &order).unwrap_err().to_string();
        assert!(e.contains("not a permutation"), "{what}: {e}");
    }
    assert!(level_order_inverse(&dev, &[]).unwrap().is_empty());
}

#[test]
fn device_column_blocks_are_the_hosts_word_for_word() {
    let Some(dev) = device() else { return };
    use warpfit_gpu::__private::column_blocks_both_ways;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = |m: u32| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % u64::from(m.max(1))) as u32
    };
    // Mean rows of about 3, 12 and 40 entries (groups of 8, 16 and 32
    // lanes a task), with empty rows and a few long ones, row counts that
    // are not multiples of a warp's groups, and gathered counts that do
    // not divide into the blocks.
    let mut failures = Vec::new();
    for (mean, n, n_gathered) in [
        (3u32, 1001usize, 777usize),
        (12, 5003, 9000),
        (40, 2999, 4099),
    ] {
        let mut ptr = vec![0u32];
        let mut idx = Vec::new();
        for _ in 0..n {
            let len = match next(50) {
                0 => 300 + next(700),
                1..=5 => 0,
                _ => next(2 * mean + 1),
            };
            for _ in 0..len {
                idx.push(next(n_gathered as u32));
            }
            ptr.push(idx.len() as u32);
        }
        for k in [1usize, 2, 3, 7, 32] {
            let width = n_gathered.div_ceil(k);
            let [host, device] =
                column_blocks_both_ways(&dev, &ptr, &idx, n_gathered, width, k).unwrap();
            if host.0 != device.0 {
                failures.push(format!("mean {mean}, {k} blocks: offsets differ"));
            } else if host.1 != device.1 {
                failures.push(format!("mean {mean}, {k} blocks: permutations differ"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
