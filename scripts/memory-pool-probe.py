#!/usr/bin/env python3
# Stream-ordered allocation cost on GPU 0 with the device pool's release threshold at 0
# (the driver's default: freed memory goes back at each synchronisation) and at its
# maximum (what warpfit sets: gpu/src/driver/memory_pool.rs). Each case allocates,
# clears and frees its buffers 5 times through the driver API (libcuda.so.1 only).
# Usage, on a GPU machine: python3 scripts/memory-pool-probe.py
import ctypes, time
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0: raise SystemExit(f"{what}: CUresult {r}")
ck(cu.cuInit(0), "init")
dev = ctypes.c_int(); ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "dev")
ctx = ctypes.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "ctx")
ck(cu.cuCtxSetCurrent(ctx), "cur")
stream = ctypes.c_void_p(); ck(cu.cuStreamCreate(ctypes.byref(stream), 1), "stream")
pool = ctypes.c_void_p(); ck(cu.cuDeviceGetDefaultMemPool(ctypes.byref(pool), dev), "pool")
def run(label, sizes, reps=5):
    ts = []
    for _ in range(reps):
        ck(cu.cuStreamSynchronize(stream), "sync")
        t = time.perf_counter()
        ptrs = []
        for s in sizes:
            p = ctypes.c_uint64()
            ck(cu.cuMemAllocAsync(ctypes.byref(p), ctypes.c_size_t(s), stream), "alloc")
            ck(cu.cuMemsetD8Async(p, ctypes.c_ubyte(0), ctypes.c_size_t(s), stream), "memset")
            ptrs.append(p)
        ck(cu.cuStreamSynchronize(stream), "sync")
        for p in ptrs:
            ck(cu.cuMemFreeAsync(p, stream), "free")
        ck(cu.cuStreamSynchronize(stream), "sync")
        ts.append((time.perf_counter() - t) * 1e3)
    ts.sort()
    print(f"{label}: median {ts[len(ts)//2]:.3f} ms of {reps} ({', '.join(f'{x:.2f}' for x in ts)})")
MiB = 1 << 20
cut = [134 * MiB, 64 * MiB, 64 * MiB, 200 * MiB, 16 * MiB, 64 * MiB, 8]  # one task cut of 2^24 rows
for thr in (0, (1 << 64) - 1):
    v = ctypes.c_uint64(thr)
    ck(cu.cuMemPoolSetAttribute(pool, 4, ctypes.byref(v)), "threshold")  # CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
    run(f"threshold {'max' if thr else 0}: a task cut's buffers (550 MiB in 7)", cut)
    run(f"threshold {'max' if thr else 0}: one 1 GiB buffer", [1024 * MiB])
    run(f"threshold {'max' if thr else 0}: 64 buffers of 1 MiB", [MiB] * 64)
