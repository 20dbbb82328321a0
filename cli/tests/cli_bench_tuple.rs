//! `warpfit bench tuple` without a GPU: listed in the help, its options
//! checked before any work, and on a machine without a GPU a one-line
//! error as the other GPU benchmarks give (nothing left behind).

mod cli_common;

use cli_common::{assert_one_line_error, stderr, tmp, warpfit};

#[test]
fn bench_help_lists_tuple() {
    let o = warpfit(&["bench", "--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("tuple"), "{help}");
    let o = warpfit(&["--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("(`tuple`)"), "{help}");
}

#[test]
fn bench_tuple_without_a_gpu_says_so_in_one_line() {
    let info = warpfit(&["info"]);
    if !String::from_utf8_lossy(&info.stdout).contains("backend: cpu") {
        eprintln!("skipped: there is a GPU here");
        return;
    }
    let out = tmp("tuple-never.md");
    let _ = std::fs::remove_file(&out);
    for args in [
        vec!["bench", "tuple"],
        vec!["bench", "TUPLE", "--small"],
        vec![
            "bench",
            "tuple",
            "--gen",
            "grid2d:side=8",
            "--variants",
            "thread",
            "--out",
            out.to_str().unwrap(),
        ],
    ] {
        let o = warpfit(&args);
        assert_one_line_error(&o, &args, "needs an NVIDIA GPU");
        assert!(
            stderr(&o).contains("bench tuple"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    // The report file opened before the GPU was looked for is removed again.
    assert!(!out.exists());
}

#[test]
fn bench_tuple_options_are_checked_before_the_gpu() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["bench", "tuple", "--variants", "warp"],
            "unknown decomposition `warp`",
        ),
        (
            &["bench", "tuple", "--svg", "x.svg"],
            "--svg belongs to `warpfit bench throttle`",
        ),
        (
            &["bench", "tuple", "--suite", "large"],
            "--suite large belongs to `warpfit bench throttle`",
        ),
        (
            &["bench", "tuple", "--budgets", "64"],
            "--budgets belongs to `warpfit bench spmv`",
        ),
        (
            &["bench", "tuple", "--out", "/nonexistent/dir/out.md"],
            "--out /nonexistent/dir/out.md",
        ),
        (&["bench", "tuple", "--gen", "nonsense"], "nonsense"),
    ];
    for (args, needle) in cases {
        let o = warpfit(args);
        assert_one_line_error(&o, args, needle);
    }
    let args = ["bench", "tuple", "--runs", "5"];
    assert_one_line_error(&warpfit(&args), &args, "--help");
}
