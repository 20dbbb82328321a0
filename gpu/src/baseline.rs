//! The cuSPARSE baseline: `y = A·x` with `cusparseSpMV` on a CSR matrix
//! (f32 or f64, 32-bit indices), for tests and benchmarks.
//!
//! The wrapper owns its device copies of the matrix and the vectors, the
//! descriptors and the work buffer, so a benchmark can call [`CusparseSpmv::run`]
//! in a loop and time nothing but `cusparseSpMV`.

use crate::buffer::DeviceBuffer;
use crate::device::CudaDevice;
use crate::probe::{self, Library};
use cudarc::cusparse::sys as cs;
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use std::ffi::c_void;
use warpfit_runtime::{Error, Result};

/// cuSPARSE's SpMV algorithms for CSR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpmvAlg {
    /// `CUSPARSE_SPMV_ALG_DEFAULT`.
    Default,
    /// `CUSPARSE_SPMV_CSR_ALG1` (row-parallel, deterministic).
    CsrAlg1,
    /// `CUSPARSE_SPMV_CSR_ALG2` (merge-path, balanced for skewed rows).
    CsrAlg2,
}

impl SpmvAlg {
    fn raw(self) -> cs::cusparseSpMVAlg_t {
        match self {
            SpmvAlg::Default => cs::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT,
            SpmvAlg::CsrAlg1 => cs::cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG1,
            SpmvAlg::CsrAlg2 => cs::cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG2,
        }
    }

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            SpmvAlg::Default => "cusparse-default",
            SpmvAlg::CsrAlg1 => "cusparse-csr-alg1",
            SpmvAlg::CsrAlg2 => "cusparse-csr-alg2",
        }
    }
}

/// A value type cuSPARSE SpMV takes.
pub trait SpmvScalar: DeviceRepr + ValidAsZeroBits + Copy + Default {
    const DATA_TYPE: cs::cudaDataType;
    const ONE: Self;
}
impl SpmvScalar for f32 {
    const DATA_TYPE: cs::cudaDataType = cs::cudaDataType::CUDA_R_32F;
    const ONE: Self = 1.0;
}
impl SpmvScalar for f64 {
    const DATA_TYPE: cs::cudaDataType = cs::cudaDataType::CUDA_R_64F;
    const ONE: Self = 1.0;
}

fn check(s: cs::cusparseStatus_t, what: &str) -> Result<()> {
    if s == cs::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: cuSPARSE returns a static string for every status.
    let msg = unsafe { std::ffi::CStr::from_ptr(cs::cusparseGetErrorString(s)) }
        .to_string_lossy()
        .into_owned();
    Err(Error::Cuda {
        context: format!("cuSPARSE {what}"),
        message: msg,
    })
}

/// `y = A·x` through cuSPARSE, ready to run repeatedly.
pub struct CusparseSpmv<T: SpmvScalar> {
    dev: CudaDevice,
    handle: cs::cusparseHandle_t,
    mat: cs::cusparseSpMatDescr_t,
    vx: cs::cusparseDnVecDescr_t,
    vy: cs::cusparseDnVecDescr_t,
    alg: SpmvAlg,
    _row_ptr: DeviceBuffer<u32>,
    _col: DeviceBuffer<u32>,
    _val: DeviceBuffer<T>,
    _x: DeviceBuffer<T>,
    y: DeviceBuffer<T>,
    work: DeviceBuffer<u8>,
}

impl<T: SpmvScalar> CusparseSpmv<T> {
    /// Uploads the CSR matrix (`nrows` rows, `ncols` columns) and `x`,
    /// creates the descriptors and sizes the work buffer for `alg`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dev: &CudaDevice,
        nrows: usize,
        ncols: usize,
        row_ptr: &[u32],
        col: &[u32],
        val: &[T],
        x: &[T],
        alg: SpmvAlg,
    ) -> Result<Self> {
        probe::require(Library::Cusparse)?;
        if row_ptr.len() != nrows + 1 {
            return Err(Error::length(
                "cuSPARSE SpMV row_ptr",
                nrows + 1,
                row_ptr.len(),
            ));
        }
        if col.len() != val.len() {
            return Err(Error::length("cuSPARSE SpMV values", col.len(), val.len()));
        }
        if x.len() != ncols {
            return Err(Error::length("cuSPARSE SpMV x", ncols, x.len()));
        }
        let nnz = col.len();
        if nnz > i32::MAX as usize || nrows > i32::MAX as usize || ncols > i32::MAX as usize {
            return Err(Error::invalid(format!(
                "cuSPARSE SpMV with 32-bit indices takes at most {} rows, columns and nonzeros",
                i32::MAX
            )));
        }
        let row_ptr_d = DeviceBuffer::upload(dev, row_ptr)?;
        let col_d = DeviceBuffer::upload(dev, col)?;
        let val_d = DeviceBuffer::upload(dev, val)?;
        let x_d = DeviceBuffer::upload(dev, x)?;
        let y_d = DeviceBuffer::<T>::zeros(dev, nrows)?;
        let mut s = CusparseSpmv {
            dev: dev.clone(),
            handle: std::ptr::null_mut(),
            mat: std::ptr::null_mut(),
            vx: std::ptr::null_mut(),
            vy: std::ptr::null_mut(),
            alg,
            work: DeviceBuffer::zeros(dev, 0)?,
            _row_ptr: row_ptr_d,
            _col: col_d,
            _val: val_d,
            _x: x_d,
            y: y_d,
        };
        // SAFETY: out-pointers are valid; every device pointer is a live
        // buffer owned by `s`, which outlives the descriptors (Drop order below).
        unsafe {
            check(cs::cusparseCreate(&mut s.handle), "handle creation")?;
            check(
                cs::cusparseSetStream(s.handle, dev.stream().cu_stream() as _),
                "set stream",
            )?;
            check(
                cs::cusparseCreateCsr(
                    &mut s.mat,
                    nrows as i64,
                    ncols as i64,
                    nnz as i64,
                    s._row_ptr.device_ptr(dev) as *mut c_void,
                    s._col.device_ptr(dev) as *mut c_void,
                    s._val.device_ptr(dev) as *mut c_void,
                    cs::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    cs::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    cs::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    T::DATA_TYPE,
                ),
                "CSR descriptor",
            )?;
            check(
                cs::cusparseCreateDnVec(
                    &mut s.vx,
                    ncols as i64,
                    s._x.device_ptr(dev) as *mut c_void,
                    T::DATA_TYPE,
                ),
                "x descriptor",
            )?;
            check(
                cs::cusparseCreateDnVec(
                    &mut s.vy,
                    nrows as i64,
                    s.y.device_ptr(dev) as *mut c_void,
                    T::DATA_TYPE,
                ),
                "y descriptor",
            )?;
            let (one, zero) = (T::ONE, T::default());
            let mut size = 0usize;
            check(
                cs::cusparseSpMV_bufferSize(
                    s.handle,
                    cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                    (&one as *const T).cast(),
                    s.mat,
                    s.vx,
                    (&zero as *const T).cast(),
                    s.vy,
                    T::DATA_TYPE,
                    alg.raw(),
                    &mut size,
                ),
                "SpMV buffer size",
            )?;
            s.work = DeviceBuffer::zeros(dev, size)?;
            check(
                cs::cusparseSpMV_preprocess(
                    s.handle,
                    cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                    (&one as *const T).cast(),
                    s.mat,
                    s.vx,
                    (&zero as *const T).cast(),
                    s.vy,
                    T::DATA_TYPE,
                    alg.raw(),
                    s.work.device_ptr(dev) as *mut c_void,
                ),
                "SpMV preprocess",
            )?;
        }
        Ok(s)
    }

    /// Enqueues `y = A·x` (asynchronous).
    pub fn run(&self) -> Result<()> {
        let (one, zero) = (T::ONE, T::default());
        // SAFETY: descriptors and buffers are live (owned by `self`); alpha
        // and beta are host scalars read before the call returns.
        unsafe {
            check(
                cs::cusparseSpMV(
                    self.handle,
                    cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                    (&one as *const T).cast(),
                    self.mat,
                    self.vx,
                    (&zero as *const T).cast(),
                    self.vy,
                    T::DATA_TYPE,
                    self.alg.raw(),
                    self.work.device_ptr(&self.dev) as *mut c_void,
                ),
                "SpMV",
            )
        }
    }

    /// The result vector (synchronizes).
    pub fn y(&self) -> Result<Vec<T>> {
        self.y.to_vec(&self.dev)
    }

    /// The algorithm this instance runs.
    pub fn alg(&self) -> SpmvAlg {
        self.alg
    }
}

impl<T: SpmvScalar> Drop for CusparseSpmv<T> {
    fn drop(&mut self) {
        // SAFETY: each handle was created above (or is null, which cuSPARSE
        // accepts for the descriptors and we skip for the handle); the stream
        // is synchronized first so no queued SpMV still uses them.
        unsafe {
            let _ = self.dev.wait_idle();
            if !self.vy.is_null() {
                cs::cusparseDestroyDnVec(self.vy);
            }
            if !self.vx.is_null() {
                cs::cusparseDestroyDnVec(self.vx);
            }
            if !self.mat.is_null() {
                cs::cusparseDestroySpMat(self.mat);
            }
            if !self.handle.is_null() {
                cs::cusparseDestroy(self.handle);
            }
        }
    }
}
