//! The throttled handle's device layouts of a kernel's shape arrays (its
//! range array and the arrays read at the fine-task index), built on the
//! device from the arrays already there (`layout.cuh`), never permuted on
//! the host:
//!
//! - **sorted**: the plan's order, each task's fine tasks sorted by
//!   partition (one gather through the plan's permutation); one launch of
//!   it is `org_r`'s (in the remapped numbering), and every other layout is
//!   copied from it;
//! - **remapped sorted**: the same in Algorithm 5's numbering: task `i`'s
//!   range is original task `task_perm[i]`'s (a copy of every task's
//!   range), and the index array's values renamed through the gathered
//!   elements' inverse permutation (a gather through it); for `org_r`'s
//!   single launch alone, each task's fine tasks sorted by their new
//!   gathered element instead of by partition (`remapped_rows_sorted`);
//! - **cover**: a cover of the partitions laid out launch by launch
//!   ([`CoverLayout`]), one range array per launch: CF's part-major layout
//!   (every partition alone) and SJ's chosen nodes; the queue schedules run
//!   task lists over the part-major one.

use super::erased_vec::ErasedVec;
use super::host_plan::PlanDetail;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::driver::device::Device;
use crate::engines::gather_layouts::LayoutKernels;
use crate::launch::arg::Arg;
use crate::launch::device_vec::{Place, ResidentArray};
use crate::spec::{IndexEncoding, ParamKind, ScalarType};
use std::ops::Range;
use warpfit_runtime::schedule::{CacheFitPlan, CoverLayout};
use warpfit_runtime::{Error, Result};

/// The numbering a layout or schedule uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Space {
    /// The kernel's own task and element ids.
    Original,
    /// Algorithm 5's: per-launch arrays are permuted in and out.
    Remapped,
}

/// Shape arrays laid out for a sequence of launches: one range array per
/// launch, the fine arrays once.
pub(super) struct DeviceLayout {
    pub space: Space,
    pub ptrs: Vec<ErasedVec>,
    /// By parameter index.
    pub fine: Vec<(usize, ErasedVec)>,
    /// The host layout of a cover (task lists over it need it); `None`
    /// for a sorted layout.
    pub cover: Option<CoverLayout>,
    /// The index array as 16-bit offsets from the task, where every one
    /// fits ([`Builder::narrow_index`]); launches over the layout read it
    /// instead of the plain one.
    pub delta: Option<DeltaIndex>,
}

impl DeviceLayout {
    /// Fine array of parameter `i`.
    pub fn fine(&self, i: usize) -> Option<&ErasedVec> {
        self.fine.iter().find(|(j, _)| *j == i).map(|(_, v)| v)
    }

    /// How launches over the layout read the index array.
    pub fn index_encoding(&self) -> IndexEncoding {
        match self.delta {
            Some(_) => IndexEncoding::Delta16,
            None => IndexEncoding::Plain,
        }
    }
}

/// A layout's index array (parameter `param`, `u32`) as one `i16` offset
/// from the task per entry (gpu/cuda/index.cuh).
pub(super) struct DeltaIndex {
    pub param: usize,
    buffer: DeviceBuffer<i16>,
    device: CudaDevice,
}

impl DeltaIndex {
    /// The launch argument for parameter `param`: typed as the kernel
    /// declares it (`u32`), its length the entries' count; the kernel,
    /// compiled for [`IndexEncoding::Delta16`], reads `i16`s.
    pub fn arg(&self, kind: ParamKind) -> Arg<'_> {
        Arg::Resident(ResidentArray {
            kind,
            ty: ScalarType::U32,
            len: self.buffer.len(),
            place: Place::Cuda {
                ptr: self.buffer.device_ptr(&self.device),
                device: &self.device,
            },
        })
    }
}

/// The pieces every build needs.
pub(super) struct Builder<'a> {
    pub device: &'a Device,
    pub dev: &'a CudaDevice,
    pub kernels: &'a LayoutKernels,
    pub range_ty: ScalarType,
    pub n_tasks: usize,
    /// The kernel's name, for errors.
    pub kernel: &'static str,
}

impl Builder<'_> {
    fn upload_u32(&self, v: &[u32]) -> Result<DeviceBuffer<u32>> {
        DeviceBuffer::upload(self.dev, v)
    }

    /// `plan`'s order of the `original` fine arrays, with `ptr` (the
    /// original range array) as its range array.
    pub fn sorted(
        &self,
        original: &[(usize, &ErasedVec)],
        plan: &CacheFitPlan,
        ptr: &[u32],
    ) -> Result<DeviceLayout> {
        let perm = self.upload_u32(plan.fine_perm())?;
        let fine = self.gathered_fine(original, &perm, plan.n_fine())?;
        self.kernels.check(
            self.dev,
            &format!("kernel `{}`: the plan's order", self.kernel),
        )?;
        drop(perm);
        Ok(DeviceLayout {
            space: Space::Original,
            ptrs: vec![ErasedVec::upload_u32_as(self.device, ptr, self.range_ty)?],
            fine,
            cover: None,
            delta: None,
        })
    }

    /// Each of `sorted`'s fine arrays with the task ranges of `ranges`
    /// copied to their new places (per pair: new starts, then old starts,
    /// one per task; gpu/cuda/layout.cuh); past the `m` fine tasks the
    /// original. Enqueued only: `ranges` must live until the caller's check
    /// has waited for the copies.
    fn copied_fine(
        &self,
        sorted: &DeviceLayout,
        ranges: &[(DeviceBuffer<u32>, DeviceBuffer<u32>)],
        m: usize,
    ) -> Result<Vec<(usize, ErasedVec)>> {
        let n = self.n_tasks;
        let mut fine = Vec::with_capacity(sorted.fine.len());
        for (i, s) in &sorted.fine {
            let out = ErasedVec::zeros(self.device, s.ty(), s.len())?;
            for (dst, src) in ranges {
                self.kernels.copy_ranges(
                    self.dev,
                    s.ty().size(),
                    out.device_ptr()?,
                    out.len() as u64,
                    s.device_ptr()?,
                    s.len() as u64,
                    dst.device_ptr(self.dev),
                    src.device_ptr(self.dev),
                    n as u64,
                )?;
            }
            self.copy_tail(&out, s, m)?;
            fine.push((*i, out));
        }
        Ok(fine)
    }

    /// Each of the `original` fine arrays gathered through `perm`
    /// (`out[q] = src[perm[q]]` for the `m` fine tasks; past them, never
    /// read by the ranges, the original). Enqueued only: `perm` must live
    /// until the caller's check has waited for the gathers.
    fn gathered_fine(
        &self,
        original: &[(usize, &ErasedVec)],
        perm: &DeviceBuffer<u32>,
        m: usize,
    ) -> Result<Vec<(usize, ErasedVec)>> {
        let mut fine = Vec::with_capacity(original.len());
        for &(i, src) in original {
            let out = ErasedVec::zeros(self.device, src.ty(), src.len())?;
            self.kernels.gather(
                self.dev,
                src.ty().size(),
                out.device_ptr()?,
                src.device_ptr()?,
                src.len() as u64,
                perm.device_ptr(self.dev),
                m as u64,
            )?;
            self.copy_tail(&out, src, m)?;
            fine.push((i, out));
        }
        Ok(fine)
    }

    /// Adds to `layout` its index array (parameter `index`, `u32`) as
    /// 16-bit offsets from the task where every entry its ranges cover
    /// fits; leaves it plain otherwise. Built on the device, one pass over
    /// the array per range array.
    pub fn narrow_index(&self, layout: &mut DeviceLayout, index: usize) -> Result<()> {
        let Some(idx) = layout.fine(index) else {
            return Ok(());
        };
        if idx.ty() != ScalarType::U32 {
            return Ok(());
        }
        let buffer = DeviceBuffer::<i16>::zeros(self.dev, idx.len())?;
        let mut fits = true;
        for ptr in &layout.ptrs {
            fits = fits
                && self.kernels.delta16(
                    self.dev,
                    buffer.device_ptr(self.dev),
                    idx.device_ptr()?,
                    idx.len() as u64,
                    ptr.device_ptr()?,
                    ptr.ty().size(),
                    self.n_tasks as u64,
                )?;
        }
        self.kernels.check(
            self.dev,
            &format!("kernel `{}`: the index array's offsets", self.kernel),
        )?;
        if fits {
            layout.delta = Some(DeltaIndex {
                param: index,
                buffer,
                device: self.dev.clone(),
            });
        }
        Ok(())
    }

    /// Copies elements `from..` of `src` to the same positions of `out`.
    fn copy_tail(&self, out: &ErasedVec, src: &ErasedVec, from: usize) -> Result<()> {
        let n = src.len().saturating_sub(from);
        if n == 0 {
            return Ok(());
        }
        let w = src.ty().size();
        let at = (from * w) as u64;
        let bytes = n * w;
        // SAFETY: both arrays hold `src.len()` elements of `w` bytes.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(
                out.device_ptr()? + at,
                src.device_ptr()? + at,
                bytes,
                self.dev.stream().cu_stream(),
            )
        }
        .map_err(crate::driver::errors::cuda_err(format!(
            "copying {bytes} bytes on the device"
        )))
    }

    /// The sorted layout in Algorithm 5's numbering, from `sorted` (the
    /// original numbering's): task `i`'s range is original task
    /// `task_perm[i]`'s, and the index array (parameter `index`) takes the
    /// gathered elements' new ids. `gathered_len` is the gathered array's
    /// length.
    pub fn remapped(
        &self,
        sorted: &DeviceLayout,
        detail: &PlanDetail,
        index: usize,
        gathered_len: usize,
    ) -> Result<DeviceLayout> {
        let remapping = self.remapping_of(detail, gathered_len)?;
        let new_ptr = self.remapped_ptr(detail, remapping)?;
        // Where each new task's range starts in the plan's order.
        let src: Vec<u32> = remapping
            .task_perm()
            .iter()
            .map(|&old| detail.ptr[old as usize])
            .collect();
        let ranges = [(self.upload_u32(&new_ptr)?, self.upload_u32(&src)?)];
        let m = new_ptr[self.n_tasks] as usize;
        let fine = self.copied_fine(sorted, &ranges, m)?;
        let layout = self.finish_remapped(fine, &new_ptr, remapping, index, gathered_len)?;
        drop(ranges); // after the check in `finish_remapped` waited for the copies
        Ok(layout)
    }

    /// The remapped matrix with every row sorted by its new column, from
    /// the `original` fine arrays (one gather each through
    /// [`Remapping::sorted_row_sources`], computed on the host from the
    /// index array read back): the layout of a single launch over all
    /// tasks (`org_r`), which reads the gathered array in one sweep per row,
    /// as a library kernel over the remapped matrix does. Cache-fit
    /// launches need each partition's share of a row together instead
    /// ([`remapped`](Self::remapped)). `None` where the index array is not
    /// of a 4-byte type.
    pub fn remapped_rows_sorted(
        &self,
        original: &[(usize, &ErasedVec)],
        detail: &PlanDetail,
        index: usize,
        gathered_len: usize,
    ) -> Result<Option<DeviceLayout>> {
        let remapping = self.remapping_of(detail, gathered_len)?;
        let Some(&(_, idx)) = original.iter().find(|(i, _)| *i == index) else {
            return Ok(None);
        };
        if idx.ty().size() != 4 {
            return Ok(None);
        }
        let new_ptr = self.remapped_ptr(detail, remapping)?;
        let m = new_ptr[self.n_tasks] as usize;
        let sources = {
            warpfit_runtime::mem::check_elems::<u32>("the index array read back", idx.len())?;
            let mut cols = vec![0u32; idx.len()];
            idx.copy_out(self.device, &mut Arg::output(&mut cols[..]))?;
            cols.truncate(m.min(cols.len()));
            remapping.sorted_row_sources(&detail.ptr, &cols)?
        };
        let perm = self.upload_u32(&sources)?;
        drop(sources);
        let fine = self.gathered_fine(original, &perm, m)?;
        let layout = self.finish_remapped(fine, &new_ptr, remapping, index, gathered_len)?;
        drop(perm); // after the check in `finish_remapped` waited for the gathers
        Ok(Some(layout))
    }

    /// The plan's remapping, checked against the gathered array's length.
    fn remapping_of<'d>(
        &self,
        detail: &'d PlanDetail,
        gathered_len: usize,
    ) -> Result<&'d warpfit_runtime::partition::Remapping> {
        let (_, remapping) = detail.remapping.as_ref().ok_or_else(|| {
            Error::invalid(format!(
                "kernel `{}`: the plan has no remapping",
                self.kernel
            ))
        })?;
        if remapping.gathered_inv().len() != gathered_len {
            return Err(Error::invalid(format!(
                "kernel `{}`: the remapping renames {} gathered elements, the gathered array has {gathered_len}",
                self.kernel,
                remapping.gathered_inv().len()
            )));
        }
        Ok(remapping)
    }

    /// The remapped range array: new task `i` is the plan's task
    /// `task_perm[i]`, its range as long as that task's.
    fn remapped_ptr(
        &self,
        detail: &PlanDetail,
        remapping: &warpfit_runtime::partition::Remapping,
    ) -> Result<Vec<u32>> {
        let (ptr, perm) = (&detail.ptr, remapping.task_perm());
        let n = self.n_tasks;
        if perm.len() != n || ptr.len() != n + 1 {
            return Err(Error::invalid(format!(
                "kernel `{}`: the remapping does not fit the plan's {n} tasks",
                self.kernel
            )));
        }
        let mut new_ptr = Vec::with_capacity(n + 1);
        new_ptr.push(0u32);
        for &old in perm {
            let old = old as usize;
            let last = new_ptr[new_ptr.len() - 1];
            new_ptr.push(last + (ptr[old + 1] - ptr[old]));
        }
        Ok(new_ptr)
    }

    /// A remapped layout from its fine arrays in the new order: the index
    /// array (parameter `index`) takes the gathered elements' new ids.
    fn finish_remapped(
        &self,
        mut fine: Vec<(usize, ErasedVec)>,
        new_ptr: &[u32],
        remapping: &warpfit_runtime::partition::Remapping,
        index: usize,
        gathered_len: usize,
    ) -> Result<DeviceLayout> {
        let inv = self.upload_u32(remapping.gathered_inv())?;
        let m = new_ptr[self.n_tasks] as usize;
        for (i, out) in fine.iter_mut() {
            if *i == index {
                // Element ids renamed: new = gathered_inv[old].
                let renamed = ErasedVec::zeros(self.device, out.ty(), out.len())?;
                self.kernels.gather(
                    self.dev,
                    4,
                    renamed.device_ptr()?,
                    inv.device_ptr(self.dev),
                    gathered_len as u64,
                    out.device_ptr()?,
                    m as u64,
                )?;
                *out = renamed;
            }
        }
        self.kernels.check(
            self.dev,
            &format!(
                "kernel `{}`: the remapped order (an index of the gathered array out of range?)",
                self.kernel
            ),
        )?;
        Ok(DeviceLayout {
            space: Space::Remapped,
            ptrs: vec![ErasedVec::upload_u32_as(
                self.device,
                new_ptr,
                self.range_ty,
            )?],
            fine,
            cover: None,
            delta: None,
        })
    }

    /// The layout of `launches` (a cover of `plan`'s partitions), copied
    /// from `sorted` (the same plan's order in the same numbering).
    pub fn cover(
        &self,
        sorted: &DeviceLayout,
        plan: &CacheFitPlan,
        launches: &[Range<usize>],
    ) -> Result<DeviceLayout> {
        let host = CoverLayout::new(plan, launches)?;
        let mut ptrs = Vec::with_capacity(host.len());
        let mut staged = Vec::with_capacity(host.len());
        for j in 0..host.len() {
            staged.push((self.upload_u32(host.dst(j))?, self.upload_u32(host.src(j))?));
            ptrs.push(ErasedVec::upload_u32_as(
                self.device,
                host.dst(j),
                self.range_ty,
            )?);
        }
        let fine = self.copied_fine(sorted, &staged, plan.n_fine())?;
        self.kernels.check(
            self.dev,
            &format!("kernel `{}`: a cover layout", self.kernel),
        )?;
        drop(staged);
        Ok(DeviceLayout {
            space: sorted.space,
            ptrs,
            fine,
            cover: Some(host),
            delta: None,
        })
    }
}
