//! The part of warpfit that needs no GPU: sparse formats and Matrix Market I/O
//! ([`sparse`]), deterministic input generators ([`gen`]), the work-graph
//! partitioner ([`partition`]), cache-fit schedules built on its partitions
//! ([`schedule`]), sequential reference graph algorithms ([`mod@reference`]),
//! the memory budget every input-sized
//! allocation is checked against ([`mem`]) and the task model plus CPU executor that every
//! `#[nested_reduce]` kernel runs on when there is no GPU ([`exec`]), and the
//! worklists and shared arrays that push kernels write ([`worklist`]).

pub mod distribute;
pub mod error;
pub mod exec;
pub mod gen;
pub mod mem;
pub mod partition;
pub mod reference;
mod rng;
pub mod schedule;
pub mod sparse;
pub mod worklist;

pub use error::{Error, Result};
pub use exec::{Segment, TaskList, Tasks};
pub use sparse::{Coo, Csr};
