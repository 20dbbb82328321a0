//! Fuzzing of everything that parses user input: the Matrix Market reader
//! (arbitrary bytes and mutations of valid files, read as f32, f64, i64 and
//! u32 and converted to CSR), the `--gen` spec parser (and the generators, for
//! specs that parse) and the byte-size parser.
//!
//! The property is the same for all of them: every input returns `Ok` or
//! `Err`, never a panic or an abort, and memory stays under the budget of
//! `warpfit_runtime::mem` (set low here, so a file that declares billions of
//! rows must be refused rather than allocated).
//!
//! `cargo test` runs a short, deterministic round. `scripts/fuzz SECONDS`
//! runs it for longer with fresh random inputs (`WARPFIT_FUZZ_SECONDS`,
//! `WARPFIT_FUZZ_SEED`) and prints what was tried; `RELIABILITY.md` records
//! such a run. The harness (mutations, rounds, the error check) is
//! `fuzz_common`, shared with the option parsers' `tests/fuzz_options.rs`.

mod fuzz_common;

use fuzz_common::{check_error, fuzz, inputs, peak_rss_kib, settings};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::io::Cursor;
use std::time::Duration;
use warpfit_runtime::gen::GenSpec;
use warpfit_runtime::mem;
use warpfit_runtime::sparse::mm;

/// Memory budget while fuzzing the reader: well above what a few KB of text
/// can legitimately need, far below what a lying size line asks for.
const READER_BUDGET: u64 = 64 << 20;
/// Memory budget while generating fuzzed specs: small generators run, larger
/// ones must be refused by the budget check.
const GENERATOR_BUDGET: u64 = 2 << 20;

/// Valid files the mutations start from.
const SEEDS: &[&str] = &[
    "%%MatrixMarket matrix coordinate real general\n% comment\n3 4 4\n1 1 1.5\n2 3 -2e3\n3 4 .25\n1 4 7\n",
    "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 3\n2 1\n3 3\n4 2\n",
    "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 5\n3 2 -9\n",
    "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 -3\n2 2 4\n",
    "%%MatrixMarket matrix coordinate real symmetric\n\n5 5 3\n1 1 1\n5 1 2.5\n\n% x\n4 3 1e-3\n",
];

/// Tokens the mutations splice in: boundary numbers, special values,
/// separators, byte order marks and control bytes.
const TOKENS: &[&str] = &[
    "0",
    "1",
    "-1",
    "4294967295",
    "4294967296",
    "3000000000",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e999",
    "-1e999",
    "1e-999",
    "nan",
    "inf",
    "-inf",
    "+",
    "-",
    ".",
    "e",
    "1e",
    "%",
    "%%",
    "\n",
    "\r\n",
    "\t",
    " ",
    "\u{feff}",
    "\0",
    "\u{1b}[2J",
    "matrix",
    "coordinate",
    "array",
    "complex",
    "hermitian",
    "pattern",
    "skew-symmetric",
    "%%MatrixMarket",
    "3000000000 3000000000 2",
    "100000000 100000000 2",
    "1 1 1\n",
    "2147483648 1 1\n",
];

/// Valid specs and sizes the parsers' mutations start from.
const SPEC_SEEDS: &[&str] = &[
    "rmat:scale=8,edge_factor=4,seed=3",
    "uniform:n=1000,per_row=3",
    "rgg:n=2000,order=spatial",
    "grid2d:side=30",
    "rmat",
    "8MiB",
    "1.5 KiB",
    "52428800",
    "3GB",
];
const SPEC_TOKENS: &[&str] = &[
    ":",
    ",",
    "=",
    "==",
    "scale",
    "n",
    "per_row",
    "side",
    "seed",
    "order",
    "edge_factor",
    "31",
    "32",
    "99",
    "0",
    "4000000000",
    "18446744073709551616",
    "-1",
    "1e9",
    " ",
    "\u{feff}",
    "\0",
    "KiB",
    "TB",
    "b",
    ".",
    "..",
    "random",
    "spatial",
    "rmat:",
    "uniform:",
    "rgg:",
    "grid2d:",
];

/// Reads `bytes` as `T` and converts to CSR; whether the file was accepted.
fn read_as<T: mm::MmValue>(bytes: &[u8]) -> Result<bool, TestCaseError> {
    match mm::read_from::<_, T>(Cursor::new(bytes), "fuzz.mtx") {
        Ok(coo) => {
            let nnz = coo.nnz();
            match coo.into_csr() {
                Ok(csr) => prop_assert_eq!(csr.nnz(), nnz),
                Err(e) => check_error(&e)?,
            }
            Ok(true)
        }
        Err(e) => {
            check_error(&e)?;
            Ok(false)
        }
    }
}

#[test]
fn parsers_answer_every_input_with_ok_or_err() {
    let (seconds, seed) = settings(3.0);
    let share = Duration::from_secs_f64(seconds / 3.0);

    mem::set_limit(Some(READER_BUDGET));
    let reader = fuzz(
        "Matrix Market reader",
        inputs(SEEDS, TOKENS),
        share,
        seed,
        |b| {
            let accepted = read_as::<f32>(b)?;
            read_as::<f64>(b)?;
            read_as::<i64>(b)?;
            read_as::<u32>(b)?;
            Ok(accepted)
        },
    );

    mem::set_limit(Some(GENERATOR_BUDGET));
    let specs = fuzz(
        "--gen spec parser and generators",
        inputs(SPEC_SEEDS, SPEC_TOKENS),
        share,
        seed,
        |b| {
            let text = String::from_utf8_lossy(b);
            match text.parse::<GenSpec>() {
                Ok(spec) => {
                    // The canonical form parses back to the same spec.
                    prop_assert_eq!(spec.to_string().parse::<GenSpec>().ok(), Some(spec));
                    match spec.generate() {
                        Ok(m) => prop_assert!(m.nrows() <= u32::MAX as usize),
                        Err(e) => check_error(&e)?,
                    }
                    Ok(true)
                }
                Err(e) => {
                    check_error(&e)?;
                    Ok(false)
                }
            }
        },
    );

    let sizes = fuzz(
        "byte-size parser",
        inputs(SPEC_SEEDS, SPEC_TOKENS),
        share,
        seed,
        |b| {
            let text = String::from_utf8_lossy(b);
            match mem::parse_bytes(&text) {
                Ok(_) => Ok(true),
                Err(e) => {
                    check_error(&e)?;
                    Ok(false)
                }
            }
        },
    );
    mem::set_limit(None);

    for t in [&reader, &specs, &sizes] {
        println!(
            "fuzz: {}: {} inputs in {:.1} s, {} accepted, 0 panics",
            t.name,
            t.inputs,
            t.elapsed.as_secs_f64(),
            t.accepted
        );
    }
    if let Some(kib) = peak_rss_kib() {
        println!("fuzz: peak resident memory {:.1} MiB", kib as f64 / 1024.0);
        assert!(
            kib * 1024 < 4 * READER_BUDGET + (256 << 20),
            "peak memory {kib} kiB is not bounded by the budget"
        );
    }
}
