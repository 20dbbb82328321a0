//! The cache the CPU backend's cache-fit plans fit: a share of the
//! last-level cache, read from Linux's sysfs.
//!
//! sysfs describes every cache of a CPU in
//! `/sys/devices/system/cpu/cpu0/cache/index*/` (`level`, `type`, `size`,
//! `shared_cpu_list`); twenty lines read it, where a crate would add CPUID
//! tables for one number (and CPUID inside a virtual machine reports the
//! host's caches, sysfs the guest's).

use std::path::Path;

/// One CPU cache as sysfs describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuCache {
    /// 1 for L1, 2 for L2, ...
    pub level: u32,
    /// Capacity in bytes.
    pub bytes: u64,
    /// CPUs sharing it (at least 1).
    pub shared_cpus: usize,
}

/// sysfs's directory of CPU 0's caches.
const SYSFS_CACHES: &str = "/sys/devices/system/cpu/cpu0/cache";

/// The last-level cache of CPU 0: the data or unified cache of the highest
/// level sysfs lists (the largest of that level when it lists several).
/// `None` where sysfs does not describe caches (not Linux, or a container
/// that hides it).
pub fn last_level_cache() -> Option<CpuCache> {
    last_level_cache_in(Path::new(SYSFS_CACHES))
}

/// [`last_level_cache`] from a directory laid out as sysfs's
/// `cpu0/cache` (`index*/level`, `type`, `size`, `shared_cpu_list`).
///
/// ```
/// use warpfit_runtime::schedule::{last_level_cache_in, CpuCache};
/// let dir = std::env::temp_dir().join(format!("llc-doc-{}", std::process::id()));
/// for (i, level, ty, size, cpus) in [(0, 1, "Data", "32K", "0"), (3, 3, "Unified", "32768K", "0-1")] {
///     let d = dir.join(format!("index{i}"));
///     std::fs::create_dir_all(&d)?;
///     for (f, v) in [("level", level.to_string()), ("type", ty.into()), ("size", size.into()), ("shared_cpu_list", cpus.into())] {
///         std::fs::write(d.join(f), format!("{v}\n"))?;
///     }
/// }
/// assert_eq!(
///     last_level_cache_in(&dir),
///     Some(CpuCache { level: 3, bytes: 32 << 20, shared_cpus: 2 })
/// );
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn last_level_cache_in(dir: &Path) -> Option<CpuCache> {
    let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).ok();
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| {
            let d = e.path();
            let ty = read(&d, "type")?;
            if !matches!(ty.trim(), "Data" | "Unified") {
                return None;
            }
            Some(CpuCache {
                level: read(&d, "level")?.trim().parse().ok()?,
                bytes: parse_size(read(&d, "size")?.trim())?,
                shared_cpus: read(&d, "shared_cpu_list")
                    .and_then(|s| count_cpus(s.trim()))
                    .unwrap_or(1),
            })
        })
        .max_by_key(|c| (c.level, c.bytes))
}

/// sysfs's `32768K` (also `M`, `G`, or plain bytes).
fn parse_size(s: &str) -> Option<u64> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// The number of CPUs in a list such as `0-3,8-11` or `5`.
fn count_cpus(list: &str) -> Option<usize> {
    list.split(',').try_fold(0usize, |n, part| {
        let part = part.trim();
        let count = match part.split_once('-') {
            Some((a, b)) => {
                b.parse::<usize>()
                    .ok()?
                    .checked_sub(a.parse::<usize>().ok()?)?
                    + 1
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
        Some(n + count)
    })
}

/// What `CacheSize::L2` means on the CPU backend: the share of the
/// last-level cache that the executor's threads can count on, `llc.bytes ×
/// min(1, threads / llc.shared_cpus)`, where `threads` is the size of the
/// rayon pool. All of it when the pool covers every CPU sharing the cache
/// (this team's 2-core machine: the whole 32 MiB L3); a quarter of it for a
/// pool of 2 threads on a 8-CPU complex, whose other CPUs run other work.
/// The partitioner's safety factor then applies as on the GPU.
///
/// ```
/// use warpfit_runtime::schedule::{cache_share, CpuCache};
/// let l3 = CpuCache { level: 3, bytes: 32 << 20, shared_cpus: 8 };
/// assert_eq!(cache_share(l3, 2), 8 << 20);
/// assert_eq!(cache_share(l3, 16), 32 << 20);
/// ```
pub fn cache_share(llc: CpuCache, threads: usize) -> u64 {
    let sharing = llc.shared_cpus.max(1) as u64;
    let threads = (threads.max(1) as u64).min(sharing);
    llc.bytes / sharing * threads
}

/// [`cache_share`] of this machine's [`last_level_cache`] for the current
/// rayon pool; `None` where sysfs does not describe the caches (then
/// `CacheSize::L2` is an error on the CPU backend, which says to give a
/// byte size).
pub fn cpu_cache_share() -> Option<u64> {
    last_level_cache().map(|llc| cache_share(llc, rayon::current_num_threads()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_cpu_lists_parse() {
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("1024K"), Some(1 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("12Q"), None);
        assert_eq!(parse_size("K"), None);
        assert_eq!(count_cpus("0"), Some(1));
        assert_eq!(count_cpus("0-1"), Some(2));
        assert_eq!(count_cpus("0-3,8-11"), Some(8));
        assert_eq!(count_cpus("3-1"), None);
        assert_eq!(count_cpus("x"), None);
    }

    #[test]
    fn the_share_never_exceeds_the_cache() {
        let llc = CpuCache {
            level: 3,
            bytes: 105 << 20,
            shared_cpus: 2,
        };
        assert_eq!(cache_share(llc, 1), 105 << 19);
        assert_eq!(cache_share(llc, 2), 105 << 20);
        assert_eq!(cache_share(llc, 64), 105 << 20);
        assert_eq!(
            cache_share(
                CpuCache {
                    shared_cpus: 0,
                    ..llc
                },
                0
            ),
            105 << 20
        );
    }

    #[test]
    fn a_missing_directory_is_none() {
        assert_eq!(last_level_cache_in(Path::new("/nonexistent/cache")), None);
        // On Linux with sysfs, this machine's LLC is some positive size.
        if let Some(c) = last_level_cache() {
            assert!(c.bytes > 0 && c.level >= 1 && c.shared_cpus >= 1, "{c:?}");
        }
    }
}
