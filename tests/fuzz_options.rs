//! Fuzzing of the option parsers: `--driver` (`DriverChoice`), CG's
//! `--order` (`CgOrder`), `--gen` specs (`GenSpec`), byte sizes
//! (`mem::parse_bytes`, as `--mem-limit` and `--cache` read them), the
//! throttling options (`ThrottlePolicy`, `RemapOrder`, `CacheSize`,
//! `Partitioner`, `Bisection`) and the device options (`Decomposition`,
//! `PushVariant`).
//!
//! Every input returns `Ok` or `Err`, never a panic; an error is one short
//! line without control characters (the input quoted as an excerpt, if at
//! all); a value that parses prints back (`Display`, where the type has
//! one) to a string that parses to the same value, and holds only what its
//! type allows (finite fractions, a positive near-far width). Inputs: the
//! shared harness's arbitrary bytes and mutations of valid options
//! (`runtime/tests/fuzz_common`), with tokens for huge numbers, `NaN` and
//! infinities, negative values, empty fields, separators, control and
//! non-ASCII characters; strings of arbitrary Unicode characters; and
//! valid options with a token repeated up to 20,000 times spliced in
//! (numbers of thousands of digits, lines of hundreds of kB).
//!
//! `cargo test` runs a short, deterministic round; `scripts/fuzz SECONDS`
//! runs it for longer with fresh inputs (`WARPFIT_FUZZ_SECONDS`,
//! `WARPFIT_FUZZ_SEED`). `RELIABILITY.md` records such runs.

#[path = "../runtime/tests/fuzz_common/mod.rs"]
mod fuzz_common;

use fuzz_common::{check_error, fuzz, inputs, settings, Tally};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::fmt::{Debug, Display};
use std::str::FromStr;
use std::time::Duration;
use warpfit::apps::{CgOrder, DriverChoice, OrderChoice};
use warpfit::runtime::gen::GenSpec;
use warpfit::runtime::mem;
use warpfit::runtime::partition::Bisection;
use warpfit::runtime::schedule::{CacheSize, Partitioner, RemapOrder, ThrottlePolicy};
use warpfit::{Decomposition, Error, PushVariant};

/// Valid options the mutations start from, every parser's.
const SEEDS: &[&str] = &[
    // --driver
    "topo",
    "topo:rounds",
    "data",
    "data:fifo",
    "data:nearfar",
    "data:nearfar:2.5",
    "hybrid",
    "hybrid:0.05",
    "hybrid:0.5:0.1",
    "auto",
    // --order, --remap-order
    "given",
    "levels",
    "partitions",
    // --gen
    "rmat:scale=8,edge_factor=4,seed=3,sym=true",
    "uniform:n=1000,per_row=3",
    "rgg:n=2000,order=spatial",
    "road:side=64,drop=0.15,seed=2,order=random",
    "poisson3d:side=7,order=random,seed=2",
    "grid2d:side=30",
    // sizes, caches
    "8MiB",
    "1.5 KiB",
    "52428800",
    "3GB",
    "l2",
    // --throttle, partitioners
    "org",
    "org_r",
    "cf",
    "cfq",
    "sjq",
    "kd",
    "bisect",
    "columns",
    // decompositions, push variants
    "cte",
    "thread",
    "subwarp:8",
    "atomic",
    "warp",
    "block",
];

/// What the mutations splice in.
const TOKENS: &[&str] = &[
    ":",
    "::",
    ",",
    ",,",
    "=",
    "",
    " ",
    "0",
    "-0",
    "1",
    "-1",
    "+1",
    "0.5",
    ".5",
    "5.",
    "1e-16",
    "1e-320",
    "1e308",
    "1e309",
    "-1e309",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "infinity",
    "Infinity",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "99999999999999999999999999999999999999999999",
    "0x10",
    "1_000",
    "9",
    "KiB",
    "TiB",
    "B",
    "topo",
    "rounds",
    "data",
    "fifo",
    "nearfar",
    "hybrid",
    "auto",
    "scale",
    "side",
    "seed",
    "order",
    "sym",
    "true",
    "subwarp:",
    "rmat:",
    "road:",
    "TOPO",
    "Hybrid",
    "é",
    "日本",
    "🦀",
    "\u{202e}",
    "\u{feff}",
    "\u{200b}",
    "\0",
    "\n",
    "\r\n",
    "\t",
    "\u{1b}[2J",
    "\u{7f}",
    "\u{85}",
    "`",
    "\\",
];

/// A valid option with one token repeated 100 to 20,000 times spliced in.
fn long() -> BoxedStrategy<Vec<u8>> {
    (
        prop::sample::select(SEEDS),
        prop::sample::select(TOKENS),
        100usize..20_000,
        any::<u16>(),
    )
        .prop_map(|(seed, token, times, at)| {
            let at = at as usize % (seed.len() + 1);
            let mut s = seed.as_bytes()[..at].to_vec();
            s.extend(token.repeat(times).into_bytes());
            s.extend(&seed.as_bytes()[at..]);
            s
        })
        .boxed()
}

/// The inputs every parser gets.
fn option_inputs() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        4 => inputs(SEEDS, TOKENS),
        1 => prop::collection::vec(any::<char>(), 0..80)
            .prop_map(|c| c.into_iter().collect::<String>().into_bytes()),
        1 => long(),
    ]
    .boxed()
}

/// Parses `bytes` (as text, invalid UTF-8 replaced) as `T`: an error must
/// pass [`check_error`], a value `valid`; whether it parsed.
fn parses<T, V>(bytes: &[u8], valid: V) -> Result<bool, TestCaseError>
where
    T: FromStr<Err = Error>,
    V: Fn(&str, T) -> Result<(), TestCaseError>,
{
    let text = String::from_utf8_lossy(bytes);
    match text.parse::<T>() {
        Ok(v) => {
            valid(&text, v)?;
            Ok(true)
        }
        Err(e) => {
            check_error(&e)?;
            Ok(false)
        }
    }
}

/// A value that prints back to itself: its `Display` parses to it.
fn prints_back<T>(_: &str, v: T) -> Result<(), TestCaseError>
where
    T: FromStr<Err = Error> + Display + PartialEq + Debug,
{
    let shown = v.to_string();
    prop_assert_eq!(shown.parse::<T>().ok(), Some(v), "printed as {}", shown);
    Ok(())
}

/// The fractions and widths of a driver that parsed are usable numbers.
fn valid_driver(_: &str, d: DriverChoice) -> Result<(), TestCaseError> {
    match d {
        DriverChoice::Data(Some(OrderChoice::NearFar(Some(delta)))) => {
            prop_assert!(delta.is_finite() && delta > 0.0, "{:?}", d);
        }
        DriverChoice::Hybrid { up, down } => {
            for f in [up, down].into_iter().flatten() {
                prop_assert!(f.is_finite() && f >= 0.0, "{:?}", d);
            }
        }
        _ => {}
    }
    Ok(())
}

/// A plain count of bytes parses to itself.
fn valid_size(text: &str, bytes: u64) -> Result<(), TestCaseError> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        prop_assert_eq!(t.parse::<u64>().ok(), Some(bytes));
    }
    Ok(())
}

/// A size parsed by `mem::parse_bytes`, which has no `FromStr` of its own.
struct Size(u64);

impl FromStr for Size {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        mem::parse_bytes(s).map(Size)
    }
}

#[test]
fn option_parsers_answer_every_input_with_ok_or_one_line() {
    let (seconds, seed) = settings(2.0);
    type Check = fn(&[u8]) -> Result<bool, TestCaseError>;
    let targets: [(&'static str, Check); 11] = [
        ("--driver (DriverChoice)", |b| {
            parses::<DriverChoice, _>(b, valid_driver)
        }),
        ("cg --order (CgOrder)", |b| {
            parses::<CgOrder, _>(b, |_, _| Ok(()))
        }),
        ("--gen (GenSpec)", |b| parses::<GenSpec, _>(b, prints_back)),
        ("byte sizes (mem::parse_bytes)", |b| {
            parses::<Size, _>(b, |t, s| valid_size(t, s.0))
        }),
        ("--throttle (ThrottlePolicy)", |b| {
            parses::<ThrottlePolicy, _>(b, prints_back)
        }),
        ("--remap-order (RemapOrder)", |b| {
            parses::<RemapOrder, _>(b, prints_back)
        }),
        ("cache sizes (CacheSize)", |b| {
            parses::<CacheSize, _>(b, prints_back)
        }),
        ("partitioners (Partitioner)", |b| {
            parses::<Partitioner, _>(b, prints_back)
        }),
        ("bisections (Bisection)", |b| {
            parses::<Bisection, _>(b, |_, _| Ok(()))
        }),
        ("decompositions (Decomposition)", |b| {
            parses::<Decomposition, _>(b, prints_back)
        }),
        ("push variants (PushVariant)", |b| {
            parses::<PushVariant, _>(b, prints_back)
        }),
    ];
    let share = Duration::from_secs_f64(seconds / targets.len() as f64);
    let tallies: Vec<Tally> = targets
        .iter()
        .map(|&(name, check)| fuzz(name, option_inputs(), share, seed, check))
        .collect();
    for t in &tallies {
        println!(
            "fuzz: {}: {} inputs in {:.1} s, {} accepted, 0 panics",
            t.name,
            t.inputs,
            t.elapsed.as_secs_f64(),
            t.accepted
        );
    }
}
