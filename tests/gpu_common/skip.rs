//! A GPU test that returns early for want of a GPU says so: on standard
//! error, and, when `WARPFIT_SKIP_LOG` names a file, as one line appended
//! to it (`<test binary>: <test>: <why>`). A returning test counts as
//! passed in `cargo test`'s totals; CI (`.ci/run`) sets the variable and
//! reports these tests as skipped instead. No dependencies: the device
//! layer's suites include this file too.

use std::fmt::Display;
use std::io::Write;

/// The environment variable naming the file skipped tests are listed in.
pub const SKIP_LOG: &str = "WARPFIT_SKIP_LOG";

/// Records that the running test returns early: `binary` is the test
/// binary's crate name (`env!("CARGO_CRATE_NAME")` at the call), `why`
/// the reason (the error opening the device).
///
/// # Panics
/// When `WARPFIT_SKIP_LOG` is set but its file cannot be written: a skip
/// CI cannot count must not pass silently.
pub fn skipped(binary: &str, why: &dyn Display) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    // One line, however the reason reads.
    let why = why.to_string().replace(['\n', '\r'], " ");
    eprintln!("skipping: {why}");
    let Some(path) = std::env::var_os(SKIP_LOG).filter(|p| !p.is_empty()) else {
        return;
    };
    // One `write_all` of one line to a file opened for appending: the tests
    // of a binary run on several threads, and every binary appends to the
    // same file.
    let line = format!("{binary}: {test}: {why}\n");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .unwrap_or_else(|e| panic!("{SKIP_LOG}={}: {e}", path.to_string_lossy()));
}
