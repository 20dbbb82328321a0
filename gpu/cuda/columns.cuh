// warpfit device library: the decomposition of 2-D kernels (`Columns<C>`).
//
// A 2-D kernel (`#[nested_reduce(columns = k)]`) runs over the flattened
// tasks `row·k + j`, and every column of a row folds the same fine tasks.
// Here a warp takes one *unit*, a row and a tile of 32·C consecutive
// columns: lane l holds columns tile·32C + c·32 + l for c < C, so that per
// fine task the lane folds C columns (C independent gathers in flight), the
// row's own loads (`col[e]`, `val[e]`) are the same address for the whole
// warp and read once per lane for all C columns, and the warp's gathers of a
// row of `x` are consecutive (coalesced). Columns past `k` are idle lanes.
//
// A block takes its 8 warps' units together. A unit of more than
// `COLUMNS_LONG_ROW` fine tasks (a hub row) is not folded by its warp
// alone: after the block's short units, all 8 warps fold the long ones one
// at a time, each warp a contiguous eighth of the row, and the eight
// partials are joined in warp order (the reduce operator must associate, as
// for any split task). Each column's fold is otherwise in fine-task order,
// as the CPU twin's.
//
// Only 2-D kernels instantiate it: the functor's `columns(p)` gives `k`.
#pragma once
#include "warpfit/task_source.cuh"

namespace warpfit {

/// A unit longer than this many fine tasks is folded by the whole block.
constexpr uint64_t COLUMNS_LONG_ROW = 2048;
/// Warps per block.
constexpr int COLUMNS_WARPS = BLOCK / WARP;

template <int C> struct Columns {
    static_assert(C >= 1 && C <= 8, "columns per lane must be 1 to 8");

    /// The lane's C items of unit `u` (all invalid past the last unit).
    template <class K>
    static __device__ __forceinline__ void load(const typename K::params_t& p, uint64_t n_items, uint64_t k,
                                                uint64_t tiles, uint64_t u, Item<K> (&it)[C], Fault& f) {
        const uint64_t rows = k == 0 ? 0 : n_items / k;
        const uint64_t row = u / tiles;
        const uint64_t first = (u % tiles) * (uint64_t(WARP) * C) + lane_id();
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const uint64_t j = first + uint64_t(c) * WARP;
            const bool live = row < rows && j < k;
            load_task<K>(p, live ? row * k + j : 0, live, it[c], f);
        }
    }

    /// Folds fine tasks `lo..hi` of the lane's items onto `acc`, fine task
    /// by fine task, the C columns together.
    template <class K, class F>
    static __device__ __forceinline__ void fold(const typename K::params_t& p, const Item<K> (&it)[C], uint64_t lo,
                                                uint64_t hi, Partial<typename K::acc_t> (&acc)[C], F& f) {
#pragma unroll 2
        for (uint64_t e = lo; e < hi; ++e) {
#pragma unroll
            for (int c = 0; c < C; ++c) {
                if (it[c].valid) {
                    acc[c].template push<K>(K::map(p, it[c].task, it[c].ctx, e, f), f);
                }
            }
        }
    }

    /// `fold` with the loads at the fine-task index unchecked when the
    /// range ends within `direct_len`. A fault is recorded exactly: the
    /// columns are folded together under a fresh fault state, and only when
    /// that raised one is each column folded again alone, in column order,
    /// to find the first fault and its task, as a serial fold reports it.
    template <class K>
    static __device__ __forceinline__ void fold_checked(const typename K::params_t& p, const Item<K> (&it)[C],
                                                        uint64_t lo, uint64_t hi,
                                                        Partial<typename K::acc_t> (&acc)[C], Fault& f) {
        Fault g;
        if (hi <= K::direct_len(p)) {
            RangeCheckedFault r(g);
            fold<K>(p, it, lo, hi, acc, r);
            g = r;
        } else {
            fold<K>(p, it, lo, hi, acc, g);
        }
        if (!g.any() || f.any()) {
            return;
        }
#pragma unroll
        for (int c = 0; c < C; ++c) {
            Fault h;
            Partial<typename K::acc_t> scratch;
            for (uint64_t e = lo; e < hi && it[c].valid && !h.any(); ++e) {
                scratch.template push<K>(K::map(p, it[c].task, it[c].ctx, e, h), h);
            }
            if (h.any()) {
                h.attribute(it[c].task);
                f = h;
                return;
            }
        }
        f = g;  // not reproduced alone: keep what the joint fold saw
    }

    template <class K, class Src> static __device__ __forceinline__ void run(const typename K::params_t& p,
                                                                             const LaunchArgs& a) {
        typedef typename K::acc_t acc_t;
        static_assert(!Src::is_list, "2-D kernels run over all their tasks");
        __shared__ uint32_t n_long;
        __shared__ uint64_t long_units[COLUMNS_WARPS];
        // The long units' partials, [warp][column][lane]; raw storage, since
        // a tuple accumulator has constructors a `__shared__` array may not run.
        __shared__ __align__(16) unsigned char part_bytes[sizeof(acc_t) * COLUMNS_WARPS * C * WARP];
        __shared__ bool part_has[COLUMNS_WARPS][C][WARP];
        acc_t* part_value = reinterpret_cast<acc_t*>(part_bytes);
        const auto slot = [](int w, int c, int l) { return (w * C + c) * WARP + l; };
        const uint64_t k = K::columns(p);
        const uint64_t tiles = (k + uint64_t(WARP) * C - 1) / (uint64_t(WARP) * C);
        const uint64_t rows = k == 0 ? 0 : a.n_items / k;
        const uint64_t units = rows * tiles;
        const int warp = int(threadIdx.x) / WARP;
        const int lane = lane_id();
        Fault f;
        // Block-uniform trip count: every warp reaches every barrier.
        for (uint64_t base = uint64_t(blockIdx.x) * COLUMNS_WARPS; base < units;
             base += uint64_t(gridDim.x) * COLUMNS_WARPS) {
            if (threadIdx.x == 0) {
                n_long = 0;
            }
            __syncthreads();
            const uint64_t u = base + warp;
            Item<K> it[C];
            load<K>(p, a.n_items, k, tiles, u < units ? u : ~0ull, it, f);
            // Lanes of a unit share the row, so its range; a lane with no
            // live column reads it from one that has (lane 0 always does).
            const uint64_t lo = __shfl_sync(FULL_MASK, it[0].lo, 0);
            const uint64_t hi = __shfl_sync(FULL_MASK, it[0].hi, 0);
            const bool live = __shfl_sync(FULL_MASK, it[0].valid, 0);
            if (live && hi - lo > COLUMNS_LONG_ROW) {
                if (lane == 0) {
                    long_units[atomicAdd(&n_long, 1u)] = u;
                }
            } else {
                Partial<acc_t> acc[C];
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    acc[c] = seed<K>(p, a, it[c], f);
                }
                fold_checked<K>(p, it, lo, hi, acc, f);
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    finish<K>(p, a, it[c], acc[c], true, f);
                }
            }
            __syncthreads();
            const uint32_t n = n_long;
            for (uint32_t l = 0; l < n; ++l) {
                const uint64_t lu = long_units[l];
                Item<K> li[C];
                load<K>(p, a.n_items, k, tiles, lu, li, f);
                const uint64_t llo = __shfl_sync(FULL_MASK, li[0].lo, 0);
                const uint64_t lhi = __shfl_sync(FULL_MASK, li[0].hi, 0);
                const uint64_t chunk = (lhi - llo + COLUMNS_WARPS - 1) / COLUMNS_WARPS;
                const uint64_t b = min(lhi, llo + uint64_t(warp) * chunk);
                const uint64_t e = min(lhi, b + chunk);
                Partial<acc_t> acc[C];
                fold_checked<K>(p, li, b, e, acc, f);
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    part_value[slot(warp, c, lane)] = acc[c].value;
                    part_has[warp][c][lane] = acc[c].has;
                }
                __syncthreads();
                if (warp == 0) {
#pragma unroll
                    for (int c = 0; c < C; ++c) {
                        Partial<acc_t> r = seed<K>(p, a, li[c], f);
                        for (int w = 0; w < COLUMNS_WARPS; ++w) {
                            Partial<acc_t> pw;
                            pw.value = part_value[slot(w, c, lane)];
                            pw.has = part_has[w][c][lane];
                            r.template append<K>(pw, f);
                        }
                        finish<K>(p, a, li[c], r, true, f);
                    }
                }
                __syncthreads();
            }
        }
        publish(a.fault, f);
    }
};

}  // namespace warpfit
