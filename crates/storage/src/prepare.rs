//! Preparing an output path: the checks every file-writing sink makes before creating anything.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// What kind of output a sink writes at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputKind {
    /// A directory of raw files (see [`crate::RawSink`]).
    RawDir,
    /// One HDF5 file.
    File,
}

/// The directory `path` will be created in (`.` for a bare name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether an existing directory holds only what a raw sink writes, so replacing it cannot
/// destroy anything else (an `overwrite` pointed at a home directory must not wipe it).
fn looks_like_raw_output(dir: &Path) -> Result<bool> {
    let entries = fs::read_dir(dir).map_err(|e| Error::io("cannot list", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("cannot list", dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = name.ends_with(".bin") || name.ends_with(".json") || name.ends_with(".tmp");
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        if !ours || !is_file {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Checks, changing nothing, that `path` can be written: the parent directory must exist and
/// be a writable directory, and an existing output is an error unless `overwrite` is set and
/// it is of the same kind. Returns whether an old output is there to be replaced.
pub(crate) fn check(path: &Path, overwrite: bool, kind: OutputKind) -> Result<bool> {
    if path.as_os_str().is_empty() {
        return Err(Error::InvalidOptions("the output path is empty: set SinkOptions::path".into()));
    }
    let parent = parent_of(path);
    match fs::metadata(&parent) {
        Ok(m) if m.is_dir() => {
            if m.permissions().readonly() {
                return Err(Error::io(
                    "cannot write into",
                    parent,
                    std::io::Error::from(std::io::ErrorKind::PermissionDenied),
                ));
            }
        }
        Ok(_) => return Err(Error::MissingParent(parent)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::MissingParent(parent));
        }
        Err(e) => return Err(Error::io("cannot inspect", parent, e)),
    }
    let existing = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io("cannot inspect", path, e)),
    };
    if !overwrite {
        return Err(Error::OutputExists(path.to_path_buf()));
    }
    match kind {
        OutputKind::File if existing.is_file() => Ok(true),
        OutputKind::File => Err(Error::CannotReplace { path: path.to_path_buf(), reason: "it is not a regular file" }),
        OutputKind::RawDir if existing.is_dir() && looks_like_raw_output(path)? => Ok(true),
        OutputKind::RawDir => Err(Error::CannotReplace {
            path: path.to_path_buf(),
            reason: "it is not a raw output directory (only .bin and .json files)",
        }),
    }
}

/// Checks that `path` can be written ([`check`]), removing an old output when `overwrite`
/// allows it. Runs before anything is created, so a refused output leaves the disk untouched.
pub(crate) fn prepare(path: &Path, overwrite: bool, kind: OutputKind) -> Result<()> {
    if !check(path, overwrite, kind)? {
        return Ok(());
    }
    match kind {
        OutputKind::File => fs::remove_file(path).map_err(|e| Error::io("cannot remove old output", path, e)),
        OutputKind::RawDir => fs::remove_dir_all(path).map_err(|e| Error::io("cannot remove old output", path, e)),
    }
}

/// Flushes a directory entry to disk, so a newly created or renamed file survives a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io("cannot sync directory", dir, e))
}
