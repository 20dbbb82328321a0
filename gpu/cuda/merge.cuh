// warpfit device library: the merge of split tasks.
//
// After a task-list launch, each task that occurs in several segments has
// one partial per segment in scratch (or none, for an empty segment). A
// group of MERGE_LANES lanes per split task folds them in list order: lane
// j folds a contiguous chunk of the task's segments, an ordered shuffle
// tree joins the chunks, and the group's first lane puts `init` in front
// and runs the epilogue. No atomics; the
// same result for any associative operator, on every run. A task of
// hundreds of pieces or more is folded by a whole block (`merge_block`).
// After a column list (task_source.cuh), `merge_columns` instead.
#pragma once
#include "warpfit/task_source.cuh"
#include "warpfit/pdl.cuh"

namespace warpfit {

/// Lanes per split task in the merge (`wf_merge`): most split tasks have a
/// few segments, so a whole warp each would idle most lanes.
constexpr int MERGE_LANES = 8;
/// Lanes per split task in `wf_merge_wide`, which the host launches instead
/// when some task has many pieces: a lane's chunk is a chain of dependent
/// loads, so a hub task's hundreds of partials 8 chunks wide would be the
/// launch's tail.
constexpr int MERGE_LANES_WIDE = WARP;

/// Lanes per split task in `wf_merge_block`: a whole block, which the host
/// launches instead when some task has hundreds of pieces (a reduction over
/// the whole device: `split_one_task`'s thousands), so that each lane's
/// chain of dependent loads stays a few partials long.
constexpr int MERGE_LANES_BLOCK = BLOCK;

/// A split task's merged partials `acc`: its prologue, then `finish` with
/// `init` (or the carried value) put in front.
template <class K>
__device__ __forceinline__ void finish_split(const typename K::params_t& p, const LaunchArgs& a, uint64_t task,
                                             const Partial<typename K::acc_t>& acc, Fault& f) {
    Item<K> it;
    it.task = task;
    it.valid = true;
    it.whole = true;
    it.slot = 0;
    K::prologue(p, it.task, it.ctx, it.lo, it.hi, f);
    f.attribute(it.task);
    if (!f.any()) {
        finish<K>(p, a, it, acc, false, f);
    }
}

/// Split task `t` of a merge (an empty one where `valid` is false), once
/// its partials may be read: they come from the task-list launch, which may
/// still be running when this grid starts (programmatic dependent launch).
__device__ __forceinline__ SplitTask split_task_at(const LaunchArgs& a, uint64_t t, bool valid) {
    SplitTask st;
    st.task = 0;
    st.first = 0;
    st.count = 0;
    if (valid) {
        st = a.split[t];  // written by the host, not by the task-list launch
    }
    wait_for_primary();
    return st;
}

/// Lane `j` of `W`'s share of `st`'s partials: the j-th contiguous chunk
/// of its segments, folded in list order.
template <class K, int W>
__device__ __forceinline__ Partial<typename K::acc_t> fold_chunk(const LaunchArgs& a, const SplitTask& st, int j,
                                                                 Fault& f) {
    typedef typename K::acc_t acc_t;
    const uint32_t chunk = (st.count + W - 1) / W;
    const uint32_t b = min(uint32_t(j) * chunk, st.count);
    const uint32_t e = min(b + chunk, st.count);
    const acc_t* scratch = static_cast<const acc_t*>(a.scratch);
    Partial<acc_t> acc;
#pragma unroll 4
    for (uint32_t g = b; g < e; ++g) {
        const uint32_t s = a.split_segments[st.first + g];
        if (a.present[s]) {
            acc.template push<K>(scratch[s], f);
        }
    }
    return acc;
}

template <class K, int W>
__device__ __forceinline__ void merge(const typename K::params_t& p, const LaunchArgs& a) {
    const uint64_t tid = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
    const uint64_t t = tid / W;
    const int j = int(tid & (W - 1));
    const bool valid = t < a.n_items;
    const SplitTask st = split_task_at(a, t, valid);
    Fault f;
    Partial<typename K::acc_t> acc = fold_chunk<K, W>(a, st, j, f);
    // Every lane takes part in the shuffles, valid group or not.
    acc = group_reduce<K, W>(acc, f);
    if (valid && j == 0) {
        finish_split<K>(p, a, st.task, acc, f);
    }
    if (valid) {
        f.attribute(st.task);
    }
    publish(a.fault, f);
}

/// The merge with a block per split task (`wf_merge_block`, one block per
/// item): thread j folds the j-th contiguous chunk of the task's partials
/// in list order, each warp joins its 32 chunks in the ordered shuffle tree,
/// and the first warp joins the warps' results, in warp order, the same
/// way. The fold order is fixed, so every run gives the same bits.
template <class K> __device__ __forceinline__ void merge_block(const typename K::params_t& p, const LaunchArgs& a) {
    typedef typename K::acc_t acc_t;
    const uint64_t t = blockIdx.x;
    const int j = int(threadIdx.x);
    const bool valid = t < a.n_items;
    const SplitTask st = split_task_at(a, t, valid);
    Fault f;
    Partial<acc_t> acc = fold_chunk<K, MERGE_LANES_BLOCK>(a, st, j, f);
    acc = group_reduce<K, WARP>(acc, f);
    // The warps' results, in warp order; raw storage, because a __shared__
    // variable cannot have a constructor.
    __shared__ __align__(16) unsigned char raw[WARPS_PER_BLOCK * sizeof(Partial<acc_t>)];
    Partial<acc_t>* warps = reinterpret_cast<Partial<acc_t>*>(raw);
    if (lane_id() == 0) {
        warps[j / WARP] = acc;
    }
    __syncthreads();
    if (j < WARP) {
        Partial<acc_t> w;
        if (j < WARPS_PER_BLOCK) {
            w = warps[j];
        }
        w = group_reduce<K, WARPS_PER_BLOCK>(w, f);
        if (valid && j == 0) {
            finish_split<K>(p, a, st.task, w, f);
        }
    }
    if (valid) {
        f.attribute(st.task);
    }
    publish(a.fault, f);
}

/// The merge after a column list: one thread per split row and column,
/// item t being split row `t / k` at column `j = t % k`, folding the row's
/// pieces' partials for column j in list order (slots `(first + g)·k + j`),
/// then the epilogue. Consecutive threads take consecutive columns of a
/// row, so each step's loads are coalesced; a lane per piece (`merge`)
/// would read them k apart. A hub's hundreds of pieces are one thread's
/// chain of independent loads.
template <class K> __device__ __forceinline__ void merge_columns(const typename K::params_t& p, const LaunchArgs& a) {
    typedef typename K::acc_t acc_t;
    const uint64_t t = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
    const bool valid = t < a.n_items;
    const uint64_t k = a.columns;
    const uint64_t row = valid ? index_div(t, k) : 0;
    const uint64_t column = t - row * k;
    const SplitTask st = split_task_at(a, row, valid);
    const acc_t* scratch = static_cast<const acc_t*>(a.scratch);
    Fault f;
    Partial<acc_t> acc;
    const uint64_t task = uint64_t(st.task) * k + column;
#pragma unroll 4
    for (uint32_t g = 0; g < st.count; ++g) {
        const uint64_t s = (uint64_t(st.first) + g) * k + column;
        if (a.present[s]) {
            acc.template push<K>(scratch[s], f);
        }
    }
    if (valid) {
        finish_split<K>(p, a, task, acc, f);
    }
    publish(a.fault, f);
}

/// The fine-task range of every task, `sizes[2i] = lo`, `sizes[2i+1] = hi`
/// (saturated to u32), and launch-wide statistics in `scratch` (four u64:
/// the longest range, the total, warps of 32 tasks whose gathers are local
/// and warps with any fine task), so that the host reads 32 bytes to decide
/// how to run the launch and the ranges only when it splits tasks. With
/// `columns` k above 1 (a 2-D kernel), item i is row i, read as its
/// flattened task `i·k` (every column of a row has the row's range).
template <class K> __device__ __forceinline__ void task_sizes(const typename K::params_t& p, const LaunchArgs& a) {
    const uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x;
    Fault f;
    Item<K> it;
    it.slot = 0;
    // Past the end: invalid, empty range.
    load_task<K>(p, a.columns > 1 ? i * a.columns : i, i < a.n_items, it, f);
    uint64_t len = 0;
    if (i < a.n_items) {
        a.sizes[2 * i] = it.lo > 0xffffffffull ? 0xffffffffu : uint32_t(it.lo);
        a.sizes[2 * i + 1] = it.hi > 0xffffffffull ? 0xffffffffu : uint32_t(it.hi);
        len = it.hi - it.lo;
    }
    // Every lane reaches the warp reductions (no early return above).
    const unsigned longest = __reduce_max_sync(FULL_MASK, unsigned(len > 0xffffffffull ? 0xffffffffull : len));
    uint64_t sum = len;
#pragma unroll
    for (int d = WARP / 2; d > 0; d >>= 1) {
        sum += shfl_down(sum, d);
    }
    const bool busy = __any_sync(FULL_MASK, len > 0);
    const bool local = gathers_local<K>(p, it, len);
    // The block's warps folded in shared memory, then one set of atomics
    // per block: a set per warp queued millions of atomics on four words
    // (1.8 ms for 2^24 tasks, most of a throttled `auto`'s preparation of
    // a launch; BENCHMARKS.md, "Task sizes folded per block").
    constexpr int WARPS = BLOCK / WARP;
    __shared__ unsigned long long block_stats[4][WARPS];
    const int w = int(threadIdx.x / WARP);
    if (lane_id() == 0) {
        block_stats[0][w] = longest;
        block_stats[1][w] = sum;
        block_stats[2][w] = busy && local ? 1 : 0;
        block_stats[3][w] = busy ? 1 : 0;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long r[4] = {0, 0, 0, 0};
#pragma unroll
        for (int i = 0; i < WARPS; ++i) {
            r[0] = r[0] > block_stats[0][i] ? r[0] : block_stats[0][i];
            r[1] += block_stats[1][i];
            r[2] += block_stats[2][i];
            r[3] += block_stats[3][i];
        }
        unsigned long long* stats = static_cast<unsigned long long*>(a.scratch);
        atomicMax(&stats[0], r[0]);
        atomicAdd(&stats[1], r[1]);
        if (r[3] > 0) {
            atomicAdd(&stats[2], r[2]);
            atomicAdd(&stats[3], r[3]);
        }
    }
    publish(a.fault, f);
}

}  // namespace warpfit
