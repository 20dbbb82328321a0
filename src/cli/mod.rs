//! The `warpfit` command line: one module per subcommand.

pub mod bench;
pub mod gen;
pub mod info;
pub mod input;
pub mod partition;
pub mod run;
