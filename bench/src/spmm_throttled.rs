//! Throttled SpMM: `apps::spmm` under `#[throttled]` (a cache-fit
//! partition holds whole rows of `X`) against the same kernel unthrottled
//! and `cusparseSpMM`, in one process: `auto` end to end from the handle's
//! creation over arrays on the device (the model's decision and any
//! layout included) and in steady state, `cf` pinned in steady state;
//! every result checked against an f64 host reference first.

use crate::input::{median, timed_runs};
use crate::spmm::{checked, spmm_error};
use crate::spmm_peers::CusparseSpmmOn;
use std::time::Instant;
use warpfit::__private::EventTimer;
use warpfit::apps::{self, spmm};
use warpfit::runtime::schedule::{ThrottleOptions, ThrottlePolicy};
use warpfit::runtime::Csr;
use warpfit::{Device, Error, LaunchConfig, Result};

/// One matrix's times, in milliseconds (medians), and what `auto` chose.
#[derive(Debug, Clone)]
pub struct ThrottledSpmmRow {
    pub label: String,
    pub rows: usize,
    pub nnz: usize,
    pub k: usize,
    /// The gathered array `X`, in bytes.
    pub x_bytes: u64,
    pub org_ms: f64,
    /// `auto`'s first launch, from the handle's creation (its decision,
    /// layout and timed runs included), wall clock.
    pub auto_first_ms: f64,
    pub auto_ms: f64,
    /// What `auto` chose, and why.
    pub auto_choice: String,
    pub cf_ms: f64,
    /// `cf`'s partitions (column blocks).
    pub cf_blocks: usize,
    pub cusparse_ms: f64,
    pub max_err: f64,
}

/// Times `A·X` (`k` columns) unthrottled, throttled by `auto` and by `cf`,
/// and by `cusparseSpMM`.
pub fn time_throttled_spmm(
    device: &Device,
    label: &str,
    a: &Csr<f32>,
    k: usize,
    (warmup, runs): (usize, usize),
) -> Result<ThrottledSpmmRow> {
    let cuda = device.cuda().ok_or_else(|| {
        Error::invalid("the throttled spmm bench times CUDA kernels and needs an NVIDIA GPU")
    })?;
    let timer = EventTimer::new(cuda)?;
    let k32 = u32::try_from(k).map_err(|_| Error::invalid(format!("{k} columns")))?;
    let (n, m) = (a.nrows(), a.ncols());
    let x = apps::nn_input(m, k)?;
    let (ptr, col, val) = (
        device.upload(a.row_ptr())?,
        device.upload(a.col_idx())?,
        device.upload(a.values())?,
    );
    let xd = device.upload(&x)?;
    let elems = n
        .checked_mul(k)
        .ok_or_else(|| Error::invalid(format!("{n} rows of {k} columns overflow")))?;
    let y = device.alloc::<f32>(elems)?;
    let check = |what: &str, y: &warpfit::DeviceVec<f32>| -> Result<f64> {
        checked(
            &format!("{label} {what}"),
            spmm_error(a, &x, k, &y.to_vec()?),
        )
    };

    let org = spmm::f32::prepare(
        device,
        &LaunchConfig::default(),
        n,
        &ptr,
        &col,
        &val,
        &xd,
        k32,
        &y,
    )?;
    org.run()?;
    org.check()?;
    let mut max_err = check("org", &y)?;
    let org_ms =
        median(&timed_runs(Some(&timer), warmup, runs, &mut || org.run())?).unwrap_or(f64::NAN);
    org.check()?;
    drop(org);

    // `auto` end to end: the handle made over the arrays on the device,
    // its first launch deciding; then its steady state.
    let options = ThrottleOptions::default().with_plan_cache(false);
    let y_auto = device.alloc::<f32>(elems)?;
    // A handle's steady state: its prepared schedule enqueued, timed, its
    // faults checked.
    let steady = |t: &mut spmm::f32::Throttle| -> Result<f64> {
        let ms = median(&timed_runs(Some(&timer), warmup, runs, &mut || {
            t.enqueue(&xd, k32, &y_auto)
        })?)
        .unwrap_or(f64::NAN);
        t.check()?;
        Ok(ms)
    };
    cuda.synchronize()?;
    let started = Instant::now();
    let mut t = spmm::f32::throttle_resident(device, &options, n, m, k32, &ptr, &col, &val)?;
    t.enqueue(&xd, k32, &y_auto)?;
    t.check()?;
    let auto_first_ms = started.elapsed().as_secs_f64() * 1e3;
    max_err = max_err.max(check("auto", &y_auto)?);
    let auto_ms = steady(&mut t)?;
    max_err = max_err.max(check("auto, steady", &y_auto)?);
    // What was chosen and why, what was timed, and the steps of the
    // decision (ms).
    let auto_choice = match &t.report().model {
        Some(m) => {
            let timed: Vec<String> = m
                .timed
                .iter()
                .map(|(p, ms)| format!("{p} {ms:.3}"))
                .collect();
            let steps: Vec<String> = m
                .steps
                .iter()
                .map(|(s, d)| format!("{s} {:.1}", d.as_secs_f64() * 1e3))
                .collect();
            format!(
                "{} ({}; timed: {}; steps: {})",
                t.report().chosen,
                m.reason,
                timed.join(", "),
                steps.join(", ")
            )
        }
        None => t.report().chosen.to_string(),
    };
    drop(t);

    let cf_options = options.with_policy(ThrottlePolicy::Cf);
    let mut t = spmm::f32::throttle_resident(device, &cf_options, n, m, k32, &ptr, &col, &val)?;
    t.enqueue(&xd, k32, &y_auto)?;
    t.check()?;
    max_err = max_err.max(check("cf", &y_auto)?);
    let cf_ms = steady(&mut t)?;
    max_err = max_err.max(check("cf, steady", &y_auto)?);
    let cf_blocks = t.report().partitions;
    drop(t);
    drop(y_auto);

    let mut sp = CusparseSpmmOn::new(cuda, n, m, &ptr, &col, &val, &xd, k, &y)?;
    sp.run()?;
    max_err = max_err.max(check("cuSPARSE", &y)?);
    let cusparse_ms =
        median(&timed_runs(Some(&timer), warmup, runs, &mut || sp.run())?).unwrap_or(f64::NAN);
    Ok(ThrottledSpmmRow {
        label: label.to_string(),
        rows: n,
        nnz: a.nnz(),
        k,
        x_bytes: (m as u64).saturating_mul(k as u64).saturating_mul(4),
        org_ms,
        auto_first_ms,
        auto_ms,
        auto_choice,
        cf_ms,
        cf_blocks,
        cusparse_ms,
        max_err,
    })
}

/// The rows as a markdown table, with the command that made them.
pub fn throttled_markdown(rows: &[ThrottledSpmmRow], command: &str) -> String {
    let mut s = format!(
        "`{command}` (ms, medians; × = cuSPARSE's time over this one)\n\n\
         | matrix | nonzeros | k | X (MiB) | unthrottled | ×cuSPARSE | `auto` first launch | `auto` | ×cuSPARSE | `cf` (blocks) | ×cuSPARSE | cuSPARSE | max err | `auto` chose |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.3} | {:.2} | {:.1} | {:.3} | {:.2} | {:.3} ({}) | {:.2} | {:.3} | {:.1e} | {} |\n",
            r.label,
            r.nnz,
            r.k,
            r.x_bytes as f64 / (1u64 << 20) as f64,
            r.org_ms,
            r.cusparse_ms / r.org_ms,
            r.auto_first_ms,
            r.auto_ms,
            r.cusparse_ms / r.auto_ms,
            r.cf_ms,
            r.cf_blocks,
            r.cusparse_ms / r.cf_ms,
            r.cusparse_ms,
            r.max_err,
            r.auto_choice,
        ));
    }
    s
}
