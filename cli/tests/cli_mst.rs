//! `warpfit run mst` end to end: the forest written, checked against
//! Kruskal's, and the options and inputs it refuses.

mod cli_common;

use cli_common::{assert_one_line_error, stderr, tmp, warpfit};

#[test]
fn mst_writes_kruskals_forest_and_says_so() {
    let out = tmp("forest.txt");
    let o = warpfit(&[
        "run",
        "mst",
        "--gen",
        "road:side=40,order=random",
        "--backend",
        "cpu",
        "--iters",
        "2",
        "--check",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("the same edges"), "{stdout}");
    assert!(stdout.contains("over 2 runs"), "{stdout}");
    let text = std::fs::read_to_string(&out).unwrap();
    let edges: Vec<(u32, u32, f32)> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect();
    // A spanning forest of 1600 vertices: one edge fewer than vertices per
    // tree, every edge once with u < v, in order.
    let summary = stdout.lines().find(|l| l.starts_with("mst:")).unwrap();
    assert!(
        summary.contains(&format!("mst: {} edges", edges.len())),
        "{summary}"
    );
    assert!(edges
        .windows(2)
        .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
    assert!(edges.iter().all(|&(u, v, w)| u < v && v < 1600 && w >= 0.0));
}

#[test]
fn mst_refuses_what_it_cannot_span() {
    // RMAT is directed: the first entry without a mirror is named.
    for (args, needle) in [
        (
            &["run", "mst", "--gen", "rmat:scale=8", "--backend", "cpu"][..],
            "needs a symmetric matrix",
        ),
        (
            &["run", "spmv", "--gen", "grid2d:side=4", "--check"][..],
            "--check applies to mst and nn only",
        ),
        (
            &["run", "mst", "--gen", "grid2d:side=4", "--source", "1"][..],
            "--source applies to sssp and bfs only",
        ),
    ] {
        assert_one_line_error(&warpfit(args), args, needle);
    }
}
