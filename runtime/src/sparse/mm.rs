//! Matrix Market I/O (coordinate format).
//!
//! Reading supports the fields `real`, `integer` and `pattern` (pattern
//! entries become 1) and the symmetries `general`, `symmetric` and
//! `skew-symmetric`: every stored off-diagonal entry `(i, j, v)` is mirrored as
//! `(j, i, v)`, or `(j, i, -v)` for skew-symmetric files, whose diagonal must be
//! zero. Either triangle may be stored; the mirrored entries are appended after
//! the stored ones. `complex`, `hermitian`, `array` and `vector` files are
//! rejected with an "unsupported" error.
//!
//! Every error carries the file name and the 1-based line number and says what
//! was expected there, quoting at most a short escaped excerpt of the input
//! ([`excerpt`]). Comments (`%`) and blank lines are accepted anywhere.
//!
//! Untrusted files are safe to read: no line may be longer than
//! [`MAX_LINE_BYTES`] (so a file without newlines, or `/dev/zero`, is an
//! error after 1 MiB rather than a read into all memory); values must be
//! finite (`inf`, `nan` and decimals beyond the type's range such as `1e999`
//! are errors, not silent infinities); and memory grows with the entries the
//! file holds, each growth checked against the budget of [`crate::mem`], never
//! with what the size line claims (a size line may lie).
//!
//! The reader parses bytes, never allocating per line: the data section is
//! read in blocks of whole lines which are parsed in parallel and appended in
//! file order, so the result does not depend on the number of threads.
//! Writing emits `real` (floats) or `integer` general files, row by row, with
//! floats in the shortest form that reads back to the identical value (at most
//! 17 significant digits for `f64`, 9 for `f32`).

use super::coo::Coo;
use super::csr::Csr;
use super::par;
use crate::error::{excerpt, to_u32};
use crate::mem;
use crate::{Error, Result};
use rayon::prelude::*;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// The `field` of a Matrix Market banner (complex is not supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmField {
    /// Floating-point values.
    Real,
    /// Integer values.
    Integer,
    /// No values: the structure only; entries read as 1.
    Pattern,
}

/// The `symmetry` of a Matrix Market banner (hermitian is not supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmSymmetry {
    /// Every entry is stored.
    General,
    /// `a(i,j) = a(j,i)`; one triangle is stored.
    Symmetric,
    /// `a(i,j) = -a(j,i)`, zero diagonal; one triangle is stored.
    SkewSymmetric,
}

/// What the banner and the size line of a coordinate file declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmHeader {
    /// Value field.
    pub field: MmField,
    /// Symmetry.
    pub symmetry: MmSymmetry,
    /// Number of rows.
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Number of entries stored in the file (before symmetric expansion).
    pub entries: usize,
}

impl fmt::Display for MmField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MmField::Real => "real",
            MmField::Integer => "integer",
            MmField::Pattern => "pattern",
        })
    }
}

impl fmt::Display for MmSymmetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MmSymmetry::General => "general",
            MmSymmetry::Symmetric => "symmetric",
            MmSymmetry::SkewSymmetric => "skew-symmetric",
        })
    }
}

/// A value type that Matrix Market files can be read into and written from.
///
/// Implemented for `f32`, `f64` (from `real`, `integer` and `pattern` files;
/// written as `real`) and `i32`, `i64`, `u32` (from `integer` and `pattern`
/// files; written as `integer`). Integers out of the type's range and negative
/// values for `u32` (including the mirror of a skew-symmetric entry) are errors
/// at the offending line.
pub trait MmValue: Copy + Send + Sync + 'static {
    /// Type name used in error messages.
    const NAME: &'static str;
    /// The field this type is written as (`Real` or `Integer`).
    const FIELD: MmField;
    /// Parses a `real` token (only called when `FIELD` is `Real`), correctly
    /// rounded to the type.
    fn parse_real(token: &[u8]) -> Option<Self>;
    /// Converts an `integer` value, `None` when out of range.
    fn from_i64(v: i64) -> Option<Self>;
    /// The value of a `pattern` entry.
    fn one() -> Self;
    /// Whether the value is zero (skew-symmetric diagonals must be).
    fn is_zero(self) -> bool;
    /// Whether the value is finite (integers always are); the reader
    /// rejects infinities and NaN.
    fn is_finite(self) -> bool {
        true
    }
    /// Negation, `None` when not representable.
    fn checked_neg(self) -> Option<Self>;
    /// Appends the value's text to `out`.
    fn write_to(self, out: &mut Vec<u8>);
}

macro_rules! mm_float {
    ($t:ty, $mant_max:expr, $exp_max:expr, $pow10:expr, $wider:expr) => {
        impl MmValue for $t {
            const NAME: &'static str = stringify!($t);
            const FIELD: MmField = MmField::Real;
            fn parse_real(token: &[u8]) -> Option<Self> {
                // Exact fast path (one correctly rounded operation on exact
                // operands), else the standard library's parser.
                if let Some((neg, m, e)) = simple_decimal(token) {
                    if m <= $mant_max && (-$exp_max..=$exp_max).contains(&e) {
                        let x = m as $t;
                        let p = $pow10[e.unsigned_abs() as usize];
                        let x = if e >= 0 { x * p } else { x / p };
                        return Some(if neg { -x } else { x });
                    }
                    if let Some(x) = $wider(neg, m, e) {
                        return Some(x);
                    }
                }
                std::str::from_utf8(token).ok()?.parse().ok()
            }
            fn from_i64(v: i64) -> Option<Self> {
                // Exact up to 2^24 (f32) / 2^53 (f64), rounded beyond.
                Some(v as $t)
            }
            fn one() -> Self {
                1.0
            }
            fn is_zero(self) -> bool {
                self == 0.0
            }
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            fn checked_neg(self) -> Option<Self> {
                Some(-self)
            }
            fn write_to(self, out: &mut Vec<u8>) {
                // Rust prints the shortest digits that read back to the same
                // value; plain notation in the usual range, exponent outside
                // it so tiny and huge values stay short.
                let a = self.abs();
                let r = if self == 0.0 || (1e-5..1e16).contains(&a) || !a.is_finite() {
                    write!(out, "{self}")
                } else {
                    write!(out, "{self:e}")
                };
                r.expect("writing to a Vec cannot fail");
            }
        }
    };
}
// Clinger's fast path: integers up to 2^24 (f32) / 2^53 (f64) and powers of
// ten up to 10^10 / 10^22 are exact, so one multiplication or division is
// correctly rounded.
mm_float!(f32, 1 << 24, 10, POW10_F32, f32_via_f64);
mm_float!(f64, 1 << 53, 22, POW10_F64, |_, _, _| None);

/// The f32 nearest to `±m · 10^e` through the f64 fast path, when that is
/// provably the same as rounding the decimal directly: the f64 result is
/// correctly rounded, and rounding it again to f32 can only differ when it
/// landed exactly on a midpoint between two f32s (every such midpoint is an
/// f64, so a correctly rounded f64 cannot cross one). Midpoints and the f32
/// subnormal range (where the midpoint spacing changes) go to the slow path.
#[inline]
fn f32_via_f64(neg: bool, m: u64, e: i32) -> Option<f32> {
    if m > 1 << 53 || !(-22..=22).contains(&e) {
        return None;
    }
    let p = POW10_F64[e.unsigned_abs() as usize];
    let x = if e >= 0 { m as f64 * p } else { m as f64 / p };
    const LOW: u64 = (1 << 29) - 1; // f64 mantissa bits below f32 precision
    if x < f32::MIN_POSITIVE as f64 || x.to_bits() & LOW == 1 << 28 {
        return None;
    }
    let y = x as f32;
    Some(if neg { -y } else { y })
}

const POW10_F32: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];
const POW10_F64: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Splits a plain decimal token `[+-]digits[.digits][(e|E)[+-]digits]` into
/// `(negative, mantissa, exponent)` with value `±mantissa · 10^exponent`;
/// `None` for anything else (too many digits, `inf`, `nan`, ...), which the
/// caller hands to the standard parser.
#[inline]
fn simple_decimal(tok: &[u8]) -> Option<(bool, u64, i32)> {
    let (neg, mut i) = match tok.first()? {
        b'-' => (true, 1),
        b'+' => (false, 1),
        _ => (false, 0),
    };
    let mut m: u64 = 0;
    let mut digits = 0u32;
    let mut any = false;
    let mut e: i32 = 0;
    while let Some(&b) = tok.get(i) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        any = true;
        if m != 0 || d != 0 {
            digits += 1;
        }
        m = m.wrapping_mul(10).wrapping_add(d as u64);
        i += 1;
    }
    if tok.get(i) == Some(&b'.') {
        i += 1;
        while let Some(&b) = tok.get(i) {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            any = true;
            if m != 0 || d != 0 {
                digits += 1;
            }
            m = m.wrapping_mul(10).wrapping_add(d as u64);
            e -= 1;
            i += 1;
        }
    }
    if !any || digits > 19 {
        return None;
    }
    if let Some(b'e' | b'E') = tok.get(i) {
        i += 1;
        let eneg = match tok.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let mut x: i32 = 0;
        let start = i;
        while let Some(&b) = tok.get(i) {
            let d = b.wrapping_sub(b'0');
            if d > 9 || x > 100_000 {
                return None;
            }
            x = x * 10 + d as i32;
            i += 1;
        }
        if i == start {
            return None;
        }
        e += if eneg { -x } else { x };
    }
    (i == tok.len()).then_some((neg, m, e))
}

macro_rules! mm_int {
    ($t:ty) => {
        impl MmValue for $t {
            const NAME: &'static str = stringify!($t);
            const FIELD: MmField = MmField::Integer;
            fn parse_real(_: &[u8]) -> Option<Self> {
                None
            }
            fn from_i64(v: i64) -> Option<Self> {
                <$t>::try_from(v).ok()
            }
            fn one() -> Self {
                1
            }
            fn is_zero(self) -> bool {
                self == 0
            }
            fn checked_neg(self) -> Option<Self> {
                (0 as $t).checked_sub(self)
            }
            fn write_to(self, out: &mut Vec<u8>) {
                write!(out, "{self}").expect("writing to a Vec cannot fail");
            }
        }
    };
}
mm_int!(i32);
mm_int!(i64);
mm_int!(u32);

/// Reads a coordinate Matrix Market file (see the module docs).
pub fn read<T: MmValue>(path: &Path) -> Result<Coo<T>> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let name = path.display().to_string();
    read_from(BufReader::with_capacity(1 << 16, file), &name)
}

/// Reads a coordinate Matrix Market file and converts it to CSR (rows keep
/// the file order of their entries; symmetric mirrors come after).
pub fn read_csr<T: MmValue>(path: &Path) -> Result<Csr<T>> {
    read::<T>(path)?.into_csr()
}

/// Reads the banner and size line only.
pub fn read_header(path: &Path) -> Result<MmHeader> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let name = path.display().to_string();
    let mut reader = BufReader::new(file);
    Ok(parse_header(&mut reader, &name)?.0)
}

/// Reads Matrix Market text from any reader; `name` is used in error
/// messages in place of a file name.
pub fn read_from<R: BufRead, T: MmValue>(reader: R, name: &str) -> Result<Coo<T>> {
    Ok(read_with_header_from(reader, name)?.1)
}

/// Like [`read_from`], also returning the header.
pub fn read_with_header_from<R: BufRead, T: MmValue>(
    mut reader: R,
    name: &str,
) -> Result<(MmHeader, Coo<T>)> {
    let (header, next_line) = parse_header(&mut reader, name)?;
    if header.field == MmField::Real && T::FIELD == MmField::Integer {
        return Err(mm_err(
            name,
            1,
            format!(
                "field `real` cannot be read as {}: read it as f32 or f64",
                T::NAME
            ),
        ));
    }
    let coo = read_entries::<R, T>(reader, name, &header, next_line, READ_BLOCK)?;
    Ok((header, coo))
}

/// Writes `m` as a `coordinate general` file whose field follows `T`
/// ([`MmValue::FIELD`]), entries row by row in storage order.
pub fn write<T: MmValue>(path: &Path, m: &Csr<T>) -> Result<()> {
    let file = File::create(path).map_err(|e| io_err(path, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    write_to(&mut w, m).map_err(|e| io_err(path, e))?;
    w.flush().map_err(|e| io_err(path, e))
}

/// Writes Matrix Market text to any writer (see [`write()`]).
pub fn write_to<W: Write, T: MmValue>(w: &mut W, m: &Csr<T>) -> std::io::Result<()> {
    writeln!(w, "%%MatrixMarket matrix coordinate {} general", T::FIELD)?;
    writeln!(w, "{} {} {}", m.nrows(), m.ncols(), m.nnz())?;
    // Format blocks of about 1M entries in parallel, a few blocks at a time
    // so the text in memory stays bounded whatever the matrix size.
    const BLOCK: usize = 1 << 20;
    let bounds = par::row_blocks(m.row_ptr(), m.nnz() / BLOCK + 1);
    let blocks: Vec<(usize, usize)> = bounds.windows(2).map(|b| (b[0], b[1])).collect();
    let batch = 2 * rayon::current_num_threads().max(1);
    for group in blocks.chunks(batch) {
        let texts: Vec<Vec<u8>> = group
            .par_iter()
            .map(|&(lo, hi)| {
                let n = (m.row_ptr()[hi] - m.row_ptr()[lo]) as usize;
                let mut out = Vec::with_capacity(n * 24);
                for r in lo..hi {
                    let (cols, vals) = m.row(r);
                    for (&c, &v) in cols.iter().zip(vals) {
                        push_uint(&mut out, r as u64 + 1);
                        out.push(b' ');
                        push_uint(&mut out, c as u64 + 1);
                        out.push(b' ');
                        v.write_to(&mut out);
                        out.push(b'\n');
                    }
                }
                out
            })
            .collect();
        for t in texts {
            w.write_all(&t)?;
        }
    }
    Ok(())
}

fn push_uint(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn mm_err(name: &str, line: usize, message: impl Into<String>) -> Error {
    Error::MatrixMarket {
        path: name.to_string(),
        line,
        message: message.into(),
    }
}

const BANNER_FORM: &str = "`%%MatrixMarket matrix coordinate <real|integer|pattern> \
                           <general|symmetric|skew-symmetric>`";

/// Parses the banner, comments and size line. Returns the header and the
/// number of the first line after the size line.
fn parse_header<R: BufRead>(reader: &mut R, name: &str) -> Result<(MmHeader, usize)> {
    let mut line = Vec::new();
    let read_line = |reader: &mut R, line: &mut Vec<u8>, lineno: usize| -> Result<bool> {
        line.clear();
        // One byte more than the limit tells a line of exactly the limit
        // (without its newline) from a longer one.
        let n = reader
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', line)
            .map_err(|e| Error::Io {
                path: name.into(),
                source: e,
            })?;
        if line.len() > MAX_LINE_BYTES && line.last() != Some(&b'\n') {
            return Err(line_too_long(name, lineno));
        }
        Ok(n > 0)
    };
    if !read_line(reader, &mut line, 1)? {
        return Err(mm_err(
            name,
            1,
            format!("empty file: expected the banner {BANNER_FORM}"),
        ));
    }
    let (field, symmetry) = parse_banner(&line, name)?;
    // Comments and blank lines, then the size line.
    let mut lineno = 1;
    loop {
        lineno += 1;
        if !read_line(reader, &mut line, lineno)? {
            return Err(mm_err(
                name,
                lineno,
                "truncated file: expected the size line `rows cols entries`",
            ));
        }
        let text = String::from_utf8_lossy(&line);
        let t = text.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let header = parse_size_line(t, field, symmetry, name, lineno)?;
        return Ok((header, lineno + 1));
    }
}

/// The banner line `%%MatrixMarket matrix coordinate FIELD SYMMETRY`:
/// its field and symmetry, or the error naming what is wrong.
fn parse_banner(line: &[u8], name: &str) -> Result<(MmField, MmSymmetry)> {
    if line.starts_with("\u{feff}".as_bytes()) {
        return Err(mm_err(
            name,
            1,
            format!(
                "bad header: the file starts with a UTF-8 byte order mark (bytes EF BB BF) \
                 before the banner; remove it. Expected {BANNER_FORM}, found `{}`",
                excerpt(line.trim_ascii())
            ),
        ));
    }
    let banner = String::from_utf8_lossy(line).to_ascii_lowercase();
    let tokens: Vec<&str> = banner.split_ascii_whitespace().collect();
    if tokens.first() != Some(&"%%matrixmarket") {
        return Err(mm_err(
            name,
            1,
            format!(
                "bad header: expected the banner {BANNER_FORM}, found `{}`",
                excerpt(banner.trim().as_bytes())
            ),
        ));
    }
    if tokens.len() != 5 {
        return Err(mm_err(
            name,
            1,
            format!(
                "bad header: expected 5 words {BANNER_FORM}, found {}",
                tokens.len()
            ),
        ));
    }
    if tokens[1] != "matrix" {
        return Err(mm_err(
            name,
            1,
            format!(
                "unsupported object `{}`: only `matrix` is supported",
                excerpt(tokens[1].as_bytes())
            ),
        ));
    }
    if tokens[2] != "coordinate" {
        return Err(mm_err(
            name,
            1,
            format!(
                "unsupported format `{}`: only `coordinate` (sparse) is supported",
                excerpt(tokens[2].as_bytes())
            ),
        ));
    }
    let field = match tokens[3] {
        "real" | "double" => MmField::Real,
        "integer" => MmField::Integer,
        "pattern" => MmField::Pattern,
        "complex" => {
            return Err(mm_err(
                name,
                1,
                "unsupported field `complex`: only real, integer and pattern are supported",
            ))
        }
        other => {
            return Err(mm_err(
                name,
                1,
                format!(
                    "bad header: unknown field `{}`, expected real, integer or pattern",
                    excerpt(other.as_bytes())
                ),
            ))
        }
    };
    let symmetry = match tokens[4] {
        "general" => MmSymmetry::General,
        "symmetric" => MmSymmetry::Symmetric,
        "skew-symmetric" => MmSymmetry::SkewSymmetric,
        "hermitian" => {
            return Err(mm_err(
                name,
                1,
                "unsupported symmetry `hermitian` (complex matrices are not supported)",
            ))
        }
        other => {
            return Err(mm_err(
                name,
                1,
                format!(
                    "bad header: unknown symmetry `{}`, expected general, symmetric or \
                     skew-symmetric",
                    excerpt(other.as_bytes())
                ),
            ))
        }
    };
    if field == MmField::Pattern && symmetry == MmSymmetry::SkewSymmetric {
        return Err(mm_err(
            name,
            1,
            "bad header: a pattern matrix cannot be skew-symmetric",
        ));
    }
    Ok((field, symmetry))
}

/// The size line `rows cols entries` (line `lineno`, trimmed) of a file
/// whose banner gave `field` and `symmetry`.
fn parse_size_line(
    t: &str,
    field: MmField,
    symmetry: MmSymmetry,
    name: &str,
    lineno: usize,
) -> Result<MmHeader> {
    let fields: Vec<&str> = t.split_ascii_whitespace().collect();
    let bad = || {
        mm_err(
            name,
            lineno,
            format!(
                "bad size line: expected three non-negative integers `rows cols entries`, \
                 found `{}`",
                excerpt(t.as_bytes())
            ),
        )
    };
    if fields.len() != 3 {
        return Err(bad());
    }
    let mut v = [0usize; 3];
    for (k, f) in fields.iter().enumerate() {
        v[k] = match f.parse() {
            Ok(x) => x,
            // All digits but no usize: say so rather than "not an integer".
            Err(_) if f.bytes().all(|b| b.is_ascii_digit()) => {
                return Err(mm_err(
                    name,
                    lineno,
                    format!(
                        "bad size line: `{}` is too large (max {})",
                        excerpt(f.as_bytes()),
                        usize::MAX
                    ),
                ))
            }
            Err(_) => return Err(bad()),
        };
    }
    let [nrows, ncols, entries] = v;
    for (what, x) in [("nrows", nrows), ("ncols", ncols)] {
        to_u32(what, x).map_err(|e| mm_err(name, lineno, format!("bad size line: {e}")))?;
    }
    if symmetry != MmSymmetry::General && nrows != ncols {
        return Err(mm_err(
            name,
            lineno,
            format!("bad size line: a {symmetry} matrix must be square, found {nrows} x {ncols}"),
        ));
    }
    Ok(MmHeader {
        field,
        symmetry,
        nrows,
        ncols,
        entries,
    })
}

/// The entries of one block of whole lines.
struct Block<T> {
    rows: Vec<u32>,
    cols: Vec<u32>,
    vals: Vec<T>,
    /// Newlines consumed (the block's line count if no error).
    lines: usize,
    /// `(0-based line within the block, message)` of the first error.
    err: Option<(usize, String)>,
}

/// Data-section size of one parse block.
const READ_BLOCK: usize = 1 << 20;

/// Longest line accepted, in bytes, newline excluded. A data line holds two
/// indices and a value (under 100 bytes); comments may be long, but a line
/// of a megabyte is not text anyone wrote, and without a bound a file with
/// no newline would be read whole into memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

fn line_too_long(name: &str, line: usize) -> Error {
    mm_err(name, line, line_too_long_message())
}

fn line_too_long_message() -> String {
    format!("line longer than {MAX_LINE_BYTES} bytes (is this a Matrix Market text file?)")
}

/// The first line (0-based within `block`) longer than [`MAX_LINE_BYTES`],
/// newline excluded.
fn first_long_line(block: &[u8]) -> Option<usize> {
    block
        .split(|&b| b == b'\n')
        .position(|line| line.len() > MAX_LINE_BYTES)
}

fn read_entries<R: BufRead, T: MmValue>(
    mut reader: R,
    name: &str,
    header: &MmHeader,
    first_line: usize,
    block: usize,
) -> Result<Coo<T>> {
    let declared = header.entries;
    let mut rows: Vec<u32> = Vec::new();
    let mut cols: Vec<u32> = Vec::new();
    let mut vals: Vec<T> = Vec::new();
    // The size line may lie: reserve what it claims only if that fits the
    // memory budget (and the allocator agrees); otherwise grow with what the
    // file holds, each growth checked.
    let entry_bytes = (8 + std::mem::size_of::<T>()) as u64;
    let fits = (declared as u64)
        .checked_mul(entry_bytes)
        .is_some_and(|b| mem::check("entries", b).is_ok());
    if fits {
        let _ = rows
            .try_reserve_exact(declared)
            .and_then(|_| cols.try_reserve_exact(declared))
            .and_then(|_| vals.try_reserve_exact(declared));
    }

    let batch = 2 * rayon::current_num_threads().max(1);
    let mut carry: Vec<u8> = Vec::new();
    let mut line = first_line;
    let mut eof = false;
    while !eof {
        // Read a batch of blocks, each ending at a newline (except the last).
        let mut blocks: Vec<Vec<u8>> = Vec::with_capacity(batch);
        while blocks.len() < batch && !eof {
            let mut buf = std::mem::take(&mut carry);
            let want = buf.len() + block;
            buf.reserve(block);
            while buf.len() < want {
                let n = (&mut reader)
                    .take((want - buf.len()) as u64)
                    .read_to_end(&mut buf)
                    .map_err(|e| Error::Io {
                        path: name.into(),
                        source: e,
                    })?;
                if n == 0 {
                    eof = true;
                    break;
                }
            }
            if !eof {
                match buf.iter().rposition(|&b| b == b'\n') {
                    Some(p) => carry = buf.split_off(p + 1),
                    None if buf.len() > MAX_LINE_BYTES => {
                        let before: usize = blocks
                            .iter()
                            .map(|b| b.iter().filter(|&&c| c == b'\n').count())
                            .sum();
                        return Err(line_too_long(name, line + before));
                    }
                    // A single line longer than a block: keep reading it.
                    None => {
                        carry = buf;
                        continue;
                    }
                }
            } else if buf.len() > MAX_LINE_BYTES && !buf.contains(&b'\n') {
                let before: usize = blocks
                    .iter()
                    .map(|b| b.iter().filter(|&&c| c == b'\n').count())
                    .sum();
                return Err(line_too_long(name, line + before));
            }
            if !buf.is_empty() {
                blocks.push(buf);
            }
        }
        // A line may span the blocks' boundary and so pass the checks
        // above at up to two blocks long: each block's lines are measured
        // too, the first too long one reported unless an error comes first.
        let parsed: Vec<Block<T>> = blocks
            .par_iter()
            .map(|b| {
                let mut parsed = parse_block::<T>(b, header, usize::MAX);
                if let Some(l) = first_long_line(b) {
                    if parsed.err.as_ref().map_or(true, |(e, _)| *e > l) {
                        parsed.err = Some((l, line_too_long_message()));
                    }
                }
                parsed
            })
            .collect();
        for (bytes, block) in blocks.iter().zip(parsed) {
            let have = rows.len();
            if have + block.rows.len() > declared {
                // Find the first entry beyond the declared count.
                let again = parse_block::<T>(bytes, header, declared - have);
                let (l, msg) = again
                    .err
                    .expect("a limited re-parse reports the extra entry");
                return Err(mm_err(name, line + l, msg));
            }
            if let Some((l, msg)) = block.err {
                return Err(mm_err(name, line + l, msg));
            }
            let k = block.rows.len();
            mem::try_reserve(&mut rows, k, "the row indices of the entries read")?;
            mem::try_reserve(&mut cols, k, "the column indices of the entries read")?;
            mem::try_reserve(&mut vals, k, "the values of the entries read")?;
            rows.extend_from_slice(&block.rows);
            cols.extend_from_slice(&block.cols);
            vals.extend_from_slice(&block.vals);
            line += block.lines;
        }
    }
    if rows.len() < declared {
        // `line` is one past the last line of the file.
        return Err(mm_err(
            name,
            line - 1,
            format!(
                "truncated file: the size line declares {declared} entries, found only {}",
                rows.len()
            ),
        ));
    }
    if header.symmetry != MmSymmetry::General {
        mirror(&mut rows, &mut cols, &mut vals, header.symmetry)?;
    }
    Ok(Coo::from_parts_unchecked(
        header.nrows,
        header.ncols,
        rows,
        cols,
        vals,
    ))
}

/// Appends the mirror of every off-diagonal entry (negated for skew; the
/// parser has already checked that the negation exists).
fn mirror<T: MmValue>(
    rows: &mut Vec<u32>,
    cols: &mut Vec<u32>,
    vals: &mut Vec<T>,
    sym: MmSymmetry,
) -> Result<()> {
    let n = rows.len();
    let off = rows.iter().zip(cols.iter()).filter(|(r, c)| r != c).count();
    let what = "the mirrored entries of a symmetric matrix";
    for (v, extra) in [(&mut *rows, off), (&mut *cols, off)] {
        if v.capacity() < v.len() + extra {
            mem::check_elems::<u32>(what, v.len() + extra)?;
            v.try_reserve_exact(extra)
                .map_err(|_| alloc_refused(what))?;
        }
    }
    if vals.capacity() < n + off {
        mem::check_elems::<T>(what, n + off)?;
        vals.try_reserve_exact(off)
            .map_err(|_| alloc_refused(what))?;
    }
    for k in 0..n {
        let (r, c) = (rows[k], cols[k]);
        if r != c {
            rows.push(c);
            cols.push(r);
            let v = vals[k];
            vals.push(match sym {
                MmSymmetry::SkewSymmetric => v.checked_neg().unwrap_or(v),
                _ => v,
            });
        }
    }
    Ok(())
}

fn alloc_refused(what: &str) -> Error {
    Error::invalid(format!("out of memory: the allocator refused {what}"))
}

#[inline]
fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t' || b == b'\r'
}

/// Parses the data lines in `buf` (whole lines; the last may lack its
/// newline). At most `limit` entries are accepted; one more is an error.
fn parse_block<T: MmValue>(buf: &[u8], h: &MmHeader, limit: usize) -> Block<T> {
    let mut out = Block {
        rows: Vec::with_capacity(buf.len() / 16),
        cols: Vec::with_capacity(buf.len() / 16),
        vals: Vec::with_capacity(buf.len() / 16),
        lines: 0,
        err: None,
    };
    let n = buf.len();
    let mut i = 0;
    while i < n {
        match parse_line::<T>(buf, &mut i, h) {
            Ok(None) => {}
            Ok(Some((r, c, v))) => {
                if out.rows.len() == limit {
                    out.err = Some((
                        out.lines,
                        format!(
                            "extra entry: the size line declares {} entries, this is entry {}",
                            h.entries,
                            h.entries + 1
                        ),
                    ));
                    return out;
                }
                out.rows.push(r);
                out.cols.push(c);
                out.vals.push(v);
            }
            Err(msg) => {
                out.err = Some((out.lines, msg));
                return out;
            }
        }
        // `parse_line` leaves `i` just past the newline (or at the end).
        out.lines += 1;
    }
    out
}

/// Parses one line starting at `*i`; leaves `*i` after its newline. Returns
/// `None` for blank and comment lines.
#[inline]
fn parse_line<T: MmValue>(
    buf: &[u8],
    i: &mut usize,
    h: &MmHeader,
) -> std::result::Result<Option<(u32, u32, T)>, String> {
    let n = buf.len();
    let mut p = *i;
    while p < n && is_blank(buf[p]) {
        p += 1;
    }
    if p == n || buf[p] == b'\n' || buf[p] == b'%' {
        while p < n && buf[p] != b'\n' {
            p += 1;
        }
        *i = p + 1;
        return Ok(None);
    }
    let row = parse_index(buf, &mut p, "row", h.nrows)?;
    let col = parse_index(buf, &mut p, "column", h.ncols)?;
    let value = match h.field {
        MmField::Pattern => T::one(),
        field => {
            skip_blanks(buf, &mut p);
            let start = p;
            while p < n && !is_blank(buf[p]) && buf[p] != b'\n' {
                p += 1;
            }
            if start == p {
                return Err(format!(
                    "expected 3 fields `row col value` for a {field} matrix, found 2"
                ));
            }
            let tok = &buf[start..p];
            parse_value::<T>(tok, field)?
        }
    };
    skip_blanks(buf, &mut p);
    if p < n && buf[p] != b'\n' {
        let end = buf[p..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(n, |e| p + e);
        let expected = if h.field == MmField::Pattern {
            "2 fields `row col` for a pattern matrix"
        } else {
            "3 fields `row col value`"
        };
        return Err(format!(
            "expected {expected}, found extra text `{}`",
            excerpt(buf[p..end].trim_ascii())
        ));
    }
    *i = p + 1;
    if h.symmetry == MmSymmetry::SkewSymmetric {
        if row == col && !value.is_zero() {
            return Err(format!(
                "skew-symmetric matrix with a nonzero diagonal entry at ({}, {})",
                row + 1,
                col + 1
            ));
        }
        if value.checked_neg().is_none() {
            return Err(format!(
                "the mirrored entry (negated value) of this skew-symmetric entry does not fit {}",
                T::NAME
            ));
        }
    }
    Ok(Some((row, col, value)))
}

#[inline]
fn skip_blanks(buf: &[u8], p: &mut usize) {
    while *p < buf.len() && is_blank(buf[*p]) {
        *p += 1;
    }
}

/// Parses a 1-based index token and returns it 0-based.
#[inline(always)]
fn parse_index(
    buf: &[u8],
    p: &mut usize,
    what: &str,
    size: usize,
) -> std::result::Result<u32, String> {
    skip_blanks(buf, p);
    let start = *p;
    let mut v: u64 = 0;
    while let Some(&b) = buf.get(*p) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(d as u64);
        *p += 1;
    }
    let end_ok = buf.get(*p).map_or(true, |&b| is_blank(b) || b == b'\n');
    // 19 digits cannot overflow u64; longer tokens are out of range anyway.
    let digits = *p - start;
    if digits == 0 || digits > 19 || !end_ok || v == 0 || v > size as u64 {
        return Err(index_error(buf, start, *p, end_ok, v, what, size));
    }
    Ok((v - 1) as u32)
}

#[cold]
#[inline(never)]
fn index_error(
    buf: &[u8],
    start: usize,
    end_digits: usize,
    end_ok: bool,
    v: u64,
    what: &str,
    size: usize,
) -> String {
    if start == end_digits || !end_ok {
        let end = buf[start..]
            .iter()
            .position(|&b| is_blank(b) || b == b'\n')
            .map_or(buf.len(), |e| start + e);
        let tok = excerpt(&buf[start..end]);
        return if tok.is_empty() {
            format!("expected a {what} index, found the end of the line")
        } else {
            format!("expected a positive integer {what} index, found `{tok}`")
        };
    }
    if end_digits - start > 19 {
        let tok = excerpt(&buf[start..end_digits]);
        return format!("{what} index {tok} out of range: the matrix has {size} {what}s");
    }
    if v == 0 {
        return format!("{what} index 0: Matrix Market indices start at 1");
    }
    format!("{what} index {v} out of range: the matrix has {size} {what}s")
}

fn parse_value<T: MmValue>(tok: &[u8], field: MmField) -> std::result::Result<T, String> {
    let text = || excerpt(tok);
    match field {
        MmField::Integer => {
            let v = parse_i64(tok).ok_or_else(|| {
                if tok.len() > 1 && tok.iter().skip(1).all(u8::is_ascii_digit) {
                    format!("integer value `{}` is out of range (64 bits)", text())
                } else {
                    format!("expected an integer value, found `{}`", text())
                }
            })?;
            T::from_i64(v).ok_or_else(|| format!("integer value {v} does not fit {}", T::NAME))
        }
        _ => {
            let v = T::parse_real(tok)
                .ok_or_else(|| format!("expected a real value, found `{}`", text()))?;
            if v.is_finite() {
                Ok(v)
            } else if tok.iter().any(u8::is_ascii_digit) {
                // Digits that overflow (`1e999`, 400 digits), not `inf`/`nan`.
                Err(format!(
                    "real value `{}` is out of range for {} (it would read as infinity)",
                    text(),
                    T::NAME
                ))
            } else {
                Err(format!(
                    "real value `{}` is not a finite number: warpfit reads finite values only",
                    text()
                ))
            }
        }
    }
}

fn parse_i64(tok: &[u8]) -> Option<i64> {
    let (neg, digits) = match tok.first()? {
        b'-' => (true, &tok[1..]),
        b'+' => (false, &tok[1..]),
        _ => (false, tok),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        let d = (b - b'0') as i64;
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(d)?
        } else {
            v.checked_add(d)?
        };
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// Reads `text` with parse blocks of `block` bytes.
    fn read_blocks(text: &str, block: usize) -> Result<Coo<f64>> {
        let mut r = Cursor::new(text.as_bytes());
        let (header, next) = parse_header(&mut r, "t")?;
        read_entries(r, "t", &header, next, block)
    }

    fn sample(n: usize) -> String {
        let mut t = format!("%%MatrixMarket matrix coordinate real general\n{n} 3 {n}\n");
        for k in 0..n {
            if k % 7 == 3 {
                t.push_str("% a comment line that is longer than the smallest blocks\n\n");
            }
            t.push_str(&format!("{}   {} {}.25\n", k + 1, k % 3 + 1, k));
        }
        t
    }

    #[test]
    fn block_boundaries_do_not_matter() {
        let text = sample(500);
        let whole = read_blocks(&text, 1 << 22).unwrap();
        assert_eq!(whole.nnz(), 500);
        // Tiny blocks: many batches, lines split everywhere, and lines longer
        // than a block (read on until their newline).
        for block in [1, 2, 5, 16, 61, 1000] {
            assert_eq!(read_blocks(&text, block).unwrap(), whole, "block {block}");
        }
    }

    #[test]
    fn error_lines_are_exact_across_blocks() {
        // Entry k is on line 3 + k + 2·(number of comment groups before it).
        let text = sample(200).replace("\n150   3 149.25\n", "\n150   3 x\n");
        let line = text.lines().position(|l| l.ends_with(" x")).unwrap() + 1;
        for block in [3, 40, 1 << 22] {
            match read_blocks(&text, block) {
                Err(Error::MatrixMarket { line: l, .. }) => assert_eq!(l, line, "block {block}"),
                other => panic!("{other:?}"),
            }
        }
        let extra = format!("{}1 1 1\n", sample(100));
        let line = extra.lines().count();
        for block in [7, 1 << 22] {
            match read_blocks(&extra, block) {
                Err(Error::MatrixMarket {
                    line: l, message, ..
                }) => {
                    assert_eq!(l, line, "block {block}");
                    assert!(message.contains("extra entry"), "{message}");
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
