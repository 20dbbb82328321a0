use warpfit_runtime::{Error, Result};

/// How a kernel's fine tasks are spread over GPU threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Decomposition {
    /// Collaborative task engagement: a warp expands its 32 tasks' fine tasks together.
    #[default]
    Cte,
    /// One task per thread (1D).
    Thread,
    /// `W` threads per task, `W` in {2, 4, 8, 16, 32}.
    SubWarp(u32),
}

impl std::str::FromStr for Decomposition {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cte" => Ok(Decomposition::Cte),
            "thread" => Ok(Decomposition::Thread),
            _ => {
                let w = s
                    .strip_prefix("subwarp:")
                    .and_then(|w| w.parse::<u32>().ok())
                    .filter(|w| matches!(w, 2 | 4 | 8 | 16 | 32));
                w.map(Decomposition::SubWarp).ok_or_else(|| {
                    Error::invalid(format!(
                        "unknown decomposition `{s}`: expected cte, thread or subwarp:W with W in 2, 4, 8, 16, 32"
                    ))
                })
            }
        }
    }
}

/// Options of one launch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchConfig {
    pub decomposition: Decomposition,
}

/// A CUDA GPU with its context, stream and compiled-module cache.
#[derive(Debug, Clone)]
pub struct CudaDevice {
    _private: (),
}

impl CudaDevice {
    /// Compiles (or fetches from the cache) and launches `spec` over `tasks`.
    /// Host arrays are uploaded, outputs downloaded after the launch.
    pub fn launch(
        &self,
        spec: &crate::KernelSpec,
        config: &LaunchConfig,
        tasks: warpfit_runtime::Tasks<'_>,
        args: &mut [crate::Arg<'_>],
    ) -> Result<()> {
        let _ = (config, tasks, args);
        Err(Error::Unavailable {
            what: format!("CUDA launch of `{}`", spec.name),
            reason: "the CUDA backend is not built yet".into(),
        })
    }
}

/// Where kernels run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Device {
    /// The host CPU, all cores, through rayon.
    Cpu,
}

impl Device {
    /// The CPU backend.
    pub fn cpu() -> Self {
        Device::Cpu
    }

    /// The best backend on this machine.
    pub fn best() -> Self {
        Device::Cpu
    }

    /// The CUDA device, when this is one.
    pub fn cuda(&self) -> Option<&CudaDevice> {
        match self {
            Device::Cpu => None,
        }
    }

    /// Short name of the backend (`cpu` or `cuda`).
    pub fn backend_name(&self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
        }
    }
}
