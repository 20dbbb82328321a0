//! Matrix Market reader and writer: real files, symmetric expansion, round
//! trips and every malformed-input error with its line number.

use std::io::Cursor;
use std::path::PathBuf;
use warpfit_runtime::sparse::mm::{self, MmField, MmSymmetry};
use warpfit_runtime::sparse::{Coo, Csr};
use warpfit_runtime::Error;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data")
        .join(name)
}

fn parse<T: mm::MmValue>(text: &str) -> Result<Coo<T>, Error> {
    mm::read_from(Cursor::new(text.as_bytes()), "test.mtx")
}

/// Asserts a Matrix Market error at `line` whose message contains `needle`.
#[track_caller]
fn assert_mm_err<T: mm::MmValue + std::fmt::Debug>(text: &str, line: usize, needle: &str) {
    match parse::<T>(text) {
        Err(Error::MatrixMarket {
            path,
            line: l,
            message,
        }) => {
            assert_eq!(path, "test.mtx");
            assert_eq!(l, line, "wrong line for error `{message}`");
            assert!(
                message.contains(needle),
                "message `{message}` lacks `{needle}`"
            );
            let shown = Error::MatrixMarket {
                path,
                line: l,
                message,
            }
            .to_string();
            assert!(shown.starts_with(&format!("test.mtx:{line}: ")), "{shown}");
        }
        other => panic!("expected a Matrix Market error at line {line}, got {other:?}"),
    }
}

fn dense<T: Copy + Default>(m: &Csr<T>) -> Vec<Vec<T>> {
    let mut d = vec![vec![T::default(); m.ncols()]; m.nrows()];
    for (r, row) in d.iter_mut().enumerate() {
        let (cols, vals) = m.row(r);
        for (&c, &v) in cols.iter().zip(vals) {
            row[c as usize] = v;
        }
    }
    d
}

#[test]
fn karate_pattern_symmetric() {
    let path = data("karate.mtx");
    let h = mm::read_header(&path).unwrap();
    assert_eq!(h.field, MmField::Pattern);
    assert_eq!(h.symmetry, MmSymmetry::Symmetric);
    assert_eq!((h.nrows, h.ncols, h.entries), (34, 34, 78));
    let m = mm::read_csr::<f32>(&path).unwrap();
    assert_eq!((m.nrows(), m.ncols(), m.nnz()), (34, 34, 156));
    // First stored entry `2 1` and its mirror; last `34 33`.
    assert_eq!(m.get(1, 0), Some(&1.0));
    assert_eq!(m.get(0, 1), Some(&1.0));
    assert_eq!(m.get(33, 32), Some(&1.0));
    assert_eq!(m.get(32, 33), Some(&1.0));
    assert_eq!(m.get(0, 0), None);
    assert!(m.is_symmetric());
    // Vertex 34 (index 33) is the instructor's hub: degree 17.
    assert_eq!(m.row(33).0.len(), 17);
}

#[test]
fn west0067_real_general() {
    let m = mm::read_csr::<f64>(&data("west0067.mtx")).unwrap();
    assert_eq!((m.nrows(), m.ncols(), m.nnz()), (67, 67, 294));
    assert_eq!(m.get(4, 0), Some(&-0.2788416));
    assert_eq!(m.get(5, 0), Some(&-0.2680186));
    assert_eq!(m.get(54, 66), Some(&1.0));
    assert_eq!(m.get(54, 65), Some(&-0.3726708));
    assert!(!m.is_symmetric());
}

#[test]
fn bus494_real_symmetric_with_diagonal() {
    let m = mm::read_csr::<f64>(&data("494_bus.mtx")).unwrap();
    // 1080 stored entries, 494 on the diagonal: 2·1080 − 494.
    assert_eq!(m.nnz(), 2 * 1080 - 494);
    assert_eq!(m.get(0, 0), Some(&2220.874));
    assert_eq!(m.get(15, 0), Some(&-9.960159));
    assert_eq!(m.get(0, 15), Some(&-9.960159));
    assert_eq!(m.get(0, 45), Some(&-8.196721));
    assert_eq!(m.get(493, 493), Some(&110.9479));
    assert!(m.is_symmetric());
}

#[test]
fn gd98a_pattern_general_and_dwt992() {
    let g = mm::read::<u32>(&data("GD98_a.mtx")).unwrap();
    assert_eq!((g.nrows(), g.ncols(), g.nnz()), (38, 38, 50));
    assert_eq!((g.rows()[0], g.cols()[0], g.values()[0]), (1, 0, 1));
    assert_eq!((g.rows()[49], g.cols()[49]), (4, 37));
    let d = mm::read_csr::<f32>(&data("dwt_992.mtx")).unwrap();
    assert_eq!(d.nnz(), 2 * 8868 - 992);
    assert!(d.is_symmetric());
    assert!((0..992).all(|i| d.get(i, i) == Some(&1.0)));
}

#[test]
fn integer_file() {
    let m = mm::read_csr::<i32>(&data("small_integer.mtx")).unwrap();
    assert_eq!(
        dense(&m),
        vec![
            vec![5, 0, -7, 0],
            vec![0, 0, 0, 0],
            vec![-7, 0, 0, 2147483647],
            vec![0, 0, 2147483647, -2147483648],
        ]
    );
    // Integers widen to floats and i64.
    let f = mm::read_csr::<f64>(&data("small_integer.mtx")).unwrap();
    assert_eq!(f.get(3, 3), Some(&-2147483648.0));
    // But not to a type that cannot hold them.
    let e = mm::read::<u32>(&data("small_integer.mtx")).unwrap_err();
    assert!(e.to_string().contains("small_integer.mtx:6: "), "{e}");
    assert!(e.to_string().contains("-7 does not fit u32"), "{e}");
}

#[test]
fn symmetric_expansion_any_triangle() {
    let text =
        "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 1.5\n2 1 2\n3 2 3\n1 3 4\n";
    let m = parse::<f64>(text).unwrap().to_canonical_csr().unwrap();
    assert_eq!(
        dense(&m),
        vec![
            vec![1.5, 2.0, 4.0],
            vec![2.0, 0.0, 3.0],
            vec![4.0, 3.0, 0.0]
        ]
    );
    assert_eq!(m.nnz(), 7);
}

#[test]
fn skew_symmetric_expansion() {
    let text =
        "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 3\n2 1 2\n3 1 -4\n3 2 6\n";
    let m = parse::<i64>(text).unwrap().to_canonical_csr().unwrap();
    assert_eq!(
        dense(&m),
        vec![vec![0, -2, 4], vec![2, 0, -6], vec![-4, 6, 0]]
    );
    // A zero diagonal is allowed, a nonzero one is not.
    let zero = "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 2\n1 1 0\n2 1 1\n";
    assert_eq!(parse::<f32>(zero).unwrap().nnz(), 3);
    assert_mm_err::<f32>(
        "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 2\n2 1 1\n% c\n2 2 3\n",
        5,
        "nonzero diagonal",
    );
    // The negated mirror must exist in the value type.
    assert_mm_err::<u32>(
        "%%MatrixMarket matrix coordinate integer skew-symmetric\n2 2 1\n2 1 1\n",
        3,
        "does not fit u32",
    );
}

#[test]
fn comments_blank_lines_crlf_and_case() {
    let text = "%%MatrixMarket Matrix Coordinate REAL General\r\n% comment\r\n\r\n  % indented comment\n2 3 2\r\n\n1 3 -1e-3\r\n% between\n  2\t1   7.25  \r\n\n";
    let m = parse::<f64>(text).unwrap().to_csr().unwrap();
    assert_eq!(dense(&m), vec![vec![0.0, 0.0, -1e-3], vec![7.25, 0.0, 0.0]]);
    // No trailing newline after the last entry.
    let m = parse::<f32>("%%MatrixMarket matrix coordinate pattern general\n1 1 1\n1 1").unwrap();
    assert_eq!(m.values(), &[1.0]);
}

#[test]
fn malformed_headers() {
    assert_mm_err::<f64>("", 1, "empty file");
    assert_mm_err::<f64>("hello\n1 1 1\n", 1, "bad header");
    assert_mm_err::<f64>(
        "%%MatrixMarket matrix coordinate real\n",
        1,
        "expected 5 words",
    );
    assert_mm_err::<f64>(
        "%%MatrixMarket matrix coordinate complex general\n",
        1,
        "unsupported field `complex`",
    );
    assert_mm_err::<f64>(
        "%%MatrixMarket matrix coordinate real hermitian\n",
        1,
        "unsupported symmetry",
    );
    assert_mm_err::<f64>(
        "%%MatrixMarket matrix array real general\n",
        1,
        "only `coordinate`",
    );
    assert_mm_err::<f64>(
        "%%MatrixMarket vector coordinate real general\n",
        1,
        "unsupported object",
    );
    assert_mm_err::<f64>(
        "%%MatrixMarket matrix coordinate float general\n",
        1,
        "unknown field `float`",
    );
    assert_mm_err::<f64>(
        "%%MatrixMarket matrix coordinate real upper\n",
        1,
        "unknown symmetry `upper`",
    );
    assert_mm_err::<f64>(
        "%%MatrixMarket matrix coordinate pattern skew-symmetric\n",
        1,
        "cannot be skew",
    );
    assert_mm_err::<i32>(
        "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n",
        1,
        "cannot be read as i32",
    );
}

#[test]
fn malformed_size_lines() {
    let b = "%%MatrixMarket matrix coordinate real general\n";
    assert_mm_err::<f64>(
        &format!("{b}% only comments\n\n"),
        4,
        "expected the size line",
    );
    assert_mm_err::<f64>(&format!("{b}%c\n3 3\n"), 3, "bad size line");
    assert_mm_err::<f64>(&format!("{b}3 3 x\n"), 2, "bad size line");
    assert_mm_err::<f64>(&format!("{b}3 -3 1\n"), 2, "bad size line");
    assert_mm_err::<f64>(&format!("{b}3 3 1 4\n"), 2, "bad size line");
    assert_mm_err::<f64>(&format!("{b}4294967296 3 0\n"), 2, "does not fit in u32");
    assert_mm_err::<f64>(
        "%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n",
        2,
        "must be square",
    );
}

#[test]
fn malformed_entries() {
    let b = "%%MatrixMarket matrix coordinate real general\n% c\n3 4 3\n";
    // Line numbers: banner 1, comment 2, size 3, entries from 4.
    assert_mm_err::<f64>(&format!("{b}1 1 1\n0 2 1\n3 3 1\n"), 5, "row index 0");
    assert_mm_err::<f64>(&format!("{b}1 1 1\n2 0 1\n3 3 1\n"), 5, "column index 0");
    assert_mm_err::<f64>(
        &format!("{b}1 1 1\n4 2 1\n3 3 1\n"),
        5,
        "row index 4 out of range",
    );
    assert_mm_err::<f64>(
        &format!("{b}1 1 1\n\n1 5 1\n"),
        6,
        "column index 5 out of range",
    );
    assert_mm_err::<f64>(
        &format!("{b}1 1 1\n1 2 abc\n"),
        5,
        "expected a real value, found `abc`",
    );
    assert_mm_err::<f64>(&format!("{b}1 1 1\n1 2\n"), 5, "expected 3 fields");
    assert_mm_err::<f64>(&format!("{b}1 1 1\n1\n"), 5, "expected a column index");
    assert_mm_err::<f64>(
        &format!("{b}1 1 1\nx 1 1\n"),
        5,
        "expected a positive integer row index, found `x`",
    );
    assert_mm_err::<f64>(&format!("{b}1 1 1\n1.5 1 1\n"), 5, "found `1.5`");
    assert_mm_err::<f64>(&format!("{b}1 1 1\n1 2 3 4\n"), 5, "extra text `4`");
    assert_mm_err::<f64>(
        &format!("{b}1 1 1\n1 2 3\n2 2 2\n3 3 3\n"),
        7,
        "extra entry",
    );
    assert_mm_err::<f64>(&format!("{b}1 1 1\n1 2 3\n"), 5, "truncated file");
    assert_mm_err::<f64>(&format!("{b}1 1 1\n1 2 3\n% trailing\n"), 6, "found only 2");
    assert_mm_err::<f64>(b, 3, "found only 0");
    let i = "%%MatrixMarket matrix coordinate integer general\n2 2 2\n";
    assert_mm_err::<i32>(
        &format!("{i}1 1 3000000000\n2 2 1\n"),
        3,
        "does not fit i32",
    );
    assert_mm_err::<i64>(
        &format!("{i}1 1 1\n2 2 1.0\n"),
        4,
        "expected an integer value",
    );
    assert_mm_err::<i64>(
        &format!("{i}1 1 99999999999999999999\n2 2 1\n"),
        3,
        "integer value `99999999999999999999` is out of range",
    );
    let p = "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n";
    assert_mm_err::<f32>(
        &format!("{p}1 1 1\n"),
        3,
        "2 fields `row col` for a pattern",
    );
}

#[test]
fn errors_in_large_files_report_exact_lines() {
    // Big enough to span several parallel parse blocks.
    let n = 600_000usize;
    let mut text = format!("%%MatrixMarket matrix coordinate integer general\n{n} 2 {n}\n");
    for k in 0..n {
        text.push_str(&format!("{} {} {}\n", k + 1, k % 2 + 1, k));
    }
    let coo = parse::<i64>(&text).unwrap();
    assert_eq!(coo.nnz(), n);
    assert_eq!(coo.values()[n - 1], (n - 1) as i64);
    assert_eq!(coo.rows()[123_456], 123_456);
    // A bad entry deep into the file.
    let bad = text.replace("\n500001 1 500000\n", "\n500001 1 oops\n");
    assert_mm_err::<i64>(&bad, 500_000 + 3, "found `oops`");
    // One entry too many, at the very end.
    let extra = format!("{text}1 1 1\n");
    assert_mm_err::<i64>(&extra, n + 3, "extra entry");
    // One too few.
    let short = text.replacen(&format!("{n} 2 {n}"), &format!("{n} 2 {}", n + 1), 1);
    assert_mm_err::<i64>(&short, n + 2, "truncated");
}

#[test]
fn write_read_round_trip_f64_exact() {
    let vals = [
        0.1,
        -1.0 / 3.0,
        1e-300,
        -2.5e300,
        f64::MIN_POSITIVE,
        123_456_789.123_456_79,
        0.0,
        -7.0,
        f64::EPSILON,
    ];
    let triplets: Vec<(usize, usize, f64)> = vals
        .iter()
        .enumerate()
        .map(|(k, &v)| (k % 4, (k * 7) % 5, v))
        .collect();
    let m = Csr::from_triplets(4, 5, triplets).unwrap();
    let dir = std::env::temp_dir().join(format!("warpfit-mm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rt.mtx");
    mm::write(&path, &m).unwrap();
    let back = mm::read_csr::<f64>(&path).unwrap();
    assert_eq!(back, m);
    let head = std::fs::read_to_string(&path).unwrap();
    assert!(head.starts_with("%%MatrixMarket matrix coordinate real general\n4 5 9\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn write_read_round_trip_integer_and_f32() {
    let m = Csr::new(
        3,
        3,
        vec![0, 2, 2, 3],
        vec![2, 0, 1],
        vec![i64::MIN, i64::MAX, -1],
    )
    .unwrap();
    let mut buf = Vec::new();
    mm::write_to(&mut buf, &m).unwrap();
    let text = String::from_utf8(buf).unwrap();
    assert!(text.starts_with("%%MatrixMarket matrix coordinate integer general\n3 3 3\n1 3 "));
    let back = mm::read_from::<_, i64>(Cursor::new(text.as_bytes()), "x").unwrap();
    assert_eq!(back.to_csr().unwrap(), m);

    let f = Csr::new(
        1,
        3,
        vec![0, 3],
        vec![0, 1, 2],
        vec![0.1f32, 16777217.0, 3.4e38],
    )
    .unwrap();
    let mut buf = Vec::new();
    mm::write_to(&mut buf, &f).unwrap();
    let back = mm::read_from::<_, f32>(Cursor::new(&buf[..]), "x").unwrap();
    assert_eq!(back.to_csr().unwrap(), f);
}

#[test]
fn round_trip_real_file() {
    let m = mm::read_csr::<f64>(&data("494_bus.mtx")).unwrap();
    let mut buf = Vec::new();
    mm::write_to(&mut buf, &m).unwrap();
    let (h, back) = mm::read_with_header_from::<_, f64>(Cursor::new(&buf[..]), "x").unwrap();
    assert_eq!(h.symmetry, MmSymmetry::General);
    assert_eq!(h.entries, m.nnz());
    assert_eq!(back.to_csr().unwrap(), m);
}

#[test]
fn missing_file_is_io_error_with_path() {
    let e = mm::read::<f64>(&data("no_such_file.mtx")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }));
    assert!(e.to_string().contains("no_such_file.mtx"), "{e}");
}

mod float_parsing {
    use super::*;
    use proptest::prelude::*;

    /// Reads one `real` entry whose value token is `tok`.
    fn read_one<T: mm::MmValue>(tok: &str) -> T {
        let text = format!("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 {tok}\n");
        parse::<T>(&text).unwrap().values()[0]
    }

    #[test]
    fn tokens_match_the_standard_parser() {
        for tok in [
            "0",
            "-0",
            "+1",
            "1.",
            ".5",
            "-.2788416",
            "1e10",
            "1E-10",
            "2.5e+3",
            "123456789012345678",
            "1234567890123456789012",
            "0.000000000000000000000001",
            "9007199254740993",
            "16777217",
            "3.4028235e38",
            "1e-45",
            "4.9e-324",
            "0.1",
            "0.30000000000000004",
            "1e22",
            "1e23",
            "8.589973e9",
        ] {
            let want64: f64 = tok.parse().unwrap();
            let got64: f64 = read_one(tok);
            assert!(
                got64.to_bits() == want64.to_bits() || (got64.is_nan() && want64.is_nan()),
                "{tok}: {got64} vs {want64}"
            );
            let want32: f32 = tok.parse().unwrap();
            let got32: f32 = read_one(tok);
            assert!(
                got32.to_bits() == want32.to_bits() || (got32.is_nan() && want32.is_nan()),
                "{tok}: {got32} vs {want32}"
            );
        }
        // Non-finite values are refused, not read as infinities or NaN.
        for bad in ["1e400", "inf", "-inf", "NaN", &"9".repeat(400)] {
            let text = format!("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 {bad}\n");
            let e = parse::<f64>(&text).unwrap_err().to_string();
            assert!(
                e.contains("finite") || e.contains("out of range"),
                "{bad}: {e}"
            );
        }
        let e = parse::<f32>("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1e39\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of range for f32"), "{e}");
        for bad in ["1e", "e5", "1.2.3", "--1", "1e+", "0x10", "1,5", "."] {
            let text = format!("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 {bad}\n");
            assert!(parse::<f64>(&text).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn random_decimals_parse_exactly(m in 0u64..100_000_000_000_000_000u64, e in -40i32..40, neg: bool, dot in 0usize..20) {
            // Build `±digits` with a decimal point at `dot` and an exponent.
            let digits = m.to_string();
            let cut = dot.min(digits.len());
            let tok = format!("{}{}.{}e{}", if neg { "-" } else { "" }, &digits[..cut], &digits[cut..], e);
            let want64: f64 = tok.parse().unwrap();
            prop_assert_eq!(read_one::<f64>(&tok).to_bits(), want64.to_bits(), "{}", tok);
            let want32: f32 = tok.parse().unwrap();
            if want32.is_finite() {
                prop_assert_eq!(read_one::<f32>(&tok).to_bits(), want32.to_bits(), "{}", tok);
            } else {
                // Beyond f32's range: an error, not a silent infinity.
                let text = format!("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 {tok}\n");
                prop_assert!(parse::<f32>(&text).is_err(), "{}", tok);
            }
        }

        #[test]
        fn f32_near_midpoints_parse_exactly(bits in 0x0080_0000u32..0x7f7f_ffff, delta in -2i64..=2) {
            // The f64 halfway between two adjacent f32s, nudged by a few f64
            // ulps, printed exactly: the double-rounding trap for f32.
            let a = f32::from_bits(bits) as f64;
            let b = f32::from_bits(bits + 1) as f64;
            let mid = f64::from_bits(((a + b) / 2.0).to_bits().wrapping_add(delta as u64));
            for tok in [format!("{mid:e}"), format!("{mid}")] {
                let want: f32 = tok.parse().unwrap();
                prop_assert_eq!(read_one::<f32>(&tok).to_bits(), want.to_bits(), "{}", tok);
            }
        }

        #[test]
        fn written_floats_read_back_bit_exact(bits in any::<u64>()) {
            let v = f64::from_bits(bits);
            prop_assume!(v.is_finite());
            let m = Csr::new(1, 1, vec![0, 1], vec![0], vec![v]).unwrap();
            let mut buf = Vec::new();
            mm::write_to(&mut buf, &m).unwrap();
            let back = mm::read_from::<_, f64>(Cursor::new(&buf[..]), "x").unwrap();
            prop_assert_eq!(back.values()[0].to_bits(), bits);
        }
    }
}
