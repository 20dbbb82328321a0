//! The throttled handle behind a `#[throttled]` kernel's generated
//! `throttle` (`Throttled`): the kernel's launches over a cache-fit plan
//! (Chen et al., ATC'18, Sections 3 and 4), with the arrays that shape the
//! work kept on the device, laid out for the plan.
//!
//! The kernel's parameters have three roles, which the macro derives from
//! the kernel's IR ([`ThrottleRoles`]): the **range array** (`row_ptr` in
//! `row_ptr[t] as usize .. row_ptr[t + 1] as usize`), the **fine arrays**
//! (read only at the fine-task index: `col`, `val`) and everything else,
//! passed at each launch (the gathered array, outputs, other inputs,
//! scalars). The handle owns device copies of the first two and lays them
//! out for each schedule on the device (`layout_cache`); a per-launch array that
//! is a `DeviceVec` of the handle's device is used in place, a host slice
//! goes through a device buffer of the handle's, copied in (and out, for an
//! output). Every schedule is prepared once (layouts, split decisions,
//! task lists, argument blocks); a launch with the same arrays only
//! enqueues it, and a launch over other arrays rebinds it (the split, task
//! lists and layouts kept, only the argument blocks made again), keeping
//! the one before for a driver that alternates two sets of arrays.
//!
//! # Schedules ([`ThrottlePolicy`])
//!
//! - `org`: one launch over the arrays as given;
//! - `org_r`: one launch over the plan remapped by Algorithm 5 (tasks and
//!   gathered elements renumbered so that each partition's data are packed,
//!   or by levels; each task's fine tasks sorted by their new gathered
//!   element, as a library kernel reads the remapped matrix, unless the
//!   cache-fit schedules run remapped too, `ThrottleOptions::remap`, which
//!   keeps them in partition order); per-launch arrays are
//!   permuted in and out on the device, by gathers (a source larger than
//!   half the cache goes through two gathers over cache-sized blocks of it
//!   when that times faster on the device: `gather_layouts::DeviceGather::fastest`);
//! - `cf`: one launch per cache-fit partition over the part-major layout,
//!   each task's fold carried between launches on the device;
//! - `cfq`: one launch of every partition's pieces as a task list whose
//!   warps take work from a device queue in partition order (split tasks
//!   merged in partition order after);
//! - `sj`: the SJ-tree profiled (each node stand-alone, CUDA events, every
//!   profiling pass a complete, correct run), recombined (Algorithm 3),
//!   one carried launch per chosen node over that cover's layout;
//! - `sjq`: the same, each chosen node a queued task list;
//! - `auto`: on CUDA by a cost model over the arrays on the device, plans
//!   made there, one timed run of each candidate (`device_plan`,
//!   `autotune::model`, the decision kept in `plan_cache`); with
//!   `ThrottleOptions::exhaustive`, every schedule above that applies, timed on the first launch
//!   after the plan (each timing run computes that launch's result), the
//!   fastest kept; `org_r` in both remapping orders when the order is not
//!   pinned and the kernel is square (`ThrottleOptions::remap_orders_to_time`),
//!   and `org` and `org_r` under wider warp budgets too where their
//!   automatic split packed warps by work (`ThrottleReport::budget_profile`),
//!   and under the configured serial-fallback bound where that split raised
//!   it (`ThrottleReport::serial_profile`).
//!
//! With `ThrottleOptions::remap`, `cf`, `cfq`, `sj` and `sjq` run in the
//! remapped numbering too. On the CPU backend every policy runs the CPU
//! twin over the original arrays.
//!
//! Reordering fine tasks changes the order in which each task's values are
//! folded: throttling requires a commutative and associative reduce
//! operator (`+`, `min`, `max`, `|`, ...). Integer, boolean and min/max
//! kernels give identical results under every policy; float sums agree
//! within rounding (the fold of a reordered row).

//!
//! One concern per file: `handle` (the type and its construction),
//! `shape_checks`, `binding` (per-launch arguments staged or bound),
//! `host_plan` and `plan_thread` (the host plan, made on a thread of
//! its own when pipelined), `device_plan` and `plan_cache` (plans made on
//! the device for `auto` by the model, and its decisions kept on disk), `slots`, `device_layouts`, `layout_set` and `layout_cache` (the shape arrays laid
//! out on the device), `schedules/` (one file per family of policies, and
//! the choice among them), `autotune/` (timing candidates inside real
//! launches: `auto`, warp budgets, SJ profiling), `launching`, `report`.

mod autotune;
mod binding;
mod columns;
mod device_layouts;
mod device_plan;
mod erased_vec;
mod handle;
mod host_plan;
mod launching;
mod layout_cache;
mod layout_set;
mod order_cache;
mod pending_write;
mod plan_cache;
mod plan_choice;
mod plan_thread;
mod report;
pub(crate) mod roles;
mod schedules;
mod shape_checks;
mod slots;

pub use device_plan::LEVEL_ROOTS;
pub use erased_vec::OwnedShape;
pub use handle::{CpuRunFn, HostArray, PlanOrder, ThrottleStatus, Throttled};
#[doc(hidden)]
pub use plan_cache::encode as plan_cache_entry;
pub use plan_choice::DevicePlan;
pub use report::{ModelReport, ThrottleReport};
pub use roles::ThrottleRoles;
