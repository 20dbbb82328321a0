//! The `warpfit` command line: one module per subcommand.

pub mod bench;
pub mod bench_apps;
pub mod bench_throttle;
pub mod gen;
pub mod info;
pub mod input;
pub mod output;
pub mod partition;
pub mod progress;
pub mod run;
pub mod vector;
