//! Reading an output back, whatever sink wrote it: for tests, `wgpipe render` and `--resume`.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::frame::DType;
use crate::schema::{Attributes, FieldSpec};
use crate::zfp::Encoding;

/// Which sink wrote an output.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// A directory written by [`crate::RawSink`].
    Raw,
    /// A file written by the HDF5 sink.
    Hdf5,
    /// A Zarr v3 store written by the Zarr sink.
    Zarr,
    /// An ADIOS2 BP5 directory written by the ADIOS2 sink.
    Adios2,
}

impl OutputFormat {
    /// The name of the sink that writes it (`raw`, `hdf5`, `zarr`, `adios2`), as configs and
    /// [`crate::open_sink`] name it.
    pub fn sink_name(self) -> &'static str {
        match self {
            OutputFormat::Raw => "raw",
            OutputFormat::Hdf5 => "hdf5",
            OutputFormat::Zarr => "zarr",
            OutputFormat::Adios2 => "adios2",
        }
    }

    /// What it is, for people: `HDF5 file`, `raw directory`, `Zarr v3 store`, `ADIOS2 BP5
    /// directory`.
    pub fn describe(self) -> &'static str {
        match self {
            OutputFormat::Raw => "raw directory",
            OutputFormat::Hdf5 => "HDF5 file",
            OutputFormat::Zarr => "Zarr v3 store",
            OutputFormat::Adios2 => "ADIOS2 BP5 directory",
        }
    }
}

/// One stream of an output, as far as it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSummary {
    /// Stream name (the raw file prefix or HDF5 group).
    pub name: String,
    /// Metadata given in the stream's [`crate::StreamInfo`].
    pub attributes: Attributes,
    /// Frames stored completely (every field and the step), readable with
    /// [`Output::read_field`]; after a crash this counts what survived.
    pub frames: u64,
    /// Frames the stream was meant to hold, when it was known.
    pub expected_frames: Option<u64>,
    /// `finish` ran without a failed write and (if known) every expected frame arrived:
    /// what `--resume` checks to skip a stream.
    pub complete: bool,
}

/// What a backend provides to read its output back; [`Output`] checks indices first.
pub(crate) trait Reader: std::fmt::Debug + Send {
    /// The bytes of one field of one frame as stored: C order, little-endian, exactly
    /// the field's [`FieldSpec::bytes`] long.
    fn read_field(&self, stream: usize, field: usize, index: u64) -> Result<Vec<u8>>;
    /// Simulation steps of the first `frames` frames of `stream`.
    fn steps(&self, stream: usize, frames: u64) -> Result<Vec<u64>>;
    /// How field `field`'s frames are stored (its values, or a stream encoded before the
    /// sink, which `read_field` decodes): what an append must bring the same way.
    fn stored_encoding(&self, _field: usize) -> Encoding {
        Encoding::Values
    }
}

/// One field of one frame as read back: its bytes with their type and shape.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldData {
    /// Element type of `bytes`.
    pub dtype: DType,
    /// Elements per axis, C order (last axis fastest).
    pub shape: Vec<usize>,
    /// The elements, little-endian, exactly as the producer gave them.
    pub bytes: Vec<u8>,
}

impl FieldData {
    /// Every element as `f64`, which holds every supported type exactly.
    pub fn to_f64(&self) -> Vec<f64> {
        let b = &self.bytes;
        match self.dtype {
            DType::U8 => b.iter().map(|&v| f64::from(v)).collect(),
            DType::U16 => b.chunks_exact(2).map(|c| f64::from(u16::from_le_bytes([c[0], c[1]]))).collect(),
            DType::U32 => b.chunks_exact(4).map(|c| f64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect(),
            DType::I32 => b.chunks_exact(4).map(|c| f64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect(),
            DType::F16 => b.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64()).collect(),
            DType::F32 => b.chunks_exact(4).map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect(),
            DType::F64 => b
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        }
    }

    /// Every element as `f32` for a float field (`f16` and `f32` exactly, `f64` rounded to
    /// nearest); `None` for an integer field (use [`FieldData::to_f64`]).
    pub fn to_f32(&self) -> Option<Vec<f32>> {
        let b = &self.bytes;
        match self.dtype {
            DType::F16 => Some(b.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()),
            DType::F32 => Some(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
            DType::F64 => Some(self.to_f64().into_iter().map(|v| v as f32).collect()),
            DType::U8 | DType::U16 | DType::U32 | DType::I32 => None,
        }
    }
}

/// A finished or interrupted output opened for reading (see [`crate::open_output`]).
#[derive(Debug)]
pub struct Output {
    pub(crate) path: PathBuf,
    pub(crate) format: OutputFormat,
    pub(crate) fields: Vec<FieldSpec>,
    pub(crate) attributes: Attributes,
    pub(crate) complete: bool,
    pub(crate) streams: Vec<StreamSummary>,
    pub(crate) reader: Box<dyn Reader>,
}

impl Output {
    /// Where the output is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which sink wrote it.
    pub fn format(&self) -> OutputFormat {
        self.format
    }

    /// The fields (name, element type, shape of one frame, axis names), in the order of
    /// [`crate::StreamLayout::fields`].
    pub fn fields(&self) -> &[FieldSpec] {
        &self.fields
    }

    /// Run-level metadata given in [`crate::StreamLayout::attributes`].
    pub fn attributes(&self) -> &Attributes {
        &self.attributes
    }

    /// Whether the whole run finished without a failed write and every stream is complete
    /// (holds every frame it expected).
    pub fn complete(&self) -> bool {
        self.complete
    }

    /// The streams, in layout order (a frame's `stream` indexes this list).
    pub fn streams(&self) -> &[StreamSummary] {
        &self.streams
    }

    /// Index of the stream called `name`.
    pub fn stream_index(&self, name: &str) -> Option<usize> {
        self.streams.iter().position(|s| s.name == name)
    }

    /// Index of the field called `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// Errors unless `stream`, `field` and (if given) `index` exist.
    fn check(&self, stream: usize, field: usize, index: Option<u64>) -> Result<&StreamSummary> {
        let s = self.streams.get(stream).ok_or_else(|| Error::NotFound(format!("stream {stream}")))?;
        if field >= self.fields.len() {
            return Err(Error::NotFound(format!("field {field}")));
        }
        if let Some(i) = index
            && i >= s.frames
        {
            return Err(Error::NotFound(format!("frame {i} of stream {:?} (it holds {})", s.name, s.frames)));
        }
        Ok(s)
    }

    /// How field `field` is stored: its values ([`Encoding::Values`], whatever filter the
    /// format ran), or the ZFP streams of a field encoded before the sink, which
    /// [`Output::read_field`] decodes to values.
    pub fn stored_encoding(&self, field: usize) -> Encoding {
        self.reader.stored_encoding(field)
    }

    /// One field of one frame: its bytes exactly as the producer gave them, with type and
    /// shape.
    pub fn read_field(&self, stream: usize, field: usize, index: u64) -> Result<FieldData> {
        self.check(stream, field, Some(index))?;
        let spec = &self.fields[field];
        let bytes = self.reader.read_field(stream, field, index)?;
        Ok(FieldData { dtype: spec.dtype, shape: spec.shape.clone(), bytes })
    }

    /// One float field of one frame as `f32` values in C order (see [`FieldData::to_f32`]);
    /// [`Error::NotFloat`] for an integer field.
    pub fn read_f32(&self, stream: usize, field: usize, index: u64) -> Result<Vec<f32>> {
        let data = self.read_field(stream, field, index)?;
        data.to_f32().ok_or_else(|| Error::NotFloat { field: self.fields[field].name.clone(), dtype: data.dtype })
    }

    /// Simulation step of every complete frame of `stream`.
    pub fn steps(&self, stream: usize) -> Result<Vec<u64>> {
        let s = self.check(stream, 0, None)?;
        self.reader.steps(stream, s.frames)
    }
}

#[cfg(test)]
mod tests {
    use super::FieldData;
    use crate::frame::DType;

    fn data(dtype: DType, bytes: Vec<u8>) -> FieldData {
        FieldData { dtype, shape: vec![bytes.len() / dtype.size()], bytes }
    }

    #[test]
    fn every_type_converts_to_f64_exactly_and_only_floats_to_f32() {
        let cases: [(DType, Vec<u8>, Vec<f64>); 7] = [
            (DType::U8, vec![0, 255], vec![0.0, 255.0]),
            (DType::U16, [65535u16, 7].iter().flat_map(|v| v.to_le_bytes()).collect(), vec![65535.0, 7.0]),
            (DType::U32, [u32::MAX, 1].iter().flat_map(|v| v.to_le_bytes()).collect(), vec![4_294_967_295.0, 1.0]),
            (DType::I32, [i32::MIN, -5].iter().flat_map(|v| v.to_le_bytes()).collect(), vec![-2_147_483_648.0, -5.0]),
            // binary16: 0x3E00 = 1.5, 0xC000 = -2, 0x0001 = 2^-24 (smallest subnormal).
            (
                DType::F16,
                [0x3E00u16, 0xC000, 0x0001].iter().flat_map(|v| v.to_le_bytes()).collect(),
                vec![1.5, -2.0, 2f64.powi(-24)],
            ),
            (DType::F32, [0.1f32, -0.0].iter().flat_map(|v| v.to_le_bytes()).collect(), vec![f64::from(0.1f32), -0.0]),
            (DType::F64, [0.1f64, 1e300].iter().flat_map(|v| v.to_le_bytes()).collect(), vec![0.1, 1e300]),
        ];
        for (dtype, bytes, want) in cases {
            let d = data(dtype, bytes);
            assert_eq!(d.to_f64(), want, "{dtype}");
            match d.to_f32() {
                Some(v) => {
                    assert!(dtype.is_float(), "{dtype}");
                    let want32: Vec<f32> = want.iter().map(|&x| x as f32).collect();
                    assert_eq!(v, want32, "{dtype}");
                }
                None => assert!(!dtype.is_float(), "{dtype}"),
            }
        }
    }
}
