//! What a sink is about to receive: fields, shape, streams, and the metadata to record.

use std::collections::BTreeMap;

use crate::frame::DType;

/// A metadata value stored as an attribute (HDF5) or a metadata entry (raw).
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
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
        AttrValue::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<f64> for AttrValue {
    fn from(v: f64) -> Self {
        AttrValue::Float(v)
    }
}
impl From<f32> for AttrValue {
    fn from(v: f32) -> Self {
        AttrValue::Float(f64::from(v))
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
    /// Per-stream metadata, such as the kernel parameters of this run.
    pub attributes: Attributes,
}

impl StreamInfo {
    /// A stream with no metadata and an unknown frame count.
    pub fn new(name: impl Into<String>) -> Self {
        StreamInfo { name: name.into(), expected_frames: None, attributes: Attributes::new() }
    }

    /// Sets the number of frames the stream will hold.
    pub fn with_expected_frames(mut self, frames: u64) -> Self {
        self.expected_frames = Some(frames);
        self
    }

    /// Adds one metadata entry.
    pub fn with_attribute(mut self, key: impl Into<String>, value: impl Into<AttrValue>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }
}

/// The shape of everything a sink will receive, given to [`crate::Sink::begin`].
#[derive(Debug, Clone, PartialEq)]
pub struct StreamLayout {
    /// Field names, in the order their bytes appear in every [`crate::Frame`].
    pub fields: Vec<String>,
    /// Rows of every field.
    pub rows: usize,
    /// Columns of every field.
    pub cols: usize,
    /// Element type of every field.
    pub dtype: DType,
    /// The streams; a frame's `stream` indexes this list.
    pub streams: Vec<StreamInfo>,
    /// Run-level metadata: the config text, adapter names, wgpipe version, ...
    pub attributes: Attributes,
}

impl StreamLayout {
    /// A layout with no streams yet.
    pub fn new(fields: Vec<String>, rows: usize, cols: usize, dtype: DType) -> Self {
        StreamLayout { fields, rows, cols, dtype, streams: Vec::new(), attributes: Attributes::new() }
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

    /// Bytes of one field of one frame.
    pub fn field_bytes(&self) -> usize {
        self.rows * self.cols * self.dtype.size()
    }

    /// Bytes of one whole frame (every field).
    pub fn frame_bytes(&self) -> usize {
        self.field_bytes() * self.fields.len()
    }
}
