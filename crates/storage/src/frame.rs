//! Frames: owned snapshots of one stream that travel from a producer to a sink.

use crate::schema::StreamLayout;

/// Element type of the values in a frame.
///
/// Only `f32` exists today; the enum is non-exhaustive so that `f16` can follow without
/// breaking users.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE 754 float, little-endian on disk.
    F32,
}

impl DType {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
        }
    }

    /// Name as written into metadata files (numpy's spelling: `float32`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
        }
    }

    /// Dtype string numpy understands for little-endian data (`<f4`).
    pub fn numpy_str(self) -> &'static str {
        match self {
            DType::F32 => "<f4",
        }
    }
}

/// One snapshot of one stream: every field of the layout at one simulation step.
///
/// A frame owns its bytes so that it can move through a channel while its producer reuses
/// its own staging memory at once. The bytes hold every field of the [`StreamLayout`], in the
/// layout's field order, each `rows × cols` elements in row-major order, little-endian.
/// All fields of a snapshot travel together because they are produced together (one
/// readback); sinks split them by field with [`Frame::field`].
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Index of the stream in [`StreamLayout::streams`].
    pub stream: usize,
    /// Frame number within its stream, counting from 0 without gaps.
    pub index: u64,
    /// Simulation step the snapshot was taken after.
    pub step: u64,
    /// `[rows, cols]` of every field.
    pub shape: [usize; 2],
    /// Element type.
    pub dtype: DType,
    /// Number of fields held in `data`.
    pub field_count: usize,
    /// Every field's elements, field after field, little-endian.
    pub data: Vec<u8>,
}

impl Frame {
    /// A frame shaped like `layout`, holding `data` (every field, in layout order).
    pub fn new(layout: &StreamLayout, stream: usize, index: u64, step: u64, data: Vec<u8>) -> Self {
        Frame {
            stream,
            index,
            step,
            shape: [layout.rows, layout.cols],
            dtype: layout.dtype,
            field_count: layout.fields.len(),
            data,
        }
    }

    /// Bytes of one field.
    pub fn field_bytes(&self) -> usize {
        self.shape[0] * self.shape[1] * self.dtype.size()
    }

    /// The bytes of field `i` (layout order), or `None` past the last field.
    pub fn field(&self, i: usize) -> Option<&[u8]> {
        let n = self.field_bytes();
        self.data.get(i * n..(i + 1) * n)
    }
}
