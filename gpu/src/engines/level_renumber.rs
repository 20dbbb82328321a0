//! The square pattern renumbered by a level order on the device
//! ([`renumber`], `gpu/cuda/levels.cuh`): every row copied to its new place
//! with its columns renumbered, entries in the order stored, as
//! `Remapping::apply_csr` keeps them. Nothing crosses the bus but one word
//! of error flag.

use crate::abi::BLOCK;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::device::Device;
use crate::engines::gather_layouts::fill_blocks;
use crate::engines::level_order::{cuda_of, launch, on, pattern_size, LevelKernels};
use crate::launch::device_vec::DeviceVec;
use crate::spec::Scalar;
use warpfit_runtime::{Csr, Error, Result};

/// A CSR matrix on a device, as [`renumber`] takes and returns it.
#[derive(Debug)]
pub struct DeviceCsr<T: Scalar> {
    /// `n + 1` offsets.
    pub row_ptr: DeviceVec<u32>,
    /// Column of each entry.
    pub col_idx: DeviceVec<u32>,
    /// Value of each entry.
    pub values: DeviceVec<T>,
}

impl<T: Scalar> DeviceCsr<T> {
    /// A copy of `a` on `device`.
    ///
    /// # Errors
    /// As [`Device::upload`].
    pub fn upload(device: &Device, a: &Csr<T>) -> Result<Self> {
        Ok(DeviceCsr {
            row_ptr: device.upload(a.row_ptr())?,
            col_idx: device.upload(a.col_idx())?,
            values: device.upload(a.values())?,
        })
    }
}

/// The square matrix `a` renumbered on both sides (`B = P·A·Pᵀ`) by the
/// permutation `order` (`order[new] = old`, a [`DeviceLevelOrder`](crate::engines::level_order::DeviceLevelOrder)'s or
/// any other) and its inverse `position`: new row `r` is old row
/// `order[r]`, each column `w` becomes `position[w]`, entries in the order
/// stored. Waits for the device once, to check the indices.
///
/// # Errors
/// `device` is not a CUDA device or an array is not on it; the arrays'
/// lengths disagree with each other or with the order; device memory for
/// the copy; an offset or column out of range (found on the device).
pub fn renumber<T: Scalar>(
    device: &Device,
    order: &DeviceVec<u32>,
    position: &DeviceVec<u32>,
    a: &DeviceCsr<T>,
) -> Result<DeviceCsr<T>> {
    let dev = cuda_of(device, "the device renumbering")?;
    let (row_ptr, col_idx, values) = (&a.row_ptr, &a.col_idx, &a.values);
    let (n, nnz) = pattern_size(row_ptr.len(), col_idx.len(), "renumber")?;
    if n != order.len() || n != position.len() || values.len() != nnz {
        return Err(Error::invalid(format!(
            "renumber: a {n}-row matrix with {nnz} columns and {} values does not match an order of {} rows and {} positions",
            values.len(),
            order.len(),
            position.len()
        )));
    }
    let slot = match std::mem::size_of::<T>() {
        1 => 0,
        2 => 1,
        4 => 2,
        8 => 3,
        w => {
            return Err(Error::invalid(format!(
                "renumber: no kernel moves values of {w} bytes"
            )))
        }
    };
    let ptr = on(row_ptr, dev, "the renumbered matrix's row_ptr")?;
    let col = on(col_idx, dev, "the renumbered matrix's col_idx")?;
    let val = on(values, dev, "the renumbered matrix's values")?;
    let o = on(order, dev, "the order")?;
    let p = on(position, dev, "the order's positions")?;
    let out = DeviceCsr {
        row_ptr: device.alloc::<u32>(n + 1)?,
        col_idx: device.alloc::<u32>(nnz)?,
        values: device.alloc::<T>(nnz)?,
    };
    if n == 0 {
        return Ok(out);
    }
    let k = dev.extension::<LevelKernels>()?;
    let lengths = DeviceBuffer::<u32>::zeros(dev, n)?;
    let tiles = n.div_ceil(BLOCK as usize);
    let tile_sums = DeviceBuffer::<u32>::zeros(dev, tiles)?;
    let bad = DeviceBuffer::<u32>::zeros(dev, 1)?;
    let (len, ts, b) = (
        lengths.device_ptr(dev),
        tile_sums.device_ptr(dev),
        bad.device_ptr(dev),
    );
    let new_ptr = on(&out.row_ptr, dev, "new row_ptr")?;
    let (n64, nnz64) = (n as u64, nnz as u64);
    launch(
        dev,
        &k.lengths,
        fill_blocks(dev),
        "renumber_lengths",
        &[ptr, o, n64, nnz64, len, ts, b],
    )?;
    // The total goes straight to `new_ptr[n]`.
    launch(
        dev,
        &k.scan_carry,
        1,
        "scan_carry",
        &[ts, tiles as u64, new_ptr + 4 * n64],
    )?;
    launch(
        dev,
        &k.offsets,
        fill_blocks(dev),
        "renumber_offsets",
        &[len, ts, n64, new_ptr],
    )?;
    launch(
        dev,
        &k.rows[slot],
        fill_blocks(dev),
        "renumber_rows",
        &[
            ptr,
            col,
            val,
            o,
            p,
            new_ptr,
            n64,
            nnz64,
            on(&out.col_idx, dev, "new col_idx")?,
            on(&out.values, dev, "new values")?,
            b,
        ],
    )?;
    if bad.to_vec(dev)?.first().copied().unwrap_or(0) != 0 {
        return Err(Error::invalid(
            "renumber: an offset, column or position is out of range (the order does not match the matrix)",
        ));
    }
    Ok(out)
}
