//! Where results go besides stdout: the JSON report, the Chrome trace, and the scratch
//! directory raw/hdf5 runs write into (removed afterwards, also on error).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;
use wgpipe::RunReport;

/// Writes `value` as pretty JSON to `path`.
pub fn write_json(path: &Path, value: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("serialising the JSON report")?;
    std::fs::write(path, text + "\n").with_context(|| format!("cannot write the JSON report {}", path.display()))
}

/// Writes the Chrome trace of a traced run to `path`.
pub fn write_trace(path: &Path, report: &RunReport) -> Result<()> {
    std::fs::write(path, wgpipe::chrome_trace(report))
        .with_context(|| format!("cannot write the trace {}", path.display()))
}

/// A directory of our own under `parent` (`wgpipe-TASK-PID`), removed with everything in it
/// when dropped, so an interrupted or failed benchmark or soak leaves no gigabytes behind.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    pub fn new(parent: &Path, task: &str) -> Result<Self> {
        let path = parent.join(format!("wgpipe-{task}-{}", std::process::id()));
        std::fs::create_dir_all(&path)
            .with_context(|| format!("cannot create the {task} directory {}", path.display()))?;
        Ok(ScratchDir { path })
    }

    /// [`ScratchDir::new`] under `out`, or under the current directory when none is given.
    pub fn under(out: Option<&Path>, task: &str) -> Result<Self> {
        match out {
            Some(parent) => ScratchDir::new(parent, task),
            None => ScratchDir::new(&std::env::current_dir().context("finding the current directory")?, task),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            eprintln!("warning: cannot remove {}: {e}", self.path.display());
        }
    }
}
