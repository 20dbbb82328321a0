//! The fuzz harness the input parsers' fuzz tests share
//! (`runtime/tests/fuzz_inputs.rs`, and the option parsers of
//! `tests/fuzz_options.rs`): mutations of valid inputs by splicing boundary
//! tokens, deletions, bit flips, duplicated stretches and truncations;
//! rounds of proptest cases with a fresh deterministic seed each until a time
//! budget is spent; and the check every error must pass (one short line
//! without control characters).
#![allow(dead_code)]

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::time::{Duration, Instant};
use warpfit_runtime::Error;

/// The fuzzing time in seconds (`WARPFIT_FUZZ_SECONDS`, else `default`)
/// and the first round's seed (`WARPFIT_FUZZ_SEED`, else 1).
pub fn settings(default_seconds: f64) -> (f64, u64) {
    let seconds = std::env::var("WARPFIT_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_seconds);
    let seed = std::env::var("WARPFIT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    (seconds, seed)
}

/// A mutation: (kind, position, token index, length).
pub type Mutation = (u8, u16, u16, u8);

pub fn apply(seed: &[u8], muts: &[Mutation], tokens: &[&str]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for &(kind, pos, tok, len) in muts {
        let at = if v.is_empty() {
            0
        } else {
            pos as usize % (v.len() + 1)
        };
        let token = tokens[tok as usize % tokens.len()].as_bytes();
        match kind % 6 {
            0 => {
                v.splice(at..at, token.iter().copied());
            }
            1 => {
                let end = (at + len as usize % 8).min(v.len());
                v.drain(at..end);
            }
            2 if at < v.len() => v[at] ^= 1 << (len % 8),
            3 => {
                let end = (at + len as usize % 8).min(v.len());
                v.splice(at..end, token.iter().copied());
            }
            4 => {
                // Duplicate a stretch (repeated lines, extra entries).
                let end = (at + 1 + len as usize * 4).min(v.len());
                let piece = v[at..end].to_vec();
                v.splice(end..end, piece);
            }
            _ => v.truncate(at),
        }
    }
    v
}

pub fn mutated(
    seeds: &'static [&'static str],
    tokens: &'static [&'static str],
) -> BoxedStrategy<Vec<u8>> {
    (
        prop::sample::select(seeds),
        prop::collection::vec(any::<Mutation>(), 0..10),
    )
        .prop_map(move |(seed, muts)| apply(seed.as_bytes(), &muts, tokens))
        .boxed()
}

pub fn inputs(
    seeds: &'static [&'static str],
    tokens: &'static [&'static str],
) -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..600),
        4 => mutated(seeds, tokens),
    ]
    .boxed()
}

/// Errors are short (an excerpt, never the input) and one line.
pub fn check_error(e: &Error) -> Result<(), TestCaseError> {
    let text = e.to_string();
    prop_assert!(text.len() < 600, "{} bytes: {}", text.len(), text);
    prop_assert!(!text.contains('\n'), "multi-line: {}", text);
    prop_assert!(
        !text.chars().any(|c| c.is_control()),
        "control character in {:?}",
        text
    );
    Ok(())
}

/// What one target did.
pub struct Tally {
    pub name: &'static str,
    pub inputs: u64,
    pub accepted: u64,
    pub elapsed: Duration,
}

/// Runs `check` on inputs from `strategy` for `budget`, in rounds of
/// `round` cases with a fresh seed each (the first round's seed is `seed`).
pub fn fuzz(
    name: &'static str,
    strategy: BoxedStrategy<Vec<u8>>,
    budget: Duration,
    seed: u64,
    check: impl Fn(&[u8]) -> Result<bool, TestCaseError>,
) -> Tally {
    let start = Instant::now();
    let round = 256;
    let accepted = std::cell::Cell::new(0u64);
    let mut inputs = 0u64;
    let mut r = 0u64;
    loop {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(&r.to_le_bytes());
        let config = Config {
            cases: round,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &key));
        let result = runner.run(&strategy, |bytes| {
            if check(&bytes)? {
                accepted.set(accepted.get() + 1);
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{name}: round {r} (seed {seed}): {e}");
        }
        inputs += u64::from(round);
        r += 1;
        if start.elapsed() >= budget {
            break;
        }
    }
    Tally {
        name,
        inputs,
        accepted: accepted.get(),
        elapsed: start.elapsed(),
    }
}

/// Peak resident memory of this process (`VmHWM`), in kiB.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
