//! `warpfit run nn`: inference through a sparse (pruned) fully connected
//! network over a batch, checked layer by layer against an f64 host
//! reference with `--check`.

use super::{write_output, App, AppRun, NnModel, Outcome, RunArgs};
use crate::vector::{read_rows, read_vector};
use std::time::Instant;
use warpfit::apps::{self, NetworkLayer, SparseNetwork};
use warpfit::runtime::gen::alexnet_fc;
use warpfit::runtime::sparse::mm;
use warpfit::{Error, Result};

/// The generated input's batch without `--batch`: the inference benchmark's
/// 150 images.
const NN_BATCH: usize = 150;
/// Inferences without `--iters` (the first compiles the kernel).
const NN_ITERS: usize = 10;
/// `--check`'s bound on a layer's error relative to the magnitude of the
/// terms it sums: a few hundred units of f32 rounding.
const NN_TOLERANCE: f64 = 1e-5;

/// Options that are nn's alone, or that nn does not take.
pub(super) fn check_options(args: &RunArgs) -> Result<()> {
    let nn_only = [
        ("--layer", !args.layer.is_empty()),
        ("--model", args.model.is_some()),
        ("--bias", !args.bias.is_empty()),
        ("--input", args.nn_input.is_some()),
        ("--batch", args.batch.is_some()),
        ("--seed", args.seed.is_some()),
    ];
    if args.app != App::Nn {
        if let Some((name, _)) = nn_only.iter().find(|(_, given)| *given) {
            return Err(Error::invalid(format!("{name} applies to nn only")));
        }
        return Ok(());
    }
    if args.input.matrix.is_some() || args.input.gen.is_some() {
        return Err(Error::invalid(
            "nn runs on layers: give --layer W.mtx per layer, or --model alexnet-fc",
        ));
    }
    if args.layer.is_empty() && args.model.is_none() {
        return Err(Error::invalid(
            "nn needs its layers: --layer W.mtx per layer, or --model alexnet-fc",
        ));
    }
    if args.model.is_some() && !args.bias.is_empty() {
        return Err(Error::invalid(
            "--bias goes with --layer; a --model carries its own biases",
        ));
    }
    if args.model.is_none() && args.seed.is_some() {
        return Err(Error::invalid("--seed applies to --model only"));
    }
    if !args.bias.is_empty() && args.bias.len() != args.layer.len() {
        return Err(Error::invalid(format!(
            "{} --bias files for {} --layer files: give one per layer, in order, or none",
            args.bias.len(),
            args.layer.len()
        )));
    }
    if args.nn_input.is_some() && args.batch.is_some() {
        return Err(Error::invalid(
            "--batch sizes the generated input; an --input file's rows give the batch",
        ));
    }
    let other = [
        ("--throttle", args.throttle.is_some()),
        ("--source", args.source.is_some()),
        ("--mesh", args.mesh.is_some()),
    ];
    if let Some((name, _)) = other.iter().find(|(_, given)| *given) {
        return Err(Error::invalid(format!("{name} does not apply to nn")));
    }
    Ok(())
}

impl AppRun<'_> {
    /// The network of `--layer`/`--bias` or `--model`, over the batch of
    /// `--input` or the generated one, `--iters` times.
    pub(super) fn nn(self) -> Result<Outcome> {
        let args = self.args;
        let device = &self.device;
        let read_start = Instant::now();
        let net = SparseNetwork::new(self.nn_layers()?)?;
        let (x, batch) = match &args.nn_input {
            Some(path) => read_rows(path, "--input", net.inputs())?,
            None => {
                let batch = args.batch.map_or(NN_BATCH, |b| b as usize);
                (apps::nn_input(net.inputs(), batch)?, batch)
            }
        };
        let read = read_start.elapsed();
        let repeats = self.iters.unwrap_or(NN_ITERS);
        for (i, l) in net.layers().iter().enumerate() {
            let w = &l.weights;
            say!(
                "layer {}: {} x {}, {} nonzeros ({:.2}%){}",
                i + 1,
                w.nrows(),
                w.ncols(),
                w.nnz(),
                100.0 * w.nnz() as f64 / (w.nrows() as f64 * w.ncols() as f64).max(1.0),
                if i + 1 < net.layers().len() {
                    ", ReLU"
                } else {
                    ""
                }
            );
        }
        let run = apps::infer(device, &self.config, &net, &x, batch, repeats)?;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let median = run.times.median().unwrap_or_default();
        let flops = 2.0 * net.multiply_adds(batch) as f64;
        say!(
            "nn: batch {batch}, {} layers; inference median {:.3} ms over {repeats} runs ({:.1} GFLOP/s), first {:.3} ms ({})",
            net.layers().len(),
            ms(median),
            flops / median.as_secs_f64().max(1e-12) / 1e9,
            ms(run.times.first().unwrap_or_default()),
            device.backend_name()
        );
        say!(
            "timing: read or generate {:.1} ms; set-up {:.1} ms",
            ms(read),
            ms(run.setup)
        );
        for n in &self.notes {
            say!("note: {n}");
        }
        let mut outcome = Outcome::Done;
        if args.check {
            let mut input: &[f32] = &x;
            let mut worst = 0.0f64;
            for (i, y) in run.outputs.iter().enumerate() {
                let err = apps::layer_error(&net, i, input, y, batch)?;
                if err > NN_TOLERANCE && outcome == Outcome::Done {
                    outcome = Outcome::Mismatch(format!(
                        "layer {} differs from the f64 reference by {err:.2e} of its terms' magnitude (tolerance {NN_TOLERANCE:.0e})",
                        i + 1
                    ));
                }
                worst = worst.max(err);
                input = y;
            }
            say!(
                "check: every layer against an f64 host reference from its own input: largest error {worst:.2e} of the terms' magnitude ({})",
                if outcome == Outcome::Done { "ok" } else { "MISMATCH" }
            );
        }
        let last = run.outputs.last().expect("a network has a layer");
        write_output(
            self.output,
            last.chunks(batch.max(1)).map(|row| {
                row.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            }),
        )?;
        Ok(outcome)
    }

    fn nn_layers(&self) -> Result<Vec<NetworkLayer>> {
        let args = self.args;
        if let Some(NnModel::AlexnetFc) = args.model {
            return Ok(alexnet_fc(args.seed.unwrap_or(1))?
                .into_iter()
                .map(|l| NetworkLayer {
                    weights: l.matrix,
                    bias: l.bias,
                })
                .collect());
        }
        let mut layers = Vec::with_capacity(args.layer.len());
        for (i, path) in args.layer.iter().enumerate() {
            let weights = mm::read_csr::<f32>(path)?;
            let bias = match args.bias.get(i) {
                Some(b) => read_vector(b, "--bias", weights.nrows())?
                    .into_iter()
                    .map(|v| v as f32)
                    .collect(),
                None => vec![0.0; weights.nrows()],
            };
            layers.push(NetworkLayer { weights, bias });
        }
        Ok(layers)
    }
}
