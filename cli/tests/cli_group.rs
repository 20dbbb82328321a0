//! `warpfit run spmv|pagerank|cg|bfs --gpus N --backend cpu`: the apps on a
//! CPU group of N parts (the partition and exchange code a GPU group runs),
//! their output against the single-device run's; the option errors.

mod cli_common;

use cli_common::{assert_one_line_error, stderr, tmp, warpfit};

fn values(path: &std::path::Path) -> Vec<f64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// Runs `args` with `--output`, returning the written values and stdout.
fn run(name: &str, args: &[&str]) -> (Vec<f64>, String) {
    let out = tmp(name);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--backend", "cpu", "--output", out.to_str().unwrap()]);
    let o = warpfit(&all);
    assert!(o.status.success(), "{all:?}: {}", stderr(&o));
    (
        values(&out),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn every_group_app_equals_the_single_device_run() {
    let cases: [(&str, &[&str], f64); 4] = [
        ("spmv", &["run", "spmv", "--gen", "rmat:scale=10"], 1e-6),
        (
            "pagerank",
            &["run", "pagerank", "--gen", "rmat:scale=10", "--iters", "5"],
            1e-6,
        ),
        (
            "bfs",
            &["run", "bfs", "--gen", "rmat:scale=10", "--source", "3"],
            0.0,
        ),
        (
            "cg",
            &[
                "run",
                "cg",
                "--gen",
                "poisson3d:side=12,order=random",
                "--tol",
                "1e-10",
            ],
            1e-8,
        ),
    ];
    for (app, args, tol) in cases {
        let (want, _) = run(&format!("{app}-one.txt"), args);
        for (gpus, partition) in [("3", "rows"), ("2", "levels")] {
            let mut a = args.to_vec();
            a.extend(["--gpus", gpus, "--partition", partition]);
            let (got, stdout) = run(&format!("{app}-{gpus}.txt"), &a);
            assert_eq!(got.len(), want.len(), "{app}");
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= tol * w.abs().max(1.0),
                    "{app} {gpus} {partition}: entry {i}: {g} vs {w}"
                );
            }
            assert!(stdout.contains(&format!("{gpus} CPU part(s)")), "{stdout}");
            assert!(stdout.contains("exchange:"), "{stdout}");
        }
    }
    // spmv with each part throttled (`auto`; the CPU runs it unthrottled).
    let args = ["run", "spmv", "--gen", "rmat:scale=10"];
    let (want, _) = run("spmv-throttled-one.txt", &args);
    let mut a = args.to_vec();
    a.extend(["--gpus", "2", "--throttle", "auto"]);
    let (got, stdout) = run("spmv-throttled-2.txt", &a);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-6 * w.abs().max(1.0),
            "entry {i}: {g} vs {w}"
        );
    }
    assert!(stdout.contains("throttle: member 0: "), "{stdout}");
    // spmv and pagerank with the exchange beside the owned block.
    for (app, args) in [
        ("spmv", &["run", "spmv", "--gen", "rmat:scale=10"][..]),
        (
            "pagerank",
            &["run", "pagerank", "--gen", "rmat:scale=10", "--iters", "5"][..],
        ),
    ] {
        let (want, _) = run(&format!("{app}-overlap-one.txt"), args);
        let mut a = args.to_vec();
        a.extend(["--gpus", "3", "--overlap"]);
        let (got, _) = run(&format!("{app}-overlap-3.txt"), &a);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs().max(1e-3),
                "{app} overlapped: entry {i}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn group_options_are_checked() {
    let cases: [(&[&str], &str); 10] = [
        (
            &["run", "spmv", "--gen", "rmat:scale=6", "--overlap"],
            "--overlap applies with --gpus",
        ),
        (
            &[
                "run",
                "cg",
                "--gen",
                "poisson2d:side=8",
                "--gpus",
                "2",
                "--overlap",
            ],
            "--overlap applies to spmv and pagerank",
        ),
        (
            &["run", "sssp", "--gen", "rmat:scale=6", "--gpus", "2"],
            "--gpus applies to spmv, pagerank, cg and bfs",
        ),
        (
            &[
                "run",
                "spmv",
                "--gen",
                "rmat:scale=6",
                "--partition",
                "levels",
            ],
            "--partition applies with --gpus",
        ),
        (
            &["run", "spmv", "--gen", "rmat:scale=6", "--gpus", "0"],
            "not a group size",
        ),
        (
            &[
                "run",
                "spmv",
                "--gen",
                "rmat:scale=6",
                "--gpus",
                "2",
                "--partition",
                "metis",
            ],
            "metis",
        ),
        (
            &[
                "run",
                "pagerank",
                "--gen",
                "rmat:scale=6",
                "--gpus",
                "2",
                "--throttle",
                "cf",
            ],
            "--throttle cf does not combine with --gpus",
        ),
        (
            &[
                "run",
                "pagerank",
                "--gen",
                "rmat:scale=6",
                "--gpus",
                "2",
                "--throttle",
                "auto",
            ],
            "a group throttles spmv's parts",
        ),
        (
            &[
                "run",
                "cg",
                "--gen",
                "rmat:scale=6",
                "--gpus",
                "2",
                "--order",
                "levels",
            ],
            "--order does not combine with --gpus",
        ),
        (
            &[
                "run",
                "spmv",
                "--gen",
                "rmat:scale=6",
                "--backend",
                "cpu",
                "--gpus",
                "all",
            ],
            "`all` counts GPUs",
        ),
    ];
    for (args, needle) in cases {
        assert_one_line_error(&warpfit(args), args, needle);
    }
}
