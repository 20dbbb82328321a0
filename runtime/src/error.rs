//! The one error type of warpfit. Every public function returns [`Result`];
//! each variant names the problem precisely enough to act on it.

use std::path::PathBuf;

/// Result alias used across warpfit.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in warpfit, from a malformed Matrix Market
/// line to an NVRTC compile failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error on a named file.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A Matrix Market file that does not follow the format.
    #[error("{path}:{line}: {message}")]
    MatrixMarket {
        path: String,
        line: usize,
        message: String,
    },
    /// A size or index that does not fit the u32 indices warpfit stores.
    #[error("{what} = {value} does not fit in u32 (max {max})", max = u32::MAX)]
    U32Overflow { what: &'static str, value: u64 },
    /// An index outside its array.
    #[error("{what}: index {index} out of range for length {len}")]
    IndexOutOfRange { what: String, index: u64, len: u64 },
    /// Two sizes that must agree and do not.
    #[error("{what}: expected length {expected}, got {got}")]
    LengthMismatch {
        what: String,
        expected: u64,
        got: u64,
    },
    /// A sparse structure that breaks an invariant (unsorted pointers, …).
    #[error("invalid {format}: {message}")]
    InvalidMatrix {
        format: &'static str,
        message: String,
    },
    /// A task list that does not fit the kernel it is launched with.
    #[error("invalid task list: {0}")]
    InvalidTaskList(String),
    /// An integer division or remainder by zero inside a kernel.
    #[error("kernel `{kernel}`: integer division by zero in task {task}")]
    DivisionByZero { kernel: &'static str, task: u64 },
    /// A bad argument to a public function (CLI specs, options, parameters).
    #[error("{0}")]
    InvalidArgument(String),
    /// The requested backend or library is not available on this machine.
    #[error("{what} is not available: {reason}")]
    Unavailable { what: String, reason: String },
    /// NVRTC rejected generated CUDA; carries the log and the source.
    #[error("NVRTC failed to compile kernel `{kernel}` for {arch}:\n{log}\n--- generated source ---\n{source_text}")]
    Compile {
        kernel: String,
        arch: String,
        log: String,
        source_text: String,
    },
    /// A CUDA driver, cuSPARSE or device-memory error (out of memory included).
    #[error("CUDA error in {context}: {message}")]
    Cuda { context: String, message: String },
}

impl Error {
    /// Shorthand for an [`Error::InvalidArgument`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }

    /// Shorthand for an [`Error::IndexOutOfRange`].
    pub fn out_of_range(what: impl Into<String>, index: impl TryInto<u64>, len: usize) -> Self {
        Error::IndexOutOfRange {
            what: what.into(),
            index: index.try_into().unwrap_or(u64::MAX),
            len: len as u64,
        }
    }

    /// Shorthand for an [`Error::LengthMismatch`].
    pub fn length(what: impl Into<String>, expected: usize, got: usize) -> Self {
        Error::LengthMismatch {
            what: what.into(),
            expected: expected as u64,
            got: got as u64,
        }
    }
}

/// Converts a size to u32 or reports which quantity overflowed.
pub fn to_u32(what: &'static str, value: usize) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::U32Overflow {
        what,
        value: value as u64,
    })
}
