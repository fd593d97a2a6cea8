//! Frames, owned snapshots of one stream that travel from a producer to a sink, and the
//! element types their fields hold.

use std::fmt;
use std::ops::Range;

/// Element type of one field's values; always little-endian in a frame and on disk.
///
/// Non-exhaustive so that types can be added without breaking users.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// Unsigned 8-bit integer (images, masks).
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer (counts, histograms).
    U32,
    /// Signed 32-bit integer.
    I32,
    /// IEEE 754 binary16 ("half"), stored as its raw 2 bytes.
    F16,
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
}

impl DType {
    /// Every element type, smallest first.
    pub const ALL: [DType; 7] = [DType::U8, DType::U16, DType::U32, DType::I32, DType::F16, DType::F32, DType::F64];

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::U8 => 1,
            DType::U16 | DType::F16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::F64 => 8,
        }
    }

    /// numpy's name of the type (`uint8`, `float16`, ...), as written into metadata.
    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::I32 => "int32",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// numpy's type string of the little-endian type (`|u1`, `<f2`, `<f4`, ...), what
    /// `numpy.fromfile(path, dtype=...)` takes.
    pub fn numpy_str(self) -> &'static str {
        match self {
            DType::U8 => "|u1",
            DType::U16 => "<u2",
            DType::U32 => "<u4",
            DType::I32 => "<i4",
            DType::F16 => "<f2",
            DType::F32 => "<f4",
            DType::F64 => "<f8",
        }
    }

    /// Short Rust-like spelling (`u8`, `f16`, ...), as used in config files.
    pub fn short_name(self) -> &'static str {
        match self {
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::I32 => "i32",
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Whether the type is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::F32 | DType::F64)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One snapshot of one stream: every field of the layout at one simulation step.
///
/// A frame owns its bytes so that it can move through a channel while its producer reuses
/// its own staging memory at once. `data` holds every field of the [`crate::StreamLayout`]
/// back to back, in layout order, without padding; each field is its shape's elements in C
/// order (last axis fastest), little-endian. [`crate::StreamLayout::field_range`] says where
/// a field starts. All fields of a snapshot travel together because they are produced
/// together (one readback); sinks split them by field.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Index of the stream in [`crate::StreamLayout::streams`].
    pub stream: usize,
    /// Frame number within its stream, counting from 0 without gaps.
    pub index: u64,
    /// Simulation step the snapshot was taken after.
    pub step: u64,
    /// Every field's elements, field after field.
    pub data: Vec<u8>,
    /// The hash of `data` that the run checksum is built from ([`Frame::hash_data`]), when the
    /// producer computed it; `None` and a sink hashes `data` itself while writing.
    ///
    /// Why a producer may compute it: hashing reads every byte, which on the writer's thread
    /// is on the critical path of an I/O-bound run (`cargo xtask bench peers posix` measures
    /// the raw sink hashing and not against a plain `write` loop), while a device thread does
    /// it during time it spends waiting
    /// for the GPU anyway. Whoever changes `data` afterwards must set this back to `None`.
    pub data_hash: Option<u64>,
}

impl Frame {
    /// Frame `index` of `stream`, taken after `step`, holding `data` (every field, in layout
    /// order).
    pub fn new(stream: usize, index: u64, step: u64, data: Vec<u8>) -> Self {
        Frame { stream, index, step, data, data_hash: None }
    }
}

/// Frames are equal when they hold the same snapshot; whether the hash was computed yet
/// does not matter.
impl PartialEq for Frame {
    fn eq(&self, other: &Self) -> bool {
        (self.stream, self.index, self.step) == (other.stream, other.index, other.step) && self.data == other.data
    }
}

#[cfg(test)]
mod tests {
    use super::DType;

    #[test]
    fn every_spelling_parses_back_and_unknown_ones_name_the_choices() {
        for d in DType::ALL {
            for s in [d.short_name(), d.name(), d.numpy_str()] {
                assert_eq!(s.parse::<DType>().ok(), Some(d), "{s}");
            }
            assert_eq!(d.numpy_str().len(), 3, "{d}");
            assert_eq!(d.numpy_str()[2..].parse::<usize>().ok(), Some(d.size()), "{d}");
        }
        let e = "f8".parse::<DType>().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("\"f8\"") && e.contains("u8, u16, u32, i32, f16, f32, f64"), "{e}");
    }
}

/// The bytes of each field of one frame, in layout order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fields<'a> {
    data: &'a [u8],
    ranges: &'a [Range<usize>],
}

impl<'a> Fields<'a> {
    /// The fields of `data` that lie at `ranges`.
    pub(crate) fn new(data: &'a [u8], ranges: &'a [Range<usize>]) -> Self {
        Fields { data, ranges }
    }

    /// Field `i`'s bytes (empty when there is no field `i`).
    pub fn get(&self, i: usize) -> &'a [u8] {
        self.ranges.get(i).and_then(|r| self.data.get(r.clone())).unwrap_or_default()
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there are no fields (never, for a checked layout).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Every field's bytes, in layout order.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let (data, ranges) = (self.data, self.ranges);
        ranges.iter().map(move |r| data.get(r.clone()).unwrap_or_default())
    }
}
