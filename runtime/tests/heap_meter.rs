//! The heap accounting of `runtime::mem`, alone in its binary: a meter's
//! window counts every thread's allocations, so no other test may run
//! beside this one (in the library's unit tests, a parallel test freeing
//! its data during the window made the lower bound below fail).

use warpfit_runtime::mem::{live_heap_bytes, CountingAlloc, HeapMeter};

#[global_allocator]
static HEAP: CountingAlloc = CountingAlloc;

#[test]
fn a_window_counts_what_it_allocates_and_frees() {
    let before = vec![7u8; 1 << 16];
    let meter = HeapMeter::start().unwrap();
    {
        let mut v: Vec<u32> = Vec::with_capacity(1 << 18);
        v.resize(1 << 18, 1);
        // Growth by realloc counts the difference.
        v.reserve_exact(1 << 19);
        assert!(v.iter().all(|&x| x == 1));
        let z = vec![0u64; 1 << 16];
        assert_eq!(z.len(), 1 << 16);
    }
    // 1 MiB + 2 MiB (realloc to 3 MiB) at once, then 0.5 MiB.
    let peak = meter.peak_bytes().unwrap();
    assert!(peak >= 3 << 20, "peak {peak}");
    // A second meter restarts the window: the first one says so.
    let second = HeapMeter::start().unwrap();
    assert!(meter.peak_bytes().is_err());
    assert!(second.peak_bytes().is_ok());
    assert!(meter.base_bytes() >= before.len() as u64);
    drop(before);
    assert!(live_heap_bytes().unwrap() > 0);
}
