//! The `warpfit` command line: one module per subcommand.

pub mod gen;
pub mod info;
pub mod input;
pub mod run;
