// warpfit device library: entry points.
//
// Included first in every kernel's translation unit. The generated functor
// (docs/codegen.md) follows, then the device layer appends
// `WARPFIT_ENTRY_POINTS(wf_<name>::Kernel)` (or, per launch, only the
// `WARPFIT_ENTRY_POINT_<entry>` lines it needs), which instantiates
// `nested_reduce<K, Decomposition, TaskSource>` for every decomposition and
// task source as `extern "C"` kernels with fixed names, plus the merge and
// task-size kernels. Every kernel takes the functor's `Params` by value,
// then the launch's `LaunchArgs`, and runs in blocks of `BLOCK` threads.
#pragma once
#include "warpfit/types.cuh"
#include "warpfit/fault.cuh"
#include "warpfit/rust_ops.cuh"
#include "warpfit/index.cuh"
#include "warpfit/warp.cuh"
#include "warpfit/tuple.cuh"
#include "warpfit/pdl.cuh"
#include "warpfit/task_source.cuh"
#include "warpfit/thread.cuh"
#include "warpfit/subwarp.cuh"
#include "warpfit/cte.cuh"
#include "warpfit/merge.cuh"
#include "warpfit/atomic.cuh"
#include "warpfit/worklist.cuh"
#include "warpfit/cte_for_each.cuh"

namespace warpfit {

/// Blocks per SM each decomposition's kernels are compiled for. CTE is
/// latency-bound (each round waits on a gather), so a kernel with a 4-byte
/// accumulator and no prologue state (`ctx_t` empty, as SpMV) is held to 6
/// blocks' worth of registers (40 per thread: 75% occupancy instead of 50%),
/// which hides more gather latency than the word or so it may spill costs.
/// Kernels with more live state would spill more under that cap (the
/// min-plus fixture does on sm_90), so they keep the compiler's choice; the
/// other decompositions use fewer registers than the cap anyway. sm_80's
/// code generation spills the packed task-list path under 40 registers, so
/// it gets 5 blocks (48). Measurements: BENCHMARKS.md, "Tuning constants:
/// history".
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr int CTE_LIGHT_BLOCKS = 5;
#else
constexpr int CTE_LIGHT_BLOCKS = 6;
#endif
template <class K, class D> struct min_blocks {
    static constexpr int value = 1;
};
template <class K> struct min_blocks<K, Cte> {
    static constexpr int value =
        (sizeof(typename K::acc_t) <= 4 && sizeof(typename K::ctx_t) <= 1) ? CTE_LIGHT_BLOCKS : 1;
};

/// Blocks per SM the column list's entry point is compiled for: a light
/// kernel (an accumulator and prologue state of a word each, as SpMM's
/// column) is held to 6 blocks' worth of registers (40), like CTE's.
template <class K> struct column_min_blocks {
    static constexpr int value =
        (sizeof(typename K::acc_t) <= 8 && sizeof(typename K::ctx_t) <= 8) ? CTE_LIGHT_BLOCKS : 1;
};

/// Runs kernel `K` over the items of `Src` with decomposition `D` (a
/// `for_each` kernel's CTE: `CteForEach`), between the functor's block
/// hooks (a push kernel's worklist staging, worklist.cuh).
template <class K, class D, class Src>
__device__ __forceinline__ void nested_reduce(const typename K::params_t& p, const LaunchArgs& a) {
    if (Src::is_list) {
        // The merge launch that may follow waits for this grid's completion
        // itself (`wait_for_primary`), so it may be scheduled as soon as
        // every block has started: its launch latency hides under this
        // grid's tail instead of following it.
        allow_dependents();
    }
    if (!gate_open(a)) {
        return;
    }
    block_hooks<K>::begin(p);
    decomposition_for<K, D>::type::template run<K, Src>(p, a);
    block_hooks<K>::end(p);
}

}  // namespace warpfit

#define WARPFIT_ENTRY_(K, NAME, D, SRC)                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK, warpfit::min_blocks<K, D>::value)   \
        NAME(const K::params_t p, const warpfit::LaunchArgs a) {                                     \
        warpfit::nested_reduce<K, D, SRC>(p, a);                                                     \
    }

// One macro per entry point, `WARPFIT_ENTRY_POINT_<name>(K)`, so that a
// translation unit can instantiate only the entry points a launch needs
// (`entry_point_unit` in gpu/src/compile.rs): each one costs NVRTC 45 to
// 200 ms, the whole set about a second.
#define WARPFIT_ENTRY_POINT_wf_thread_all(K) WARPFIT_ENTRY_(K, wf_thread_all, warpfit::Thread, warpfit::AllTasks)
#define WARPFIT_ENTRY_POINT_wf_sub2_all(K) WARPFIT_ENTRY_(K, wf_sub2_all, warpfit::SubWarp<2>, warpfit::AllTasks)
#define WARPFIT_ENTRY_POINT_wf_sub4_all(K) WARPFIT_ENTRY_(K, wf_sub4_all, warpfit::SubWarp<4>, warpfit::AllTasks)
#define WARPFIT_ENTRY_POINT_wf_sub8_all(K) WARPFIT_ENTRY_(K, wf_sub8_all, warpfit::SubWarp<8>, warpfit::AllTasks)
#define WARPFIT_ENTRY_POINT_wf_sub16_all(K) WARPFIT_ENTRY_(K, wf_sub16_all, warpfit::SubWarp<16>, warpfit::AllTasks)
#define WARPFIT_ENTRY_POINT_wf_sub32_all(K) WARPFIT_ENTRY_(K, wf_sub32_all, warpfit::SubWarp<32>, warpfit::AllTasks)
#define WARPFIT_ENTRY_POINT_wf_cte_all(K) WARPFIT_ENTRY_(K, wf_cte_all, warpfit::Cte, warpfit::AllTasks)
#define WARPFIT_ENTRY_POINT_wf_thread_list(K) WARPFIT_ENTRY_(K, wf_thread_list, warpfit::Thread, warpfit::TaskList)
#define WARPFIT_ENTRY_POINT_wf_sub2_list(K) WARPFIT_ENTRY_(K, wf_sub2_list, warpfit::SubWarp<2>, warpfit::TaskList)
#define WARPFIT_ENTRY_POINT_wf_sub4_list(K) WARPFIT_ENTRY_(K, wf_sub4_list, warpfit::SubWarp<4>, warpfit::TaskList)
#define WARPFIT_ENTRY_POINT_wf_sub8_list(K) WARPFIT_ENTRY_(K, wf_sub8_list, warpfit::SubWarp<8>, warpfit::TaskList)
#define WARPFIT_ENTRY_POINT_wf_sub16_list(K) WARPFIT_ENTRY_(K, wf_sub16_list, warpfit::SubWarp<16>, warpfit::TaskList)
#define WARPFIT_ENTRY_POINT_wf_sub32_list(K) WARPFIT_ENTRY_(K, wf_sub32_list, warpfit::SubWarp<32>, warpfit::TaskList)
#define WARPFIT_ENTRY_POINT_wf_cte_list(K) WARPFIT_ENTRY_(K, wf_cte_list, warpfit::Cte, warpfit::TaskList)
#define WARPFIT_ENTRY_POINT_wf_cte_queue(K) WARPFIT_ENTRY_(K, wf_cte_queue, warpfit::Cte, warpfit::QueuedTaskList)
#define WARPFIT_ENTRY_POINT_wf_thread_frontier(K) WARPFIT_ENTRY_(K, wf_thread_frontier, warpfit::Thread, warpfit::FrontierTasks)
#define WARPFIT_ENTRY_POINT_wf_sub2_frontier(K) WARPFIT_ENTRY_(K, wf_sub2_frontier, warpfit::SubWarp<2>, warpfit::FrontierTasks)
#define WARPFIT_ENTRY_POINT_wf_sub4_frontier(K) WARPFIT_ENTRY_(K, wf_sub4_frontier, warpfit::SubWarp<4>, warpfit::FrontierTasks)
#define WARPFIT_ENTRY_POINT_wf_sub8_frontier(K) WARPFIT_ENTRY_(K, wf_sub8_frontier, warpfit::SubWarp<8>, warpfit::FrontierTasks)
#define WARPFIT_ENTRY_POINT_wf_sub16_frontier(K) WARPFIT_ENTRY_(K, wf_sub16_frontier, warpfit::SubWarp<16>, warpfit::FrontierTasks)
#define WARPFIT_ENTRY_POINT_wf_sub32_frontier(K) WARPFIT_ENTRY_(K, wf_sub32_frontier, warpfit::SubWarp<32>, warpfit::FrontierTasks)
#define WARPFIT_ENTRY_POINT_wf_cte_frontier(K) WARPFIT_ENTRY_(K, wf_cte_frontier, warpfit::Cte, warpfit::FrontierTasks)
// The merge runs split tasks' epilogues, which may push: the block hooks
// wrap it too.
#define WARPFIT_ENTRY_POINT_wf_merge(K)                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                     \
        wf_merge(const K::params_t p, const warpfit::LaunchArgs a) {                                 \
        warpfit::block_hooks<K>::begin(p);                                                           \
        warpfit::merge<K, warpfit::MERGE_LANES>(p, a);                                               \
        warpfit::block_hooks<K>::end(p);                                                             \
    }
#define WARPFIT_ENTRY_POINT_wf_merge_wide(K)                                                         \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                     \
        wf_merge_wide(const K::params_t p, const warpfit::LaunchArgs a) {                            \
        warpfit::block_hooks<K>::begin(p);                                                           \
        warpfit::merge<K, warpfit::MERGE_LANES_WIDE>(p, a);                                          \
        warpfit::block_hooks<K>::end(p);                                                             \
    }
#define WARPFIT_ENTRY_POINT_wf_merge_block(K)                                                        \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                     \
        wf_merge_block(const K::params_t p, const warpfit::LaunchArgs a) {                           \
        warpfit::block_hooks<K>::begin(p);                                                           \
        warpfit::merge_block<K>(p, a);                                                               \
        warpfit::block_hooks<K>::end(p);                                                             \
    }
// A 2-D kernel's rows cut into pieces and spread over its columns
// (`ColumnList` in task_source.cuh), and the merge of its split rows'
// columns.
#define WARPFIT_ENTRY_POINT_wf_thread_columns(K)                                                     \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK, warpfit::column_min_blocks<K>::value)  \
        wf_thread_columns(const K::params_t p, const warpfit::LaunchArgs a) {                        \
        warpfit::nested_reduce<K, warpfit::Thread, warpfit::ColumnList>(p, a);                       \
    }
// A 2-D launch checked by a validation launch first: the validation over
// the rows or the pieces at their first and last columns, the fold with its
// loads unchecked two columns a thread, and the checked fold over a strided
// grid where the validation found a fault (`ValidateEnds`,
// `ThreadPairValidated`, `ThreadStrided` in thread.cuh).
#define WARPFIT_ENTRY_POINT_wf_validate_all(K) WARPFIT_ENTRY_(K, wf_validate_all, warpfit::ValidateEnds, warpfit::RowEnds)
#define WARPFIT_ENTRY_POINT_wf_validate_columns(K) WARPFIT_ENTRY_(K, wf_validate_columns, warpfit::ValidateEnds, warpfit::PieceEnds)
#define WARPFIT_ENTRY_POINT_wf_pair_all(K) WARPFIT_ENTRY_(K, wf_pair_all, warpfit::ThreadPairValidated, warpfit::AllTasks)
#define WARPFIT_ENTRY_POINT_wf_pair_columns(K) WARPFIT_ENTRY_(K, wf_pair_columns, warpfit::ThreadPairValidated, warpfit::ColumnList)
#define WARPFIT_ENTRY_POINT_wf_recheck_all(K) WARPFIT_ENTRY_(K, wf_recheck_all, warpfit::ThreadStrided, warpfit::AllTasks)
#define WARPFIT_ENTRY_POINT_wf_recheck_columns(K) WARPFIT_ENTRY_(K, wf_recheck_columns, warpfit::ThreadStrided, warpfit::ColumnList)
#define WARPFIT_ENTRY_POINT_wf_merge_columns(K)                                                      \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                     \
        wf_merge_columns(const K::params_t p, const warpfit::LaunchArgs a) {                         \
        warpfit::block_hooks<K>::begin(p);                                                           \
        warpfit::merge_columns<K>(p, a);                                                             \
        warpfit::block_hooks<K>::end(p);                                                             \
    }
// Work donation: the long items' chunks a donating frontier launch posted,
// spread over this grid (cte_for_each.cuh).
#define WARPFIT_ENTRY_POINT_wf_donated(K)                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                     \
        wf_donated(const K::params_t p, const warpfit::LaunchArgs a) {                               \
        warpfit::block_hooks<K>::begin(p);                                                           \
        warpfit::run_donated<K>(p, a);                                                               \
        warpfit::block_hooks<K>::end(p);                                                             \
    }
#define WARPFIT_ENTRY_POINT_wf_sizes(K)                                                              \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                     \
        wf_sizes(const K::params_t p, const warpfit::LaunchArgs a) {                                 \
        warpfit::task_sizes<K>(p, a);                                                                \
    }

/// Every entry point of kernel functor `K`: `wf_{thread,sub2..sub32,cte}_{all,list,frontier}`,
/// `wf_cte_queue`, `wf_merge`, `wf_merge_wide`, `wf_merge_block`, `wf_thread_columns`, `wf_merge_columns`,
/// `wf_validate_{all,columns}`, `wf_pair_{all,columns}`, `wf_recheck_{all,columns}`, `wf_sizes`
/// and `wf_donated`.
#define WARPFIT_ENTRY_POINTS(K)                                                                      \
    WARPFIT_ENTRY_POINT_wf_thread_all(K)                                                             \
    WARPFIT_ENTRY_POINT_wf_sub2_all(K)                                                               \
    WARPFIT_ENTRY_POINT_wf_sub4_all(K)                                                               \
    WARPFIT_ENTRY_POINT_wf_sub8_all(K)                                                               \
    WARPFIT_ENTRY_POINT_wf_sub16_all(K)                                                              \
    WARPFIT_ENTRY_POINT_wf_sub32_all(K)                                                              \
    WARPFIT_ENTRY_POINT_wf_cte_all(K)                                                                \
    WARPFIT_ENTRY_POINT_wf_thread_list(K)                                                            \
    WARPFIT_ENTRY_POINT_wf_sub2_list(K)                                                              \
    WARPFIT_ENTRY_POINT_wf_sub4_list(K)                                                              \
    WARPFIT_ENTRY_POINT_wf_sub8_list(K)                                                              \
    WARPFIT_ENTRY_POINT_wf_sub16_list(K)                                                             \
    WARPFIT_ENTRY_POINT_wf_sub32_list(K)                                                             \
    WARPFIT_ENTRY_POINT_wf_cte_list(K)                                                               \
    WARPFIT_ENTRY_POINT_wf_cte_queue(K)                                                              \
    WARPFIT_ENTRY_POINT_wf_thread_frontier(K)                                                        \
    WARPFIT_ENTRY_POINT_wf_sub2_frontier(K)                                                          \
    WARPFIT_ENTRY_POINT_wf_sub4_frontier(K)                                                          \
    WARPFIT_ENTRY_POINT_wf_sub8_frontier(K)                                                          \
    WARPFIT_ENTRY_POINT_wf_sub16_frontier(K)                                                         \
    WARPFIT_ENTRY_POINT_wf_sub32_frontier(K)                                                         \
    WARPFIT_ENTRY_POINT_wf_cte_frontier(K)                                                           \
    WARPFIT_ENTRY_POINT_wf_merge(K)                                                                  \
    WARPFIT_ENTRY_POINT_wf_merge_wide(K)                                                             \
    WARPFIT_ENTRY_POINT_wf_merge_block(K)                                                            \
    WARPFIT_ENTRY_POINT_wf_thread_columns(K)                                                         \
    WARPFIT_ENTRY_POINT_wf_merge_columns(K)                                                          \
    WARPFIT_ENTRY_POINT_wf_validate_all(K)                                                           \
    WARPFIT_ENTRY_POINT_wf_validate_columns(K)                                                       \
    WARPFIT_ENTRY_POINT_wf_pair_all(K)                                                               \
    WARPFIT_ENTRY_POINT_wf_pair_columns(K)                                                           \
    WARPFIT_ENTRY_POINT_wf_recheck_all(K)                                                            \
    WARPFIT_ENTRY_POINT_wf_recheck_columns(K)                                                        \
    WARPFIT_ENTRY_POINT_wf_sizes(K)                                                                 \
    WARPFIT_ENTRY_POINT_wf_donated(K)
