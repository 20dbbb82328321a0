//! The `warpfit` command line.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cli;

/// Counts the heap's live bytes, so that `warpfit partition` can report the
/// partitioner's peak heap (`peak_heap_bytes`) instead of the process RSS.
#[global_allocator]
static HEAP: warpfit::runtime::mem::CountingAlloc = warpfit::runtime::mem::CountingAlloc;

#[derive(Debug, Parser)]
#[command(name = "warpfit", version, about = "Warp-collaborative sparse and graph kernels", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Backend in use, device name, L2 size when there is a GPU.
    Info,
    /// Writes a generated matrix as Matrix Market.
    Gen(cli::gen::GenArgs),
    /// Runs an app (spmv, pagerank, sssp, bfs) on a matrix.
    Run(cli::run::RunArgs),
    /// Partitions a matrix's work graph into cache-sized pieces (DBWP).
    Partition(cli::partition::PartitionArgs),
    /// Times the GPU SpMV variants against cuSPARSE.
    Bench(cli::bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Info => cli::info::run(),
        Command::Gen(args) => cli::gen::run(args),
        Command::Run(args) => cli::run::run(args),
        Command::Partition(args) => cli::partition::run(args),
        Command::Bench(args) => cli::bench::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
