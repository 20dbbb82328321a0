//! A breadth-first (Cuthill–McKee) order of a square pattern already on a
//! GPU, and the pattern renumbered by it (`gpu/cuda/levels.cuh`).
//!
//! [`level_order`] gives exactly `warpfit_runtime::partition::level_order`'s
//! order: levels from a root, each level's vertices in the order of their
//! first parent, each parent's children in the order of its row, one
//! component after the other, each rooted at its smallest unnumbered
//! vertex. On the host every edge of a randomly numbered mesh is a cache
//! miss; here a level is one launch over the frontier and the host only
//! reads the frontier's end every [`ROUNDS_PER_CHECK`] levels (fewer at
//! first), so the time
//! follows the number of levels: tens to a few thousand for meshes and
//! grids. One level per round makes a graph of long diameter (a path, a
//! long chain of small components) slow here: [`level_order_within`] gives
//! up after a number of rounds, for a caller that can order on the host
//! instead.
//!
//! [`renumber`](crate::levels::renumber) (`level_renumber.rs`) copies
//! every row to its new place with its columns renumbered (entries in the
//! order stored, as `Remapping::apply_csr` keeps them), from the arrays on
//! the device: nothing crosses the bus but one word of error flag.
//!
//! # Examples
//! ```no_run
//! use warpfit_gpu::{levels, Device};
//! # fn main() -> warpfit_gpu::Result<()> {
//! let device = Device::open_cuda(0)?;
//! // The path 0 - 2 - 1 - 3, stored out of order.
//! let row_ptr = device.upload(&[0u32, 1, 3, 5, 6])?;
//! let col_idx = device.upload(&[2u32, 2, 3, 0, 1, 1])?;
//! let order = levels::level_order(&device, &row_ptr, &col_idx, 0)?;
//! assert_eq!(order.order.to_vec()?, vec![0, 2, 1, 3]);
//! let a = levels::DeviceCsr { row_ptr, col_idx, values: device.upload(&[1.0f64; 6])? };
//! let b = levels::renumber(&device, &order.order, &order.position, &a)?;
//! assert_eq!(b.col_idx.to_vec()?, vec![1, 0, 2, 1, 3, 2]);
//! # Ok(())
//! # }
//! ```

use crate::abi::LEVEL_TILE;
use crate::compile::device_modules::{load_function, load_unit};
use crate::compile::units::levels_unit;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::{CudaDevice, DeviceExtension};
use crate::driver::device::Device;
use crate::engines::gather_layouts::{fill_blocks, launch_words};
pub use crate::engines::level_roots::spread_roots;
pub(crate) use crate::engines::level_roots::Roots;
use crate::launch::device_vec::DeviceVec;
use crate::spec::Scalar;
use cudarc::driver::{CudaFunction, CudaModule};
use std::sync::Arc;
use warpfit_runtime::{Error, Result};

/// Levels enqueued between two reads of the frontier's end, at most: the
/// host round trip is paid once per this many levels, and at most this
/// many rounds after the last do nothing.
pub const ROUNDS_PER_CHECK: usize = 64;

/// Levels enqueued before the first read: the batches double from here up
/// to [`ROUNDS_PER_CHECK`]. An order given up early (a small world's
/// fourth level is already too wide) then does not pay for 60 empty
/// rounds, and a long order reads the device a few
/// times more.
pub const FIRST_ROUNDS_PER_CHECK: usize = 4;

/// Rounds after which the tiles' look-back words are zeroed: fewer than
/// the 2^31 - 1 stamps (`LOOKBACK_STAMPS` in scan.cuh), so a word left
/// from an earlier round never carries the current round's stamp.
const STAMPS_BETWEEN_RESETS: usize = 1 << 30;

/// The words of the device's control block (`levels::Ctl` in levels.cuh).
pub(crate) const CTL_START: usize = 2;
pub(crate) const CTL_END: usize = 3;
pub(crate) const CTL_BAD: usize = 5;
pub(crate) const CTL_WIDEST: usize = 6;
pub(crate) const CTL_PROJECTED: usize = 8;
pub(crate) const CTL_WORDS: usize = 12;

/// How a level order made on the device ended (`level_order_into`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelRun {
    /// Every row numbered, in `rounds` rounds; the widest level held
    /// `widest` rows.
    Done { rounds: usize, widest: usize },
    /// Not finished within the rounds allowed.
    TooManyRounds,
    /// A level of `widest` rows, more than the width allowed: given up as
    /// soon as it was found.
    TooWide { widest: usize },
    /// A level of `widest` rows that grew so fast over the one before it,
    /// as that one did (`LEVEL_GROWTH` times or more, levels.cuh), that the
    /// next, about `projected` rows, would pass the width allowed: given up
    /// before expanding it.
    Expanding { widest: usize, projected: usize },
}

/// A breadth-first order made on the device by [`level_order`].
pub struct DeviceLevelOrder {
    /// `order[new] = old`.
    pub order: DeviceVec<u32>,
    /// `position[old] = new`, the inverse of `order`.
    pub position: DeviceVec<u32>,
    /// Rounds enqueued: one per level and per component root, and up to
    /// [`ROUNDS_PER_CHECK`] that found nothing left to do.
    pub rounds: usize,
}

/// The level library's kernels on one device.
pub(crate) struct LevelKernels {
    _module: Arc<CudaModule>,
    reset: CudaFunction,
    start: CudaFunction,
    claim: CudaFunction,
    round: CudaFunction,
    pub(super) lengths: CudaFunction,
    pub(super) scan_carry: CudaFunction,
    pub(super) offsets: CudaFunction,
    /// By element width 1, 2, 4, 8 bytes.
    pub(super) rows: [CudaFunction; 4],
}

impl DeviceExtension for LevelKernels {
    /// Compiles (or reads from the kernel cache) and loads the library.
    fn load(dev: &CudaDevice) -> Result<Self> {
        let module = load_unit(dev, "levels", &levels_unit())?;
        let f = |entry: &str| load_function(&module, "levels", entry);
        Ok(LevelKernels {
            reset: f("wf_levels_reset")?,
            start: f("wf_levels_start")?,
            claim: f("wf_levels_claim")?,
            round: f("wf_levels_round")?,
            lengths: f("wf_renumber_lengths")?,
            scan_carry: f("wf_scan_carry")?,
            offsets: f("wf_renumber_offsets")?,
            rows: [
                f("wf_renumber_rows_1")?,
                f("wf_renumber_rows_2")?,
                f("wf_renumber_rows_4")?,
                f("wf_renumber_rows_8")?,
            ],
            _module: module,
        })
    }
}

/// Compiles (or reads from the kernel cache) and loads the level kernels
/// on `device`, so that a later [`level_order`] or [`renumber`](crate::levels::renumber) does not
/// pay for it. Done by the first of them otherwise.
///
/// # Errors
/// `device` is not a CUDA device; NVRTC or the module load fails.
pub fn load(device: &Device) -> Result<()> {
    cuda_of(device, "the device level order")?.extension::<LevelKernels>()?;
    Ok(())
}

/// Enqueues a level kernel.
pub(super) fn launch(
    dev: &CudaDevice,
    function: &CudaFunction,
    blocks: u32,
    what: &str,
    args: &[u64],
) -> Result<()> {
    // SAFETY: every kernel of levels.cuh takes 64-bit pointers and counts
    // in the order the callers below pass them; the pointers are device
    // addresses of live buffers of at least the lengths the counts imply
    // (checked by the callers), and the kernels check every index they
    // read from those buffers before following it.
    unsafe { launch_words(dev, function, blocks, what, args) }
}

/// The CUDA device of `device`, or an error naming `what` needs one.
pub(super) fn cuda_of<'d>(device: &'d Device, what: &str) -> Result<&'d CudaDevice> {
    device.cuda().ok_or_else(|| {
        Error::invalid(format!(
            "{what} runs on a CUDA device; on the CPU use warpfit_runtime::partition::level_order"
        ))
    })
}

/// The device address of `v`, which must live on `dev`.
pub(super) fn on<T: Scalar>(v: &DeviceVec<T>, dev: &CudaDevice, what: &str) -> Result<u64> {
    match (v.cuda_device(), v.cuda_ptr()) {
        (Some(d), Some(ptr)) if d.ordinal() == dev.ordinal() => Ok(ptr),
        _ => Err(Error::invalid(format!(
            "{what} must be on CUDA device {} (it is {})",
            dev.ordinal(),
            v.location()
        ))),
    }
}

/// The rows `n` and entries `nnz` of a pattern given as `row_ptr`
/// (`n + 1` offsets) and `col_idx`, both below `u32::MAX`.
pub(super) fn pattern_size(
    row_ptr_len: usize,
    col_len: usize,
    what: &str,
) -> Result<(usize, usize)> {
    let n = row_ptr_len.checked_sub(1).ok_or_else(|| {
        Error::invalid(format!(
            "{what}: row_ptr is empty; a matrix of n rows has n + 1 offsets"
        ))
    })?;
    if n >= u32::MAX as usize || col_len > u32::MAX as usize {
        return Err(Error::invalid(format!(
            "{what}: {n} rows and {col_len} entries do not fit 32-bit indices"
        )));
    }
    Ok((n, col_len))
}

/// The breadth-first (Cuthill–McKee) order of the square pattern
/// (`row_ptr`, `col_idx`) from row `root`, made on the device the arrays
/// live on; equal to `warpfit_runtime::partition::level_order`'s. Waits
/// for the device every [`ROUNDS_PER_CHECK`] levels (after 4, 8, 16 and 32
/// first: [`FIRST_ROUNDS_PER_CHECK`]) and at the end.
///
/// # Errors
/// `device` is not a CUDA device, or an array is not on it; `root` is not
/// a row; device memory for the order, its inverse and about 8 bytes a row of
/// scratch; an offset or column out of range (found on the device).
pub fn level_order(
    device: &Device,
    row_ptr: &DeviceVec<u32>,
    col_idx: &DeviceVec<u32>,
    root: usize,
) -> Result<DeviceLevelOrder> {
    level_order_within(device, row_ptr, col_idx, root, usize::MAX)?.ok_or_else(|| {
        Error::invalid("level order: an order without a round budget was not finished")
    })
}

/// [`level_order`], given up (`Ok(None)`) when it is not finished after
/// `max_rounds` rounds (counted in whole batches, of at most
/// [`ROUNDS_PER_CHECK`]): one
/// round a level, so a graph of long diameter can be ordered on the host
/// instead at a bounded cost here.
///
/// # Errors
/// As [`level_order`].
pub fn level_order_within(
    device: &Device,
    row_ptr: &DeviceVec<u32>,
    col_idx: &DeviceVec<u32>,
    root: usize,
    max_rounds: usize,
) -> Result<Option<DeviceLevelOrder>> {
    let root = Roots {
        first: root,
        count: 1,
    };
    from_roots_within(device, row_ptr, col_idx, root, max_rounds)
}

/// [`level_order`] from `roots` rows spread over the pattern
/// ([`spread_roots`]`(n, root, roots)`, numbered first in that order):
/// `warpfit_runtime::partition::level_order_from_roots`'s order from those
/// rows. A graph of long diameter takes far fewer rounds (a geometric
/// graph of 2^24 rows from 128 roots: about a tenth).
///
/// # Errors
/// As [`level_order`]; `roots` is 0.
///
/// # Example
/// ```no_run
/// # fn main() -> warpfit_gpu::Result<()> {
/// use warpfit_gpu::{levels, Device};
/// let device = Device::open_cuda(0)?;
/// // The path 0 - 1 - 2 - 3 - 4 - 5 from roots 0 and 3 (n / 2 apart).
/// let row_ptr = device.upload(&[0u32, 1, 3, 5, 7, 9, 10])?;
/// let col_idx = device.upload(&[1u32, 0, 2, 1, 3, 2, 4, 3, 5, 4])?;
/// let order = levels::level_order_from_roots(&device, &row_ptr, &col_idx, 0, 2)?;
/// assert_eq!(order.order.to_vec()?, vec![0, 3, 1, 2, 4, 5]);
/// # Ok(())
/// # }
/// ```
pub fn level_order_from_roots(
    device: &Device,
    row_ptr: &DeviceVec<u32>,
    col_idx: &DeviceVec<u32>,
    root: usize,
    roots: usize,
) -> Result<DeviceLevelOrder> {
    let roots = Roots::spread(root, roots)?;
    from_roots_within(device, row_ptr, col_idx, roots, usize::MAX)?.ok_or_else(|| {
        Error::invalid("level order: an order without a round budget was not finished")
    })
}

/// How the level order from `roots` rows spread over the pattern ends when
/// it may make no level wider than `width_limit` rows: as the throttled
/// handle's `auto` runs it (the order itself is dropped). Not a public
/// API: the GPU tests check the give-up rules through it.
///
/// # Errors
/// As [`level_order`]; `roots` is 0.
#[doc(hidden)]
pub fn level_order_run(
    device: &Device,
    row_ptr: &DeviceVec<u32>,
    col_idx: &DeviceVec<u32>,
    roots: usize,
    width_limit: u64,
) -> Result<LevelRun> {
    let roots = Roots::spread(0, roots)?;
    let (run, _, _) = run_from_roots(device, row_ptr, col_idx, roots, usize::MAX, width_limit)?;
    Ok(run)
}

/// [`level_order_within`] from `roots`.
fn from_roots_within(
    device: &Device,
    row_ptr: &DeviceVec<u32>,
    col_idx: &DeviceVec<u32>,
    roots: Roots,
    max_rounds: usize,
) -> Result<Option<DeviceLevelOrder>> {
    let (run, order, position) =
        run_from_roots(device, row_ptr, col_idx, roots, max_rounds, u64::MAX)?;
    Ok(match run {
        LevelRun::Done { rounds, .. } => Some(DeviceLevelOrder {
            order,
            position,
            rounds,
        }),
        LevelRun::TooManyRounds | LevelRun::TooWide { .. } | LevelRun::Expanding { .. } => None,
    })
}

/// The level order from `roots` over the pattern of `row_ptr` and
/// `col_idx`, within `max_rounds` rounds and levels of `width_limit` rows
/// ([`level_order_into`]): how it ended, and the order and its inverse
/// (`n` each; complete where it is `Done`).
fn run_from_roots(
    device: &Device,
    row_ptr: &DeviceVec<u32>,
    col_idx: &DeviceVec<u32>,
    roots: Roots,
    max_rounds: usize,
    width_limit: u64,
) -> Result<(LevelRun, DeviceVec<u32>, DeviceVec<u32>)> {
    let dev = cuda_of(device, "the device level order")?;
    let (n, nnz) = pattern_size(row_ptr.len(), col_idx.len(), "level order")?;
    let ptr = on(row_ptr, dev, "the level order's row_ptr")?;
    let col = on(col_idx, dev, "the level order's col_idx")?;
    let order = device.alloc::<u32>(n)?;
    let position = device.alloc::<u32>(n)?;
    if n == 0 {
        let done = LevelRun::Done {
            rounds: 0,
            widest: 0,
        };
        return Ok((done, order, position));
    }
    let (o, p) = (on(&order, dev, "order")?, on(&position, dev, "position")?);
    let pattern = DevicePattern { ptr, col, n, nnz };
    let run = level_order_into(dev, pattern, roots, max_rounds, width_limit, o, p)?;
    Ok((run, order, position))
}

/// A square pattern on a device: `n + 1` u32 offsets at `ptr`, `nnz` u32
/// columns at `col`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DevicePattern {
    pub ptr: u64,
    pub col: u64,
    pub n: usize,
    pub nnz: usize,
}

/// [`level_order_within`] over device addresses from the `roots` rows
/// [`spread_roots`] gives (one: `root` alone), into `order` and
/// `position` (`n` u32 each, on `dev`), given up after `max_rounds` rounds
/// or at the first level of more than `width_limit` rows, or at a level
/// whose growth projects the next past it (a graph that expands that fast
/// has no locality a level order could bring out, and finds out in a few
/// levels rather than the whole order).
///
/// # Errors
/// As [`level_order`].
pub(crate) fn level_order_into(
    dev: &CudaDevice,
    pattern: DevicePattern,
    roots: Roots,
    max_rounds: usize,
    width_limit: u64,
    o: u64,
    p: u64,
) -> Result<LevelRun> {
    let Roots {
        first: root,
        count: roots,
    } = roots;
    let DevicePattern { ptr, col, n, nnz } = pattern;
    pattern_size(n + 1, nnz, "level order")?;
    if n == 0 {
        return Ok(LevelRun::Done {
            rounds: 0,
            widest: 0,
        });
    }
    if root >= n {
        return Err(Error::invalid(format!(
            "level order: root {root} is not a row of a {n}-row matrix"
        )));
    }
    let k = dev.extension::<LevelKernels>()?;
    let claims = DeviceBuffer::<u64>::zeros(dev, n)?;
    // A round's tiles publish their sums here (levels.cuh, `round`).
    let tiles = DeviceBuffer::<u64>::zeros(dev, n.div_ceil(LEVEL_TILE as usize))?;
    let ctl = DeviceBuffer::<u32>::zeros(dev, CTL_WORDS)?;
    let (c, ts, cl) = (
        claims.device_ptr(dev),
        tiles.device_ptr(dev),
        ctl.device_ptr(dev),
    );
    let (n64, nnz64) = (n as u64, nnz as u64);
    launch(dev, &k.reset, fill_blocks(dev), "reset", &[p, c, n64])?;
    let roots = roots.clamp(1, n) as u64;
    launch(
        dev,
        &k.start,
        1,
        "start",
        &[o, p, cl, n64, root as u64, roots, width_limit],
    )?;
    // The roots' claims; every later claim is made by the round before.
    launch(
        dev,
        &k.claim,
        fill_blocks(dev),
        "claim",
        &[ptr, col, n64, nnz64, o, p, c, cl],
    )?;
    let (mut rounds, mut batch) = (0usize, FIRST_ROUNDS_PER_CHECK);
    loop {
        if rounds / STAMPS_BETWEEN_RESETS != (rounds + batch) / STAMPS_BETWEEN_RESETS {
            // A look-back word is trusted by its round's stamp, and the
            // stamps repeat after 2^31 - 1 rounds.
            tiles.zero_async(dev)?;
        }
        for _ in 0..batch {
            launch(
                dev,
                &k.round,
                fill_blocks(dev),
                "round",
                &[ptr, col, n64, nnz64, o, p, c, ts, cl],
            )?;
        }
        rounds += batch;
        batch = (2 * batch).min(ROUNDS_PER_CHECK);
        let state = ctl.to_vec(dev)?;
        if state[CTL_BAD] != 0 {
            return Err(Error::invalid(
                "level order: an offset of row_ptr or a column of col_idx is out of range",
            ));
        }
        let widest = state[CTL_WIDEST] as usize;
        if widest as u64 > width_limit {
            return Ok(LevelRun::TooWide { widest });
        }
        if state[CTL_PROJECTED] != 0 {
            let projected = state[CTL_PROJECTED] as usize;
            return Ok(LevelRun::Expanding { widest, projected });
        }
        if state[CTL_START] as usize >= n && state[CTL_END] as usize >= n {
            return Ok(LevelRun::Done { rounds, widest });
        }
        if rounds >= max_rounds {
            return Ok(LevelRun::TooManyRounds);
        }
        // Every round numbers a vertex until all are: a round count past
        // that is a broken invariant, not a slow graph.
        if rounds > n + ROUNDS_PER_CHECK {
            return Err(Error::invalid(format!(
                "level order: {rounds} rounds numbered only {} of {n} rows",
                state[CTL_END]
            )));
        }
    }
}
