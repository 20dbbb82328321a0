//! Launching a generated kernel: argument upload, `Params` packing per
//! docs/codegen.md, task sources and split-task scratch, the launches
//! themselves, and the fault word read back as the CPU twin's `Error`.

use crate::buffer::{cuda_err, DeviceBuffer};
use crate::device::{
    auto_serial_max, auto_split, CudaDevice, Decomposition, LaunchConfig, Module, Split,
};
use crate::spec::{Arg, KernelSpec, ParamKind, ScalarValue};
use cudarc::driver::{DeviceRepr, LaunchConfig as CuLaunch, PushKernelArg};
use std::sync::Arc;
use warpfit_runtime::exec::Fault;
use warpfit_runtime::{Error, Result, Segment, TaskList, Tasks};

/// Threads per block of every library kernel (`warpfit::BLOCK`).
pub(crate) const BLOCK: u32 = 256;
/// Lanes per split task in the merge kernels (`warpfit::MERGE_LANES` and
/// `MERGE_LANES_WIDE`).
const MERGE_LANES: u64 = 8;
const MERGE_LANES_WIDE: u64 = 32;
/// The wide merge runs when some split task has more pieces than this:
/// 8 lanes would fold more than 8 partials each, one dependent chain of
/// loads per lane.
const WIDE_MERGE_PIECES: u32 = 64;
/// Largest `Params` struct passed by value (CUDA's kernel-parameter limit
/// is 4 KiB on every supported architecture; `LaunchArgs` takes the rest).
const MAX_PARAMS: usize = 4096 - std::mem::size_of::<LaunchArgs>();

/// The packed `Params` struct of a kernel: C layout, fields in signature
/// order, each at its natural alignment.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub struct ParamBlock {
    bytes: [u8; MAX_PARAMS],
    len: usize,
}

// SAFETY: plain bytes; CUDA copies the first `sizeof(Params)` of them, which
// `pack_params` laid out exactly as the device struct.
unsafe impl DeviceRepr for ParamBlock {}

impl ParamBlock {
    fn new() -> Self {
        ParamBlock {
            bytes: [0; MAX_PARAMS],
            len: 0,
        }
    }

    fn push(&mut self, align: usize, data: &[u8]) -> Result<()> {
        let at = self.len.next_multiple_of(align);
        let end = at + data.len();
        if end > MAX_PARAMS {
            return Err(Error::invalid(format!(
                "kernel parameters take more than {MAX_PARAMS} bytes"
            )));
        }
        self.bytes[at..end].copy_from_slice(data);
        self.len = end;
        Ok(())
    }

    /// The packed bytes (the struct's size, before tail padding).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Launch-wide arguments; mirrors `warpfit::LaunchArgs` in task_source.cuh.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub struct LaunchArgs {
    pub n_items: u64,
    pub segments: u64,
    pub whole: u64,
    pub scratch: u64,
    pub present: u64,
    pub split: u64,
    pub split_segments: u64,
    pub fault: u64,
    pub sizes: u64,
    pub cte_serial_max: u32,
    pub n_warps: u32,
    pub warp_first: u64,
    pub warp_task: u64,
}

// SAFETY: `#[repr(C)]` of u64/u32 fields, laid out as the device struct.
unsafe impl DeviceRepr for LaunchArgs {}

/// The launch's fault word; mirrors `warpfit::FaultRecord` in fault.cuh.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct FaultRecord {
    pub claimed: u32,
    pub kind: u32,
    pub array: u32,
    pub pad: u32,
    pub task: u64,
    pub index: u64,
    pub aux0: u64,
    pub aux1: u64,
}

const FAULT_WORDS: usize = std::mem::size_of::<FaultRecord>() / 8;

fn scalar_bytes(v: ScalarValue) -> (usize, Vec<u8>) {
    match v {
        ScalarValue::F32(x) => (4, x.to_ne_bytes().to_vec()),
        ScalarValue::F64(x) => (8, x.to_ne_bytes().to_vec()),
        ScalarValue::I32(x) => (4, x.to_ne_bytes().to_vec()),
        ScalarValue::U32(x) => (4, x.to_ne_bytes().to_vec()),
        ScalarValue::I64(x) => (8, x.to_ne_bytes().to_vec()),
        ScalarValue::U64(x) => (8, x.to_ne_bytes().to_vec()),
        ScalarValue::U8(x) => (1, vec![x]),
        ScalarValue::Bool(x) => (1, vec![u8::from(x)]),
    }
}

fn scalar_type(v: ScalarValue) -> crate::ScalarType {
    use crate::ScalarType as T;
    match v {
        ScalarValue::F32(_) => T::F32,
        ScalarValue::F64(_) => T::F64,
        ScalarValue::I32(_) => T::I32,
        ScalarValue::U32(_) => T::U32,
        ScalarValue::I64(_) => T::I64,
        ScalarValue::U64(_) => T::U64,
        ScalarValue::U8(_) => T::U8,
        ScalarValue::Bool(_) => T::Bool,
    }
}

/// Checks `args` against `spec.params`: count, kind and element type.
pub fn check_args(spec: &KernelSpec, args: &[Arg<'_>]) -> Result<()> {
    if args.len() != spec.params.len() {
        return Err(Error::invalid(format!(
            "kernel `{}` takes {} arguments after the task index, got {}",
            spec.name,
            spec.params.len(),
            args.len()
        )));
    }
    for (i, (p, a)) in spec.params.iter().zip(args).enumerate() {
        let (kind, ty, what) = match a {
            Arg::Input(s) => (ParamKind::Input, s.ty, "&[{}]"),
            Arg::Output(s) => (ParamKind::Output, s.ty, "&mut [{}]"),
            Arg::Scalar(v) => (ParamKind::Scalar, scalar_type(*v), "{}"),
        };
        if kind != p.kind || ty != p.ty {
            let want = match p.kind {
                ParamKind::Input => format!("&[{}]", p.ty.rust_name()),
                ParamKind::Output => format!("&mut [{}]", p.ty.rust_name()),
                ParamKind::Scalar => p.ty.rust_name().to_string(),
            };
            return Err(Error::invalid(format!(
                "kernel `{}`: argument {i} (`{}`) must be {want}, got {}",
                spec.name,
                p.name,
                what.replace("{}", ty.rust_name())
            )));
        }
    }
    Ok(())
}

/// Device copies of the array arguments, in parameter order (`None` for scalars).
pub struct DeviceArgs {
    buffers: Vec<Option<DeviceBuffer<u8>>>,
    /// Element count of each parameter (0 for scalars).
    lens: Vec<u64>,
}

impl DeviceArgs {
    /// Uploads every array argument (outputs too: an epilogue may read them).
    pub fn upload(dev: &CudaDevice, spec: &KernelSpec, args: &[Arg<'_>]) -> Result<Self> {
        check_args(spec, args)?;
        let mut buffers = Vec::with_capacity(args.len());
        let mut lens = Vec::with_capacity(args.len());
        for a in args {
            match a {
                Arg::Input(s) => {
                    buffers.push(Some(DeviceBuffer::upload(dev, s.bytes)?));
                    lens.push(s.len() as u64);
                }
                Arg::Output(s) => {
                    buffers.push(Some(DeviceBuffer::upload(dev, s.bytes)?));
                    lens.push(s.len() as u64);
                }
                Arg::Scalar(_) => {
                    buffers.push(None);
                    lens.push(0);
                }
            }
        }
        Ok(DeviceArgs { buffers, lens })
    }

    /// The device buffer of parameter `i`, when it is an array.
    pub fn buffer(&self, i: usize) -> Option<&DeviceBuffer<u8>> {
        self.buffers.get(i).and_then(|b| b.as_ref())
    }

    /// Packs `Params`: `const T*` + `uint64_t` length per array, scalars in place.
    pub fn pack(
        &self,
        dev: &CudaDevice,
        spec: &KernelSpec,
        args: &[Arg<'_>],
    ) -> Result<ParamBlock> {
        let mut block = ParamBlock::new();
        for (i, a) in args.iter().enumerate() {
            match (a, &self.buffers[i]) {
                (Arg::Scalar(v), _) => {
                    let (align, bytes) = scalar_bytes(*v);
                    block.push(align, &bytes)?;
                }
                (_, Some(b)) => {
                    block.push(8, &b.device_ptr(dev).to_ne_bytes())?;
                    block.push(8, &self.lens[i].to_ne_bytes())?;
                }
                (_, None) => {
                    return Err(Error::invalid(format!(
                        "kernel `{}`: argument {i} has no device buffer",
                        spec.name
                    )))
                }
            }
        }
        Ok(block)
    }

    /// Downloads every output into its host slice.
    pub fn download_outputs(&self, dev: &CudaDevice, args: &mut [Arg<'_>]) -> Result<()> {
        for (a, b) in args.iter_mut().zip(&self.buffers) {
            if let (Arg::Output(s), Some(b)) = (a, b) {
                b.download(dev, s.bytes)?;
            }
        }
        Ok(())
    }
}

/// Groups consecutive segments into CTE warps: at most 32 segments each
/// (one per lane), and at most `budget` fine tasks in all unless the group
/// is a single longer segment. Returns each group's first segment, then
/// the number of segments.
pub fn pack_warps(segments: &[Segment], budget: u32) -> Vec<u32> {
    let mut first = Vec::with_capacity(segments.len() / 4 + 2);
    let (mut count, mut work) = (0u32, 0u64);
    for (i, s) in segments.iter().enumerate() {
        let len = u64::from(s.hi.saturating_sub(s.lo));
        if count == 0 || count == 32 || work + len > u64::from(budget) {
            first.push(i as u32);
            (count, work) = (0, 0);
        }
        count += 1;
        work += len;
    }
    first.push(segments.len() as u32);
    first
}

/// The first task of each group that holds whole consecutive tasks only
/// (CTE loads those by task, without reading their segments), else
/// `u32::MAX`.
pub fn whole_runs(list: &TaskList, first: &[u32]) -> Vec<u32> {
    let (segs, whole) = (list.segments(), list.whole_flags());
    first
        .windows(2)
        .map(|g| {
            let (b, e) = (g[0] as usize, g[1] as usize);
            let t0 = segs[b].task;
            let run = (b..e)
                .all(|i| whole[i] && u64::from(segs[i].task) == u64::from(t0) + (i - b) as u64);
            if run {
                t0
            } else {
                u32::MAX
            }
        })
        .collect()
}

/// CTE warps packed by work: each group's first segment (then the end)
/// and [`whole_runs`].
struct PackedWarps {
    first: DeviceBuffer<u32>,
    task: DeviceBuffer<u32>,
}

/// A task list in device memory, with its split-task scratch.
pub struct DeviceTaskList {
    list: TaskList,
    segments: DeviceBuffer<u32>,
    whole: DeviceBuffer<u8>,
    split: DeviceBuffer<u32>,
    split_segments: DeviceBuffer<u32>,
    scratch: DeviceBuffer<u64>,
    present: DeviceBuffer<u8>,
    /// Some split task has more than [`WIDE_MERGE_PIECES`] pieces.
    wide_merge: bool,
    /// CTE warps packed by work ([`pack_warps`]).
    packed: Option<PackedWarps>,
}

impl DeviceTaskList {
    /// Uploads `list`; scratch holds one accumulator per segment. With
    /// `pack_budget`, CTE warps take groups of segments bounded by that much
    /// work ([`pack_warps`]) instead of 32 segments each.
    pub fn upload(
        dev: &CudaDevice,
        list: TaskList,
        acc_bytes: usize,
        pack_budget: Option<u32>,
    ) -> Result<Self> {
        let segs: Vec<u32> = list
            .segments()
            .iter()
            .flat_map(|s| [s.task, s.lo, s.hi])
            .collect();
        let whole: Vec<u8> = list.whole_flags().iter().map(|&w| u8::from(w)).collect();
        let split: Vec<u32> = list
            .split_tasks()
            .iter()
            .flat_map(|s| [s.task, s.first, s.count])
            .collect();
        let n_split_segs = list.split_segments().len();
        // Scratch is indexed by segment id; only split segments write it.
        let scratch_words = if n_split_segs == 0 {
            0
        } else {
            (list.len() * acc_bytes).div_ceil(8)
        };
        Ok(DeviceTaskList {
            segments: DeviceBuffer::upload(dev, &segs)?,
            whole: DeviceBuffer::upload(dev, &whole)?,
            split: DeviceBuffer::upload(dev, &split)?,
            split_segments: DeviceBuffer::upload(dev, list.split_segments())?,
            scratch: DeviceBuffer::zeros(dev, scratch_words)?,
            present: DeviceBuffer::zeros(dev, if n_split_segs == 0 { 0 } else { list.len() })?,
            wide_merge: list
                .split_tasks()
                .iter()
                .any(|t| t.count > WIDE_MERGE_PIECES),
            packed: match pack_budget {
                Some(budget) => {
                    let first = pack_warps(list.segments(), budget);
                    Some(PackedWarps {
                        task: DeviceBuffer::upload(dev, &whole_runs(&list, &first))?,
                        first: DeviceBuffer::upload(dev, &first)?,
                    })
                }
                None => None,
            },
            list,
        })
    }

    /// The host copy.
    pub fn list(&self) -> &TaskList {
        &self.list
    }
}

/// The items a prepared launch runs.
pub enum PreparedTasks {
    All(u64),
    List(Box<DeviceTaskList>),
}

/// Everything a launch needs, resident on the device: launching again
/// re-runs the kernels on the same buffers (what benchmarks time).
pub struct Prepared {
    dev: CudaDevice,
    spec: KernelSpec,
    module: Arc<Module>,
    args: DeviceArgs,
    params: ParamBlock,
    tasks: PreparedTasks,
    decomposition: Decomposition,
    cte_serial_max: u32,
    /// What [`Split::Auto`] chose ([`auto_split`]), when it ran.
    auto_split: Option<Split>,
    fault: DeviceBuffer<u64>,
}

impl Prepared {
    /// Compiles (or fetches) the module, uploads the arguments and, for a
    /// CTE launch over all tasks with [`Split::Auto`] or [`Split::Max`],
    /// builds the task list that bounds each warp's work.
    pub fn new(
        dev: &CudaDevice,
        spec: &KernelSpec,
        config: &LaunchConfig,
        tasks: Tasks<'_>,
        args: &[Arg<'_>],
    ) -> Result<Self> {
        config.decomposition.entry_prefix()?;
        let module = dev.module(spec)?;
        let dargs = DeviceArgs::upload(dev, spec, args)?;
        let params = dargs.pack(dev, spec, args)?;
        let mut p = Prepared {
            dev: dev.clone(),
            spec: *spec,
            module,
            args: dargs,
            params,
            tasks: PreparedTasks::All(0),
            decomposition: config.decomposition,
            cte_serial_max: config.cte_serial_max,
            auto_split: None,
            fault: DeviceBuffer::zeros(dev, FAULT_WORDS)?,
        };
        p.tasks = match tasks {
            Tasks::List(list) => {
                crate::launch::check_u32_items(list.len())?;
                PreparedTasks::List(Box::new(DeviceTaskList::upload(
                    dev,
                    list.clone(),
                    spec.acc.size(),
                    None,
                )?))
            }
            Tasks::All(n) => {
                let n64 = n as u64;
                match (config.decomposition, config.split) {
                    (Decomposition::Cte, Split::Auto | Split::Max(_) | Split::Budget(_))
                        if n > 0 =>
                    {
                        match p.split_list(n, config.split)? {
                            Some((list, budget)) => PreparedTasks::List(Box::new(
                                DeviceTaskList::upload(dev, list, spec.acc.size(), budget)?,
                            )),
                            None => PreparedTasks::All(n64),
                        }
                    }
                    _ => PreparedTasks::All(n64),
                }
            }
            #[allow(unreachable_patterns)]
            _ => {
                return Err(Error::invalid(
                    "this task source is not supported by the CUDA backend",
                ))
            }
        };
        Ok(p)
    }

    /// Runs the size kernel and cuts tasks longer than the chosen segment
    /// length into segments, with the budget the CTE warps are packed by
    /// (none for [`Split::Max`]); `None` when the launch runs all tasks as
    /// they are. With [`Split::Auto`], also records the split chosen and
    /// sets the launch's serial-fallback bound ([`auto_serial_max`]).
    fn split_list(&mut self, n: usize, split: Split) -> Result<Option<(TaskList, Option<u32>)>> {
        check_u32_items(n)?;
        let ranges = DeviceBuffer::<u32>::zeros(&self.dev, 2 * n)?;
        let stats = DeviceBuffer::<u64>::zeros(&self.dev, 4)?;
        let a = LaunchArgs {
            n_items: n as u64,
            sizes: ranges.device_ptr(&self.dev),
            scratch: stats.device_ptr(&self.dev),
            fault: self.fault.device_ptr(&self.dev),
            ..Default::default()
        };
        self.launch_kernel("wf_sizes", grid(n as u64, 1)?, &a)?;
        self.check_fault()?;
        // The statistics first (32 bytes): most launches need no split and
        // never read the ranges back.
        let st = stats.to_vec(&self.dev)?;
        let (max, total, local_warps, busy_warps) = (st[0], st[1], st[2], st[3]);
        let split = match split {
            Split::Auto => {
                let warps = self.dev.resident_warps();
                let local = 2 * local_warps > busy_warps;
                self.cte_serial_max = auto_serial_max(self.cte_serial_max, total, warps, local);
                let chosen = auto_split(max, total, warps);
                self.auto_split = Some(chosen);
                chosen
            }
            s => s,
        };
        let (s, budget) = match split {
            Split::Max(s) if s > 0 => (s, None),
            Split::Max(_) => return Err(Error::invalid("segment length bound must be at least 1")),
            Split::Budget(b) if b > 0 => (b, Some(b)),
            Split::Budget(_) => return Err(Error::invalid("warp work budget must be at least 1")),
            Split::Never | Split::Auto => return Ok(None),
        };
        if budget.is_none() && max <= u64::from(s) {
            return Ok(None);
        }
        let lr = ranges.to_vec(&self.dev)?;
        if lr.contains(&u32::MAX) {
            return Err(Error::invalid(format!(
                "kernel `{}`: fine-task indices reach u32::MAX, too large to split into segments",
                self.spec.name
            )));
        }
        let mut segs = Vec::with_capacity(n + (total / u64::from(s)) as usize);
        for t in 0..n {
            let (lo, hi) = (lr[2 * t], lr[2 * t + 1].max(lr[2 * t]));
            let mut a = lo;
            segs.push(Segment::new(t as u32, a, hi.min(a.saturating_add(s))));
            a = a.saturating_add(s);
            while a < hi {
                segs.push(Segment::new(t as u32, a, hi.min(a.saturating_add(s))));
                a = a.saturating_add(s);
            }
        }
        Ok(Some((TaskList::new(segs)?, budget)))
    }

    fn launch_kernel(&self, name: &str, grid_dim: u32, a: &LaunchArgs) -> Result<()> {
        if grid_dim == 0 {
            return Ok(());
        }
        let f = self.module.function(name)?;
        let cfg = CuLaunch {
            grid_dim: (grid_dim, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.dev.stream().launch_builder(f);
        b.arg(&self.params);
        b.arg(a);
        // SAFETY: the entry point takes (Params by value, LaunchArgs by value);
        // `params` was packed from this kernel's spec and every pointer in
        // both structs refers to a live buffer owned by `self` (or by the
        // caller until the launch completes).
        unsafe { b.launch(cfg) }.map_err(cuda_err(format!(
            "launching `{name}` of kernel `{}`",
            self.spec.name
        )))?;
        Ok(())
    }

    /// Launches the merge of split tasks as a programmatic dependent of the
    /// task-list launch before it (sm_90 and newer): the merge grid may be
    /// scheduled while the task-list grid runs its last blocks, and waits
    /// for its completion on the device (`wait_for_primary` in merge.cuh).
    fn launch_dependent(&self, name: &str, grid_dim: u32, a: &LaunchArgs) -> Result<()> {
        use cudarc::driver::sys;
        if grid_dim == 0 {
            return Ok(());
        }
        let f = self.module.function(name)?;
        let context = || format!("launching `{name}` of kernel `{}`", self.spec.name);
        self.dev
            .context()
            .bind_to_thread()
            .map_err(cuda_err(context()))?;
        // SAFETY: the union is plain data; only the field the id names is read.
        let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.programmaticStreamSerializationAllowed = 1;
        let mut attr = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value,
        };
        let cfg = sys::CUlaunchConfig {
            gridDimX: grid_dim,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: BLOCK,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 0,
            hStream: self.dev.stream().cu_stream(),
            attrs: &mut attr,
            numAttrs: 1,
        };
        let mut params: [*mut std::ffi::c_void; 2] = [
            (&self.params as *const ParamBlock).cast_mut().cast(),
            (a as *const LaunchArgs).cast_mut().cast(),
        ];
        // SAFETY: as in `launch_kernel`: the entry point takes (Params,
        // LaunchArgs) by value, the driver copies them from `params` before
        // returning, and every pointer inside refers to a live buffer.
        let r = unsafe {
            sys::cuLaunchKernelEx(
                &cfg,
                f.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        r.result().map_err(cuda_err(context()))
    }

    /// Enqueues the launch (main kernel, then the merge of split tasks).
    /// Asynchronous: call [`Prepared::check_fault`] or [`Prepared::finish`].
    pub fn run(&self) -> Result<()> {
        let prefix = self.decomposition.entry_prefix()?;
        let tpi = self.decomposition.threads_per_item();
        let fault = self.fault.device_ptr(&self.dev);
        match &self.tasks {
            PreparedTasks::All(n) => {
                let a = LaunchArgs {
                    n_items: *n,
                    fault,
                    cte_serial_max: self.cte_serial_max,
                    ..Default::default()
                };
                self.launch_kernel(&format!("{prefix}_all"), grid(*n, tpi)?, &a)
            }
            PreparedTasks::List(l) => {
                let (n_warps, warp_first, warp_task) = match &l.packed {
                    Some(pw) if self.decomposition == Decomposition::Cte => (
                        pw.first.len() as u32 - 1,
                        pw.first.device_ptr(&self.dev),
                        pw.task.device_ptr(&self.dev),
                    ),
                    _ => (0, 0, 0),
                };
                let a = LaunchArgs {
                    n_items: l.list.len() as u64,
                    n_warps,
                    warp_first,
                    warp_task,
                    segments: l.segments.device_ptr(&self.dev),
                    whole: l.whole.device_ptr(&self.dev),
                    scratch: l.scratch.device_ptr(&self.dev),
                    present: l.present.device_ptr(&self.dev),
                    split: l.split.device_ptr(&self.dev),
                    split_segments: l.split_segments.device_ptr(&self.dev),
                    fault,
                    cte_serial_max: self.cte_serial_max,
                    ..Default::default()
                };
                let blocks = if warp_first != 0 {
                    grid(u64::from(n_warps), 32)?
                } else {
                    grid(a.n_items, tpi)?
                };
                self.launch_kernel(&format!("{prefix}_list"), blocks, &a)?;
                let n_split = l.list.split_tasks().len() as u64;
                if n_split > 0 {
                    let m = LaunchArgs {
                        n_items: n_split,
                        ..a
                    };
                    let (name, lanes) = if l.wide_merge {
                        ("wf_merge_wide", MERGE_LANES_WIDE)
                    } else {
                        ("wf_merge", MERGE_LANES)
                    };
                    let blocks = grid(n_split, lanes)?;
                    if self.dev.arch() >= crate::Arch::new(9, 0) {
                        self.launch_dependent(name, blocks, &m)?;
                    } else {
                        self.launch_kernel(name, blocks, &m)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// Waits for the launch and turns a recorded fault into the error the
    /// CPU twin returns for it.
    pub fn check_fault(&self) -> Result<()> {
        let words = self.fault.to_vec(&self.dev)?;
        let rec = FaultRecord {
            claimed: words[0] as u32,
            kind: (words[0] >> 32) as u32,
            array: words[1] as u32,
            pad: (words[1] >> 32) as u32,
            task: words[2],
            index: words[3],
            aux0: words[4],
            aux1: words[5],
        };
        if rec.claimed == 0 {
            return Ok(());
        }
        Err(self.fault_error(&rec))
    }

    fn fault_error(&self, rec: &FaultRecord) -> Error {
        let name = self.spec.name;
        let task = rec.task as usize;
        match rec.kind {
            1 => match self.spec.params.get(rec.array as usize) {
                Some(p) => Fault::Index {
                    array: p.name,
                    index: rec.index,
                    len: self.args.lens[rec.array as usize],
                }
                .into_error(name, task),
                None => Error::Cuda {
                    context: format!("kernel `{name}`, task {task}"),
                    message: format!(
                        "out-of-range index {} into unknown parameter {}",
                        rec.index, rec.array
                    ),
                },
            },
            2 => Fault::DivisionByZero.into_error(name, task),
            3 => {
                let seg = match &self.tasks {
                    PreparedTasks::List(l) => l.list.segments().get(rec.index as usize).copied(),
                    PreparedTasks::All(_) => None,
                }
                .unwrap_or_default();
                Fault::SegmentOutOfRange {
                    lo: u64::from(seg.lo),
                    hi: u64::from(seg.hi),
                    task_lo: rec.aux0,
                    task_hi: rec.aux1,
                }
                .into_error(name, task)
            }
            k => Error::Cuda {
                context: format!("kernel `{name}`"),
                message: format!("unknown fault kind {k} in the fault record"),
            },
        }
    }

    /// Waits, checks the fault word and downloads the outputs into `args`.
    pub fn finish(&self, args: &mut [Arg<'_>]) -> Result<()> {
        self.check_fault()?;
        self.args.download_outputs(&self.dev, args)
    }

    /// The device buffers of the arguments.
    pub fn args(&self) -> &DeviceArgs {
        &self.args
    }

    /// What [`Split::Auto`] chose for this launch ([`auto_split`]; `None`
    /// when the launch was configured otherwise).
    pub fn chosen_split(&self) -> Option<Split> {
        self.auto_split
    }

    /// The launch's serial-fallback bound (`cte_serial_max`, after
    /// [`auto_serial_max`]).
    pub fn cte_serial_max(&self) -> u32 {
        self.cte_serial_max
    }

    /// The task list the launch runs, when it runs one (given, or built by
    /// an automatic split).
    pub fn task_list(&self) -> Option<&TaskList> {
        match &self.tasks {
            PreparedTasks::List(l) => Some(&l.list),
            PreparedTasks::All(_) => None,
        }
    }
}

/// Task lists and automatic splits address items with u32 ids.
pub(crate) fn check_u32_items(n: usize) -> Result<()> {
    warpfit_runtime::error::to_u32("number of launch items", n).map(|_| ())
}

/// Blocks for `n` items of `threads_per_item` threads.
fn grid(n: u64, threads_per_item: u64) -> Result<u32> {
    let blocks = (n * threads_per_item).div_ceil(u64::from(BLOCK));
    u32::try_from(blocks)
        .ok()
        .filter(|&b| b < (1u32 << 31))
        .ok_or_else(|| {
            Error::invalid(format!(
                "{n} items need {blocks} blocks, more than CUDA's grid allows"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ParamSpec, ScalarType};

    #[test]
    fn params_follow_c_layout() {
        let mut b = ParamBlock::new();
        b.push(8, &1u64.to_ne_bytes()).unwrap(); // const T*
        b.push(8, &2u64.to_ne_bytes()).unwrap(); // len
        b.push(4, &3u32.to_ne_bytes()).unwrap(); // u32 scalar
        b.push(1, &[1]).unwrap(); // bool
        b.push(8, &4u64.to_ne_bytes()).unwrap(); // next pointer aligns to 8
        assert_eq!(b.as_bytes().len(), 32);
        assert_eq!(&b.as_bytes()[16..20], &3u32.to_ne_bytes());
        assert_eq!(b.as_bytes()[20], 1);
        assert_eq!(&b.as_bytes()[24..32], &4u64.to_ne_bytes());
    }

    #[test]
    fn launch_args_match_the_device_struct() {
        // 9 pointers/counts + 2 u32 + 2 pointers = 96 bytes, as in task_source.cuh.
        assert_eq!(std::mem::size_of::<LaunchArgs>(), 96);
        assert_eq!(std::mem::size_of::<FaultRecord>(), 48);
    }

    #[test]
    fn argument_mismatches_are_named() {
        static SPEC: KernelSpec = KernelSpec {
            name: "k",
            cuda_source: "",
            device_fns: &[],
            params: &[
                ParamSpec {
                    name: "x",
                    ty: ScalarType::F32,
                    kind: ParamKind::Input,
                },
                ParamSpec {
                    name: "y",
                    ty: ScalarType::F32,
                    kind: ParamKind::Output,
                },
            ],
            acc: ScalarType::F32,
        };
        let x = [1.0f64];
        let mut y = [0.0f32];
        let e = check_args(&SPEC, &[Arg::input(&x), Arg::output(&mut y)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("argument 0 (`x`) must be &[f32], got &[f64]"),
            "{e}"
        );
        let e = check_args(&SPEC, &[Arg::input(&x)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("takes 2 arguments after the task index, got 1"),
            "{e}"
        );
        let xs = [1.0f32];
        assert!(check_args(&SPEC, &[Arg::input(&xs), Arg::output(&mut y)]).is_ok());
    }

    proptest::proptest! {
        /// Groups are contiguous and cover the list in order, hold 1 to 32
        /// segments, and stay within the budget unless they are one segment.
        #[test]
        fn packed_warps_respect_count_and_budget(
            lens in proptest::collection::vec(0u32..300, 0..400),
            budget in 1u32..1200,
        ) {
            let mut at = 0u32;
            let segs: Vec<Segment> = lens
                .iter()
                .enumerate()
                .map(|(t, &l)| {
                    at += l;
                    Segment::new(t as u32, at - l, at)
                })
                .collect();
            let first = pack_warps(&segs, budget);
            proptest::prop_assert_eq!(first[0], 0);
            proptest::prop_assert_eq!(*first.last().unwrap() as usize, segs.len());
            for g in first.windows(2) {
                let n = g[1] - g[0];
                proptest::prop_assert!((1..=32).contains(&n) || segs.is_empty());
                let work: u64 = (g[0]..g[1]).map(|i| u64::from(lens[i as usize])).sum();
                proptest::prop_assert!(n == 1 || work <= u64::from(budget));
                // Greedy: the next segment did not fit (or the group was full).
                if let Some(&next) = lens.get(g[1] as usize) {
                    proptest::prop_assert!(n == 32 || work + u64::from(next) > u64::from(budget));
                }
            }
        }
    }

    #[test]
    fn whole_runs_name_groups_of_whole_consecutive_tasks() {
        // Tasks 0-2 whole, task 3 in two pieces, task 4 whole, task 6 then 5.
        let segs = vec![
            Segment::new(0, 0, 4),
            Segment::new(1, 4, 8),
            Segment::new(2, 8, 9),
            Segment::new(3, 9, 20),
            Segment::new(3, 20, 30),
            Segment::new(4, 30, 31),
            Segment::new(6, 40, 41),
            Segment::new(5, 31, 40),
        ];
        let list = TaskList::new(segs).unwrap();
        let first = [0, 3, 4, 5, 6, 8];
        assert_eq!(
            whole_runs(&list, &first),
            vec![0, u32::MAX, u32::MAX, 4, u32::MAX]
        );
        assert_eq!(whole_runs(&list, &[0, 8]), vec![u32::MAX]);
        assert_eq!(whole_runs(&list, &[0, 1]), vec![0]);
    }

    #[test]
    fn grid_counts_threads_per_item() {
        assert_eq!(grid(256, 1).unwrap(), 1);
        assert_eq!(grid(257, 1).unwrap(), 2);
        assert_eq!(grid(256, 32).unwrap(), 32);
        assert_eq!(grid(0, 4).unwrap(), 0);
        assert!(grid(u64::from(u32::MAX) * 64, 32).is_err());
    }
}
