//! `warpfit bench apps`: the options of `warpfit bench` that apply to the
//! apps benchmark, turned into `warpfit_bench::apps::AppsBenchOptions`; the
//! run on the GPU, progress on stderr, the Markdown report on stdout and in
//! `--out`.

use super::bench::BenchArgs;
use super::output::OutputFile;
use warpfit::{Error, Result};
use warpfit_bench::apps::{run_apps_bench, AppsBenchOptions};
use warpfit_bench::MatrixSource;

/// The apps benchmark's options from the command line: `--small` picks the
/// small inputs; `--gen` replaces the app inputs, `--cg-gen` the CG inputs,
/// and `--mtx` files join both lists.
pub fn options(args: &BenchArgs) -> Result<AppsBenchOptions> {
    if !args.variants.is_empty() || args.write.is_some() || args.suite != "default" {
        return Err(Error::invalid(
            "--variants, --write and --suite belong to `warpfit bench spmv`; \
             `bench apps` takes --small, --gen, --cg-gen, --mtx and --out",
        ));
    }
    let mut opts = if args.small {
        AppsBenchOptions::small()?
    } else {
        AppsBenchOptions::full()?
    };
    let parse = |specs: &[String]| -> Result<Vec<MatrixSource>> {
        specs
            .iter()
            .map(|s| s.parse().map(MatrixSource::Gen))
            .collect()
    };
    if !args.gens.is_empty() {
        opts.graph_inputs = parse(&args.gens)?;
    }
    if !args.cg_gens.is_empty() {
        opts.cg_inputs = parse(&args.cg_gens)?;
    }
    for path in &args.mtx {
        opts.graph_inputs.push(MatrixSource::Mtx(path.clone()));
        opts.cg_inputs.push(MatrixSource::Mtx(path.clone()));
    }
    if let Some(tol) = args.cg_tol {
        if !(tol.is_finite() && tol >= 0.0) {
            return Err(Error::invalid(format!(
                "--cg-tol must be a finite number ≥ 0, got {tol}"
            )));
        }
        opts.cg_tol = tol;
    }
    if let Some(n) = args.cg_max_iters {
        opts.cg_max_iters = n as usize;
    }
    if let Some(r) = args.repeats {
        opts.kernel_repeats = r as usize;
    }
    opts.cpu_pagerank = !args.no_cpu;
    opts.write_pagerank_mtx = args.pagerank_mtx.clone();
    Ok(opts)
}

/// Rejects the apps-only options in `warpfit bench spmv`.
pub fn refuse_apps_options(args: &BenchArgs) -> Result<()> {
    let given = [
        ("--out", args.out.is_some()),
        ("--cg-gen", !args.cg_gens.is_empty()),
        ("--cg-tol", args.cg_tol.is_some()),
        ("--cg-max-iters", args.cg_max_iters.is_some()),
        ("--repeats", args.repeats.is_some()),
        ("--no-cpu", args.no_cpu),
        ("--pagerank-mtx", args.pagerank_mtx.is_some()),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((name, _)) => Err(Error::invalid(format!(
            "{name} belongs to `warpfit bench apps`, not `bench spmv`"
        ))),
        None => Ok(()),
    }
}

/// Runs `warpfit bench apps`.
pub fn run(args: &BenchArgs) -> Result<()> {
    let opts = options(args)?;
    let out = args
        .out
        .as_deref()
        .map(|p| OutputFile::open(p, "--out"))
        .transpose()?;
    let device = super::bench::open_gpu(args, "apps", "")?;
    let command = super::bench::command_line();
    let out = out.map(OutputFile::keep);
    let write = |md: &str| -> Result<()> {
        match &out {
            Some(path) => std::fs::write(path, md).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            }),
            None => Ok(()),
        }
    };
    let start = std::time::Instant::now();
    let mut snapshot_error = None;
    let report = run_apps_bench(
        &device,
        &opts,
        &command,
        &mut |line| eprintln!("[{:7.1} s] {line}", start.elapsed().as_secs_f64()),
        // The report so far, so that a run cut short (a time limit) keeps
        // what it measured.
        &mut |partial| {
            if let Err(e) = write(&partial.to_markdown()) {
                snapshot_error.get_or_insert(e);
            }
        },
    )?;
    if let Some(e) = snapshot_error {
        return Err(e);
    }
    let md = report.to_markdown();
    say!("{md}");
    write(&md)?;
    if let Some(path) = &out {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::bench::{parse_for_test as parse, try_parse_for_test as try_parse};

    #[test]
    fn defaults_small_and_overrides() {
        let full = options(&parse(&["apps"])).unwrap();
        assert_eq!(full.graph_inputs.len(), 4);
        assert!(full.cpu_pagerank);
        let small = options(&parse(&["apps", "--small", "--no-cpu", "--repeats", "3"])).unwrap();
        assert!(small.graph_inputs[0].name().starts_with("rmat:scale=14"));
        assert!(!small.cpu_pagerank);
        assert_eq!(small.kernel_repeats, 3);
        let o = options(&parse(&[
            "apps",
            "--gen",
            "grid2d:side=8",
            "--cg-gen",
            "poisson2d:side=8",
            "--mtx",
            "m.mtx",
            "--cg-tol",
            "1e-8",
        ]))
        .unwrap();
        let names: Vec<String> = o.graph_inputs.iter().map(MatrixSource::name).collect();
        assert_eq!(names, ["grid2d:side=8", "m.mtx"]);
        let cg: Vec<String> = o.cg_inputs.iter().map(MatrixSource::name).collect();
        assert_eq!(cg, ["poisson2d:side=8", "m.mtx"]);
        assert_eq!(o.cg_tol, 1e-8);
    }

    #[test]
    fn bad_options_are_errors() {
        let e = options(&parse(&["apps", "--gen", "nonsense"])).unwrap_err();
        assert!(!e.to_string().is_empty());
        let e = options(&parse(&["apps", "--cg-tol=-1"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--cg-tol"), "{e}");
        let e = options(&parse(&["apps", "--variants", "cte"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("bench spmv"), "{e}");
        let e = refuse_apps_options(&parse(&["spmv", "--out", "x.md"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--out belongs to `warpfit bench apps`"), "{e}");
        assert!(refuse_apps_options(&parse(&["spmv"])).is_ok());
        assert!(try_parse(&["apps", "--repeats", "0"]).is_err());
    }
}
