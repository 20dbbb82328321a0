//! `warpfit gen pruned` end to end: one pruned layer, AlexNet's fully
//! connected layers, and the option errors.

mod cli_common;

use cli_common::{assert_one_line_error, stderr, tmp, warpfit};

/// Runs `gen pruned` with `args` and `-o FILE`; returns the file's text.
fn gen_pruned(name: &str, args: &[&str]) -> String {
    let out = tmp(name);
    let mut cmd = vec!["gen", "pruned"];
    cmd.extend_from_slice(args);
    cmd.extend(["-o", out.to_str().unwrap()]);
    let o = warpfit(&cmd);
    assert!(o.status.success(), "{cmd:?}: {}", stderr(&o));
    std::fs::read_to_string(&out).unwrap()
}

/// The `(row, col)` of every entry of a Matrix Market text, 1-based.
fn entries(text: &str) -> Vec<(usize, usize)> {
    text.lines()
        .skip(2)
        .map(|l| {
            let mut f = l.split_whitespace().map(|x| x.parse::<usize>().unwrap());
            (f.next().unwrap(), f.next().unwrap())
        })
        .collect()
}

#[test]
fn gen_pruned_writes_one_layer() {
    let args = ["--rows", "30", "--cols", "40", "--density", "0.1"];
    let a = gen_pruned("pruned-a.mtx", &[&args[..], &["--seed", "2"]].concat());
    let mut lines = a.lines();
    assert_eq!(
        lines.next(),
        Some("%%MatrixMarket matrix coordinate real general")
    );
    // Exactly round(0.1 · 30 · 40) entries.
    assert_eq!(lines.next(), Some("30 40 120"));
    let e = entries(&a);
    assert_eq!(e.len(), 120);
    // Row-major, columns sorted within rows, in range.
    assert!(e.windows(2).all(|w| w[0] < w[1]), "{e:?}");
    assert!(e
        .iter()
        .all(|&(r, c)| (1..=30).contains(&r) && (1..=40).contains(&c)));
    // Deterministic per seed; another seed differs.
    let again = gen_pruned("pruned-b.mtx", &[&args[..], &["--seed", "2"]].concat());
    assert_eq!(a, again);
    let other = gen_pruned("pruned-c.mtx", &[&args[..], &["--seed", "3"]].concat());
    assert_ne!(a, other);
    assert_eq!(other.lines().nth(1), Some("30 40 120"));
}

#[test]
fn gen_pruned_option_errors() {
    let out = tmp("bad.mtx");
    let out = out.to_str().unwrap();
    let dir = tmp("bad-dir");
    let dir = dir.to_str().unwrap();
    let missing_parent = tmp("no/such/dir");
    let missing_parent = missing_parent.to_str().unwrap();
    for (args, needle) in [
        (vec!["--rows", "4", "--cols", "4", "-o", out], "--density"),
        (
            vec!["--rows", "4", "--cols", "4", "--density", "0", "-o", out],
            "must lie in (0, 1]",
        ),
        (
            vec!["--rows", "4", "--cols", "4", "--density", "1.5", "-o", out],
            "must lie in (0, 1]",
        ),
        (
            vec!["--rows", "0", "--cols", "4", "--density", "0.5", "-o", out],
            "at least 1",
        ),
        (
            vec![
                "--rows",
                "65536",
                "--cols",
                "65536",
                "--density",
                "0.001",
                "-o",
                out,
            ],
            "2^31",
        ),
        (
            vec!["--rows", "4", "--cols", "4", "--density", "0.5"],
            "missing -o",
        ),
        (
            vec!["--model", "alexnet-fc", "--rows", "4", "--output-dir", dir],
            "cannot be used with",
        ),
        (vec!["--model", "alexnet-fc"], "--output-dir"),
        (
            vec!["--model", "alexnet-fc", "--output-dir", dir, "-o", out],
            "-o is for one matrix",
        ),
        (
            vec!["--model", "alexnet-fc", "--output-dir", missing_parent],
            "cannot create the folder",
        ),
        (vec!["--model", "vgg", "--output-dir", dir], "alexnet-fc"),
        (
            vec![
                "--rows",
                "4",
                "--cols",
                "4",
                "--density",
                "0.5",
                "--output-dir",
                dir,
            ],
            "--output-dir is for --model",
        ),
    ] {
        let mut cmd = vec!["gen", "pruned"];
        cmd.extend(&args);
        let o = warpfit(&cmd);
        assert_one_line_error(&o, &cmd, needle);
    }
    // Nothing was left behind.
    assert!(!std::path::Path::new(out).exists());
}

/// AlexNet's layers: three matrices chained by their shapes, at their
/// densities, and a bias per output (5.9M entries, 128 MB of text: a few
/// seconds, removed afterwards).
#[test]
fn gen_pruned_writes_alexnet_fc() {
    let dir = tmp("alexnet");
    let o = warpfit(&[
        "gen",
        "pruned",
        "--model",
        "alexnet-fc",
        "--seed",
        "4",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (name, header, outputs) in [
        ("fc6", "4096 9216 3397386", 4096),
        ("fc7", "4096 4096 1509949", 4096),
        ("fc8", "1000 4096 1024000", 1000),
    ] {
        let mtx = std::fs::read_to_string(dir.join(format!("{name}.mtx"))).unwrap();
        assert_eq!(mtx.lines().nth(1), Some(header), "{name}");
        let bias = std::fs::read_to_string(dir.join(format!("{name}.bias.txt"))).unwrap();
        let bias: Vec<f32> = bias.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(bias.len(), outputs, "{name}");
        assert!(bias.iter().all(|b| b.abs() < 0.1), "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
