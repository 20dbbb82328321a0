//! `warpfit bench throttle`: the options of `warpfit bench` that apply to
//! the throttling benchmark, turned into
//! `warpfit_bench::throttle::ThrottleBenchOptions`; the run on the
//! chosen backend with progress on stderr, the Markdown report on stdout,
//! in `--out` and as a section of `--write`, the chart in `--svg`.

use super::bench::{write_section, BenchArgs};
use super::output::OutputFile;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;
use warpfit::{Device, Error, Result};
use warpfit_bench::default_suite;
use warpfit_bench::throttle::{
    large_suite, run_throttle_bench, small_suite, ThrottleBenchOptions, ThrottleBenchReport,
};

/// The benchmark's options from the command line: `--gen` replaces the
/// suite, `--mtx` files join it.
pub fn options(args: &BenchArgs) -> Result<ThrottleBenchOptions> {
    let matrices = super::bench::matrices(args, default_suite, small_suite, Some(large_suite))?;
    let mut opts = ThrottleBenchOptions::new(matrices);
    opts.runs = args.runs as usize;
    opts.warmup = args.warmup as usize;
    opts.rounds = args.rounds.map_or(1, |r| r as usize);
    opts.variants = args.variants.clone();
    opts.validate()?;
    if let Some(c) = &args.cache {
        opts.cache = c.parse()?;
    }
    if let Some(p) = &args.partitioner {
        opts.partitioner = Some(p.parse()?);
    }
    if let Some(o) = &args.remap_order {
        opts.remap_order = Some(o.parse()?);
    }
    opts.narrow_index = !args.plain_index;
    Ok(opts)
}

/// The device of `--backend` (CUDA device `--device` by default).
fn device(args: &BenchArgs) -> Result<Device> {
    match args.backend.as_deref() {
        Some("cpu") => Ok(Device::cpu()),
        _ => super::bench::open_gpu(args, "throttle", " (or --backend cpu)"),
    }
}

/// The section `--write` replaces: one per backend.
fn section(report: &ThrottleBenchReport) -> &'static str {
    if report.cpu {
        "## Throttled SpMV, every policy (CPU backend, `warpfit bench throttle`)"
    } else {
        "## Throttled SpMV, every policy (GPU, `warpfit bench throttle`)"
    }
}

/// Where the report and the chart go.
struct Outputs {
    out: Option<PathBuf>,
    svg: Option<PathBuf>,
}

impl Outputs {
    fn write(&self, report: &ThrottleBenchReport) -> Result<()> {
        let io = |path: &PathBuf| {
            let path = path.clone();
            move |source| Error::Io { path, source }
        };
        if let Some(path) = &self.out {
            std::fs::write(path, report.to_markdown()).map_err(io(path))?;
        }
        if let Some(path) = &self.svg {
            std::fs::write(path, report.to_svg()?).map_err(io(path))?;
        }
        Ok(())
    }
}

/// Progress on stderr: a bar with the step when stderr is a terminal, one
/// line per step otherwise (a log of a long run).
struct Progress {
    bar: Option<ProgressBar>,
    start: Instant,
}

impl Progress {
    fn new() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("[{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
            {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            bar,
            start: Instant::now(),
        }
    }

    fn step(&mut self, step: usize, total: usize, what: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_length(total as u64);
                bar.set_position(step.saturating_sub(1) as u64);
                bar.set_message(what.to_string());
            }
            None => eprintln!(
                "[{:7.1} s] ({step}/{total}) {what}",
                self.start.elapsed().as_secs_f64()
            ),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Runs `warpfit bench throttle`.
pub fn run(args: &BenchArgs) -> Result<()> {
    let opts = options(args)?;
    let open = |p: &Option<PathBuf>, what: &str| {
        p.as_deref().map(|p| OutputFile::open(p, what)).transpose()
    };
    let (out, svg, write) = (
        open(&args.out, "--out")?,
        open(&args.svg, "--svg")?,
        open(&args.write, "--write")?,
    );
    let device = device(args)?;
    let command = super::bench::command_line();
    let outputs = Outputs {
        out: out.map(OutputFile::keep),
        svg: svg.map(OutputFile::keep),
    };
    let mut progress = Progress::new();
    let mut snapshot_error = None;
    let report = run_throttle_bench(
        &device,
        &opts,
        &command,
        &mut |step, total, what| progress.step(step, total, what),
        // The report so far, so that a run cut short keeps what it measured.
        &mut |partial| {
            if let Err(e) = outputs.write(partial) {
                snapshot_error.get_or_insert(e);
            }
        },
    )?;
    drop(progress);
    if let Some(e) = snapshot_error {
        return Err(e);
    }
    let md = report.to_markdown();
    say!("{md}");
    outputs.write(&report)?;
    if let Some(write) = write {
        let path = write.keep();
        write_section(&path, section(&report), &md)?;
        eprintln!(
            "wrote the `{}` section of {}",
            section(&report),
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpfit::{CacheSize, Partitioner};
    use warpfit_bench::MatrixSource;

    use crate::bench::{parse_for_test as parse, try_parse_for_test as try_parse};

    #[test]
    fn suites_and_options() {
        let o = options(&parse(&["throttle"])).unwrap();
        assert_eq!(o.matrices.len(), 8);
        assert_eq!((o.runs, o.rounds, o.cache), (20, 1, CacheSize::L2));
        assert_eq!(o.partitioner, None);
        let o = options(&parse(&["throttle", "--suite", "large"])).unwrap();
        let names: Vec<String> = o.matrices.iter().map(MatrixSource::name).collect();
        assert_eq!(names.len(), 6);
        assert!(names[1].starts_with("rmat:scale=25"), "{names:?}");
        assert_eq!(names[5], "grid2d:side=4096");
        let o = options(&parse(&[
            "throttle",
            "--gen",
            "grid2d:side=8",
            "--mtx",
            "m.mtx",
            "--cache",
            "4KiB",
            "--partitioner",
            "kd",
            "--rounds",
            "3",
        ]))
        .unwrap();
        let names: Vec<String> = o.matrices.iter().map(MatrixSource::name).collect();
        assert_eq!(names, ["grid2d:side=8", "m.mtx"]);
        assert_eq!(o.cache, CacheSize::Bytes(4096));
        assert_eq!(o.partitioner, Some(Partitioner::Kd));
        assert_eq!(o.rounds, 3);
        assert_eq!(
            options(&parse(&["throttle", "--small"]))
                .unwrap()
                .matrices
                .len(),
            3
        );
    }

    #[test]
    fn bad_options_are_errors() {
        let e = options(&parse(&["throttle", "--cache", "lots"])).unwrap_err();
        assert!(e.to_string().contains("cache size"), "{e}");
        let e = options(&parse(&["throttle", "--partitioner", "metis"])).unwrap_err();
        assert!(e.to_string().contains("metis"), "{e}");
        assert!(try_parse(&["throttle", "--rounds", "0"]).is_err());
        assert!(try_parse(&["throttle", "--backend", "tpu"]).is_err());
        assert!(try_parse(&["throttle", "--runs", "5"]).is_err());
    }
}
