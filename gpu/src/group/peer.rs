//! A group whose members share GPUs ([`DeviceGroup::cuda_parts`]): the
//! exchange is device copies (within a GPU) and peer copies (between
//! GPUs), the all-reduce a sum on the host.
//!
//! NCCL takes one rank per GPU, so a kernel cut into more parts than the
//! host has GPUs (each part within the 32-bit indices a part's layout
//! uses: RMAT 29's 8.5G edges in four parts on two GPUs) cannot be joined
//! by it. Every move here waits for every member first and is done on
//! return: a group for capacity, not for speed.
//!
//! [`DeviceGroup::cuda_parts`]: super::DeviceGroup::cuda_parts

use crate::driver::cuda_device::CudaDevice;
use crate::driver::errors::cuda_err;
use crate::spec::Scalar;
use cudarc::driver::{result, sys};
use warpfit_runtime::Result;

/// One copy: `bytes` from member `from`'s address `src` to member `to`'s
/// address `dst`.
pub(super) struct PeerCopy {
    pub from: usize,
    pub src: u64,
    pub to: usize,
    pub dst: u64,
    pub bytes: usize,
}

/// Waits for every member's stream (the packs of what is sent, the
/// launches still reading what is received).
pub(super) fn wait_all(members: &[CudaDevice]) -> Result<()> {
    for d in members {
        d.stream()
            .synchronize()
            .map_err(cuda_err(format!("waiting for GPU {}", d.ordinal())))?;
    }
    Ok(())
}

/// Every copy, done on return.
pub(super) fn copy_all(members: &[CudaDevice], copies: &[PeerCopy]) -> Result<()> {
    wait_all(members)?;
    for c in copies.iter().filter(|c| c.bytes > 0) {
        let (from, to) = (&members[c.from], &members[c.to]);
        if from.ordinal() == to.ordinal() {
            from.context()
                .bind_to_thread()
                .map_err(cuda_err("binding a context"))?;
            // SAFETY: both ranges lie in live allocations of this GPU (the
            // group checked each transfer against its arrays' lengths).
            unsafe { result::memcpy_dtod_sync(c.dst, c.src, c.bytes) }.map_err(cuda_err(
                format!("copying {} bytes on GPU {}", c.bytes, from.ordinal()),
            ))?;
        } else {
            // SAFETY: as above, on two GPUs whose contexts are live;
            // `cuMemcpyPeer` is ordered after the work of both contexts.
            unsafe {
                sys::cuMemcpyPeer(
                    c.dst,
                    to.context().cu_ctx(),
                    c.src,
                    from.context().cu_ctx(),
                    c.bytes,
                )
            }
            .result()
            .map_err(cuda_err(format!(
                "copying {} bytes from GPU {} to GPU {}",
                c.bytes,
                from.ordinal(),
                to.ordinal()
            )))?;
        }
    }
    wait_all(members)
}

/// Sums `len` elements at each member's address `ptrs[p]` element by
/// element in member order, on the host, and writes the sum back to
/// every member; done on return.
pub(super) fn all_reduce_sum_on_host<T>(
    members: &[CudaDevice],
    ptrs: &[u64],
    len: usize,
) -> Result<()>
where
    T: Scalar + Default + std::ops::Add<Output = T>,
{
    wait_all(members)?;
    if len == 0 {
        return Ok(());
    }
    let mut sum: Vec<T> = Vec::new();
    let mut part = vec![T::default(); len];
    for (p, (d, &ptr)) in members.iter().zip(ptrs).enumerate() {
        d.context()
            .bind_to_thread()
            .map_err(cuda_err("binding a context"))?;
        // SAFETY: `ptr` addresses `len` elements of a live array of this
        // member (checked by the group); `part` holds `len`.
        unsafe { result::memcpy_dtoh_sync(&mut part, ptr) }
            .map_err(cuda_err(format!("reading member {p}'s partial sum")))?;
        if p == 0 {
            sum.clone_from(&part);
        } else {
            sum.iter_mut().zip(&part).for_each(|(s, &v)| *s = *s + v);
        }
    }
    for (p, (d, &ptr)) in members.iter().zip(ptrs).enumerate() {
        d.context()
            .bind_to_thread()
            .map_err(cuda_err("binding a context"))?;
        // SAFETY: as above.
        unsafe { result::memcpy_htod_sync(ptr, &sum) }
            .map_err(cuda_err(format!("writing member {p}'s sum")))?;
    }
    Ok(())
}
