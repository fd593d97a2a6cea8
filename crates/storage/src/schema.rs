//! What a sink is about to receive: the fields of every frame (name, element type, shape),
//! the streams, and the metadata to record.
//!
//! Axis order is C order everywhere: the last axis varies fastest, so a 3-D field of shape
//! `[nz, ny, nx]` has `x` last, and element `(z, y, x)` sits at `(z * ny + y) * nx + x`.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::error::{Error, Result};
use crate::frame::DType;
use crate::zfp::Encoding;

/// A metadata value stored as an attribute (HDF5) or a metadata entry (raw).
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// An integer.
    Int(i64),
    /// An unsigned integer above `i64::MAX` (smaller ones are `Int`), stored as one (HDF5
    /// `uint64`, a JSON integer), so that no value is clamped to fit a signed type.
    UInt(u64),
    /// A float.
    Float(f64),
    /// A single-precision float, stored as one (HDF5 `float32`), so that a kernel parameter
    /// the GPU used as `f32` reads back with its own type and value (`0.1`, not the widened
    /// `0.10000000149011612`).
    Float32(f32),
    /// A string.
    Text(String),
}

impl From<i64> for AttrValue {
    fn from(v: i64) -> Self {
        AttrValue::Int(v)
    }
}
impl From<u64> for AttrValue {
    fn from(v: u64) -> Self {
        i64::try_from(v).map_or(AttrValue::UInt(v), AttrValue::Int)
    }
}
impl From<f64> for AttrValue {
    fn from(v: f64) -> Self {
        AttrValue::Float(v)
    }
}
impl From<f32> for AttrValue {
    fn from(v: f32) -> Self {
        AttrValue::Float32(v)
    }
}
impl From<&str> for AttrValue {
    fn from(v: &str) -> Self {
        AttrValue::Text(v.to_owned())
    }
}
impl From<String> for AttrValue {
    fn from(v: String) -> Self {
        AttrValue::Text(v)
    }
}

/// Named metadata values, sorted by name so files are reproducible.
pub type Attributes = BTreeMap<String, AttrValue>;

/// One stream: a sequence of frames from one producer (a device, or one run of a sweep).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamInfo {
    /// Name of the stream; becomes the HDF5 group name or the raw file prefix.
    /// Letters, digits, `-`, `_` and `.` only.
    pub name: String,
    /// Number of frames the stream will hold, when known in advance.
    pub expected_frames: Option<u64>,
    /// The most frames the stream can hold, when the exact count is not known in advance
    /// (`expected_frames` is `None`): a run storing the fields of the frames a condition
    /// keeps (`output.when`) keeps at most every frame. A sink that must size its datasets
    /// before the first frame (the MPI HDF5 sink, whose ranks cannot change the file's
    /// structure while they write independently) makes room for this many and shrinks the
    /// stream to the frames it holds when it finishes; the other sinks grow as frames come and
    /// ignore it. `None`: no bound known.
    pub max_frames: Option<u64>,
    /// Per-stream metadata, such as the kernel parameters of this run.
    pub attributes: Attributes,
    /// Frames of this stream that the output being appended to already holds and keeps: the
    /// stream continues at frame `kept_frames`, its later frames cut off first (what a run
    /// resumed from a checkpoint does). 0, the default: written from frame 0, an incomplete
    /// stream of that name replaced. Only a sink appending to an existing output
    /// ([`crate::SinkOptions::append`]) keeps frames.
    pub kept_frames: u64,
}

impl StreamInfo {
    /// A stream with no metadata and an unknown frame count.
    pub fn new(name: impl Into<String>) -> Self {
        StreamInfo {
            name: name.into(),
            expected_frames: None,
            max_frames: None,
            attributes: Attributes::new(),
            kept_frames: 0,
        }
    }

    /// Sets [`StreamInfo::max_frames`]: at most `frames` frames, the exact count unknown.
    pub fn with_max_frames(mut self, frames: u64) -> Self {
        self.max_frames = Some(frames);
        self
    }

    /// The frames a sink that sizes its datasets up front makes room for: the expected
    /// frames, else [`StreamInfo::max_frames`].
    pub fn capacity(&self) -> Option<u64> {
        self.expected_frames.or(self.max_frames)
    }

    /// Sets the number of frames the stream will hold.
    pub fn with_expected_frames(mut self, frames: u64) -> Self {
        self.expected_frames = Some(frames);
        self
    }

    /// Keeps the stream's first `frames` frames in the output being appended to and continues
    /// it from there (see [`StreamInfo::kept_frames`]).
    pub fn with_kept_frames(mut self, frames: u64) -> Self {
        self.kept_frames = frames;
        self
    }

    /// Adds one metadata entry.
    pub fn with_attribute(mut self, key: impl Into<String>, value: impl Into<AttrValue>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }
}

/// Axis order of every field, as recorded in outputs (`axis_order` attribute or key): C order,
/// last axis fastest.
pub const AXIS_ORDER: &str = "C";

/// Largest number of axes a field may have (a frame adds one more on disk).
pub const MAX_RANK: usize = 3;

/// One named array of every frame: its element type and shape (rank 0, one value per frame,
/// to [`MAX_RANK`]).
///
/// Sinks store it as `[frames, *shape]`. `dims` names the axes (recorded as metadata, so
/// tools show `z`, `y`, `x` instead of numbers); [`FieldSpec::new`] picks the names by rank
/// (`x`; `y, x`; `z, y, x`), [`FieldSpec::with_dims`] sets others (e.g. `particle, xyz`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSpec {
    /// Field name; becomes the HDF5 dataset name or part of the raw file names.
    /// Letters, digits, `-`, `_` and `.` only.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Elements per axis, slowest axis first (C order).
    pub shape: Vec<usize>,
    /// One name per axis of `shape`.
    pub dims: Vec<String>,
    /// Units of the values (the `units` attribute of CF/netCDF, e.g. `"1"` for a
    /// dimensionless quantity), when known.
    pub units: Option<String>,
    /// Human-readable name (the `long_name` attribute of CF/netCDF), when known.
    pub long_name: Option<String>,
    /// How the field's bytes arrive in each frame: its values (the default), or a stream
    /// encoded before the sink ([`Encoding::Zfp`]), which sinks store as such.
    pub encoding: Encoding,
}

impl FieldSpec {
    /// A field with the default axis names for its rank (`x`, `y x` or `z y x`).
    pub fn new(name: impl Into<String>, dtype: DType, shape: impl Into<Vec<usize>>) -> Self {
        let shape = shape.into();
        let dims = default_dims(shape.len());
        FieldSpec { name: name.into(), dtype, shape, dims, units: None, long_name: None, encoding: Encoding::Values }
    }

    /// Sets [`FieldSpec::units`].
    pub fn with_units(mut self, units: impl Into<String>) -> Self {
        self.units = Some(units.into());
        self
    }

    /// Sets [`FieldSpec::long_name`].
    pub fn with_long_name(mut self, long_name: impl Into<String>) -> Self {
        self.long_name = Some(long_name.into());
        self
    }

    /// Replaces the axis names (one per axis; checked when the layout is used).
    pub fn with_dims<S: Into<String>>(mut self, dims: impl IntoIterator<Item = S>) -> Self {
        self.dims = dims.into_iter().map(Into::into).collect();
        self
    }

    /// Sets [`FieldSpec::encoding`].
    pub fn with_encoding(mut self, encoding: Encoding) -> Self {
        self.encoding = encoding;
        self
    }

    /// Whether `other` holds the same data: name, element type, shape and axis names. Units
    /// and long names describe the values and may differ (an output written before they
    /// were recorded can still be appended to); so may the encoding of the frames that
    /// bring the values.
    pub fn same_data(&self, other: &FieldSpec) -> bool {
        self.name == other.name && self.dtype == other.dtype && self.shape == other.shape && self.dims == other.dims
    }

    /// Elements of one frame of this field, or `None` if the count overflows `usize`.
    pub fn elements(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
    }

    /// Bytes of one frame of this field as it arrives (its values, or its encoded stream),
    /// or `None` if they exceed what a buffer can hold (`isize::MAX`).
    pub fn bytes(&self) -> Option<usize> {
        let bytes = match self.encoding {
            Encoding::Values => self.elements()?.checked_mul(self.dtype.size())?,
            Encoding::Zfp(rate) => usize::try_from(rate.stream_bytes(&self.shape)?).ok()?,
        };
        Some(bytes).filter(|&b| isize::try_from(b).is_ok())
    }

    /// `dtype [d0, d1, ...]`, e.g. `float32 [64, 64]`, for messages, with the encoding of a
    /// field that does not arrive as values.
    pub fn describe(&self) -> String {
        match self.encoding {
            Encoding::Values => format!("{} {:?}", self.dtype, self.shape),
            _ => format!("{} {:?} as {}", self.dtype, self.shape, self.encoding.describe()),
        }
    }
}

/// Axis names by rank: `x` last, then `y`, then `z`; beyond that (refused by the sinks)
/// `d0`, `d1`, ...
fn default_dims(rank: usize) -> Vec<String> {
    const XYZ: [&str; MAX_RANK] = ["z", "y", "x"];
    if rank <= MAX_RANK {
        XYZ[MAX_RANK - rank..].iter().map(|s| (*s).to_owned()).collect()
    } else {
        (0..rank).map(|i| format!("d{i}")).collect()
    }
}

/// The shape of everything a sink will receive, given to [`crate::Sink::begin`].
#[derive(Debug, Clone, PartialEq)]
pub struct StreamLayout {
    /// The fields, in the order their bytes appear in every [`crate::Frame`].
    pub fields: Vec<FieldSpec>,
    /// The streams; a frame's `stream` indexes this list.
    pub streams: Vec<StreamInfo>,
    /// Run-level metadata: the config text, adapter names, wgpipe version, ...
    pub attributes: Attributes,
}

impl StreamLayout {
    /// A layout of `fields` with no streams yet.
    pub fn new(fields: Vec<FieldSpec>) -> Self {
        StreamLayout { fields, streams: Vec::new(), attributes: Attributes::new() }
    }

    /// The common 2-D case: fields `names`, each `rows × cols` of `dtype` (axes `y`, `x`).
    pub fn grid2d<S: Into<String>>(names: impl IntoIterator<Item = S>, rows: usize, cols: usize, dtype: DType) -> Self {
        StreamLayout::new(names.into_iter().map(|n| FieldSpec::new(n, dtype, [rows, cols])).collect())
    }

    /// Adds a stream.
    pub fn with_stream(mut self, stream: StreamInfo) -> Self {
        self.streams.push(stream);
        self
    }

    /// Adds one run-level metadata entry.
    pub fn with_attribute(mut self, key: impl Into<String>, value: impl Into<AttrValue>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }

    /// Index of the field called `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// Where field `i` lies in [`crate::Frame::data`], or `None` past the last field (or if
    /// the sizes overflow, which [`StreamLayout::frame_bytes`] reports).
    pub fn field_range(&self, i: usize) -> Option<Range<usize>> {
        let mut start = 0usize;
        for (k, f) in self.fields.iter().enumerate() {
            let end = start.checked_add(f.bytes()?)?;
            if k == i {
                return Some(start..end);
            }
            start = end;
        }
        None
    }

    /// Bytes of one whole frame (every field), or [`Error::InvalidLayout`] naming the field
    /// whose size a buffer cannot hold.
    pub fn frame_bytes(&self) -> Result<usize> {
        let too_big = |what: String| {
            Error::InvalidLayout(format!(
                "{what} is more bytes than one buffer can hold ({} max): make the fields smaller",
                isize::MAX
            ))
        };
        self.fields.iter().try_fold(0usize, |total, f| {
            let b = f.bytes().ok_or_else(|| too_big(format!("field {:?} ({})", f.name, f.describe())))?;
            total.checked_add(b).filter(|&t| isize::try_from(t).is_ok()).ok_or_else(|| too_big("a frame".into()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_lie_back_to_back_in_layout_order() {
        let l = StreamLayout::new(vec![
            FieldSpec::new("a", DType::U8, [3]),
            FieldSpec::new("b", DType::F64, [2, 2]),
            FieldSpec::new("c", DType::F16, [1, 2, 3]),
        ]);
        assert_eq!(l.field_range(0), Some(0..3));
        assert_eq!(l.field_range(1), Some(3..35));
        assert_eq!(l.field_range(2), Some(35..47));
        assert_eq!(l.field_range(3), None);
        assert_eq!(l.frame_bytes().ok(), Some(47));
        assert_eq!(l.fields[2].dims, ["z", "y", "x"]);
        assert_eq!(l.fields[1].dims, ["y", "x"]);
        assert_eq!(l.fields[0].dims, ["x"]);
    }

    #[test]
    fn sizes_that_overflow_are_errors_naming_the_field() {
        let l = StreamLayout::new(vec![FieldSpec::new("huge", DType::F64, [usize::MAX / 4, 4])]);
        assert_eq!(l.field_range(0), None);
        let e = l.frame_bytes().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("\"huge\"") && e.contains("float64"), "{e}");
        let half = isize::MAX as usize / 2 + 1;
        let l = StreamLayout::new(vec![FieldSpec::new("a", DType::U8, [half]), FieldSpec::new("b", DType::U8, [half])]);
        assert!(l.frame_bytes().is_err());
    }
}
