//! The CUDA that `#[nested_reduce]` and `#[device_fn]` generate compiles with
//! NVRTC against the device library, for every expression form, type and
//! method of the kernel language. Needs only NVRTC, no GPU: skipped when
//! NVRTC cannot be loaded, except under `CI=true`, where that fails.

mod columns_common;
mod generic_common;
mod push_common;
mod tuple_common;

use warpfit::__private::compile::{
    compile_uncached, entry_point_unit, translation_unit, worklist_unit, Arch,
};
use warpfit::__private::{IndexEncoding, KernelSpec};
use warpfit::gpu::probe::{self, Library};
use warpfit::prelude::*;

#[nested_reduce]
pub fn spmv(row: usize, row_ptr: &[u32], col: &[u32], val: &[f32], x: &[f32], y: &mut [f32]) {
    let lo = row_ptr[row] as usize;
    let hi = row_ptr[row + 1] as usize;
    y[row] = (lo..hi)
        .map(|k| val[k] * x[col[k] as usize])
        .fold(0.0, |a, b| a + b);
}

#[nested_reduce]
pub fn relax(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| dist[src[e] as usize] + w[e])
        .fold(dist[v], f32::min);
}

#[device_fn]
pub fn sq(a: f64) -> f64 {
    a * a
}

#[device_fn]
pub fn hyp(a: f64, b: f64) -> f64 {
    let s: f64 = sq(a) + sq(b);
    s.sqrt()
}

#[device_fn]
pub fn idiv(a: i64, b: i64) -> i64 {
    a / b % 7
}

#[device_fn]
pub fn umax(a: u64, b: u64) -> u64 {
    a.max(b)
}

/// Every expression form on every type; compiled, not run. Deliberately
/// redundant (`min` then `max` then `clamp`, …), hence the lint allowance.
#[nested_reduce]
#[allow(clippy::all)]
pub fn every_form(
    t: usize,
    ptr: &[u32],
    f: &[f32],
    d: &[f64],
    i: &[i32],
    u: &[u32],
    l: &[i64],
    q: &[u64],
    b: &[u8],
    m: &[bool],
    sf: f32,
    si: i32,
    sb: bool,
    su8: u8,
    of: &mut [f32],
    od: &mut [f64],
    oi: &mut [i32],
    ou: &mut [u32],
    ol: &mut [i64],
    oq: &mut [u64],
    ob: &mut [u8],
    om: &mut [bool],
) {
    let lo = ptr[t] as usize;
    let hi = ptr[t + 1] as usize;
    let int = (hi - lo) as i32;
    let float = sf * 0.5;
    let x = (lo..hi)
        .map(|k| {
            let a = f[k];
            let c = d[k];
            let v = if m[k] && !sb || a > float {
                a.sqrt() + a.exp() - a.ln() * a.powi(2) / a.powf(0.5)
            } else {
                a.mul_add(2.0, 1.0).floor().ceil().round().trunc()
            };
            let w = v.sin()
                + v.cos()
                + v.tanh()
                + v.exp2()
                + v.log2()
                + v.log10()
                + v.signum()
                + v.abs();
            let w = w + v.min(1.0).max(-1.0).clamp(0.0, 0.5) + if v.is_nan() { 1.0 } else { -v };
            let z =
                hyp(c, c * 0.5) + c % 3.0 + f64::INFINITY.min(f64::MAX) - f64::EPSILON * f64::MIN;
            let cs = (i[k] as f32)
                + (u[k] as f32)
                + (l[k] as f32)
                + (q[k] as f32)
                + (b[k] as f32)
                + ((m[k] as u8) as f32);
            w + (z as f32) + cs + f32::INFINITY.min(f32::MAX) + f32::EPSILON
                - f32::NAN.max(f32::MIN)
                + f32::NEG_INFINITY.max(0.0)
                + (int as f32)
        })
        .fold(sf, |p, r| p + r);
    let y = {
        let h = x * 2.0;
        h - 1.0
    };
    of[t] = y;
    of[t] += 1.0;
    of[t] -= 1.0;
    of[t] *= 2.0;
    of[t] /= 2.0;
    of[t] %= 1000.0;
    od[t] = (y as f64) + hyp(1.0, 2.0);
    let ii = i[t];
    oi[t] = ((si * 3 - ii / 2 % 5) << 3 >> 1u8 & 0xff
        | 1 ^ -ii.abs().min(i32::MAX).max(i32::MIN).clamp(-5, 5).pow(2))
        + !ii;
    oi[t] <<= 1;
    oi[t] >>= 1;
    oi[t] &= 7;
    oi[t] |= 8;
    oi[t] ^= 2;
    oi[t] %= 3;
    ou[t] = (u[t] / 3 % 7).pow(2).min(u32::MAX) + (sb as u32) + !u[t];
    if ou[t] > 10 {
        ol[t] = idiv(l[t], i64::MIN) * -1 - (l[t] << 63u32);
    } else if sb {
        ol[t] = i64::MAX;
    } else {
        ol[t] = -9_223_372_036_854_775_808;
    }
    oq[t] = umax(q[t], u64::MAX) + (t as u64) * 18_446_744_073_709_551_615;
    oq[t] >>= (t as u64) + 65;
    ob[t] = (su8 << 2)
        + !b[t]
        + (b[t] & 0x0f)
        + (b[t] ^ 1u8)
        + (b[t] | su8)
        + u8::MAX
        + ((1.0e9f32) as u8);
    om[t] = (m[t] & sb | !sb) ^ (ob[t] == u8::MIN) || m[t] != sb && b[t] < su8;
}

/// The PageRank pull step, with scalars.
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn pagerank(
    v: usize,
    ptr: &[u32],
    src: &[u32],
    rank: &[f32],
    inv_deg: &[f32],
    base: f32,
    damping: f32,
    next: &mut [f32],
) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = base
        + damping
            * (lo..hi)
                .map(|e| rank[src[e] as usize] * inv_deg[src[e] as usize])
                .fold(0.0, |a, b| a + b);
}

/// Prologue bindings read in the map, the init and the epilogue (`ctx_t`),
/// an integer min reduce, a u8 accumulator, a bool accumulator.
#[nested_reduce]
pub fn ctx_use(t: usize, ptr: &[u32], w: &[u32], y: &mut [u32], a: &mut [bool]) {
    let lo = ptr[t] as usize;
    let hi = ptr[t + 1] as usize;
    let bias = w[lo.min(hi)] + 1;
    let m = (lo..hi).map(|k| w[k] + bias).fold(bias * 2, u32::min);
    y[t] = m + bias;
    a[t] = true;
}

#[nested_reduce]
pub fn u8_max(t: usize, ptr: &[u32], w: &[u32], z: &mut [u8]) {
    let lo = ptr[t] as usize;
    let hi = ptr[t + 1] as usize;
    z[t] = (lo..hi).map(|k| w[k] as u8).fold(0, |p, r| p.max(r));
}

#[nested_reduce]
pub fn any_set(t: usize, ptr: &[u32], m: &[bool], a: &mut [bool]) {
    let lo = ptr[t] as usize;
    let hi = ptr[t + 1] as usize;
    a[t] = (lo..hi).map(|k| m[k]).fold(false, |p, r| p || r);
}

#[nested_reduce]
pub fn any_below(t: usize, ptr: &[u32], w: &[f32], cut: f32, a: &mut [bool]) {
    let lo = ptr[t] as usize;
    let hi = ptr[t + 1] as usize;
    a[t] = (lo..hi).any(|k| w[k] < cut);
}

#[nested_reduce]
pub fn all_even(t: usize, ptr: &[u32], src: &[u32], x: &[u64], z: &mut [u32]) {
    let lo = ptr[t] as usize;
    let hi = ptr[t + 1] as usize;
    let even = (lo..hi).all(|k| x[src[k] as usize] % 2 == 0);
    z[t] = if even { 1 } else { 0 };
}

#[device_fn]
pub fn max_plus(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

#[nested_reduce]
pub fn longest(v: usize, ptr: &[u32], src: &[u32], w: &[f32], dist: &[f32], next: &mut [f32]) {
    let lo = ptr[v] as usize;
    let hi = ptr[v + 1] as usize;
    next[v] = (lo..hi)
        .map(|e| dist[src[e] as usize] + w[e])
        .fold(f32::NEG_INFINITY, max_plus);
}

#[device_fn]
pub fn narrow(a: f32, b: u8, c: i64) -> f32 {
    a + (b as f32) + (c as f32)
}

/// Unsuffixed literal arguments typed by the device function's parameters
/// (`f32`, `u8`, `i64`) and an output written through a copy of the task.
#[nested_reduce]
pub fn literal_args(t: usize, ptr: &[u32], x: &[f32], y: &mut [f32]) {
    let r = t;
    let lo = ptr[r] as usize;
    let hi = ptr[t + 1] as usize;
    y[r] = (lo..hi)
        .map(|k| narrow(x[k], 200, -3))
        .fold(0.0f32, |a, b| a + b);
    y[t] += narrow(0.1, 0, 9_000_000_000);
}

/// A per-task map (no nested pattern): the functor's fold is empty.
#[nested_reduce]
#[allow(clippy::assign_op_pattern)]
pub fn axpy(i: usize, a: f32, x: &[f32], y: &mut [f32]) {
    y[i] = a * x[i] + y[i];
}

/// A per-task map with `let`s, a neighbour read, an `if` statement over two
/// outputs, a device function call and integer division (a fault check).
#[nested_reduce]
pub fn map_forms(i: usize, x: &[f64], k: &[i32], scale: f64, y: &mut [f64], q: &mut [i32]) {
    let prev = if i > 0 { x[i - 1] } else { 0.0 };
    let h: f64 = hyp(x[i], prev);
    if h > scale {
        y[i] = h.sqrt();
        q[i] = k[i] / 3;
    } else {
        y[i] += scale;
    }
}

/// A global reduction: one task folding the whole vectors.
#[nested_reduce]
pub fn dot(t: usize, n: u32, x: &[f64], y: &[f64], out: &mut [f64]) {
    out[t] = (0..n as usize).map(|i| x[i] * y[i]).fold(0.0, |a, b| a + b);
}

#[device_fn]
pub fn halve_sum(a: f64, b: f64) -> f64 {
    (a + b) * 0.5
}

#[device_fn]
pub fn keep_odd(a: i64, b: i64) -> i64 {
    if b % 2 != 0 {
        b
    } else {
        a
    }
}

/// Every intrinsic on every shared element type, as an expression and as
/// a statement, `.load()`, pushes to two worklists from the `for_each`
/// body and the epilogue, a prologue binding read in the body (`ctx_t`)
/// and an output written after the expansion; compiled, not run.
#[nested_reduce]
#[allow(clippy::too_many_arguments)]
pub fn every_push_form(
    t: usize,
    ptr: &[u32],
    dst: &[u32],
    wf: &[f32],
    si: &[Atomic<i32>],
    su: &[Atomic<u32>],
    sl: &[Atomic<i64>],
    sq: &[Atomic<u64>],
    sf: &[Atomic<f32>],
    sd: &[Atomic<f64>],
    a: &Worklist,
    b: &Worklist,
    y: &mut [u32],
) {
    let lo = ptr[t] as usize;
    let hi = ptr[t + 1] as usize;
    let base = sf[t].load();
    (lo..hi).for_each(|e| {
        let u = dst[e] as usize;
        let x = wf[e] + base;
        if x < atomic_min(&sf[u], x) || atomic_max(&sf[u], x) > 0.0 {
            push(a, u as u32);
        }
        let old = atomic_add(&sd[u], x as f64);
        atomic_apply(&sd[u], old, halve_sum);
        let i = atomic_add(&si[u], 1) + atomic_min(&si[u], -3) + atomic_max(&si[u], 7);
        atomic_or(&si[u], i & 0xf);
        if atomic_cas(&si[u], i, 0) == i {
            push(b, t as u32);
        }
        atomic_or(&su[u], atomic_cas(&su[u], 1, 2) | atomic_add(&su[u], 3));
        atomic_min(&su[u], atomic_max(&su[u], 9));
        let l = atomic_add(&sl[u], -1) + atomic_or(&sl[u], 4) + atomic_min(&sl[u], i64::MIN);
        atomic_max(&sl[u], atomic_cas(&sl[u], l, 5));
        atomic_apply(&sl[u], l, keep_odd);
        let q = atomic_add(&sq[u], u as u64) | atomic_or(&sq[u], 1) | atomic_cas(&sq[u], 0, 1);
        atomic_max(&sq[u], atomic_min(&sq[u], q));
        atomic_cas(&sf[u], 1.5, sf[u].load() * 2.0);
        atomic_add(&sf[u], 0.25);
    });
    y[t] = (hi - lo) as u32 + su[t].load();
    if sd[t].load() > 1.0 {
        push(b, t as u32);
    }
}

fn nvrtc_or_skip() -> bool {
    match probe::require(Library::Nvrtc) {
        Ok(()) => true,
        Err(e) => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("CI=true and NVRTC cannot be loaded: {e}");
            }
            eprintln!("skipping: {e}");
            false
        }
    }
}

const SPECS: &[&KernelSpec] = &[
    &spmv::SPEC,
    &relax::SPEC,
    &every_form::SPEC,
    &pagerank::SPEC,
    &ctx_use::SPEC,
    &any_set::SPEC,
    &any_below::SPEC,
    &all_even::SPEC,
    &u8_max::SPEC,
    &longest::SPEC,
    &literal_args::SPEC,
    &axpy::SPEC,
    &map_forms::SPEC,
    &dot::SPEC,
    &every_push_form::SPEC,
    &push_common::sssp_push::SPEC,
    &push_common::seed::SPEC,
    &push_common::relax_changed::SPEC,
    // A generic kernel's instances: one module each, of one functor.
    &generic_common::spmv::f32::SPEC,
    &generic_common::spmv::f64::SPEC,
    &generic_common::min_plus::u32::SPEC,
    &generic_common::gather::f64_u64::SPEC,
    &generic_common::scaled::scale::f32::SPEC,
    // 2-D kernels (`columns`): their flattened functors.
    &columns_common::spmm::f32::SPEC,
    &columns_common::max_plus_columns::SPEC,
    &columns_common::argmax_columns::SPEC,
    &columns_common::masked_columns::SPEC,
    &columns_common::scale_columns::SPEC,
    &columns_common::permuted_columns::SPEC,
    &columns_common::widths_columns::SPEC,
    // Throttled 2-D kernels: the flattened functors their partitions' launches run.
    &columns_common::spmm::f64::SPEC,
    &warpfit::apps::sparse_layer::SPEC,
];

/// Push kernels whose forms the kernels above cover: compiled for the
/// entry points of their shape only (each entry point costs NVRTC 50 to
/// 200 ms; the GPU suite compiles what it launches).
const PUSH_SPECS: &[&KernelSpec] = &[
    &push_common::bfs_push::SPEC,
    &push_common::bfs_min::SPEC,
    &push_common::cc_push::SPEC,
    &push_common::histogram::SPEC,
    &push_common::sat_scatter::SPEC,
    &push_common::widest_push::SPEC,
    &push_common::scatter_add::SPEC,
    &push_common::degree_push::SPEC,
    &push_common::pull_min::SPEC,
    &generic_common::lower_heads::f32::SPEC,
];

/// Spill-store bytes per entry point, from NVRTC's ptxas report
/// (`u32::MAX` for an entry point whose spill line is missing).
fn spills(log: &str) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            out.push((rest.split('\'').next().unwrap_or("?").to_string(), u32::MAX));
        } else if line.contains("bytes spill stores") {
            if let Some(last) = out.last_mut() {
                last.1 = line
                    .split("bytes spill stores")
                    .next()
                    .and_then(|b| b.split_whitespace().last())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(u32::MAX);
            }
        }
    }
    out
}

/// The ptxas report of a module compiled with `compile_uncached` (whose
/// options ask for it, `--ptxas-options=-v`): its spill-store bytes per
/// entry point, each entry point of `entries` reported exactly once with a
/// spill count. An empty log fails: with a CUDA driver installed, NVRTC may
/// serve a CUBIN it compiled before from CUDA's compute cache without the
/// report, so run with `CUDA_CACHE_DISABLE=1` there.
fn reported_spills(what: &str, log: &str, entries: &[&str]) -> Vec<(String, u32)> {
    assert!(
        !log.is_empty(),
        "{what}: NVRTC's log is empty, no ptxas report (where a CUDA driver is installed, \
         NVRTC may serve the CUBIN from the compute cache without one: run with \
         CUDA_CACHE_DISABLE=1)"
    );
    let report = spills(log);
    for ep in entries {
        let found: Vec<u32> = report
            .iter()
            .filter(|(name, _)| name == ep)
            .map(|&(_, spill)| spill)
            .collect();
        assert!(
            found.len() == 1 && found[0] != u32::MAX,
            "{what}: entry point {ep} reported {} times, spills {found:?}:\n{log}",
            found.len()
        );
    }
    assert_eq!(report.len(), entries.len(), "{what}:\n{log}");
    report
}

#[test]
fn push_kernels_compile_with_nvrtc() {
    if !nvrtc_or_skip() {
        return;
    }
    let entries = [
        "wf_thread_frontier",
        "wf_sub8_frontier",
        "wf_cte_frontier",
        "wf_cte_list",
        "wf_cte_queue",
        "wf_merge",
        "wf_donated",
    ];
    for spec in PUSH_SPECS.iter().chain([&&push_common::sssp_push::SPEC]) {
        let tu = entry_point_unit(spec, &entries).unwrap();
        let c = compile_uncached(spec.name, &tu, Arch::new(8, 0)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&c.cubin[..4], b"\x7fELF", "{}", spec.name);
        // The staging areas, CAS loops and the expansion without the
        // reduction fit the registers.
        for (ep, spill) in reported_spills(spec.name, &c.log, &entries) {
            assert!(
                spill <= 16,
                "{} {ep}: {spill} bytes spilled\n{}",
                spec.name,
                c.log
            );
        }
    }
}

#[test]
fn generated_cuda_compiles_with_nvrtc() {
    if !nvrtc_or_skip() {
        return;
    }
    for spec in SPECS {
        let tu = translation_unit(spec);
        let c = compile_uncached(spec.name, &tu, Arch::new(9, 0)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&c.cubin[..4], b"\x7fELF", "{}", spec.name);
    }
}

/// Every kernel whose gather index a throttled handle may narrow
/// (`ld_index`) compiles in that encoding too; SpMV and the max-plus
/// `longest` are among them.
#[test]
fn narrow_index_kernels_compile_with_nvrtc() {
    if !nvrtc_or_skip() {
        return;
    }
    let narrow: Vec<&KernelSpec> = SPECS
        .iter()
        .copied()
        .filter(|s| s.cuda_source.contains("warpfit::ld_index("))
        .collect();
    let names: Vec<&str> = narrow.iter().map(|s| s.name).collect();
    assert!(
        names.contains(&"spmv") && names.contains(&"longest"),
        "{names:?}"
    );
    for spec in narrow {
        let spec = KernelSpec {
            index_encoding: IndexEncoding::Delta16,
            columns: None,
            checks_at_end_columns: false,
            ..*spec
        };
        let tu = translation_unit(&spec);
        assert!(tu.starts_with("#define WARPFIT_INDEX_DELTA16 1\n"));
        let c = compile_uncached(spec.name, &tu, Arch::new(9, 0)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&c.cubin[..4], b"\x7fELF", "{}", spec.name);
    }
}

#[test]
fn the_worklist_library_compiles_with_nvrtc() {
    if !nvrtc_or_skip() {
        return;
    }
    let c = compile_uncached("worklist", &worklist_unit(), Arch::new(9, 0))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(&c.cubin[..4], b"\x7fELF");
    // Every entry point is in the module, and in ptxas's report.
    let entries = warpfit::__private::compile::WORKLIST_ENTRY_POINTS;
    for ep in entries {
        assert!(
            c.cubin.windows(ep.len()).any(|w| w == ep.as_bytes()),
            "{ep} missing from the worklist CUBIN"
        );
    }
    reported_spills("worklist", &c.log, entries);
}

#[test]
fn every_form_has_no_double_where_the_ir_says_f32() {
    // The f32 map never widens: its only doubles come from the f64 inputs.
    let src = every_form::CUDA_SOURCE;
    let map = &src[src.find("acc_t map(").unwrap()..src.find("acc_t reduce(").unwrap()];
    assert!(map.contains("const double c = "), "{map}");
    assert!(map.contains("const float a = "), "{map}");
    assert!(src.contains("typedef float acc_t;"));
    assert!(
        ctx_use::CUDA_SOURCE.contains("uint32_t bias;"),
        "{}",
        ctx_use::CUDA_SOURCE
    );
}

/// Kernels whose folds carry tuples compile for every entry point, and the
/// tuple stays in registers: ptxas reports no spill anywhere (the scalar
/// SpMV beside them for comparison).
#[test]
fn tuple_kernels_compile_with_nvrtc_without_spilling() {
    if !nvrtc_or_skip() {
        return;
    }
    let entries = warpfit::__private::ENTRY_POINTS;
    for spec in [
        &tuple_common::lightest::SPEC,
        &tuple_common::lightest_fn::SPEC,
        &tuple_common::moments::SPEC,
        &tuple_common::spmv_1::SPEC,
        &tuple_common::eight::SPEC,
        &tuple_common::carried::SPEC,
        &spmv::SPEC,
    ] {
        let tu = translation_unit(spec);
        let c = compile_uncached(spec.name, &tu, Arch::new(9, 0)).unwrap_or_else(|e| panic!("{e}"));
        let spilled: Vec<_> = reported_spills(spec.name, &c.log, entries)
            .into_iter()
            .filter(|&(_, bytes)| bytes > 0)
            .collect();
        assert!(
            spilled.is_empty(),
            "{}: spills {spilled:?}\n{}",
            spec.name,
            c.log
        );
    }
}
