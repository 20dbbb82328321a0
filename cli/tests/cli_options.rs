//! Options that were once silently changed, ignored or misreported: each is
//! refused before any work with a message in CLI terms, and every
//! enumerated value takes any letter case.

mod cli_common;

use cli_common::{assert_one_line_error, stderr, tmp, warpfit};

fn write(name: &str, text: &[u8]) -> String {
    let path = tmp(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn options_are_refused_with_what_to_do_instead() {
    let rect = write(
        "options-rect.mtx",
        b"%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 1\n2 3 1\n",
    );
    let empty = write(
        "options-empty.mtx",
        b"%%MatrixMarket matrix coordinate real general\n1 1 0\n",
    );
    let no_diagonal = write(
        "options-nodiag.mtx",
        b"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 1\n2 1 1\n",
    );
    let bom = write("options-bom.txt", b"\xEF\xBB\xBF1\n2\n3\n4\n");
    let mut long_line = b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1".to_vec();
    long_line.extend(vec![b' '; 1536 << 10]);
    long_line.push(b'\n');
    let long_mtx = write("options-long.mtx", &long_line);
    let mut long_rhs = b"1".to_vec();
    long_rhs.extend(vec![b' '; 1536 << 10]);
    long_rhs.extend(b"\n2\n3\n4\n");
    let long_rhs = write("options-long-rhs.txt", &long_rhs);
    let grid = ["--gen", "grid2d:side=4", "--backend", "cpu"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            [&["run", "sssp"], &grid[..], &["--driver", "hybrid:0.5:0.9"]].concat(),
            "DOWN (0.9) must not exceed UP (0.5)",
        ),
        (
            [&["run", "sssp"], &grid[..], &["--driver", "hybrid:2:3"]].concat(),
            "`2` is not a fraction of the vertices (a number from 0 to 1)",
        ),
        (
            [
                &["run", "spmv"],
                &grid[..],
                &["--throttle", "cf", "--remap-order", "levels"],
            ]
            .concat(),
            "--remap-order applies with --throttle org_r or auto",
        ),
        (
            vec![
                "run",
                "spmv",
                "--matrix",
                &rect,
                "--backend",
                "cpu",
                "--throttle",
                "org_r",
                "--remap-order",
                "levels",
            ],
            "needs a square matrix, got 2 x 3; use --remap-order partitions",
        ),
        (
            [
                &["run", "sssp"],
                &grid[..],
                &["--rounds-per-sync", "1000000"],
            ]
            .concat(),
            "--rounds-per-sync 1000000 is more than the 1024 rounds",
        ),
        (
            vec!["run", "cg", "--matrix", &empty, "--precond", "jacobi"],
            "positive diagonal, but a(1, 1) is not stored",
        ),
        (
            vec!["run", "cg", "--matrix", &no_diagonal, "--precond", "jacobi"],
            "positive diagonal, but a(1, 1) is not stored",
        ),
        (
            vec!["run", "spmv", "--gen", "road:side=4294967296"],
            "road vertices (side²) = 18446744073709551616 do not fit in u32",
        ),
        (
            [&["run", "cc"], &grid[..], &["--driver", "data:nearfar"]].concat(),
            "cc has none (a label may fall in any round): use data or data:fifo",
        ),
        (
            vec!["--mem-limit", "0", "run", "spmv", "--gen", "grid2d:side=4"],
            "limit of 0 bytes",
        ),
        (
            vec!["run", "cg", "--gen", "poisson2d:side=2", "--rhs", &bom],
            "options-bom.txt:1: the file starts with a UTF-8 byte order mark",
        ),
        (
            vec!["run", "spmv", "--matrix", &long_mtx],
            "options-long.mtx:3: line longer than 1048576 bytes",
        ),
        (
            vec!["run", "cg", "--gen", "poisson2d:side=2", "--rhs", &long_rhs],
            "options-long-rhs.txt:1: line longer than 1048576 bytes",
        ),
    ];
    for (args, needle) in &cases {
        let o = warpfit(args);
        assert_one_line_error(&o, args, needle);
    }
}

/// One rule for every enumerated value: any letter case. The runs write
/// what the lower-case ones write (to rounding, for cg).
#[test]
fn enumerated_values_take_any_letter_case() {
    let pairs: [(&[&str], &[&str]); 6] = [
        (
            &["run", "SPMV", "--gen", "GRID2D:SIDE=5", "--backend", "CPU"],
            &["run", "spmv", "--gen", "grid2d:side=5", "--backend", "cpu"],
        ),
        (
            &[
                "run",
                "sssp",
                "--gen",
                "Road:Side=6,Order=Natural",
                "--driver",
                "TOPO",
            ],
            &[
                "run",
                "sssp",
                "--gen",
                "road:side=6,order=natural",
                "--driver",
                "topo",
            ],
        ),
        (
            &[
                "run",
                "bfs",
                "--gen",
                "rmat:scale=6,SYM=TRUE",
                "--driver",
                "Hybrid:0.2:0.1",
            ],
            &[
                "run",
                "bfs",
                "--gen",
                "rmat:scale=6,sym=true",
                "--driver",
                "hybrid:0.2:0.1",
            ],
        ),
        (
            &[
                "run",
                "cg",
                "--gen",
                "poisson3d:side=4",
                "--order",
                "LEVELS",
                "--precision",
                "F64",
                "--precond",
                "Jacobi",
            ],
            &[
                "run",
                "cg",
                "--gen",
                "poisson3d:side=4",
                "--order",
                "levels",
                "--precision",
                "f64",
                "--precond",
                "jacobi",
            ],
        ),
        (
            &[
                "run",
                "spmv",
                "--gen",
                "grid2d:side=5",
                "--throttle",
                "ORG_R",
                "--remap-order",
                "LEVELS",
            ],
            &[
                "run",
                "spmv",
                "--gen",
                "grid2d:side=5",
                "--throttle",
                "org_r",
                "--remap-order",
                "levels",
            ],
        ),
        (
            &[
                "run",
                "spmv",
                "--gen",
                "grid2d:side=5",
                "--decomp",
                "SubWarp:4",
            ],
            &[
                "run",
                "spmv",
                "--gen",
                "grid2d:side=5",
                "--decomp",
                "subwarp:4",
            ],
        ),
    ];
    for (i, (mixed, lower)) in pairs.iter().enumerate() {
        let outputs: Vec<String> = [mixed, lower]
            .iter()
            .enumerate()
            .map(|(k, args)| {
                let out = tmp(&format!("case-{i}-{k}.txt"));
                let mut args = args.to_vec();
                args.extend(["--output", out.to_str().unwrap()]);
                if !args.contains(&"--backend") {
                    args.extend(["--backend", "cpu"]);
                }
                let o = warpfit(&args);
                assert!(o.status.success(), "{args:?}: {}", stderr(&o));
                std::fs::read_to_string(&out).unwrap()
            })
            .collect();
        // cg's level order is made on a CPU thread while the first
        // iterations run: the switch, and so the last bits, may differ.
        let values = |s: &str| -> Vec<f64> { s.lines().map(|l| l.parse().unwrap()).collect() };
        let (a, b) = (values(&outputs[0]), values(&outputs[1]));
        assert_eq!(a.len(), b.len(), "{mixed:?}");
        for (x, y) in a.iter().zip(&b) {
            assert!(
                x == y || (x - y).abs() <= 1e-9 * x.abs().max(1.0),
                "{mixed:?}: {x} vs {y}"
            );
        }
    }
    let o = warpfit(&["bench", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("at least 20"), "{help}");
}
