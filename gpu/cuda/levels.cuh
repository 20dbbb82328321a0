// warpfit device library: a breadth-first (Cuthill–McKee) order of a square
// sparse pattern, made on the device, and the pattern renumbered by it.
//
// The order is `warpfit_runtime::partition::level_order`'s, exactly: levels
// from a root, each level's vertices in the order of their first parent,
// each parent's children in the order of its row, one component after the
// other, each rooted at its smallest unnumbered vertex. A round expands one
// level in one launch (`levels_round`), each frontier vertex's row walked
// by LEVEL_GROUP lanes together, over tiles of LEVEL_TILE frontier
// vertices taken in order:
//
//   count: per frontier vertex, how many of its edges won the claims the
//          level before made (a shuffle sum per group); the tile's sum;
//   place: the tile's children follow the frontier, after every earlier
//          tile's (decoupled look-back, scan.cuh);
//   write: every frontier vertex lists the columns it won, in row order
//          (a ballot of the group ranks them), at its offset;
//   claim: every child just listed at position p offers each unnumbered
//          column w at row offset k the key (p, k); an atomic minimum
//          keeps the first edge that reaches w, for the next round.
//
// The last block to finish carries the round: the next frontier's bounds,
// the width checks, and, when the level is empty, the next component's
// root (numbering at once every vertex before it whose columns are all
// numbered: a component of its own), whose claims it makes. The roots of
// the first round claim in a launch of their own (`levels_claim`).
//
// A child claims while other tiles of its parents' level still count and
// write: every key it offers is larger than any of that level's (a key
// leads with the parent's position in the whole order), so the minimum a
// parent of that level won is never disturbed, and a column numbered in
// the same round that still reads as unnumbered only receives a key
// larger than the one it was numbered by.
// Keys carry the parent's position in the whole order, so a claim left from
// an earlier level never matches a later parent: no claim is ever reset.
// The frontier's bounds live in `ctl` on the device, so the host enqueues
// rounds without reading anything back; a round after the last is a no-op.
// The tiles' look-back words carry the round's stamp (`ROUND`), so they
// are not reset between rounds either.
//
// The renumbering is a row copy: new row r is old row order[r] with each
// column w replaced by pos[w], entries in the order stored (as
// `Remapping::apply_csr` makes it). Its range array is an exclusive scan of
// the new rows' lengths (renumber_lengths, scan_carry, renumber_offsets).
//
// Every index followed is checked; one out of range sets ctl[BAD] (or
// `*bad`) and is skipped, so a corrupt pattern yields an error, never a
// fault.
#pragma once
#include "warpfit/scan.cuh"
#include "warpfit/types.cuh"

namespace warpfit {
namespace levels {

/// A vertex not numbered yet (`pos`), or no root found yet.
constexpr uint32_t NONE = 0xffffffffu;
/// No edge has claimed the vertex.
constexpr unsigned long long UNCLAIMED = ~0ull;

/// The words of `ctl`: the level before the frontier, the frontier the
/// next round expands, the smallest vertex that may still
/// be unnumbered, the error flag, the widest level so far, the width
/// past which the order is given up, and where the order was given up on
/// a projection (`LEVEL_GROWTH`), the next level's projected width (0:
/// not), the round's look-back stamp, the next tile to take, and the
/// blocks done with the round. Mirrored by `gpu/src/engines/level_order.rs`.
enum Ctl : int {
    PARENT_START = 0,
    PARENT_END = 1,
    START = 2,
    END = 3,
    NEXT_ROOT = 4,
    BAD = 5,
    WIDEST = 6,
    WIDTH_LIMIT = 7,
    PROJECTED = 8,
    ROUND = 9,
    NEXT_TILE = 10,
    BLOCKS_DONE = 11
};
constexpr int CTL_WORDS = 12;

/// Two levels in a row each at least this many times wider than the one
/// before are taken to keep growing so: where growing so once more would
/// pass the width limit, the order is given up at once instead of
/// expanding the last (an expander's next level, its costliest round,
/// would be too wide anyway). A mesh's or a geometric graph's first level
/// grows by the degree, the second by about 3 (a plane) to 7 (a volume)
/// and those after by less, while they are a few rows wide, far below the
/// limit. Mirrored by `LEVEL_GROWTH` in `gpu/src/abi.rs`.
constexpr uint32_t LEVEL_GROWTH = 4;

/// Lanes that walk one frontier vertex's row together. The rows the order
/// is made for (meshes, geometric graphs) hold 7 to 30 entries: 8 lanes
/// read one in one to four coalesced steps, where a thread a vertex took
/// as many dependent loads as the row has entries and left a round's
/// frontier of tens of thousands of vertices too few threads to hide them.
/// Mirrored by `LEVEL_GROUP` in `gpu/src/abi.rs`, which sizes the tile
/// sums by LEVEL_TILE.
constexpr uint32_t LEVEL_GROUP = 8;
/// Frontier vertices per tile of a round: a group each.
constexpr uint32_t LEVEL_TILE = BLOCK / LEVEL_GROUP;
static_assert(WARP % LEVEL_GROUP == 0 && BLOCK % LEVEL_GROUP == 0, "a group lies in one warp");

/// The lanes of the calling thread's group, as a warp mask.
__device__ __forceinline__ uint32_t group_mask() {
    const uint32_t lane = threadIdx.x % WARP;
    return ((1u << LEVEL_GROUP) - 1) << (lane & ~(LEVEL_GROUP - 1));
}

__device__ __forceinline__ unsigned long long key(uint64_t parent, uint32_t k) {
    return (static_cast<unsigned long long>(parent) << 32) | k;
}

/// Row `v`'s entries `[*lo, *hi)`, or false (and the flag set) when the
/// range array is corrupt there.
__device__ __forceinline__ bool row_of(const uint32_t* ptr, uint64_t v, uint64_t nnz, uint32_t* bad, uint32_t* lo,
                                       uint32_t* hi) {
    *lo = ptr[v];
    *hi = ptr[v + 1];
    if (*lo > *hi || *hi > nnz) {
        *bad = 1;
        return false;
    }
    return true;
}

/// Every position unnumbered and unclaimed.
__device__ __forceinline__ void reset(uint32_t* pos, unsigned long long* claim, uint64_t n) {
    const uint64_t stride = uint64_t(gridDim.x) * BLOCK;
    for (uint64_t i = uint64_t(blockIdx.x) * BLOCK + threadIdx.x; i < n; i += stride) {
        pos[i] = NONE;
        claim[i] = UNCLAIMED;
    }
}

/// One block: the `count` roots `(root + i · (n / count)) mod n` numbered
/// first, in that order, as the frontier `[0, count)` (several roots
/// spread over the rows shorten the rounds of a graph of long diameter);
/// a level wider than `width_limit` gives the order up (see `carry`).
__device__ __forceinline__ void start(uint32_t* order, uint32_t* pos, uint32_t* ctl, uint64_t n, uint64_t root,
                                      uint64_t count, uint64_t width_limit) {
    if (blockIdx.x != 0) {
        return;
    }
    const uint64_t step = n / count;
    for (uint64_t i = threadIdx.x; i < count; i += BLOCK) {
        const uint64_t v = (root + i * step) % n;
        order[i] = uint32_t(v);
        pos[v] = uint32_t(i);
    }
    if (threadIdx.x == 0) {
        ctl[PARENT_START] = 0;
        ctl[PARENT_END] = 0;
        ctl[START] = 0;
        ctl[END] = uint32_t(count);
        ctl[NEXT_ROOT] = 0;
        ctl[BAD] = 0;
        ctl[WIDEST] = uint32_t(count);
        ctl[WIDTH_LIMIT] = uint32_t(width_limit < NONE ? width_limit : NONE);
        ctl[PROJECTED] = 0;
        ctl[ROUND] = 1;
        ctl[NEXT_TILE] = 0;
        ctl[BLOCKS_DONE] = 0;
    }
}

/// The vertices at positions `[s, e)` of the order, a group each from
/// group `first` by steps of `groups`: their edges' keys offered to
/// unnumbered columns.
__device__ __forceinline__ void claim_range(const uint32_t* ptr, const uint32_t* col, uint64_t n, uint64_t nnz,
                                            const uint32_t* order, const uint32_t* pos,
                                            unsigned long long* claims, uint32_t* bad, uint64_t s, uint64_t e,
                                            uint64_t first, uint64_t groups) {
    const uint32_t g = threadIdx.x % LEVEL_GROUP;
    for (uint64_t p = s + first; p < e; p += groups) {
        uint32_t lo, hi;
        if (!row_of(ptr, order[p], nnz, bad, &lo, &hi)) {
            continue;
        }
        // 64-bit steps: a row ending near 2^32 must not wrap the index.
        for (uint64_t j = lo + g; j < hi; j += LEVEL_GROUP) {
            const uint32_t w = col[j];
            if (w >= n) {
                *bad = 1;
            } else if (pos[w] == NONE) {
                atomicMin(&claims[w], key(p, uint32_t(j - lo)));
            }
        }
    }
}

/// The grid, a group per vertex of the frontier `[START, END)`: the
/// claims of the first round's roots.
__device__ __forceinline__ void claim(const uint32_t* ptr, const uint32_t* col, uint64_t n, uint64_t nnz,
                                      const uint32_t* order, const uint32_t* pos, unsigned long long* claims,
                                      uint32_t* ctl) {
    claim_range(ptr, col, n, nnz, order, pos, claims, &ctl[BAD], ctl[START], ctl[END],
                (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / LEVEL_GROUP, uint64_t(gridDim.x) * LEVEL_TILE);
}

/// How many columns of row `order[p]` its edges won: the calling lane's
/// share (every LEVEL_GROUP-th entry from its place in the group).
__device__ __forceinline__ uint32_t won(const uint32_t* ptr, const uint32_t* col, uint64_t n, uint64_t nnz,
                                        const uint32_t* order, const unsigned long long* claims, uint32_t* bad,
                                        uint64_t p) {
    uint32_t lo, hi, c = 0;
    if (row_of(ptr, order[p], nnz, bad, &lo, &hi)) {
        for (uint64_t j = lo + threadIdx.x % LEVEL_GROUP; j < hi; j += LEVEL_GROUP) {
            const uint32_t w = col[j];
            c += (w < n && claims[w] == key(p, uint32_t(j - lo))) ? 1 : 0;
        }
    }
    return c;
}

/// Vertices a thread of `next_root` looks at per step: its own run of
/// consecutive vertices (one cache line of `pos`). After the last level of
/// a component the search walks every vertex past it once; a step of
/// BLOCK vertices cost a geometric graph with a handful of stray vertices
/// 65K steps of one block (about 33 ms at 2^24 rows, BENCHMARKS.md).
constexpr uint32_t ROOT_ITEMS = 32;

/// One block, from the smallest vertex that may be unnumbered: numbers the
/// vertices whose columns are all numbered (each a component of its own)
/// up to the first unnumbered vertex with an unnumbered column, the root
/// of the next frontier, numbered last. `end` is the first free position.
__device__ __forceinline__ void next_root(const uint32_t* ptr, const uint32_t* col, uint64_t n, uint64_t nnz,
                                          uint32_t* order, uint32_t* pos, uint32_t* ctl, uint32_t end) {
    __shared__ uint32_t first_root;
    uint64_t next = ctl[NEXT_ROOT];
    for (;;) {
        if (threadIdx.x == 0) {
            first_root = NONE;
        }
        __syncthreads();
        // Bit k: vertex `mine + k` is unnumbered.
        const uint64_t mine = next + uint64_t(threadIdx.x) * ROOT_ITEMS;
        uint32_t unnumbered = 0;
        for (uint32_t k = 0; k < ROOT_ITEMS; ++k) {
            const uint64_t v = mine + k;
            unnumbered |= (v < n && pos[v] == NONE) ? 1u << k : 0u;
        }
        // The thread's first unnumbered vertex with an unnumbered column
        // is its candidate root.
        for (uint32_t bits = unnumbered; bits != 0; bits &= bits - 1) {
            const uint64_t v = mine + uint32_t(__ffs(int(bits)) - 1);
            uint32_t lo, hi;
            bool alone = row_of(ptr, v, nnz, &ctl[BAD], &lo, &hi);
            for (uint32_t j = lo; alone && j < hi; ++j) {
                const uint32_t w = col[j];
                alone = w == v || (w < n && pos[w] != NONE);
            }
            if (!alone) {
                atomicMin(&first_root, uint32_t(v));
                break;
            }
        }
        __syncthreads();
        const uint32_t root = first_root;
        // Every unnumbered vertex up to the root (alone ones, then the
        // root), in vertex order: thread order is vertex order.
        uint32_t take = unnumbered;
        if (root != NONE) {
            if (mine > root) {
                take = 0;
            } else if (root - mine < ROOT_ITEMS) {
                take &= uint32_t((2ull << (root - mine)) - 1);
            }
        }
        uint32_t taken;
        uint32_t at = end + block_exclusive_scan(uint32_t(__popc(int(take))), &taken);
        for (uint32_t bits = take; bits != 0; bits &= bits - 1) {
            const uint64_t v = mine + uint32_t(__ffs(int(bits)) - 1);
            order[at] = uint32_t(v);
            pos[v] = at;
            ++at;
        }
        end += taken;
        next += uint64_t(BLOCK) * ROOT_ITEMS;
        if (root != NONE || next >= n) {
            if (threadIdx.x == 0) {
                // A root expands next; otherwise every vertex is numbered.
                ctl[START] = root != NONE ? end - 1 : end;
                ctl[END] = end;
                ctl[NEXT_ROOT] = uint32_t(root != NONE ? uint64_t(root) + 1 : n);
            }
            return;
        }
    }
}

/// The last block of a round, with the frontier `[s, e)` and its
/// `children`: the next frontier, or the next root (with its claims).
__device__ __forceinline__ void carry(const uint32_t* ptr, const uint32_t* col, uint64_t n, uint64_t nnz,
                                      uint32_t* order, uint32_t* pos, unsigned long long* claims, uint32_t* ctl,
                                      uint32_t s, uint32_t e, uint32_t children) {
    if (threadIdx.x == 0) {
        ctl[ROUND] = next_lookback_stamp(ctl[ROUND]);
        ctl[NEXT_TILE] = 0;
        ctl[BLOCKS_DONE] = 0;
    }
    if (children > 0) {
        if (threadIdx.x == 0) {
            // The level before the parents: none after a root.
            const uint64_t grandparents = ctl[PARENT_END] - ctl[PARENT_START];
            ctl[PARENT_START] = s;
            ctl[PARENT_END] = e;
            ctl[WIDEST] = max(ctl[WIDEST], children);
            const uint32_t limit = ctl[WIDTH_LIMIT];
            const uint64_t parents = e - s;
            const uint64_t projected = uint64_t(children) * (children / parents);
            const bool expanding = limit != NONE && grandparents > 0 && parents >= LEVEL_GROWTH * grandparents &&
                                   uint64_t(children) >= LEVEL_GROWTH * parents && projected > limit;
            if (expanding) {
                ctl[PROJECTED] = uint32_t(projected < NONE ? projected : NONE);
            }
            if (children > limit || expanding) {
                // Given up: the children are listed, every later round
                // finds nothing to expand and no root.
                ctl[START] = uint32_t(n);
                ctl[END] = uint32_t(n);
                ctl[NEXT_ROOT] = uint32_t(n);
            } else {
                ctl[START] = e;
                ctl[END] = e + children;
            }
        }
        return;
    }
    if (threadIdx.x == 0) {
        ctl[PARENT_START] = e;
        ctl[PARENT_END] = e;
        ctl[START] = e;
    }
    if (e < n) {
        next_root(ptr, col, n, nnz, order, pos, ctl, e);
        // The root is the next frontier; its claims are this round's.
        __syncthreads();
        claim_range(ptr, col, n, nnz, order, pos, claims, &ctl[BAD], ctl[START], ctl[END],
                    threadIdx.x / LEVEL_GROUP, LEVEL_TILE);
    }
}

/// One level: tiles of LEVEL_TILE frontier vertices, a group each, taken
/// in order; each tile's children counted, placed after the earlier
/// tiles', listed in row order and made to claim their own children for
/// the next round. The last block to finish carries the round.
__device__ __forceinline__ void round(const uint32_t* ptr, const uint32_t* col, uint64_t n, uint64_t nnz,
                                      uint32_t* order, uint32_t* pos, unsigned long long* claims,
                                      unsigned long long* tiles, uint32_t* ctl) {
    __shared__ uint32_t taken;
    __shared__ bool last;
    const uint32_t s = ctl[START], e = ctl[END], stamp = ctl[ROUND];
    const uint64_t m = e - s;
    const uint32_t g = threadIdx.x % LEVEL_GROUP;
    for (;;) {
        if (threadIdx.x == 0) {
            taken = atomicAdd(&ctl[NEXT_TILE], 1u);
        }
        __syncthreads();
        const uint64_t t = taken;
        if (t * LEVEL_TILE >= m) {
            break;
        }
        const uint64_t i = t * LEVEL_TILE + threadIdx.x / LEVEL_GROUP;
        const uint64_t p = s + i;
        uint32_t c = i < m ? won(ptr, col, n, nnz, order, claims, &ctl[BAD], p) : 0;
        // Every lane of the warp reaches the shuffles: the tile loop is
        // the same for the whole block. Each lane ends with its group's sum.
        for (uint32_t d = LEVEL_GROUP / 2; d > 0; d /= 2) {
            c += __shfl_xor_sync(FULL_MASK, c, int(d), int(LEVEL_GROUP));
        }
        uint32_t sum;
        const uint32_t ex = block_exclusive_scan(g == 0 ? c : 0, &sum);
        const uint64_t first = uint64_t(e) + tile_exclusive_prefix(tiles, t, sum, stamp);
        uint64_t at = first + __shfl_sync(FULL_MASK, ex, 0, int(LEVEL_GROUP));
        uint32_t lo, hi;
        if (i < m && c > 0 && row_of(ptr, order[p], nnz, &ctl[BAD], &lo, &hi)) {
            // The group's lanes agree on the row, so they take every step
            // together and each ballot has all of them.
            const uint32_t mask = group_mask();
            for (uint64_t base = lo; base < hi; base += LEVEL_GROUP) {
                const uint64_t j = base + g;
                uint32_t w = 0;
                bool win = false;
                if (j < hi) {
                    w = col[j];
                    win = w < n && claims[w] == key(p, uint32_t(j - lo));
                }
                const uint32_t wins = __ballot_sync(mask, win) & mask;
                if (win) {
                    const uint64_t a = at + __popc(wins & ((1u << (threadIdx.x % WARP)) - 1));
                    if (a < n) {
                        order[a] = w;
                        pos[w] = uint32_t(a);
                    } else {
                        ctl[BAD] = 1;
                    }
                }
                at += __popc(wins);
            }
        }
        // The tile's children, listed by the block, claim.
        __syncthreads();
        const uint64_t listed = first + sum < n ? first + sum : n;
        claim_range(ptr, col, n, nnz, order, pos, claims, &ctl[BAD], first, listed, threadIdx.x / LEVEL_GROUP,
                    LEVEL_TILE);
    }
    // Every block's writes are out before it counts itself done.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(&ctl[BLOCKS_DONE], 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) {
        return;
    }
    __threadfence();
    uint32_t children = 0;
    if (m > 0) {
        // The last tile's inclusive prefix: every tile has published it.
        const unsigned long long w =
            *reinterpret_cast<volatile unsigned long long*>(&tiles[(m + LEVEL_TILE - 1) / LEVEL_TILE - 1]);
        if (uint32_t(w >> 33) == stamp && (w & LOOKBACK_PREFIX) != 0) {
            children = uint32_t(w);
        } else if (threadIdx.x == 0) {
            ctl[BAD] = 1;
        }
    }
    // Every thread of the block has read `ctl` before it changes.
    __syncthreads();
    carry(ptr, col, n, nnz, order, pos, claims, ctl, s, e, children);
}

/// Tiles of BLOCK new rows: `lengths[r]` of old row `order[r]`, with the
/// tile sums.
__device__ __forceinline__ void renumber_lengths(const uint32_t* ptr, const uint32_t* order, uint64_t n, uint64_t nnz,
                                                 uint32_t* lengths, uint32_t* tile_sums, uint32_t* bad) {
    for (uint64_t t = blockIdx.x; t * BLOCK < n; t += gridDim.x) {
        const uint64_t r = t * BLOCK + threadIdx.x;
        uint32_t len = 0;
        if (r < n) {
            const uint32_t v = order[r];
            uint32_t lo, hi;
            if (v >= n) {
                *bad = 1;
            } else if (row_of(ptr, v, nnz, bad, &lo, &hi)) {
                len = hi - lo;
            }
            lengths[r] = len;
        }
        uint32_t total;
        block_exclusive_scan(len, &total);
        if (threadIdx.x == 0) {
            tile_sums[t] = total;
        }
    }
}

/// Tiles of BLOCK new rows: `new_ptr[r]` from the lengths and scanned
/// tile sums; `new_ptr[n]` is written by scan_carry.
__device__ __forceinline__ void renumber_offsets(const uint32_t* lengths, const uint32_t* tile_sums, uint64_t n,
                                                 uint32_t* new_ptr) {
    for (uint64_t t = blockIdx.x; t * BLOCK < n; t += gridDim.x) {
        const uint64_t r = t * BLOCK + threadIdx.x;
        uint32_t total;
        const uint32_t ex = block_exclusive_scan(r < n ? lengths[r] : 0, &total);
        if (r < n) {
            new_ptr[r] = tile_sums[t] + ex;
        }
    }
}

/// A group of LEVEL_GROUP lanes per new row r: old row `order[r]`'s
/// entries, columns through `pos`, at `new_ptr[r]`. The rows renumbered
/// are a mesh's or a geometric graph's, of 7 to 30 entries: a warp a row
/// left most lanes idle and a warp's rows one after the other, each a
/// chain of dependent loads (the order, the range, the columns, their new
/// numbers).
template <class T>
__device__ __forceinline__ void renumber_rows(const uint32_t* ptr, const uint32_t* col, const T* val,
                                              const uint32_t* order, const uint32_t* pos, const uint32_t* new_ptr,
                                              uint64_t n, uint64_t nnz, uint32_t* new_col, T* new_val,
                                              uint32_t* bad) {
    const uint64_t groups = uint64_t(gridDim.x) * LEVEL_TILE;
    const uint32_t g = threadIdx.x % LEVEL_GROUP;
    for (uint64_t r = (uint64_t(blockIdx.x) * BLOCK + threadIdx.x) / LEVEL_GROUP; r < n; r += groups) {
        const uint32_t v = order[r];
        uint32_t lo, hi;
        if (v >= n || !row_of(ptr, v, nnz, bad, &lo, &hi) || new_ptr[r] + uint64_t(hi - lo) > nnz) {
            if (g == 0) {
                *bad = 1;
            }
            continue;
        }
        const uint64_t d = new_ptr[r];
        for (uint32_t k = g; k < hi - lo; k += LEVEL_GROUP) {
            const uint32_t w = col[lo + k];
            new_col[d + k] = w < n ? pos[w] : NONE;
            new_val[d + k] = val[lo + k];
            if (w >= n) {
                *bad = 1;
            }
        }
    }
}

}  // namespace levels
}  // namespace warpfit

#define WARPFIT_RENUMBER_ROWS_(T, W)                                                                          \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                              \
        wf_renumber_rows_##W(const uint32_t* ptr, const uint32_t* col, const T* val, const uint32_t* order,   \
                             const uint32_t* pos, const uint32_t* new_ptr, uint64_t n, uint64_t nnz,          \
                             uint32_t* new_col, T* new_val, uint32_t* bad) {                                  \
        warpfit::levels::renumber_rows<T>(ptr, col, val, order, pos, new_ptr, n, nnz, new_col, new_val, bad); \
    }

#define WARPFIT_LEVELS_ENTRY_POINTS                                                                            \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                               \
        wf_levels_reset(uint32_t* pos, unsigned long long* claims, uint64_t n) {                               \
        warpfit::levels::reset(pos, claims, n);                                                                \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                               \
        wf_levels_start(uint32_t* order, uint32_t* pos, uint32_t* ctl, uint64_t n, uint64_t root, uint64_t count, \
                        uint64_t width_limit) {                                                                \
        warpfit::levels::start(order, pos, ctl, n, root, count, width_limit);                                  \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                               \
        wf_levels_claim(const uint32_t* ptr, const uint32_t* col, uint64_t n, uint64_t nnz,                    \
                        const uint32_t* order, const uint32_t* pos, unsigned long long* claims, uint32_t* ctl) { \
        warpfit::levels::claim(ptr, col, n, nnz, order, pos, claims, ctl);                                     \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                               \
        wf_levels_round(const uint32_t* ptr, const uint32_t* col, uint64_t n, uint64_t nnz, uint32_t* order,   \
                        uint32_t* pos, unsigned long long* claims, unsigned long long* tiles, uint32_t* ctl) { \
        warpfit::levels::round(ptr, col, n, nnz, order, pos, claims, tiles, ctl);                              \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                               \
        wf_renumber_lengths(const uint32_t* ptr, const uint32_t* order, uint64_t n, uint64_t nnz,              \
                            uint32_t* lengths, uint32_t* tile_sums, uint32_t* bad) {                           \
        warpfit::levels::renumber_lengths(ptr, order, n, nnz, lengths, tile_sums, bad);                        \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                               \
        wf_scan_carry(uint32_t* tile_sums, uint64_t tiles, uint32_t* sum) {                                    \
        const uint32_t s = warpfit::scan_tiles(tile_sums, tiles);                                      \
        if (threadIdx.x == 0) {                                                                                \
            *sum = s;                                                                                          \
        }                                                                                                      \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(warpfit::BLOCK)                                               \
        wf_renumber_offsets(const uint32_t* lengths, const uint32_t* tile_sums, uint64_t n, uint32_t* new_ptr) { \
        warpfit::levels::renumber_offsets(lengths, tile_sums, n, new_ptr);                                     \
    }                                                                                                          \
    WARPFIT_RENUMBER_ROWS_(uint8_t, 1)                                                                         \
    WARPFIT_RENUMBER_ROWS_(uint16_t, 2)                                                                        \
    WARPFIT_RENUMBER_ROWS_(uint32_t, 4)                                                                        \
    WARPFIT_RENUMBER_ROWS_(uint64_t, 8)
