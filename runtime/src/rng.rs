//! The one random number generator of the runtime: seeding and sampling for
//! the generators and for the partitioner's randomized bisection.
//!
//! Determinism contract: a generator's (or a bisection's) output depends only
//! on its parameters and seed, never on the machine, the thread count or the
//! `rand` version.
//! Every random number comes from a [`ChaCha8Rng`] keyed with the seed (its
//! little-endian bytes in the first 8 bytes of the 32-byte key, the rest zero)
//! and set to a *stream* that names the purpose and the chunk of work it
//! feeds. Chunks have fixed sizes, so parallel generation draws exactly the
//! numbers a sequential one would. Bounded integers and floats are derived
//! from raw `u32`/`u64` outputs by the formulas below, not by `rand`'s
//! distributions (whose algorithms may change between versions).

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Stream purposes (the top byte of the 64-bit stream id).
pub(crate) const EDGES: u64 = 0;
pub(crate) const PERMUTATION: u64 = 1;
pub(crate) const POINTS: u64 = 2;
pub(crate) const BISECTION: u64 = 3;
pub(crate) const VALUES: u64 = 4;

/// The generator for chunk `chunk` of work of kind `purpose`.
pub(crate) fn chunk_rng(seed: u64, purpose: u64, chunk: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream((purpose << 56) | (chunk & ((1 << 56) - 1)));
    rng
}

/// Uniform integer in `0..n` (`n > 0`) by Lemire's multiply-shift with
/// rejection: exact, no modulo bias.
#[inline]
pub(crate) fn below(rng: &mut ChaCha8Rng, n: u32) -> u32 {
    debug_assert!(n > 0);
    let threshold = n.wrapping_neg() % n;
    loop {
        let m = rng.next_u32() as u64 * n as u64;
        if (m as u32) >= threshold {
            return (m >> 32) as u32;
        }
    }
}

/// Uniform value in (0, 1] with 24 random bits: exactly representable, never
/// zero (so a generated entry is never an explicit zero).
#[inline]
pub(crate) fn unit_value(rng: &mut ChaCha8Rng) -> f32 {
    ((rng.next_u32() >> 8) + 1) as f32 * (1.0 / (1u32 << 24) as f32)
}

/// Uniform value in [0, 1) with 53 random bits.
#[inline]
pub(crate) fn unit_f64(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}
