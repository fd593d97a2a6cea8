//! Checks shared by every sink: is the layout usable, and does a frame fit it.
//!
//! Sinks call [`Validator::check`] before touching any file, so a mismatching frame is
//! rejected with nothing written, and [`Validator::commit`] once the frame is stored, so the
//! next expected index only advances on success.

use crate::error::{Error, Result};
use crate::frame::Frame;
use crate::layout::StreamLayout;

/// Attribute names the sinks write themselves, refused in a layout's run attributes.
pub(crate) const RESERVED_RUN_ATTRS: &[&str] = &["created", "wgpipe_storage_version", "fields", "format", "complete"];
/// Attribute names the sinks write themselves, refused in a stream's attributes.
pub(crate) const RESERVED_STREAM_ATTRS: &[&str] = &["complete", "expected_frames", "frames", "stream_index"];
/// Name of the per-stream step record; a field may not take it.
pub(crate) const STEPS_NAME: &str = "steps";

/// The naming rule of streams and fields, the one place it lives: a name becomes an HDF5
/// object name and part of a raw file name, so only letters, digits, `-`, `_` and `.` (not
/// `.` or `..` alone, which are paths).
fn check_name(kind: &'static str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        return Err(Error::InvalidName {
            kind,
            name: name.to_owned(),
            rule: "use letters, digits, '-', '_' and '.' (not \".\" or \"..\" alone)",
        });
    }
    Ok(())
}

/// Errors unless `name` can name a stream (an HDF5 group, a raw file prefix): letters,
/// digits, `-`, `_` and `.`, not `.` or `..`. Every sink checks this in `begin`; check it
/// earlier to refuse a bad name before any device opens.
pub fn check_stream_name(name: &str) -> Result<()> {
    check_name("stream", name)
}

/// Errors unless `name` can name a field (an HDF5 dataset, a raw file part): the rule of
/// [`check_stream_name`], and not `steps`, the step record's name.
pub fn check_field_name(name: &str) -> Result<()> {
    check_name("field", name)?;
    if name == STEPS_NAME {
        return Err(Error::InvalidName {
            kind: "field",
            name: name.to_owned(),
            rule: "it is reserved for the step record: rename the field",
        });
    }
    Ok(())
}

/// Refuses layouts no sink can store: empty shapes, no fields, bad or duplicate names.
pub(crate) fn check_layout(layout: &StreamLayout) -> Result<()> {
    let bad = |msg: String| Err(Error::InvalidLayout(msg));
    if layout.rows == 0 || layout.cols == 0 {
        return bad(format!("shape {}x{} is empty: rows and cols must be at least 1", layout.rows, layout.cols));
    }
    if layout.fields.is_empty() {
        return bad("no fields: a layout needs at least one field".into());
    }
    if layout.streams.is_empty() {
        return bad("no streams: add one with StreamLayout::with_stream".into());
    }
    for (kind, names) in [
        ("field", layout.fields.iter().collect::<Vec<_>>()),
        ("stream", layout.streams.iter().map(|s| &s.name).collect()),
    ] {
        for (i, name) in names.iter().enumerate() {
            if kind == "field" {
                check_field_name(name)?
            } else {
                check_stream_name(name)?
            }
            if names[..i].contains(name) {
                return bad(format!("{kind} name {name:?} appears twice: names must be unique"));
            }
        }
    }
    if let Some(key) = layout.attributes.keys().find(|k| RESERVED_RUN_ATTRS.contains(&k.as_str())) {
        return bad(format!("run attribute {key:?} is written by the sink itself: rename it"));
    }
    for s in &layout.streams {
        if let Some(key) = s.attributes.keys().find(|k| RESERVED_STREAM_ATTRS.contains(&k.as_str())) {
            return bad(format!("attribute {key:?} of stream {:?} is written by the sink itself: rename it", s.name));
        }
    }
    Ok(())
}

/// Tracks the layout and the next expected index of every stream.
#[derive(Debug, Clone)]
pub(crate) struct Validator {
    layout: StreamLayout,
    next: Vec<u64>,
}

impl Validator {
    /// Checks `layout` and starts every stream at index 0.
    pub(crate) fn new(layout: &StreamLayout) -> Result<Self> {
        check_layout(layout)?;
        Ok(Validator { layout: layout.clone(), next: vec![0; layout.streams.len()] })
    }

    /// The layout given to `begin`.
    pub(crate) fn layout(&self) -> &StreamLayout {
        &self.layout
    }

    /// Frames committed so far, per stream.
    pub(crate) fn frames(&self) -> &[u64] {
        &self.next
    }

    /// Errors unless `frame` is the next frame of its stream and shaped like the layout.
    pub(crate) fn check(&self, frame: &Frame) -> Result<()> {
        let l = &self.layout;
        let mismatch = |reason: String| Err(Error::FrameMismatch { stream: frame.stream, index: frame.index, reason });
        let Some(&next) = self.next.get(frame.stream) else {
            return mismatch(format!(
                "stream id {} is out of range: the layout has {} streams",
                frame.stream,
                l.streams.len()
            ));
        };
        if frame.index != next {
            return mismatch(format!(
                "index {} is not the next one of stream {:?}: expected {next}",
                frame.index, l.streams[frame.stream].name
            ));
        }
        if frame.shape != [l.rows, l.cols] {
            return mismatch(format!("shape {:?} differs from the layout's [{}, {}]", frame.shape, l.rows, l.cols));
        }
        if frame.dtype != l.dtype {
            return mismatch(format!("dtype {:?} differs from the layout's {:?}", frame.dtype, l.dtype));
        }
        if frame.field_count != l.fields.len() {
            return mismatch(format!("{} fields differ from the layout's {}", frame.field_count, l.fields.len()));
        }
        if frame.data.len() != l.frame_bytes() {
            return mismatch(format!(
                "{} data bytes differ from the layout's {} ({} fields of {}x{} {})",
                frame.data.len(),
                l.frame_bytes(),
                l.fields.len(),
                l.rows,
                l.cols,
                l.dtype.name()
            ));
        }
        Ok(())
    }

    /// Records that `frame` (already checked) was stored.
    pub(crate) fn commit(&mut self, frame: &Frame) {
        if let Some(n) = self.next.get_mut(frame.stream) {
            *n += 1;
        }
    }
}
