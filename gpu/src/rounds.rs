//! The CUDA round backend of the worklist drivers: [`CudaRounds`] (its
//! docs say how its rounds run) and the round kernels it loads.

use crate::abi::{WorklistRef, BLOCK};
use crate::buffer::{cuda_err, DeviceBuffer};
use crate::compile;
use crate::device::{CudaDevice, Device};
use crate::launch::Prepared;
use crate::resident::{DeviceVec, PreparedLaunch};
use crate::spec::Scalar;
use crate::worklist::DeviceWorklist;
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaModule, LaunchConfig as CuLaunch, PushKernelArg,
};
use std::collections::{HashMap, VecDeque};
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;
use warpfit_runtime::exec::DeviceFrontier;
use warpfit_runtime::worklist::drivers::{
    lists_fit, Kernels, ListId, Outcome, Round, RoundBackend, RoundShape, Start,
};
use warpfit_runtime::{mem, Error, Result, Tasks};

/// Rounds per host synchronisation that [`CudaRounds`] asks the driver for
/// unless told otherwise (`BENCHMARKS.md`, "Worklists and drivers (CUDA)").
pub const CUDA_ROUNDS_PER_SYNC: usize = 8;

/// Round records in the host-mapped ring: rounds in flight at most before
/// the oldest one's outcome is read early (the driver keeps `2k - 1` in
/// flight, so `k` up to 32 never waits for that).
const RING: usize = 64;

/// `u64` words of a `RoundRecord` (rounds.cuh).
const RECORD_WORDS: usize = 7;

/// `u64` words of the `RoundState` (rounds.cuh): five counters, then the
/// halt and skip words.
const STATE_WORDS: usize = 6;

/// `RoundRecord::flags` (`ROUND_*` in rounds.cuh).
const ROUND_SKIPPED: u32 = 1;
const ROUND_OUT_OVERFLOWED: u32 = 2;
const ROUND_DEFERRED_OVERFLOWED: u32 = 4;
const ROUND_FAULT: u32 = 8;

/// What a kernel's closure gets to prepare its launch with.
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
    _env: PhantomData<&'a &'k ()>,
}

impl std::fmt::Debug for Bind<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bind")
            .field("tasks", &self.tasks)
            .field("out", &self.out)
            .finish_non_exhaustive()
    }
}

type Binder<'k> = dyn for<'a> Fn(Bind<'a, 'k>) -> Result<PreparedLaunch<'a>> + 'k;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for u32 {}
}

/// The element types a near-far key array may have: `f32` (SSSP's
/// distances) and `u32`. Keys compare as `f64`, which holds both exactly.
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
struct Key {
    ptr: u64,
    split: CudaFunction,
    min_key: CudaFunction,
}

/// Which prepared launch a round runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum LaunchKey {
    /// The topology kernel over `0..n`, pushing onto list `out`.
    Topology { out: u8 },
    /// The frontier kernel over list `input`'s items (`None`: the scratch
    /// list of a near-far round), pushing onto `out`.
    Frontier { input: Option<u8>, out: u8 },
}

impl LaunchKey {
    fn uses(&self, list: u8) -> bool {
        match *self {
            LaunchKey::Topology { out } => out == list,
            LaunchKey::Frontier { input, out } => out == list || input == Some(list),
        }
    }
}

/// A round enqueued whose outcome was not read yet.
struct InFlight {
    index: u32,
    slot: usize,
    launch: Rc<Prepared>,
}

/// The CUDA backend of the [`Driver`](warpfit_runtime::worklist::drivers::Driver):
/// a [`RoundBackend`] whose rounds are queued on a GPU, several per host
/// synchronisation.
///
/// The user's kernels are bound as closures that *prepare* a generated
/// launch (`my_kernel::prepare(..)`) over the tasks and output list the
/// backend hands them ([`Bind`]); the backend prepares each combination of
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
/// The round number is on the device too ([`Bind::round`], set by each
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
    dev: CudaDevice,
    device: Device,
    universe: usize,
    kernels: Arc<RoundKernels>,
    frontier: Option<Box<Binder<'k>>>,
    topology: Option<Box<Binder<'k>>>,
    key: Option<Key>,
    /// The key array's borrow.
    _key: PhantomData<&'k ()>,
    lists: Vec<DeviceWorklist>,
    /// Near-far rounds' tasks: at least as many slots as the largest list.
    scratch: Option<DeviceBuffer<u32>>,
    /// `0..n`, a topology round's tasks.
    iota: Option<DeviceBuffer<u32>>,
    state: DeviceBuffer<u64>,
    round_word: DeviceVec<u32>,
    /// `RING` records of `RECORD_WORDS` words, host-mapped.
    ring: DeviceVec<u64>,
    /// One per ring slot, recorded behind its round.
    events: Vec<CudaEvent>,
    next_slot: usize,
    in_flight: VecDeque<InFlight>,
    /// Outcomes read and not yet handed to the driver.
    finished: VecDeque<Result<Outcome>>,
    launches: HashMap<LaunchKey, Rc<Prepared>>,
    /// Work donation's bound in frontier rounds ([`CudaRounds::donate`]).
    donate_min: Option<u32>,
    /// Its board and three counters, shared by every frontier launch (they
    /// run one after the other on the stream), made with the first.
    donation: Option<(DeviceBuffer<u64>, DeviceBuffer<u64>)>,
}

/// Bytes of a frontier launch's work-donation board: 8 MiB, some 200
/// thousand chunks of 1024 fine tasks (a chunk is 24 bytes and the item's
/// prologue values), room for every edge of a 128M-edge graph's frontier.
pub const DONATION_BOARD_BYTES: usize = 8 << 20;

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
        let kernels = dev.round_kernels()?;
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
    /// its last statement ([`KernelSpec::donates`](crate::KernelSpec::donates));
    /// each round of one costs one more launch (a few microseconds), so it
    /// is for graphs with such items: `None` (the default) turns it off.
    /// The board holds [`DONATION_BOARD_BYTES`] of chunks per launch; an
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

    fn list(&self, id: ListId) -> Result<&DeviceWorklist> {
        self.lists
            .get(id.index())
            .ok_or_else(|| Error::out_of_range("worklist id", id.0, self.lists.len()))
    }

    fn list_ref(&self, id: ListId) -> Result<WorklistRef> {
        let list = self.list(id)?;
        list.device_ref()
            .map(|(r, _)| r)
            .ok_or_else(|| Error::invalid("a round backend's list is not on its CUDA device"))
    }

    /// The device address of the state's word `i`.
    fn state_word(&self, i: usize) -> u64 {
        self.state.device_ptr(&self.dev) + 8 * i as u64
    }

    /// Blocks of a grid-stride library kernel over `work` elements.
    fn blocks(&self, work: u64) -> u32 {
        let fill = u64::from(self.dev.sm_count()) * 8;
        work.div_ceil(u64::from(BLOCK)).clamp(1, fill.max(1)) as u32
    }

    /// Waits for every round in flight and keeps their outcomes.
    fn drain(&mut self) -> Result<()> {
        let n = self.in_flight.len();
        self.collect(n)
    }

    /// Makes the scratch list hold at least every list's capacity (near-far
    /// rounds) and the index array exist (topology rounds); only between
    /// rounds.
    fn size_task_lists(&mut self) -> Result<()> {
        if self.key.is_some() {
            let need = self
                .lists
                .iter()
                .map(DeviceWorklist::capacity)
                .max()
                .unwrap_or(0);
            if self.scratch.as_ref().map_or(true, |s| s.len() < need) {
                self.scratch = Some(DeviceBuffer::zeros(&self.dev, need)?);
                self.launches
                    .retain(|k, _| !matches!(k, LaunchKey::Frontier { input: None, .. }));
            }
        }
        if self.topology.is_some() && self.iota.is_none() {
            // Written on the device: uploading 4n bytes from the host took
            // milliseconds of the first round (`BENCHMARKS.md`).
            mem::check("a topology round's tasks (0..n)", 4 * self.universe as u64)?;
            let iota = DeviceBuffer::<u32>::zeros(&self.dev, self.universe)?;
            let n = self.universe as u64;
            let mut b = self.dev.stream().launch_builder(&self.kernels.iota);
            let ptr = iota.device_ptr(&self.dev);
            b.arg(&ptr);
            b.arg(&n);
            // SAFETY: `wf_round_iota(uint32_t*, uint64_t)` writes `n` u32
            // into `iota`, which holds `n`.
            unsafe { b.launch(grid(self.blocks(n))) }
                .map_err(cuda_err("launching wf_round_iota"))?;
            self.iota = Some(iota);
        }
        Ok(())
    }

    /// The prepared launch for `key`, made the first time it is asked for.
    fn launch(&mut self, key: LaunchKey) -> Result<Rc<Prepared>> {
        if let Some(l) = self.launches.get(&key) {
            return Ok(l.clone());
        }
        let ordinal = self.dev.ordinal();
        let tasks_count = self.state_word(0);
        let (items, capacity, out, binder, what) = match key {
            LaunchKey::Topology { out } => {
                let iota = self
                    .iota
                    .as_ref()
                    .ok_or_else(|| Error::invalid("a topology round before the lists were made"))?;
                (
                    iota.device_ptr(&self.dev),
                    self.universe as u64,
                    out,
                    self.topology.as_deref(),
                    "topology",
                )
            }
            LaunchKey::Frontier { input, out } => {
                let (items, capacity) = match input {
                    Some(i) => {
                        let r = self.list_ref(ListId(i))?;
                        (r.items, r.capacity)
                    }
                    None => {
                        let s = self.scratch.as_ref().ok_or_else(|| {
                            Error::invalid("a near-far round needs a key, bound before the lists")
                        })?;
                        (s.device_ptr(&self.dev), s.len() as u64)
                    }
                };
                (items, capacity, out, self.frontier.as_deref(), "frontier")
            }
        };
        let binder = binder
            .ok_or_else(|| Error::invalid(format!("a {what} round needs a {what} kernel")))?;
        // SAFETY: `items` holds `capacity` u32 and `tasks_count` one u64 on
        // this device: the backend's own buffers, which it keeps until the
        // launch is dropped (a buffer replaced drops the launches using it
        // first; rounds in flight hold theirs).
        let frontier = unsafe { DeviceFrontier::new(items, tasks_count, capacity, ordinal) };
        let bind = Bind {
            tasks: Tasks::DeviceFrontier(frontier),
            out: self.list(ListId(out))?,
            round: &self.round_word,
            _env: PhantomData,
        };
        let mut prepared = binder(bind)?.into_cuda().map_err(|_| {
            Error::invalid(format!(
                "the {what} kernel prepared its launch on the CPU, but the rounds run on CUDA \
                 device {ordinal}: prepare it on the backend's device"
            ))
        })?;
        if prepared.device_ordinal() != ordinal {
            return Err(Error::invalid(format!(
                "the {what} kernel prepared its launch on CUDA device {}, but the rounds run on \
                 CUDA device {ordinal}",
                prepared.device_ordinal()
            )));
        }
        if let (LaunchKey::Frontier { .. }, Some(min)) = (key, self.donate_min) {
            if self.donation.is_none() {
                mem::check("a work-donation board", DONATION_BOARD_BYTES as u64)?;
                self.donation = Some((
                    DeviceBuffer::zeros(&self.dev, DONATION_BOARD_BYTES / 8)?,
                    DeviceBuffer::zeros(&self.dev, 3)?,
                ));
            }
            let (board, counters) = self.donation.as_ref().expect("made above");
            // SAFETY: the backend's own board of DONATION_BOARD_BYTES and three
            // zeroed counters on this device, kept as long as the backend
            // (whose drop waits for the rounds); its launches run one after
            // the other on the device's stream.
            unsafe {
                prepared.donate(
                    min,
                    board.device_ptr(&self.dev),
                    DONATION_BOARD_BYTES as u64,
                    counters.device_ptr(&self.dev),
                )?
            };
        }
        let prepared: Rc<Prepared> = Rc::from(prepared);
        self.launches.insert(key, prepared.clone());
        Ok(prepared)
    }

    /// Enqueues `wf_round_begin`.
    #[allow(clippy::too_many_arguments)]
    fn begin(
        &self,
        index: u32,
        out: &WorklistRef,
        far: Option<(&WorklistRef, bool)>,
        input_count: u64,
        input_capacity: u64,
        topology_n: u64,
    ) -> Result<()> {
        let none = WorklistRef::default();
        let (far_ref, has_far, clear_far) = match far {
            Some((f, clear)) => (*f, 1u32, u32::from(clear)),
            None => (none, 0, 0),
        };
        let words = |w: &WorklistRef| w.capacity.max(w.universe.div_ceil(32));
        let work = words(out).max(if clear_far == 1 { words(&far_ref) } else { 0 });
        let state = self.state.device_ptr(&self.dev);
        let round_word = self.round_word.cuda_ptr().unwrap_or(0);
        let mut b = self.dev.stream().launch_builder(&self.kernels.begin);
        b.arg(&state);
        b.arg(&round_word);
        b.arg(&index);
        b.arg(out);
        b.arg(&far_ref);
        b.arg(&has_far);
        b.arg(&clear_far);
        b.arg(&input_count);
        b.arg(&input_capacity);
        b.arg(&topology_n);
        // SAFETY: the signature of `wf_round_begin`; every address is a live
        // buffer of this backend (the lists, the state, the round word).
        unsafe { b.launch(grid(self.blocks(work))) }
            .map_err(cuda_err("launching wf_round_begin"))?;
        Ok(())
    }

    /// Enqueues `wf_round_finish` into ring slot `slot`.
    fn finish(
        &self,
        slot: usize,
        index: u32,
        out: &WorklistRef,
        far: Option<&WorklistRef>,
        consumed: bool,
        launch: &Prepared,
    ) -> Result<()> {
        let state = self.state.device_ptr(&self.dev);
        let ring = self.ring.cuda_ptr().unwrap_or(0);
        let record = ring + (slot * RECORD_WORDS * 8) as u64;
        let (far_ref, has_far) = match far {
            Some(f) => (*f, 1u32),
            None => (WorklistRef::default(), 0),
        };
        let consumed = u32::from(consumed);
        let fault = launch.fault_claimed_ptr();
        let mut b = self.dev.stream().launch_builder(&self.kernels.finish);
        b.arg(&state);
        b.arg(&record);
        b.arg(&index);
        b.arg(out);
        b.arg(&far_ref);
        b.arg(&has_far);
        b.arg(&consumed);
        b.arg(&fault);
        let one = CuLaunch {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the signature of `wf_round_finish`; the record is a slot
        // of the mapped ring, the fault record the launch's own.
        unsafe { b.launch(one) }.map_err(cuda_err("launching wf_round_finish"))?;
        Ok(())
    }

    /// Enqueues the near-far split of `input` into the scratch list and
    /// the far pile.
    fn split(&self, input: &WorklistRef, far: &WorklistRef, lo: f64, hi: f64) -> Result<()> {
        let key = self
            .key
            .as_ref()
            .ok_or_else(|| Error::invalid("a near-far round needs a key"))?;
        let scratch = self
            .scratch
            .as_ref()
            .ok_or_else(|| Error::invalid("a near-far round before the lists were made"))?
            .device_ptr(&self.dev);
        let state = self.state.device_ptr(&self.dev);
        let mut b = self.dev.stream().launch_builder(&key.split);
        b.arg(&state);
        b.arg(&key.ptr);
        b.arg(input);
        b.arg(&scratch);
        b.arg(far);
        b.arg(&lo);
        b.arg(&hi);
        // SAFETY: `wf_round_split_<K>`; the key holds at least `universe`
        // elements of K (checked when bound), the lists' items lie in the
        // universe, and the scratch list holds at least the input's
        // capacity.
        unsafe { b.launch(grid(self.blocks(input.capacity))) }
            .map_err(cuda_err("launching wf_round_split"))?;
        Ok(())
    }

    /// Enqueues the least key of `out`'s items into the state.
    fn min_key(&self, out: &WorklistRef) -> Result<()> {
        let Some(key) = self.key.as_ref() else {
            return Ok(()); // no key: +inf, as on the CPU
        };
        let state = self.state.device_ptr(&self.dev);
        let mut b = self.dev.stream().launch_builder(&key.min_key);
        b.arg(&state);
        b.arg(&key.ptr);
        b.arg(out);
        // SAFETY: `wf_round_min_key_<K>`, as for the split.
        unsafe { b.launch(grid(self.blocks(out.capacity))) }
            .map_err(cuda_err("launching wf_round_min_key"))?;
        Ok(())
    }

    /// Reads the outcomes of the oldest `count` rounds in flight (one wait,
    /// for the last of them) into `finished`.
    fn collect(&mut self, count: usize) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let last = self
            .in_flight
            .get(count - 1)
            .ok_or_else(|| Error::invalid("collecting rounds that were not enqueued"))?;
        self.events[last.slot]
            .synchronize()
            .map_err(cuda_err("waiting for a round"))?;
        for _ in 0..count {
            let r = self.in_flight.pop_front().expect("counted above");
            let mut w = [0u64; RECORD_WORDS];
            self.ring.read_completed(r.slot * RECORD_WORDS, &mut w)?;
            self.finished.push_back(decode(r.index, &w, &r.launch));
        }
        Ok(())
    }
}

impl Drop for CudaRounds<'_> {
    /// Waits for the rounds in flight: their kernels read arrays the
    /// closures borrowed, which may be freed once the backend is gone.
    fn drop(&mut self) {
        let _ = self.dev.stream().synchronize();
    }
}

fn grid(blocks: u32) -> CuLaunch {
    CuLaunch {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn check_universe(universe: usize) -> Result<()> {
    if universe as u64 > u64::from(u32::MAX) + 1 {
        return Err(Error::invalid(format!(
            "a round backend's universe of {universe} is more than u32 items name"
        )));
    }
    Ok(())
}

/// A round's record as its [`Outcome`], or the kernel's fault as an error.
fn decode(index: u32, w: &[u64; RECORD_WORDS], launch: &Prepared) -> Result<Outcome> {
    let (got, flags) = (w[0] as u32, (w[0] >> 32) as u32);
    if got != index {
        return Err(Error::invalid(format!(
            "round {index}: its record names round {got} (the round backend's ring was overrun)"
        )));
    }
    if flags & ROUND_SKIPPED != 0 {
        return Ok(Outcome::skipped(index));
    }
    if flags & ROUND_FAULT != 0 {
        let e = launch
            .check_and_clear_fault()
            .err()
            .unwrap_or_else(|| Error::invalid("the kernel recorded a fault that vanished"));
        return Err(Error::invalid(format!(
            "kernel fault in round {index}: {e}"
        )));
    }
    Ok(Outcome {
        index,
        skipped: false,
        processed: w[1],
        pushed: w[2],
        out_overflowed: flags & ROUND_OUT_OVERFLOWED != 0,
        deferred: w[3],
        deferred_len: w[4],
        deferred_overflowed: flags & ROUND_DEFERRED_OVERFLOWED != 0,
        dropped: w[5],
        min_key: f64::from_bits(w[6]),
    })
}

impl RoundBackend for CudaRounds<'_> {
    fn universe(&self) -> usize {
        self.universe
    }

    fn rounds_per_sync(&self) -> usize {
        CUDA_ROUNDS_PER_SYNC
    }

    fn kernels(&self) -> Kernels {
        Kernels {
            frontier: self.frontier.is_some(),
            topology: self.topology.is_some(),
            key: self.key.is_some(),
        }
    }

    fn make_lists(&mut self, count: usize, capacity: usize, dedup: bool) -> Result<()> {
        if count > 256 {
            return Err(Error::invalid(format!("{count} worklists: at most 256")));
        }
        self.drain()?;
        self.finished.clear();
        let have = self.lists.iter().map(|l| (l.dedup(), l.capacity()));
        if lists_fit(have, count, capacity, dedup) {
            // A run's lists for the next run, with the launches over them.
            for l in &self.lists {
                l.clear()?;
            }
            return self.resume();
        }
        self.launches.clear();
        self.lists.clear();
        for _ in 0..count {
            self.lists.push(if dedup {
                self.device.worklist_dedup(self.universe, capacity)?
            } else {
                self.device.worklist(self.universe, capacity)?
            });
        }
        self.size_task_lists()?;
        self.resume()
    }

    fn capacity(&self, list: ListId) -> usize {
        self.lists
            .get(list.index())
            .map_or(0, DeviceWorklist::capacity)
    }

    fn prepare(&mut self, shapes: &[RoundShape]) -> Result<()> {
        if !self.in_flight.is_empty() {
            return Err(Error::invalid(
                "launches are prepared between runs: wait for every round enqueued first",
            ));
        }
        for &shape in shapes {
            let key = match shape {
                RoundShape::Topology { out } => LaunchKey::Topology { out: out.0 },
                RoundShape::Frontier { input, out } => LaunchKey::Frontier {
                    input: Some(input.0),
                    out: out.0,
                },
                RoundShape::Bucket { out } => LaunchKey::Frontier {
                    input: None,
                    out: out.0,
                },
            };
            self.launch(key)?;
        }
        Ok(())
    }

    fn fill(&mut self, list: ListId, start: Start<'_>) -> Result<()> {
        let n = self.universe;
        let capacity = self.list(list)?.capacity();
        if start.len(n) > capacity {
            return Err(Error::invalid(format!(
                "{} start items do not fit a list of {capacity}",
                start.len(n)
            )));
        }
        self.drain()?;
        let l = &mut self.lists[list.index()];
        match start {
            Start::Items(items) => l.set_items(items),
            Start::All => {
                mem::check("the start items (0..n)", 4 * n as u64)?;
                let all: Vec<u32> = (0..n).map(|i| i as u32).collect();
                l.set_items(&all)
            }
        }
    }

    fn enqueue(&mut self, round: &Round) -> Result<()> {
        if self.in_flight.len() >= RING {
            self.collect(1)?;
        }
        let slot = self.next_slot;
        let launch = match *round {
            Round::Topology {
                index,
                out,
                consumed,
                min_key,
            } => {
                let o = self.list_ref(out)?;
                let launch = self.launch(LaunchKey::Topology { out: out.0 })?;
                self.begin(index, &o, None, 0, 0, self.universe as u64)?;
                launch.run()?;
                if min_key {
                    self.min_key(&o)?;
                }
                self.finish(slot, index, &o, None, consumed, &launch)?;
                (index, launch)
            }
            Round::Frontier {
                index,
                input,
                out,
                bucket,
            } => {
                let deferred = bucket.map(|b| b.deferred);
                if input == out || Some(input) == deferred || Some(out) == deferred {
                    return Err(Error::invalid(format!(
                        "round {index}: input, output and far lists must be distinct"
                    )));
                }
                let (i, o) = (self.list_ref(input)?, self.list_ref(out)?);
                match bucket {
                    None => {
                        let launch = self.launch(LaunchKey::Frontier {
                            input: Some(input.0),
                            out: out.0,
                        })?;
                        self.begin(index, &o, None, i.count, i.capacity, 0)?;
                        launch.run()?;
                        self.finish(slot, index, &o, None, true, &launch)?;
                        (index, launch)
                    }
                    Some(b) => {
                        let f = self.list_ref(b.deferred)?;
                        let launch = self.launch(LaunchKey::Frontier {
                            input: None,
                            out: out.0,
                        })?;
                        self.begin(index, &o, Some((&f, b.clear_deferred)), 0, 0, 0)?;
                        self.split(&i, &f, b.lo, b.hi)?;
                        launch.run()?;
                        self.finish(slot, index, &o, Some(&f), true, &launch)?;
                        (index, launch)
                    }
                }
            }
        };
        self.events[slot]
            .record(self.dev.stream())
            .map_err(cuda_err("recording a round event"))?;
        self.in_flight.push_back(InFlight {
            index: launch.0,
            slot,
            launch: launch.1,
        });
        self.next_slot = (slot + 1) % RING;
        Ok(())
    }

    fn wait(&mut self, count: usize) -> Result<Vec<Outcome>> {
        let have = self.finished.len() + self.in_flight.len();
        if count > have {
            return Err(Error::invalid(format!(
                "waiting for {count} rounds, {have} enqueued"
            )));
        }
        if count > self.finished.len() {
            self.collect(count - self.finished.len())?;
        }
        self.finished.drain(..count).collect()
    }

    fn grow(&mut self, list: ListId, capacity: usize) -> Result<()> {
        self.list(list)?;
        if !self.in_flight.is_empty() {
            return Err(Error::invalid(
                "a list grows only between rounds: wait for every round enqueued first",
            ));
        }
        self.launches.retain(|k, _| !k.uses(list.0));
        self.lists[list.index()].grow(capacity)?;
        self.size_task_lists()
    }

    fn resume(&mut self) -> Result<()> {
        let state = self.state.device_ptr(&self.dev);
        let mut b = self.dev.stream().launch_builder(&self.kernels.resume);
        b.arg(&state);
        // SAFETY: `wf_round_resume(RoundState*)`, the backend's state.
        unsafe { b.launch(grid(1)) }.map_err(cuda_err("launching wf_round_resume"))?;
        Ok(())
    }
}

/// The round backend's kernels on one device (`rounds.cuh`): compiled
/// once, like the worklist library.
pub(crate) struct RoundKernels {
    module: Arc<CudaModule>,
    begin: CudaFunction,
    finish: CudaFunction,
    resume: CudaFunction,
    iota: CudaFunction,
}

impl RoundKernels {
    /// Compiles (or reads from the kernel cache) and loads the kernels.
    pub(crate) fn load(dev: &CudaDevice) -> Result<Self> {
        let module = compile::load_unit(dev, "rounds", &compile::rounds_unit())?;
        let f = |entry: &str| compile::load_function(&module, "round", entry);
        Ok(RoundKernels {
            begin: f("wf_round_begin")?,
            finish: f("wf_round_finish")?,
            resume: f("wf_round_resume")?,
            iota: f("wf_round_iota")?,
            module,
        })
    }

    fn function(&self, name: &str) -> Result<CudaFunction> {
        self.module
            .load_function(name)
            .map_err(cuda_err(format!("round kernel `{name}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> &'static str {
        compile::LIBRARY_HEADERS
            .iter()
            .find(|(n, _)| *n == "warpfit/rounds.cuh")
            .map(|(_, h)| *h)
            .unwrap()
    }

    #[test]
    fn the_flags_and_layouts_match_the_header() {
        let h = header();
        for (name, v) in [
            ("ROUND_SKIPPED", ROUND_SKIPPED),
            ("ROUND_OUT_OVERFLOWED", ROUND_OUT_OVERFLOWED),
            ("ROUND_DEFERRED_OVERFLOWED", ROUND_DEFERRED_OVERFLOWED),
            ("ROUND_FAULT", ROUND_FAULT),
        ] {
            assert!(
                h.contains(&format!("constexpr uint32_t {name} = {v};")),
                "{name}"
            );
        }
        // RoundState: five u64 counters, then two u32 words.
        let state = h
            .split("struct RoundState {")
            .nth(1)
            .and_then(|s| s.split("};").next())
            .unwrap();
        let (longs, ints) = (
            state.matches("unsigned long long ").count(),
            state.matches("uint32_t ").count(),
        );
        assert_eq!((longs * 8 + ints * 4).div_ceil(8), STATE_WORDS);
        assert!(state.trim_start().starts_with("unsigned long long tasks;"));
        // RoundRecord: index and flags in one word, then six u64.
        let record = h
            .split("struct RoundRecord {")
            .nth(1)
            .and_then(|s| s.split("};").next())
            .unwrap();
        assert_eq!(
            record.matches("unsigned long long ").count() + 1,
            RECORD_WORDS
        );
        // Every key type has its entry points.
        for name in [f32::NAME, u32::NAME] {
            for ep in ["split", "min_key"] {
                assert!(
                    compile::ROUNDS_ENTRY_POINTS
                        .contains(&format!("wf_round_{ep}_{name}").as_str()),
                    "{ep} {name}"
                );
            }
        }
    }

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
