//! Compiles started ahead of need, each on a thread of its own that looks
//! the entry point up in the kernel cache and compiles it on a miss (writing
//! the cache as it finishes): the entry points a device's first launches
//! will need, started beside the context's creation, NVRTC's one-time
//! set-up when the cache is empty, and the entry points a launch will likely
//! ask for next ([`Module`](crate::compile::device_modules::Module)).

use crate::arch::Arch;
use crate::compile::disk_cache::{compile_cached, fnv1a};
use crate::compile::nvrtc::{warm_up, Compiled};
use crate::compile::units::{entry_point_unit, translation_unit};
use crate::driver::cuda_device::{CudaDevice, DeviceExtension};
use crate::driver::errors::poisoned;
use crate::spec::KernelSpec;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::thread::JoinHandle;
use warpfit_runtime::Result;

/// A compile running on a thread of its own.
pub(crate) type PendingCompile = JoinHandle<Result<Compiled>>;

/// A module's key: the kernel's name and its translation unit's hash.
pub(crate) type ModuleKey = (String, u64);

/// The key of `spec`'s module.
pub(crate) fn module_key(spec: &KernelSpec) -> ModuleKey {
    let source = translation_unit(spec);
    (spec.name.to_string(), fnv1a(&[source.as_bytes()]))
}

/// Compiles beside the caller's thread, at most: more threads than cores
/// only slow the one a launch waits for (`BENCHMARKS.md`, "NVRTC compile
/// time").
pub(crate) fn spare_cores() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
}

/// Starts compiling entry point `ep` of `spec` for `arch` on a thread of
/// its own, through the cache in `dir`; `None` when no thread can be
/// started (best effort: the entry point is then compiled when asked for).
pub(crate) fn spawn_entry_compile(
    spec: KernelSpec,
    ep: &'static str,
    arch: Arch,
    dir: Option<&Path>,
) -> Option<PendingCompile> {
    let dir = dir.map(Path::to_path_buf);
    std::thread::Builder::new()
        .name(format!("warpfit-nvrtc-{ep}"))
        .spawn(move || {
            let source = entry_point_unit(&spec, &[ep])?;
            let label = format!("{}.{ep}", spec.name);
            compile_cached(&label, &source, arch, dir.as_deref())
        })
        .ok()
}

/// Compiles started for a module before it existed, by module key.
pub(crate) type AheadByModule = HashMap<ModuleKey, Vec<(&'static str, PendingCompile)>>;

/// Starts the compiles of `launches` (each a kernel and the entry points it
/// will most likely need, most likely first), at most one thread per core
/// beside the caller's (and at least one).
pub(crate) fn compile_ahead(
    arch: Arch,
    cache_dir: Option<&Path>,
    launches: &[(KernelSpec, Vec<&'static str>)],
) -> AheadByModule {
    let mut ahead = AheadByModule::new();
    let mut room = spare_cores().max(1);
    for (spec, entries) in launches {
        let key = module_key(spec);
        for &ep in entries {
            let list = ahead.entry(key.clone()).or_default();
            if room == 0 || list.iter().any(|(started, _)| *started == ep) {
                continue;
            }
            if let Some(handle) = spawn_entry_compile(*spec, ep, arch, cache_dir) {
                list.push((ep, handle));
                room -= 1;
            }
        }
    }
    ahead.retain(|_, v| !v.is_empty());
    ahead
}

/// NVRTC's one-time set-up ([`warm_up`]) on a thread of its own.
pub(crate) fn start_nvrtc_warm_up() -> Option<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("warpfit-nvrtc-warm-up".into())
        .spawn(warm_up)
        .ok()
}

/// What a device started compiling when it was opened: NVRTC's set-up and
/// the entry points of the launches announced to it, held until the
/// kernel's module is created and takes them.
#[derive(Default)]
pub(crate) struct AheadCompiles {
    nvrtc_warm_up: Mutex<Option<JoinHandle<()>>>,
    ahead: Mutex<AheadByModule>,
}

impl AheadCompiles {
    pub(crate) fn new(ahead: AheadByModule, nvrtc_warm_up: Option<JoinHandle<()>>) -> Self {
        AheadCompiles {
            nvrtc_warm_up: Mutex::new(nvrtc_warm_up),
            ahead: Mutex::new(ahead),
        }
    }

    /// The compiles started for the module `key`, handed over once.
    pub(crate) fn take(
        &self,
        key: &ModuleKey,
    ) -> Result<Option<Vec<(&'static str, PendingCompile)>>> {
        Ok(self.ahead.lock().map_err(poisoned)?.remove(key))
    }
}

impl DeviceExtension for AheadCompiles {
    /// A device opened without announced launches started nothing.
    fn load(_: &CudaDevice) -> Result<Self> {
        Ok(AheadCompiles::default())
    }
}

impl Drop for AheadCompiles {
    /// Waits for the NVRTC warm-up and the compiles no module took: a
    /// thread still inside NVRTC while the process exits would race the
    /// library's teardown.
    fn drop(&mut self) {
        let handle = match self.nvrtc_warm_up.get_mut() {
            Ok(h) => h.take(),
            Err(poison) => poison.into_inner().take(),
        };
        if let Some(h) = handle {
            let _ = h.join();
        }
        let ahead = match self.ahead.get_mut() {
            Ok(a) => std::mem::take(a),
            Err(poison) => std::mem::take(poison.into_inner()),
        };
        for (_, h) in ahead.into_values().flatten() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static K: KernelSpec = KernelSpec {
        name: "k",
        cuda_source: "namespace wf_k {}",
        device_fns: &[],
        params: &[],
        acc: crate::spec::AccType::Scalar(crate::spec::ScalarType::F32),
        elementwise: false,
        donates: false,
        index_encoding: crate::spec::IndexEncoding::Plain,
        columns: None,
        checks_at_end_columns: false,
    };

    #[test]
    fn a_module_key_names_the_kernel_and_hashes_its_unit() {
        let (name, hash) = module_key(&K);
        assert_eq!(name, "k");
        assert_eq!(hash, fnv1a(&[translation_unit(&K).as_bytes()]));
    }

    #[test]
    fn nothing_announced_starts_nothing() {
        assert!(compile_ahead(Arch::new(9, 0), None, &[]).is_empty());
        assert!(compile_ahead(Arch::new(9, 0), None, &[(K, vec![])]).is_empty());
    }
}
