//! Output files opened before the work, so that a bad path fails in a
//! moment instead of after a long run.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};
use warpfit::{Error, Result};

/// Refuses an output that names one of the command's input files: the
/// result would replace the input it is computed from (the input is read
/// first, then overwritten with the result, and the run still succeeds).
///
/// Same file means same device and inode after following links, so a
/// symlink or a hard link to an input is refused as well. An output that
/// does not exist yet cannot be an input; an input that cannot be read is
/// left to the reader to report. Only a regular file is compared: a
/// terminal or a device read and written in one run (`--rhs /dev/tty
/// --output /dev/tty`) loses nothing. `inputs` pairs each input option with
/// its path, when given.
pub fn refuse_input_as_output(
    output: &Path,
    what: &str,
    inputs: &[(&str, Option<&Path>)],
) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(out) = std::fs::metadata(output) else {
        return Ok(());
    };
    if !out.is_file() {
        return Ok(());
    }
    for &(option, path) in inputs {
        let Some(path) = path else { continue };
        let Ok(input) = std::fs::metadata(path) else {
            continue;
        };
        if (input.dev(), input.ino()) == (out.dev(), out.ino()) {
            return Err(Error::invalid(format!(
                "{what} names the same file as {option} ({}): the result would overwrite its input",
                path.display()
            )));
        }
    }
    Ok(())
}

/// A file the command will write when its work is done.
///
/// Opening checks everything the final write needs (the directory exists,
/// the path is not a directory, it is writable) without touching an existing
/// file's contents: it is truncated only when the result is written. A file
/// that did not exist before and is never written is removed again, so a
/// failed run leaves nothing behind.
///
/// Anything that is not a regular file (`/dev/null`, `/dev/stdout`, a pipe,
/// a terminal) is written directly: a device or a pipe refuses truncation
/// (`Invalid argument`) and has no contents to replace.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    file: Option<File>,
    created: bool,
    /// A regular file, truncated before the result is written.
    regular: bool,
}

impl OutputFile {
    /// Opens `path` for writing later; `what` names the option in errors.
    pub fn open(path: &Path, what: &str) -> Result<Self> {
        let existed = path.exists();
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|source| {
                Error::invalid(format!(
                    "{what} {}: cannot write there: {source}",
                    path.display()
                ))
            })?;
        let regular = file
            .metadata()
            .map_err(|source| {
                Error::invalid(format!(
                    "{what} {}: cannot write there: {source}",
                    path.display()
                ))
            })?
            .is_file();
        Ok(OutputFile {
            path: path.to_path_buf(),
            file: Some(file),
            created: !existed,
            regular,
        })
    }

    /// Replaces the file's contents with what `write` produces (a regular
    /// file), or writes it there (anything else). A write error names the
    /// path and its cause; a reader that closed its end of a pipe (`| head`)
    /// ends the writing quietly, with success, as Unix tools do: it asked
    /// for no more.
    pub fn write_with(
        mut self,
        write: impl FnOnce(&mut BufWriter<&File>) -> std::io::Result<()>,
    ) -> Result<()> {
        let io = |source| Error::Io {
            path: self.path.clone(),
            source,
        };
        let Some(file) = self.file.take() else {
            return Err(Error::invalid(format!(
                "{}: the output was already written",
                self.path.display()
            )));
        };
        if self.regular {
            file.set_len(0).map_err(io)?;
        }
        let mut w = BufWriter::with_capacity(1 << 20, &file);
        let written = write(&mut w).and_then(|()| w.flush());
        // What is still buffered after an error is dropped, not written
        // again.
        let _ = w.into_parts();
        match written {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::BrokenPipe => {}
            // A file this run created is removed again (`Drop`).
            Err(e) => return Err(io(e)),
        }
        self.created = false;
        Ok(())
    }

    /// Keeps the file (checked writable) for a writer that goes by path.
    pub fn keep(mut self) -> PathBuf {
        self.created = false;
        std::mem::take(&mut self.path)
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if self.created {
            self.file = None;
            // Best effort: the file is empty and ours; the run's own error
            // is what the user needs to see.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
