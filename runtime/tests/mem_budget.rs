//! Inputs that ask for more memory than the budget are refused before the
//! allocation, with the bytes needed and the limit; lines are bounded.
//!
//! One test function: the budget is per process, so its cases run in order.

use std::io::{Cursor, Read};
use warpfit_runtime::gen::GenSpec;
use warpfit_runtime::mem;
use warpfit_runtime::sparse::mm;
use warpfit_runtime::Error;

fn read(text: &[u8]) -> Result<warpfit_runtime::Csr<f32>, Error> {
    mm::read_from::<_, f32>(Cursor::new(text), "big.mtx")?.into_csr()
}

fn expect_memory_limit(result: Result<impl std::fmt::Debug, Error>, what: &str, needed: u64) {
    match result {
        Err(Error::MemoryLimit {
            what: w,
            needed: n,
            limit,
            ..
        }) => {
            assert!(w.contains(what), "{w}");
            assert!(n >= needed, "needed {n} < {needed}");
            assert_eq!(limit, 256 << 20);
        }
        other => panic!("expected a memory-limit error for {what}, got {other:?}"),
    }
}

#[test]
fn oversized_inputs_are_refused_before_allocating() {
    mem::set_limit(Some(256 << 20));

    // 3e9 x 3e9 with 2 entries: the row pointers alone are 12 GB.
    let file = b"%%MatrixMarket matrix coordinate real general\n3000000000 3000000000 2\n1 1 1\n3000000000 2 2\n";
    let e = read(file);
    expect_memory_limit(e, "row pointers", 12_000_000_004);
    let text = read(file).unwrap_err().to_string();
    assert!(text.contains("12000000004 bytes (11.2 GiB)"), "{text}");
    assert!(text.contains("268435456 bytes (256.0 MiB)"), "{text}");
    assert!(text.contains("--mem-limit"), "{text}");

    // A size line that claims 10^12 entries but holds 1: memory follows the
    // file, not the claim (the error is the truncation, not memory).
    let liar = b"%%MatrixMarket matrix coordinate real general\n5 5 1000000000000\n1 1 1\n";
    let text = read(liar).unwrap_err().to_string();
    assert!(text.contains("truncated file"), "{text}");

    // Generators that pass the u32 checks but not the budget.
    for (spec, what) in [
        ("rmat:scale=27", "rmat:scale=27"),
        ("uniform:n=4000000000,per_row=1", "uniform"),
        ("grid2d:side=29000", "grid2d"),
        ("rgg:n=4000000000", "rgg"),
    ] {
        let g: GenSpec = spec.parse().unwrap();
        expect_memory_limit(g.generate(), what, 256 << 20);
    }
    // Small ones still run under the same budget.
    assert!("rmat:scale=10"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .is_ok());

    mem::set_limit(None);
}

#[test]
fn lines_are_bounded() {
    // A file with no newline at all (like /dev/zero): an error after
    // MAX_LINE_BYTES, naming line 1, not a read into all memory.
    let zeros = std::io::repeat(0).take(64 << 20);
    let e = mm::read_from::<_, f32>(std::io::BufReader::new(zeros), "/dev/zero").unwrap_err();
    match e {
        Error::MatrixMarket { line, message, .. } => {
            assert_eq!(line, 1);
            assert!(message.contains("longer than 1048576 bytes"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // A long data line, after a valid header: the error names its line.
    let mut text = b"%%MatrixMarket matrix coordinate real general\n% c\n2 2 2\n1 1 1\n".to_vec();
    text.extend(std::iter::repeat(b'7').take(3 << 20));
    text.extend(b"\n2 2 1\n");
    match read(&text).unwrap_err() {
        Error::MatrixMarket { line, message, .. } => {
            assert_eq!(line, 5);
            assert!(message.contains("longer than"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // A 2 MB size line: a bounded error, quoting a short excerpt.
    let mut text = b"%%MatrixMarket matrix coordinate real general\n".to_vec();
    text.extend(std::iter::repeat(b'9').take(1 << 19));
    text.extend(b" x 1\n");
    let msg = read(&text).unwrap_err().to_string();
    assert!(msg.len() < 300, "{} bytes", msg.len());
}

#[test]
fn errors_quote_escaped_excerpts() {
    // A byte order mark is named, not shown as an identical-looking banner.
    let bom = "\u{feff}%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n";
    let msg = read(bom.as_bytes()).unwrap_err().to_string();
    assert!(msg.contains("byte order mark"), "{msg}");
    assert!(msg.contains("\\u{feff}"), "{msg}");
    // Control bytes are escaped.
    let ctl = b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 \x1b[2J\n";
    let msg = read(ctl).unwrap_err().to_string();
    assert!(!msg.contains('\x1b') && msg.contains("\\u{1b}"), "{msg}");
}
