//! The cuSPARSE baseline: `y = A·x` with `cusparseSpMV` on a CSR matrix
//! (f32 or f64, 32-bit indices), for tests and benchmarks.
//!
//! The wrapper owns its device copies of the matrix and the vectors, the
//! descriptors and the work buffer, so a benchmark can call [`CusparseSpmv::run`]
//! in a loop and time nothing but `cusparseSpMV`. [`CusparseSpmvOn`] instead
//! reads and writes arrays a solver already holds on the device
//! ([`DeviceVec`]s), so that a solver can swap its SpMV for cuSPARSE's.

use cudarc::cusparse::sys as cs;
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use std::ffi::c_void;
use std::marker::PhantomData;
use warpfit::gpu::probe::{self, Library};
use warpfit::{CudaDevice, DeviceBuffer, DeviceVec, Scalar};
use warpfit::{Error, Result};

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

/// Turns a cuSPARSE status into [`Error::Cuda`] (the SpMM peers use it too).
pub(crate) fn check(s: cs::cusparseStatus_t, what: &str) -> Result<()> {
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
    /// The arrays the descriptors point into, when this wrapper owns them
    /// (`None` for [`CusparseSpmvOn`], whose borrows keep them alive).
    owned: Option<OwnedArrays<T>>,
    work: DeviceBuffer<u8>,
}

/// The device copies [`CusparseSpmv::new`] makes.
struct OwnedArrays<T> {
    _row_ptr: DeviceBuffer<u32>,
    _col: DeviceBuffer<u32>,
    _val: DeviceBuffer<T>,
    _x: DeviceBuffer<T>,
    y: DeviceBuffer<T>,
}

/// The device addresses of a CSR SpMV's arrays.
#[derive(Clone, Copy)]
struct SpmvPointers {
    row_ptr: u64,
    col: u64,
    val: u64,
    x: u64,
    y: u64,
}

/// Rejects shapes cuSPARSE's 32-bit indices cannot hold.
fn check_i32_shape(nrows: usize, ncols: usize, nnz: usize) -> Result<()> {
    if nnz > i32::MAX as usize || nrows > i32::MAX as usize || ncols > i32::MAX as usize {
        return Err(Error::invalid(format!(
            "cuSPARSE SpMV with 32-bit indices takes at most {} rows, columns and nonzeros",
            i32::MAX
        )));
    }
    Ok(())
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
        check_i32_shape(nrows, ncols, nnz)?;
        let owned = OwnedArrays {
            _row_ptr: DeviceBuffer::upload(dev, row_ptr)?,
            _col: DeviceBuffer::upload(dev, col)?,
            _val: DeviceBuffer::upload(dev, val)?,
            _x: DeviceBuffer::upload(dev, x)?,
            y: DeviceBuffer::<T>::zeros(dev, nrows)?,
        };
        let ptrs = SpmvPointers {
            row_ptr: owned._row_ptr.device_ptr(dev),
            col: owned._col.device_ptr(dev),
            val: owned._val.device_ptr(dev),
            x: owned._x.device_ptr(dev),
            y: owned.y.device_ptr(dev),
        };
        // SAFETY: the pointers are `owned`'s live buffers, which the wrapper
        // keeps until its descriptors are destroyed.
        unsafe { Self::over_pointers(dev, nrows, ncols, nnz, ptrs, alg, Some(owned)) }
    }

    /// Creates the descriptors over `ptrs` and sizes the work buffer.
    ///
    /// # Safety
    /// Every pointer must address a live device array of `dev` of the
    /// length its role needs (`nrows + 1`, `nnz`, `nnz`, `ncols`, `nrows`
    /// elements) for as long as the returned wrapper lives.
    #[allow(clippy::too_many_arguments)]
    unsafe fn over_pointers(
        dev: &CudaDevice,
        nrows: usize,
        ncols: usize,
        nnz: usize,
        ptrs: SpmvPointers,
        alg: SpmvAlg,
        owned: Option<OwnedArrays<T>>,
    ) -> Result<Self> {
        let mut s = CusparseSpmv {
            dev: dev.clone(),
            handle: std::ptr::null_mut(),
            mat: std::ptr::null_mut(),
            vx: std::ptr::null_mut(),
            vy: std::ptr::null_mut(),
            alg,
            work: DeviceBuffer::zeros(dev, 0)?,
            owned,
        };
        // SAFETY: out-pointers are valid; every device pointer is live for
        // the wrapper's life (the caller's contract), and Drop destroys the
        // descriptors after waiting for the stream.
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
                    ptrs.row_ptr as *mut c_void,
                    ptrs.col as *mut c_void,
                    ptrs.val as *mut c_void,
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
                    ptrs.x as *mut c_void,
                    T::DATA_TYPE,
                ),
                "x descriptor",
            )?;
            check(
                cs::cusparseCreateDnVec(
                    &mut s.vy,
                    nrows as i64,
                    ptrs.y as *mut c_void,
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
        self.run_beta(T::default())
    }

    /// Enqueues `y = A·x + y` (asynchronous): the blocks of a matrix cut
    /// by columns summed into one `y`.
    pub fn run_add(&self) -> Result<()> {
        self.run_beta(T::ONE)
    }

    fn run_beta(&self, beta: T) -> Result<()> {
        let one = T::ONE;
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
                    (&beta as *const T).cast(),
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
    ///
    /// # Errors
    /// CUDA copy errors; a wrapper over borrowed arrays has no `y` of its
    /// own (read the borrowed array instead).
    pub fn y(&self) -> Result<Vec<T>> {
        match &self.owned {
            Some(owned) => owned.y.to_vec(&self.dev),
            None => Err(Error::invalid(
                "this cuSPARSE SpMV writes a borrowed array: read y from it",
            )),
        }
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
            let _ = self.dev.stream().synchronize();
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

/// `y = A·x` through cuSPARSE on arrays already on the device: the CSR
/// matrix and both vectors are [`DeviceVec`]s borrowed for the wrapper's
/// life, read and written in place, so a solver's loop can run cuSPARSE's
/// SpMV on its own vectors. Like a prepared launch it writes `y` through a
/// shared borrow (device memory only, ordered on the device's one stream).
pub struct CusparseSpmvOn<'a, T: SpmvScalar + Scalar> {
    inner: CusparseSpmv<T>,
    _borrows: PhantomData<&'a DeviceVec<T>>,
}

impl<'a, T: SpmvScalar + Scalar> CusparseSpmvOn<'a, T> {
    /// Describes the CSR matrix (`row_ptr`, `col`, `val`; `ncols` columns)
    /// and the vectors `x` and `y` to cuSPARSE and sizes its work buffer.
    ///
    /// # Errors
    /// cuSPARSE missing, an array on the CPU or on another GPU than `dev`,
    /// lengths that do not fit the shape, `y` the same array as `x`, shapes
    /// beyond 32-bit indices, and cuSPARSE errors.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dev: &CudaDevice,
        ncols: usize,
        row_ptr: &'a DeviceVec<u32>,
        col: &'a DeviceVec<u32>,
        val: &'a DeviceVec<T>,
        x: &'a DeviceVec<T>,
        y: &'a DeviceVec<T>,
        alg: SpmvAlg,
    ) -> Result<Self> {
        probe::require(Library::Cusparse)?;
        let nrows = row_ptr
            .len()
            .checked_sub(1)
            .ok_or_else(|| Error::invalid("cuSPARSE SpMV: row_ptr needs at least one entry"))?;
        if col.len() != val.len() {
            return Err(Error::length("cuSPARSE SpMV values", col.len(), val.len()));
        }
        if x.len() != ncols {
            return Err(Error::length("cuSPARSE SpMV x", ncols, x.len()));
        }
        if y.len() != nrows {
            return Err(Error::length("cuSPARSE SpMV y", nrows, y.len()));
        }
        let nnz = col.len();
        check_i32_shape(nrows, ncols, nnz)?;
        fn on_dev<U: Scalar>(v: &DeviceVec<U>, dev: &CudaDevice, name: &str) -> Result<u64> {
            match (v.cuda_device(), v.cuda_ptr()) {
                (Some(d), Some(ptr)) if std::sync::Arc::ptr_eq(d.context(), dev.context()) => {
                    Ok(ptr)
                }
                _ => Err(Error::invalid(format!(
                    "cuSPARSE SpMV: {name} is on {}, not on CUDA device {}",
                    v.location(),
                    dev.ordinal()
                ))),
            }
        }
        let ptrs = SpmvPointers {
            row_ptr: on_dev(row_ptr, dev, "row_ptr")?,
            col: on_dev(col, dev, "col")?,
            val: on_dev(val, dev, "val")?,
            x: on_dev(x, dev, "x")?,
            y: on_dev(y, dev, "y")?,
        };
        if ptrs.x == ptrs.y && nrows > 0 {
            return Err(Error::invalid(
                "cuSPARSE SpMV: y must be another array than x",
            ));
        }
        // SAFETY: every pointer is a live array of `dev` of the checked
        // length, borrowed for 'a, which the wrapper cannot outlive.
        let inner =
            unsafe { CusparseSpmv::over_pointers(dev, nrows, ncols, nnz, ptrs, alg, None)? };
        Ok(CusparseSpmvOn {
            inner,
            _borrows: PhantomData,
        })
    }

    /// Enqueues `y = A·x` on the device's stream (asynchronous).
    ///
    /// # Errors
    /// cuSPARSE errors.
    pub fn run(&self) -> Result<()> {
        self.inner.run()
    }

    /// Enqueues `y = A·x + y` on the device's stream (asynchronous).
    ///
    /// # Errors
    /// cuSPARSE errors.
    pub fn run_add(&self) -> Result<()> {
        self.inner.run_add()
    }
}
