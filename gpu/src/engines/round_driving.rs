//! How [`CudaRounds`] runs a driver's rounds: the [`RoundBackend`] it
//! implements, and the steps each round enqueues around the user's kernel
//! (task lists, the round's beginning and finishing kernels, near-far
//! splitting, reading the outcomes from the host-mapped ring).

use crate::abi::{WorklistRef, BLOCK};
use crate::driver::buffer::DeviceBuffer;
use crate::driver::errors::cuda_err;
use crate::engines::round_backend::{
    Bind, CudaRounds, InFlight, LaunchKey, CUDA_ROUNDS_PER_SYNC, DONATION_BOARD_BYTES,
};
use crate::engines::round_kernels::{decode, grid, RECORD_WORDS, RING};
use crate::launch::cuda_launch::CudaLaunch;
use crate::launch::device_worklist::DeviceWorklist;
use cudarc::driver::LaunchConfig as CuLaunch;
use cudarc::driver::PushKernelArg;
use std::marker::PhantomData;
use std::rc::Rc;
use warpfit_runtime::exec::DeviceFrontier;
use warpfit_runtime::worklist::drivers::{
    lists_fit, Kernels, ListId, Outcome, Round, RoundBackend, RoundShape, Start,
};
use warpfit_runtime::{mem, Error, Result, Tasks};

impl CudaRounds<'_> {
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
    fn launch(&mut self, key: LaunchKey) -> Result<Rc<CudaLaunch>> {
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
        let prepared: Rc<CudaLaunch> = Rc::from(prepared);
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
        launch: &CudaLaunch,
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
