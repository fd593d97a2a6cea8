//! Appending to an existing output ([`crate::SinkOptions::append`], what `--resume` uses):
//! the checks every file-writing sink makes before it touches the output.
//!
//! "Append" means this one thing in this crate: adding streams to an output that exists. A
//! sink *writes* a frame (and its datasets or files grow by it); that is not appending.

use std::path::Path;

use crate::error::{Error, Result};
use crate::read::{Output, OutputFormat};
use crate::schema::{FieldSpec, StreamLayout};
use crate::zfp::Encoding;

/// What an existing output holds, as far as appending `layout` to it matters.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Existing {
    /// Streams of the layout that exist incomplete: the sink deletes and rewrites them.
    pub replace: Vec<String>,
    /// Streams of the layout that exist incomplete and continue ([`crate::StreamInfo::kept_frames`]
    /// above 0): the sink cuts them to their kept frames and goes on writing them.
    pub continued: Vec<String>,
    /// Every stream the layout leaves untouched is complete.
    pub others_complete: bool,
}

/// `None` when nothing exists at `path` (the sink creates the output as usual); otherwise
/// opens it with `open` (the calling backend's reader) and checks that the output was written
/// by the same kind of sink with the same fields (names, element types, shapes, axis names),
/// that no stream of `layout` is already complete in it, and that each stream that continues
/// exists and holds at least the frames it keeps.
pub(crate) fn check(
    path: &Path,
    layout: &StreamLayout,
    format: OutputFormat,
    open: fn(&Path) -> Result<Output>,
) -> Result<Option<Existing>> {
    if std::fs::symlink_metadata(path).is_err() {
        if let Some(s) = layout.streams.iter().find(|s| s.kept_frames > 0) {
            return Err(Error::AppendMismatch {
                path: path.to_path_buf(),
                reason: format!(
                    "it does not exist, and stream {:?} continues after {} frames kept in it",
                    s.name, s.kept_frames
                ),
            });
        }
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
    let names = |fields: &[FieldSpec]| fields.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
    if names(out.fields()) != names(&layout.fields) {
        return mismatch(format!(
            "it holds fields {:?}, the run writes {:?}",
            names(out.fields()),
            names(&layout.fields)
        ));
    }
    for (have, want) in out.fields().iter().zip(&layout.fields) {
        if !have.same_data(want) {
            return mismatch(format!(
                "its field {:?} is {} with axes {:?}, the run's is {} with axes {:?}",
                have.name,
                have.describe(),
                have.dims,
                want.describe(),
                want.dims
            ));
        }
    }
    check_encodings(path, &out, layout)?;
    let mut existing = Existing { replace: Vec::new(), continued: Vec::new(), others_complete: true };
    for s in out.streams() {
        match layout.streams.iter().find(|l| l.name == s.name) {
            Some(_) if s.complete => {
                return Err(Error::StreamComplete { path: path.to_path_buf(), stream: s.name.clone() });
            }
            Some(l) if l.kept_frames > s.frames => {
                return mismatch(format!(
                    "its stream {:?} holds {} frames, fewer than the {} the run keeps",
                    s.name, s.frames, l.kept_frames
                ));
            }
            Some(l) if l.kept_frames > 0 => existing.continued.push(s.name.clone()),
            Some(_) => existing.replace.push(s.name.clone()),
            None => existing.others_complete &= s.complete,
        }
    }
    if let Some(l) = layout.streams.iter().find(|l| l.kept_frames > 0 && !existing.continued.contains(&l.name)) {
        return mismatch(format!(
            "it has no stream {:?}, which the run continues after {} frames",
            l.name, l.kept_frames
        ));
    }
    Ok(Some(existing))
}

/// Errors unless every field of `layout` arrives encoded as `out` stores it: frames that arrive
/// encoded continue only datasets and files of the same encoding (a ZFP stream appended to a
/// file of values, or at another rate, would not decode), and values only those of values.
fn check_encodings(path: &Path, out: &Output, layout: &StreamLayout) -> Result<()> {
    let describe = |e: Encoding| match e {
        Encoding::Values => "its values".to_owned(),
        e => e.describe(),
    };
    match layout.fields.iter().enumerate().find(|(i, want)| out.stored_encoding(*i) != want.encoding) {
        None => Ok(()),
        Some((i, want)) => Err(Error::AppendMismatch {
            path: path.to_path_buf(),
            reason: format!(
                "its field {:?} holds {} and the run brings {}: continue it with the compression it was written \
                 with (wgpipe: the same output.compression and output.compress_on)",
                want.name,
                describe(out.stored_encoding(i)),
                describe(want.encoding)
            ),
        }),
    }
}
