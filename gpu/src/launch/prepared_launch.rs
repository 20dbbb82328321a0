//! A launch prepared once and run many times, on either backend
//! ([`PreparedLaunch`]), and the plain launch on CUDA
//! ([`CudaDevice::launch`]), which waits unless it can leave its fault to
//! the next check.

use crate::config::LaunchConfig;
use crate::driver::cuda_device::CudaDevice;
use crate::launch::arg::Arg;
use crate::launch::cpu_args::CpuArgs;
use crate::launch::cuda_launch::CudaLaunch;
use crate::launch::device_vec::DeviceVec;
use crate::launch::placement::check_unaliased;
use crate::spec::KernelSpec;
use std::marker::PhantomData;
use warpfit_runtime::Result;

/// A launch prepared once and run many times: on CUDA everything but the
/// enqueue is done by `prepare` (split choice, warp packing, task-list
/// upload, scratch, argument packing); on the CPU `run` runs the twin
/// synchronously on the arrays' host storage.
///
/// The handle borrows its device-resident arrays for `'a`. Outputs are
/// shared borrows too: the handle only writes device memory (or, on the
/// CPU, goes through the twin's `SharedOut`), never through a Rust
/// reference the caller could hold, and `prepare` rejects an output that
/// is also passed as another argument.
///
/// Faults: on CUDA, [`run`](Self::run) only enqueues; the first fault of
/// the runs since the last check is reported by [`check`](Self::check),
/// which waits for the device. On the CPU, `run` returns it.
pub struct PreparedLaunch<'a> {
    backend: Backend<'a>,
}

/// The CPU twin of a prepared launch: builds the kernel from the checked
/// arguments and runs it.
pub type CpuRun<'a> = Box<dyn Fn(&CpuArgs<'a>) -> Result<()> + 'a>;

enum Backend<'a> {
    Cuda {
        /// Boxed: its `Params` block is 4 KiB.
        prepared: Box<CudaLaunch>,
        _borrows: PhantomData<&'a DeviceVec<u8>>,
    },
    Cpu {
        args: CpuArgs<'a>,
        run: CpuRun<'a>,
    },
}

impl<'a> PreparedLaunch<'a> {
    /// Prepares a launch of `spec` on `dev` (generated `prepare`).
    #[doc(hidden)]
    pub fn cuda(
        dev: &CudaDevice,
        spec: &'static KernelSpec,
        config: &LaunchConfig,
        tasks: warpfit_runtime::Tasks<'a>,
        args: Vec<Arg<'a>>,
    ) -> Result<Self> {
        check_unaliased(spec, &args)?;
        let prepared = CudaLaunch::new_borrowing(dev, spec, config, tasks, &args)?;
        Ok(PreparedLaunch {
            backend: Backend::Cuda {
                prepared: Box::new(prepared),
                _borrows: PhantomData,
            },
        })
    }

    /// A launch on the CPU backend: `args` checked once, `run` builds the
    /// twin from them at each [`run`](Self::run) (generated `prepare`).
    #[doc(hidden)]
    pub fn cpu(spec: &'static KernelSpec, args: Vec<Arg<'a>>, run: CpuRun<'a>) -> Result<Self> {
        Ok(PreparedLaunch {
            backend: Backend::Cpu {
                args: CpuArgs::new(spec, args)?,
                run,
            },
        })
    }

    /// Runs the launch again. On CUDA only enqueues its kernels
    /// (asynchronous; faults at the next [`check`](Self::check)); on the
    /// CPU runs the twin and returns its fault.
    pub fn run(&self) -> Result<()> {
        match &self.backend {
            Backend::Cuda { prepared, .. } => prepared.run(),
            Backend::Cpu { args, run } => run(args),
        }
    }

    /// Waits for the runs enqueued so far and reports the first fault among
    /// them (then clears it, so the next check reports only later runs).
    /// Always `Ok` on the CPU, whose runs report their faults themselves.
    pub fn check(&self) -> Result<()> {
        match &self.backend {
            Backend::Cuda { prepared, .. } => prepared.check_and_clear_fault(),
            Backend::Cpu { .. } => Ok(()),
        }
    }

    /// The CUDA launch inside, its borrows ended by the caller's promise:
    /// the round backend keeps what the launch reads alive (its own lists,
    /// and the arrays its kernels' closures borrow for the backend's
    /// lifetime) for as long as it holds the launch. A CPU launch is
    /// returned as it is.
    pub(crate) fn into_cuda(self) -> std::result::Result<Box<CudaLaunch>, Self> {
        match self.backend {
            Backend::Cuda { prepared, .. } => Ok(prepared),
            backend @ Backend::Cpu { .. } => Err(PreparedLaunch { backend }),
        }
    }

    /// The CUDA kernels a run enqueues, in order, by entry-point name (the
    /// decomposition's over its task source, a 2-D launch's validation and
    /// the folds behind its gate, any merge); empty on the CPU.
    pub fn entry_points(&self) -> Vec<&'static str> {
        match &self.backend {
            Backend::Cuda { prepared, .. } => prepared.entry_points(),
            Backend::Cpu { .. } => Vec::new(),
        }
    }

    /// What [`Split::Auto`](crate::config::Split::Auto) chose for this launch on
    /// CUDA (`None` on the CPU or for a configured split).
    pub fn chosen_split(&self) -> Option<crate::config::Split> {
        match &self.backend {
            Backend::Cuda { prepared, .. } => prepared.chosen_split(),
            Backend::Cpu { .. } => None,
        }
    }
}

impl std::fmt::Debug for PreparedLaunch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (backend, kernel) = match &self.backend {
            Backend::Cuda { prepared, .. } => ("cuda", prepared.kernel_name()),
            Backend::Cpu { args, .. } => ("cpu", args.spec.name),
        };
        f.debug_struct("PreparedLaunch")
            .field("kernel", &kernel)
            .field("backend", &backend)
            .finish()
    }
}

impl CudaDevice {
    /// Compiles (or fetches from the cache) and launches `spec` over `tasks`.
    /// Host arrays are uploaded, outputs downloaded after the launch, and a
    /// fault inside the kernel comes back as the same `Error` the CPU twin
    /// returns.
    ///
    /// Device-resident arrays are used in place. A launch with at least one
    /// of them and no host output returns once its kernels are enqueued
    /// (after the size kernel's statistics, when the split depends on
    /// them); its fault is reported by the next [`CudaDevice::synchronize`],
    /// `DeviceVec` download, or launch with a host output. Any other launch
    /// waits and reports its own fault, after those of earlier ones.
    pub fn launch(
        &self,
        spec: &KernelSpec,
        config: &LaunchConfig,
        tasks: warpfit_runtime::Tasks<'_>,
        args: &mut [Arg<'_>],
    ) -> Result<()> {
        let prepared = CudaLaunch::new_borrowing(self, spec, config, tasks, args)?;
        prepared.run()?;
        let resident = args.iter().any(|a| matches!(a, Arg::Resident(_)));
        if resident && !args.iter().any(Arg::copies_back) {
            return self.defer_fault_check(prepared.into_pending());
        }
        self.check_pending_faults()?;
        prepared.finish(args)
    }
}
