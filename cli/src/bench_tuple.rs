//! `warpfit bench tuple`: the options of `warpfit bench` that apply to the
//! tuple-fold benchmark, turned into
//! `warpfit_bench::tuple::TupleBenchOptions`; the run on the GPU with
//! progress on stderr, the Markdown report on stdout, in `--out` and as a
//! section of `--write`.

use super::bench::{write_section, BenchArgs};
use super::output::OutputFile;
use std::io::Write as _;
use std::time::Instant;
use warpfit::{Error, Result};
use warpfit_bench::tuple::{default_suite, run_tuple, small_suite, TupleBenchOptions};

/// The section of a Markdown file that `--write` replaces.
pub const SECTION: &str = "## Tuple folds against scalar folds (GPU, `warpfit bench tuple`)";

/// The benchmark's options from the command line: `--gen` replaces the
/// suite (RMAT 22 and uniform 2^22; `--small` or `--suite small`: RMAT 16
/// and uniform 2^18), `--mtx` files join it, `--variants` names the
/// decompositions (default `cte,thread`).
pub fn options(args: &BenchArgs) -> Result<TupleBenchOptions> {
    let matrices = super::bench::matrices(args, default_suite, small_suite, None)?;
    let mut opts = TupleBenchOptions::new(matrices);
    opts.runs = args.runs as usize;
    opts.warmup = args.warmup as usize;
    if !args.variants.is_empty() {
        opts.configs = TupleBenchOptions::configs_from_names(&args.variants)?;
    }
    opts.validate()?;
    Ok(opts)
}

/// Runs `warpfit bench tuple`. A GPU result that differs from its CPU twin
/// (or any other failure of a matrix) is listed in the report, which is
/// still printed and written to `--out`, and makes the run an error;
/// `--write` is then left untouched.
pub fn run(args: &BenchArgs) -> Result<()> {
    let opts = options(args)?;
    let open = |p: &Option<std::path::PathBuf>, what: &str| {
        p.as_deref().map(|p| OutputFile::open(p, what)).transpose()
    };
    let (out, write) = (open(&args.out, "--out")?, open(&args.write, "--write")?);
    let device = super::bench::open_gpu(args, "tuple", "")?;
    let command = super::bench::command_line();
    let start = Instant::now();
    let report = run_tuple(&device, &opts, &command, &mut |line| {
        eprintln!("[{:7.1} s] {line}", start.elapsed().as_secs_f64())
    })?;
    let md = report.to_markdown();
    say!("{md}");
    if let Some(out) = out {
        let path = args.out.clone().unwrap_or_default();
        out.write_with(|w| w.write_all(md.as_bytes()))?;
        eprintln!("wrote {}", path.display());
    }
    if !report.failures.is_empty() {
        return Err(Error::invalid(format!(
            "bench tuple: {} failure(s), --write left untouched: {}",
            report.failures.len(),
            report.failures.join("; ").replace('\n', " ")
        )));
    }
    if let Some(write) = write {
        let path = write.keep();
        write_section(&path, SECTION, &md)?;
        eprintln!("wrote the `{SECTION}` section of {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpfit_bench::MatrixSource;

    use crate::bench::{parse_for_test as parse, try_parse_for_test as try_parse};

    #[test]
    fn suites_and_options() {
        let o = options(&parse(&["tuple"])).unwrap();
        let names: Vec<String> = o.matrices.iter().map(MatrixSource::name).collect();
        assert_eq!(
            names,
            [
                "rmat:scale=22,edge_factor=16,seed=1",
                "uniform:n=4194304,per_row=16,seed=1"
            ]
        );
        let configs: Vec<&str> = o.configs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(configs, ["cte", "thread"]);
        assert_eq!((o.runs, o.warmup), (20, 3));
        let o = options(&parse(&["tuple", "--small"])).unwrap();
        assert!(o.matrices[0].name().starts_with("rmat:scale=16"));
        let o = options(&parse(&["tuple", "--suite", "small"])).unwrap();
        assert_eq!(o.matrices.len(), 2);
        let o = options(&parse(&[
            "tuple",
            "--gen",
            "grid2d:side=8",
            "--mtx",
            "m.mtx",
            "--variants",
            "cte",
            "--runs",
            "25",
            "--warmup",
            "0",
        ]))
        .unwrap();
        let names: Vec<String> = o.matrices.iter().map(MatrixSource::name).collect();
        assert_eq!(names, ["grid2d:side=8", "m.mtx"]);
        assert_eq!(o.configs.len(), 1);
        assert_eq!((o.runs, o.warmup), (25, 0));
    }

    #[test]
    fn bad_options_are_errors() {
        let e = options(&parse(&["tuple", "--variants", "warp"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--variants") && e.contains("warp"), "{e}");
        assert!(options(&parse(&["tuple", "--gen", "nonsense"])).is_err());
        assert!(try_parse(&["tuple", "--runs", "5"]).is_err());
        for args in [
            &["tuple", "--svg", "x.svg"][..],
            &["tuple", "--suite", "large"],
            &["tuple", "--cg-tol", "1e-3"],
            &["tuple", "--segment-lens", "8"],
        ] {
            let e = crate::bench::run(&parse(args)).unwrap_err().to_string();
            assert!(e.contains("belongs to"), "{args:?}: {e}");
        }
    }
}
