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
    /// An allocation sized by the input that is larger than the memory
    /// warpfit may use, refused before it was made (see
    /// [`crate::mem`]), or a device buffer larger than the GPU's free memory:
    /// `what` needs `needed` bytes, over `limit` bytes whose origin (and how
    /// to change it) `source_of_limit` names.
    #[error(
        "out of memory: {what} needs {}, more than the limit of {} ({source_of_limit})",
        crate::mem::describe_bytes(*needed),
        crate::mem::describe_bytes(*limit)
    )]
    MemoryLimit {
        what: String,
        needed: u64,
        limit: u64,
        source_of_limit: String,
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

/// Most characters an error message spends quoting input (escapes
/// included).
pub const EXCERPT_CHARS: usize = 48;

/// A short, printable excerpt of input for error messages: at most
/// [`EXCERPT_CHARS`] characters of text, control and non-ASCII characters escaped
/// (`\t`, `\u{feff}`, `\xff` for bytes that are not UTF-8), and `…` plus the
/// total length when cut. Messages quote input this way so that a 300 MB line
/// makes a short message, control bytes cannot drive the terminal, and
/// invisible characters (a byte order mark) show.
pub fn excerpt(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        if out.len() >= EXCERPT_CHARS {
            out.push_str(&format!("… ({} bytes in all)", bytes.len()));
            return out;
        }
        let (c, len) = match std::str::from_utf8(&rest[..rest.len().min(4)]) {
            Ok(s) => first_char(s),
            Err(e) if e.valid_up_to() > 0 => {
                first_char(std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or_default())
            }
            Err(_) => (None, 1),
        };
        match c {
            Some(c) if c.is_ascii_graphic() || c == ' ' => out.push(c),
            Some(c) => out.extend(c.escape_default()),
            None => out.push_str(&format!("\\x{:02x}", rest[0])),
        }
        rest = &rest[len.max(1)..];
    }
    out
}

fn first_char(s: &str) -> (Option<char>, usize) {
    match s.chars().next() {
        Some(c) => (Some(c), c.len_utf8()),
        None => (None, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_short_and_escaped() {
        assert_eq!(excerpt(b"3 4 5"), "3 4 5");
        assert_eq!(excerpt(b"a\tb\x1b[2J"), "a\\tb\\u{1b}[2J");
        assert_eq!(excerpt("\u{feff}%%Matrix".as_bytes()), "\\u{feff}%%Matrix");
        assert_eq!(excerpt(&[b'x', 0xff, b'y']), "x\\xffy");
        let long = excerpt(&vec![b'7'; 300_000_000 / 1000]);
        assert!(long.starts_with(&"7".repeat(EXCERPT_CHARS)), "{long}");
        assert!(long.ends_with("(300000 bytes in all)"), "{long}");
        assert!(long.chars().count() < 80);
    }
}
