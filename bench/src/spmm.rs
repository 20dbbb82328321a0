//! SpMM: warpfit's 2-D kernel (`apps::spmm`) against `cusparseSpMM` and
//! dense cuBLAS GEMM on the same layer, every result checked against an f64
//! host reference first; and the pruned network's inference end to end
//! (`apps::sparse_layer`, bias and ReLU in the epilogue) against a cuSPARSE
//! pipeline and a cuBLAS one, each with a separate bias/ReLU kernel.

use crate::input::{median, timed_runs};
use crate::spmm_peers::{dense_row_major, CublasGemm, CusparseSpmmOn};
use rayon::prelude::*;
use warpfit::__private::EventTimer;
use warpfit::apps::{self, spmm, spmv, NetworkLayer};
use warpfit::prelude::*;
use warpfit::runtime::Csr;
use warpfit::{CudaDevice, Device, DeviceVec, Error, LaunchConfig, Result};

/// A separate bias-and-ReLU pass over a layer's output, for the peers'
/// pipelines (warpfit's layer does it in its epilogue).
#[nested_reduce(columns = k)]
pub fn bias_relu(row: usize, j: usize, bias: &[f32], k: u32, relu: bool, y: &mut [f32]) {
    let v = y[row * k as usize + j] + bias[row];
    y[row * k as usize + j] = if relu { v.max(0.0) } else { v };
}

/// One product's times, in milliseconds (medians).
#[derive(Debug, Clone)]
pub struct SpmmRow {
    pub label: String,
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    pub k: usize,
    pub warpfit_ms: f64,
    pub cusparse_ms: f64,
    /// Dense GEMM of the same layer, where it was asked for.
    pub cublas_ms: Option<f64>,
    /// warpfit's SpMV on the same matrix (the row with `k = 1`).
    pub spmv_ms: Option<f64>,
    /// The largest error of any of the results against the f64 reference,
    /// relative to the magnitude of the terms summed.
    pub max_err: f64,
}

/// The dense operand: `x[i][b] = 1 + ((i + b) mod 7) / 7`.
fn operand(rows: usize, k: usize) -> Result<Vec<f32>> {
    apps::nn_input(rows, k)
}

/// The largest error of `y` (`rows × k`) against `A·x` in f64, relative to
/// `Σ |a·x|` (at least 1).
pub fn spmm_error(a: &Csr<f32>, x: &[f32], k: usize, y: &[f32]) -> f64 {
    let (ptr, col, val) = (a.row_ptr(), a.col_idx(), a.values());
    (0..a.nrows())
        .into_par_iter()
        .map(|r| {
            let mut worst = 0.0f64;
            let (mut s, mut m) = (vec![0.0f64; k], vec![0.0f64; k]);
            for e in ptr[r] as usize..ptr[r + 1] as usize {
                let w = val[e] as f64;
                let xr = &x[col[e] as usize * k..][..k];
                for j in 0..k {
                    let t = w * xr[j] as f64;
                    s[j] += t;
                    m[j] += t.abs();
                }
            }
            for j in 0..k {
                let err = (y[r * k + j] as f64 - s[j]).abs() / m[j].max(1.0);
                worst = worst.max(if err.is_nan() { f64::INFINITY } else { err });
            }
            worst
        })
        .reduce(|| 0.0, f64::max)
}

/// Results must agree with the reference to well within f32 rounding of
/// the terms' magnitude.
const TOLERANCE: f64 = 1e-5;

/// `err` (of `what`), or an error where it exceeds the tolerance.
pub(crate) fn checked(what: &str, err: f64) -> Result<f64> {
    if err > TOLERANCE {
        return Err(Error::invalid(format!(
            "{what}: error {err:.2e} of the terms' magnitude against the f64 reference"
        )));
    }
    Ok(err)
}

fn cuda_of(device: &Device) -> Result<&CudaDevice> {
    device
        .cuda()
        .ok_or_else(|| Error::invalid("the spmm bench times CUDA kernels and needs an NVIDIA GPU"))
}

/// `A·X` for an `X` of `k` columns: warpfit's kernel, `cusparseSpMM`, and
/// with `gemm` cuBLAS on `A` made dense; with `k = 1` warpfit's SpMV too.
pub fn time_spmm(
    device: &Device,
    cfg: &LaunchConfig,
    label: &str,
    a: &Csr<f32>,
    k: usize,
    gemm: bool,
    (warmup, runs): (usize, usize),
) -> Result<SpmmRow> {
    let cuda = cuda_of(device)?;
    let timer = EventTimer::new(cuda)?;
    let k32 = u32::try_from(k).map_err(|_| Error::invalid(format!("{k} columns")))?;
    let x = operand(a.ncols(), k)?;
    let (ptr, col, val) = (
        device.upload(a.row_ptr())?,
        device.upload(a.col_idx())?,
        device.upload(a.values())?,
    );
    let xd = device.upload(&x)?;
    let y = device.alloc::<f32>(a.nrows() * k)?;
    let run = spmm::f32::prepare(device, cfg, a.nrows(), &ptr, &col, &val, &xd, k32, &y)?;
    run.run()?;
    run.check()?;
    let mut max_err = checked(
        &format!("{label} warpfit"),
        spmm_error(a, &x, k, &y.to_vec()?),
    )?;
    let warpfit_ms =
        median(&timed_runs(Some(&timer), warmup, runs, &mut || run.run())?).unwrap_or(f64::NAN);
    run.check()?;
    drop(run);

    let y2 = device.alloc::<f32>(a.nrows() * k)?;
    let mut sp = CusparseSpmmOn::new(cuda, a.nrows(), a.ncols(), &ptr, &col, &val, &xd, k, &y2)?;
    sp.run()?;
    max_err = max_err.max(checked(
        &format!("{label} cuSPARSE"),
        spmm_error(a, &x, k, &y2.to_vec()?),
    )?);
    let cusparse_ms =
        median(&timed_runs(Some(&timer), warmup, runs, &mut || sp.run())?).unwrap_or(f64::NAN);
    drop(sp);

    let cublas_ms = if gemm {
        let w = dense_row_major(a.nrows(), a.ncols(), a.row_ptr(), a.col_idx(), a.values())?;
        let mut g = CublasGemm::new(cuda, a.nrows(), a.ncols(), &w, &x, k)?;
        g.run()?;
        max_err = max_err.max(checked(
            &format!("{label} cuBLAS"),
            spmm_error(a, &x, k, &g.y()?),
        )?);
        Some(median(&timed_runs(Some(&timer), warmup, runs, &mut || g.run())?).unwrap_or(f64::NAN))
    } else {
        None
    };

    let spmv_ms = if k == 1 {
        let ys = device.alloc::<f32>(a.nrows())?;
        let s = spmv::f32::prepare(
            device,
            &LaunchConfig::default(),
            a.nrows(),
            &ptr,
            &col,
            &val,
            &xd,
            &ys,
        )?;
        s.run()?;
        s.check()?;
        checked(
            &format!("{label} spmv"),
            spmm_error(a, &x, 1, &ys.to_vec()?),
        )?;
        Some(median(&timed_runs(Some(&timer), warmup, runs, &mut || s.run())?).unwrap_or(f64::NAN))
    } else {
        None
    };
    Ok(SpmmRow {
        label: label.to_string(),
        rows: a.nrows(),
        cols: a.ncols(),
        nnz: a.nnz(),
        k,
        warpfit_ms,
        cusparse_ms,
        cublas_ms,
        spmv_ms,
        max_err,
    })
}

/// The network's inference end to end, in milliseconds (medians): warpfit
/// (one launch per layer), cuSPARSE (`cusparseSpMM` then [`fn@bias_relu`]
/// per layer), cuBLAS (GEMM then [`fn@bias_relu`] per layer).
#[derive(Debug, Clone)]
pub struct InferenceRow {
    pub batch: usize,
    pub warpfit_ms: f64,
    pub cusparse_ms: f64,
    pub cublas_ms: f64,
    pub max_err: f64,
}

/// Times the whole network over a batch, every pipeline's last output
/// checked against the f64 reference chained through warpfit's own layers.
pub fn time_inference(
    device: &Device,
    cfg: &LaunchConfig,
    layers: &[NetworkLayer],
    batch: usize,
    (warmup, runs): (usize, usize),
) -> Result<InferenceRow> {
    let cuda = cuda_of(device)?;
    let timer = EventTimer::new(cuda)?;
    let net = apps::SparseNetwork::new(layers.to_vec())?;
    let b32 = u32::try_from(batch).map_err(|_| Error::invalid(format!("batch {batch}")))?;
    let x = operand(net.inputs(), batch)?;
    let xd = device.upload(&x)?;
    struct Dev {
        ptr: DeviceVec<u32>,
        col: DeviceVec<u32>,
        val: DeviceVec<f32>,
        bias: DeviceVec<f32>,
        out: DeviceVec<f32>,
    }
    let mut d = Vec::new();
    for l in layers {
        d.push(Dev {
            ptr: device.upload(l.weights.row_ptr())?,
            col: device.upload(l.weights.col_idx())?,
            val: device.upload(l.weights.values())?,
            bias: device.upload(&l.bias)?,
            out: device.alloc::<f32>(l.weights.nrows() * batch)?,
        });
    }
    let last = layers.len() - 1;
    let input = |i: usize| if i == 0 { &xd } else { &d[i - 1].out };
    // The reference: each layer from its own (warpfit) input.
    let check_chain = |what: &str| -> Result<f64> {
        let mut prev = x.clone();
        let mut worst = 0.0f64;
        for (i, dv) in d.iter().enumerate() {
            let y = dv.out.to_vec()?;
            worst = worst.max(checked(
                what,
                apps::layer_error(&net, i, &prev, &y, batch)?,
            )?);
            prev = y;
        }
        Ok(worst)
    };

    let mut runs_w = Vec::new();
    for (i, (l, dv)) in layers.iter().zip(&d).enumerate() {
        runs_w.push(apps::sparse_layer::prepare(
            device,
            cfg,
            l.weights.nrows(),
            &dv.ptr,
            &dv.col,
            &dv.val,
            &dv.bias,
            input(i),
            b32,
            i < last,
            &dv.out,
        )?);
    }
    let mut all_w = || -> Result<()> { runs_w.iter().try_for_each(|r| r.run()) };
    all_w()?;
    runs_w.iter().try_for_each(|r| r.check())?;
    let mut max_err = check_chain("inference, warpfit")?;
    let warpfit_ms =
        median(&timed_runs(Some(&timer), warmup, runs, &mut all_w)?).unwrap_or(f64::NAN);
    drop(runs_w);

    let bias_runs = layers
        .iter()
        .zip(&d)
        .enumerate()
        .map(|(i, (l, dv))| {
            bias_relu::prepare(
                device,
                &LaunchConfig::default(),
                l.weights.nrows(),
                &dv.bias,
                b32,
                i < last,
                &dv.out,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let mut sparse = Vec::new();
    for (i, (l, dv)) in layers.iter().zip(&d).enumerate() {
        sparse.push(CusparseSpmmOn::new(
            cuda,
            l.weights.nrows(),
            l.weights.ncols(),
            &dv.ptr,
            &dv.col,
            &dv.val,
            input(i),
            batch,
            &dv.out,
        )?);
    }
    let mut all_s = || -> Result<()> {
        for (s, b) in sparse.iter_mut().zip(&bias_runs) {
            s.run()?;
            b.run()?;
        }
        Ok(())
    };
    all_s()?;
    max_err = max_err.max(check_chain("inference, cuSPARSE")?);
    let cusparse_ms =
        median(&timed_runs(Some(&timer), warmup, runs, &mut all_s)?).unwrap_or(f64::NAN);
    drop(sparse);

    // cuBLAS: `CublasGemm` owns its operands, so each GEMM multiplies its
    // own copy of an input of the layer's shape (its product is checked
    // layer by layer in `time_spmm`); the bias/ReLU passes run on the
    // outputs above, the same sizes. The time is the pipeline's: three
    // GEMMs and three separate passes, back to back.
    let mut dense = layers
        .iter()
        .map(|l| dense_layer(cuda, &l.weights, batch))
        .collect::<Result<Vec<_>>>()?;
    let mut all_d = || -> Result<()> {
        for (g, b) in dense.iter_mut().zip(&bias_runs) {
            g.run()?;
            b.run()?;
        }
        Ok(())
    };
    let cublas_ms =
        median(&timed_runs(Some(&timer), warmup, runs, &mut all_d)?).unwrap_or(f64::NAN);
    Ok(InferenceRow {
        batch,
        warpfit_ms,
        cusparse_ms,
        cublas_ms,
        max_err,
    })
}

/// cuBLAS's GEMM of layer `w` made dense, over its own zeroed input of
/// `batch` columns.
fn dense_layer(cuda: &CudaDevice, w: &Csr<f32>, batch: usize) -> Result<CublasGemm<f32>> {
    let dense = dense_row_major(w.nrows(), w.ncols(), w.row_ptr(), w.col_idx(), w.values())?;
    let x = vec![0.0f32; w.ncols() * batch];
    CublasGemm::new(cuda, w.nrows(), w.ncols(), &dense, &x, batch)
}

/// The rows as a Markdown table, with the command that made them.
pub fn to_markdown(rows: &[SpmmRow], inference: Option<&InferenceRow>, command: &str) -> String {
    let mut s = format!("`{command}`\n\n| matrix | rows × cols | nonzeros | k | warpfit ms | cuSPARSE ms | ×cuSPARSE | cuBLAS ms | ×cuBLAS | SpMV ms | max err |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let opt = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.3}"));
        s += &format!(
            "| {} | {} × {} | {} | {} | {:.3} | {:.3} | {:.2} | {} | {} | {} | {:.1e} |\n",
            r.label,
            r.rows,
            r.cols,
            r.nnz,
            r.k,
            r.warpfit_ms,
            r.cusparse_ms,
            r.cusparse_ms / r.warpfit_ms,
            opt(r.cublas_ms),
            r.cublas_ms
                .map_or("–".to_string(), |c| format!("{:.2}", c / r.warpfit_ms)),
            opt(r.spmv_ms),
            r.max_err
        );
    }
    if let Some(i) = inference {
        s += &format!(
            "\nInference, three layers, batch {}: warpfit {:.3} ms; cuSPARSE + bias/ReLU {:.3} ms ({:.2}×); cuBLAS + bias/ReLU {:.3} ms ({:.2}×); max err {:.1e}\n",
            i.batch,
            i.warpfit_ms,
            i.cusparse_ms,
            i.cusparse_ms / i.warpfit_ms,
            i.cublas_ms,
            i.cublas_ms / i.warpfit_ms,
            i.max_err
        );
    }
    s
}
