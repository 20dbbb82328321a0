//! Shared arrays of push kernels: [`Atomic<T>`] and the atomic intrinsics.
//!
//! A push kernel writes elements that other tasks also write (the
//! destination of an edge, a histogram bin), so those arrays cannot be
//! `&mut [T]` under the owner-computes rule. They are `&[Atomic<T>]`
//! instead: read with [`Atomic::load`], written only through the
//! intrinsics below, each of which updates one element atomically and
//! returns the element's *previous* value (as CUDA's `atomicMin` & co. do,
//! so `if nd < atomic_min(&dist[u], nd)` asks "did this push lower it?").
//!
//! Every access is `Relaxed`: inside one round, tasks only combine values
//! with commutative operators and nobody relies on the order of two
//! updates to different elements; rounds are separated by a join (rayon)
//! or a kernel boundary (CUDA), which orders everything before it.
//!
//! Floating-point `min`/`max` follow [`f32::min`]/[`f32::max`]: a NaN
//! operand is ignored (the other one is kept), so a NaN never spreads into
//! a distance array. They and the float `add` run a compare-and-swap loop
//! on the bits; `cas` on floats compares bit patterns (so `-0.0` and `0.0`
//! differ and a NaN matches the same NaN), exactly as the device's
//! `atomicCAS` on the bits does.
//!
//! ```
//! use warpfit_runtime::worklist::{atomic_add, atomic_min, Atomic};
//!
//! let mut dist = vec![f32::INFINITY; 4];
//! let shared = Atomic::from_mut_slice(&mut dist);
//! assert_eq!(atomic_min(&shared[2], 1.5), f32::INFINITY); // lowered it
//! assert_eq!(atomic_min(&shared[2], 3.0), 1.5); // did not
//! assert_eq!(atomic_add(&shared[0], 2.0), f32::INFINITY);
//! assert_eq!(dist, [f32::INFINITY, f32::INFINITY, 1.5, f32::INFINITY]);
//! ```

use std::fmt;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};

mod sealed {
    /// The per-type machinery behind [`super::AtomicScalar`]; private so
    /// that the set of element types stays the one the device library has
    /// atomics for.
    pub trait Sealed: Copy + Sized {
        /// The standard atomic that stores the value (its bits for floats).
        type Cell: Send + Sync;
        fn cell(v: Self) -> Self::Cell;
        fn load(c: &Self::Cell) -> Self;
        fn store(c: &Self::Cell, v: Self);
        fn into_inner(c: Self::Cell) -> Self;
        /// `compare_exchange_weak` on the bits: `Ok(previous)` when stored.
        fn cas_weak(c: &Self::Cell, current: Self, new: Self) -> Result<Self, Self>;
        /// The strong compare-and-swap; returns the previous value.
        fn cas(c: &Self::Cell, current: Self, new: Self) -> Self;
        /// Bitwise identity (floats: same bits).
        fn same(a: Self, b: Self) -> bool;
        fn min(a: Self, b: Self) -> Self;
        fn max(a: Self, b: Self) -> Self;
        /// Wrapping for integers, IEEE addition for floats.
        fn add(a: Self, b: Self) -> Self;
        /// A single hardware add where the type has one (integers).
        fn fetch_add(c: &Self::Cell, v: Self) -> Option<Self>;
    }

    /// Integer-only operations.
    pub trait SealedInt: Sealed {
        fn fetch_or(c: &Self::Cell, v: Self) -> Self;
    }
}

/// An element type of a shared array: `u32`, `i32`, `u64`, `i64`, `f32`,
/// `f64` (the types the device has atomics for). Sealed.
pub trait AtomicScalar:
    sealed::Sealed + Copy + Send + Sync + PartialOrd + fmt::Debug + Default + 'static
{
    /// The type's name as kernels write it (`"f32"`).
    const NAME: &'static str;
}

/// The integer element types, the ones [`atomic_or`] applies to. Sealed.
pub trait AtomicInt: AtomicScalar + sealed::SealedInt {}

macro_rules! int_scalar {
    ($t:ty, $cell:ty) => {
        impl sealed::Sealed for $t {
            type Cell = $cell;
            #[inline]
            fn cell(v: Self) -> $cell {
                <$cell>::new(v)
            }
            #[inline]
            fn load(c: &$cell) -> Self {
                c.load(Relaxed)
            }
            #[inline]
            fn store(c: &$cell, v: Self) {
                c.store(v, Relaxed)
            }
            #[inline]
            fn into_inner(c: $cell) -> Self {
                c.into_inner()
            }
            #[inline]
            fn cas_weak(c: &$cell, current: Self, new: Self) -> Result<Self, Self> {
                c.compare_exchange_weak(current, new, Relaxed, Relaxed)
            }
            #[inline]
            fn cas(c: &$cell, current: Self, new: Self) -> Self {
                match c.compare_exchange(current, new, Relaxed, Relaxed) {
                    Ok(v) | Err(v) => v,
                }
            }
            #[inline]
            fn same(a: Self, b: Self) -> bool {
                a == b
            }
            #[inline]
            fn min(a: Self, b: Self) -> Self {
                Ord::min(a, b)
            }
            #[inline]
            fn max(a: Self, b: Self) -> Self {
                Ord::max(a, b)
            }
            #[inline]
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            #[inline]
            fn fetch_add(c: &$cell, v: Self) -> Option<Self> {
                Some(c.fetch_add(v, Relaxed))
            }
        }
        impl sealed::SealedInt for $t {
            #[inline]
            fn fetch_or(c: &$cell, v: Self) -> Self {
                c.fetch_or(v, Relaxed)
            }
        }
        impl AtomicScalar for $t {
            const NAME: &'static str = stringify!($t);
        }
        impl AtomicInt for $t {}
    };
}

macro_rules! float_scalar {
    ($t:ty, $cell:ty) => {
        impl sealed::Sealed for $t {
            type Cell = $cell;
            #[inline]
            fn cell(v: Self) -> $cell {
                <$cell>::new(v.to_bits())
            }
            #[inline]
            fn load(c: &$cell) -> Self {
                <$t>::from_bits(c.load(Relaxed))
            }
            #[inline]
            fn store(c: &$cell, v: Self) {
                c.store(v.to_bits(), Relaxed)
            }
            #[inline]
            fn into_inner(c: $cell) -> Self {
                <$t>::from_bits(c.into_inner())
            }
            #[inline]
            fn cas_weak(c: &$cell, current: Self, new: Self) -> Result<Self, Self> {
                c.compare_exchange_weak(current.to_bits(), new.to_bits(), Relaxed, Relaxed)
                    .map(<$t>::from_bits)
                    .map_err(<$t>::from_bits)
            }
            #[inline]
            fn cas(c: &$cell, current: Self, new: Self) -> Self {
                match c.compare_exchange(current.to_bits(), new.to_bits(), Relaxed, Relaxed) {
                    Ok(v) | Err(v) => <$t>::from_bits(v),
                }
            }
            #[inline]
            fn same(a: Self, b: Self) -> bool {
                a.to_bits() == b.to_bits()
            }
            #[inline]
            fn min(a: Self, b: Self) -> Self {
                <$t>::min(a, b)
            }
            #[inline]
            fn max(a: Self, b: Self) -> Self {
                <$t>::max(a, b)
            }
            #[inline]
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline]
            fn fetch_add(_: &$cell, _: Self) -> Option<Self> {
                None
            }
        }
        impl AtomicScalar for $t {
            const NAME: &'static str = stringify!($t);
        }
    };
}

int_scalar!(u32, AtomicU32);
int_scalar!(i32, AtomicI32);
int_scalar!(u64, AtomicU64);
int_scalar!(i64, AtomicI64);
float_scalar!(f32, AtomicU32);
float_scalar!(f64, AtomicU64);

// `Atomic::from_mut_slice` reinterprets `&mut [T]` as `&[Atomic<T>]`: sound
// only where each standard atomic has its value type's size and alignment.
// That holds on every 64-bit target warpfit runs on; on a target where it
// does not (32-bit x86 aligns `u64` to 4 but `AtomicU64` to 8) this crate
// refuses to build instead of handing out misaligned atomics.
const _: () = {
    use std::mem::{align_of, size_of};
    assert!(
        size_of::<AtomicU32>() == size_of::<u32>() && align_of::<AtomicU32>() == align_of::<u32>()
    );
    assert!(
        size_of::<AtomicI32>() == size_of::<i32>() && align_of::<AtomicI32>() == align_of::<i32>()
    );
    assert!(
        size_of::<AtomicU64>() == size_of::<u64>() && align_of::<AtomicU64>() == align_of::<u64>()
    );
    assert!(
        size_of::<AtomicI64>() == size_of::<i64>() && align_of::<AtomicI64>() == align_of::<i64>()
    );
    assert!(
        size_of::<AtomicU32>() == size_of::<f32>() && align_of::<AtomicU32>() == align_of::<f32>()
    );
    assert!(
        size_of::<AtomicU64>() == size_of::<f64>() && align_of::<AtomicU64>() == align_of::<f64>()
    );
};

/// One element of a shared array: a `T` that concurrent tasks update with
/// the atomic intrinsics. Same size and alignment as `T`
/// (`#[repr(transparent)]` over the standard atomic of `T`'s bits).
#[repr(transparent)]
pub struct Atomic<T: AtomicScalar>(T::Cell);

impl<T: AtomicScalar> Atomic<T> {
    /// An element holding `v`.
    #[inline]
    pub fn new(v: T) -> Self {
        Atomic(T::cell(v))
    }

    /// The current value (a `Relaxed` load).
    #[inline]
    pub fn load(&self) -> T {
        T::load(&self.0)
    }

    /// Replaces the value (a `Relaxed` store).
    #[inline]
    pub fn store(&self, v: T) {
        T::store(&self.0, v)
    }

    /// The value, consuming the element.
    #[inline]
    pub fn into_inner(self) -> T {
        T::into_inner(self.0)
    }

    /// Views a plain array as a shared one for as long as it is borrowed.
    ///
    /// Sound because `Atomic<T>` is `#[repr(transparent)]` over the standard
    /// atomic of `T`, whose size and alignment equal `T`'s (checked at
    /// compile time), and because the `&mut` borrow guarantees nothing else
    /// reads or writes the elements non-atomically while the view lives.
    ///
    /// ```
    /// use warpfit_runtime::worklist::{atomic_max, Atomic};
    /// let mut level = vec![0u32; 3];
    /// atomic_max(&Atomic::from_mut_slice(&mut level)[1], 7);
    /// assert_eq!(level, [0, 7, 0]);
    /// ```
    #[inline]
    pub fn from_mut_slice(slice: &mut [T]) -> &[Atomic<T>] {
        // SAFETY: see above: same layout, exclusive borrow for the lifetime.
        unsafe { std::slice::from_raw_parts(slice.as_mut_ptr().cast::<Atomic<T>>(), slice.len()) }
    }

    /// The plain values of an array of elements that nothing else can
    /// reach (the `&mut` borrow): the inverse of [`Atomic::from_mut_slice`].
    #[inline]
    pub fn get_mut_slice(slice: &mut [Atomic<T>]) -> &mut [T] {
        // SAFETY: same layout; the exclusive borrow rules out atomic access
        // from anywhere else while the plain view lives.
        unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr().cast::<T>(), slice.len()) }
    }
}

impl<T: AtomicScalar> Default for Atomic<T> {
    fn default() -> Self {
        Atomic::new(T::default())
    }
}

impl<T: AtomicScalar> From<T> for Atomic<T> {
    fn from(v: T) -> Self {
        Atomic::new(v)
    }
}

impl<T: AtomicScalar> fmt::Debug for Atomic<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.load(), f)
    }
}

/// Applies `op(old, v)` by a compare-and-swap loop; skips the write when
/// the result has `old`'s bits (no cache line is taken for a push that
/// does not improve the element). Returns the previous value.
#[inline]
fn update<T: AtomicScalar>(a: &Atomic<T>, v: T, op: impl Fn(T, T) -> T) -> T {
    let mut old = a.load();
    loop {
        let new = op(old, v);
        if T::same(new, old) {
            return old;
        }
        match T::cas_weak(&a.0, old, new) {
            Ok(prev) => return prev,
            Err(seen) => old = seen,
        }
    }
}

/// `*a = min(*a, v)` atomically; returns the previous value. Floats follow
/// [`f32::min`]: a NaN operand is ignored.
#[inline]
pub fn atomic_min<T: AtomicScalar>(a: &Atomic<T>, v: T) -> T {
    update(a, v, T::min)
}

/// `*a = max(*a, v)` atomically; returns the previous value. Floats follow
/// [`f32::max`]: a NaN operand is ignored.
#[inline]
pub fn atomic_max<T: AtomicScalar>(a: &Atomic<T>, v: T) -> T {
    update(a, v, T::max)
}

/// `*a += v` atomically (integers wrap, floats add); returns the previous
/// value.
#[inline]
pub fn atomic_add<T: AtomicScalar>(a: &Atomic<T>, v: T) -> T {
    match T::fetch_add(&a.0, v) {
        Some(prev) => prev,
        None => {
            // Floats: a CAS loop that always writes (x + 0.0 may change -0.0).
            let mut old = a.load();
            loop {
                match T::cas_weak(&a.0, old, T::add(old, v)) {
                    Ok(prev) => return prev,
                    Err(seen) => old = seen,
                }
            }
        }
    }
}

/// `*a |= v` atomically; returns the previous value. Integers only.
#[inline]
pub fn atomic_or<T: AtomicInt>(a: &Atomic<T>, v: T) -> T {
    T::fetch_or(&a.0, v)
}

/// Stores `new` if the element equals `current` (bit patterns for floats);
/// returns the previous value either way, so the store happened exactly
/// when the result equals `current`. The building block of any other
/// read-modify-write: a `#[device_fn]` operator runs in a loop around it.
#[inline]
pub fn atomic_cas<T: AtomicScalar>(a: &Atomic<T>, current: T, new: T) -> T {
    T::cas(&a.0, current, new)
}

/// `*a = f(*a, v)` atomically, by a compare-and-swap loop (the write is
/// skipped when `f` returns the element's own bits); returns the previous
/// value. Any operator, such as a `#[device_fn]`: the loop calls `f` again
/// whenever another task changed the element in between.
///
/// ```
/// use warpfit_runtime::worklist::{atomic_apply, Atomic};
/// let a = Atomic::new(6u32);
/// assert_eq!(atomic_apply(&a, 4, |x, y| x.min(y) + 1), 6);
/// assert_eq!(a.load(), 5);
/// ```
#[inline]
pub fn atomic_apply<T: AtomicScalar>(a: &Atomic<T>, v: T, f: impl Fn(T, T) -> T) -> T {
    update(a, v, f)
}

/// [`atomic_apply`] with a fallible operator (the CPU twin's device
/// functions report faults): the first error ends the loop, the element
/// unchanged by that attempt.
#[inline]
pub fn try_atomic_apply<T: AtomicScalar, E>(
    a: &Atomic<T>,
    v: T,
    f: impl Fn(T, T) -> Result<T, E>,
) -> Result<T, E> {
    let mut old = a.load();
    loop {
        let new = f(old, v)?;
        if T::same(new, old) {
            return Ok(old);
        }
        match T::cas_weak(&a.0, old, new) {
            Ok(prev) => return Ok(prev),
            Err(seen) => old = seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rayon::prelude::*;

    #[test]
    fn layout_matches_the_plain_type() {
        use std::mem::{align_of, size_of};
        assert_eq!(size_of::<Atomic<f64>>(), size_of::<f64>());
        assert_eq!(align_of::<Atomic<f64>>(), align_of::<f64>());
        assert_eq!(size_of::<Atomic<i32>>(), 4);
        assert_eq!(align_of::<Atomic<u64>>(), align_of::<u64>());
    }

    #[test]
    fn intrinsics_return_the_previous_value() {
        let a = Atomic::new(10u32);
        assert_eq!(atomic_min(&a, 12), 10);
        assert_eq!(atomic_min(&a, 3), 10);
        assert_eq!(atomic_max(&a, 2), 3);
        assert_eq!(atomic_max(&a, 9), 3);
        assert_eq!(atomic_add(&a, u32::MAX), 9); // wraps
        assert_eq!(a.load(), 8);
        assert_eq!(atomic_or(&a, 0b11), 8);
        assert_eq!(atomic_cas(&a, 0, 1), 11); // no store
        assert_eq!(atomic_cas(&a, 11, 1), 11); // stored
        assert_eq!(a.into_inner(), 1);
        let s = Atomic::new(-4i64);
        assert_eq!(atomic_add(&s, -4), -4);
        assert_eq!(atomic_min(&s, i64::MIN), -8);
        assert_eq!(s.load(), i64::MIN);
    }

    #[test]
    fn float_min_max_ignore_nan_like_f32_min() {
        let a = Atomic::new(f32::NAN);
        assert!(atomic_min(&a, 2.0).is_nan());
        assert_eq!(a.load(), 2.0);
        assert_eq!(atomic_min(&a, f32::NAN), 2.0);
        assert_eq!(a.load(), 2.0);
        assert_eq!(atomic_max(&a, f32::NAN), 2.0);
        assert_eq!(atomic_max(&a, f32::INFINITY), 2.0);
        assert_eq!(a.load(), f32::INFINITY);
        let d = Atomic::new(1.0f64);
        assert_eq!(atomic_add(&d, 0.5), 1.0);
        assert_eq!(d.load(), 1.5);
        // CAS compares bits: 0.0 is not -0.0.
        let z = Atomic::new(-0.0f64);
        assert_eq!(atomic_cas(&z, 0.0, 1.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(z.load().to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn views_write_through_to_the_plain_array() {
        let mut v = vec![5i32, 6, 7];
        let shared = Atomic::from_mut_slice(&mut v);
        (0..1000).into_par_iter().for_each(|i| {
            atomic_add(&shared[i % 3], 1);
        });
        assert_eq!(v, [5 + 334, 6 + 333, 7 + 333]);
        let mut cells: Vec<Atomic<u64>> = (0..3).map(Atomic::new).collect();
        Atomic::get_mut_slice(&mut cells)[2] = 40;
        assert_eq!(cells[2].load(), 40);
        assert_eq!(format!("{:?}", cells[1]), "1");
    }

    /// f32 values with NaNs, infinities and both zeros well represented.
    fn f32_value() -> impl Strategy<Value = f32> {
        prop_oneof![
            Just(f32::NAN),
            Just(f32::INFINITY),
            Just(f32::NEG_INFINITY),
            Just(0.0f32),
            Just(-0.0f32),
            (-1000i32..1000).prop_map(|i| i as f32 / 8.0),
            any::<f32>(),
        ]
    }

    /// The same value up to the sign of a zero result, which
    /// IEEE minNum/maxNum (and so `f32::min`) leave unspecified; NaN
    /// equals NaN.
    fn same_value(a: f32, b: f32) -> bool {
        (a.is_nan() && b.is_nan()) || a == b
    }

    proptest! {
        #[test]
        fn sequential_float_updates_equal_f32_min_max(
            start in f32_value(),
            ops in proptest::collection::vec((any::<bool>(), f32_value()), 0..40)
        ) {
            let a = Atomic::new(start);
            let mut want = start;
            for (is_min, v) in ops {
                let prev = if is_min { atomic_min(&a, v) } else { atomic_max(&a, v) };
                prop_assert!(same_value(prev, want), "previous {prev} != {want}");
                want = if is_min { want.min(v) } else { want.max(v) };
                prop_assert!(same_value(a.load(), want), "value {} != {want}", a.load());
            }
        }

        #[test]
        fn concurrent_min_max_add_equal_the_sequential_fold(
            xs in proptest::collection::vec(-1000i32..1000, 1..400),
            fs in proptest::collection::vec(f32_value(), 1..200)
        ) {
            let lo = Atomic::new(i32::MAX);
            let hi = Atomic::new(i32::MIN);
            let sum = Atomic::new(0i32);
            let bits = Atomic::new(0u32);
            xs.par_iter().for_each(|&x| {
                atomic_min(&lo, x);
                atomic_max(&hi, x);
                atomic_add(&sum, x);
                atomic_or(&bits, 1u32 << (x.rem_euclid(32)));
            });
            prop_assert_eq!(lo.load(), *xs.iter().min().unwrap());
            prop_assert_eq!(hi.load(), *xs.iter().max().unwrap());
            prop_assert_eq!(sum.load(), xs.iter().fold(0i32, |a, &b| a.wrapping_add(b)));
            prop_assert_eq!(bits.load(), xs.iter().fold(0u32, |a, &x| a | 1 << x.rem_euclid(32)));
            // Float min/max are commutative and associative once NaNs are
            // ignored: any interleaving gives the sequential fold.
            let fmin = Atomic::new(f32::NAN);
            let fmax = Atomic::new(f32::NAN);
            fs.par_iter().for_each(|&f| {
                atomic_min(&fmin, f);
                atomic_max(&fmax, f);
            });
            let want_min = fs.iter().fold(f32::NAN, |a, &b| a.min(b));
            let want_max = fs.iter().fold(f32::NAN, |a, &b| a.max(b));
            prop_assert!(same_value(fmin.load(), want_min));
            prop_assert!(same_value(fmax.load(), want_max));
            // Float add of small integers is exact in any order.
            let fsum = Atomic::new(0.0f64);
            xs.par_iter().for_each(|&x| { atomic_add(&fsum, f64::from(x)); });
            prop_assert_eq!(fsum.load(), xs.iter().map(|&x| f64::from(x)).sum::<f64>());
        }

        #[test]
        fn apply_folds_every_operand(xs in proptest::collection::vec(0u32..1000, 1..300)) {
            // A non-commutative-looking but order-free operator: the max of
            // x and v, plus nothing; and a fallible one that never fails.
            let a = Atomic::new(0u32);
            xs.par_iter().for_each(|&x| { atomic_apply(&a, x, |p, v| p.max(v)); });
            prop_assert_eq!(a.load(), *xs.iter().max().unwrap());
            let b = Atomic::new(0u64);
            xs.par_iter().for_each(|&x| {
                let r: Result<u64, ()> = try_atomic_apply(&b, u64::from(x), |p, v| Ok(p + v));
                r.unwrap();
            });
            prop_assert_eq!(b.load(), xs.iter().map(|&x| u64::from(x)).sum::<u64>());
            let e: Result<u64, &str> = try_atomic_apply(&b, 1, |_, _| Err("no"));
            prop_assert_eq!(e, Err("no"));
        }

        #[test]
        fn cas_counts_every_increment(n in 1usize..2000) {
            // A CAS-loop increment: no update is lost under contention.
            let c = Atomic::new(0u64);
            (0..n).into_par_iter().for_each(|_| {
                let mut old = c.load();
                loop {
                    let prev = atomic_cas(&c, old, old + 1);
                    if prev == old { break; }
                    old = prev;
                }
            });
            prop_assert_eq!(c.load(), n as u64);
        }
    }
}
