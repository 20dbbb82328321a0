//! The `warpfit` binary end to end: outputs, summaries, and one-line errors
//! with exit status 2 on bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

fn warpfit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warpfit"))
        .args(args)
        .output()
        .expect("the warpfit binary runs")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("warpfit-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

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
    let text = std::fs::read_to_string(&out).unwrap();
    let y: Vec<f32> = text.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(y.len(), 25);
    // Corner row 0 of the 5-point stencil: 4·x0 − x1 − x5.
    let x = |i: usize| 1.0 + (i % 7) as f32 / 7.0;
    assert!((y[0] - (4.0 * x(0) - x(1) - x(5))).abs() < 1e-5, "{}", y[0]);
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
