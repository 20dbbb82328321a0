//! The plan cache: what `auto` by the model decided, kept on disk beside
//! the kernel cache (`<cache>/plans/`), so that a later run over the same
//! arrays, options and device builds the chosen layout on the device and
//! is throttled from its first launch, with nothing measured or timed.
//!
//! What is kept is the decision ([`DevicePlan`]: `org`, the column-block
//! count, or the level order), a few bytes, never a layout: the layouts
//! are remade on the device from the arrays in milliseconds. A level order
//! is kept too, beside its entry (`order_cache`, 4 bytes a row), where
//! making it again is most of the rebuild. An entry is
//! keyed by a digest of the range and index arrays' contents (taken on the
//! device, `plan.cuh`), their sizes, the kernel, the options (the expected
//! launch count among them: it decides which candidates are built) and the
//! device; it is checksummed like the kernel cache's entries, and one that
//! is stale, corrupt or unreadable is planned again, never trusted. The
//! folder holds at most [`MAX_ENTRIES`]; the oldest go first.

use crate::compile::disk_cache::{fnv1a, prepare_dir, write_atomically};
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::engines::plan_kernels::plan_kernels;
use crate::throttle::handle::{Schedule, Throttled};
use crate::throttle::plan_choice::DevicePlan;
use crate::throttle::report::ModelReport;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use warpfit_runtime::{Error, Result};

/// First line of every plan file.
pub(crate) const PLAN_FORMAT: &str = "warpfit-plan-cache 1";

/// Entries the folder keeps at most.
pub(crate) const MAX_ENTRIES: usize = 256;

/// Where an entry lives and what it must say it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlanKey {
    dir: PathBuf,
    key: u64,
}

/// The key of `t`'s arrays, options and device, in `dev`'s cache folder;
/// `None` without a cache folder or without arrays the device can read.
pub(in crate::throttle) fn key(t: &Throttled, dev: &CudaDevice) -> Result<Option<PlanKey>> {
    let Some(dir) = dev.cache_dir() else {
        return Ok(None);
    };
    let Ok(shape) = t.device_shape() else {
        return Ok(None);
    };
    let digest = DeviceBuffer::<u64>::zeros(dev, 2)?;
    let pk = plan_kernels(dev)?;
    let d = digest.device_ptr(dev);
    pk.hash_words(dev, shape.ptr, shape.n + 1, 0x5eed_0001, d)?;
    pk.hash_words(dev, shape.idx, shape.nnz, 0x5eed_0002, d + 8)?;
    let words = digest.to_vec(dev)?;
    let described = describe(t, dev, shape.n, shape.nnz, shape.n_gathered);
    let key = fnv1a(&[
        PLAN_FORMAT.as_bytes(),
        described.as_bytes(),
        &words[0].to_le_bytes(),
        &words[1].to_le_bytes(),
    ]);
    Ok(Some(PlanKey {
        dir: dir.join("plans"),
        key,
    }))
}

/// Everything but the arrays' contents the decision depends on.
fn describe(t: &Throttled, dev: &CudaDevice, n: usize, nnz: usize, n_gathered: usize) -> String {
    let o = &t.options;
    format!(
        "kernel {} | tasks {n} fine {nnz} gathered {n_gathered} columns {:?} | cache {} safety {} launches {:?} | device {} {} l2 {} sms {}",
        t.spec.name,
        t.columns,
        o.cache,
        o.safety,
        o.expected_launches,
        dev.name(),
        dev.arch(),
        dev.l2_bytes(),
        dev.sm_count()
    )
}

impl PlanKey {
    fn path(&self) -> PathBuf {
        self.dir.join(format!("{:016x}.plan", self.key))
    }

    /// Where the entry's level order is kept (`order_cache`).
    pub(in crate::throttle) fn order_path(&self) -> PathBuf {
        self.dir.join(format!("{:016x}.order", self.key))
    }

    pub(in crate::throttle) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(in crate::throttle) fn key(&self) -> u64 {
        self.key
    }
}

/// The entry's text for `plan` under `key` (the tests write entries with
/// it, as the cache does).
pub fn encode(key: u64, plan: DevicePlan) -> String {
    checksummed(
        PLAN_FORMAT,
        &format!("key {key:016x}\nplan {}\n", plan_word(plan)),
    )
}

/// A cache file's text: its format line, `body` (lines), then the body's
/// checksum on a line of its own.
pub(crate) fn checksummed(format: &str, body: &str) -> String {
    let sum = fnv1a(&[body.as_bytes()]);
    format!("{format}\n{body}sum {sum:016x}\n")
}

/// The body of a text [`checksummed`] under `format`, or why it is not
/// trusted (another format, no checksum, or one that does not match).
pub(crate) fn checked_body<'a>(
    text: &'a str,
    format: &str,
) -> std::result::Result<&'a str, String> {
    let rest = text
        .strip_prefix(format)
        .and_then(|r| r.strip_prefix('\n'))
        .ok_or_else(|| format!("not a `{format}` file"))?;
    let at = rest.rfind("sum ").ok_or("no checksum")?;
    let (body, sum) = rest.split_at(at);
    let sum = sum
        .strip_prefix("sum ")
        .and_then(|s| s.strip_suffix('\n'))
        .and_then(|s| u64::from_str_radix(s, 16).ok())
        .ok_or("a malformed checksum")?;
    if sum != fnv1a(&[body.as_bytes()]) {
        return Err("the checksum does not match".into());
    }
    Ok(body)
}

fn plan_word(plan: DevicePlan) -> String {
    match plan {
        DevicePlan::Org => "org".into(),
        DevicePlan::ColumnBlocks { k } => format!("columns {k}"),
        DevicePlan::Levels => "levels".into(),
    }
}

/// The plan an entry's `text` holds for `key`, or why it is not trusted.
pub(crate) fn decode(text: &str, key: u64) -> std::result::Result<DevicePlan, String> {
    let body = checked_body(text, PLAN_FORMAT)?;
    let mut lines = body.lines();
    if lines.next() != Some(format!("key {key:016x}").as_str()) {
        return Err("written for another key".into());
    }
    let plan = lines
        .next()
        .and_then(|l| l.strip_prefix("plan "))
        .ok_or("no plan")?;
    let parsed = match plan.split_once(' ') {
        None if plan == "org" => DevicePlan::Org,
        None if plan == "levels" => DevicePlan::Levels,
        Some(("columns", k)) => match k.parse::<usize>() {
            Ok(k) if (2..=crate::engines::plan_kernels::MAX_COLUMN_BLOCKS).contains(&k) => {
                DevicePlan::ColumnBlocks { k }
            }
            _ => return Err(format!("a column-block count out of range: {k}")),
        },
        _ => return Err(format!("an unknown plan `{plan}`")),
    };
    if lines.next().is_some() {
        return Err("trailing lines".into());
    }
    Ok(parsed)
}

/// The most bytes an entry may hold: a valid one is under 100.
const MAX_ENTRY_BYTES: u64 = 4096;

/// The cached plan of `key`, if a trusted entry holds one. An entry
/// longer than [`MAX_ENTRY_BYTES`] (not one this cache wrote) is not read.
pub(in crate::throttle) fn load(_dev: &CudaDevice, key: &PlanKey) -> Option<DevicePlan> {
    read_entry(&key.path(), key.key)
}

/// The plan the entry at `path` holds for `key`, reading at most
/// [`MAX_ENTRY_BYTES`] of it.
fn read_entry(path: &Path, key: u64) -> Option<DevicePlan> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_ENTRY_BYTES + 1)
        .read_to_string(&mut text)
        .ok()?;
    if text.len() as u64 > MAX_ENTRY_BYTES {
        return None;
    }
    decode(&text, key).ok()
}

/// Writes `plan` for `key`, then trims the folder to [`MAX_ENTRIES`].
///
/// # Errors
/// The folder cannot be made private or written.
pub(in crate::throttle) fn store(_dev: &CudaDevice, key: &PlanKey, plan: DevicePlan) -> Result<()> {
    let unavailable = |reason: String| Error::Unavailable {
        what: format!("the plan cache {}", key.dir.display()),
        reason,
    };
    prepare_dir(&key.dir).map_err(unavailable)?;
    write_atomically(&key.path(), encode(key.key, plan).as_bytes())
        .map_err(|e| unavailable(e.to_string()))?;
    trim(&key.dir, MAX_ENTRIES);
    Ok(())
}

/// Removes the oldest entries (by modification time) beyond `keep`;
/// best effort: an entry another process removed first is skipped.
pub(crate) fn trim(dir: &Path, keep: usize) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(std::time::SystemTime, PathBuf)> = read
        .filter_map(|e| {
            let e = e.ok()?;
            let path = e.path();
            if path.extension()? != "plan" {
                return None;
            }
            Some((e.metadata().ok()?.modified().ok()?, path))
        })
        .collect();
    if entries.len() <= keep {
        return;
    }
    entries.sort();
    let excess = entries.len() - keep;
    for (_, path) in entries.into_iter().take(excess) {
        let _ = std::fs::remove_file(path);
    }
}

impl Throttled {
    /// The schedule of the plan cache's decision for `key`, its layout
    /// made again on the device (a level order read back where it was
    /// kept, else made and kept), with `report` (the model's so far) saying
    /// so; `None` where there is no trusted entry, or its layout cannot be
    /// made again (a level order past its budget on a device of other
    /// speed): decided again.
    pub(in crate::throttle) fn schedule_from_plan_cache(
        &mut self,
        dev: &CudaDevice,
        key: &PlanKey,
        report: &ModelReport,
        keyed: Duration,
    ) -> Result<Option<(Schedule, DevicePlan, ModelReport)>> {
        let Some(plan) = load(dev, key) else {
            return Ok(None);
        };
        let t = Instant::now();
        let read = match plan {
            DevicePlan::Levels => Some(self.levels_from_kept_order(dev, key)?),
            _ => None,
        };
        let steps_read = read.as_ref().and_then(|r| r.as_ref().ok());
        let reading: Duration = steps_read.into_iter().flatten().map(|(_, d)| *d).sum();
        let Ok(s) = self.device_schedule(dev, plan) else {
            self.layouts.device = None;
            self.layouts.tables = None;
            return Ok(None);
        };
        let mut report = report.clone();
        report.from_cache = true;
        report.reason = format!("the plan cache's decision: {plan}");
        if self.layouts.caller_order.is_some() {
            report
                .reason
                .push_str(", left to the caller to renumber by");
        }
        report.steps.push(("key", keyed));
        report.steps.extend(steps_read.into_iter().flatten());
        report
            .steps
            .push(("layout", t.elapsed().saturating_sub(reading)));
        if let Some(Err(why)) = read {
            report.order_not_read = Some(why);
            report.cache_error = self.keep_level_order(dev, key);
        }
        Ok(Some((s, plan, report)))
    }

    /// The caller's verdict on the level order `auto` left to it
    /// ([`ThrottleOptions::caller_renumbers`](warpfit_runtime::schedule::ThrottleOptions::caller_renumbers)):
    /// its renumbered launch ran slower than `org`'s timed run. The order
    /// is dropped, the handle goes on with `org`, and the plan cache's
    /// entry (where the options keep one) says `org` from now on, so that
    /// a later run over the same arrays does not renumber by an order found
    /// slower. Does nothing where no order was left to the caller.
    ///
    /// # Errors
    /// Device errors while keying the entry. A write that fails is not an
    /// error: the report's `model.cache_error` says why.
    pub fn reject_level_order(&mut self) -> Result<()> {
        if self.device_choice != Some(DevicePlan::Levels) || self.layouts.caller_order.is_none() {
            return Ok(());
        }
        self.layouts.caller_order = None;
        self.device_choice = Some(DevicePlan::Org);
        self.report.remap_order = None;
        if let Some(m) = self.report.model.as_mut() {
            m.reason
                .push_str("; the caller's renumbered launch ran slower than org's: org kept");
        }
        let Some(dev) = self.device.cuda().cloned() else {
            return Ok(());
        };
        if !self.options.plan_cache {
            return Ok(());
        }
        if let Some(k) = key(self, &dev)? {
            // The order's own write may still be under way; it is kept
            // beside an entry that will not read it. Its failure, if any,
            // is already in the report's `cache_error`.
            let _ = self.wait_for_plan_cache();
            if let Err(e) = store(&dev, &k, DevicePlan::Org) {
                if let Some(m) = self.report.model.as_mut() {
                    m.cache_error = Some(e.to_string());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::test_files::{names_in, write_aged};
    use super::*;

    #[test]
    fn entries_round_trip_and_bad_ones_are_refused() {
        for plan in [
            DevicePlan::Org,
            DevicePlan::Levels,
            DevicePlan::ColumnBlocks { k: 6 },
        ] {
            let text = encode(0xabc, plan);
            assert_eq!(decode(&text, 0xabc), Ok(plan), "{text}");
            // Another key: stale.
            assert!(decode(&text, 0xabd).unwrap_err().contains("another key"));
        }
        let good = encode(7, DevicePlan::ColumnBlocks { k: 6 });
        // A flipped character, a cut, a foreign file: never trusted.
        let flipped = good.replace("columns 6", "columns 7");
        assert!(decode(&flipped, 7).unwrap_err().contains("checksum"));
        assert!(decode(&good[..good.len() - 5], 7).is_err());
        assert!(decode("hello", 7).is_err());
        assert!(decode("", 7).is_err());
        // Well formed, checksummed, but out of range.
        let body = "key 0000000000000007\nplan columns 99\n";
        let forged = format!(
            "{PLAN_FORMAT}\n{body}sum {:016x}\n",
            fnv1a(&[body.as_bytes()])
        );
        assert!(decode(&forged, 7).unwrap_err().contains("out of range"));
    }

    #[test]
    fn entries_are_read_from_disk_and_an_oversized_one_is_not() {
        let dir = std::env::temp_dir().join(format!("warpfit-plan-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.plan");
        std::fs::write(&good, encode(9, DevicePlan::Levels)).unwrap();
        assert_eq!(read_entry(&good, 9), Some(DevicePlan::Levels));
        assert_eq!(read_entry(&good, 8), None);
        // A valid entry followed by megabytes: refused without reading it all.
        let big = dir.join("big.plan");
        let mut text = encode(9, DevicePlan::Levels).into_bytes();
        text.resize(4 << 20, b' ');
        std::fs::write(&big, text).unwrap();
        assert_eq!(read_entry(&big, 9), None);
        assert_eq!(read_entry(&dir.join("missing.plan"), 9), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_folder_keeps_the_newest_entries() {
        let dir = std::env::temp_dir().join(format!("warpfit-plans-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..5u64 {
            let text = encode(i, DevicePlan::Org);
            write_aged(&dir, &format!("{i:016x}.plan"), text.as_bytes(), i);
        }
        std::fs::write(dir.join("other.txt"), "kept").unwrap();
        trim(&dir, 3);
        assert_eq!(
            names_in(&dir),
            vec![
                "0000000000000002.plan",
                "0000000000000003.plan",
                "0000000000000004.plan",
                "other.txt"
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Files with set modification times, for the trims of the plan cache's
/// folder and of its kept orders.
#[cfg(test)]
pub(in crate::throttle) mod test_files {
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    /// Writes `bytes` to `name` in `dir`, modified `age` seconds after a
    /// fixed time (a larger `age` is newer).
    pub(in crate::throttle) fn write_aged(dir: &Path, name: &str, bytes: &[u8], age: u64) {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1000 + age))
            .unwrap();
    }

    /// The names of the files in `dir`, sorted.
    pub(in crate::throttle) fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}
