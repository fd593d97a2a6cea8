//! Checks shared by every sink: is the layout usable, and does a frame fit it.
//!
//! Sinks call [`Validator::check`] before touching any file, so a mismatching frame is
//! rejected with nothing written, and [`Validator::commit`] once the frame is stored, so the
//! next expected index only advances on success.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::frame::DType;
use crate::frame::{Fields, Frame};
use crate::schema::{FieldSpec, MAX_RANK, StreamLayout};
use crate::zfp::Encoding;

/// Attribute names the sinks write themselves, refused in a layout's run attributes.
pub(crate) const RESERVED_RUN_ATTRS: &[&str] =
    &["created", "wgpipe_storage_version", "fields", "format", "complete", "axis_order"];
/// Attribute names the sinks write themselves, refused in a stream's attributes.
pub(crate) const RESERVED_STREAM_ATTRS: &[&str] = &["complete", "expected_frames", "frames", "stream_index"];
/// Name of the per-stream step record; a field may not take it.
pub(crate) const STEPS_NAME: &str = "steps";

/// The naming rule of streams, fields and axes, the one place it lives: a name becomes an HDF5
/// object name and part of a raw file name, so only letters, digits, `-`, `_` and `.` (not
/// `.` or `..` alone, which are paths).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// [`valid_name`] as an error naming what the name was for.
fn check_name(kind: &'static str, name: &str) -> Result<()> {
    if !valid_name(name) {
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

/// Refuses layouts no sink can store: no fields or streams, ranks above 3, empty
/// axes, sizes that overflow, bad or duplicate names, attributes the sinks write themselves.
pub(crate) fn check_layout(layout: &StreamLayout) -> Result<()> {
    let bad = |msg: String| Err(Error::InvalidLayout(msg));
    if layout.fields.is_empty() {
        return bad("no fields: a layout needs at least one field".into());
    }
    if layout.streams.is_empty() {
        return bad("no streams: add one with StreamLayout::with_stream".into());
    }
    for (kind, names) in [
        ("field", layout.fields.iter().map(|f| &f.name).collect::<Vec<_>>()),
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
    for f in &layout.fields {
        let rank = f.shape.len();
        if rank > MAX_RANK {
            return bad(format!(
                "field {:?} has {rank} axes (shape {:?}): use 0 to {MAX_RANK} (the frame axis is added by the sink)",
                f.name, f.shape
            ));
        }
        if f.shape.contains(&0) {
            return bad(format!("field {:?} has shape {:?}: every axis needs at least 1 element", f.name, f.shape));
        }
        if f.dims.len() != rank {
            return bad(format!(
                "field {:?} names {} axes {:?} but has {rank} (shape {:?}): give one name per axis",
                f.name,
                f.dims.len(),
                f.dims,
                f.shape
            ));
        }
        check_names(&format!("axis of field {:?}", f.name), &f.dims.iter().collect::<Vec<_>>())?;
        check_encoding(f)?;
    }
    layout.frame_bytes()?;
    if let Some(key) = layout.attributes.keys().find(|k| RESERVED_RUN_ATTRS.contains(&k.as_str())) {
        return bad(format!("run attribute {key:?} is written by the sink itself: rename it"));
    }
    for s in &layout.streams {
        if let Some(key) = s.attributes.keys().find(|k| RESERVED_STREAM_ATTRS.contains(&k.as_str())) {
            return bad(format!("attribute {key:?} of stream {:?} is written by the sink itself: rename it", s.name));
        }
        if let Some(expected) = s.expected_frames.filter(|&e| s.kept_frames > e) {
            return bad(format!(
                "stream {:?} keeps {} frames but expects {expected} in all: keep at most its expected frames",
                s.name, s.kept_frames
            ));
        }
    }
    Ok(())
}

/// Errors unless a field encoded before the sink is one its encoding can hold: ZFP streams of
/// f32 values (the ranks, at most 3, are checked with every field's).
fn check_encoding(f: &FieldSpec) -> Result<()> {
    match f.encoding {
        Encoding::Zfp(_) if f.dtype != DType::F32 => Err(Error::InvalidLayout(format!(
            "field {:?} is {} but arrives as a ZFP fixed-rate stream, which codes f32 values only",
            f.name,
            f.describe()
        ))),
        _ => Ok(()),
    }
}

/// Errors when `layout` has a field that arrives encoded (not as values): for the sinks that
/// store only values (`sink`, e.g. `adios2`).
#[cfg(any(feature = "adios2", feature = "mpi"))]
pub(crate) fn refuse_encoded_fields(layout: &StreamLayout, sink: &str) -> Result<()> {
    match layout.fields.iter().find(|f| f.encoding != Encoding::Values) {
        Some(f) => Err(Error::InvalidLayout(format!(
            "field {:?} arrives as {}, which the {sink} sink cannot store: let the values arrive (wgpipe: \
             output.compress_on = \"host\"), or store it with a sink that takes encoded fields (hdf5 and raw in one \
             process, zarr)",
            f.name,
            f.encoding.describe()
        ))),
        None => Ok(()),
    }
}

/// Errors unless every name is allowed and none appears twice.
fn check_names(kind: &str, names: &[&String]) -> Result<()> {
    for (i, name) in names.iter().enumerate() {
        if !valid_name(name) {
            return Err(Error::InvalidLayout(format!(
                "{kind} name {name:?} is not allowed: use letters, digits, '-', '_' and '.'"
            )));
        }
        if names[..i].contains(name) {
            return Err(Error::InvalidLayout(format!("{kind} name {name:?} appears twice: names must be unique")));
        }
    }
    Ok(())
}

/// Tracks the layout, where each field lies in a frame, and the next expected index of every
/// stream.
#[derive(Debug, Clone)]
pub(crate) struct Validator {
    layout: StreamLayout,
    ranges: Vec<Range<usize>>,
    frame_bytes: usize,
    next: Vec<u64>,
}

impl Validator {
    /// Checks `layout` and starts every stream at its first frame not kept (0 unless it
    /// continues).
    pub(crate) fn new(layout: &StreamLayout) -> Result<Self> {
        check_layout(layout)?;
        let frame_bytes = layout.frame_bytes()?;
        // Cannot be None: frame_bytes checked every size.
        let ranges = (0..layout.fields.len()).map(|i| layout.field_range(i).unwrap_or(0..0)).collect();
        let next = layout.streams.iter().map(|s| s.kept_frames).collect();
        Ok(Validator { layout: layout.clone(), ranges, frame_bytes, next })
    }

    /// Frames committed so far, per stream.
    pub(crate) fn frames(&self) -> &[u64] {
        &self.next
    }

    /// The bytes of every field of a frame that passed [`Validator::check`].
    pub(crate) fn fields<'a>(&'a self, frame: &'a Frame) -> Fields<'a> {
        Fields::new(&frame.data, &self.ranges)
    }

    /// Errors unless `frame` is the next frame of its stream, within the frames the stream
    /// promised ([`crate::StreamInfo::capacity`]), and holds the layout's bytes.
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
        // A stream holds what its layout promised (a sink may have laid that out whole at
        // `begin`, and growing past it would change the structure a kill relies on).
        if let Some(most) = l.streams[frame.stream].capacity().filter(|&most| frame.index >= most) {
            return mismatch(format!(
                "stream {:?} holds at most {most} frames (its expected_frames, or max_frames), frame {} is past \
                 them: give the stream the count it will hold",
                l.streams[frame.stream].name, frame.index
            ));
        }
        if frame.step == u64::MAX {
            return mismatch(format!(
                "step {} is the mark of a frame never stored ({}): steps go up to {}",
                frame.step,
                "2^64 - 1",
                u64::MAX - 1
            ));
        }
        if frame.data.len() != self.frame_bytes {
            let fields: Vec<String> = l.fields.iter().map(|f| format!("{} {}", f.name, f.describe())).collect();
            return mismatch(format!(
                "{} data bytes differ from the layout's {} ({})",
                frame.data.len(),
                self.frame_bytes,
                fields.join(", ")
            ));
        }
        Ok(())
    }

    /// Byte ranges of the fields in a frame, in layout order.
    pub(crate) fn ranges(&self) -> &[Range<usize>] {
        &self.ranges
    }

    /// Records that the next frame of `stream` (already checked) was stored.
    pub(crate) fn commit(&mut self, stream: usize) {
        if let Some(n) = self.next.get_mut(stream) {
            *n += 1;
        }
    }
}
