//! What the CLI test suites share: running the `warpfit` binary, a scratch
//! folder per test binary, and the one-line error check.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the `warpfit` binary with `args`.
pub fn warpfit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warpfit"))
        .args(args)
        .output()
        .expect("the warpfit binary runs")
}

/// `name` in a scratch folder of this test binary and process, under the
/// target folder Cargo gives integration tests (so `cargo clean` removes it).
pub fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "warpfit-{}-{}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The run's standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 2 and one line on standard error, `error: …` holding `needle`.
pub fn assert_one_line_error(o: &Output, args: &[&str], needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
}
