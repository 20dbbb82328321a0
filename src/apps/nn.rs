//! Inference through a sparse (pruned) fully connected network over a batch:
//! each layer `Y = relu(W·X + b)` (no ReLU after the last), `X` a dense
//! row-major matrix with one column per batch item. One launch of the 2-D
//! kernel [`sparse_layer`](super::sparse_layer) per layer, the bias and the
//! ReLU in its epilogue; the batch stays on the device between layers.

use super::sparse_layer;
use super::timing::IterationTimes;
use crate::runtime::mem::check_elems;
use crate::runtime::Csr;
use crate::{Device, DeviceVec, Error, LaunchConfig, Result};
use std::time::{Duration, Instant};

/// One layer: its weights (rows = outputs, columns = inputs) and a bias per
/// output.
#[derive(Debug, Clone)]
pub struct NetworkLayer {
    pub weights: Csr<f32>,
    pub bias: Vec<f32>,
}

/// A chain of layers whose shapes fit: layer `i`'s columns are layer `i −
/// 1`'s rows.
#[derive(Debug, Clone)]
pub struct SparseNetwork {
    layers: Vec<NetworkLayer>,
}

impl SparseNetwork {
    /// Checks the chain: at least one layer, each bias as long as its
    /// layer's rows, each layer's columns its predecessor's rows.
    pub fn new(layers: Vec<NetworkLayer>) -> Result<Self> {
        if layers.is_empty() {
            return Err(Error::invalid("a network needs at least one layer"));
        }
        for (i, l) in layers.iter().enumerate() {
            if l.bias.len() != l.weights.nrows() {
                return Err(Error::invalid(format!(
                    "layer {}: {} bias values for {} rows",
                    i + 1,
                    l.bias.len(),
                    l.weights.nrows()
                )));
            }
            if i > 0 && l.weights.ncols() != layers[i - 1].weights.nrows() {
                return Err(Error::invalid(format!(
                    "layer {} takes {} inputs, but layer {} gives {} outputs",
                    i + 1,
                    l.weights.ncols(),
                    i,
                    layers[i - 1].weights.nrows()
                )));
            }
        }
        Ok(SparseNetwork { layers })
    }

    pub fn layers(&self) -> &[NetworkLayer] {
        &self.layers
    }

    /// Inputs per batch item: the first layer's columns.
    pub fn inputs(&self) -> usize {
        self.layers[0].weights.ncols()
    }

    /// Outputs per batch item: the last layer's rows.
    pub fn outputs(&self) -> usize {
        self.layers[self.layers.len() - 1].weights.nrows()
    }

    /// Multiply-adds of one inference over `batch` items.
    pub fn multiply_adds(&self, batch: usize) -> u64 {
        self.layers
            .iter()
            .map(|l| l.weights.nnz() as u64 * batch as u64)
            .sum()
    }
}

/// The default input batch: `x[i][b] = 1 + ((i + b) mod 7) / 7`, row-major
/// (`inputs` rows of `batch` values).
pub fn nn_input(inputs: usize, batch: usize) -> Result<Vec<f32>> {
    let n = inputs
        .checked_mul(batch)
        .ok_or_else(|| Error::invalid(format!("{inputs} inputs × batch {batch} overflow")))?;
    check_elems::<f32>("the input batch", n)?;
    Ok((0..n)
        .map(|e| 1.0 + ((e / batch.max(1) + e % batch.max(1)) % 7) as f32 / 7.0)
        .collect())
}

/// What [`infer`] did.
#[derive(Debug, Clone)]
pub struct Inference {
    /// Each layer's output after the last repetition, row-major (`rows ×
    /// batch`): the last one is the network's.
    pub outputs: Vec<Vec<f32>>,
    /// Uploads and the layers' launch preparation (and, on the first run,
    /// kernel compilation).
    pub setup: Duration,
    /// Each repetition's wall time, from the first layer's launch to the
    /// last layer's completion.
    pub times: IterationTimes,
}

/// Runs the network over `x` (`inputs × batch`, row-major) `repeats`
/// times on `device`, the layers' arrays and every intermediate batch
/// resident on the device.
pub fn infer(
    device: &Device,
    config: &LaunchConfig,
    net: &SparseNetwork,
    x: &[f32],
    batch: usize,
    repeats: usize,
) -> Result<Inference> {
    let batch_u32 = u32::try_from(batch)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| Error::invalid(format!("batch {batch}: expected 1 to {}", u32::MAX)))?;
    let want = net.inputs().checked_mul(batch);
    if want != Some(x.len()) {
        return Err(Error::length(
            "nn: the input batch (inputs × batch)",
            net.inputs().saturating_mul(batch),
            x.len(),
        ));
    }
    if repeats == 0 {
        return Err(Error::invalid("nn: at least one repetition"));
    }
    let start = Instant::now();
    let mut arrays = Vec::with_capacity(net.layers.len());
    for l in &net.layers {
        let out_len = l.weights.nrows().checked_mul(batch).ok_or_else(|| {
            Error::invalid(format!(
                "{} rows × batch {batch} overflow",
                l.weights.nrows()
            ))
        })?;
        check_elems::<f32>("a layer's output batch", out_len)?;
        arrays.push(LayerArrays {
            ptr: device.upload(l.weights.row_ptr())?,
            col: device.upload(l.weights.col_idx())?,
            val: device.upload(l.weights.values())?,
            bias: device.upload(&l.bias)?,
            out: device.alloc::<f32>(out_len)?,
        });
    }
    let input = device.upload(x)?;
    let last = net.layers.len() - 1;
    let mut runs = Vec::with_capacity(net.layers.len());
    for (i, (l, a)) in net.layers.iter().zip(&arrays).enumerate() {
        let x = if i == 0 { &input } else { &arrays[i - 1].out };
        runs.push(sparse_layer::prepare(
            device,
            config,
            l.weights.nrows(),
            &a.ptr,
            &a.col,
            &a.val,
            &a.bias,
            x,
            batch_u32,
            i < last,
            &a.out,
        )?);
    }
    let setup = start.elapsed();
    let mut times = IterationTimes::new();
    for _ in 0..repeats {
        let t = Instant::now();
        for r in &runs {
            r.run()?;
        }
        for r in &runs {
            r.check()?;
        }
        times.push(t.elapsed());
    }
    drop(runs);
    let outputs = arrays
        .iter()
        .map(|a| a.out.to_vec())
        .collect::<Result<Vec<_>>>()?;
    Ok(Inference {
        outputs,
        setup,
        times,
    })
}

/// A layer's arrays on the device.
struct LayerArrays {
    ptr: DeviceVec<u32>,
    col: DeviceVec<u32>,
    val: DeviceVec<f32>,
    bias: DeviceVec<f32>,
    out: DeviceVec<f32>,
}

/// The largest error of layer `layer`'s output `y` against an f64 host
/// reference computed from its own input `x` (the previous layer's output
/// as the device computed it, or the batch), relative to the magnitude of
/// the terms summed (`Σ |w·x| + |b|`, at least 1): rounding in f32 is a few
/// units of 2^-24 of it, whatever order the device sums in.
pub fn layer_error(
    net: &SparseNetwork,
    layer: usize,
    x: &[f32],
    y: &[f32],
    batch: usize,
) -> Result<f64> {
    let l = net
        .layers
        .get(layer)
        .ok_or_else(|| Error::invalid(format!("no layer {layer}")))?;
    let (rows, cols) = (l.weights.nrows(), l.weights.ncols());
    if Some(x.len()) != cols.checked_mul(batch) || Some(y.len()) != rows.checked_mul(batch) {
        return Err(Error::invalid(format!(
            "layer {}: input of {} and output of {} values for a {rows} × {cols} layer at batch {batch}",
            layer + 1,
            x.len(),
            y.len()
        )));
    }
    let relu = layer + 1 < net.layers.len();
    let (ptr, col, val) = (l.weights.row_ptr(), l.weights.col_idx(), l.weights.values());
    let mut worst = 0.0f64;
    let mut sum = vec![0.0f64; batch];
    let mut mag = vec![0.0f64; batch];
    for r in 0..rows {
        sum.iter_mut().for_each(|s| *s = l.bias[r] as f64);
        mag.iter_mut().for_each(|m| *m = (l.bias[r] as f64).abs());
        for e in ptr[r] as usize..ptr[r + 1] as usize {
            let (w, xr) = (val[e] as f64, &x[col[e] as usize * batch..][..batch]);
            for b in 0..batch {
                let t = w * xr[b] as f64;
                sum[b] += t;
                mag[b] += t.abs();
            }
        }
        for b in 0..batch {
            let want = if relu { sum[b].max(0.0) } else { sum[b] };
            let err = (y[r * batch + b] as f64 - want).abs() / mag[b].max(1.0);
            worst = worst.max(if err.is_nan() { f64::INFINITY } else { err });
        }
    }
    Ok(worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(rows: usize, cols: usize, seed: usize) -> NetworkLayer {
        let mut ptr = vec![0u32];
        let (mut col, mut val) = (Vec::new(), Vec::new());
        for r in 0..rows {
            for c in 0..cols {
                if (r * 7 + c * 3 + seed) % 4 == 0 {
                    col.push(c as u32);
                    val.push(((r + c + seed) % 5) as f32 * 0.25 - 0.5);
                }
            }
            ptr.push(col.len() as u32);
        }
        NetworkLayer {
            weights: Csr::new(rows, cols, ptr, col, val).unwrap(),
            bias: (0..rows).map(|r| (r % 3) as f32 * 0.5 - 0.5).collect(),
        }
    }

    #[test]
    fn a_network_checks_its_chain() {
        assert!(SparseNetwork::new(vec![]).is_err());
        let e = SparseNetwork::new(vec![layer(8, 6, 0), layer(5, 7, 1)]).unwrap_err();
        assert!(e.to_string().contains("takes 7 inputs"), "{e}");
        let mut short = layer(8, 6, 0);
        short.bias.pop();
        assert!(SparseNetwork::new(vec![short]).is_err());
        let net = SparseNetwork::new(vec![layer(8, 6, 0), layer(5, 8, 1)]).unwrap();
        assert_eq!((net.inputs(), net.outputs()), (6, 5));
    }

    #[test]
    fn inference_on_the_cpu_matches_the_f64_reference() {
        let net =
            SparseNetwork::new(vec![layer(40, 30, 0), layer(20, 40, 1), layer(9, 20, 2)]).unwrap();
        let batch = 11;
        let x = nn_input(30, batch).unwrap();
        assert_eq!(x[batch + 1], 1.0 + 2.0 / 7.0);
        let run = infer(&Device::cpu(), &LaunchConfig::default(), &net, &x, batch, 2).unwrap();
        assert_eq!(run.times.len(), 2);
        let mut input = x.clone();
        for (i, y) in run.outputs.iter().enumerate() {
            assert!(layer_error(&net, i, &input, y, batch).unwrap() < 1e-6);
            if i < 2 {
                assert!(y.iter().all(|&v| v >= 0.0), "ReLU after layer {i}");
            }
            input = y.clone();
        }
        assert!(
            run.outputs[2].iter().any(|&v| v < 0.0),
            "no ReLU after the last"
        );
        // A wrong batch length, a zero batch.
        assert!(infer(
            &Device::cpu(),
            &LaunchConfig::default(),
            &net,
            &x,
            batch + 1,
            1
        )
        .is_err());
        assert!(infer(&Device::cpu(), &LaunchConfig::default(), &net, &[], 0, 1).is_err());
        // A batch whose size overflows is an error, not a panic.
        let huge = usize::MAX / 2;
        assert!(infer(&Device::cpu(), &LaunchConfig::default(), &net, &x, huge, 1).is_err());
        assert!(layer_error(&net, 0, &x, &run.outputs[0], huge).is_err());
    }
}
