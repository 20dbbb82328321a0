//! Magnitude-pruned neural-network layers, for sparse inference benchmarks:
//! a fully connected layer's weights drawn like a trained layer's initial
//! ones (He initialisation) and pruned to a density by global magnitude
//! pruning, as Han et al.'s deep compression prunes AlexNet's fully
//! connected layers (fc6 and fc7 to 9% of their weights, fc8 to 25%).
//! Unlike the graph generators the row lengths follow no structure: each
//! row keeps the weights that happened to be large.

use crate::error::to_u32;
use crate::rng::{chunk_rng, unit_f64, VALUES};
use crate::sparse::Csr;
use crate::{Error, Result};
use rayon::prelude::*;

/// Most entries (`rows · cols`) whose weights [`pruned`] materialises:
/// 2^31, 8 GiB of `f32` weights.
pub const PRUNED_MAX_ENTRIES: usize = 1 << 31;

/// Weights generated per random stream (fixed, so the output does not depend
/// on the number of threads).
const CHUNK: usize = 1 << 16;

/// Stream ranges of the [`VALUES`] purpose: the weights' chunks from
/// `WEIGHT_STREAMS`, the biases' from `BIAS_STREAMS` (apart from each other
/// and from [`crate::gen::random_values`]'s, which start at 0).
const WEIGHT_STREAMS: u64 = 1 << 54;
const BIAS_STREAMS: u64 = 1 << 55;

/// Standard deviation of [`alexnet_fc`]'s biases.
const BIAS_SIGMA: f64 = 0.01;

/// Magnitude buckets of the threshold search: the top 15 bits of `|w|`'s
/// bits (the sign bit is 0), exponent and 7 mantissa bits.
const BUCKET_SHIFT: u32 = 16;
const BUCKETS: usize = 1 << (31 - BUCKET_SHIFT);

/// A `rows × cols` fully connected layer (rows = outputs, cols = inputs)
/// pruned by magnitude: every weight is drawn i.i.d. from the Gaussian
/// N(0, σ²) with σ = sqrt(2 / cols) (He initialisation), and the matrix keeps
/// exactly `round(density · rows · cols)` of them, those of largest
/// magnitude over the whole matrix (global magnitude pruning), so row
/// lengths vary. Of weights tied in magnitude at the threshold, the earliest
/// in row-major order are kept, so the count is exact. Columns are sorted
/// within each row; the values are the kept weights (`f32`), like every
/// generator's [`Csr<f32>`]. A density so small that it rounds to no entry
/// gives an empty matrix.
///
/// The dense weights are materialised (4 bytes per entry; fc6's
/// 4096 × 9216 take 151 MB), so `rows · cols` is at most
/// [`PRUNED_MAX_ENTRIES`]. The threshold comes from a histogram of the
/// magnitudes and a selection (`select_nth_unstable`) within the bucket
/// holding it, not from a sort.
///
/// Deterministic for a given `(rows, cols, density, seed)` on every machine
/// and thread count: weight `i` (row-major) is in chunk `i / 2^16`, generated
/// by its own ChaCha stream of the runtime's rng; Gaussians come from
/// Marsaglia's polar method with a logarithm computed from IEEE basic
/// operations only (no platform `libm`).
///
/// # Errors
/// `rows` or `cols` of 0, `density` not a finite number in (0, 1], a
/// nonzero count beyond u32, `rows · cols` beyond [`PRUNED_MAX_ENTRIES`],
/// and the memory budget ([`crate::mem::check`]).
///
/// # Examples
/// ```
/// use warpfit_runtime::gen::pruned;
/// let fc = pruned(100, 400, 0.09, 1)?;
/// assert_eq!(fc.nnz(), 3600);
/// assert!(fc.has_sorted_columns());
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
pub fn pruned(rows: usize, cols: usize, density: f64, seed: u64) -> Result<Csr<f32>> {
    let keep = check_args(rows, cols, density)?;
    let total = rows * cols; // checked by check_args
    crate::mem::check(
        &format!("pruned:rows={rows},cols={cols},density={density} (dense weights and CSR)"),
        (4 * total as u64)
            .saturating_add(4 * rows as u64 + 4)
            .saturating_add(8 * keep as u64)
            .saturating_add(8 * rows as u64),
    )?;
    let weights = he_weights(rows, cols, seed);
    Ok(prune_dense(rows, cols, &weights, keep))
}

/// Checks [`pruned`]'s arguments; returns the number of entries to keep.
fn check_args(rows: usize, cols: usize, density: f64) -> Result<usize> {
    if rows == 0 || cols == 0 {
        return Err(Error::invalid(format!(
            "pruned: rows = {rows} and cols = {cols} must both be at least 1"
        )));
    }
    if !(density.is_finite() && density > 0.0 && density <= 1.0) {
        return Err(Error::invalid(format!(
            "pruned: density = {density} must lie in (0, 1] (the fraction of weights kept)"
        )));
    }
    let total = rows.checked_mul(cols).ok_or_else(|| {
        Error::invalid(format!(
            "pruned: rows · cols = {rows} · {cols} overflows the address space"
        ))
    })?;
    // At most `total`: density ≤ 1.
    let keep = ((density * total as f64).round() as usize).min(total);
    to_u32("pruned nnz (round(density · rows · cols))", keep)?;
    if total > PRUNED_MAX_ENTRIES {
        return Err(Error::invalid(format!(
            "pruned: rows · cols = {total} entries exceed the {PRUNED_MAX_ENTRIES} (2^31) \
             whose weights the generator materialises; use a smaller layer"
        )));
    }
    Ok(keep)
}

/// The dense row-major weights of [`pruned`]: N(0, 2 / cols), i.i.d.
fn he_weights(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    gaussians(
        rows * cols,
        (2.0 / cols as f64).sqrt(),
        seed,
        WEIGHT_STREAMS,
    )
}

/// `n` values N(0, σ²) as `f32`: chunk `c` of 2^16 values from stream
/// `first_stream + c` of the [`VALUES`] purpose.
fn gaussians(n: usize, sigma: f64, seed: u64, first_stream: u64) -> Vec<f32> {
    let mut out = vec![0f32; n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rng = chunk_rng(seed, VALUES, first_stream + c as u64);
            for pair in chunk.chunks_mut(2) {
                // Marsaglia's polar method: (u, v) uniform in the unit disc.
                let (u, v, s) = loop {
                    let u = 2.0 * unit_f64(&mut rng) - 1.0;
                    let v = 2.0 * unit_f64(&mut rng) - 1.0;
                    let s = u * u + v * v;
                    if s < 1.0 && s > 0.0 {
                        break (u, v, s);
                    }
                };
                let f = sigma * (-2.0 * ln(s) / s).sqrt();
                pair[0] = (u * f) as f32;
                if let Some(second) = pair.get_mut(1) {
                    *second = (v * f) as f32;
                }
            }
        });
    out
}

/// Natural logarithm of a positive normal `x` from IEEE basic operations
/// only, so the same on every machine (unlike the platform's `ln`):
/// `x = m · 2^e` with `m` in [√½, √2), `ln m = 2·atanh(t)`, `t = (m − 1) /
/// (m + 1)`, `|t| ≤ 0.172`, by its series to `t^23` (truncation below
/// 10^-17 relative).
fn ln(x: f64) -> f64 {
    debug_assert!(x.is_normal() && x > 0.0);
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1 << 52) - 1)) | (1023 << 52));
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let mut series = 1.0 / 23.0;
    for k in (0..11).rev() {
        series = series * t2 + 1.0 / (2 * k + 1) as f64;
    }
    e as f64 * std::f64::consts::LN_2 + 2.0 * t * series
}

/// `|w|` as an integer, ordered like the magnitudes (non-negative floats
/// order like their bits).
#[inline]
fn key(w: f32) -> u32 {
    w.to_bits() & 0x7fff_ffff
}

/// The threshold of keeping `keep ≥ 1` of `weights`: the key of the
/// `keep`-th largest magnitude, and how many of the weights at exactly that
/// key are kept (the others being larger).
fn threshold(weights: &[f32], keep: usize) -> (u32, usize) {
    debug_assert!(keep >= 1 && keep <= weights.len());
    let hist = weights
        .par_chunks(CHUNK)
        .fold(
            || vec![0usize; BUCKETS],
            |mut h, ws| {
                for &w in ws {
                    h[(key(w) >> BUCKET_SHIFT) as usize] += 1;
                }
                h
            },
        )
        .reduce(
            || vec![0usize; BUCKETS],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        );
    // The bucket of the threshold, from the largest magnitudes down.
    let mut above = 0;
    let mut bucket = BUCKETS - 1;
    while above + hist[bucket] < keep {
        above += hist[bucket];
        bucket -= 1; // keep ≤ weights.len(): stops at bucket 0 at the latest
    }
    let need = keep - above; // 1 ≤ need ≤ hist[bucket]
    let mut candidates: Vec<u32> = weights
        .par_iter()
        .map(|&w| key(w))
        .filter(|&k| (k >> BUCKET_SHIFT) as usize == bucket)
        .collect();
    let (_, &mut t, _) = candidates.select_nth_unstable_by(need - 1, |a, b| b.cmp(a));
    let greater = above + candidates.iter().filter(|&&k| k > t).count();
    (t, keep - greater)
}

/// Keeps the `keep` weights of largest magnitude of the dense row-major
/// `rows × cols` matrix `weights` (ties at the threshold: the earliest in
/// row-major order), as a CSR matrix with sorted columns.
fn prune_dense(rows: usize, cols: usize, weights: &[f32], keep: usize) -> Csr<f32> {
    debug_assert_eq!(weights.len(), rows * cols);
    if keep == 0 {
        return Csr::from_parts_unchecked(rows, cols, vec![0; rows + 1], vec![], vec![]);
    }
    let (t, mut ties_left) = threshold(weights, keep);
    // Per row: weights above the threshold, and at it.
    let counts: Vec<(u32, u32)> = weights
        .par_chunks(cols)
        .map(|row| {
            row.iter().fold((0, 0), |(gt, eq), &w| {
                let k = key(w);
                (gt + (k > t) as u32, eq + (k == t) as u32)
            })
        })
        .collect();
    // The ties each row keeps, in row order, and the row pointers.
    let mut ties = Vec::with_capacity(rows);
    let mut row_ptr = Vec::with_capacity(rows + 1);
    row_ptr.push(0u32);
    let mut total = 0u32;
    for &(gt, eq) in &counts {
        let take = (eq as usize).min(ties_left);
        ties_left -= take;
        ties.push(take as u32);
        // At most `keep`, which fits u32 (checked by the caller).
        total += gt + take as u32;
        row_ptr.push(total);
    }
    debug_assert_eq!(total as usize, keep);
    let mut col_idx = vec![0u32; keep];
    let mut values = vec![0f32; keep];
    crate::sparse::par_rows_mut(&row_ptr, &mut col_idx, &mut values, |rs, cs, vs| {
        let mut out = 0;
        for r in rs {
            let mut row_ties = ties[r];
            for (c, &w) in weights[r * cols..(r + 1) * cols].iter().enumerate() {
                let k = key(w);
                let kept = k > t || (k == t && row_ties > 0);
                if kept {
                    if k == t {
                        row_ties -= 1;
                    }
                    cs[out] = c as u32;
                    vs[out] = w;
                    out += 1;
                }
            }
        }
    });
    Csr::from_parts_unchecked(rows, cols, row_ptr, col_idx, values)
}

/// One pruned layer of a network: its weights (`rows` outputs × `cols`
/// inputs) and bias (one per output).
#[derive(Debug, Clone, PartialEq)]
pub struct PrunedLayer {
    /// The layer's name (`fc6`, …).
    pub name: &'static str,
    /// The pruned weights, from [`pruned`].
    pub matrix: Csr<f32>,
    /// The bias, `matrix.nrows()` values.
    pub bias: Vec<f32>,
}

/// AlexNet's fully connected layers as pruned by deep compression (Han et
/// al.): `(name, rows, cols, density)`, rows = outputs, cols = inputs, so a
/// layer's cols are the previous layer's rows (fc6's 9216 inputs are the
/// 256 × 6 × 6 outputs of the last pooling layer).
pub const ALEXNET_FC: [(&str, usize, usize, f64); 3] = [
    ("fc6", 4096, 9216, 0.09),
    ("fc7", 4096, 4096, 0.09),
    ("fc8", 1000, 4096, 0.25),
];

/// AlexNet's fully connected layers ([`ALEXNET_FC`]) pruned by magnitude:
/// layer `i` is `pruned(rows, cols, density, s)` with `s` a SplitMix64 mix
/// of `seed` and `i` (nearby seeds share no layer), and a bias of `rows`
/// values drawn i.i.d. from N(0, 0.01²) with the same `s` (from streams
/// apart from the weights').
/// 4096 · 9216 · 9% + 4096² · 9% + 1000 · 4096 · 25% ≈ 5.9M entries in
/// all; fc6's dense weights (151 MB) are the largest allocation.
///
/// # Errors
/// The memory budget ([`crate::mem::check`]).
pub fn alexnet_fc(seed: u64) -> Result<Vec<PrunedLayer>> {
    ALEXNET_FC
        .iter()
        .enumerate()
        .map(|(i, &(name, rows, cols, density))| {
            let s = layer_seed(seed, i);
            let matrix = pruned(rows, cols, density, s)?;
            crate::mem::check_elems::<f32>(&format!("{name} bias"), rows)?;
            let bias = gaussians(rows, BIAS_SIGMA, s, BIAS_STREAMS);
            Ok(PrunedLayer { name, matrix, bias })
        })
        .collect()
}

/// The seed of layer `index`: SplitMix64's mix of SplitMix64's mix of
/// `seed`, plus `index` (so nearby seeds and indices do not collide).
fn layer_seed(seed: u64, index: usize) -> u64 {
    splitmix64(splitmix64(seed).wrapping_add(index as u64))
}

/// SplitMix64's output function (of its state plus the golden gamma).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept entries are the dense weights at their positions, exactly
    /// `keep` of them, sorted, and no dropped weight is larger in magnitude
    /// than a kept one.
    fn check_pruning(rows: usize, cols: usize, dense: &[f32], m: &Csr<f32>, keep: usize) {
        assert_eq!((m.nrows(), m.ncols(), m.nnz()), (rows, cols, keep));
        m.check_canonical().unwrap();
        assert!(m.has_sorted_columns());
        let mut kept = vec![false; rows * cols];
        for r in 0..rows {
            let (cs, vs) = m.row(r);
            assert!(cs.windows(2).all(|w| w[0] < w[1]), "row {r}: {cs:?}");
            for (&c, &v) in cs.iter().zip(vs) {
                assert!((c as usize) < cols);
                assert_eq!(v.to_bits(), dense[r * cols + c as usize].to_bits());
                kept[r * cols + c as usize] = true;
            }
        }
        let min_kept = (0..rows * cols)
            .filter(|&i| kept[i])
            .map(|i| dense[i].abs())
            .fold(f32::INFINITY, f32::min);
        let max_dropped = (0..rows * cols)
            .filter(|&i| !kept[i])
            .map(|i| dense[i].abs())
            .fold(0f32, f32::max);
        assert!(min_kept >= max_dropped, "{min_kept} < {max_dropped}");
    }

    #[test]
    fn keeps_exactly_the_largest_magnitudes() {
        for (rows, cols, density, seed) in [
            (37, 53, 0.09, 1),
            (64, 300, 0.25, 7),
            (1, 1, 1.0, 3),
            (5, 7, 1.0, 3),
            (300, 700, 0.011, 2), // several chunks of 2^16 weights
            (10, 10, 0.004, 1),   // rounds to 0 entries
        ] {
            let m = pruned(rows, cols, density, seed).unwrap();
            let dense = he_weights(rows, cols, seed);
            let keep = (density * (rows * cols) as f64).round() as usize;
            check_pruning(rows, cols, &dense, &m, keep);
        }
    }

    #[test]
    fn ties_at_the_threshold_keep_the_earliest() {
        // Magnitudes 3, 2 (eight of them, both signs), 1: keeping 5 takes
        // the 3 and the first four 2s in row-major order.
        let dense = [
            1.0, -2.0, 3.0, 2.0, //
            2.0, -1.0, -2.0, 2.0, //
            -2.0, 2.0, 1.0, -2.0f32,
        ];
        let m = prune_dense(3, 4, &dense, 5);
        check_pruning(3, 4, &dense, &m, 5);
        assert_eq!(m.row_ptr(), &[0, 3, 5, 5]);
        assert_eq!(m.col_idx(), &[1, 2, 3, 0, 2]);
        assert_eq!(m.values(), &[-2.0, 3.0, 2.0, 2.0, -2.0]);
        // All equal: the first `keep` in row-major order.
        let dense = [0.5f32; 12];
        let m = prune_dense(4, 3, &dense, 7);
        assert_eq!(m.row_ptr(), &[0, 3, 6, 7, 7]);
        assert_eq!(m.col_idx(), &[0, 1, 2, 0, 1, 2, 0]);
        // Every count from 1 to all, with many ties.
        let dense: Vec<f32> = (0..60).map(|i| ((i * 7 % 5) as f32 - 2.0) * 0.25).collect();
        for keep in 0..=60 {
            check_pruning(6, 10, &dense, &prune_dense(6, 10, &dense, keep), keep);
        }
    }

    #[test]
    fn weights_follow_he_initialisation() {
        let (rows, cols) = (200, 800);
        let w = he_weights(rows, cols, 9);
        let n = w.len() as f64;
        let mean = w.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = w.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        let expected = 2.0 / cols as f64;
        assert!(mean.abs() < 0.002, "{mean}");
        assert!((var / expected - 1.0).abs() < 0.01, "{var} vs {expected}");
        // About 68.3% within one σ.
        let sigma = expected.sqrt() as f32;
        let within = w.iter().filter(|x| x.abs() < sigma).count() as f64 / n;
        assert!((within - 0.6827).abs() < 0.005, "{within}");
    }

    #[test]
    fn ln_matches_the_platform_logarithm() {
        for x in [
            1e-30,
            2.0f64.powi(-104),
            0.001,
            0.3,
            0.5,
            std::f64::consts::FRAC_1_SQRT_2,
            0.9999,
            1.0,
            1.5,
            2.0,
        ] {
            let (a, b) = (ln(x), x.ln());
            assert!(
                (a - b).abs() <= 4.0 * f64::EPSILON * b.abs().max(1.0),
                "{x}: {a} vs {b}"
            );
        }
    }

    #[test]
    fn deterministic_per_seed() {
        let a = pruned(70, 1000, 0.1, 5).unwrap();
        assert_eq!(a, pruned(70, 1000, 0.1, 5).unwrap());
        let b = pruned(70, 1000, 0.1, 6).unwrap();
        assert_eq!(b.nnz(), a.nnz());
        assert_ne!(a.col_idx(), b.col_idx());
        assert_ne!(a.values(), b.values());
        // Row lengths vary.
        let lens: Vec<_> = (0..a.nrows()).map(|r| a.row_range(r).len()).collect();
        assert!(lens.iter().min() < lens.iter().max(), "{lens:?}");
        // The same weights on one thread.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(a, pool.install(|| pruned(70, 1000, 0.1, 5)).unwrap());
    }

    #[test]
    fn bad_arguments_are_errors() {
        let bad = |rows, cols, density: f64, needle: &str| {
            let e = pruned(rows, cols, density, 1).unwrap_err().to_string();
            assert!(e.contains(needle), "{rows} {cols} {density}: {e}");
        };
        bad(0, 10, 0.5, "at least 1");
        bad(10, 0, 0.5, "at least 1");
        for d in [0.0, -0.1, 1.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            bad(10, 10, d, "(0, 1]");
        }
        bad(usize::MAX, 2, 0.5, "overflows");
        // 2^34 entries: the nonzero count does not fit u32.
        bad(1 << 17, 1 << 17, 1.0, "does not fit in u32");
        // Few entries, but too many weights to materialise.
        bad(1 << 17, 1 << 17, 1e-6, "2^31");
        bad(1 << 16, (1 << 15) + 1, 0.01, "2^31");
    }

    #[test]
    fn alexnet_shapes_chain() {
        for pair in ALEXNET_FC.windows(2) {
            assert_eq!(pair[1].2, pair[0].1, "{} → {}", pair[0].0, pair[1].0);
        }
        assert_eq!(ALEXNET_FC[0].2, 256 * 6 * 6);
        assert_eq!(ALEXNET_FC[2].1, 1000);
        assert_ne!(layer_seed(1, 0), layer_seed(1, 1));
        assert_ne!(layer_seed(1, 1), layer_seed(2, 0));
    }

    #[test]
    fn alexnet_fc_layers() {
        let layers = alexnet_fc(1).unwrap();
        assert_eq!(layers.len(), 3);
        for (layer, &(name, rows, cols, density)) in layers.iter().zip(&ALEXNET_FC) {
            let m = &layer.matrix;
            assert_eq!((layer.name, m.nrows(), m.ncols()), (name, rows, cols));
            let expected = density * (rows * cols) as f64;
            assert!(
                (m.nnz() as f64 - expected).abs() <= 0.5,
                "{name}: {}",
                m.nnz()
            );
            assert!(m.has_sorted_columns());
            assert_eq!(layer.bias.len(), rows);
            let rms = (layer.bias.iter().map(|b| (b * b) as f64).sum::<f64>() / rows as f64).sqrt();
            assert!(
                (rms / BIAS_SIGMA - 1.0).abs() < 0.1,
                "{name}: bias rms {rms}"
            );
        }
        for pair in layers.windows(2) {
            assert_eq!(pair[1].matrix.ncols(), pair[0].matrix.nrows());
        }
        assert_ne!(layers[1].bias[..1000], layers[2].bias[..]);
        // Layer 2 is `pruned` with its layer seed.
        let (_, rows, cols, density) = ALEXNET_FC[2];
        assert_eq!(
            layers[2].matrix,
            pruned(rows, cols, density, layer_seed(1, 2)).unwrap()
        );
    }
}
