//! The roots a device level order starts from: one row, or several
//! spread evenly over the rows so that a graph of long diameter is
//! numbered in fewer rounds (`levels.cuh`'s `start` numbers them so).

use warpfit_runtime::Result;

/// The roots a level order from `root` with `count` roots starts from, in
/// order: `(root + i · (n / count)) mod n` for `i < count` (`count` at
/// most `n`, at least 1), as `start` in levels.cuh numbers them.
///
/// # Errors
/// The memory budget of `count` roots.
pub fn spread_roots(n: usize, root: usize, count: usize) -> Result<Vec<usize>> {
    let n = n.max(1);
    let count = count.clamp(1, n);
    warpfit_runtime::mem::check_elems::<usize>("the spread roots", count)?;
    let step = n / count;
    // `i · step < n`: no sum overflows.
    Ok((0..count).map(|i| (root % n + i * step) % n).collect())
}

/// The roots of a level order: `count` rows [`spread_roots`] from `first`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Roots {
    pub first: usize,
    pub count: usize,
}

impl Roots {
    /// `count` roots spread from `first`; none is an error.
    pub(crate) fn spread(first: usize, count: usize) -> Result<Self> {
        if count == 0 {
            return Err(warpfit_runtime::Error::invalid("level order: no root"));
        }
        Ok(Roots { first, count })
    }
}

#[cfg(test)]
mod tests {
    /// Spread roots are distinct rows, `count` of them (clamped to 1..=n),
    /// `n / count` apart from `first`, wrapping past the last row.
    #[test]
    fn spread_roots_are_distinct_rows_evenly_apart() {
        use super::spread_roots;
        assert_eq!(spread_roots(10, 7, 3).unwrap(), vec![7, 0, 3]);
        assert_eq!(spread_roots(3, 1, 128).unwrap(), vec![1, 2, 0]);
        assert_eq!(spread_roots(5, 2, 0).unwrap(), vec![2]);
        for (n, count) in [(1000usize, 128usize), (1 << 20, 128), (129, 128), (7, 7)] {
            let mut r = spread_roots(n, 3 + n, count).unwrap();
            r.sort_unstable();
            r.dedup();
            assert_eq!(r.len(), count.min(n), "{n} rows, {count} roots");
            assert!(r.iter().all(|&v| v < n));
        }
        // Sizes past memory are an error, not an abort.
        assert!(spread_roots(usize::MAX, usize::MAX, usize::MAX).is_err());
    }
}
