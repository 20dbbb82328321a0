//! Memory: the budget every input-sized allocation is checked against, byte
//! sizes as users write them, and heap accounting for measurements.
//!
//! A file or a spec can ask for any amount of memory: a Matrix Market size
//! line declaring 3·10⁹ rows needs a 12 GB row-pointer array whatever the
//! entry count, `rmat:scale=31` needs hundreds of GB. Rust aborts the process
//! when an allocation fails, so warpfit asks first: every allocation whose
//! size comes from the input goes through [`check`] (or [`try_reserve`] /
//! [`try_filled`]), which returns [`Error::MemoryLimit`] with the bytes
//! needed and the limit instead of letting the allocation abort.
//!
//! The limit ([`limit`]) is, in order of precedence: [`set_limit`] (the
//! command line's `--mem-limit`), the `WARPFIT_MEM_LIMIT` environment variable
//! (a size for [`parse_bytes`], e.g. `8GiB`), or what the machine can give
//! now: `MemAvailable` of `/proc/meminfo`, lowered to the address space left
//! under the process's `RLIMIT_AS` (`ulimit -v`) when one is set. Where none
//! of these can be read there is no limit beyond the allocator's own
//! `try_reserve` failure, which is reported the same way.
//!
//! The check is per allocation, against memory available at that moment:
//! as earlier allocations are touched, `MemAvailable` drops and later checks
//! see it.

mod heap;

pub use heap::{live_heap_bytes, CountingAlloc, HeapMeter};

use crate::error::excerpt;
use crate::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that sets the memory limit (a byte size).
pub const MEM_LIMIT_ENV: &str = "WARPFIT_MEM_LIMIT";

/// [`set_limit`]'s value plus one (saturating); 0 = not set.
static LIMIT_OVERRIDE: AtomicU64 = AtomicU64::new(0);

/// Sets the memory limit of this process (`None` returns to the default,
/// see the module docs). A limit of 0 bytes refuses every allocation the
/// checks see.
pub fn set_limit(bytes: Option<u64>) {
    LIMIT_OVERRIDE.store(bytes.map_or(0, |b| b.saturating_add(1)), Ordering::Relaxed);
}

/// The memory limit now, in bytes, and where it comes from (for messages);
/// `None` when nothing bounds allocations.
pub fn limit() -> Result<Option<(u64, String)>> {
    let set = LIMIT_OVERRIDE.load(Ordering::Relaxed);
    if set != 0 {
        return Ok(Some((set - 1, "the --mem-limit option".into())));
    }
    if let Some(v) = std::env::var_os(MEM_LIMIT_ENV) {
        let text = v.to_string_lossy();
        let bytes =
            parse_bytes(&text).map_err(|e| Error::invalid(format!("{MEM_LIMIT_ENV}: {e}")))?;
        return Ok(Some((
            bytes,
            format!("the {MEM_LIMIT_ENV} environment variable"),
        )));
    }
    Ok(machine_limit())
}

/// `MemAvailable`, lowered to the address space left under `RLIMIT_AS`.
fn machine_limit() -> Option<(u64, String)> {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| proc_field_kib(&s, "MemAvailable:"))
        .map(|kib| {
            (
                kib.saturating_mul(1024),
                "MemAvailable in /proc/meminfo".to_string(),
            )
        });
    let address_space = address_space_left().map(|b| (b, "RLIMIT_AS (ulimit -v)".to_string()));
    match (available, address_space) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// Bytes of address space this process may still map under a soft
/// `RLIMIT_AS`, from `/proc/self/limits` and `/proc/self/status`.
fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft: u64 = line
        .trim_start_matches("Max address space")
        .split_ascii_whitespace()
        .next()?
        .parse()
        .ok()?; // "unlimited" does not parse: no limit
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let used = proc_field_kib(&status, "VmSize:")?.saturating_mul(1024);
    Some(soft.saturating_sub(used))
}

/// The value in kiB of a `Name:   1234 kB` line.
fn proc_field_kib(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(name))?
        .trim_start_matches(name)
        .split_ascii_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `count` elements of `T` in bytes, or an error naming `what` when the
/// product overflows.
pub fn bytes_of<T>(what: &str, count: usize) -> Result<u64> {
    (count as u64)
        .checked_mul(std::mem::size_of::<T>() as u64)
        .ok_or_else(|| too_many(what, count))
}

/// A request whose size in bytes does not fit in 64 bits.
fn too_many(what: &str, count: usize) -> Error {
    Error::invalid(format!(
        "out of memory: {what} needs {count} elements, more bytes than a 64-bit size can count"
    ))
}

/// Checks that one allocation of `bytes` for `what` fits the limit.
pub fn check(what: &str, bytes: u64) -> Result<()> {
    if let Some((limit, source_of_limit)) = limit()? {
        if bytes > limit {
            return Err(Error::MemoryLimit {
                what: what.to_string(),
                needed: bytes,
                limit,
                source_of_limit: format!(
                    "{source_of_limit}; set {MEM_LIMIT_ENV} or --mem-limit to change it"
                ),
            });
        }
    }
    Ok(())
}

/// Checks an allocation of `count` elements of `T` (see [`check`]).
pub fn check_elems<T>(what: &str, count: usize) -> Result<()> {
    check(what, bytes_of::<T>(what, count)?)
}

/// Makes room for `additional` more elements in `v`, checked against the
/// limit and with the allocator's failure as an error instead of an abort.
/// Grows geometrically like `Vec::reserve`, falling back to the exact size
/// when doubling would not fit.
pub fn try_reserve<T>(v: &mut Vec<T>, additional: usize, what: &str) -> Result<()> {
    let needed = v
        .len()
        .checked_add(additional)
        .ok_or_else(|| too_many(what, additional))?;
    if needed <= v.capacity() {
        return Ok(());
    }
    check_elems::<T>(what, needed)?;
    let doubled = v.capacity().saturating_mul(2).max(needed);
    let grown = if doubled > needed && check_elems::<T>(what, doubled).is_ok() {
        v.try_reserve(doubled - v.len()).is_ok()
    } else {
        false
    };
    if grown {
        return Ok(());
    }
    v.try_reserve_exact(additional)
        .map_err(|_| Error::MemoryLimit {
            what: what.to_string(),
            needed: bytes_of::<T>(what, needed).unwrap_or(u64::MAX),
            limit: limit().ok().flatten().map_or(u64::MAX, |l| l.0),
            source_of_limit: "the allocator (it refused the request)".into(),
        })
}

/// `vec![value; count]`, checked against the limit first.
pub fn try_filled<T: Clone>(what: &str, count: usize, value: T) -> Result<Vec<T>> {
    let mut v = Vec::new();
    try_reserve(&mut v, count, what)?;
    v.resize(count, value);
    Ok(v)
}

/// Parses a byte size: a plain integer (`52428800`), or a number with a
/// decimal (`KB`, `MB`, `GB`, `TB`, powers of 1000) or binary (`KiB`, `MiB`,
/// `GiB`, `TiB`, powers of 1024) unit, or `B`; units are case-insensitive, a
/// space is allowed before them, fractions are rounded down (`1.5MiB`).
pub fn parse_bytes(s: &str) -> Result<u64> {
    let t = s.trim();
    let shown = excerpt(t.as_bytes());
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => {
            return Err(Error::invalid(format!(
                "byte size `{shown}`: unknown unit `{}` (expected B, KB, MB, GB, TB, KiB, MiB, \
                 GiB or TiB)",
                excerpt(unit.as_bytes())
            )))
        }
    };
    let bad = || {
        Error::invalid(format!(
            "byte size `{shown}`: `{}` is not a number",
            excerpt(num.as_bytes())
        ))
    };
    let too_large = || {
        Error::invalid(format!(
            "byte size `{shown}` is too large (max {} bytes)",
            u64::MAX
        ))
    };
    if num.is_empty() || num.bytes().filter(|&b| b == b'.').count() > 1 || num == "." {
        return Err(bad());
    }
    let value = if num.contains('.') {
        let v: f64 = num.parse().map_err(|_| bad())?;
        let bytes = (v * scale as f64).floor();
        if bytes >= u64::MAX as f64 {
            return Err(too_large());
        }
        bytes as u64
    } else {
        // Only digits here: a parse failure is an overflow.
        let v: u64 = num.parse().map_err(|_| too_large())?;
        v.checked_mul(scale).ok_or_else(too_large)?
    };
    Ok(value)
}

/// `bytes` for people: `12000000004 bytes (11.2 GiB)`.
pub fn describe_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{bytes} bytes ({v:.1} {})", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_byte_sizes() {
        assert_eq!(parse_bytes("52428800").unwrap(), 52_428_800);
        assert_eq!(parse_bytes("50MB").unwrap(), 50_000_000);
        assert_eq!(parse_bytes("8MiB").unwrap(), 8 << 20);
        assert_eq!(parse_bytes("8 mib").unwrap(), 8 << 20);
        assert_eq!(parse_bytes("1.5KiB").unwrap(), 1536);
        assert_eq!(parse_bytes("40kB").unwrap(), 40_000);
        assert_eq!(parse_bytes("3GB").unwrap(), 3_000_000_000);
        assert_eq!(parse_bytes("2TiB").unwrap(), 2 << 40);
        for bad in [
            "",
            "MB",
            "12XB",
            "1.2.3MB",
            "-4MB",
            ".",
            "99999999999999999999GiB",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn an_overflowing_size_is_too_large_not_a_non_number() {
        let e = parse_bytes("18446744073709551616").unwrap_err().to_string();
        assert!(e.contains("too large"), "{e}");
        let e = parse_bytes("1.2.3").unwrap_err().to_string();
        assert!(e.contains("not a number"), "{e}");
    }

    #[test]
    fn byte_size_errors_quote_a_short_escaped_excerpt() {
        let long = format!("{}\u{7}XB", "9".repeat(10_000));
        let e = parse_bytes(&long).unwrap_err().to_string();
        assert!(e.len() < 300, "{} bytes: {e}", e.len());
        assert!(e.contains("\\u{7}") || e.contains("\\x07"), "{e}");
        assert!(!e.contains('\u{7}'));
    }

    #[test]
    fn sizes_read_back_for_people() {
        assert_eq!(describe_bytes(100), "100 bytes");
        assert_eq!(
            describe_bytes(12_000_000_004),
            "12000000004 bytes (11.2 GiB)"
        );
    }

    #[test]
    fn overflowing_and_oversized_requests_are_errors() {
        assert!(bytes_of::<u64>("x", usize::MAX).is_err());
        let mut v: Vec<u8> = vec![1, 2];
        let e = try_reserve(&mut v, usize::MAX, "test vector").unwrap_err();
        assert!(e.to_string().contains("out of memory: test vector"), "{e}");
        let mut v: Vec<u64> = Vec::new();
        let e = try_reserve(&mut v, usize::MAX / 4, "big vector").unwrap_err();
        assert!(e.to_string().contains("big vector"), "{e}");
    }

    #[test]
    fn reads_proc_fields() {
        let text = "MemTotal:       16318412 kB\nMemAvailable:    9139024 kB\n";
        assert_eq!(proc_field_kib(text, "MemAvailable:"), Some(9_139_024));
        assert_eq!(proc_field_kib(text, "VmSize:"), None);
    }
}
