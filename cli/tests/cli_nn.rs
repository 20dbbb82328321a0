//! `warpfit run nn` end to end on the CPU backend: layers from files with
//! biases and an input batch, checked against a plain f64 evaluation of the
//! network; the generated input; the option errors.

mod cli_common;

use cli_common::{assert_one_line_error, stderr, tmp, warpfit};

/// Writes `text` to a fresh temporary file and returns its path.
fn file(name: &str, text: &str) -> String {
    let p = tmp(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// A dense `rows × cols` layer as Matrix Market, zeros left out.
fn layer_mtx(w: &[Vec<f64>]) -> String {
    let entries: Vec<String> = w
        .iter()
        .enumerate()
        .flat_map(|(r, row)| {
            row.iter()
                .enumerate()
                .filter(|(_, v)| **v != 0.0)
                .map(move |(c, v)| format!("{} {} {v}", r + 1, c + 1))
        })
        .collect();
    format!(
        "%%MatrixMarket matrix coordinate real general\n{} {} {}\n{}\n",
        w.len(),
        w[0].len(),
        entries.len(),
        entries.join("\n")
    )
}

#[test]
fn layers_biases_and_an_input_give_the_network_s_output() {
    let w1 = vec![
        vec![1.0, 0.0, -2.0],
        vec![0.0, 0.5, 0.0],
        vec![-1.0, -1.0, 0.0],
        vec![0.0, 0.0, 0.25],
    ];
    let w2 = vec![vec![1.0, -1.0, 2.0, 0.0], vec![0.0, 0.5, 0.0, 4.0]];
    let (b1, b2) = (vec![0.5, -1.0, 0.0, 1.0], vec![-0.25, 0.0]);
    let x = vec![vec![1.0, 2.0], vec![-1.0, 4.0], vec![0.5, -2.0]];
    // The network by hand: ReLU after the first layer only.
    let apply = |w: &[Vec<f64>], b: &[f64], x: &[Vec<f64>], relu: bool| -> Vec<Vec<f64>> {
        w.iter()
            .zip(b)
            .map(|(row, bias)| {
                (0..x[0].len())
                    .map(|j| {
                        let v = bias + row.iter().zip(x).map(|(a, xr)| a * xr[j]).sum::<f64>();
                        if relu {
                            v.max(0.0)
                        } else {
                            v
                        }
                    })
                    .collect()
            })
            .collect()
    };
    let want = apply(&w2, &b2, &apply(&w1, &b1, &x, true), false);
    let text = |v: &[f64]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let out = tmp("nn-out.txt");
    let o = warpfit(&[
        "run",
        "nn",
        "--backend",
        "cpu",
        "--layer",
        &file("nn-w1.mtx", &layer_mtx(&w1)),
        "--layer",
        &file("nn-w2.mtx", &layer_mtx(&w2)),
        "--bias",
        &file("nn-b1.txt", &text(&b1)),
        "--bias",
        &file("nn-b2.txt", &text(&b2)),
        "--input",
        &file("nn-x.txt", "1 2\n-1 4\n0.5 -2\n"),
        "--check",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(printed.contains("nn: batch 2, 2 layers"), "{printed}");
    assert!(printed.contains("(ok)"), "{printed}");
    let got: Vec<Vec<f64>> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| l.split(' ').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn the_generated_input_is_the_documented_one() {
    // One 1 × 3 identity-like layer: the output is the input's first row.
    let w = vec![vec![1.0, 0.0, 0.0]];
    let out = tmp("nn-gen-out.txt");
    let o = warpfit(&[
        "run",
        "nn",
        "--backend",
        "cpu",
        "--layer",
        &file("nn-id.mtx", &layer_mtx(&w)),
        "--batch",
        "9",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let row: Vec<f32> = std::fs::read_to_string(&out)
        .unwrap()
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    let want: Vec<f32> = (0..9).map(|b| 1.0 + (b % 7) as f32 / 7.0).collect();
    assert_eq!(row, want);
}

#[test]
fn nn_option_errors_are_one_line() {
    let w = file("nn-err.mtx", &layer_mtx(&[vec![1.0, 2.0]]));
    for (args, needle) in [
        (vec!["run", "nn"], "--layer"),
        (
            vec!["run", "nn", "--layer", &w, "--bias", &w, "--bias", &w],
            "one per layer",
        ),
        (
            vec!["run", "nn", "--model", "alexnet-fc", "--bias", &w],
            "carries its own biases",
        ),
        (
            vec!["run", "nn", "--layer", &w, "--seed", "3"],
            "--model only",
        ),
        (
            vec!["run", "nn", "--layer", &w, "--input", &w, "--batch", "4"],
            "--batch",
        ),
        (
            vec!["run", "spmv", "--gen", "grid2d:side=4", "--batch", "4"],
            "nn only",
        ),
        (
            vec!["run", "nn", "--layer", &w, "--throttle", "auto"],
            "does not apply to nn",
        ),
    ] {
        let o = warpfit(&args);
        assert_one_line_error(&o, &args, needle);
    }
    // A layer whose inputs do not match the previous layer's outputs.
    let w2 = file("nn-err2.mtx", &layer_mtx(&[vec![1.0, 2.0, 3.0]]));
    let args = [
        "run",
        "nn",
        "--backend",
        "cpu",
        "--layer",
        &w,
        "--layer",
        &w2,
    ];
    assert_one_line_error(&warpfit(&args), &args, "takes 3 inputs");
    // An input with rows of different widths.
    let x = file("nn-bad-x.txt", "1 2\n3\n");
    let args = [
        "run",
        "nn",
        "--backend",
        "cpu",
        "--layer",
        &w,
        "--input",
        &x,
    ];
    assert_one_line_error(&warpfit(&args), &args, "the first row has 2");
}
