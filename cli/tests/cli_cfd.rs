//! `warpfit run cfd` end to end: a generated mesh and a `.domn` file, the
//! output's shape, and what it refuses.

mod cli_common;

use cli_common::{assert_one_line_error, stderr, tmp, warpfit};

#[test]
fn cfd_writes_five_values_per_cell() {
    let out = tmp("cfd.txt");
    let o = warpfit(&[
        "run",
        "cfd",
        "--gen",
        "tetmesh:side=3,order=natural",
        "--backend",
        "cpu",
        "--iters",
        "5",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("162 cells"), "{stdout}");
    assert!(stdout.contains("cfd: 5 iterations"), "{stdout}");
    let text = std::fs::read_to_string(&out).unwrap();
    let rows: Vec<Vec<f32>> = text
        .lines()
        .map(|l| l.split(' ').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 162);
    // The free stream stays the free stream on the closed channel.
    for r in rows {
        assert_eq!(r.len(), 5);
        assert!(
            (r[0] - 1.4).abs() < 1e-5 && r[2].abs() < 1e-5 && r[3].abs() < 1e-5,
            "{r:?}"
        );
    }
}

#[test]
fn cfd_reads_rodinia_meshes() {
    let mesh = tmp("two.domn");
    std::fs::write(
        &mesh,
        "2\n0.5\n2 1 0 0\n-1 0 1 0\n-2 0 0 1\n-1 -1 0 0\n0.25\n1 -1 0 0\n-1 0 -1 0\n-2 0 0 -1\n-1 1 0 0\n",
    )
    .unwrap();
    let o = warpfit(&[
        "run",
        "cfd",
        "--mesh",
        mesh.to_str().unwrap(),
        "--backend",
        "cpu",
        "--iters",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 cells"));
    std::fs::write(&mesh, "2\n0.5\n9 1 0 0\n").unwrap();
    let args = [
        "run",
        "cfd",
        "--mesh",
        mesh.to_str().unwrap(),
        "--backend",
        "cpu",
    ];
    assert_one_line_error(&warpfit(&args), &args, "neighbour 9 is not a cell");
}

#[test]
fn cfd_refuses_matrices_and_others_refuse_meshes() {
    for (args, needle) in [
        (
            &["run", "cfd", "--gen", "grid2d:side=4"][..],
            "cfd runs on a mesh",
        ),
        (
            &["run", "spmv", "--gen", "tetmesh:side=2"][..],
            "only cfd runs on it",
        ),
        (
            &["run", "cfd", "--gen", "tetmesh:side=2,order=spatial"][..],
            "natural or random",
        ),
        (
            &["run", "cfd", "--gen", "tetmesh:side=100000"][..],
            "the cfd mesh and its state",
        ),
    ] {
        assert_one_line_error(&warpfit(args), args, needle);
    }
}

#[test]
fn cfd_throttles_its_flux() {
    let out = tmp("cfd_throttled.txt");
    let o = warpfit(&[
        "run",
        "cfd",
        "--gen",
        "tetmesh:side=3,order=random,seed=2",
        "--backend",
        "cpu",
        "--iters",
        "4",
        "--throttle",
        "cf",
        "--throttle-cache",
        "4KiB",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("throttle: cf asked"), "{stdout}");
    let rows = std::fs::read_to_string(&out).unwrap().lines().count();
    assert_eq!(rows, 162);
    // A decomposition is the throttled handle's to choose.
    let args = [
        "run",
        "cfd",
        "--gen",
        "tetmesh:side=3",
        "--backend",
        "cpu",
        "--throttle",
        "auto",
        "--decomp",
        "thread",
    ];
    assert_one_line_error(
        &warpfit(&args),
        &args,
        "--decomp does not apply with --throttle",
    );
}
