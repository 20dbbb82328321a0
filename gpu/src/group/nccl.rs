//! One NCCL communicator per GPU of a group, made in this process
//! (`ncclCommInitAll`), and the few calls a distributed launch makes:
//! grouped point-to-point sends and receives, and an in-place all-reduce.
//!
//! The calls take raw device addresses and go to each device's one stream,
//! so they are ordered with the launches there without an event. Every call
//! for several ranks from one thread is wrapped in `ncclGroupStart/End`:
//! NCCL requires it when one thread drives several GPUs, else the first
//! rank's call waits for peers that are never called.

use crate::driver::cuda_device::CudaDevice;
use crate::spec::ScalarType;
use cudarc::driver::CudaStream;
use cudarc::nccl::{result, sys};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use warpfit_runtime::{Error, Result};

/// The communicators of a group, rank `p` on the group's GPU `p`.
pub(super) struct NcclComms {
    comms: Vec<sys::ncclComm_t>,
    /// Set once a call failed or a wait timed out: the communicators were
    /// aborted and every later call is refused.
    broken: AtomicBool,
}

// SAFETY: an NCCL communicator may be used from any thread, one call at a
// time; the group hands out no handle and calls it from the thread holding
// the group.
unsafe impl Send for NcclComms {}

/// One point-to-point operation of a grouped exchange.
#[derive(Debug, Clone, Copy)]
pub(super) struct PeerOp {
    /// The rank whose stream runs it.
    pub rank: usize,
    /// The other side.
    pub peer: usize,
    /// Device address on `rank`'s GPU.
    pub ptr: u64,
    /// Elements.
    pub count: usize,
    /// Send (`true`) or receive.
    pub send: bool,
}

fn nccl_err(context: impl Into<String>) -> impl FnOnce(result::NcclError) -> Error {
    let context = context.into();
    move |e| Error::Cuda {
        context,
        message: format!("NCCL error {:?}", e.0),
    }
}

/// NCCL's name for a scalar type (`bool` travels as a byte).
pub(super) fn nccl_type(ty: ScalarType) -> sys::ncclDataType_t {
    use sys::ncclDataType_t as D;
    match ty {
        ScalarType::F32 => D::ncclFloat32,
        ScalarType::F64 => D::ncclFloat64,
        ScalarType::I32 => D::ncclInt32,
        ScalarType::U32 => D::ncclUint32,
        ScalarType::I64 => D::ncclInt64,
        ScalarType::U64 => D::ncclUint64,
        ScalarType::U8 | ScalarType::Bool => D::ncclUint8,
    }
}

fn stream_of(d: &CudaDevice) -> sys::cudaStream_t {
    d.stream().cu_stream() as sys::cudaStream_t
}

impl NcclComms {
    /// One communicator per device, rank = position.
    pub(super) fn init(devices: &[CudaDevice]) -> Result<Self> {
        crate::probe::require(crate::probe::Library::Nccl)?;
        let ordinals: Vec<i32> = devices.iter().map(|d| d.ordinal() as i32).collect();
        let mut comms = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: `comms` has room for one communicator per ordinal.
        unsafe {
            result::comm_init_all(comms.as_mut_ptr(), ordinals.len() as i32, ordinals.as_ptr())
        }
        .map_err(nccl_err(format!(
            "creating NCCL communicators on GPUs {ordinals:?}"
        )))?;
        Ok(NcclComms {
            comms,
            broken: AtomicBool::new(false),
        })
    }

    fn usable(&self) -> Result<()> {
        if self.broken.load(Ordering::Acquire) {
            return Err(Error::invalid(
                "the group's NCCL communicators were aborted after an earlier error; open the group again",
            ));
        }
        Ok(())
    }

    /// Runs `calls` inside one NCCL group; the group is closed even when a
    /// call fails, and a failure aborts the communicators.
    fn grouped(&self, what: &str, calls: impl FnOnce() -> Result<()>) -> Result<()> {
        self.usable()?;
        result::group_start().map_err(nccl_err(format!("starting the NCCL group of {what}")))?;
        let called = calls();
        let ended =
            result::group_end().map_err(nccl_err(format!("ending the NCCL group of {what}")));
        let r = called.and(ended.map(|_| ()));
        if r.is_err() {
            self.abort();
        }
        r
    }

    /// Enqueues every operation of `ops`, in one group, each on its rank's
    /// `streams` entry (`None`: the device's stream).
    pub(super) fn exchange(
        &self,
        devices: &[CudaDevice],
        streams: Option<&[sys::cudaStream_t]>,
        ty: ScalarType,
        ops: &[PeerOp],
    ) -> Result<()> {
        let dtype = nccl_type(ty);
        self.grouped("a halo exchange", || {
            for op in ops.iter().filter(|op| op.count > 0) {
                let stream = match streams {
                    Some(s) => s[op.rank],
                    None => stream_of(&devices[op.rank]),
                };
                let comm = self.comms[op.rank];
                let peer = op.peer as i32;
                // SAFETY: the caller checked that `ptr` addresses `count`
                // elements of `ty` on rank's GPU, alive until the stream
                // passes this operation (the group waits before freeing).
                unsafe {
                    if op.send {
                        result::send(op.ptr as *const _, op.count, dtype, peer, comm, stream)
                            .map(|_| ())
                    } else {
                        result::recv(op.ptr as *mut _, op.count, dtype, peer, comm, stream)
                            .map(|_| ())
                    }
                }
                .map_err(nccl_err(format!(
                    "{} {} elements between GPUs {} and {}",
                    if op.send { "sending" } else { "receiving" },
                    op.count,
                    devices[op.rank].ordinal(),
                    devices[op.peer].ordinal()
                )))?;
            }
            Ok(())
        })
    }

    /// Sums `count` elements in place across the ranks (`ptrs[p]` on rank p).
    pub(super) fn all_reduce_sum(
        &self,
        devices: &[CudaDevice],
        ty: ScalarType,
        ptrs: &[u64],
        count: usize,
    ) -> Result<()> {
        let dtype = nccl_type(ty);
        self.grouped("an all-reduce", || {
            for (rank, &ptr) in ptrs.iter().enumerate() {
                // SAFETY: as in `exchange`; in place is allowed by NCCL.
                unsafe {
                    result::all_reduce(
                        ptr as *const _,
                        ptr as *mut _,
                        count,
                        dtype,
                        sys::ncclRedOp_t::ncclSum,
                        self.comms[rank],
                        stream_of(&devices[rank]),
                    )
                }
                .map_err(nccl_err(format!(
                    "an all-reduce of {count} elements on GPU {}",
                    devices[rank].ordinal()
                )))?;
            }
            Ok(())
        })
    }

    /// The first asynchronous error a communicator reports, if any.
    pub(super) fn async_error(&self) -> Option<String> {
        self.comms.iter().enumerate().find_map(|(rank, &c)| {
            let mut e = sys::ncclResult_t::ncclSuccess;
            // SAFETY: a live communicator and a valid out-pointer.
            let r = unsafe { sys::ncclCommGetAsyncError(c, &mut e) };
            match (r, e) {
                (sys::ncclResult_t::ncclSuccess, sys::ncclResult_t::ncclSuccess)
                | (sys::ncclResult_t::ncclSuccess, sys::ncclResult_t::ncclInProgress) => None,
                (sys::ncclResult_t::ncclSuccess, e) => {
                    Some(format!("rank {rank}: NCCL error {e:?}"))
                }
                (r, _) => Some(format!("rank {rank}: querying NCCL failed with {r:?}")),
            }
        })
    }

    /// Aborts every communicator (pending operations are cancelled); the
    /// group refuses later calls.
    pub(super) fn abort(&self) {
        if !self.broken.swap(true, Ordering::AcqRel) {
            for &c in &self.comms {
                // SAFETY: a live communicator, aborted once (guarded above).
                let _ = unsafe { result::comm_abort(c) };
            }
        }
    }
}

impl Drop for NcclComms {
    fn drop(&mut self) {
        if self.broken.load(Ordering::Acquire) {
            return;
        }
        for &c in &self.comms {
            // SAFETY: a live communicator, destroyed once.
            let _ = unsafe { result::comm_destroy(c) };
        }
    }
}

/// Polls `d`'s stream until it is idle, NCCL reports an error, or the time
/// runs out.
pub(super) fn wait_stream(
    d: &CudaDevice,
    stream: &CudaStream,
    comms: &NcclComms,
    start: Instant,
    timeout: Duration,
) -> Result<()> {
    use cudarc::driver::sys;
    d.context()
        .bind_to_thread()
        .map_err(crate::driver::errors::cuda_err("binding a context"))?;
    let stream = stream.cu_stream();
    loop {
        // SAFETY: a live stream of the context bound above.
        match unsafe { sys::cuStreamQuery(stream) } {
            sys::CUresult::CUDA_SUCCESS => return Ok(()),
            sys::CUresult::CUDA_ERROR_NOT_READY => {}
            r => {
                comms.abort();
                return Err(Error::Cuda {
                    context: format!("waiting for GPU {} of a group", d.ordinal()),
                    message: format!("{r:?}"),
                });
            }
        }
        if let Some(e) = comms.async_error() {
            comms.abort();
            return Err(Error::Cuda {
                context: format!("waiting for GPU {} of a group", d.ordinal()),
                message: e,
            });
        }
        if start.elapsed() > timeout {
            comms.abort();
            return Err(Error::Cuda {
                context: format!("waiting for GPU {} of a group", d.ordinal()),
                message: format!(
                    "no progress in {:.0} s: a peer stopped answering; the group's communicators were aborted",
                    timeout.as_secs_f64()
                ),
            });
        }
        // Spin for the first milliseconds (a launch's wait is usually
        // shorter than a sleep's granularity), then poll gently.
        if start.elapsed() < Duration::from_millis(5) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}
