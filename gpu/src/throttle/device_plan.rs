//! Plans made on the device, from the range and index arrays the handle
//! already holds there, for `auto` by the cost model
//! (`autotune::auto_by_model`): no host partition, no host round trip but
//! a few words of statistics and error flags.
//!
//! - **Column blocks** ([`DevicePlan::ColumnBlocks`]): each task's fine
//!   tasks grouped by the block of their gathered element (a stable
//!   counting sort per task, `plan.cuh`), laid out part-major with one
//!   range array per block; `cf` runs it as carried launches. The same
//!   partition as the host's `Partitioner::Columns` of the same block
//!   count.
//! - **Level order** ([`DevicePlan::Levels`]): the breadth-first order of
//!   a square pattern made on the device (`levels.cuh`), the layout
//!   renumbered by it on both sides; `org_r` runs it as one launch, with
//!   the per-launch vectors permuted on the device.
//!
//! The decision is kept ([`Throttled::device_choice`]) so that a launch
//! over other arrays prepares the same schedule over the same layout, and
//! written to the plan cache (`plan_cache`) so that the next run over the
//! same arrays starts from it.

use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::errors::cuda_err;
use crate::engines::gather_layouts::{DeviceGather, LayoutKernels};
use crate::engines::level_order::{
    level_order_into, DeviceLevelOrder, DevicePattern, LevelRun, Roots,
};
use crate::engines::plan_kernels::{plan_kernels, DeviceShape, MAX_COLUMN_BLOCKS};
use crate::launch::device_vec::DeviceVec;
use crate::spec::ScalarType;
use crate::throttle::device_layouts::{DeviceLayout, Space};
use crate::throttle::erased_vec::ErasedVec;
use crate::throttle::handle::{Schedule, Throttled};
use crate::throttle::layout_set::{LevelOrderBuffers, RemapTables};
pub use crate::throttle::plan_choice::DevicePlan;
use crate::throttle::report::ModelReport;
use crate::throttle::slots::Slot;
use std::sync::Arc;
use warpfit_runtime::schedule::{RemapOrder, ThrottlePolicy};
use warpfit_runtime::{Error, Result};

/// Levels the device level order may take before the model gives the
/// order up (a long-diameter pattern: a path, a long chain of small
/// components), at a few microseconds a level.
pub(in crate::throttle) const MAX_LEVEL_ROUNDS: usize = 4096;

/// The roots the model's level order starts from, spread over the rows
/// (`level_order::spread_roots`): a graph of long diameter (a geometric
/// graph, a mesh) is numbered in about `1/√roots` of the rounds of one
/// root in two dimensions (`1/∛roots` in three), each round a launch of
/// four kernels, and each level is still a band of rings whose warps
/// gather from their own ring and the two beside it. Measurements:
/// BENCHMARKS.md, "Task lists cut on the device, the level order from
/// several roots".
pub const LEVEL_ROOTS: usize = 128;

/// What [`Throttled::levels_layout`] made.
pub(in crate::throttle) enum LevelsLayout {
    /// The renumbered layout and its permutations, and the time the
    /// order itself took (the rest is the layout's).
    Built(Box<(DeviceLayout, RemapTables)>, std::time::Duration),
    /// The order was given up: too many levels, or one too wide.
    GivenUp(LevelRun),
}

/// A `u32` copy of `n` words at `src` on `dev`.
pub(in crate::throttle) fn copy_u32(
    dev: &CudaDevice,
    src: u64,
    n: usize,
) -> Result<DeviceBuffer<u32>> {
    let out = DeviceBuffer::<u32>::zeros(dev, n)?;
    if n > 0 {
        // SAFETY: `out` holds `n` words; the callers pass an allocation of
        // at least `n` words at `src`.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(
                out.device_ptr(dev),
                src,
                4 * n,
                dev.stream().cu_stream(),
            )
        }
        .map_err(crate::driver::errors::cuda_err(
            "copying an order on the device",
        ))?;
    }
    Ok(out)
}

/// A level order made on the device (`order`, `position`), or the order's
/// outcome where it was given up.
pub(in crate::throttle) type MadeOrder =
    std::result::Result<(DeviceBuffer<u32>, DeviceBuffer<u32>), LevelRun>;

impl Throttled {
    /// Whether this handle plans on the device: `auto` by the model on a
    /// CUDA device.
    pub(in crate::throttle) fn plans_on_device(&self) -> bool {
        self.device.cuda().is_some() && (self.options.decides_by_model() || self.columns.is_some())
    }

    /// The kernel's range and index arrays on the device, or why the
    /// device cannot plan over them (not `u32`, no index array).
    pub(in crate::throttle) fn device_shape(&self) -> std::result::Result<DeviceShape, String> {
        let array = |i: usize| match &self.slots[i] {
            Slot::Shape(Some(v)) if v.ty() == ScalarType::U32 => v
                .device_ptr()
                .map(|p| (p, v.len()))
                .map_err(|e| e.to_string()),
            Slot::Shape(Some(v)) => Err(format!(
                "`{}` holds {}, and device plans read u32",
                self.spec.params[i].name,
                v.ty().rust_name()
            )),
            _ => Err(format!("`{}` was released", self.spec.params[i].name)),
        };
        let index = self.roles.gather_index.ok_or_else(|| {
            format!(
                "the gathered array `{}` is not read through a u32 index array at the fine-task index",
                self.spec.params[self.roles.first_gathered()].name
            )
        })?;
        let (ptr, ptr_len) = array(self.roles.range)?;
        let (idx, nnz) = array(index)?;
        if ptr_len <= self.n_tasks {
            return Err(format!(
                "the range array has {ptr_len} entries for {} tasks",
                self.n_tasks
            ));
        }
        Ok(DeviceShape {
            ptr,
            idx,
            n: self.n_tasks,
            nnz,
            n_gathered: self.gathered_len,
        })
    }

    /// A u32 per fine task on the device, for a layout's permutation: it
    /// becomes the gathered index array's permuted copy
    /// ([`Throttled::permuted_fine_in_place`]).
    fn permutation_buffer(&self, nnz: usize) -> Result<(ErasedVec, usize)> {
        let index = self.roles.gather_index.ok_or_else(|| {
            Error::invalid(format!(
                "kernel `{}`: no u32 index array to permute in place",
                self.spec.name
            ))
        })?;
        if !self.roles.fine.contains(&index) {
            return Err(Error::invalid("the index array is not a fine array"));
        }
        Ok((ErasedVec::zeros(&self.device, ScalarType::U32, nnz)?, index))
    }

    /// Every fine array permuted by `perm` (`perm[new] = old`, from
    /// [`Throttled::permutation_buffer`], `index` the gathered index
    /// array): the others gathered through it first, then the index array
    /// gathered into `perm` itself, each element read and then written by
    /// one thread. A layout then allocates no buffer for its permutation:
    /// at 2^24 rows of 16, 1 GiB of fresh device memory, about 4 ms.
    fn permuted_fine_in_place(
        &self,
        kernels: &LayoutKernels,
        dev: &CudaDevice,
        perm: ErasedVec,
        index: usize,
        nnz: usize,
    ) -> Result<Vec<(usize, ErasedVec)>> {
        let p = perm.device_ptr()?;
        let gather = |out: &ErasedVec, v: &ErasedVec| {
            if v.len() != nnz {
                return Err(Error::invalid(format!(
                    "kernel `{}`: a fine array has {} elements for {nnz} fine tasks",
                    self.spec.name,
                    v.len()
                )));
            }
            let w = v.ty().size();
            kernels.gather(
                dev,
                w,
                out.device_ptr()?,
                v.device_ptr()?,
                nnz as u64,
                p,
                nnz as u64,
            )
        };
        let fine = self.original_fine()?;
        let mut out = Vec::with_capacity(fine.len());
        for &(i, v) in fine.iter().filter(|(i, _)| *i != index) {
            let o = ErasedVec::zeros(&self.device, v.ty(), nnz)?;
            gather(&o, v)?;
            out.push((i, o));
        }
        let (_, original) = fine
            .iter()
            .find(|(i, _)| *i == index)
            .ok_or_else(|| Error::invalid("the index array is not a fine array"))?;
        gather(&perm, original)?;
        out.push((index, perm));
        // In the handle's order of fine arrays.
        out.sort_by_key(|(i, _)| self.roles.fine.iter().position(|f| f == i));
        Ok(out)
    }

    /// The part-major layout of `k` column blocks, built on the device.
    pub(in crate::throttle) fn column_blocks_layout(
        &self,
        dev: &CudaDevice,
        shape: DeviceShape,
        k: usize,
    ) -> Result<DeviceLayout> {
        if !(1..=MAX_COLUMN_BLOCKS).contains(&k) {
            return Err(Error::invalid(format!(
                "kernel `{}`: device column blocks: {k} blocks; between 1 and {MAX_COLUMN_BLOCKS}",
                self.spec.name
            )));
        }
        let width = shape.n_gathered.div_ceil(k).max(1);
        let (perm, index) = self.permutation_buffer(shape.nnz)?;
        let offsets = plan_kernels(dev)?.column_blocks(dev, shape, width, k, buffer_of(&perm)?)?;
        let kernels = dev.extension::<LayoutKernels>()?;
        let fine = self.permuted_fine_in_place(&kernels, dev, perm, index, shape.nnz)?;
        let base = offsets.device_ptr(dev);
        let ptrs = (0..k)
            .map(|b| {
                let at = base + 4 * (b * shape.n) as u64;
                ErasedVec::copy_of_device(&self.device, at, ScalarType::U32, shape.n + 1)
            })
            .collect::<Result<Vec<_>>>()?;
        kernels.check(
            dev,
            &format!("kernel `{}`: device column blocks", self.spec.name),
        )?;
        Ok(DeviceLayout {
            space: Space::Original,
            ptrs,
            fine,
            cover: None,
            delta: None,
        })
    }

    /// The layout renumbered by the breadth-first level order, built on
    /// the device, with its permutations; given up (the order's outcome)
    /// when the order took more than [`MAX_LEVEL_ROUNDS`] levels or found a
    /// level of more than `width_limit` rows.
    pub(in crate::throttle) fn levels_layout(
        &self,
        dev: &CudaDevice,
        shape: DeviceShape,
        width_limit: u64,
    ) -> Result<LevelsLayout> {
        let started = std::time::Instant::now();
        let (order, position) = match self.level_order_only(dev, shape, width_limit)? {
            Ok(made) => made,
            Err(run) => return Ok(LevelsLayout::GivenUp(run)),
        };
        // The order's own time (it waits for the device at its end).
        let order_time = started.elapsed();
        let built = self.layout_in_order(dev, shape, order, position)?;
        Ok(LevelsLayout::Built(Box::new(built), order_time))
    }

    /// The breadth-first level order of `shape`'s rows, made on the device
    /// (waiting for it at its end): `order` and `position`, or the order's
    /// outcome where it was given up (as [`Throttled::levels_layout`]).
    pub(in crate::throttle) fn level_order_only(
        &self,
        dev: &CudaDevice,
        shape: DeviceShape,
        width_limit: u64,
    ) -> Result<MadeOrder> {
        self.renumbered_index()?;
        let n = shape.n;
        let order = DeviceBuffer::<u32>::zeros(dev, n.max(1))?;
        let position = DeviceBuffer::<u32>::zeros(dev, n.max(1))?;
        let (o, p) = (order.device_ptr(dev), position.device_ptr(dev));
        let pattern = DevicePattern {
            ptr: shape.ptr,
            col: shape.idx,
            n,
            nnz: shape.nnz,
        };
        let run = level_order_into(
            dev,
            pattern,
            Roots {
                first: 0,
                count: LEVEL_ROOTS,
            },
            MAX_LEVEL_ROUNDS,
            width_limit,
            o,
            p,
        )?;
        Ok(match run {
            LevelRun::Done { .. } => Ok((order, position)),
            other => Err(other),
        })
    }

    /// The index array's position among the parameters, where the kernel
    /// can be renumbered.
    fn renumbered_index(&self) -> Result<usize> {
        self.roles.index.ok_or_else(|| {
            Error::invalid(format!(
                "kernel `{}`: cannot be renumbered: {}",
                self.spec.name, self.roles.remap_refused
            ))
        })
    }

    /// The layout renumbered by the row order `order` (`order[new] =
    /// old`, a permutation of `shape`'s rows) and its inverse `position`,
    /// with the permutations the launches gather through.
    pub(in crate::throttle) fn layout_in_order(
        &self,
        dev: &CudaDevice,
        shape: DeviceShape,
        order: DeviceBuffer<u32>,
        position: DeviceBuffer<u32>,
    ) -> Result<(DeviceLayout, RemapTables)> {
        let index = self.renumbered_index()?;
        let n = shape.n;
        if order.len() < n || position.len() < n {
            return Err(Error::invalid(format!(
                "kernel `{}`: a row order of {} words for {n} rows",
                self.spec.name,
                order.len().min(position.len())
            )));
        }
        let (o, p) = (order.device_ptr(dev), position.device_ptr(dev));
        let (perm, gathered) = self.permutation_buffer(shape.nnz)?;
        let rows_ptr = plan_kernels(dev)?.row_order(dev, shape, o, buffer_of(&perm)?)?;
        let kernels = dev.extension::<LayoutKernels>()?;
        let fine = self.permuted_fine_in_place(&kernels, dev, perm, gathered, shape.nnz)?;
        // The index array renamed in place: new[k] = position[old index at
        // k] (each element read, then written, by one thread).
        let (_, slot) = fine
            .iter()
            .find(|(i, _)| *i == index)
            .ok_or_else(|| Error::invalid("the index array is not a fine array"))?;
        let at = slot.device_ptr()?;
        kernels.gather(dev, 4, at, p, n as u64, at, shape.nnz as u64)?;
        let ptr = ErasedVec::copy_of_device(
            &self.device,
            rows_ptr.device_ptr(dev),
            ScalarType::U32,
            n + 1,
        )?;
        kernels.check(
            dev,
            &format!(
                "kernel `{}`: the device level order's layout",
                self.spec.name
            ),
        )?;
        let tables = RemapTables {
            task_perm: DeviceGather::Direct(copy_u32(dev, o, n)?),
            gathered_perm: DeviceGather::Direct(order),
            task_inv: DeviceGather::Direct(position),
            scratch: None,
        };
        let layout = DeviceLayout {
            space: Space::Remapped,
            ptrs: vec![ptr],
            fine,
            cover: None,
            delta: None,
        };
        Ok((layout, tables))
    }

    /// The schedule of `plan` over its layout: the one kept from an
    /// earlier launch, else built on the device (`shape`: the arrays).
    pub(in crate::throttle) fn device_schedule(
        &mut self,
        dev: &CudaDevice,
        plan: DevicePlan,
    ) -> Result<Schedule> {
        if plan == DevicePlan::Org {
            return self.single(dev, ThrottlePolicy::Org, None);
        }
        if plan == DevicePlan::Levels && self.options.caller_renumbers {
            // The caller renumbers by the order; the handle runs `org`.
            if self.layouts.caller_order.is_none() {
                let shape = self.device_shape().map_err(|why| {
                    Error::invalid(format!(
                        "kernel `{}`: no device plan: {why}",
                        self.spec.name
                    ))
                })?;
                let Ok((order, position)) = self.level_order_only(dev, shape, u64::MAX)? else {
                    return Err(Error::invalid(format!(
                        "kernel `{}`: the level order took more than {MAX_LEVEL_ROUNDS} levels",
                        self.spec.name
                    )));
                };
                self.layouts.caller_order = Some(LevelOrderBuffers { order, position });
            }
            return self.single(dev, ThrottlePolicy::Org, None);
        }
        let layout = match self.layouts.device.clone() {
            Some(l) => l,
            None => {
                let shape = self.device_shape().map_err(|why| {
                    Error::invalid(format!(
                        "kernel `{}`: no device plan: {why}",
                        self.spec.name
                    ))
                })?;
                let l = match plan {
                    DevicePlan::ColumnBlocks { k } => self.column_blocks_layout(dev, shape, k)?,
                    DevicePlan::Levels => {
                        let LevelsLayout::Built(built, _) =
                            self.levels_layout(dev, shape, u64::MAX)?
                        else {
                            return Err(Error::invalid(format!(
                                "kernel `{}`: the level order took more than {MAX_LEVEL_ROUNDS} levels",
                                self.spec.name
                            )));
                        };
                        let (l, tables) = *built;
                        self.layouts.tables = Some(tables);
                        l
                    }
                    DevicePlan::Org => unreachable!("returned above"),
                };
                let l = Arc::new(l);
                self.layouts.device = Some(l.clone());
                l
            }
        };
        self.schedule_over(dev, plan, layout)
    }

    /// `plan`'s schedule over its built `layout`.
    pub(in crate::throttle) fn schedule_over(
        &mut self,
        dev: &CudaDevice,
        plan: DevicePlan,
        layout: Arc<DeviceLayout>,
    ) -> Result<Schedule> {
        match plan {
            DevicePlan::Levels => {
                // The per-launch arrays' remapped copies.
                self.remap_tables(dev)?;
                self.single(dev, ThrottlePolicy::OrgR, Some(layout))
            }
            _ => self.carried(dev, ThrottlePolicy::Cf, layout),
        }
    }

    /// Runs `plan` from the next launch on, built on the device, instead
    /// of deciding: a plan the caller knows (a cached one, or one to
    /// compare). Only for `auto` by the model on a CUDA device, before the
    /// first launch has chosen.
    ///
    /// # Errors
    /// Another policy or backend, or a choice already made.
    #[doc(hidden)]
    pub fn pin_device_plan(&mut self, plan: DevicePlan) -> Result<()> {
        if !self.plans_on_device() {
            return Err(Error::invalid(format!(
                "kernel `{}`: only auto by the model on a CUDA device plans on the device",
                self.spec.name
            )));
        }
        if self.schedule.is_some() || self.device_choice.is_some() {
            return Err(Error::invalid(format!(
                "kernel `{}`: the first launch has chosen already",
                self.spec.name
            )));
        }
        if plan == DevicePlan::Levels && self.roles.index.is_none() {
            return Err(Error::invalid(format!(
                "kernel `{}`: the level order renumbers tasks and gathered elements, and this kernel cannot be renumbered: {}",
                self.spec.name, self.roles.remap_refused
            )));
        }
        if let DevicePlan::ColumnBlocks { k } = plan {
            if !(2..=MAX_COLUMN_BLOCKS).contains(&k) {
                return Err(Error::invalid(format!(
                    "device column blocks: {k} blocks; between 2 and {MAX_COLUMN_BLOCKS}"
                )));
            }
        }
        self.device_choice = Some(plan);
        let mut report = ModelReport::new();
        report.reason = format!("pinned: {plan}");
        self.report.model = Some(report);
        Ok(())
    }

    /// The level order of a device plan, read back.
    pub(in crate::throttle) fn download_device_order(&self) -> Result<Vec<u32>> {
        match (self.device.cuda(), self.layouts.level_order()) {
            (Some(dev), Some((order, _))) => order.to_vec(dev),
            _ => Err(Error::invalid("no device order")),
        }
    }

    /// The level order the chosen device plan runs in, copied on the
    /// device into vectors the caller owns (an application renumbering
    /// the rest of its work by the same order need not make it again);
    /// `None` when the plan chosen is not the level order.
    ///
    /// # Errors
    /// Device memory for the copies, device errors.
    pub fn device_level_order(&self) -> Result<Option<DeviceLevelOrder>> {
        let (Some(dev), Some(DevicePlan::Levels)) = (self.device.cuda(), self.device_choice) else {
            return Ok(None);
        };
        let Some((order, position)) = self.layouts.level_order() else {
            return Ok(None);
        };
        let n = self.n_tasks;
        let copy = |from: &DeviceBuffer<u32>| -> Result<DeviceVec<u32>> {
            let to = self.device.alloc::<u32>(n)?;
            if n > 0 {
                let dst = to
                    .cuda_ptr()
                    .ok_or_else(|| Error::invalid("the level order's copy is not on the device"))?;
                // SAFETY: `dst` is the new allocation of `n` u32; `from` is
                // the plan's permutation of `n` u32 on the same device.
                unsafe {
                    cudarc::driver::result::memcpy_dtod_async(
                        dst,
                        from.device_ptr(dev),
                        4 * n,
                        dev.stream().cu_stream(),
                    )
                }
                .map_err(cuda_err("copying the level order on the device"))?;
            }
            Ok(to)
        };
        Ok(Some(DeviceLevelOrder {
            order: copy(order)?,
            position: copy(position)?,
            rounds: 0,
        }))
    }

    /// The level order's remapping order, for the report.
    pub(in crate::throttle) fn device_remap_order(&self) -> Option<RemapOrder> {
        (self.device_choice == Some(DevicePlan::Levels)).then_some(RemapOrder::Levels)
    }
}

/// The device buffer of a permutation made by
/// [`Throttled::permutation_buffer`] (on CUDA, always there).
fn buffer_of(perm: &ErasedVec) -> Result<&crate::driver::buffer::DeviceBuffer<u8>> {
    perm.device_buffer()
        .ok_or_else(|| Error::invalid("a device layout's permutation is not on the device"))
}
