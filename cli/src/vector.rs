//! `--rhs FILE`: a dense vector, one value per line (what `--output` writes).

use std::io::Read;
use std::path::Path;
use warpfit::runtime::error::excerpt;
use warpfit::runtime::mem;
use warpfit::runtime::sparse::mm::MAX_LINE_BYTES;
use warpfit::{Error, Result};

/// The whole file, its size checked against the memory limit before it is
/// read (the text is held whole).
fn read_whole(path: &Path, what: &str) -> Result<Vec<u8>> {
    let io = |e: std::io::Error| Error::invalid(format!("{what} {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    mem::check(&format!("{what} {}", path.display()), size)?;
    let mut bytes = Vec::new();
    file.take(size.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    Ok(bytes)
}

/// Reads `len` finite values, one per line (blank lines and lines starting
/// with `%` or `#` skipped); `what` names the option in errors, which give
/// the file and line.
pub fn read_vector(path: &Path, what: &str, len: usize) -> Result<Vec<f64>> {
    let at = |line: usize, msg: String| {
        Error::invalid(format!("{what} {}:{line}: {msg}", path.display()))
    };
    mem::check_elems::<f64>(&format!("the {len} values of {what}"), len)?;
    let bytes = read_whole(path, what)?;
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(at(
            1,
            "the file starts with a UTF-8 byte order mark; save it without one".into(),
        ));
    }
    let mut values = Vec::with_capacity(len);
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = i + 1;
        if line.len() > MAX_LINE_BYTES {
            return Err(at(
                line_no,
                format!("line longer than {MAX_LINE_BYTES} bytes (one value per line)"),
            ));
        }
        let text = std::str::from_utf8(line)
            .map_err(|_| at(line_no, "not UTF-8 text".to_string()))?
            .trim();
        if text.is_empty() || text.starts_with('%') || text.starts_with('#') {
            continue;
        }
        if values.len() == len {
            return Err(at(
                line_no,
                format!("more than the {len} values the matrix's rows need"),
            ));
        }
        let v: f64 = text.parse().map_err(|_| {
            at(
                line_no,
                format!("expected one number, found `{}`", excerpt(text.as_bytes())),
            )
        })?;
        if !v.is_finite() {
            return Err(at(
                line_no,
                format!("value `{}` is not finite", excerpt(text.as_bytes())),
            ));
        }
        values.push(v);
    }
    if values.len() != len {
        return Err(Error::invalid(format!(
            "{what} {}: {} values, but the matrix has {len} rows",
            path.display(),
            values.len()
        )));
    }
    Ok(values)
}

/// Reads a dense row-major matrix of `rows` lines, each of the same number
/// of finite values separated by white space (blank lines and lines
/// starting with `%` or `#` skipped): the values and the width. `what`
/// names the option in errors, which give the file and line.
pub fn read_rows(path: &Path, what: &str, rows: usize) -> Result<(Vec<f32>, usize)> {
    let at = |line: usize, msg: String| {
        Error::invalid(format!("{what} {}:{line}: {msg}", path.display()))
    };
    let bytes = read_whole(path, what)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| Error::invalid(format!("{what} {}: not UTF-8 text", path.display())))?;
    let (mut values, mut width, mut seen) = (Vec::new(), None::<usize>, 0usize);
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = line.trim().trim_start_matches('\u{feff}');
        if line.is_empty() || line.starts_with('%') || line.starts_with('#') {
            continue;
        }
        if seen == rows {
            return Err(at(line_no, format!("more than the {rows} rows expected")));
        }
        let before = values.len();
        for word in line.split_whitespace() {
            let v: f32 = word.parse().map_err(|_| {
                at(
                    line_no,
                    format!("expected a number, found `{}`", excerpt(word.as_bytes())),
                )
            })?;
            if !v.is_finite() {
                return Err(at(
                    line_no,
                    format!("value `{}` is not finite", excerpt(word.as_bytes())),
                ));
            }
            values.push(v);
        }
        let w = values.len() - before;
        match width {
            None => {
                // Known from the first row: the whole matrix is rows × w.
                mem::check_elems::<f32>(&format!("the values of {what}"), rows.saturating_mul(w))?;
                values.reserve(rows.saturating_mul(w).saturating_sub(values.len()));
                width = Some(w);
            }
            Some(first) if first != w => {
                return Err(at(
                    line_no,
                    format!("{w} values, but the first row has {first}"),
                ));
            }
            _ => {}
        }
        seen += 1;
    }
    if seen != rows {
        return Err(Error::invalid(format!(
            "{what} {}: {seen} rows, but {rows} are needed",
            path.display()
        )));
    }
    Ok((values, width.unwrap_or(0)))
}
