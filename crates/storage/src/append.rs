//! Appending to an existing output ([`crate::SinkOptions::append`], what `--resume` uses):
//! the checks every file-writing sink makes before it touches the output.

use std::path::Path;

use crate::error::{Error, Result};
use crate::read::{Output, OutputFormat};
use crate::schema::StreamLayout;

/// What an existing output holds, as far as appending `layout` to it matters.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Existing {
    /// Streams of the layout that exist incomplete: the sink deletes and rewrites them.
    pub replace: Vec<String>,
    /// Every stream the layout leaves untouched is complete.
    pub others_complete: bool,
}

/// `None` when nothing exists at `path` (the sink creates the output as usual); otherwise
/// opens it with `open` (the calling backend's reader) and checks that the output was written
/// by the same kind of sink with the same fields, grid and dtype, and that no stream of
/// `layout` is already complete in it.
pub(crate) fn check(
    path: &Path,
    layout: &StreamLayout,
    format: OutputFormat,
    open: fn(&Path) -> Result<Output>,
) -> Result<Option<Existing>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let mismatch = |reason: String| Err(Error::AppendMismatch { path: path.to_path_buf(), reason });
    let out = match open(path) {
        Ok(out) => out,
        Err(Error::BadOutput { reason, .. }) => {
            return mismatch(format!("it is not a {format:?} output ({reason})"));
        }
        Err(e) => return Err(e),
    };
    if out.format() != format {
        return mismatch(format!("it is a {:?} output and this sink writes {format:?}", out.format()));
    }
    if out.fields() != layout.fields.as_slice() {
        return mismatch(format!("it holds fields {:?}, the run writes {:?}", out.fields(), layout.fields));
    }
    if !out.streams().is_empty() && out.shape() != [layout.rows, layout.cols] {
        let [r, c] = out.shape();
        return mismatch(format!("its grid is {r}×{c}, the run's is {}×{}", layout.rows, layout.cols));
    }
    if out.dtype() != layout.dtype {
        return mismatch(format!("it holds {}, the run writes {}", out.dtype().name(), layout.dtype.name()));
    }
    let mut existing = Existing { replace: Vec::new(), others_complete: true };
    for s in out.streams() {
        match layout.streams.iter().find(|l| l.name == s.name) {
            Some(_) if s.complete => {
                return Err(Error::StreamComplete { path: path.to_path_buf(), stream: s.name.clone() });
            }
            Some(_) => existing.replace.push(s.name.clone()),
            None => existing.others_complete &= s.complete,
        }
    }
    Ok(Some(existing))
}
