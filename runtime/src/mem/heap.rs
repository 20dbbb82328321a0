//! Heap accounting for the partitioner's memory measurements.
//!
//! Process RSS says little about a small input: the binary, its libraries,
//! thread stacks and the allocator's own arenas weigh more than the CSR of a
//! mesh of a few MB. What the partitioner itself costs is the heap it holds:
//! [`CountingAlloc`] is a global allocator over [`std::alloc::System`] that
//! keeps the number of bytes live (requested and not yet freed) and its high
//! mark, and a [`HeapMeter`] reads the high mark relative to what was live
//! when it started.
//!
//! What is counted: the sizes Rust asks the global allocator for (`Vec`,
//! `Box`, rayon's job structures, thread-local scratch arrays when they
//! grow), on every thread. What is not: the allocator's per-block overhead
//! and fragmentation, freed memory the allocator keeps, thread stacks,
//! memory-mapped files, and anything allocated outside Rust's global
//! allocator. A measurement is the most bytes that were live at once during
//! the window minus the bytes live at its start, so the caller's data (the
//! CSR being partitioned) is excluded and everything the partitioner
//! allocates, its result included, is counted.
//!
//! Install it in a binary with
//!
//! ```ignore
//! #[global_allocator]
//! static HEAP: warpfit_runtime::mem::CountingAlloc = warpfit_runtime::mem::CountingAlloc;
//! ```

use crate::{Error, Result};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Meters started so far: a meter whose window another one restarted knows it.
static STARTS: AtomicUsize = AtomicUsize::new(0);

/// A global allocator that forwards to [`System`] and counts live bytes and
/// their high mark (two relaxed atomic updates per allocation).
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

#[inline]
fn grew(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
    if !INSTALLED.load(Ordering::Relaxed) {
        INSTALLED.store(true, Ordering::Relaxed);
    }
}

#[inline]
fn shrank(bytes: usize) {
    LIVE.fetch_sub(bytes, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's layout and
// pointer unchanged; the counters are only bookkeeping on the side.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract of `GlobalAlloc::alloc`.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract of `GlobalAlloc::alloc_zeroed`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract of `GlobalAlloc::dealloc`.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract of `GlobalAlloc::realloc`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            let old = layout.size();
            if new_size >= old {
                grew(new_size - old);
            } else {
                shrank(old - new_size);
            }
        }
        p
    }
}

/// Bytes live on the heap now, when [`CountingAlloc`] is the global
/// allocator; an error naming the missing allocator otherwise.
pub fn live_heap_bytes() -> Result<u64> {
    installed()?;
    Ok(LIVE.load(Ordering::Relaxed) as u64)
}

fn installed() -> Result<()> {
    if INSTALLED.load(Ordering::Relaxed) {
        Ok(())
    } else {
        Err(Error::invalid(
            "heap accounting needs `CountingAlloc` as the #[global_allocator] of this binary",
        ))
    }
}

/// The heap high mark of a window of execution, relative to its start.
///
/// There is one high mark per process: a meter started while another is
/// running restarts the other's window (the other then reports an error),
/// and allocations of unrelated threads during the window are counted.
/// Start it where nothing else runs.
#[derive(Debug)]
pub struct HeapMeter {
    base: usize,
    id: usize,
}

impl HeapMeter {
    /// Starts a window: the high mark is reset to the bytes live now.
    /// Fails when [`CountingAlloc`] is not the global allocator.
    pub fn start() -> Result<Self> {
        installed()?;
        let id = STARTS.fetch_add(1, Ordering::Relaxed) + 1;
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        // An allocation racing with the store may have raised LIVE above
        // the reset mark: keep the mark at least at the live count.
        PEAK.fetch_max(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
        Ok(HeapMeter { base, id })
    }

    fn check(&self) -> Result<()> {
        if STARTS.load(Ordering::Relaxed) == self.id {
            Ok(())
        } else {
            Err(Error::invalid(
                "heap meter: another meter started during this one's window, the high mark is not this window's",
            ))
        }
    }

    /// Bytes live when the window started.
    pub fn base_bytes(&self) -> u64 {
        self.base as u64
    }

    /// Most bytes live at once since the start, minus those live at the
    /// start (0 when the heap never grew above its starting size); an error
    /// when another meter restarted the window.
    pub fn peak_bytes(&self) -> Result<u64> {
        self.check()?;
        Ok(PEAK.load(Ordering::Relaxed).saturating_sub(self.base) as u64)
    }

    /// Bytes live now minus those live at the start (0 when fewer).
    pub fn retained_bytes(&self) -> u64 {
        LIVE.load(Ordering::Relaxed).saturating_sub(self.base) as u64
    }
}
