use crate::error::to_u32;
use crate::rng::{chunk_rng, unit_value, EDGES, PERMUTATION};
use crate::sparse::{Coo, Csr};
use crate::{Error, Result};
use rand::RngCore;
use rayon::prelude::*;

/// Graph500 RMAT quadrant probabilities (a, b, c; d = 1 − a − b − c = 0.05).
const A: f64 = 0.57;
const B: f64 = 0.19;
const C: f64 = 0.19;

/// Edges generated per random stream; fixed, so the output does not depend on
/// the number of threads.
const EDGE_CHUNK: usize = 1 << 16;

/// RMAT (Kronecker) graph with the Graph500 parameters a = 0.57,
/// b = c = 0.19, d = 0.05: `n = 2^scale` vertices, `edge_factor · n` directed
/// edges drawn by recursive quadrant descent.
///
/// Choices, made to give a canonical matrix with Graph500's locality:
/// - vertex labels are scrambled, as the Graph500 generator does, so
///   high-degree vertices are spread over the index range instead of
///   clustering at 0. Instead of Graph500's random permutation table (whose
///   lookups miss the cache twice per edge and dominated the run time) the
///   scramble is a bijection of the `scale`-bit labels keyed by the seed: two
///   rounds of multiply by an odd key, add a key, xor-shift, all mod 2^scale;
/// - duplicate edges are removed (the first drawn is kept with its value), so
///   `nnz ≤ edge_factor · n` and rows are sorted and duplicate-free;
/// - self loops are kept (they are ordinary diagonal entries for SpMV).
///
/// Values are uniform in (0, 1]. The descent draws two levels at a time from
/// 16 random bits through a table of the 16 quadrant pairs (pair
/// probabilities rounded to multiples of 2⁻¹⁶; an odd last level uses its own
/// 16-bit table). Deterministic for a
/// given `(scale, edge_factor, seed)` on every machine (see the module docs).
pub fn rmat(scale: u32, edge_factor: usize, seed: u64) -> Result<Csr<f32>> {
    if scale > 31 {
        return Err(Error::invalid(format!(
            "rmat: scale = {scale} is too large: the 2^scale vertices must fit in u32 (max \
             scale 31)"
        )));
    }
    let n = 1usize << scale;
    let m = n.checked_mul(edge_factor).ok_or(Error::U32Overflow {
        what: "rmat edge count (edge_factor · 2^scale)",
        value: u64::MAX,
    })?;
    to_u32("rmat edge count (edge_factor · 2^scale)", m)?;
    // Peak: the edge list (row, column, value: 12 bytes an edge) while its
    // CSR (as large again, plus the row pointers) is built from it.
    crate::mem::check(
        &format!("rmat:scale={scale},edge_factor={edge_factor} (edge list and its CSR)"),
        (24 * m as u64).saturating_add(4 * n as u64 + 4),
    )?;

    let scramble = Scramble::new(scale, seed);
    let table = PairTable::new();

    let mut rows = vec![0u32; m];
    let mut cols = vec![0u32; m];
    let mut vals = vec![0f32; m];
    rows.par_chunks_mut(EDGE_CHUNK)
        .zip(cols.par_chunks_mut(EDGE_CHUNK))
        .zip(vals.par_chunks_mut(EDGE_CHUNK))
        .enumerate()
        .for_each(|(chunk, ((rs, cs), vs))| {
            let mut rng = chunk_rng(seed, EDGES, chunk as u64);
            for ((r, c), v) in rs.iter_mut().zip(cs.iter_mut()).zip(vs.iter_mut()) {
                (*r, *c, *v) = draw_edge(&mut rng, &table, &scramble, scale);
            }
        });
    // Indices are < n by construction.
    let coo = Coo::from_parts_unchecked(n, n, rows, cols, vals);
    let mut csr = coo.into_csr()?;
    csr.merge_duplicates(|_, _| {});
    Ok(csr)
}

/// One edge `(row, column, value)` of [`rmat`], from `rng`'s next draws:
/// the quadrant descent, two levels per 16 random bits, then the scramble
/// and the value. Every edge consumes its draws whether it is kept or not,
/// so a chunk's stream gives the same edges to every caller.
#[inline(always)]
fn draw_edge(
    rng: &mut rand_chacha::ChaCha8Rng,
    table: &PairTable,
    scramble: &Scramble,
    scale: u32,
) -> (u32, u32, f32) {
    let (mut i, mut j) = (0u32, 0u32);
    let mut bits = 0u64;
    let mut left = 0u32; // 16-bit draws left in `bits`
    let mut level = 0;
    while level < scale {
        if left == 0 {
            bits = rng.next_u64();
            left = 4;
        }
        let u = (bits & 0xffff) as usize;
        bits >>= 16;
        left -= 1;
        if level + 2 <= scale {
            // Two levels at once: bits 3..2 are (di, dj) of the first
            // level, bits 1..0 of the second.
            let q = table.pair[u] as u32;
            i = (i << 2) | (q >> 3 & 1) << 1 | (q >> 1 & 1);
            j = (j << 2) | (q >> 2 & 1) << 1 | (q & 1);
            level += 2;
        } else {
            let q = table.single[u] as u32;
            i = (i << 1) | q >> 1;
            j = (j << 1) | (q & 1);
            level += 1;
        }
    }
    (scramble.apply(i), scramble.apply(j), unit_value(rng))
}

/// Which end of [`rmat`]'s edges picks the rows [`rmat_rows`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmatSide {
    /// Rows of the matrix: the edges leaving the range's vertices.
    Sources,
    /// Rows of its transpose: the edges entering them.
    Targets,
}

/// Rows `range` of `rmat(scale, edge_factor, seed)` ([`RmatSide::Sources`])
/// or of its transpose ([`RmatSide::Targets`]), made without the whole
/// matrix: [`rmat_row_blocks`] with one block.
///
/// # Errors
/// As [`rmat_row_blocks`].
///
/// # Examples
/// ```
/// use warpfit_runtime::gen::{rmat, rmat_rows, RmatSide};
/// let whole = rmat(10, 8, 3)?;
/// let part = rmat_rows(10, 8, 3, 100..300, RmatSide::Sources)?;
/// assert_eq!(part.row(5), whole.row(105));
/// let t = whole.transpose();
/// assert_eq!(rmat_rows(10, 8, 3, 0..1024, RmatSide::Targets)?, t);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
pub fn rmat_rows(
    scale: u32,
    edge_factor: usize,
    seed: u64,
    range: std::ops::Range<usize>,
    side: RmatSide,
) -> Result<Csr<f32>> {
    let mut blocks = rmat_row_blocks(scale, edge_factor, seed, &[range.start, range.end], side)?;
    Ok(blocks.remove(0))
}

/// Consecutive blocks of rows of `rmat(scale, edge_factor, seed)`
/// ([`RmatSide::Sources`]) or of its transpose ([`RmatSide::Targets`]),
/// block `b` holding rows `bounds[b]..bounds[b + 1]`, made in one pass
/// without the whole matrix: every edge is drawn (in parallel, the same
/// streams as [`rmat`]) and those whose source (target) falls in a block
/// are kept there. Block `b` has `bounds[b + 1] − bounds[b]` rows, its row
/// `r` being row `bounds[b] + r`, over all `2^scale` columns, equal to the
/// same rows of the whole matrix (or of its transpose): duplicates removed
/// as `rmat` removes them, the first drawn kept. This is how a matrix too
/// large for one u32-indexed CSR (RMAT 28 has 4.3G entries) is built for a
/// device group: each block's entries must fit u32, the whole's need not.
///
/// # Errors
/// `scale` above 31; fewer than two bounds, bounds decreasing or past
/// `2^scale`; the edge count (`edge_factor · 2^scale`) past `usize`; a
/// block's entries past u32; the memory budget.
pub fn rmat_row_blocks(
    scale: u32,
    edge_factor: usize,
    seed: u64,
    bounds: &[usize],
    side: RmatSide,
) -> Result<Vec<Csr<f32>>> {
    if scale > 31 {
        return Err(Error::invalid(format!(
            "rmat: scale = {scale} is too large: the 2^scale vertices must fit in u32 (max \
             scale 31)"
        )));
    }
    let n = 1usize << scale;
    if bounds.len() < 2 || bounds.windows(2).any(|w| w[0] > w[1]) || bounds[bounds.len() - 1] > n {
        return Err(Error::invalid(format!(
            "rmat row blocks {bounds:?} are not ascending bounds within the {n} vertices"
        )));
    }
    let m = n.checked_mul(edge_factor).ok_or(Error::U32Overflow {
        what: "rmat edge count (edge_factor · 2^scale)",
        value: u64::MAX,
    })?;
    let (lo, hi) = (bounds[0], bounds[bounds.len() - 1]);
    // The blocks' expected share of the edges (scrambled labels spread the
    // hubs), as an edge list and its CSR.
    let share = (m as u128 * (hi - lo) as u128 / n as u128) as u64;
    crate::mem::check(
        &format!("rmat rows {lo}..{hi} of scale {scale}"),
        share
            .saturating_mul(30)
            .saturating_add(4 * (hi - lo) as u64 + 4),
    )?;
    let (scramble, table) = (Scramble::new(scale, seed), PairTable::new());
    let blocks = bounds.len() - 1;
    let starts: Vec<u32> = bounds.iter().map(|&b| b as u32).collect();
    type Kept = Vec<(Vec<u32>, Vec<u32>, Vec<f32>)>;
    let chunks: Vec<Kept> = (0..m.div_ceil(EDGE_CHUNK))
        .into_par_iter()
        .map(|chunk| {
            let mut rng = chunk_rng(seed, EDGES, chunk as u64);
            let len = EDGE_CHUNK.min(m - chunk * EDGE_CHUNK);
            let mut kept: Kept = vec![(Vec::new(), Vec::new(), Vec::new()); blocks];
            for _ in 0..len {
                let (r, c, v) = draw_edge(&mut rng, &table, &scramble, scale);
                let (row, col) = match side {
                    RmatSide::Sources => (r, c),
                    RmatSide::Targets => (c, r),
                };
                if row < starts[0] || row >= starts[blocks] {
                    continue;
                }
                let b = starts.partition_point(|&s| s <= row) - 1;
                kept[b].0.push(row - starts[b]);
                kept[b].1.push(col);
                kept[b].2.push(v);
            }
            kept
        })
        .collect();
    // Chunk order is draw order, so the first drawn of a duplicate stays
    // first through the (stable) conversion and is the one kept. Each
    // block's arrays are the chunks' pieces laid end to end, copied in
    // parallel: one thread copying RMAT 28's 52 GB took half a minute.
    let per_block: Vec<(Vec<u32>, Vec<u32>, Vec<f32>)> = (0..blocks)
        .map(|b| {
            (
                par_concat(&chunks.iter().map(|c| &c[b].0[..]).collect::<Vec<_>>()),
                par_concat(&chunks.iter().map(|c| &c[b].1[..]).collect::<Vec<_>>()),
                par_concat(&chunks.iter().map(|c| &c[b].2[..]).collect::<Vec<_>>()),
            )
        })
        .collect();
    drop(chunks);
    per_block
        .into_iter()
        .enumerate()
        .map(|(b, (rows, cols, vals))| {
            to_u32("a block's rmat entries", rows.len())?;
            let coo = Coo::from_parts_unchecked(bounds[b + 1] - bounds[b], n, rows, cols, vals);
            let mut csr = coo.into_csr()?;
            csr.merge_duplicates(|_, _| {});
            Ok(csr)
        })
        .collect()
}

/// `pieces` laid end to end, each copied by a thread of its own.
fn par_concat<T: Copy + Default + Send + Sync>(pieces: &[&[T]]) -> Vec<T> {
    let total = pieces.iter().map(|p| p.len()).sum();
    // Zeroed pages are mapped as they are first written, by the copies.
    let mut out = vec![T::default(); total];
    let mut rest = &mut out[..];
    let mut slots = Vec::with_capacity(pieces.len());
    for p in pieces {
        let (head, tail) = rest.split_at_mut(p.len());
        slots.push(head);
        rest = tail;
    }
    slots
        .into_par_iter()
        .zip(pieces.par_iter())
        .for_each(|(dst, src)| dst.copy_from_slice(src));
    out
}

/// [`rmat`] symmetrised: the graph with edge directions ignored, as graph
/// benchmarks run RMAT for undirected problems (connected components, BFS on
/// "RMAT 22 symmetrised"). The pattern is `A + Aᵀ` of `rmat(scale,
/// edge_factor, seed)`; an entry's value is that of `(i, j)` or `(j, i)` in
/// `A`, the smaller when both were drawn, so the matrix is exactly symmetric.
/// Rows are sorted and duplicate-free, self loops kept (once). At most twice
/// [`rmat`]'s entries.
///
/// # Errors
/// As [`rmat`], and the memory budget of the transpose and the result.
///
/// # Examples
/// ```
/// let a = warpfit_runtime::gen::rmat_symmetric(10, 8, 1)?;
/// assert!(a.is_symmetric());
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
pub fn rmat_symmetric(scale: u32, edge_factor: usize, seed: u64) -> Result<Csr<f32>> {
    let a = rmat(scale, edge_factor, seed)?;
    symmetrize_min(&a)
}

/// `A + Aᵀ` of a matrix with sorted, duplicate-free rows, an entry present
/// in both taking the smaller value.
fn symmetrize_min(a: &Csr<f32>) -> Result<Csr<f32>> {
    let (n, nnz) = (a.nrows() as u64, a.nnz() as u64);
    // The transpose, and the result of up to twice the entries.
    crate::mem::check(
        "the symmetrised rmat (transpose and A + Aᵀ)",
        (8 * n + 8).saturating_add(24 * nnz),
    )?;
    let t = a.transpose();
    // Calls `f(column, value)` for the union of row r of `a` and of `t`.
    let union = |r: usize, f: &mut dyn FnMut(u32, f32)| {
        let ((ac, av), (tc, tv)) = (a.row(r), t.row(r));
        let (mut i, mut k) = (0, 0);
        while i < ac.len() || k < tc.len() {
            if k == tc.len() || (i < ac.len() && ac[i] < tc[k]) {
                f(ac[i], av[i]);
                i += 1;
            } else if i == ac.len() || tc[k] < ac[i] {
                f(tc[k], tv[k]);
                k += 1;
            } else {
                f(ac[i], av[i].min(tv[k]));
                i += 1;
                k += 1;
            }
        }
    };
    let lens: Vec<u32> = (0..a.nrows())
        .into_par_iter()
        .map(|r| {
            let mut len = 0u32;
            union(r, &mut |_, _| len += 1);
            len
        })
        .collect();
    let mut row_ptr = Vec::with_capacity(a.nrows() + 1);
    row_ptr.push(0u32);
    let mut total = 0usize;
    for len in lens {
        total += len as usize;
        row_ptr.push(to_u32("symmetrised rmat entries", total)?);
    }
    let mut col_idx = vec![0u32; total];
    let mut values = vec![0f32; total];
    crate::sparse::par_rows_mut(&row_ptr, &mut col_idx, &mut values, |rows, cols, vals| {
        let mut at = row_ptr[rows.start] as usize;
        let base = at;
        for r in rows {
            union(r, &mut |c, v| {
                cols[at - base] = c;
                vals[at - base] = v;
                at += 1;
            });
        }
    });
    Ok(Csr::from_parts_unchecked(
        a.nrows(),
        a.ncols(),
        row_ptr,
        col_idx,
        values,
    ))
}

/// Quadrant lookup tables indexed by 16 random bits. A quadrant is encoded
/// as `di << 1 | dj`; quadrants in the order (0,0), (0,1), (1,0), (1,1) have
/// probabilities a, b, c, d, and each outcome owns a run of indices whose
/// length is its probability times 2^16 (cumulative bounds rounded, so the
/// runs tile the table exactly).
struct PairTable {
    /// One level: the quadrant.
    single: Vec<u8>,
    /// Two levels: `first << 2 | second`.
    pair: Vec<u8>,
}

impl PairTable {
    fn new() -> Self {
        let p = [A, B, C, 1.0 - A - B - C];
        let fill = |probs: &[(u8, f64)]| {
            let mut t = vec![0u8; 1 << 16];
            let mut cum = 0.0;
            let mut lo = 0usize;
            for &(q, pr) in probs {
                cum += pr;
                let hi = ((cum * 65536.0).round() as usize).min(1 << 16);
                t[lo..hi].fill(q);
                lo = hi;
            }
            // Rounding of the total cannot leave a gap: the last run ends at
            // 2^16 since the probabilities sum to 1.
            t[lo..].fill(probs[probs.len() - 1].0);
            t
        };
        let single: Vec<(u8, f64)> = (0..4).map(|q| (q as u8, p[q])).collect();
        let pair: Vec<(u8, f64)> = (0..16).map(|k| (k as u8, p[k >> 2] * p[k & 3])).collect();
        PairTable {
            single: fill(&single),
            pair: fill(&pair),
        }
    }
}

/// A bijection of `0..2^scale` keyed by the seed (see [`rmat`]). Each step
/// is invertible mod 2^scale: multiplying by an odd number, adding, and
/// `x ^= x >> s` for `s ≥ 1`.
struct Scramble {
    mask: u64,
    shift: u32,
    mul: [u64; 2],
    add: [u64; 2],
}

impl Scramble {
    fn new(scale: u32, seed: u64) -> Self {
        let mut rng = chunk_rng(seed, PERMUTATION, 0);
        Scramble {
            mask: (1u64 << scale) - 1,
            shift: scale.div_ceil(2).max(1),
            mul: [rng.next_u64() | 1, rng.next_u64() | 1],
            add: [rng.next_u64(), rng.next_u64()],
        }
    }

    #[inline(always)]
    fn apply(&self, x: u32) -> u32 {
        let mut v = x as u64;
        for k in 0..2 {
            v = v.wrapping_mul(self.mul[k]).wrapping_add(self.add[k]) & self.mask;
            v ^= v >> self.shift;
        }
        v as u32
    }
}

#[cfg(test)]
mod tests {
    use super::{rmat, rmat_row_blocks, PairTable, RmatSide, Scramble};

    /// Blocks made in one pass are the whole matrix's rows (or its
    /// transpose's), for uneven blocks, empty ones and bounds that do not
    /// start at 0; bad bounds are errors.
    #[test]
    fn row_blocks_are_the_whole_matrix_cut() {
        let whole = rmat(9, 6, 11).unwrap();
        let t = whole.transpose();
        let bounds = [3usize, 3, 40, 41, 300, 512];
        row_blocks_cut(9, 6, &bounds, &whole, &t);
        // Edges drawn in several chunks, laid end to end per block.
        let whole = rmat(13, 24, 11).unwrap();
        let t = whole.transpose();
        row_blocks_cut(13, 24, &[0, 1000, 4096, 8000, 8192], &whole, &t);
        for bad in [&[][..], &[5][..], &[5, 4][..], &[0, 513][..]] {
            let e = rmat_row_blocks(9, 6, 11, bad, RmatSide::Sources).unwrap_err();
            assert!(e.to_string().contains("ascending bounds"), "{e}");
        }
        assert!(rmat_row_blocks(32, 1, 1, &[0, 1], RmatSide::Sources).is_err());
    }

    /// Every block of `rmat_row_blocks(scale, ef, 11, bounds, ..)` is its
    /// rows of `whole` (sources) or of `t` (targets).
    fn row_blocks_cut(
        scale: u32,
        ef: usize,
        bounds: &[usize],
        whole: &crate::Csr<f32>,
        t: &crate::Csr<f32>,
    ) {
        for (side, m) in [(RmatSide::Sources, whole), (RmatSide::Targets, t)] {
            let blocks = rmat_row_blocks(scale, ef, 11, bounds, side).unwrap();
            assert_eq!(blocks.len(), bounds.len() - 1);
            for (b, block) in blocks.iter().enumerate() {
                assert_eq!(block.nrows(), bounds[b + 1] - bounds[b]);
                assert_eq!(block.ncols(), 1 << scale);
                for r in 0..block.nrows() {
                    assert_eq!(
                        block.row(r),
                        m.row(bounds[b] + r),
                        "{side:?} block {b} row {r}"
                    );
                }
            }
        }
    }

    #[test]
    fn pair_table_matches_the_probabilities() {
        let t = PairTable::new();
        let p = [0.57, 0.19, 0.19, 0.05];
        for q in 0..16usize {
            let n = t.pair.iter().filter(|&&x| x as usize == q).count() as f64;
            let want = p[q >> 2] * p[q & 3] * 65536.0;
            assert!((n - want).abs() <= 1.0, "pair {q}: {n} vs {want}");
        }
        for (q, &pq) in p.iter().enumerate() {
            let n = t.single.iter().filter(|&&x| x as usize == q).count() as f64;
            assert!((n - pq * 65536.0).abs() <= 1.0, "quadrant {q}");
        }
    }

    #[test]
    fn scramble_is_a_bijection() {
        for scale in [0u32, 1, 2, 5, 12] {
            let s = Scramble::new(scale, 42);
            let n = 1usize << scale;
            let mut seen = vec![false; n];
            for x in 0..n as u32 {
                let y = s.apply(x) as usize;
                assert!(y < n && !seen[y], "scale {scale}: {x} -> {y}");
                seen[y] = true;
            }
        }
        // And it moves the RMAT hub (vertex 0).
        assert_ne!(Scramble::new(20, 1).apply(0), 0);
    }
}
