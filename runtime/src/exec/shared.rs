use super::Fault;
use std::marker::PhantomData;

/// An output slice that parallel tasks write through, each at its own index.
///
/// `#[nested_reduce]` proves at compile time that a kernel reads and writes an
/// output only at its task index (the owner-computes rule), so tasks never touch
/// the same element and need no locks or atomics. This type carries that proof
/// from the macro to the executor: construction is safe, element access is
/// `unsafe` with exactly that contract.
pub struct SharedOut<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: access goes through the `unsafe` methods below, whose contract (one
// task per index) rules out data races; `T: Send` lets values cross threads.
unsafe impl<T: Send> Sync for SharedOut<'_, T> {}
unsafe impl<T: Send> Send for SharedOut<'_, T> {}

impl<'a, T: Copy> SharedOut<'a, T> {
    /// Borrows `slice` mutably for the duration of a launch.
    pub fn new(slice: &'a mut [T]) -> Self {
        SharedOut {
            ptr: slice.as_mut_ptr(),
            len: slice.len(),
            _borrow: PhantomData,
        }
    }

    /// Length of the underlying slice.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the underlying slice is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads element `i`, checked.
    ///
    /// # Safety
    /// No other thread may write element `i` during the launch: only the task
    /// that owns index `i` accesses it.
    #[inline]
    pub unsafe fn get(&self, i: usize, name: &'static str) -> Result<T, Fault> {
        if i < self.len {
            // SAFETY: in bounds; exclusive per the caller's contract.
            Ok(unsafe { *self.ptr.add(i) })
        } else {
            Err(Fault::index(name, i, self.len))
        }
    }

    /// Writes element `i`, checked.
    ///
    /// # Safety
    /// As for [`SharedOut::get`]: only the owner of index `i` accesses it.
    #[inline]
    pub unsafe fn set(&self, i: usize, v: T, name: &'static str) -> Result<(), Fault> {
        if i < self.len {
            // SAFETY: in bounds; exclusive per the caller's contract.
            unsafe { *self.ptr.add(i) = v };
            Ok(())
        } else {
            Err(Fault::index(name, i, self.len))
        }
    }
}
