//! The `warpfit` command line: one module per subcommand (`bench*` drive
//! the harnesses of `warpfit-bench`).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// `println!` for the summaries on standard output, through [`say_line`]:
/// a closed pipe (`| head`) does not end the run with a panic.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say_line(format_args!($($arg)*))
    };
}

mod bench;
mod bench_apps;
mod bench_throttle;
mod bench_tuple;
mod gen;
mod info;
mod input;
mod output;
mod partition;
mod progress;
mod run;
mod vector;

/// Counts the heap's live bytes, so that `warpfit partition` can report the
/// partitioner's peak heap (`peak_heap_bytes`) instead of the process RSS.
#[global_allocator]
static HEAP: warpfit::runtime::mem::CountingAlloc = warpfit::runtime::mem::CountingAlloc;

#[derive(Debug, Parser)]
#[command(name = "warpfit", version, about = "Warp-collaborative sparse and graph kernels", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Most memory one allocation sized by the input may take (`8GiB`,
    /// `500MB`); larger inputs are refused with exit status 2 before
    /// allocating. Default: the WARPFIT_MEM_LIMIT environment variable, else
    /// the memory available now (MemAvailable, lowered to `ulimit -v`).
    #[arg(long, global = true, value_name = "BYTES")]
    mem_limit: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Backend in use, device name, L2 size when there is a GPU.
    Info,
    /// Writes a generated matrix as Matrix Market.
    Gen(gen::GenArgs),
    /// Runs an app (spmv, pagerank, sssp, bfs, cc, cg, mst, cfd, nn) on a matrix, a mesh or a network's layers.
    Run(run::RunArgs),
    /// Partitions a matrix's work graph into cache-sized pieces (DBWP).
    Partition(partition::PartitionArgs),
    /// Times the GPU SpMV variants against cuSPARSE (`spmv`), every app's
    /// iterations against its kernels and CG against cuSPARSE CG (`apps`),
    /// the throttled SpMV under every policy (`throttle`), or tuple folds
    /// against scalar folds (`tuple`).
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    if let Some(limit) = &cli.mem_limit {
        match warpfit::runtime::mem::parse_bytes(limit) {
            Ok(bytes) => warpfit::runtime::mem::set_limit(Some(bytes)),
            Err(e) => {
                eprintln!("error: --mem-limit: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let result = match &cli.command {
        Command::Info => info::run(),
        Command::Gen(args) => gen::run(args),
        Command::Run(args) => match run::run(args) {
            Ok(run::Outcome::Done) => Ok(()),
            // The output was written; the status says it is no answer.
            Ok(run::Outcome::NotConverged(why)) => {
                eprintln!("warning: cg did not converge: {why}");
                return ExitCode::from(1);
            }
            Ok(run::Outcome::Mismatch(why)) => {
                eprintln!("error: mst --check: {why}");
                return ExitCode::from(1);
            }
            Err(e) => Err(e),
        },
        Command::Partition(args) => partition::run(args),
        Command::Bench(args) => bench::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Writes one line on standard output. A reader that closed the pipe
/// (`| head`) asked for no more: the rest of the summary is dropped quietly
/// and the run goes on, so that its output files are still written. Any
/// other write error is one `error:` line and exit status 2.
fn say_line(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    match writeln!(std::io::stdout().lock(), "{line}") {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => {
            eprintln!("error: standard output: {e}");
            std::process::exit(2);
        }
    }
}

/// Help and version go to stdout as clap prints them (exit 0); a usage error
/// becomes one `error:` line on stderr with exit status 2, like every other
/// error, instead of clap's multi-line block.
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    eprintln!("error: {}", one_line_usage_error(&e.to_string()));
    ExitCode::from(2)
}

/// clap's rendered error without its `error: ` prefix, usage block and
/// `--help` hint, on one line: `the following required arguments were not
/// provided: --matrix <FILE.mtx>`, with the `--help` hint at the end.
fn one_line_usage_error(rendered: &str) -> String {
    let body = rendered.split("\n\nUsage:").next().unwrap_or(rendered);
    let body = body
        .split("\n\nFor more information")
        .next()
        .unwrap_or(body);
    let body = body.trim().strip_prefix("error:").unwrap_or(body).trim();
    let mut line = body.split_whitespace().collect::<Vec<_>>().join(" ");
    // Keep clap's suggestions (`tip: a similar argument exists: '--gen'`)
    // on the same line.
    line = line.replace(" tip: ", "; tip: ");
    format!("{line} (see --help)")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word of `text`, split at anything but letters, digits and `_`.
    fn words(text: &str) -> Vec<&str> {
        text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect()
    }

    /// The help's lists of apps and bench kinds name exactly what the code
    /// accepts: `warpfit --help` and `run --help` describe `run` by its app
    /// list, `bench`'s description names each kind.
    #[test]
    fn help_lists_what_the_code_accepts() {
        use clap::{CommandFactory, ValueEnum};
        let cli = Cli::command();
        let run = cli.find_subcommand("run").expect("a run subcommand");
        let about = run.get_about().expect("run has a description").to_string();
        let listed: Vec<&str> = about
            .split_once('(')
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(list, _)| list.split(", ").collect())
            .unwrap_or_default();
        let apps: Vec<String> = run::App::value_variants()
            .iter()
            .filter_map(|a| a.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect();
        assert_eq!(listed, apps, "run's description: {about}");

        let bench = cli.find_subcommand("bench").expect("a bench subcommand");
        let about = bench.get_about().expect("bench has a description");
        let about = words(&about.to_string())
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>();
        let kinds = bench
            .get_arguments()
            .find(|a| a.get_id() == "kernel")
            .expect("bench takes a kind")
            .get_possible_values();
        assert!(!kinds.is_empty());
        for kind in kinds {
            assert!(
                about.iter().any(|w| w == kind.get_name()),
                "bench's description does not name `{}`",
                kind.get_name()
            );
        }
    }

    /// `--iters` says which apps it is not for: each app that refuses it.
    #[test]
    fn iters_help_names_every_app_that_refuses_it() {
        use clap::{CommandFactory, ValueEnum};
        let cli = Cli::command();
        let run = cli.find_subcommand("run").expect("a run subcommand");
        let help = run
            .get_arguments()
            .find(|a| a.get_id() == "iters")
            .and_then(|a| a.get_long_help().or(a.get_help()))
            .expect("--iters has a help text")
            .to_string();
        let (_, refused) = help
            .split_once("Not for")
            .expect("--iters names the apps it is not for");
        let refused = words(refused);
        for app in run::App::value_variants() {
            let name = app.to_possible_value().expect("a visible app");
            let name = name.get_name();
            // cfd runs on a mesh, nn on a network's layers, every other
            // app on a matrix.
            let input = match name {
                "cfd" => ["--gen", "tetmesh:side=2"],
                "nn" => ["--model", "alexnet-fc"],
                _ => ["--gen", "grid2d:side=2"],
            };
            let args = ["warpfit", "run", name, input[0], input[1], "--iters", "2"];
            let Command::Run(args) = Cli::try_parse_from(args).expect("parses").command else {
                unreachable!("parsed as run")
            };
            let rejected = run::check_options(&args).is_err();
            assert_eq!(
                refused.contains(&name),
                rejected,
                "`{name}`: --iters's help: {help}"
            );
        }
    }

    #[test]
    fn usage_errors_fit_on_one_line() {
        for args in [
            vec!["warpfit", "run"],
            vec![
                "warpfit", "run", "spmv", "--gen", "rmat", "--matrix", "x.mtx",
            ],
            vec!["warpfit", "run", "spmv", "--gne", "rmat"],
            vec!["warpfit", "frobnicate"],
            vec!["warpfit", "run", "spmv", "--gen", "rmat", "--iters", "0"],
        ] {
            let e = Cli::try_parse_from(&args).unwrap_err();
            let line = one_line_usage_error(&e.to_string());
            assert!(!line.contains('\n'), "{args:?}: {line}");
            assert!(!line.starts_with("error"), "{args:?}: {line}");
            assert!(line.len() > 20, "{args:?}: {line}");
        }
    }
}
