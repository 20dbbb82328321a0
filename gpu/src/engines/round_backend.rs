//! The CUDA round backend of the worklist drivers: [`CudaRounds`] (its
//! docs say how its rounds run) and the round kernels it loads.

use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::device::Device;
use crate::driver::errors::cuda_err;
use crate::engines::round_kernels::{RoundKernels, RECORD_WORDS, RING, STATE_WORDS};
use crate::launch::cuda_launch::CudaLaunch;
use crate::launch::device_vec::DeviceVec;
use crate::launch::device_worklist::DeviceWorklist;
use crate::launch::prepared_launch::PreparedLaunch;
use crate::spec::Scalar;
use cudarc::driver::{CudaEvent, CudaFunction};
use std::collections::{HashMap, VecDeque};
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;
use warpfit_runtime::worklist::drivers::{Outcome, RoundBackend};
use warpfit_runtime::{Error, Result, Tasks};

/// Rounds per host synchronisation that [`CudaRounds`] asks the driver for
/// unless told otherwise (`BENCHMARKS.md`, "Worklists and drivers (CUDA)").
pub(crate) const CUDA_ROUNDS_PER_SYNC: usize = 8;

/// What a kernel's closure gets to prepare its launch with.
///
/// Users meet it only as the argument of the closure they hand to
/// [`CudaRounds::frontier`] or [`CudaRounds::topology`]; it has no public
/// path of its own, since nothing else takes or returns one.
///
/// `'a` is the borrow of the backend's lists; `'k` is the backend's own
/// lifetime, which the arrays the closure captures outlive.
pub struct Bind<'a, 'k> {
    /// The launch's tasks: pass them as the generated `prepare`'s `tasks`.
    pub tasks: Tasks<'a>,
    /// The list the kernel pushes onto: its `&Worklist` parameter.
    pub out: &'a DeviceWorklist,
    /// One `u32`, the number of the round running (from 1), set on the
    /// device before the kernel runs.
    pub round: &'a DeviceVec<u32>,
    pub(super) _env: PhantomData<&'a &'k ()>,
}

impl std::fmt::Debug for Bind<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bind")
            .field("tasks", &self.tasks)
            .field("out", &self.out)
            .finish_non_exhaustive()
    }
}

pub(crate) type Binder<'k> = dyn for<'a> Fn(Bind<'a, 'k>) -> Result<PreparedLaunch<'a>> + 'k;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for u32 {}
}

/// The element types a near-far key array may have: `f32` (SSSP's
/// distances) and `u32`. Keys compare as `f64`, which holds both exactly.
/// Sealed and without a public path: [`CudaRounds::key`] takes either type.
pub trait RoundKey: Scalar + sealed::Sealed {
    /// The entry points' suffix (`wf_round_split_f32`, ...).
    const NAME: &'static str;
}

impl RoundKey for f32 {
    const NAME: &'static str = "f32";
}

impl RoundKey for u32 {
    const NAME: &'static str = "u32";
}

/// A bound key array and the kernels of its type.
pub(crate) struct Key {
    pub(super) ptr: u64,
    pub(super) split: CudaFunction,
    pub(super) min_key: CudaFunction,
}

/// Which prepared launch a round runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LaunchKey {
    /// The topology kernel over `0..n`, pushing onto list `out`.
    Topology { out: u8 },
    /// The frontier kernel over list `input`'s items (`None`: the scratch
    /// list of a near-far round), pushing onto `out`.
    Frontier { input: Option<u8>, out: u8 },
}

impl LaunchKey {
    pub(crate) fn uses(&self, list: u8) -> bool {
        match *self {
            LaunchKey::Topology { out } => out == list,
            LaunchKey::Frontier { input, out } => out == list || input == Some(list),
        }
    }
}

/// A round enqueued whose outcome was not read yet.
pub(crate) struct InFlight {
    pub(super) index: u32,
    pub(super) slot: usize,
    pub(super) launch: Rc<CudaLaunch>,
}

/// The CUDA backend of the [`Driver`](warpfit_runtime::worklist::drivers::Driver):
/// a [`RoundBackend`] whose rounds are queued on a GPU, several per host
/// synchronisation.
///
/// The user's kernels are bound as closures that *prepare* a generated
/// launch (`my_kernel::prepare(..)`) over the tasks and output list the
/// backend hands them (a `Bind`); the backend prepares each combination of
/// lists once and re-runs it round after round, so a round costs the
/// enqueue of a few kernels and nothing else on the host. Preparing a launch
/// costs some hundred microseconds, as much as a short round:
/// [`Driver::prepare`](warpfit_runtime::worklist::drivers::Driver::prepare)
/// does it for every kind of round before a run
/// ([`RoundBackend::prepare`]), and the lists and launches stay for the
/// runs after it. Around the user's kernel, the backend's own kernels
/// (`gpu/cuda/rounds.cuh`) do the round's bookkeeping on the device:
///
/// - **the task list the user kernel runs over is the backend's**: a
///   frontier round runs over the input list's items with a task count the
///   backend sets (near-far rounds: over a scratch list of the input's items
///   whose key lies in the bucket, the others dropped or pushed onto the far
///   pile on the device); a topology round over `0..n` (an index array) with
///   a count of `n`;
/// - **halt on the device**: a round whose output (read by a later round)
///   or far pile overflowed, or whose kernel faulted, sets a halt word; the
///   rounds after it find it set, clear nothing, set a task count of 0 (the
///   user kernel does nothing) and record themselves as skipped, until
///   [`RoundBackend::resume`] clears it after the driver grew the list;
/// - **outcomes without a copy per round**: each round's finishing kernel
///   writes its [`Outcome`] into a ring of records in host-mapped memory, and
///   an event is recorded behind it; [`RoundBackend::wait`] waits for the
///   last of the rounds asked (the device meanwhile runs the rounds enqueued
///   after them) and reads their records where they are.
///
/// Kernel faults come back at `wait`: the round's record says its kernel
/// faulted, and the launch's fault record is read as the error the CPU twin
/// would have returned.
///
/// The round number is on the device too (`Bind::round`, set by each
/// round before its kernel runs): a kernel that needs it (BFS's bottom-up
/// step looks for parents on level `round - 1`) reads it from there, so that
/// one prepared launch serves every round.
///
/// ```no_run
/// # use warpfit_gpu::{CudaRounds, Device, DeviceVec};
/// # fn kernels(device: &Device, dist: &DeviceVec<f32>) -> warpfit_gpu::Result<()> {
/// let rounds = CudaRounds::new(device, dist.len())?
///     .frontier(|b| {
///         // e.g. sssp_push::prepare(device, &config, b.tasks, &ptr, &dst, &w, dist, b.out)
///         # unimplemented!()
///     })
///     .key(dist)?;
/// # Ok(()) }
/// ```
pub struct CudaRounds<'k> {
    pub(super) dev: CudaDevice,
    pub(super) device: Device,
    pub(super) universe: usize,
    pub(super) kernels: Arc<RoundKernels>,
    pub(super) frontier: Option<Box<Binder<'k>>>,
    pub(super) topology: Option<Box<Binder<'k>>>,
    pub(super) key: Option<Key>,
    /// The key array's borrow.
    pub(super) _key: PhantomData<&'k ()>,
    pub(super) lists: Vec<DeviceWorklist>,
    /// Near-far rounds' tasks: at least as many slots as the largest list.
    pub(super) scratch: Option<DeviceBuffer<u32>>,
    /// `0..n`, a topology round's tasks.
    pub(super) iota: Option<DeviceBuffer<u32>>,
    pub(super) state: DeviceBuffer<u64>,
    pub(super) round_word: DeviceVec<u32>,
    /// `RING` records of `RECORD_WORDS` words, host-mapped.
    pub(super) ring: DeviceVec<u64>,
    /// One per ring slot, recorded behind its round.
    pub(super) events: Vec<CudaEvent>,
    pub(super) next_slot: usize,
    pub(super) in_flight: VecDeque<InFlight>,
    /// Outcomes read and not yet handed to the driver.
    pub(super) finished: VecDeque<Result<Outcome>>,
    pub(super) launches: HashMap<LaunchKey, Rc<CudaLaunch>>,
    /// Work donation's bound in frontier rounds ([`CudaRounds::donate`]).
    pub(super) donate_min: Option<u32>,
    /// Its board and three counters, shared by every frontier launch (they
    /// run one after the other on the stream), made with the first.
    pub(super) donation: Option<(DeviceBuffer<u64>, DeviceBuffer<u64>)>,
}

/// Bytes of a frontier launch's work-donation board: 8 MiB, some 200
/// thousand chunks of 1024 fine tasks (a chunk is 24 bytes and the item's
/// prologue values), room for every edge of a 128M-edge graph's frontier.
pub(crate) const DONATION_BOARD_BYTES: usize = 8 << 20;

impl std::fmt::Debug for CudaRounds<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaRounds")
            .field("device", &self.dev)
            .field("universe", &self.universe)
            .field("kernels", &self.kernels())
            .field("lists", &self.lists)
            .field("in_flight", &self.in_flight.len())
            .finish_non_exhaustive()
    }
}

impl<'k> CudaRounds<'k> {
    /// A backend over the universe `0..universe` on CUDA `device`, with no
    /// kernel yet. Compiles (or reads from the kernel cache) the round
    /// kernels.
    ///
    /// # Errors
    /// A CPU device (use the runtime's `CpuRounds`), a universe beyond what
    /// `u32` items name, device memory or compile errors.
    pub fn new(device: &Device, universe: usize) -> Result<Self> {
        let Device::Cuda(dev) = device else {
            return Err(Error::invalid(
                "CudaRounds runs rounds on a CUDA device, and this one is the CPU: use \
                 warpfit_runtime's CpuRounds there",
            ));
        };
        check_universe(universe)?;
        let kernels = dev.extension::<RoundKernels>()?;
        let events = (0..RING)
            .map(|_| {
                dev.context()
                    .new_event(None)
                    .map_err(cuda_err("creating a round event"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(CudaRounds {
            dev: dev.clone(),
            device: device.clone(),
            universe,
            kernels,
            frontier: None,
            topology: None,
            key: None,
            _key: PhantomData,
            lists: Vec::new(),
            scratch: None,
            iota: None,
            state: DeviceBuffer::zeros(dev, STATE_WORDS)?,
            round_word: device.alloc::<u32>(1)?,
            ring: device.alloc_mapped::<u64>(RING * RECORD_WORDS)?,
            events,
            next_slot: 0,
            in_flight: VecDeque::new(),
            finished: VecDeque::new(),
            launches: HashMap::new(),
            donate_min: None,
            donation: None,
        })
    }

    /// The frontier kernel: `prepare(bind)` prepares its launch over
    /// `bind.tasks` (a round's input items), pushing onto `bind.out`.
    /// Called once per combination of lists, the launch then re-run.
    pub fn frontier(
        mut self,
        prepare: impl for<'a> Fn(Bind<'a, 'k>) -> Result<PreparedLaunch<'a>> + 'k,
    ) -> Self {
        self.frontier = Some(Box::new(prepare));
        self.launches.clear();
        self
    }

    /// Work donation in frontier rounds (Nasre et al., III-E): a frontier
    /// item with more than `min_len` fine tasks is spread over a wave of
    /// warps instead of walked by its own (a hub: BFS or SSSP from a vertex
    /// of 100 thousand edges spends its whole first round on one warp
    /// otherwise). It applies to a CTE frontier kernel whose `for_each` is
    /// its last statement ([`KernelSpec::donates`](crate::spec::KernelSpec::donates));
    /// each round of one costs one more launch (a few microseconds), so it
    /// is for graphs with such items: `None` (the default) turns it off.
    /// The board holds 8 MiB of chunks per launch; an
    /// item that does not fit stays with its warp.
    pub fn donate(mut self, min_len: Option<u32>) -> Self {
        self.donate_min = min_len.filter(|&m| m > 0);
        self.launches.clear();
        self
    }

    /// The topology kernel: `prepare(bind)` prepares its launch over
    /// `bind.tasks` (every element `0..n`), pushing onto `bind.out`.
    pub fn topology(
        mut self,
        prepare: impl for<'a> Fn(Bind<'a, 'k>) -> Result<PreparedLaunch<'a>> + 'k,
    ) -> Self {
        self.topology = Some(Box::new(prepare));
        self.launches.clear();
        self
    }

    /// The key near-far orders items by: `key[item]`, read on the device
    /// when a round takes the item from its input (the latest value).
    ///
    /// # Errors
    /// An array of another device, or shorter than the universe.
    pub fn key<K: RoundKey>(mut self, key: &'k DeviceVec<K>) -> Result<Self> {
        let on = key
            .cuda_device()
            .filter(|d| d.ordinal() == self.dev.ordinal())
            .and_then(|_| key.cuda_ptr());
        let Some(ptr) = on else {
            return Err(Error::invalid(format!(
                "the round key lives on {}, but the rounds run on CUDA device {} ({})",
                key.location(),
                self.dev.ordinal(),
                self.dev.name()
            )));
        };
        if key.len() < self.universe {
            return Err(Error::invalid(format!(
                "the round key has {} elements, fewer than the universe of {}",
                key.len(),
                self.universe
            )));
        }
        self.key = Some(Key {
            ptr,
            split: self
                .kernels
                .function(&format!("wf_round_split_{}", K::NAME))?,
            min_key: self
                .kernels
                .function(&format!("wf_round_min_key_{}", K::NAME))?,
        });
        Ok(self)
    }

    /// How many launches are prepared (one per kind of round run or
    /// [prepared](RoundBackend::prepare) over the lists there are now).
    pub fn launches_prepared(&self) -> usize {
        self.launches.len()
    }

    /// Chunks of 1024 fine tasks that frontier rounds donated
    /// ([`CudaRounds::donate`]) since the backend was made, over every run:
    /// 0 without donation. Waits for the rounds enqueued.
    ///
    /// # Errors
    /// A device error.
    pub fn donated_chunks(&self) -> Result<u64> {
        let Some((_, counters)) = &self.donation else {
            return Ok(0);
        };
        let mut words = [0u64; 3];
        counters.download(&self.dev, &mut words)?;
        Ok(words[2])
    }
}

impl Drop for CudaRounds<'_> {
    /// Waits for the rounds in flight: their kernels read arrays the
    /// closures borrowed, which may be freed once the backend is gone.
    fn drop(&mut self) {
        let _ = self.dev.stream().synchronize();
    }
}

pub(crate) fn check_universe(universe: usize) -> Result<()> {
    if universe as u64 > u64::from(u32::MAX) + 1 {
        return Err(Error::invalid(format!(
            "a round backend's universe of {universe} is more than u32 items name"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_is_refused_with_a_pointer_to_cpu_rounds() {
        let e = CudaRounds::new(&Device::cpu(), 10).unwrap_err().to_string();
        assert!(e.contains("CpuRounds"), "{e}");
    }

    #[test]
    fn universes_beyond_u32_items_are_refused() {
        assert!(check_universe(1 << 32).is_ok());
        let e = check_universe((1 << 32) + 1).unwrap_err().to_string();
        assert!(e.contains("more than u32 items name"), "{e}");
    }
}
