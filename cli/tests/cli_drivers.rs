//! `warpfit run sssp|bfs|cc --driver …` and `warpfit gen road` end to end.

mod cli_common;

use cli_common::{assert_one_line_error, stderr, tmp, warpfit};

const DRIVERS: [&str; 8] = [
    "topo",
    "topo:rounds",
    "data",
    "data:fifo",
    "hybrid",
    "hybrid:0.3:0.1",
    "auto",
    "data:nearfar:0.5",
];

/// Runs `app` under `driver` and returns the output file and stdout.
fn run(app: &str, input: &[&str], driver: &str, extra: &[&str]) -> (String, String) {
    let out = tmp(&format!("{app}-{}.txt", driver.replace(':', "_")));
    let mut args = vec!["run", app];
    args.extend_from_slice(input);
    args.extend_from_slice(&["--backend", "cpu", "--driver", driver]);
    args.extend_from_slice(&["--output", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let o = warpfit(&args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    (
        std::fs::read_to_string(&out).unwrap(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn every_driver_writes_the_same_answer() {
    // 0 -> 1 -> 2 -> 3 (weights 2, -3, 4), 4 isolated, 5 -> 4.
    let mtx = tmp("path.mtx");
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate real general\n6 6 4\n1 2 2\n2 3 -3\n3 4 4\n6 5 1\n",
    )
    .unwrap();
    let input = ["--matrix", mtx.to_str().unwrap()];
    for driver in DRIVERS {
        let (dist, stdout) = run("sssp", &input, driver, &[]);
        assert_eq!(dist, "0\n2\n5\n9\ninf\ninf\n", "{driver}");
        assert!(stdout.contains("rounds") && stdout.contains("host synchronisations"));
        assert!(stdout.contains("timing: read "), "{stdout}");
        if driver.contains("nearfar") {
            continue;
        }
        let (level, _) = run("bfs", &input, driver, &["--source", "1"]);
        assert_eq!(level, "-1\n0\n1\n2\n-1\n-1\n", "{driver}");
        let (label, stdout) = run("cc", &input, driver, &[]);
        assert_eq!(label, "0\n0\n0\n0\n4\n4\n", "{driver}");
        assert!(
            stdout.contains("2 components, the largest of 4 of 6"),
            "{stdout}"
        );
    }
    // Growth from one item and batched rounds write the same.
    let (dist, stdout) = run(
        "sssp",
        &["--gen", "road:side=20"],
        "data:fifo",
        &["--worklist-capacity", "1", "--rounds-per-sync", "4"],
    );
    assert!(stdout.contains("worklist growth"), "{stdout}");
    assert_eq!(dist, run("sssp", &["--gen", "road:side=20"], "topo", &[]).0);
    // A near-far width below the distances' resolution ends with the same
    // answer (one distance per bucket).
    let tiny = run(
        "sssp",
        &["--gen", "road:side=16"],
        "data:nearfar:1e-16",
        &[],
    )
    .0;
    assert_eq!(tiny, run("sssp", &["--gen", "road:side=16"], "topo", &[]).0);
    // auto says what it chose.
    let (_, stdout) = run("bfs", &["--gen", "road:side=20"], "auto", &[]);
    assert!(stdout.contains("bfs: auto: "), "{stdout}");
}

#[test]
fn driver_options_are_checked() {
    for (args, needle) in [
        (
            vec!["run", "spmv", "--gen", "grid2d:side=3", "--driver", "data"],
            "--driver applies to sssp, bfs and cc only",
        ),
        (
            vec![
                "run",
                "pagerank",
                "--gen",
                "grid2d:side=3",
                "--rounds-per-sync",
                "2",
            ],
            "--rounds-per-sync applies to sssp, bfs and cc only",
        ),
        (
            vec!["run", "sssp", "--gen", "grid2d:side=3", "--driver", "lifo"],
            "unknown driver `lifo`",
        ),
        (
            vec!["run", "cc", "--gen", "grid2d:side=3", "--source", "1"],
            "--source applies to sssp and bfs only",
        ),
        (
            vec!["run", "cc", "--gen", "grid2d:side=3", "--iters", "2"],
            "sssp, bfs and cc run to a fixed point",
        ),
        (
            vec![
                "run",
                "sssp",
                "--gen",
                "grid2d:side=3",
                "--driver",
                "topo",
                "--worklist-capacity",
                "4",
            ],
            "not --driver topo",
        ),
        (
            vec![
                "run",
                "bfs",
                "--gen",
                "grid2d:side=3",
                "--backend",
                "cpu",
                "--driver",
                "data:nearfar",
            ],
            "key",
        ),
        (
            vec![
                "run",
                "sssp",
                "--gen",
                "grid2d:side=3",
                "--worklist-capacity",
                "0",
            ],
            "--worklist-capacity",
        ),
    ] {
        let o = warpfit(&args);
        if needle == "--worklist-capacity" {
            // A clap range error: one line pointing at --help.
            assert_eq!(o.status.code(), Some(2), "{args:?}");
            assert!(stderr(&o).contains(needle), "{}", stderr(&o));
            continue;
        }
        assert_one_line_error(&o, &args, needle);
    }
}

/// A worklist capacity above the vertex count is clamped to it, said
/// once, and costs nothing: 2^32 items on a 256-vertex graph run at once
/// under a 64 MiB limit, with the answer of the default capacity.
#[test]
fn a_worklist_capacity_above_the_vertices_is_clamped_and_said() {
    let input = ["--gen", "grid2d:side=16"];
    let (want, _) = run("sssp", &input, "data", &[]);
    for capacity in ["4294967296", "268435456"] {
        let extra = ["--worklist-capacity", capacity, "--mem-limit", "64MiB"];
        let (got, stdout) = run("sssp", &input, "data", &extra);
        assert_eq!(got, want, "capacity {capacity}");
        let notes: Vec<&str> = stdout
            .lines()
            .filter(|l| l.contains("--worklist-capacity"))
            .collect();
        assert_eq!(notes.len(), 1, "{stdout}");
        assert!(
            notes[0].contains(&format!(
                "--worklist-capacity {capacity} is more than the 256 vertices"
            )),
            "{stdout}"
        );
    }
}

#[test]
fn gen_writes_road_and_symmetrised_rmat() {
    let out = tmp("road.mtx");
    let o = warpfit(&[
        "gen",
        "road",
        "--side",
        "4",
        "--drop",
        "0",
        "--order",
        "natural",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    // 4 × 4 grid, nothing dropped: 24 edges, 48 entries.
    assert!(text.lines().any(|l| l == "16 16 48"), "{text}");
    let o = warpfit(&["gen", "road", "--drop", "2", "-o", out.to_str().unwrap()]);
    assert_one_line_error(&o, &["gen", "road", "--drop", "2"], "must lie in [0, 1]");
    let o = warpfit(&[
        "gen",
        "rmat",
        "--scale",
        "6",
        "--sym",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("sym=true"), "{}", stderr(&o));
}
