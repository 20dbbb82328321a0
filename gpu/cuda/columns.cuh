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
// A block takes its 8 warps' units together, striding over the units (the
// host caps the grid). A unit of more than `COLUMNS_LONG_ROW` fine tasks (a
// hub row) is not folded by its warp alone: after the block's short units,
// all 8 warps fold the long ones one at a time, each warp a contiguous
// eighth of the row, and the eight partials are joined in warp order (the
// reduce operator must associate, as for any split task). Each column's
// fold is otherwise in fine-task order, as the CPU twin's. A block whose
// units are all short passes one barrier per round.
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

    /// A lane's C columns of one unit: each column's task and context; the
    /// row's range is shared. A column past `k` takes column 0's task and
    /// context, so that folding it repeats column 0 (its value never read).
    template <class K> struct Cols {
        typename K::ctx_t ctx[C];
        uint64_t task[C];
        bool live[C];
        uint64_t lo;
        uint64_t hi;

        /// The columns of unit `u` (none past the last unit).
        __device__ __forceinline__ void load(const typename K::params_t& p, uint64_t n_items, uint64_t k,
                                             uint64_t tiles, uint64_t u, Fault& f) {
            const uint64_t rows = k == 0 ? 0 : n_items / k;
            const uint64_t row = u / tiles;
            const uint64_t first = (u % tiles) * (uint64_t(WARP) * C) + lane_id();
            lo = hi = 0;
#pragma unroll
            for (int c = 0; c < C; ++c) {
                const uint64_t j = first + uint64_t(c) * WARP;
                const bool in = row < rows && j < k;
                if (c == 0 || in) {
                    Item<K> it;
                    load_task<K>(p, in ? row * k + j : 0, in, it, f);
                    ctx[c] = it.ctx;
                    task[c] = it.task;
                    live[c] = it.valid;
                    if (c == 0) {
                        lo = it.lo;
                        hi = it.hi;
                    }
                } else {
                    ctx[c] = ctx[0];
                    task[c] = task[0];
                    live[c] = false;
                }
            }
        }

        /// Column `c` as a whole item (for `seed` and `finish`).
        __device__ __forceinline__ Item<K> item(int c) const {
            Item<K> it;
            it.ctx = ctx[c];
            it.task = task[c];
            it.lo = lo;
            it.hi = hi;
            it.slot = 0;
            it.whole = true;
            it.valid = live[c];
            return it;
        }
    };

    /// Folds fine tasks `b..e` of the lane's live columns onto `acc`, fine
    /// task by fine task. The C maps of a fine task run unconditionally
    /// (idle columns repeat column 0, which is live whenever any is), so
    /// that their gathers are in flight together; only the pushes depend on
    /// liveness.
    template <class K, class F>
    static __device__ __forceinline__ void fold(const typename K::params_t& p, const Cols<K>& cs, uint64_t b,
                                                uint64_t e, Partial<typename K::acc_t> (&acc)[C], F& f) {
        typedef typename K::acc_t acc_t;
        if (!cs.live[0]) {
            return;
        }
#pragma unroll 2
        for (uint64_t i = b; i < e; ++i) {
            acc_t v[C];
#pragma unroll
            for (int c = 0; c < C; ++c) {
                v[c] = K::map(p, cs.task[c], cs.ctx[c], i, f);
            }
#pragma unroll
            for (int c = 0; c < C; ++c) {
                if (cs.live[c]) {
                    acc[c].template push<K>(v[c], f);
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
    static __device__ __forceinline__ void fold_checked(const typename K::params_t& p, const Cols<K>& cs,
                                                        uint64_t b, uint64_t e,
                                                        Partial<typename K::acc_t> (&acc)[C], Fault& f) {
        Fault g;
        if (e <= K::direct_len(p)) {
            RangeCheckedFault r(g);
            fold<K>(p, cs, b, e, acc, r);
            g = r;
        } else {
            fold<K>(p, cs, b, e, acc, g);
        }
        if (!g.any() || f.any()) {
            return;
        }
#pragma unroll
        for (int c = 0; c < C; ++c) {
            Fault h;
            Partial<typename K::acc_t> scratch;
            for (uint64_t i = b; i < e && cs.live[c] && !h.any(); ++i) {
                scratch.template push<K>(K::map(p, cs.task[c], cs.ctx[c], i, h), h);
            }
            if (h.any()) {
                h.attribute(cs.task[c]);
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
        // Each warp's unit when it is long (else `NONE`), for the block.
        constexpr uint64_t NONE = ~0ull;
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
            const uint64_t u = base + warp;
            bool is_long = false;
            {
                Cols<K> cs;
                cs.load(p, a.n_items, k, tiles, u < units ? u : NONE, f);
                // Lanes of a unit share the row, so its range; lane 0 always
                // holds a column of a unit that exists.
                const uint64_t lo = __shfl_sync(FULL_MASK, cs.lo, 0);
                const uint64_t hi = __shfl_sync(FULL_MASK, cs.hi, 0);
                const bool exists = __shfl_sync(FULL_MASK, cs.live[0], 0);
                is_long = exists && hi - lo > COLUMNS_LONG_ROW;
                if (lane == 0) {
                    long_units[warp] = is_long ? u : NONE;
                }
                if (!is_long) {
                    Partial<acc_t> acc[C];
#pragma unroll
                    for (int c = 0; c < C; ++c) {
                        if (cs.live[c]) {
                            acc[c] = seed<K>(p, a, cs.item(c), f);
                        }
                    }
                    fold_checked<K>(p, cs, lo, hi, acc, f);
#pragma unroll
                    for (int c = 0; c < C; ++c) {
                        if (cs.live[c]) {
                            finish<K>(p, a, cs.item(c), acc[c], true, f);
                        }
                    }
                }
            }
            if (!__syncthreads_or(is_long)) {
                continue;
            }
            for (int w = 0; w < COLUMNS_WARPS; ++w) {
                const uint64_t lu = long_units[w];
                if (lu == NONE) {
                    continue;
                }
                Cols<K> cs;
                cs.load(p, a.n_items, k, tiles, lu, f);
                const uint64_t lo = __shfl_sync(FULL_MASK, cs.lo, 0);
                const uint64_t hi = __shfl_sync(FULL_MASK, cs.hi, 0);
                const uint64_t chunk = (hi - lo + COLUMNS_WARPS - 1) / COLUMNS_WARPS;
                const uint64_t b = min(hi, lo + uint64_t(warp) * chunk);
                const uint64_t e = min(hi, b + chunk);
                Partial<acc_t> acc[C];
                fold_checked<K>(p, cs, b, e, acc, f);
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    part_value[slot(warp, c, lane)] = acc[c].value;
                    part_has[warp][c][lane] = acc[c].has;
                }
                __syncthreads();
                if (warp == 0) {
#pragma unroll
                    for (int c = 0; c < C; ++c) {
                        if (!cs.live[c]) {
                            continue;
                        }
                        const Item<K> it = cs.item(c);
                        Partial<acc_t> r = seed<K>(p, a, it, f);
                        for (int q = 0; q < COLUMNS_WARPS; ++q) {
                            Partial<acc_t> pq;
                            pq.value = part_value[slot(q, c, lane)];
                            pq.has = part_has[q][c][lane];
                            r.template append<K>(pq, f);
                        }
                        finish<K>(p, a, it, r, true, f);
                    }
                }
                __syncthreads();
            }
            // Every warp has read `long_units` before any writes it again.
            __syncthreads();
        }
        publish(a.fault, f);
    }
};

}  // namespace warpfit
