//! A kernel's compiled entry points on a device, each compiled (or read
//! from the on-disk cache) as a module of its own the first time a launch
//! asks for it, with the compiles of what will likely follow started
//! beside it; and the device library's own units, loaded whole.

use crate::abi;
use crate::compile::compile_ahead::{
    module_key, spare_cores, spawn_entry_compile, AheadCompiles, ModuleKey, PendingCompile,
};
use crate::compile::disk_cache::{compile_and_cache, compile_cached, lookup_cached};
use crate::compile::units::entry_point_unit;
use crate::driver::cuda_device::{CudaDevice, DeviceExtension, WeakCudaDevice};
use crate::driver::errors::{cuda_err, poisoned};
use crate::spec::KernelSpec;
use cudarc::driver::{CudaFunction, CudaModule};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use warpfit_runtime::{Error, Result};

/// A kernel's entry points, each compiled (or read from the on-disk cache)
/// as a module of its own the first time a launch asks for it: NVRTC's time
/// grows with the entry points compiled (`docs/bench/constants-gpu.md`,
/// "Module"), and a launch uses two or three of the device library's
/// [`abi::ENTRY_POINTS`].
pub(crate) struct Module {
    device: WeakCudaDevice,
    spec: KernelSpec,
    /// One slot per [`abi::ENTRY_POINTS`] name, in that order.
    entries: Vec<OnceLock<Entry>>,
    /// Held while an entry point is compiled and loaded, so that each is
    /// compiled once.
    loading: Mutex<()>,
    /// Compiles started ahead of need ([`likely_next`]), by entry point.
    prefetched: Mutex<HashMap<&'static str, PendingCompile>>,
}

/// One loaded entry point.
struct Entry {
    _module: Arc<CudaModule>,
    function: CudaFunction,
    /// NVRTC's log when this process compiled it (ptxas report).
    log: String,
    cached: bool,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let loaded: Vec<&str> = abi::ENTRY_POINTS
            .iter()
            .zip(&self.entries)
            .filter(|(_, e)| e.get().is_some())
            .map(|(n, _)| *n)
            .collect();
        f.debug_struct("Module")
            .field("kernel", &self.spec.name)
            .field("loaded", &loaded)
            .finish()
    }
}

impl Drop for Module {
    /// Waits for the compiles started ahead of need: a thread still inside
    /// NVRTC while the process exits would race the library's teardown.
    /// (They started with the launch's first compile, so by the time its
    /// result is back they have usually finished.)
    fn drop(&mut self) {
        let pending = match self.prefetched.get_mut() {
            Ok(p) => std::mem::take(p),
            Err(poison) => std::mem::take(poison.into_inner()),
        };
        for (_, handle) in pending {
            let _ = handle.join();
        }
    }
}

/// The entry points a launch that has just asked for `ep` will most likely
/// ask for next, most likely first, compiled on other threads meanwhile: a
/// task-list kernel is followed by the merge when tasks were split (the
/// wide merge when a task has more than 64 pieces, as hubs of power-law
/// graphs do). The block merge (past 512 pieces: a reduction over the whole
/// device) is rare enough to be compiled when first asked for. What follows the size kernel depends on the launch's size
/// (`likely_entries::likely_after_sizes`, passed to [`Module::function_then`]).
/// A 2-D launch's validation is followed by both folds behind its gate (and
/// a column list's merge).
fn likely_next(ep: &str) -> &'static [&'static str] {
    match ep {
        abi::VALIDATE_ALL_ENTRY => &[abi::PAIR_ALL_ENTRY, abi::RECHECK_ALL_ENTRY],
        abi::VALIDATE_COLUMNS_ENTRY => &[
            abi::PAIR_COLUMNS_ENTRY,
            abi::RECHECK_COLUMNS_ENTRY,
            abi::MERGE_COLUMNS_ENTRY,
        ],
        _ if ep.ends_with("_list") || ep.ends_with("_queue") => &["wf_merge", "wf_merge_wide"],
        _ => &[],
    }
}

impl Module {
    fn new(device: &CudaDevice, spec: &KernelSpec) -> Self {
        Module {
            device: device.downgrade(),
            spec: *spec,
            entries: abi::ENTRY_POINTS.iter().map(|_| OnceLock::new()).collect(),
            loading: Mutex::new(()),
            prefetched: Mutex::new(HashMap::new()),
        }
    }

    fn entry(&self, name: &str, next: &'static [&'static str]) -> Result<&Entry> {
        let i = abi::ENTRY_POINTS
            .iter()
            .position(|e| *e == name)
            .ok_or_else(|| Error::Cuda {
                context: format!("entry point `{name}`"),
                message: "not an entry point of the device library".into(),
            })?;
        if let Some(e) = self.entries[i].get() {
            return Ok(e);
        }
        let _loading = self.loading.lock().map_err(poisoned)?;
        if self.entries[i].get().is_none() {
            let device = self.device.upgrade().ok_or_else(|| Error::Cuda {
                context: format!("kernel `{}`", self.spec.name),
                message: "its device was dropped".into(),
            })?;
            let entry = load_entry(&device, self, abi::ENTRY_POINTS[i], next)?;
            // Cannot fail: the slot is only set under `loading`.
            let _ = self.entries[i].set(entry);
        }
        self.entries[i].get().ok_or_else(|| Error::Cuda {
            context: format!("entry point `{name}` of kernel `{}`", self.spec.name),
            message: "was not loaded".into(),
        })
    }

    pub(crate) fn function(&self, name: &str) -> Result<&CudaFunction> {
        self.function_then(name, likely_next(name))
    }

    /// [`Module::function`], starting the compiles of `next` beside it when
    /// `name` has to be compiled (not when it comes from the cache).
    pub(crate) fn function_then(
        &self,
        name: &str,
        next: &'static [&'static str],
    ) -> Result<&CudaFunction> {
        self.entry(name, next).map(|e| &e.function)
    }

    /// Starts compiling the entry points of `next` that are
    /// neither loaded nor under way, each on a thread of its own (which
    /// writes the cache as it finishes), as many as there are cores beside
    /// the one compiling what was asked for: more threads than cores only slow the one a
    /// launch waits for (`BENCHMARKS.md`, "NVRTC compile time").
    /// Best effort: a thread that cannot be started leaves its entry point
    /// to be compiled when asked for.
    fn prefetch(
        &self,
        next: &'static [&'static str],
        arch: crate::arch::Arch,
        dir: Option<&std::path::Path>,
    ) -> Result<()> {
        let mut pending = self.prefetched.lock().map_err(poisoned)?;
        let room = spare_cores().saturating_sub(pending.len());
        for &next in next.iter().take(room) {
            let loaded = abi::ENTRY_POINTS
                .iter()
                .position(|e| *e == next)
                .is_some_and(|i| self.entries[i].get().is_some());
            if loaded || pending.contains_key(next) {
                continue;
            }
            if let Some(handle) = spawn_entry_compile(self.spec, next, arch, dir) {
                pending.insert(next, handle);
            }
        }
        Ok(())
    }
}

/// A device's modules, by kernel and source.
#[derive(Default)]
struct ModuleCache {
    modules: Mutex<HashMap<ModuleKey, Arc<Module>>>,
}

impl DeviceExtension for ModuleCache {
    fn load(_: &CudaDevice) -> Result<Self> {
        Ok(ModuleCache::default())
    }
}

impl CudaDevice {
    /// The module of `spec`, whose entry points are compiled (or read from
    /// the on-disk cache) as launches first ask for them.
    pub(crate) fn module(&self, spec: &KernelSpec) -> Result<Arc<Module>> {
        let key = module_key(spec);
        let cache = self.extension::<ModuleCache>()?;
        let mut modules = cache.modules.lock().map_err(poisoned)?;
        if let Some(m) = modules.get(&key) {
            return Ok(m.clone());
        }
        let m = Arc::new(Module::new(self, spec));
        let ahead = self.extension::<AheadCompiles>()?.take(&key)?;
        if let Some(ahead) = ahead {
            m.prefetched.lock().map_err(poisoned)?.extend(ahead);
        }
        modules.insert(key, m.clone());
        Ok(m)
    }

    /// NVRTC's ptxas report for `spec` (registers, spills, shared memory per
    /// entry point), compiling every entry point if needed, and whether all
    /// came from the on-disk cache (whose entries carry no report).
    pub fn compile_report(&self, spec: &KernelSpec) -> Result<(bool, String)> {
        let m = self.module(spec)?;
        let (mut cached, mut log) = (true, String::new());
        for ep in abi::ENTRY_POINTS {
            let e = m.entry(ep, &[])?;
            cached &= e.cached;
            log.push_str(&e.log);
        }
        Ok((cached, log))
    }
}

/// Compiles (or reads from the cache, or takes from a prefetch) entry
/// point `ep` of `m` as a module of its own, and loads it. A cached
/// binary the driver refuses to load is compiled again and its cache
/// entry replaced.
fn load_entry(
    dev: &CudaDevice,
    m: &Module,
    ep: &'static str,
    next: &'static [&'static str],
) -> Result<Entry> {
    let arch = dev.arch();
    let dir = dev.cache_dir();
    let kernel = m.spec.name;
    let source = entry_point_unit(&m.spec, &[ep])?;
    let label = format!("{kernel}.{ep}");
    let prefetched = m.prefetched.lock().map_err(poisoned)?.remove(ep);
    let compiled = match prefetched {
        Some(handle) => handle.join().map_err(|_| Error::Cuda {
            context: format!("compiling entry point `{ep}` of kernel `{kernel}`"),
            message: "the compiling thread panicked".into(),
        })??,
        None => match lookup_cached(&label, &source, arch, dir)? {
            Some(hit) => hit,
            None => {
                m.prefetch(next, arch, dir)?;
                compile_and_cache(&label, &source, arch, dir)?
            }
        },
    };
    let load = |cubin: &[u8]| {
        dev.context()
            .bind_to_thread()
            .map_err(cuda_err("binding the context"))?;
        dev.context()
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin.to_vec()))
            .map_err(cuda_err(format!(
                "loading entry point `{ep}` of kernel `{kernel}`"
            )))
    };
    let (module, compiled) = match load(&compiled.cubin) {
        Ok(module) => (module, compiled),
        Err(_) if compiled.cached => {
            let fresh = compile_and_cache(&label, &source, arch, dir)?;
            (load(&fresh.cubin)?, fresh)
        }
        Err(e) => return Err(e),
    };
    let function = module
        .load_function(ep)
        .map_err(cuda_err(format!("entry point `{ep}` of kernel `{kernel}`")))?;
    dev.set_carveout(&function, ep)?;
    Ok(Entry {
        _module: module,
        function,
        log: compiled.log,
        cached: compiled.cached,
    })
}

/// from the kernel cache) and loaded on `dev`: its module, whose functions
/// [`load_function`] takes by name.
pub(crate) fn load_unit(dev: &CudaDevice, name: &str, source: &str) -> Result<Arc<CudaModule>> {
    let compiled = compile_cached(name, source, dev.arch(), dev.cache_dir())?;
    dev.context()
        .bind_to_thread()
        .map_err(cuda_err("binding the context"))?;
    dev.context()
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
        .map_err(cuda_err(format!("loading the {name} kernels")))
}

/// The function `entry` of a unit loaded by [`load_unit`].
pub(crate) fn load_function(
    module: &Arc<CudaModule>,
    name: &str,
    entry: &str,
) -> Result<CudaFunction> {
    module
        .load_function(entry)
        .map_err(cuda_err(format!("{name} kernel `{entry}`")))
}
