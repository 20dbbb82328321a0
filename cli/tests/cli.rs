//! The `warpfit` binary end to end: outputs, summaries, and one-line errors
//! with exit status 2 on bad input.

mod cli_common;

use cli_common::{assert_one_line_error, stderr, tmp, warpfit};
use std::process::{Command, Output};

#[test]
fn spmv_writes_one_value_per_row() {
    let out = tmp("grid.txt");
    let o = warpfit(&[
        "run",
        "spmv",
        "--gen",
        "grid2d:side=5",
        "--backend",
        "cpu",
        "--iters",
        "2",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("GFLOP/s"));
    // stderr is not a terminal here: no progress bar, nothing at all.
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let y: Vec<f32> = text.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(y.len(), 25);
    // Corner row 0 of the 5-point stencil: 4·x0 − x1 − x5.
    let x = |i: usize| 1.0 + (i % 7) as f32 / 7.0;
    assert!((y[0] - (4.0 * x(0) - x(1) - x(5))).abs() < 1e-5, "{}", y[0]);
}

#[test]
fn throttled_apps_write_what_the_unthrottled_runs_write() {
    // On the CPU backend a throttled run computes what the unthrottled one
    // does, so the output each writes is also checked against plain loops
    // over the matrix the spec generates.
    for (app, gen, iters) in [
        ("spmv", "rmat:scale=9", Some("3")),
        ("pagerank", "rmat:scale=9", Some("5")),
        ("cg", "poisson3d:side=6,order=random", None),
    ] {
        let written = throttled_run_writes_what_the_unthrottled_run_writes(app, gen, iters);
        let values: Vec<f64> = written
            .lines()
            .map(|l| l.parse().unwrap_or_else(|e| panic!("{app}: `{l}`: {e}")))
            .collect();
        let a = gen
            .parse::<warpfit::runtime::gen::GenSpec>()
            .unwrap()
            .generate()
            .unwrap();
        match app {
            "spmv" => assert_near_spmv(&values, &a),
            "pagerank" => assert_near_pagerank(&values, &a, 5),
            _ => assert_solves_for_ones(&values, &a),
        }
    }
}

/// The matrix of a generator spec as rows of `(column, value)` in f64.
fn rows_of(a: &warpfit::runtime::Csr<f32>) -> Vec<Vec<(usize, f64)>> {
    (0..a.nrows())
        .map(|r| {
            let (cols, vals) = a.row(r);
            cols.iter()
                .zip(vals)
                .map(|(&c, &v)| (c as usize, v as f64))
                .collect()
        })
        .collect()
}

/// `run spmv`'s output against `A·x` summed in f64, with the input the CLI
/// documents, `x[i] = 1 + (i mod 7)/7`: each f32 row sum within
/// `len · ε(f32) · Σ|terms|`.
fn assert_near_spmv(y: &[f64], a: &warpfit::runtime::Csr<f32>) {
    assert_eq!(y.len(), a.nrows());
    let x = |i: usize| (1.0 + (i % 7) as f32 / 7.0) as f64;
    for (r, row) in rows_of(a).iter().enumerate() {
        let (sum, size) = row
            .iter()
            .map(|&(c, v)| v * x(c))
            .fold((0.0, 0.0), |(s, t), p| (s + p, t + p.abs()));
        let tol = (row.len() as f64 + 2.0) * f32::EPSILON as f64 * size.max(1e-30);
        assert!(
            (y[r] - sum).abs() <= tol,
            "spmv row {r}: wrote {}, A·x = {sum}",
            y[r]
        );
    }
}

/// `run pagerank`'s output against power iteration in f64 (damping 0.85,
/// from `1/n`, a vertex without out-edges spreading its rank over all),
/// each rank within `2e-6` of the largest.
fn assert_near_pagerank(rank: &[f64], a: &warpfit::runtime::Csr<f32>, iterations: usize) {
    let n = a.nrows();
    assert_eq!(rank.len(), n);
    let rows = rows_of(a);
    let d = 0.85;
    let mut want = vec![1.0 / n as f64; n];
    for _ in 0..iterations {
        let mut pulled = vec![0.0; n];
        let mut dangling = 0.0;
        for (u, row) in rows.iter().enumerate() {
            if row.is_empty() {
                dangling += want[u];
            }
            for &(v, _) in row {
                pulled[v] += want[u] / row.len() as f64;
            }
        }
        let base = (1.0 - d) / n as f64 + d * dangling / n as f64;
        want = pulled.iter().map(|p| base + d * p).collect();
    }
    let tol = 2e-6 * want.iter().fold(0.0f64, |m, &r| m.max(r));
    for (v, (&got, &w)) in rank.iter().zip(&want).enumerate() {
        assert!(
            (got - w).abs() <= tol,
            "pagerank vertex {v}: wrote {got}, power iteration {w}"
        );
    }
}

/// `run cg`'s output without `--rhs` solves `A·x = A·1` to its tolerance
/// (1e-6): every entry near 1 and `‖b − A·x‖ ≤ 1e-5·‖b‖`, in f64.
fn assert_solves_for_ones(x: &[f64], a: &warpfit::runtime::Csr<f32>) {
    assert_eq!(x.len(), a.ncols());
    let rows = rows_of(a);
    let (mut rr, mut bb) = (0.0, 0.0);
    for row in &rows {
        let b: f64 = row.iter().map(|&(_, v)| v).sum();
        let ax: f64 = row.iter().map(|&(c, v)| v * x[c]).sum();
        rr += (b - ax) * (b - ax);
        bb += b * b;
    }
    assert!(
        rr.sqrt() <= 1e-5 * bb.sqrt(),
        "cg: ‖b − A·x‖ = {} against ‖b‖ = {}",
        rr.sqrt(),
        bb.sqrt()
    );
    for (i, &xi) in x.iter().enumerate() {
        assert!((xi - 1.0).abs() <= 1e-4, "cg: x[{i}] = {xi}");
    }
}

/// Runs `app` plainly and under each throttling policy; every run must
/// write the same output, which is returned.
fn throttled_run_writes_what_the_unthrottled_run_writes(
    app: &str,
    gen: &str,
    iters: Option<&str>,
) -> String {
    let run = |name: &str, extra: &[&str]| {
        let out = tmp(&format!("{app}-{name}"));
        let mut args = vec!["run", app, "--gen", gen, "--backend", "cpu"];
        if let Some(iters) = iters {
            args.extend_from_slice(&["--iters", iters]);
        }
        args.push("--output");
        args.push(out.to_str().unwrap());
        args.extend_from_slice(extra);
        let o = warpfit(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        (
            std::fs::read_to_string(&out).unwrap(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let (plain, _) = run("plain.txt", &[]);
    for policy in ["org", "cf", "auto"] {
        let (y, stdout) = run(&format!("throttled-{policy}.txt"), &["--throttle", policy]);
        assert_eq!(y, plain, "{app} --throttle {policy}");
        assert!(stdout.contains("throttle: "), "{stdout}");
    }
    plain
}

#[test]
fn graph_apps_agree_with_known_answers_on_a_path() {
    // 0 -> 1 -> 2 -> 3, weights 2, 3, 4; vertex 4 isolated.
    let mtx = tmp("path.mtx");
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate real general\n5 5 3\n1 2 2\n2 3 -3\n3 4 4\n",
    )
    .unwrap();
    let m = mtx.to_str().unwrap();
    let out = tmp("sssp.txt");
    let o = warpfit(&[
        "run",
        "sssp",
        "--matrix",
        m,
        "--backend",
        "cpu",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "0\n2\n5\n9\ninf\n");
    let o = warpfit(&[
        "run",
        "bfs",
        "--matrix",
        m,
        "--backend",
        "cpu",
        "--source",
        "1",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "-1\n0\n1\n2\n-1\n");
    let o = warpfit(&[
        "run",
        "pagerank",
        "--matrix",
        m,
        "--backend",
        "cpu",
        "--iters",
        "30",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ranks: Vec<f64> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!((ranks.iter().sum::<f64>() - 1.0).abs() < 1e-4);
    assert!(ranks[3] > ranks[2] && ranks[2] > ranks[1] && ranks[1] > ranks[0]);
}

#[test]
fn malformed_input_is_one_line_and_exit_2() {
    let bad = tmp("bad.mtx");
    std::fs::write(
        &bad,
        "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 1 2.0\n",
    )
    .unwrap();
    for args in [
        vec!["run", "spmv", "--matrix", bad.to_str().unwrap()],
        vec!["run", "spmv", "--matrix", "/nonexistent/file.mtx"],
        vec!["run", "spmv", "--gen", "rmat:scale=x"],
        vec!["run", "spmv", "--gen", "torus:side=3"],
        vec!["run", "sssp", "--gen", "grid2d:side=3", "--source", "9"],
        vec![
            "run",
            "spmv",
            "--gen",
            "grid2d:side=3",
            "--decomp",
            "subwarp:3",
        ],
        vec!["run", "spmv", "--gen", "grid2d:side=3", "--backend", "tpu"],
    ] {
        let o = warpfit(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let o = warpfit(&["run", "spmv", "--matrix", bad.to_str().unwrap()]);
    assert!(
        stderr(&o).contains("bad.mtx:4"),
        "names the line: {}",
        stderr(&o)
    );
}

#[test]
fn gen_writes_a_readable_matrix_and_info_runs() {
    let out = tmp("rmat.mtx");
    let o = warpfit(&[
        "gen",
        "rmat",
        "--scale",
        "8",
        "--edge-factor",
        "4",
        "--seed",
        "2",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = warpfit::runtime::sparse::mm::read_csr::<f32>(&out).unwrap();
    assert_eq!(a.nrows(), 256);
    let o = warpfit(&["info"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("cpu"));
}

#[test]
fn bench_rejects_a_zero_segment_length_before_touching_the_gpu() {
    let o = warpfit(&["bench", "spmv", "--segment-lens", "8,0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--segment-lens"), "{}", stderr(&o));
}

/// Runs the binary under `ulimit -v` (address space, in KiB) so that an
/// allocation the checks missed would abort (exit 134) instead of passing.
fn warpfit_limited(kib: u64, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_warpfit"))
        .args(args)
        .env_remove("WARPFIT_MEM_LIMIT")
        .output()
        .expect("sh runs")
}

#[test]
fn oversized_inputs_exit_2_under_a_memory_limit() {
    let huge = tmp("huge.mtx");
    std::fs::write(
        &huge,
        "%%MatrixMarket matrix coordinate real general\n3000000000 3000000000 2\n1 1 1\n3000000000 2 2\n",
    )
    .unwrap();
    let big = tmp("big.mtx");
    std::fs::write(
        &big,
        "%%MatrixMarket matrix coordinate real general\n100000000 100000000 2\n1 1 1\n100000000 2 2\n",
    )
    .unwrap();
    let nonl = tmp("no-newline.mtx");
    std::fs::write(&nonl, vec![b'%'; 3 << 20]).unwrap();
    let (huge, big, nonl) = (
        huge.to_str().unwrap(),
        big.to_str().unwrap(),
        nonl.to_str().unwrap(),
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "spmv", "--matrix", huge], "out of memory"),
        (vec!["run", "spmv", "--matrix", big], "out of memory"),
        (vec!["run", "pagerank", "--matrix", big], "out of memory"),
        (
            vec!["run", "spmv", "--gen", "rmat:scale=27"],
            "out of memory",
        ),
        (
            vec!["run", "spmv", "--gen", "uniform:n=4000000000,per_row=1"],
            "out of memory",
        ),
        (
            vec!["run", "spmv", "--gen", "grid2d:side=29000"],
            "out of memory",
        ),
        (
            vec!["run", "spmv", "--gen", "rgg:n=4000000000"],
            "out of memory",
        ),
        (
            vec!["gen", "rmat", "--scale", "27", "-o", "/dev/null"],
            "out of memory",
        ),
        (
            vec!["partition", "--matrix", huge, "--cache", "1MB"],
            "out of memory",
        ),
        (
            vec![
                "run",
                "spmv",
                "--gen",
                "grid2d:side=4",
                "--iters",
                "18446744073709551615",
            ],
            "out of memory",
        ),
        (
            vec![
                "run",
                "spmv",
                "--gen",
                "grid2d:side=4",
                "--iters",
                "4000000000",
            ],
            "out of memory",
        ),
        (
            vec!["run", "spmv", "--matrix", "/dev/zero"],
            "/dev/zero:1: line longer than",
        ),
        (
            vec!["run", "spmv", "--matrix", nonl],
            ":1: line longer than",
        ),
    ];
    for (args, needle) in &cases {
        let o = warpfit_limited(1 << 20, args);
        assert_one_line_error(&o, args, needle);
    }
    // The error names the bytes needed and the limit: the whole run's,
    // from the header line, before any entry is read (the 12 GB of row
    // pointers alone would fit a larger limit, and were once made first).
    let o = warpfit_limited(1 << 20, &["run", "spmv", "--matrix", huge]);
    let err = stderr(&o);
    assert!(
        err.contains("the spmv matrix and its vectors x and y needs 36000000020 bytes"),
        "{err}"
    );
    assert!(err.contains("RLIMIT_AS"), "{err}");
    // A limit the row pointers fit but the run does not: refused at the
    // header too.
    let o = warpfit(&["run", "spmv", "--matrix", huge, "--mem-limit", "20GB"]);
    assert_one_line_error(
        &o,
        &[],
        "the spmv matrix and its vectors x and y needs 36000000020 bytes",
    );
    let o = warpfit(&["run", "cg", "--matrix", huge, "--mem-limit", "20GB"]);
    assert_one_line_error(&o, &[], "the cg matrix, its copy and its vectors");
    // --mem-limit takes precedence and is named.
    let o = warpfit(&[
        "run",
        "spmv",
        "--gen",
        "grid2d:side=300",
        "--mem-limit",
        "100KB",
    ]);
    assert_one_line_error(&o, &[], "the --mem-limit option");
    let o = warpfit(&[
        "run",
        "spmv",
        "--gen",
        "grid2d:side=3",
        "--mem-limit",
        "lots",
    ]);
    assert_one_line_error(&o, &[], "--mem-limit");
}

#[test]
fn output_paths_are_checked_before_the_work() {
    let missing = "/nonexistent-dir/out.txt";
    let dir = std::env::temp_dir();
    let dir = dir.to_str().unwrap();
    for (args, option) in [
        (
            vec!["run", "spmv", "--gen", "grid2d:side=3", "--output", missing],
            "--output",
        ),
        (
            vec!["run", "bfs", "--gen", "grid2d:side=3", "--output", dir],
            "--output",
        ),
        (vec!["gen", "grid2d", "--side", "3", "-o", missing], "-o"),
        (
            vec![
                "partition",
                "--gen",
                "grid2d:side=3",
                "--cache",
                "1KB",
                "--assignments",
                missing,
            ],
            "--assignments",
        ),
    ] {
        let o = warpfit(&args);
        assert_one_line_error(&o, &args, &format!("{option} "));
        // Nothing was computed: no summary on stdout.
        assert!(
            o.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
    // A run that fails after the check leaves no new file behind.
    let out = tmp("never-written.txt");
    let _ = std::fs::remove_file(&out);
    let o = warpfit(&[
        "run",
        "sssp",
        "--gen",
        "grid2d:side=3",
        "--source",
        "99",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!out.exists());
}

#[test]
fn options_an_app_does_not_use_are_rejected() {
    for (args, needle) in [
        (
            vec!["run", "bfs", "--gen", "grid2d:side=3", "--iters", "3"],
            "--iters applies to spmv, pagerank, mst, cfd and nn",
        ),
        (
            vec!["run", "sssp", "--gen", "grid2d:side=3", "--iters", "3"],
            "--iters applies",
        ),
        (
            vec!["run", "spmv", "--gen", "grid2d:side=3", "--source", "1"],
            "--source applies to sssp and bfs",
        ),
        (
            vec!["run", "pagerank", "--gen", "grid2d:side=3", "--iters", "0"],
            "--iters",
        ),
        (
            vec!["run", "sssp", "--gen", "grid2d:side=3", "--throttle", "cf"],
            "--throttle applies to spmv, pagerank, cg and cfd",
        ),
        (
            vec![
                "run",
                "spmv",
                "--gen",
                "grid2d:side=3",
                "--throttle",
                "fast",
            ],
            "unknown throttling policy `fast`",
        ),
        (
            vec![
                "run",
                "spmv",
                "--gen",
                "grid2d:side=3",
                "--throttle",
                "cf",
                "--decomp",
                "thread",
            ],
            "--decomp does not apply with --throttle",
        ),
        (
            vec!["run", "spmv", "--gen", "grid2d:side=3", "--order", "levels"],
            "--order applies to cg only",
        ),
        (
            vec![
                "run",
                "spmv",
                "--gen",
                "grid2d:side=3",
                "--remap-order",
                "levels",
            ],
            "--remap-order applies with --throttle",
        ),
        (
            vec![
                "run",
                "spmv",
                "--gen",
                "grid2d:side=3",
                "--throttle",
                "org_r",
                "--remap-order",
                "bfs",
            ],
            "unknown remapping order `bfs`",
        ),
        (
            vec!["run", "cg", "--gen", "poisson2d:side=3", "--order", "bfs"],
            "unknown order `bfs`",
        ),
        (
            vec![
                "run",
                "cg",
                "--gen",
                "poisson2d:side=3",
                "--order",
                "levels",
                "--throttle",
                "cf",
            ],
            "--order levels and --throttle do not combine",
        ),
        (
            vec![
                "partition",
                "--gen",
                "grid2d:side=3",
                "--cache",
                "1MB",
                "--safety",
                "0",
            ],
            "--safety",
        ),
    ] {
        let o = warpfit(&args);
        assert_one_line_error(&o, &args, needle);
    }
    // --decomp on the CPU: the summary says it has no effect.
    let o = warpfit(&[
        "run",
        "spmv",
        "--gen",
        "grid2d:side=3",
        "--backend",
        "cpu",
        "--decomp",
        "thread",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("--decomp thread has no effect on the CPU"));
}

#[test]
fn figures_are_not_misleading() {
    // An empty graph: no per-iteration time, no `-0.000000`.
    let o = warpfit(&[
        "run",
        "pagerank",
        "--gen",
        "grid2d:side=0",
        "--backend",
        "cpu",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("empty graph") && !out.contains("-0.0") && !out.contains("ms/iter"),
        "{out}"
    );
    for (args, needle, absent) in [
        (
            vec!["run", "spmv", "--gen", "rmat:scale=99"],
            "max 31",
            "18446744073709551615",
        ),
        (
            vec![
                "partition",
                "--gen",
                "grid2d:side=3",
                "--cache",
                "18446744073709551616",
            ],
            "too large",
            "not a number",
        ),
        (
            vec![
                "partition",
                "--gen",
                "grid2d:side=3",
                "--cache",
                "1MB",
                "--safety",
                "1e-300",
            ],
            "safety 1e-300",
            "0000000000",
        ),
    ] {
        let o = warpfit(&args);
        assert_one_line_error(&o, &args, needle);
        assert!(!stderr(&o).contains(absent), "{args:?}: {}", stderr(&o));
    }
    // NaN and out-of-range weights are refused, not read as `inf`/no edge.
    for value in ["nan", "1e999", "inf"] {
        let m = tmp(&format!("weight-{value}.mtx"));
        std::fs::write(
            &m,
            format!("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 {value}\n"),
        )
        .unwrap();
        let args = ["run", "sssp", "--matrix", m.to_str().unwrap()];
        let o = warpfit(&args);
        assert_one_line_error(&o, &args, ":3: real value");
    }
}

#[test]
fn usage_errors_are_one_line() {
    for args in [
        vec!["run"],
        vec!["run", "spmv"],
        vec!["run", "spmv", "--gen", "rmat", "--matrix", "x.mtx"],
        vec!["run", "spmv", "--gne", "rmat"],
        vec!["frobnicate"],
        vec!["run", "spmv", "--gen", "rmat", "--iters", "-3"],
        vec!["gen", "rmat", "--scale", "x", "-o", "/dev/null"],
    ] {
        let o = warpfit(&args);
        assert_one_line_error(&o, &args, "--help");
    }
    // Help and version still print normally.
    assert!(warpfit(&["--help"]).status.success());
    assert!(warpfit(&["--version"]).status.success());
}

#[test]
fn commands_that_need_a_gpu_say_so_in_one_line() {
    let info = warpfit(&["info"]);
    if !String::from_utf8_lossy(&info.stdout).contains("backend: cpu") {
        eprintln!("skipped: there is a GPU here");
        return;
    }
    let o = warpfit(&["bench", "spmv", "--suite", "small"]);
    assert_one_line_error(&o, &["bench"], "needs an NVIDIA GPU");
    let o = warpfit(&["bench", "apps", "--small"]);
    assert_one_line_error(&o, &["bench apps"], "needs an NVIDIA GPU");
    let o = warpfit(&["bench", "throttle", "--gen", "grid2d:side=8"]);
    assert_one_line_error(&o, &["bench throttle"], "needs an NVIDIA GPU");
    let o = warpfit(&["partition", "--gen", "grid2d:side=3"]);
    assert_one_line_error(&o, &["partition"], "give --cache BYTES");
}

#[test]
fn cg_solves_for_the_ones_vector_and_prints_its_timing() {
    for precision in ["f32", "f64"] {
        for precond in ["none", "jacobi"] {
            let out = tmp(&format!("cg-{precision}-{precond}.txt"));
            let o = warpfit(&[
                "run",
                "cg",
                "--gen",
                "poisson3d:side=6,order=random,seed=2",
                "--backend",
                "cpu",
                "--precision",
                precision,
                "--precond",
                precond,
                "--tol",
                "1e-6",
                "--output",
                out.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", stderr(&o));
            let stdout = String::from_utf8_lossy(&o.stdout);
            assert!(stdout.contains("cg: converged after"), "{stdout}");
            assert!(stdout.contains(precision), "{stdout}");
            assert!(stdout.contains("timing: read"), "{stdout}");
            assert!(stdout.contains("iterations: median"), "{stdout}");
            let x: Vec<f64> = std::fs::read_to_string(&out)
                .unwrap()
                .lines()
                .map(|l| l.parse().unwrap())
                .collect();
            assert_eq!(x.len(), 216);
            assert!(x.iter().all(|v| (v - 1.0).abs() < 1e-4), "{x:?}");
        }
    }
    // Renumbered by levels: the same solution, in the matrix's own order,
    // and a summary of the switch.
    let out = tmp("cg-levels.txt");
    let o = warpfit(&[
        "run",
        "cg",
        "--gen",
        "poisson3d:side=6,order=random,seed=2",
        "--backend",
        "cpu",
        "--tol",
        "1e-8",
        "--order",
        "levels",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("cg: converged after"), "{stdout}");
    assert!(
        stdout.contains("order: levels made in")
            || stdout.contains("order: the level order was not ready"),
        "{stdout}"
    );
    let x: Vec<f64> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(x.len(), 216);
    assert!(x.iter().all(|v| (v - 1.0).abs() < 1e-6), "{x:?}");
}

#[test]
fn cg_reads_a_right_hand_side_and_reports_bad_input_in_one_line() {
    // A = the 5-point Laplacian on 2 × 2 points; b = A·(1, 2, 3, 4).
    let rhs = tmp("rhs.txt");
    std::fs::write(&rhs, "-1\n3\n# a comment\n7\n11\n").unwrap();
    let out = tmp("cg-rhs-x.txt");
    let o = warpfit(&[
        "run",
        "cg",
        "--gen",
        "poisson2d:side=2",
        "--backend",
        "cpu",
        "--rhs",
        rhs.to_str().unwrap(),
        "--tol",
        "1e-12",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let x: Vec<f64> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    for (got, want) in x.iter().zip([1.0, 2.0, 3.0, 4.0]) {
        assert!((got - want).abs() < 1e-9, "{x:?}");
    }
    let short = tmp("rhs-short.txt");
    std::fs::write(&short, "1\n2\n").unwrap();
    let bad = tmp("rhs-bad.txt");
    std::fs::write(&bad, "1\n2\nnan\n4\n").unwrap();
    // Symmetric, indefinite: CG breaks down.
    let indefinite = tmp("indefinite.mtx");
    std::fs::write(
        &indefinite,
        "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 1\n2 2 -1\n",
    )
    .unwrap();
    let rect = tmp("rect.mtx");
    std::fs::write(
        &rect,
        "%%MatrixMarket matrix coordinate real general\n2 3 1\n1 1 1\n",
    )
    .unwrap();
    // Not symmetric: a(1, 2) = 2 has no mirror.
    let lopsided = tmp("lopsided.mtx");
    std::fs::write(
        &lopsided,
        "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 4\n1 2 2\n2 2 4\n",
    )
    .unwrap();
    let (short, bad, indefinite, rect, lopsided) = (
        short.to_str().unwrap(),
        bad.to_str().unwrap(),
        indefinite.to_str().unwrap(),
        rect.to_str().unwrap(),
        lopsided.to_str().unwrap(),
    );
    for (args, needle) in [
        (
            vec!["run", "cg", "--gen", "poisson2d:side=2", "--rhs", short],
            "2 values, but the matrix has 4 rows",
        ),
        (
            vec!["run", "cg", "--gen", "poisson2d:side=2", "--rhs", bad],
            "rhs-bad.txt:3: value `nan` is not finite",
        ),
        (
            vec!["run", "cg", "--matrix", indefinite, "--backend", "cpu"],
            "not symmetric positive definite",
        ),
        (
            vec!["run", "cg", "--matrix", rect, "--backend", "cpu"],
            "square matrix, got 2 x 3",
        ),
        (
            vec![
                "run",
                "cg",
                "--matrix",
                indefinite,
                "--precond",
                "jacobi",
                "--backend",
                "cpu",
            ],
            "positive diagonal",
        ),
        (
            vec!["run", "cg", "--gen", "poisson2d:side=2", "--iters", "3"],
            "cg stops at --tol or --max-iters",
        ),
        (
            vec!["run", "cg", "--gen", "poisson2d:side=2", "--source", "1"],
            "--source applies to sssp and bfs",
        ),
        (
            vec!["run", "cg", "--gen", "poisson2d:side=2", "--tol", "-1"],
            "--tol must be",
        ),
        (
            vec!["run", "cg", "--matrix", lopsided, "--backend", "cpu"],
            "cg needs a symmetric matrix: a(1, 2) = 2 but a(2, 1) not stored",
        ),
        (
            vec![
                "run",
                "cg",
                "--gen",
                "poisson2d:side=32",
                "--precision",
                "f32",
                "--tol",
                "1e-12",
            ],
            "--tol 1e-12 is below the smallest relative residual f32 can reach, 9.5e-7",
        ),
        (
            vec![
                "run",
                "bfs",
                "--gen",
                "poisson2d:side=2",
                "--precond",
                "jacobi",
            ],
            "--precond applies to cg only",
        ),
        (
            vec!["run", "spmv", "--gen", "poisson2d:side=2", "--tol", "1e-3"],
            "--tol applies to cg only",
        ),
    ] {
        let o = warpfit(&args);
        assert_one_line_error(&o, &args, needle);
    }
}

/// A cg run that does not converge writes `x`, says why on stderr and
/// exits with status 1; tolerance 0 runs exactly --max-iters iterations.
#[test]
fn cg_that_does_not_converge_exits_1_and_still_writes_x() {
    let out = tmp("cg-unconverged.txt");
    let args = [
        "run",
        "cg",
        "--gen",
        "poisson2d:side=16",
        "--backend",
        "cpu",
        "--max-iters",
        "3",
        "--output",
        out.to_str().unwrap(),
    ];
    let o = warpfit(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("warning: cg did not converge: --max-iters 3 ran out"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("NOT converged after 3 iterations"),
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 256);
    let mut fixed = args.to_vec();
    fixed.extend(["--tol", "0"]);
    let o = warpfit(&fixed);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn every_app_prints_set_up_apart_from_iterations() {
    for app in ["spmv", "pagerank", "sssp", "bfs", "cg"] {
        let o = warpfit(&["run", app, "--gen", "poisson2d:side=6", "--backend", "cpu"]);
        assert!(o.status.success(), "{app}: {}", stderr(&o));
        let stdout = String::from_utf8_lossy(&o.stdout);
        let timing = stdout
            .lines()
            .find(|l| l.starts_with("timing: read "))
            .unwrap_or_else(|| panic!("{app}: no timing line in {stdout}"));
        assert!(
            timing.contains("set-up") && timing.contains(": median") && timing.contains("total"),
            "{app}: {timing}"
        );
    }
}

#[test]
fn gen_writes_the_poisson_matrices() {
    for (kind, args, header) in [
        ("poisson2d", vec!["--side", "4"], "16 16 64"),
        (
            "poisson3d",
            vec!["--side", "3", "--order", "random", "--seed", "5"],
            "27 27 135",
        ),
    ] {
        let out = tmp(&format!("{kind}.mtx"));
        let mut cmd = vec!["gen", kind];
        cmd.extend(&args);
        cmd.extend(["-o", out.to_str().unwrap()]);
        let o = warpfit(&cmd);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        assert_eq!(text.lines().nth(1), Some(header), "{kind}");
    }
    let o = warpfit(&["gen", "poisson3d", "--order", "spatial", "-o", "x.mtx"]);
    assert_one_line_error(&o, &["gen", "poisson3d"], "expects natural or random");
}

/// `--remap-order levels`: the remapped baseline and `org_r` run in the
/// level order, checked against the reference like every variant, and the
/// report says which renumbering it used.
#[test]
fn bench_throttle_remaps_by_levels_on_request() {
    let o = warpfit(&[
        "bench",
        "throttle",
        "--backend",
        "cpu",
        "--gen",
        "rgg:n=4096,seed=3,order=random",
        "--variants",
        "remapped,org_r",
        "--cache",
        "1KiB",
        "--remap-order",
        "levels",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.contains("by breadth-first levels from row 0"), "{md}");
    assert!(md.contains("| CPU twin remapped |"), "{md}");
    assert!(md.contains("| org_r |"), "{md}");
    assert!(!md.contains("Failures"), "{md}");
}

#[test]
fn bench_throttle_on_the_cpu_writes_a_table_and_a_chart() {
    let (md, svg) = (tmp("throttle.md"), tmp("throttle.svg"));
    let args = [
        "bench",
        "throttle",
        "--backend",
        "cpu",
        "--gen",
        "rmat:scale=9,edge_factor=8,seed=2",
        "--gen",
        "uniform:n=3000,per_row=6,seed=1",
        "--cache",
        "1KiB",
        "--out",
        md.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ];
    let o = warpfit(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(std::fs::read_to_string(&md).unwrap().trim(), stdout.trim());
    // Progress on stderr, one line per step (stderr is not a terminal).
    assert!(stderr(&o).contains("(1/24) rmat:scale=9"), "{}", stderr(&o));
    // Per matrix, a row for every policy: timed, or not launched.
    for matrix in [
        "rmat:scale=9,edge_factor=8,seed=2",
        "uniform:n=3000,per_row=6,seed=1",
    ] {
        let table = stdout
            .split(&format!("### {matrix}\n"))
            .nth(1)
            .and_then(|t| t.trim_start().split("\n\n").next())
            .unwrap_or_else(|| panic!("no table for {matrix}: {stdout}"));
        let names: Vec<&str> = table
            .lines()
            .skip(2)
            .map(|l| l.split('|').nth(1).unwrap_or("").trim())
            .collect();
        assert_eq!(
            names,
            [
                "CPU twin",
                "CPU twin remapped",
                "org",
                "org_r",
                "cf",
                "cfq",
                "sj",
                "sjq",
                "auto",
                "carried columns",
                "carried kd"
            ],
            "{table}"
        );
        for line in table.lines().skip(2) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let timed = cells[4].parse::<f64>().is_ok_and(|ms| ms > 0.0);
            assert!(timed || cells[4] == "not launched", "{line}");
        }
        // The executors over 1 KiB plans: several partitions.
        let carried = table
            .lines()
            .find(|l| l.contains("carried columns"))
            .unwrap();
        let parts: usize = carried.split('|').nth(3).unwrap().trim().parse().unwrap();
        assert!(parts > 1, "{carried}");
    }
    assert!(stdout.contains("### Summary"), "{stdout}");
    // The chart: well-formed SVG with a bar per timed variant and the
    // matrices' labels.
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the chart is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let texts: Vec<String> = root
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect();
    for label in [
        "rmat 9",
        "uniform 3000",
        "× not launched",
        "carried kd",
        "org_r",
        "1.00×",
    ] {
        assert!(texts.iter().any(|t| t == label), "{label} not in {texts:?}");
    }
    let rects = root
        .descendants()
        .filter(|n| n.has_tag_name("rect"))
        .count();
    assert!(rects > 2 * 8, "{rects} rectangles");
}

#[test]
fn bench_options_of_another_kind_are_one_line_errors() {
    let svg = tmp("never.svg");
    let cases: [(&[&str], &str); 7] = [
        (
            &["bench", "spmv", "--svg", "x.svg"],
            "--svg belongs to `warpfit bench throttle`",
        ),
        (
            &["bench", "apps", "--remap-order", "levels"],
            "--remap-order belongs to `warpfit bench throttle`",
        ),
        (
            &["bench", "apps", "--backend", "cpu"],
            "--backend belongs to `warpfit bench throttle`",
        ),
        (
            &["bench", "apps", "--suite", "large"],
            "--suite large belongs to `warpfit bench throttle`",
        ),
        (
            &["bench", "throttle", "--backend", "cpu", "--variants", "cte"],
            "unknown variant `cte`",
        ),
        (
            &["bench", "throttle", "--cg-tol", "1e-3"],
            "--cg-tol belongs to `warpfit bench apps`",
        ),
        (
            &["bench", "throttle", "--backend", "cpu", "--cache", "lots"],
            "cache size",
        ),
    ];
    for (args, needle) in cases {
        let o = warpfit(args);
        assert_one_line_error(&o, args, needle);
    }
    // Bad paths fail before any work, and leave nothing behind.
    let args = [
        "bench",
        "throttle",
        "--backend",
        "cpu",
        "--svg",
        svg.to_str().unwrap(),
        "--out",
        "/nonexistent/dir/out.md",
    ];
    let o = warpfit(&args);
    assert_one_line_error(&o, &args, "--out /nonexistent/dir/out.md");
    assert!(!svg.exists());
    for args in [
        vec!["bench", "throttle", "--rounds", "0"],
        vec!["bench", "throttle", "--backend", "tpu"],
    ] {
        let o = warpfit(&args);
        assert_one_line_error(&o, &args, "--help");
    }
}

/// An output naming an input file — the same path, a symlink to it or a hard
/// link of it — is refused before any work, and the input is left as it was.
#[test]
fn an_output_that_names_an_input_is_refused_and_the_input_kept() {
    let mtx = tmp("own-input.mtx");
    let matrix = "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 2\n3 3 3\n";
    std::fs::write(&mtx, matrix).unwrap();
    let rhs = tmp("own-rhs.txt");
    let b = "-1\n3\n7\n11\n";
    std::fs::write(&rhs, b).unwrap();
    // The three ways to name each input again.
    let names = |path: &std::path::Path, stem: &str| {
        let sym = tmp(&format!("{stem}-symlink"));
        let hard = tmp(&format!("{stem}-hardlink"));
        let _ = std::fs::remove_file(&sym);
        let _ = std::fs::remove_file(&hard);
        std::os::unix::fs::symlink(path, &sym).unwrap();
        std::fs::hard_link(path, &hard).unwrap();
        [path.to_path_buf(), sym, hard]
    };
    let (m, r) = (mtx.to_str().unwrap(), rhs.to_str().unwrap());
    for out in names(&mtx, "own-input") {
        let out = out.to_str().unwrap();
        for (args, needle) in [
            (
                vec![
                    "run",
                    "spmv",
                    "--matrix",
                    m,
                    "--backend",
                    "cpu",
                    "--output",
                    out,
                ],
                format!("--output names the same file as --matrix ({m})"),
            ),
            (
                vec![
                    "partition",
                    "--matrix",
                    m,
                    "--cache",
                    "1KB",
                    "--assignments",
                    out,
                ],
                format!("--assignments names the same file as --matrix ({m})"),
            ),
        ] {
            let o = warpfit(&args);
            assert_one_line_error(&o, &args, &needle);
            assert!(o.stdout.is_empty(), "{args:?}: no work before the refusal");
            assert_eq!(std::fs::read_to_string(&mtx).unwrap(), matrix, "{args:?}");
        }
    }
    // bench's reports against its --mtx inputs, refused before it looks for
    // a GPU.
    let sym = tmp("own-input-symlink");
    let sym = sym.to_str().unwrap();
    for (kind, option) in [
        ("apps", "--out"),
        ("throttle", "--svg"),
        ("spmv", "--write"),
    ] {
        let args = ["bench", kind, "--mtx", m, option, sym];
        let o = warpfit(&args);
        assert_one_line_error(
            &o,
            &args,
            &format!("{option} names the same file as --mtx ({m})"),
        );
        assert_eq!(std::fs::read_to_string(&mtx).unwrap(), matrix, "{args:?}");
    }
    for out in names(&rhs, "own-rhs") {
        let out = out.to_str().unwrap();
        let args = [
            "run",
            "cg",
            "--gen",
            "poisson2d:side=2",
            "--backend",
            "cpu",
            "--rhs",
            r,
            "--output",
            out,
        ];
        let o = warpfit(&args);
        assert_one_line_error(
            &o,
            &args,
            &format!("--output names the same file as --rhs ({r})"),
        );
        assert!(o.stdout.is_empty(), "{args:?}: no work before the refusal");
        assert_eq!(std::fs::read_to_string(&rhs).unwrap(), b, "{args:?}");
    }
}

/// Outputs that are not regular files are written directly: a device
/// refuses the truncation a regular file gets (`Invalid argument`).
#[test]
fn special_files_take_the_output() {
    for args in [
        vec![
            "run",
            "spmv",
            "--gen",
            "grid2d:side=5",
            "--backend",
            "cpu",
            "--iters",
            "1",
            "--output",
            "/dev/null",
        ],
        vec!["gen", "grid2d", "--side", "5", "-o", "/dev/null"],
        vec![
            "partition",
            "--gen",
            "grid2d:side=5",
            "--cache",
            "1KB",
            "--assignments",
            "/dev/null",
        ],
    ] {
        let o = warpfit(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
}

/// A device both read and written is no input to protect: the rule is
/// about regular files, whose contents the result would replace.
#[test]
fn a_device_may_be_both_input_and_output() {
    let args = [
        "run",
        "cg",
        "--gen",
        "poisson2d:side=2",
        "--backend",
        "cpu",
        "--rhs",
        "/dev/null",
        "--output",
        "/dev/null",
    ];
    let o = warpfit(&args);
    // Refused for what /dev/null holds (no values), not as an overwrite.
    assert_one_line_error(&o, &args, "--rhs /dev/null: 0 values");
}

/// A write that fails names the path and the cause, in one line.
#[test]
fn a_failed_write_names_the_path() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full here");
        return;
    }
    for args in [
        vec!["gen", "grid2d", "--side", "5", "-o", "/dev/full"],
        vec![
            "run",
            "spmv",
            "--gen",
            "grid2d:side=5",
            "--backend",
            "cpu",
            "--iters",
            "1",
            "--output",
            "/dev/full",
        ],
    ] {
        let o = warpfit(&args);
        assert_one_line_error(&o, &args, "/dev/full: No space left on device");
    }
    // Standard output itself on a full device: one error line, no panic.
    let args = [
        "run",
        "spmv",
        "--gen",
        "grid2d:side=3",
        "--backend",
        "cpu",
        "--iters",
        "1",
    ];
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_warpfit"))
        .args(args)
        .stdout(full)
        .output()
        .unwrap();
    assert_one_line_error(&o, &args, "standard output: No space left on device");
}

/// A reader that stops early (`| head`) ends the writing quietly, with
/// success: the output written to standard output, and the summary lines
/// printed after it.
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::io::Read;
    // Each writes far more than a pipe holds (90 000 rows, 448 800 entries).
    for args in [
        vec!["gen", "grid2d", "--side", "300", "-o", "/dev/stdout"],
        vec![
            "run",
            "spmv",
            "--gen",
            "grid2d:side=300",
            "--backend",
            "cpu",
            "--iters",
            "1",
            "--output",
            "/dev/stdout",
        ],
        vec![
            "partition",
            "--gen",
            "grid2d:side=300",
            "--cache",
            "64KB",
            "--assignments",
            "/dev/stdout",
        ],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_warpfit"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut head = [0u8; 1];
        stdout.read_exact(&mut head).unwrap();
        drop(stdout);
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("error"), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
    }
}
