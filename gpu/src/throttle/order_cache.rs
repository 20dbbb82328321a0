//! The level order kept beside its plan cache entry (`<key>.order`), so
//! that a rerun whose cached decision is the level order reads the order
//! back instead of making it again: on a graph of long diameter the
//! order's rounds are most of a rerun's rebuild (BENCHMARKS.md, "Plans
//! remade from the cache"), and reading 4 bytes a row is cheaper.
//!
//! The file is a checksummed header naming the plan cache key, the row
//! count and a digest of the words (`plan.cuh`'s `hash_words`, taken on
//! the device when written and again when read), then the order's words,
//! little-endian (`order[new] = old`). An order read back is used only if
//! its header, length and digest match and it is a permutation of the rows
//! (checked on the device, `invert_order`); anything else is made again,
//! never trusted. The folder's orders hold at most [`MAX_ORDER_BYTES`]
//! together, the oldest going first.
//!
//! When the decision is made the words are copied on the device; a thread
//! of their own reads the copy back over a stream of its own, one pinned
//! chunk at a time, straight into the file, so that neither the launch that
//! decided nor the ones after it wait for the copy or the disk, and the
//! host never holds the whole order. The handle waits for that thread when
//! it is dropped ([`PendingWrite`]), so a finished run has written its
//! order; `Throttled::wait_for_plan_cache` waits for it and says why the
//! write failed, where it did.

use crate::compile::disk_cache::{prepare_dir, write_atomically_with};
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::errors::cuda_err;
use crate::engines::plan_kernels::plan_kernels;
use crate::throttle::device_plan::copy_u32;
use crate::throttle::handle::Throttled;
use crate::throttle::layout_set::LevelOrderBuffers;
use crate::throttle::pending_write::{PendingWrite, WriteOutcome};
use crate::throttle::plan_cache::{checked_body, checksummed, PlanKey};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use warpfit_runtime::{Error, Result};

/// First line of every kept order.
pub(crate) const ORDER_FORMAT: &str = "warpfit-level-order 1";

/// The most bytes the folder's kept orders hold together (a row is 4
/// bytes: 2^28 rows); the oldest go first, and an order larger than this
/// is not kept.
pub(crate) const MAX_ORDER_BYTES: u64 = 1 << 30;

/// A header is five short lines: well under this.
const HEADER_MAX: usize = 256;

/// The seed of the words' digest (the plan cache's key uses others).
const DIGEST_SEED: u64 = 0x5eed_0003;

/// Bytes a reader reads from the file and uploads at a time, through one
/// pinned buffer of its own: small, because pinning costs in proportion to
/// the bytes pinned (BENCHMARKS.md, "A level order kept beside the plan
/// cache").
const CHUNK: usize = 1 << 20;

/// Threads reading a kept order back: one thread's copies out of the page
/// cache take longer than the rest of a rerun's rebuild on a large graph
/// (BENCHMARKS.md, "A level order kept beside the plan cache").
const READERS: usize = 4;

/// The header of an order of `rows` rows for `key` whose words digest to
/// `digest`.
pub(crate) fn header(key: u64, rows: usize, digest: u64) -> String {
    checksummed(
        ORDER_FORMAT,
        &format!("key {key:016x}\nrows {rows}\ndigest {digest:016x}\n"),
    )
}

/// Where the header at the start of `head` ends (after its fifth line).
fn header_end(head: &[u8]) -> std::result::Result<usize, String> {
    head.iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .nth(4)
        .map(|(i, _)| i + 1)
        .ok_or_else(|| "no complete header".to_string())
}

/// The words' digest a header names for `key` and `rows`, or why it is
/// not trusted.
pub(crate) fn parse_header(text: &str, key: u64, rows: usize) -> std::result::Result<u64, String> {
    let body = checked_body(text, ORDER_FORMAT)?;
    let mut lines = body.lines();
    if lines.next() != Some(format!("key {key:016x}").as_str()) {
        return Err("written for another key".into());
    }
    if lines.next() != Some(format!("rows {rows}").as_str()) {
        return Err(format!("not an order of {rows} rows"));
    }
    lines
        .next()
        .and_then(|l| l.strip_prefix("digest "))
        .and_then(|d| u64::from_str_radix(d, 16).ok())
        .ok_or_else(|| "no digest".to_string())
}

/// The digest of `n` words at `words` on `dev` (waits).
fn digest(dev: &CudaDevice, words: u64, n: usize) -> Result<u64> {
    let out = DeviceBuffer::<u64>::zeros(dev, 1)?;
    plan_kernels(dev)?.hash_words(dev, words, n, DIGEST_SEED, out.device_ptr(dev))?;
    Ok(out.to_vec(dev)?.first().copied().unwrap_or(0))
}

/// Wall time of each step of reading a kept order back, in order.
pub(in crate::throttle) type Steps = Vec<(&'static str, Duration)>;

/// Records the time since the last lap under `name`.
fn lap(steps: &mut Steps, last: &mut Instant, name: &'static str) {
    steps.push((name, last.elapsed()));
    *last = Instant::now();
}

/// The level order of `rows` rows kept for `key`, on the device with its
/// inverse (`position[order[r]] = r`) and the steps it took, if the file
/// holds one that passes every check; otherwise why it is not used (no
/// file, or one not trusted).
pub(in crate::throttle) fn load(
    dev: &CudaDevice,
    key: &PlanKey,
    rows: usize,
) -> std::result::Result<(DeviceBuffer<u32>, DeviceBuffer<u32>, Steps), String> {
    let mut steps = Steps::new();
    let mut last = Instant::now();
    let path = key.order_path();
    let order = read(dev, &path, key.key(), rows, &mut steps, &mut last)
        .map_err(|why| format!("the level order kept in {}: {why}", path.display()))?;
    let device = |e: warpfit_runtime::Error| format!("inverting the kept level order: {e}");
    let position = DeviceBuffer::<u32>::zeros(dev, rows).map_err(device)?;
    plan_kernels(dev)
        .map_err(device)?
        .invert_order(dev, order.device_ptr(dev), rows, position.device_ptr(dev))
        .map_err(device)?;
    lap(&mut steps, &mut last, "order inverted");
    Ok((order, position, steps))
}

/// The words of the order at `path`, uploaded, where its header is for
/// `key` and `rows` rows, its length is the header's and its words match
/// their digest.
fn read(
    dev: &CudaDevice,
    path: &Path,
    key: u64,
    rows: usize,
    steps: &mut Steps,
    last: &mut Instant,
) -> std::result::Result<DeviceBuffer<u32>, String> {
    let io = |e: std::io::Error| e.to_string();
    let bytes = rows
        .checked_mul(4)
        .filter(|&b| b > 0 && b as u64 <= MAX_ORDER_BYTES)
        .ok_or_else(|| format!("no order of {rows} rows is kept"))?;
    let mut file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut head = vec![0u8; HEADER_MAX.min(usize::try_from(len).unwrap_or(HEADER_MAX))];
    file.read_exact(&mut head).map_err(io)?;
    let end = header_end(&head)?;
    let text = std::str::from_utf8(&head[..end]).map_err(|e| e.to_string())?;
    let want = parse_header(text, key, rows)?;
    if len != (end + bytes) as u64 {
        return Err(format!(
            "{len} bytes, where the header says {}",
            end + bytes
        ));
    }
    let order = DeviceBuffer::<u32>::zeros(dev, rows).map_err(|e| e.to_string())?;
    let base = order.device_ptr(dev);
    lap(steps, last, "order opened");
    upload_from(dev, path, end as u64, (base, bytes), steps)?;
    *last = Instant::now();
    let got = digest(dev, base, rows).map_err(|e| e.to_string())?;
    lap(steps, last, "order digest");
    if got != want {
        return Err("the words do not match their digest".into());
    }
    Ok(order)
}

/// Reads the `bytes` bytes of the file at `path` from `start` into device
/// memory at `base`, in chunks spread over [`READERS`] threads, each
/// reading into a pinned chunk of its own and copying it to the device (a
/// pageable copy would cost a second pass over the bytes on the host and
/// hold the driver up). Each reader opens the file itself: a file replaced
/// meanwhile fails the digest.
fn upload_from(
    dev: &CudaDevice,
    path: &Path,
    start: u64,
    (base, bytes): (u64, usize),
    steps: &mut Steps,
) -> std::result::Result<(), String> {
    let size = CHUNK.min(bytes);
    let chunks = bytes.div_ceil(size);
    let readers = READERS.min(chunks);
    let (ctx, stream) = (dev.context(), dev.stream());
    let began = Instant::now();
    let outcomes = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..readers)
            .map(|reader| {
                scope.spawn(move || {
                    let mine = (reader..chunks).step_by(readers).map(|c| {
                        let at = c * size;
                        (at, size.min(bytes - at))
                    });
                    read_chunks(ctx, stream, path, (start, base, size), mine)
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|r| r.join().unwrap_or_else(|_| Err("a reader panicked".into())))
            .collect::<Vec<_>>()
    });
    let mut pinned = Duration::ZERO;
    for outcome in outcomes {
        pinned = pinned.max(outcome?);
    }
    steps.push(("order chunks pinned", pinned));
    steps.push((
        "order read and uploaded",
        began.elapsed().saturating_sub(pinned),
    ));
    Ok(())
}

/// One reader of [`upload_from`]: the chunks `(offset, length)` of the
/// words (`start` bytes into the file at `path`) read into a pinned chunk
/// of `size` bytes of its own and copied to `base + offset` on `stream`,
/// each copy waited for before the chunk is read into again. The time its
/// chunk took to pin.
fn read_chunks(
    ctx: &Arc<cudarc::driver::CudaContext>,
    stream: &Arc<cudarc::driver::CudaStream>,
    path: &Path,
    (start, base, size): (u64, u64, usize),
    mine: impl Iterator<Item = (usize, usize)>,
) -> std::result::Result<Duration, String> {
    let cuda = |e: cudarc::driver::DriverError| format!("reading a kept level order back: {e:?}");
    let io = |e: std::io::Error| e.to_string();
    ctx.bind_to_thread().map_err(cuda)?;
    let mut file = std::fs::File::open(path).map_err(io)?;
    let began = Instant::now();
    // SAFETY: the chunk is written by `read_exact` before a copy reads it.
    let mut chunk = unsafe { ctx.alloc_pinned_with_flags::<u8>(size, 0) }.map_err(cuda)?;
    let pinned = began.elapsed();
    let copy_all = || -> std::result::Result<(), String> {
        for (at, n) in mine {
            let host = chunk.as_mut_slice().map_err(cuda)?;
            file.seek(SeekFrom::Start(start + at as u64)).map_err(io)?;
            file.read_exact(&mut host[..n]).map_err(io)?;
            // SAFETY: the device memory at `base` holds the words, and
            // `at + n` is within them; the chunk is pinned and is not
            // written again before this copy has completed.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    base + at as u64,
                    &host[..n],
                    stream.cu_stream(),
                )
            }
            .map_err(cuda)?;
            stream
                .record_event(None)
                .and_then(|copied| copied.synchronize())
                .map_err(cuda)?;
        }
        Ok(())
    };
    let copied = copy_all();
    // The chunk is freed only after every copy from it has completed,
    // whether or not all were made.
    stream.synchronize().map_err(cuda)?;
    copied.map(|()| pinned)
}

/// Copies `order` (`rows` words on the device) on the device, then
/// downloads the copy into the file for `key` on a thread of its own, over
/// a stream of its own, so that the launches go on meanwhile; the thread
/// says why the write failed, where it did. An order larger than
/// [`MAX_ORDER_BYTES`] is not kept.
///
/// # Errors
/// A device error while taking the digest or the copy.
fn store(
    dev: &CudaDevice,
    key: &PlanKey,
    order: &DeviceBuffer<u32>,
    rows: usize,
) -> Result<PendingWrite> {
    if rows == 0 || order.len() < rows || 4 * rows as u64 > MAX_ORDER_BYTES {
        return Ok(PendingWrite::default());
    }
    let sum = digest(dev, order.device_ptr(dev), rows)?;
    let copy = copy_u32(dev, order.device_ptr(dev), rows)?;
    let from = copy.device_ptr(dev);
    // A stream that waits for the copy, and then does not hold the
    // launches up.
    let side = dev
        .stream()
        .fork()
        .map_err(cuda_err("making a stream to read a level order back"))?;
    let (path, dir, key) = (key.order_path(), key.dir().to_path_buf(), key.key());
    let writing = std::thread::spawn(move || -> WriteOutcome {
        let why = |e: String| format!("keeping the level order in {}: {e}", path.display());
        prepare_dir(&dir).map_err(why)?;
        write_atomically_with(&path, |file| {
            file.write_all(header(key, rows, sum).as_bytes())?;
            download_into(&side, from, 4 * rows, file)
        })
        .map_err(|e| why(e.to_string()))?;
        drop(copy);
        trim(&dir, MAX_ORDER_BYTES);
        Ok(())
    });
    Ok(PendingWrite::of(writing))
}

/// Writes the `bytes` bytes at `from` on the device to `out`, read back
/// over `side` through one pinned chunk at a time: a copy into pageable
/// memory holds the driver up, and with it the launches of other threads,
/// for tens of milliseconds (a 64 MiB order: BENCHMARKS.md, "A level order
/// kept beside the plan cache"); and only the chunk is held on the host,
/// never the whole order. The device's words are little-endian, as the
/// file's are.
fn download_into(
    side: &cudarc::driver::CudaStream,
    from: u64,
    bytes: usize,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let cuda = |e: cudarc::driver::DriverError| {
        std::io::Error::other(format!("reading the order back from the device: {e:?}"))
    };
    side.context().bind_to_thread().map_err(cuda)?;
    let size = CHUNK.min(bytes);
    // SAFETY: each chunk is read only after the copy into it completed.
    let mut chunk =
        unsafe { side.context().alloc_pinned_with_flags::<u8>(size, 0) }.map_err(cuda)?;
    let mut done = 0;
    while done < bytes {
        let n = size.min(bytes - done);
        // SAFETY: the device memory at `from` holds `bytes` bytes, and
        // `done + n <= bytes`; the stream is waited for before the chunk
        // is read or written again, or freed.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(
                &mut chunk.as_mut_slice().map_err(cuda)?[..n],
                from + done as u64,
                side.cu_stream(),
            )
        }
        .map_err(cuda)?;
        side.synchronize().map_err(cuda)?;
        out.write_all(&chunk.as_slice().map_err(cuda)?[..n])?;
        done += n;
    }
    Ok(())
}

/// Removes the oldest kept orders (by modification time) until the rest
/// hold at most `budget` bytes; best effort.
pub(crate) fn trim(dir: &Path, budget: u64) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut orders: Vec<(std::time::SystemTime, u64, std::path::PathBuf)> = read
        .filter_map(|e| {
            let e = e.ok()?;
            let path = e.path();
            if path.extension()? != "order" {
                return None;
            }
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), path))
        })
        .collect();
    // Newest first: kept while they fit.
    orders.sort_by_key(|o| std::cmp::Reverse(o.0));
    let mut held = 0u64;
    for (_, len, path) in orders {
        held = held.saturating_add(len);
        if held > budget {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Throttled {
    /// Where the plan cache's decision is the level order: its layout made
    /// from the order kept beside the entry, if one is there and passes
    /// every check. The steps reading it took, or why it was not used (the
    /// layout is then made with a new order).
    ///
    /// # Errors
    /// A device error while building the layout from a trusted order.
    pub(in crate::throttle) fn levels_from_kept_order(
        &mut self,
        dev: &CudaDevice,
        key: &PlanKey,
    ) -> Result<std::result::Result<Steps, String>> {
        let shape = match self.device_shape() {
            Ok(shape) => shape,
            Err(e) => return Ok(Err(format!("no kept level order is read: {e}"))),
        };
        let (order, position, steps) = match load(dev, key, shape.n) {
            Ok(loaded) => loaded,
            Err(why) => return Ok(Err(why)),
        };
        if self.options.caller_renumbers {
            self.layouts.caller_order = Some(LevelOrderBuffers { order, position });
            return Ok(Ok(steps));
        }
        let (layout, tables) = self.layout_in_order(dev, shape, order, position)?;
        self.layouts.device = Some(Arc::new(layout));
        self.layouts.tables = Some(tables);
        Ok(Ok(steps))
    }

    /// Waits for the plan cache's writes still in progress (the level
    /// order kept beside an entry is written on a thread of its own while
    /// the launches go on), so that a run after this one finds them. Where
    /// the write failed, the error says why, and so does the report's
    /// `model.cache_error`; the launches are not affected. Dropping the
    /// handle waits too, without saying.
    ///
    /// # Errors
    /// [`Error::Unavailable`]: the order could not be kept (its folder
    /// cannot be made or written, or the device failed reading it back).
    pub fn wait_for_plan_cache(&mut self) -> Result<()> {
        self.order_write.wait().map_err(|reason| {
            if let Some(m) = self.report.model.as_mut() {
                m.cache_error.get_or_insert_with(|| reason.clone());
            }
            Error::Unavailable {
                what: format!("the plan cache of kernel `{}`", self.spec.name),
                reason,
            }
        })
    }

    /// Keeps the chosen level order beside the plan cache's entry for
    /// `key` (the download here, the write on a thread of its own); why
    /// it could not, where it could not.
    pub(in crate::throttle) fn keep_level_order(
        &mut self,
        dev: &CudaDevice,
        key: &PlanKey,
    ) -> Option<String> {
        let (order, _) = self.layouts.level_order()?;
        match store(dev, key, order, self.n_tasks) {
            Ok(w) => {
                self.order_write = w;
                None
            }
            Err(e) => Some(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::throttle::plan_cache::test_files::{names_in, write_aged};

    #[test]
    fn headers_round_trip_and_bad_ones_are_refused() {
        let text = header(0xabc, 1000, 0x1234);
        assert_eq!(header_end(text.as_bytes()), Ok(text.len()));
        assert_eq!(parse_header(&text, 0xabc, 1000), Ok(0x1234));
        assert!(parse_header(&text, 0xabd, 1000)
            .unwrap_err()
            .contains("another key"));
        assert!(parse_header(&text, 0xabc, 999)
            .unwrap_err()
            .contains("999 rows"));
        let flipped = text.replace("rows 1000", "rows 1001");
        assert!(parse_header(&flipped, 0xabc, 1001)
            .unwrap_err()
            .contains("checksum"));
        assert!(parse_header("", 0xabc, 1000).is_err());
        assert!(parse_header("warpfit-plan-cache 1\n", 0xabc, 1000).is_err());
        assert!(header_end(b"a\nb\nc\n").is_err());
        // A header, then words: the header ends where the words begin.
        let mut file = header(7, 2, 9).into_bytes();
        let end = file.len();
        file.extend([1u8, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(header_end(&file), Ok(end));
    }

    #[test]
    fn the_folder_keeps_the_newest_orders_within_its_budget() {
        let dir = std::env::temp_dir().join(format!("warpfit-orders-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..5u64 {
            write_aged(&dir, &format!("{i:016x}.order"), &[0u8; 100], i);
        }
        std::fs::write(dir.join("0000000000000000.plan"), "kept").unwrap();
        trim(&dir, 250);
        assert_eq!(
            names_in(&dir),
            vec![
                "0000000000000000.plan",
                "0000000000000003.order",
                "0000000000000004.order",
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_order_is_streamed_into_its_file_or_leaves_none() {
        let dir = std::env::temp_dir().join(format!("warpfit-order-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("0000000000000001.order");
        // Written in pieces: the file holds them all, and no temporary.
        write_atomically_with(&path, |f| {
            f.write_all(header(1, 2, 3).as_bytes())?;
            f.write_all(&[1, 0, 0, 0])?;
            f.write_all(&[0, 0, 0, 0])
        })
        .unwrap();
        let mut want = header(1, 2, 3).into_bytes();
        want.extend([1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(std::fs::read(&path).unwrap(), want);
        // A write that fails halfway leaves the old file and no temporary.
        let failed = write_atomically_with(&path, |f| {
            f.write_all(b"half")?;
            Err(std::io::Error::other("the device failed"))
        });
        assert!(failed.unwrap_err().to_string().contains("device failed"));
        assert_eq!(std::fs::read(&path).unwrap(), want);
        assert_eq!(names_in(&dir), vec!["0000000000000001.order"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
