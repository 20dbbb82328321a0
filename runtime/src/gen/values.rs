use crate::mem;
use crate::rng::{chunk_rng, unit_f64, VALUES};
use crate::Result;

/// Values in `[-1, 1)` for dense vectors (a right-hand side, an SpMV input),
/// deterministic for a seed on every machine: the runtime's one generator,
/// one ChaCha stream per chunk of 2^16 values. 53 random bits each, so the
/// `f32` conversion rounds like any other `f64` input.
pub fn random_values(n: usize, seed: u64) -> Result<Vec<f64>> {
    const CHUNK: usize = 1 << 16;
    let mut out = Vec::new();
    mem::try_reserve(&mut out, n, "random vector")?;
    for chunk in 0..n.div_ceil(CHUNK) {
        let mut rng = chunk_rng(seed, VALUES, chunk as u64);
        let len = CHUNK.min(n - chunk * CHUNK);
        out.extend((0..len).map(|_| unit_f64(&mut rng) * 2.0 - 1.0));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_in_range_deterministic_and_chunked() {
        let a = random_values(70_000, 5).unwrap();
        assert_eq!(a, random_values(70_000, 5).unwrap());
        assert_ne!(a, random_values(70_000, 6).unwrap());
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
        // A prefix is the same whatever the length.
        assert_eq!(&random_values(100, 5).unwrap()[..], &a[..100]);
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.02, "{mean}");
    }
}
