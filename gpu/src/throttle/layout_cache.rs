//! The throttled handle's layouts of its shape arrays beyond the originals
//! ([`Layouts`]): the plan's order in each numbering, every partition
//! alone, the chosen SJ cover, and the remapped plan's permutations on the
//! device ([`RemapTables`]), each built once and shared with the schedules
//! that read it, and dropped once the chosen schedule no longer does.

use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::event_timer::EventTimer;
use crate::engines::gather_layouts::{DeviceGather, LayoutKernels};
use crate::throttle::device_layouts::{Builder, DeviceLayout, Space};
use crate::throttle::erased_vec::ErasedVec;
use crate::throttle::handle::{Schedule, Throttled};
use crate::throttle::host_plan::PlanDetail;
use crate::throttle::slots::Slot;
use std::ops::Range;
use std::sync::Arc;
use warpfit_runtime::schedule::{CacheFitPlan, ThrottlePolicy};
use warpfit_runtime::{Error, Result};

use crate::throttle::layout_set::RemapTables;

impl Throttled {
    pub(in crate::throttle) fn detail(&self) -> Result<&PlanDetail> {
        self.plan
            .as_ref()
            .and_then(|p| p.detail.as_ref())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "kernel `{}`: no plan of several partitions",
                    self.spec.name
                ))
            })
    }

    /// The numbering `cf`, `cfq`, `sj` and `sjq` run in.
    pub(in crate::throttle) fn plan_space(&self) -> Space {
        if self.options.remap {
            Space::Remapped
        } else {
            Space::Original
        }
    }

    /// The plan in `space`'s numbering.
    pub(in crate::throttle) fn plan_in(&self, space: Space) -> Result<&CacheFitPlan> {
        let d = self.detail()?;
        match space {
            Space::Original => Ok(&d.plan),
            Space::Remapped => d.remapped.as_ref().ok_or_else(|| {
                Error::invalid(format!(
                    "kernel `{}`: the plan was made without remapping",
                    self.spec.name
                ))
            }),
        }
    }

    pub(in crate::throttle) fn builder<'a>(
        &'a self,
        dev: &'a CudaDevice,
        kernels: &'a crate::engines::gather_layouts::LayoutKernels,
    ) -> Result<Builder<'a>> {
        let range_ty = self.spec.params[self.roles.range].ty;
        Ok(Builder {
            device: &self.device,
            dev,
            kernels,
            range_ty,
            n_tasks: self.n_tasks,
            kernel: self.spec.name,
        })
    }

    /// The original fine arrays on the device, by parameter.
    pub(in crate::throttle) fn original_fine(&self) -> Result<Vec<(usize, &ErasedVec)>> {
        self.roles
            .fine
            .iter()
            .map(|&i| match &self.slots[i] {
                Slot::Shape(Some(v)) => Ok((i, v)),
                _ => Err(Error::invalid(format!(
                    "kernel `{}`: the original `{}` was released",
                    self.spec.name, self.spec.params[i].name
                ))),
            })
            .collect()
    }

    /// The plan's order in `space`, built on first use.
    pub(in crate::throttle) fn sorted(
        &mut self,
        dev: &CudaDevice,
        space: Space,
    ) -> Result<Arc<DeviceLayout>> {
        if let Some(l) = match space {
            Space::Original => &self.layouts.sorted,
            Space::Remapped => &self.layouts.remapped,
        } {
            return Ok(l.clone());
        }
        let kernels = dev.extension::<LayoutKernels>()?;
        let built = {
            let b = self.builder(dev, &kernels)?;
            let mut built = match space {
                Space::Original => {
                    let d = self.detail()?;
                    b.sorted(&self.original_fine()?, &d.plan, &d.ptr)?
                }
                Space::Remapped => {
                    let index = self.roles.index.ok_or_else(|| {
                        Error::invalid(format!(
                            "kernel `{}`: cannot be remapped: {}",
                            self.spec.name, self.roles.remap_refused
                        ))
                    })?;
                    // Only `org_r` runs remapped unless the cache-fit
                    // schedules do too (`ThrottleOptions::remap`), and its
                    // single launch needs no partition's share of a row
                    // together: rows sorted by their new column.
                    let rows_sorted = if self.options.remap {
                        None
                    } else {
                        b.remapped_rows_sorted(
                            &self.original_fine()?,
                            self.detail()?,
                            index,
                            self.gathered_len,
                        )?
                    };
                    match rows_sorted {
                        Some(l) => l,
                        None => {
                            let sorted = match &self.layouts.sorted {
                                Some(s) => s.clone(),
                                None => {
                                    let d = self.detail()?;
                                    Arc::new(b.sorted(&self.original_fine()?, &d.plan, &d.ptr)?)
                                }
                            };
                            b.remapped(&sorted, self.detail()?, index, self.gathered_len)?
                        }
                    }
                }
            };
            self.narrow_index(&b, &mut built)?;
            Arc::new(built)
        };
        match space {
            Space::Original => self.layouts.sorted = Some(built.clone()),
            Space::Remapped => {
                self.layouts.remapped = Some(built.clone());
                self.remap_tables(dev)?;
            }
        }
        Ok(built)
    }

    /// The permutations and the remapped copies of per-launch arrays.
    pub(in crate::throttle) fn remap_tables(&mut self, dev: &CudaDevice) -> Result<()> {
        if self.layouts.tables.is_none() {
            let (_, r) = self.detail()?.remapping.as_ref().ok_or_else(|| {
                Error::invalid(format!("kernel `{}`: no remapping", self.spec.name))
            })?;
            // The cache the plan fits (the L2 unless given), so that a
            // plan for a small cache stages small vectors too.
            let cache = usize::try_from(self.options.cache.resolve(Some(dev.l2_bytes() as u64))?)
                .unwrap_or(usize::MAX);
            let stages = |in_len| crate::engines::gather_layouts::stages_gather(in_len, cache);
            // The timer (and its cache-evicting buffer) only where a
            // table has two forms to time.
            let timer = if stages(self.n_tasks) || stages(self.gathered_len) {
                Some(EventTimer::new(dev)?)
            } else {
                None
            };
            let kernels = dev.extension::<LayoutKernels>()?;
            let table = |idx: &[u32], in_len: usize| match &timer {
                Some(timer) if stages(in_len) => {
                    let block = crate::engines::gather_layouts::staged_block(cache);
                    DeviceGather::fastest(dev, &kernels, timer, idx, in_len, block)
                }
                _ => DeviceGather::upload(dev, idx, in_len, None),
            };
            self.layouts.tables = Some(RemapTables {
                task_perm: table(r.task_perm(), self.n_tasks)?,
                task_inv: table(r.task_inv(), self.n_tasks)?,
                gathered_perm: table(r.gathered_perm(), self.gathered_len)?,
                scratch: None,
            });
        }
        let mut staged = Vec::new();
        for i in 0..self.spec.params.len() {
            if self.roles.shapes(i) || !self.roles.permuted(i) {
                continue;
            }
            let (_, len) = self.staged_ptr(i)?;
            if self.roles.gathered.contains(&i) && len != self.gathered_len {
                return Err(Error::invalid(format!(
                    "kernel `{}`: `{}` has {len} elements; the remapped plan was made for {}",
                    self.spec.name, self.spec.params[i].name, self.gathered_len
                )));
            }
            if !self.roles.gathered.contains(&i) && len < self.n_tasks {
                return Err(Error::invalid(format!(
                    "kernel `{}`: `{}` has {len} elements, fewer than the {} tasks",
                    self.spec.name, self.spec.params[i].name, self.n_tasks
                )));
            }
            let keep = self
                .staged_r
                .iter()
                .position(|(j, v)| *j == i && v.len() == len);
            let v = match keep {
                Some(k) => self.staged_r.swap_remove(k).1,
                None => ErasedVec::zeros(&self.device, self.spec.params[i].ty, len)?,
            };
            staged.push((i, v));
        }
        self.staged_r = staged;
        if let Some(t) = self.layouts.tables.as_mut() {
            let need = self
                .staged_r
                .iter()
                .map(|(i, v)| {
                    let w = v.ty().size();
                    if self.roles.gathered.contains(i) {
                        t.gathered_perm.scratch_bytes(w)
                    } else {
                        t.task_perm
                            .scratch_bytes(w)
                            .max(t.task_inv.scratch_bytes(w))
                    }
                })
                .max()
                .unwrap_or(0);
            if need > 0 && !t.scratch.as_ref().is_some_and(|b| b.len() >= need) {
                t.scratch = Some(DeviceBuffer::zeros(dev, need)?);
            }
        }
        Ok(())
    }

    /// Every partition alone in `space`, built on first use.
    pub(in crate::throttle) fn leaves(
        &mut self,
        dev: &CudaDevice,
        space: Space,
    ) -> Result<Arc<DeviceLayout>> {
        if let Some(l) = match space {
            Space::Original => &self.layouts.leaves,
            Space::Remapped => &self.layouts.leaves_r,
        } {
            return Ok(l.clone());
        }
        let l = Arc::new(self.cover(dev, space, &self.plan_in(space)?.cf_launches())?);
        match space {
            Space::Original => self.layouts.leaves = Some(l.clone()),
            Space::Remapped => self.layouts.leaves_r = Some(l.clone()),
        }
        Ok(l)
    }

    /// The layout of `launches` in `space` (not kept by the handle).
    pub(in crate::throttle) fn cover(
        &mut self,
        dev: &CudaDevice,
        space: Space,
        launches: &[Range<usize>],
    ) -> Result<DeviceLayout> {
        let sorted = self.sorted(dev, space)?;
        let kernels = dev.extension::<LayoutKernels>()?;
        let b = self.builder(dev, &kernels)?;
        let mut l = b.cover(&sorted, self.plan_in(space)?, launches)?;
        self.narrow_index(&b, &mut l)?;
        Ok(l)
    }

    /// Narrows `layout`'s index array to 16-bit offsets from the task where
    /// the options allow it and every entry fits (`Builder::narrow_index`).
    pub(in crate::throttle) fn narrow_index(
        &self,
        b: &Builder<'_>,
        layout: &mut DeviceLayout,
    ) -> Result<()> {
        match self.roles.index {
            Some(index) if self.options.narrow_index => b.narrow_index(layout, index),
            _ => Ok(()),
        }
    }

    /// Drops the layouts and copies no schedule of the chosen one reads.
    pub(in crate::throttle) fn release_unused(&mut self, keep: &Schedule) {
        let wants = |l: &Option<Arc<DeviceLayout>>| {
            l.as_ref()
                .is_some_and(|l| keep.layouts.iter().any(|k| Arc::ptr_eq(k, l)))
        };
        if !wants(&self.layouts.leaves) {
            self.layouts.leaves = None;
        }
        if !wants(&self.layouts.leaves_r) {
            self.layouts.leaves_r = None;
        }
        // The sorted layouts are the sources of any other; a chosen
        // schedule only reads its own.
        if !wants(&self.layouts.sorted) {
            self.layouts.sorted = None;
        }
        if !wants(&self.layouts.remapped) {
            self.layouts.remapped = None;
        }
        self.layouts.sj = match keep.policy {
            ThrottlePolicy::Sj => keep.layouts.first().cloned(),
            _ => None,
        };
        if keep.space != Space::Remapped {
            self.layouts.tables = None;
            self.staged_r.clear();
        }
        if keep.policy != ThrottlePolicy::Org {
            // The original shape arrays: only `org` reads them.
            for (i, s) in self.slots.iter_mut().enumerate() {
                if let Slot::Shape(v) = s {
                    if self.roles.fine.contains(&i) {
                        *v = None;
                    }
                }
            }
        }
    }
}
