//! The peer baselines of the SpMM benchmark: `Y = A·X`, A a CSR matrix
//! (`nrows × ncols`, 32-bit indices), X a dense row-major `ncols × k`
//! matrix and Y a dense row-major `nrows × k` one, through
//!
//! - [`CusparseSpmm`]: `cusparseSpMM` (`CUSPARSE_SPMM_ALG_DEFAULT`) on the
//!   CSR matrix, f32 or f64, owning its device copies, or
//!   [`CusparseSpmmOn`] over [`DeviceVec`]s a caller already holds;
//! - [`CublasGemm`]: `cublasSgemm`/`cublasDgemm` on the dense expansion of
//!   the same matrix ([`dense_row_major`]), with cuBLAS's default math mode
//!   (plain FP32/FP64, no TF32 tensor-core math).
//!
//! As the SpMV baseline ([`crate::baseline`]) does, each wrapper owns its
//! descriptors (or handle) and work buffer, so a benchmark calls `run` in a
//! loop and times nothing but the library's product, enqueued on the
//! device's one stream.
//!
//! cuBLAS is loaded at run time, like cuSPARSE: `libcublas.so.13` (and the
//! `libcublasLt.so.13` it needs) must be findable by the dynamic loader,
//! e.g. the `nvidia-cublas` wheel's `lib` directory on `LD_LIBRARY_PATH`.
//! Without it [`CublasGemm::new`] returns [`Error::Unavailable`] naming
//! `libcublas (cuBLAS)`, never a panic.

use crate::baseline::{check, SpmvScalar};
use cudarc::cublas::sys as cb;
use cudarc::cusparse::sys as cs;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ops::AddAssign;
use std::sync::OnceLock;
use warpfit::gpu::probe::{self, Library};
use warpfit::{CudaDevice, DeviceBuffer, DeviceVec, Scalar};
use warpfit::{Error, Result};

/// Turns a cuBLAS status into [`Error::Cuda`].
fn check_blas(s: cb::cublasStatus_t, what: &str) -> Result<()> {
    if s == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: cuBLAS returns a static string for every status.
    let msg = unsafe { std::ffi::CStr::from_ptr(cb::cublasGetStatusString(s)) }
        .to_string_lossy()
        .into_owned();
    Err(Error::Cuda {
        context: format!("cuBLAS {what}"),
        message: format!("{msg} ({s:?})"),
    })
}

/// What [`require_cublas`] names.
const CUBLAS_NAME: &str = "libcublas (cuBLAS)";

/// Checks that cuBLAS can be loaded, as [`probe::require`] does for the
/// libraries it knows: `Err(Error::Unavailable)` naming the library and
/// where to put it. cudarc would panic inside its loader instead.
pub fn require_cublas() -> Result<()> {
    static CACHE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    let r = CACHE.get_or_init(|| {
        // SAFETY: only tries `dlopen` on the candidate names and drops the
        // handle; no symbol is called.
        if unsafe { cb::is_culib_present() } {
            Ok(())
        } else {
            Err(
                "libcublas.so.13 was not found: add the CUDA toolkit's or the nvidia-cublas \
                 wheel's lib directory (with libcublasLt.so.13) to LD_LIBRARY_PATH"
                    .to_string(),
            )
        }
    });
    r.clone().map_err(|reason| Error::Unavailable {
        what: CUBLAS_NAME.to_string(),
        reason,
    })
}

/// Makes `dev`'s context current on this thread, for the libraries that
/// go through the runtime API.
fn bind(dev: &CudaDevice) -> Result<()> {
    dev.context().bind_to_thread().map_err(|e| Error::Cuda {
        context: format!("binding the context of device {}", dev.ordinal()),
        message: e.to_string(),
    })
}

/// The shape of a checked product: A is `nrows × ncols` with `nnz`
/// entries, X `ncols × k`, Y `nrows × k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SpmmShape {
    nrows: usize,
    ncols: usize,
    nnz: usize,
    k: usize,
}

/// Checks the dimensions of `Y = A·X` (`A` `nrows × ncols`, X and Y `k`
/// columns) for 32-bit library arguments and element sizes of `elem`
/// bytes; returns the element counts of X and Y.
fn check_dims(
    what: &str,
    nrows: usize,
    ncols: usize,
    k: usize,
    elem: usize,
) -> Result<(usize, usize)> {
    if k == 0 {
        return Err(Error::invalid(format!(
            "{what}: k = 0: X and Y need at least one column"
        )));
    }
    let max = i32::MAX as usize;
    for (name, v) in [("rows", nrows), ("columns", ncols), ("k", k)] {
        if v > max {
            return Err(Error::invalid(format!(
                "{what}: {v} {name}: 32-bit library arguments hold at most {max}"
            )));
        }
    }
    let elems = |name: &str, rows: usize| -> Result<usize> {
        rows.checked_mul(k)
            .filter(|n| n.checked_mul(elem).is_some_and(|b| b <= isize::MAX as usize))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{what}: {name} of {rows} × {k} elements of {elem} bytes overflows the address space"
                ))
            })
    };
    Ok((elems("X", ncols)?, elems("Y", nrows)?))
}

/// Checks the lengths of a CSR product's arrays against its shape (before
/// anything is allocated).
#[allow(clippy::too_many_arguments)]
fn spmm_shape(
    what: &str,
    nrows: usize,
    ncols: usize,
    row_ptr_len: usize,
    col_len: usize,
    val_len: usize,
    x_len: usize,
    k: usize,
    elem: usize,
) -> Result<SpmmShape> {
    let (want_x, _) = check_dims(what, nrows, ncols, k, elem)?;
    if row_ptr_len != nrows + 1 {
        return Err(Error::length(
            format!("{what} row_ptr"),
            nrows + 1,
            row_ptr_len,
        ));
    }
    if col_len != val_len {
        return Err(Error::length(format!("{what} values"), col_len, val_len));
    }
    if col_len > i32::MAX as usize {
        return Err(Error::invalid(format!(
            "{what}: {col_len} nonzeros: 32-bit indices hold at most {}",
            i32::MAX
        )));
    }
    if x_len != want_x {
        return Err(Error::length(
            format!("{what} X ({ncols} × {k}, row-major)"),
            want_x,
            x_len,
        ));
    }
    Ok(SpmmShape {
        nrows,
        ncols,
        nnz: col_len,
        k,
    })
}

/// Checks a host CSR structure whose lengths fit (`row_ptr` has `nrows + 1`
/// entries): starts at 0, never decreases, ends at `col.len()`, and every
/// column is below `ncols`.
fn check_csr(what: &str, nrows: usize, ncols: usize, row_ptr: &[u32], col: &[u32]) -> Result<()> {
    if row_ptr[0] != 0 {
        return Err(Error::invalid(format!(
            "{what}: row_ptr starts at {}, not 0",
            row_ptr[0]
        )));
    }
    if let Some(r) = (0..nrows).find(|&r| row_ptr[r + 1] < row_ptr[r]) {
        return Err(Error::invalid(format!(
            "{what}: row_ptr decreases at row {r} ({} then {})",
            row_ptr[r],
            row_ptr[r + 1]
        )));
    }
    if row_ptr[nrows] as usize != col.len() {
        return Err(Error::invalid(format!(
            "{what}: row_ptr ends at {}, but there are {} nonzeros",
            row_ptr[nrows],
            col.len()
        )));
    }
    if let Some((j, &c)) = col.iter().enumerate().find(|(_, &c)| c as usize >= ncols) {
        return Err(Error::invalid(format!(
            "{what}: column index {c} (nonzero {j}) is out of range for {ncols} columns"
        )));
    }
    Ok(())
}

/// The dense row-major `nrows × ncols` expansion of a CSR matrix
/// (duplicate entries summed), for [`CublasGemm`].
///
/// # Errors
/// Lengths that do not fit the shape, a malformed CSR structure, and a
/// dense size that overflows or is over warpfit's memory limit.
pub fn dense_row_major<T: Copy + Default + AddAssign>(
    nrows: usize,
    ncols: usize,
    row_ptr: &[u32],
    col: &[u32],
    val: &[T],
) -> Result<Vec<T>> {
    const WHAT: &str = "dense expansion";
    let want_ptr = nrows
        .checked_add(1)
        .ok_or_else(|| Error::invalid(format!("{WHAT}: {nrows} rows")))?;
    if row_ptr.len() != want_ptr {
        return Err(Error::length(
            format!("{WHAT} row_ptr"),
            want_ptr,
            row_ptr.len(),
        ));
    }
    if col.len() != val.len() {
        return Err(Error::length(
            format!("{WHAT} values"),
            col.len(),
            val.len(),
        ));
    }
    check_csr(WHAT, nrows, ncols, row_ptr, col)?;
    let n = nrows.checked_mul(ncols).ok_or_else(|| {
        Error::invalid(format!(
            "{WHAT}: {nrows} × {ncols} elements overflow the address space"
        ))
    })?;
    let mut w = warpfit::runtime::mem::try_filled(
        &format!("the dense {nrows} × {ncols} matrix"),
        n,
        T::default(),
    )?;
    for r in 0..nrows {
        let (lo, hi) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
        for (&c, &v) in col[lo..hi].iter().zip(&val[lo..hi]) {
            w[r * ncols + c as usize] += v;
        }
    }
    Ok(w)
}

/// The device addresses of a CSR SpMM's arrays.
#[derive(Clone, Copy)]
struct SpmmPointers {
    row_ptr: u64,
    col: u64,
    val: u64,
    x: u64,
    y: u64,
}

/// The device copies [`CusparseSpmm::new`] makes.
struct OwnedSpmm<T> {
    _row_ptr: DeviceBuffer<u32>,
    _col: DeviceBuffer<u32>,
    _val: DeviceBuffer<T>,
    _x: DeviceBuffer<T>,
    y: DeviceBuffer<T>,
}

/// The device address of `v`, which must be on `dev`.
fn on_dev<U: Scalar>(v: &DeviceVec<U>, dev: &CudaDevice, what: &str, name: &str) -> Result<u64> {
    match (v.cuda_device(), v.cuda_ptr()) {
        (Some(d), Some(ptr)) if std::sync::Arc::ptr_eq(d.context(), dev.context()) => Ok(ptr),
        _ => Err(Error::invalid(format!(
            "{what}: {name} is on {}, not on CUDA device {}",
            v.location(),
            dev.ordinal()
        ))),
    }
}

const SPMM: &str = "cuSPARSE SpMM";
const NON_T: cs::cusparseOperation_t = cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
const SPMM_ALG: cs::cusparseSpMMAlg_t = cs::cusparseSpMMAlg_t::CUSPARSE_SPMM_ALG_DEFAULT;

/// `Y = A·X` through `cusparseSpMM` (`CUSPARSE_SPMM_ALG_DEFAULT`, A in CSR
/// with 32-bit indices, X and Y row-major with `k` columns), ready to run
/// repeatedly.
pub struct CusparseSpmm<T: SpmvScalar> {
    dev: CudaDevice,
    handle: cs::cusparseHandle_t,
    mat: cs::cusparseSpMatDescr_t,
    mx: cs::cusparseDnMatDescr_t,
    my: cs::cusparseDnMatDescr_t,
    shape: SpmmShape,
    /// The arrays the descriptors point into, when this wrapper owns them
    /// (`None` for [`CusparseSpmmOn`], whose borrows keep them alive).
    owned: Option<OwnedSpmm<T>>,
    work: DeviceBuffer<u8>,
}

impl<T: SpmvScalar> CusparseSpmm<T> {
    /// Uploads the CSR matrix (`nrows × ncols`: `row_ptr`, `col`, `val`)
    /// and X (row-major `ncols × k`), creates the descriptors, sizes the
    /// work buffer and runs `cusparseSpMM_preprocess`.
    ///
    /// # Errors
    /// `k == 0`, lengths that do not fit the shape, a malformed CSR
    /// structure, shapes beyond 32-bit indices, cuSPARSE missing, and CUDA
    /// or cuSPARSE errors.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dev: &CudaDevice,
        nrows: usize,
        ncols: usize,
        row_ptr: &[u32],
        col: &[u32],
        val: &[T],
        x: &[T],
        k: usize,
    ) -> Result<Self> {
        let shape = spmm_shape(
            SPMM,
            nrows,
            ncols,
            row_ptr.len(),
            col.len(),
            val.len(),
            x.len(),
            k,
            std::mem::size_of::<T>(),
        )?;
        check_csr(SPMM, nrows, ncols, row_ptr, col)?;
        probe::require(Library::Cusparse)?;
        let owned = OwnedSpmm {
            _row_ptr: DeviceBuffer::upload(dev, row_ptr)?,
            _col: DeviceBuffer::upload(dev, col)?,
            _val: DeviceBuffer::upload(dev, val)?,
            _x: DeviceBuffer::upload(dev, x)?,
            y: DeviceBuffer::<T>::zeros(dev, nrows * k)?,
        };
        let ptrs = SpmmPointers {
            row_ptr: owned._row_ptr.device_ptr(dev),
            col: owned._col.device_ptr(dev),
            val: owned._val.device_ptr(dev),
            x: owned._x.device_ptr(dev),
            y: owned.y.device_ptr(dev),
        };
        // SAFETY: the pointers are `owned`'s live buffers of the checked
        // lengths, which the wrapper keeps until its descriptors are destroyed.
        unsafe { Self::over_pointers(dev, shape, ptrs, Some(owned)) }
    }

    /// [`CusparseSpmmOn::new`]: the product over arrays already on the
    /// device.
    #[allow(clippy::too_many_arguments)]
    pub fn on<'a>(
        dev: &CudaDevice,
        nrows: usize,
        ncols: usize,
        row_ptr: &'a DeviceVec<u32>,
        col: &'a DeviceVec<u32>,
        val: &'a DeviceVec<T>,
        x: &'a DeviceVec<T>,
        k: usize,
        y: &'a DeviceVec<T>,
    ) -> Result<CusparseSpmmOn<'a, T>>
    where
        T: Scalar,
    {
        CusparseSpmmOn::new(dev, nrows, ncols, row_ptr, col, val, x, k, y)
    }

    /// Creates the descriptors over `ptrs`, sizes the work buffer and
    /// preprocesses.
    ///
    /// # Safety
    /// Every pointer must address a live device array of `dev` of the
    /// length its role needs (`nrows + 1`, `nnz`, `nnz`, `ncols·k`,
    /// `nrows·k` elements) for as long as the returned wrapper lives.
    unsafe fn over_pointers(
        dev: &CudaDevice,
        shape: SpmmShape,
        ptrs: SpmmPointers,
        owned: Option<OwnedSpmm<T>>,
    ) -> Result<Self> {
        let mut s = CusparseSpmm {
            dev: dev.clone(),
            handle: std::ptr::null_mut(),
            mat: std::ptr::null_mut(),
            mx: std::ptr::null_mut(),
            my: std::ptr::null_mut(),
            shape,
            work: DeviceBuffer::zeros(dev, 0)?,
            owned,
        };
        let SpmmShape {
            nrows,
            ncols,
            nnz,
            k,
        } = shape;
        bind(dev)?;
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
                cs::cusparseCreateDnMat(
                    &mut s.mx,
                    ncols as i64,
                    k as i64,
                    k as i64,
                    ptrs.x as *mut c_void,
                    T::DATA_TYPE,
                    cs::cusparseOrder_t::CUSPARSE_ORDER_ROW,
                ),
                "X descriptor",
            )?;
            check(
                cs::cusparseCreateDnMat(
                    &mut s.my,
                    nrows as i64,
                    k as i64,
                    k as i64,
                    ptrs.y as *mut c_void,
                    T::DATA_TYPE,
                    cs::cusparseOrder_t::CUSPARSE_ORDER_ROW,
                ),
                "Y descriptor",
            )?;
            let (one, zero) = (T::ONE, T::default());
            let mut size = 0usize;
            check(
                cs::cusparseSpMM_bufferSize(
                    s.handle,
                    NON_T,
                    NON_T,
                    (&one as *const T).cast(),
                    s.mat,
                    s.mx,
                    (&zero as *const T).cast(),
                    s.my,
                    T::DATA_TYPE,
                    SPMM_ALG,
                    &mut size,
                ),
                "SpMM buffer size",
            )?;
            s.work = DeviceBuffer::zeros(dev, size)?;
            // Optional: it only speeds up some algorithms, and may say so.
            let pre = cs::cusparseSpMM_preprocess(
                s.handle,
                NON_T,
                NON_T,
                (&one as *const T).cast(),
                s.mat,
                s.mx,
                (&zero as *const T).cast(),
                s.my,
                T::DATA_TYPE,
                SPMM_ALG,
                s.work.device_ptr(dev) as *mut c_void,
            );
            if pre != cs::cusparseStatus_t::CUSPARSE_STATUS_NOT_SUPPORTED {
                check(pre, "SpMM preprocess")?;
            }
        }
        Ok(s)
    }

    /// Enqueues `Y = A·X` on the device's stream (asynchronous).
    ///
    /// # Errors
    /// cuSPARSE errors.
    pub fn run(&mut self) -> Result<()> {
        let (one, zero) = (T::ONE, T::default());
        // SAFETY: descriptors and buffers are live (owned by `self`, or
        // borrowed for its life); alpha and beta are host scalars read
        // before the call returns.
        unsafe {
            check(
                cs::cusparseSpMM(
                    self.handle,
                    NON_T,
                    NON_T,
                    (&one as *const T).cast(),
                    self.mat,
                    self.mx,
                    (&zero as *const T).cast(),
                    self.my,
                    T::DATA_TYPE,
                    SPMM_ALG,
                    self.work.device_ptr(&self.dev) as *mut c_void,
                ),
                "SpMM",
            )
        }
    }

    /// Y, row-major `nrows × k` (synchronizes).
    ///
    /// # Errors
    /// CUDA copy errors; a wrapper over borrowed arrays has no Y of its
    /// own (read the borrowed array instead).
    pub fn y(&self) -> Result<Vec<T>> {
        match &self.owned {
            Some(owned) => owned.y.to_vec(&self.dev),
            None => Err(Error::invalid(
                "this cuSPARSE SpMM writes a borrowed array: read Y from it",
            )),
        }
    }

    /// Rows of A and Y.
    pub fn nrows(&self) -> usize {
        self.shape.nrows
    }

    /// Columns of A, rows of X.
    pub fn ncols(&self) -> usize {
        self.shape.ncols
    }

    /// Nonzeros of A.
    pub fn nnz(&self) -> usize {
        self.shape.nnz
    }

    /// Columns of X and Y.
    pub fn k(&self) -> usize {
        self.shape.k
    }
}

impl<T: SpmvScalar> std::fmt::Debug for CusparseSpmm<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CusparseSpmm")
            .field("type", &std::any::type_name::<T>())
            .field("shape", &self.shape)
            .field("owned", &self.owned.is_some())
            .field("work_bytes", &self.work.len())
            .finish()
    }
}

impl<T: SpmvScalar> Drop for CusparseSpmm<T> {
    fn drop(&mut self) {
        // SAFETY: each handle was created above (or is null, which we
        // skip); the stream is synchronized first so no queued SpMM still
        // uses them.
        unsafe {
            let _ = self.dev.stream().synchronize();
            if !self.my.is_null() {
                cs::cusparseDestroyDnMat(self.my);
            }
            if !self.mx.is_null() {
                cs::cusparseDestroyDnMat(self.mx);
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

/// `Y = A·X` through `cusparseSpMM` on arrays already on the device: the
/// CSR matrix, X and Y are [`DeviceVec`]s borrowed for the wrapper's life
/// and read and written in place. Like a prepared launch it writes Y
/// through a shared borrow (device memory only, ordered on the device's
/// one stream). The CSR structure is not checked on the device: it must be
/// well formed, with columns below `ncols`.
pub struct CusparseSpmmOn<'a, T: SpmvScalar + Scalar> {
    inner: CusparseSpmm<T>,
    _borrows: PhantomData<&'a DeviceVec<T>>,
}

impl<T: SpmvScalar + Scalar> std::fmt::Debug for CusparseSpmmOn<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CusparseSpmmOn").field(&self.inner).finish()
    }
}

impl<'a, T: SpmvScalar + Scalar> CusparseSpmmOn<'a, T> {
    /// Describes the CSR matrix (`nrows × ncols`), X (row-major `ncols × k`)
    /// and Y (row-major `nrows × k`) to cuSPARSE, sizes its work buffer and
    /// preprocesses.
    ///
    /// # Errors
    /// `k == 0`, lengths that do not fit the shape, an array on the CPU or
    /// on another GPU than `dev`, Y the same array as X, shapes beyond
    /// 32-bit indices, cuSPARSE missing, and cuSPARSE errors.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dev: &CudaDevice,
        nrows: usize,
        ncols: usize,
        row_ptr: &'a DeviceVec<u32>,
        col: &'a DeviceVec<u32>,
        val: &'a DeviceVec<T>,
        x: &'a DeviceVec<T>,
        k: usize,
        y: &'a DeviceVec<T>,
    ) -> Result<Self> {
        let shape = spmm_shape(
            SPMM,
            nrows,
            ncols,
            row_ptr.len(),
            col.len(),
            val.len(),
            x.len(),
            k,
            std::mem::size_of::<T>(),
        )?;
        let (_, want_y) = check_dims(SPMM, nrows, ncols, k, std::mem::size_of::<T>())?;
        if y.len() != want_y {
            return Err(Error::length(
                format!("{SPMM} Y ({nrows} × {k}, row-major)"),
                want_y,
                y.len(),
            ));
        }
        let ptrs = SpmmPointers {
            row_ptr: on_dev(row_ptr, dev, SPMM, "row_ptr")?,
            col: on_dev(col, dev, SPMM, "col")?,
            val: on_dev(val, dev, SPMM, "val")?,
            x: on_dev(x, dev, SPMM, "X")?,
            y: on_dev(y, dev, SPMM, "Y")?,
        };
        if ptrs.x == ptrs.y {
            return Err(Error::invalid(format!(
                "{SPMM}: Y must be another array than X"
            )));
        }
        probe::require(Library::Cusparse)?;
        // SAFETY: every pointer is a live array of `dev` of the checked
        // length, borrowed for 'a, which the wrapper cannot outlive.
        let inner = unsafe { CusparseSpmm::over_pointers(dev, shape, ptrs, None)? };
        Ok(CusparseSpmmOn {
            inner,
            _borrows: PhantomData,
        })
    }

    /// Enqueues `Y = A·X` on the device's stream (asynchronous).
    ///
    /// # Errors
    /// cuSPARSE errors.
    pub fn run(&mut self) -> Result<()> {
        self.inner.run()
    }

    /// Columns of X and Y.
    pub fn k(&self) -> usize {
        self.inner.k()
    }
}

/// A value type cuBLAS GEMM takes: `cublasSgemm` for f32, `cublasDgemm`
/// for f64.
pub trait GemmScalar: SpmvScalar {
    /// The column-major `C = alpha·A·B + beta·C` with neither operand
    /// transposed (`cublas<t>gemm` with `CUBLAS_OP_N` twice).
    ///
    /// # Safety
    /// As `cublas<t>gemm`: a live handle and device arrays of the sizes
    /// the dimensions and leading dimensions imply.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_nn(
        handle: cb::cublasHandle_t,
        m: i32,
        n: i32,
        k: i32,
        alpha: *const Self,
        a: *const Self,
        lda: i32,
        b: *const Self,
        ldb: i32,
        beta: *const Self,
        c: *mut Self,
        ldc: i32,
    ) -> cb::cublasStatus_t;
}

const OP_N: cb::cublasOperation_t = cb::cublasOperation_t::CUBLAS_OP_N;

impl GemmScalar for f32 {
    unsafe fn gemm_nn(
        handle: cb::cublasHandle_t,
        m: i32,
        n: i32,
        k: i32,
        alpha: *const f32,
        a: *const f32,
        lda: i32,
        b: *const f32,
        ldb: i32,
        beta: *const f32,
        c: *mut f32,
        ldc: i32,
    ) -> cb::cublasStatus_t {
        // SAFETY: the caller's contract.
        unsafe {
            cb::cublasSgemm_v2(
                handle, OP_N, OP_N, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
            )
        }
    }
}

impl GemmScalar for f64 {
    unsafe fn gemm_nn(
        handle: cb::cublasHandle_t,
        m: i32,
        n: i32,
        k: i32,
        alpha: *const f64,
        a: *const f64,
        lda: i32,
        b: *const f64,
        ldb: i32,
        beta: *const f64,
        c: *mut f64,
        ldc: i32,
    ) -> cb::cublasStatus_t {
        // SAFETY: the caller's contract.
        unsafe {
            cb::cublasDgemm_v2(
                handle, OP_N, OP_N, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
            )
        }
    }
}

/// The column-major GEMM arguments of the row-major `Y = W·X`.
///
/// A row-major `r × c` matrix is, in the same memory, the column-major
/// `c × r` matrix of its transpose with leading dimension `c`. So row-major
/// Y (`nrows × k`), X (`ncols × k`) and W (`nrows × ncols`) are column-major
/// Yᵀ (`k × nrows`, ld `k`), Xᵀ (`k × ncols`, ld `k`) and Wᵀ (`ncols ×
/// nrows`, ld `ncols`), and `Yᵀ = (W·X)ᵀ = Xᵀ·Wᵀ` is the column-major GEMM
/// `C = A·B` with A = X, B = W: `m = k`, `n = nrows`, inner `ncols`,
/// `lda = k`, `ldb = ncols`, `ldc = k`. cuBLAS wants every leading
/// dimension at least 1, even for an empty operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct GemmArgs {
    m: i32,
    n: i32,
    inner: i32,
    lda: i32,
    ldb: i32,
    ldc: i32,
}

impl GemmArgs {
    /// For a shape already through [`check_dims`] (every size fits `i32`).
    fn row_major(nrows: usize, ncols: usize, k: usize) -> Self {
        let (nrows, ncols, k) = (nrows as i32, ncols as i32, k as i32);
        GemmArgs {
            m: k,
            n: nrows,
            inner: ncols,
            lda: k.max(1),
            ldb: ncols.max(1),
            ldc: k.max(1),
        }
    }
}

const GEMM: &str = "cuBLAS GEMM";

/// `Y = W·X` through cuBLAS GEMM, W the dense row-major `nrows × ncols`
/// matrix (see [`dense_row_major`]), X row-major `ncols × k`, Y row-major
/// `nrows × k`, ready to run repeatedly. The handle runs on the device's
/// stream with `CUBLAS_DEFAULT_MATH` (no TF32: a plain FP32 or FP64 GEMM).
///
/// Needs `libcublas.so.13` on the loader's path (see the module
/// documentation).
pub struct CublasGemm<T: GemmScalar> {
    dev: CudaDevice,
    handle: cb::cublasHandle_t,
    args: GemmArgs,
    nrows: usize,
    ncols: usize,
    k: usize,
    w: DeviceBuffer<T>,
    x: DeviceBuffer<T>,
    y: DeviceBuffer<T>,
}

impl<T: GemmScalar> CublasGemm<T> {
    /// Uploads W (row-major `nrows × ncols`) and X (row-major `ncols × k`),
    /// allocates Y and creates the cuBLAS handle on the device's stream.
    ///
    /// # Errors
    /// `k == 0`, lengths that do not fit the shape, sizes beyond cuBLAS's
    /// 32-bit arguments, cuBLAS missing ([`Error::Unavailable`] naming
    /// `libcublas (cuBLAS)`), and CUDA or cuBLAS errors.
    pub fn new(
        dev: &CudaDevice,
        nrows: usize,
        ncols: usize,
        w: &[T],
        x: &[T],
        k: usize,
    ) -> Result<Self> {
        let elem = std::mem::size_of::<T>();
        let (want_x, want_y) = check_dims(GEMM, nrows, ncols, k, elem)?;
        let want_w = nrows
            .checked_mul(ncols)
            .filter(|n| {
                n.checked_mul(elem)
                    .is_some_and(|b| b <= isize::MAX as usize)
            })
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{GEMM}: W of {nrows} × {ncols} elements overflows the address space"
                ))
            })?;
        if w.len() != want_w {
            return Err(Error::length(
                format!("{GEMM} W ({nrows} × {ncols}, row-major)"),
                want_w,
                w.len(),
            ));
        }
        if x.len() != want_x {
            return Err(Error::length(
                format!("{GEMM} X ({ncols} × {k}, row-major)"),
                want_x,
                x.len(),
            ));
        }
        require_cublas()?;
        let mut s = CublasGemm {
            dev: dev.clone(),
            handle: std::ptr::null_mut(),
            args: GemmArgs::row_major(nrows, ncols, k),
            nrows,
            ncols,
            k,
            w: DeviceBuffer::upload(dev, w)?,
            x: DeviceBuffer::upload(dev, x)?,
            y: DeviceBuffer::zeros(dev, want_y)?,
        };
        bind(dev)?;
        // SAFETY: the out-pointer is valid; Drop destroys the handle after
        // waiting for the stream.
        unsafe {
            check_blas(cb::cublasCreate_v2(&mut s.handle), "handle creation")?;
            check_blas(
                cb::cublasSetStream_v2(s.handle, dev.stream().cu_stream() as _),
                "set stream",
            )?;
            check_blas(
                cb::cublasSetMathMode(s.handle, cb::cublasMath_t::CUBLAS_DEFAULT_MATH),
                "set math mode",
            )?;
        }
        Ok(s)
    }

    /// Enqueues `Y = W·X` on the device's stream (asynchronous).
    ///
    /// # Errors
    /// cuBLAS errors.
    pub fn run(&mut self) -> Result<()> {
        let (one, zero) = (T::ONE, T::default());
        let a = self.args;
        let dev = &self.dev;
        // SAFETY: the handle and buffers are live (owned by `self`) and of
        // the sizes `a` describes (see `GemmArgs`); alpha and beta are host
        // scalars (the default pointer mode) read before the call returns.
        unsafe {
            check_blas(
                T::gemm_nn(
                    self.handle,
                    a.m,
                    a.n,
                    a.inner,
                    &one,
                    self.x.device_ptr(dev) as *const T,
                    a.lda,
                    self.w.device_ptr(dev) as *const T,
                    a.ldb,
                    &zero,
                    self.y.device_ptr(dev) as *mut T,
                    a.ldc,
                ),
                "GEMM",
            )
        }
    }

    /// Y, row-major `nrows × k` (synchronizes).
    ///
    /// # Errors
    /// CUDA copy errors.
    pub fn y(&self) -> Result<Vec<T>> {
        self.y.to_vec(&self.dev)
    }

    /// Rows of W and Y.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Columns of W, rows of X.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Columns of X and Y.
    pub fn k(&self) -> usize {
        self.k
    }
}

impl<T: GemmScalar> std::fmt::Debug for CublasGemm<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CublasGemm")
            .field("type", &std::any::type_name::<T>())
            .field("nrows", &self.nrows)
            .field("ncols", &self.ncols)
            .field("k", &self.k)
            .field("args", &self.args)
            .finish()
    }
}

impl<T: GemmScalar> Drop for CublasGemm<T> {
    fn drop(&mut self) {
        // SAFETY: the handle was created above (or is null, which we skip);
        // the stream is synchronized first so no queued GEMM still uses it.
        unsafe {
            let _ = self.dev.stream().synchronize();
            if !self.handle.is_null() {
                cb::cublasDestroy_v2(self.handle);
            }
        }
    }
}

/// The root crate's GPU check, shared by every GPU suite.
#[cfg(test)]
#[path = "../../tests/gpu_common/mod.rs"]
mod gpu_common;

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3 × 4 matrix with an empty row and a duplicate entry:
    /// `[[1, 0, 2, 0], [0, 0, 0, 0], [0, 3, 0, 4+5]]`.
    fn small() -> (Vec<u32>, Vec<u32>, Vec<f32>) {
        (
            vec![0, 2, 2, 5],
            vec![0, 2, 1, 3, 3],
            vec![1., 2., 3., 4., 5.],
        )
    }

    #[test]
    fn dense_row_major_expands_and_sums_duplicates() {
        let (p, c, v) = small();
        let w = dense_row_major(3, 4, &p, &c, &v).unwrap();
        assert_eq!(w, [1., 0., 2., 0., 0., 0., 0., 0., 0., 3., 0., 9.]);
        assert!(dense_row_major::<f32>(0, 5, &[0], &[], &[])
            .unwrap()
            .is_empty());
    }

    #[test]
    fn dense_row_major_rejects_bad_csr() {
        let (p, c, v) = small();
        let e = |r: Result<Vec<f32>>| r.unwrap_err().to_string();
        assert!(e(dense_row_major(4, 4, &p, &c, &v)).contains("row_ptr"));
        assert!(e(dense_row_major(3, 4, &p, &c, &v[1..])).contains("values"));
        assert!(e(dense_row_major(3, 3, &p, &c, &v)).contains("out of range"));
        assert!(e(dense_row_major(3, 4, &[0, 3, 2, 5], &c, &v)).contains("decreases"));
        assert!(e(dense_row_major(3, 4, &[1, 2, 2, 5], &c, &v)).contains("starts at 1"));
        assert!(e(dense_row_major(3, 4, &[0, 2, 2, 4], &c, &v)).contains("ends at 4"));
        assert!(e(dense_row_major::<f32>(usize::MAX, 1, &[0], &[], &[])).contains("rows"));
        let huge = dense_row_major::<f32>(1, usize::MAX, &[0, 0], &[], &[]);
        assert!(e(huge).contains("out of memory"));
    }

    #[test]
    fn sizes_are_checked_before_anything_is_allocated() {
        let four = std::mem::size_of::<f32>();
        let shape =
            |nrows, ncols, p, c, v, x, k| spmm_shape("t", nrows, ncols, p, c, v, x, k, four);
        let ok = shape(3, 4, 4, 5, 5, 8, 2).unwrap();
        assert_eq!(
            ok,
            SpmmShape {
                nrows: 3,
                ncols: 4,
                nnz: 5,
                k: 2
            }
        );
        let msg = |r: Result<SpmmShape>| r.unwrap_err().to_string();
        assert!(msg(shape(3, 4, 4, 5, 5, 0, 0)).contains("k = 0"));
        assert!(msg(shape(3, 4, 3, 5, 5, 8, 2)).contains("row_ptr"));
        assert!(msg(shape(3, 4, 4, 5, 4, 8, 2)).contains("values"));
        assert!(msg(shape(3, 4, 4, 5, 5, 7, 2)).contains("X (4 × 2"));
        assert!(msg(shape(3, 1 << 31, 4, 5, 5, 8, 2)).contains("columns"));
        assert!(msg(shape(3, 4, 4, 5, 5, 8, 1 << 31)).contains("k:"));
        // Each count fits i32, their product overflows the address space.
        let big = i32::MAX as usize;
        let e = check_dims("t", 1, big, big, 1 << 40)
            .unwrap_err()
            .to_string();
        assert!(e.contains("overflows"), "{e}");
        assert_eq!(check_dims("t", 3, 4, 2, four).unwrap(), (8, 6));
    }

    /// The column-major GEMM `C = A·B` (no transposes) on the host, as
    /// cuBLAS defines it with leading dimensions.
    fn host_gemm_nn(g: GemmArgs, a: &[f64], b: &[f64]) -> Vec<f64> {
        let (m, n, kk) = (g.m as usize, g.n as usize, g.inner as usize);
        let (lda, ldb, ldc) = (g.lda as usize, g.ldb as usize, g.ldc as usize);
        let mut c = vec![f64::NAN; ldc * n];
        for j in 0..n {
            for i in 0..m {
                c[i + j * ldc] = (0..kk).map(|l| a[i + l * lda] * b[l + j * ldb]).sum();
            }
        }
        c
    }

    /// Row-major `Y = W·X`, the plain way.
    fn host_row_major(nrows: usize, ncols: usize, k: usize, w: &[f64], x: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; nrows * k];
        for r in 0..nrows {
            for j in 0..k {
                y[r * k + j] = (0..ncols).map(|c| w[r * ncols + c] * x[c * k + j]).sum();
            }
        }
        y
    }

    #[test]
    fn the_column_major_gemm_computes_the_row_major_product() {
        for (nrows, ncols, k) in [(3, 4, 2), (5, 2, 7), (1, 6, 1), (4, 1, 3), (2, 3, 3)] {
            let w: Vec<f64> = (0..nrows * ncols)
                .map(|i| (i * 7 % 11) as f64 - 5.0)
                .collect();
            let x: Vec<f64> = (0..ncols * k).map(|i| (i * 5 % 13) as f64 - 6.0).collect();
            // A = X, B = W, as `CublasGemm::run` passes them.
            let got = host_gemm_nn(GemmArgs::row_major(nrows, ncols, k), &x, &w);
            assert_eq!(
                got,
                host_row_major(nrows, ncols, k, &w, &x),
                "{nrows}×{ncols}, k={k}"
            );
        }
        let g = GemmArgs::row_major(3, 0, 2);
        assert_eq!((g.inner, g.ldb), (0, 1), "ld at least 1 for an empty W");
    }

    #[test]
    fn a_missing_cublas_is_an_unavailable_error() {
        match require_cublas() {
            Ok(()) => eprintln!("cuBLAS is present here"),
            Err(e) => {
                assert!(matches!(e, Error::Unavailable { .. }), "{e:?}");
                let s = e.to_string();
                assert!(
                    s.contains("libcublas") && s.contains("LD_LIBRARY_PATH"),
                    "{s}"
                );
            }
        }
    }

    /// A small xorshift generator, for repeatable random matrices.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }

    /// A random `nrows × ncols` CSR matrix (about a quarter full, some rows
    /// empty) and a random row-major `ncols × k` X.
    fn random_problem(
        nrows: usize,
        ncols: usize,
        k: usize,
        seed: u64,
    ) -> (Vec<u32>, Vec<u32>, Vec<f64>, Vec<f64>) {
        let mut rng = Rng(seed);
        let (mut p, mut c, mut v) = (vec![0u32], vec![], vec![]);
        for _ in 0..nrows {
            for j in 0..ncols {
                if rng.next() % 4 == 0 {
                    c.push(j as u32);
                    v.push(rng.unit());
                }
            }
            p.push(c.len() as u32);
        }
        let x = (0..ncols * k).map(|_| rng.unit()).collect();
        (p, c, v, x)
    }

    fn assert_close<T: Copy + Into<f64>>(what: &str, got: &[T], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let g: f64 = g.into();
            assert!(
                (g - w).abs() <= tol * (1.0 + w.abs()),
                "{what}[{i}]: {g} vs {w}"
            );
        }
    }

    #[test]
    fn both_peers_match_the_host_product_on_a_gpu() {
        let Some(device) = super::gpu_common::gpu() else {
            return;
        };
        let dev = device.cuda().unwrap().clone();
        for (nrows, ncols, k, seed) in [
            (37, 29, 5, 1),
            (64, 64, 32, 2),
            (1, 7, 1, 3),
            (20, 30, 8, 4),
        ] {
            let (p, c, v, x) = random_problem(nrows, ncols, k, seed);
            let w = dense_row_major(nrows, ncols, &p, &c, &v).unwrap();
            let want = host_row_major(nrows, ncols, k, &w, &x);
            let case = format!("{nrows}×{ncols}, k={k}");
            let (v32, x32): (Vec<f32>, Vec<f32>) = (
                v.iter().map(|&a| a as f32).collect(),
                x.iter().map(|&a| a as f32).collect(),
            );

            let mut s = CusparseSpmm::new(&dev, nrows, ncols, &p, &c, &v32, &x32, k).unwrap();
            s.run().unwrap();
            s.run().unwrap();
            assert_close(
                &format!("cuSPARSE f32 {case}"),
                &s.y().unwrap(),
                &want,
                1e-5,
            );
            let mut s = CusparseSpmm::new(&dev, nrows, ncols, &p, &c, &v, &x, k).unwrap();
            s.run().unwrap();
            assert_close(
                &format!("cuSPARSE f64 {case}"),
                &s.y().unwrap(),
                &want,
                1e-12,
            );

            let (dp, dc, dv, dx) = (
                device.upload(&p).unwrap(),
                device.upload(&c).unwrap(),
                device.upload(&v).unwrap(),
                device.upload(&x).unwrap(),
            );
            let dy = device.alloc::<f64>(nrows * k).unwrap();
            let mut on = CusparseSpmm::on(&dev, nrows, ncols, &dp, &dc, &dv, &dx, k, &dy).unwrap();
            on.run().unwrap();
            drop(on);
            assert_close(
                &format!("cuSPARSE on f64 {case}"),
                &dy.to_vec().unwrap(),
                &want,
                1e-12,
            );
            let e = CusparseSpmm::on(&dev, nrows, ncols, &dp, &dc, &dv, &dx, k, &dx);
            assert!(e.is_err(), "Y of the wrong length or aliasing X");

            let w32: Vec<f32> = w.iter().map(|&a| a as f32).collect();
            let mut g = CublasGemm::new(&dev, nrows, ncols, &w32, &x32, k).unwrap();
            g.run().unwrap();
            assert_close(&format!("cuBLAS f32 {case}"), &g.y().unwrap(), &want, 1e-5);
            let mut g = CublasGemm::new(&dev, nrows, ncols, &w, &x, k).unwrap();
            g.run().unwrap();
            assert_close(&format!("cuBLAS f64 {case}"), &g.y().unwrap(), &want, 1e-12);
        }
        // Argument errors come before any library call.
        let (p, c, v) = small();
        let e = CusparseSpmm::new(&dev, 3, 4, &p, &c, &v, &[0.0; 8], 0).unwrap_err();
        assert!(e.to_string().contains("k = 0"), "{e}");
        let e = CublasGemm::<f32>::new(&dev, 3, 4, &[0.0; 12], &[0.0; 7], 2).unwrap_err();
        assert!(e.to_string().contains("X"), "{e}");
    }
}
