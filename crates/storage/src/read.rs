//! Reading an output back, whatever sink wrote it: for tests, `wgpipe render` and `--resume`.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::frame::DType;
use crate::schema::Attributes;

/// Which sink wrote an output.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// A directory written by [`crate::RawSink`].
    Raw,
    /// A file written by the HDF5 sink.
    Hdf5,
}

/// One stream of an output, as far as it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSummary {
    /// Stream name (the raw file prefix or HDF5 group).
    pub name: String,
    /// Metadata given in the stream's [`crate::StreamInfo`].
    pub attributes: Attributes,
    /// Frames stored completely (every field and the step), readable with
    /// [`Output::read_frame`]; after a crash this counts what survived.
    pub frames: u64,
    /// Frames the stream was meant to hold, when it was known.
    pub expected_frames: Option<u64>,
    /// `finish` ran without a failed write and (if known) every expected frame arrived:
    /// what `--resume` checks to skip a stream.
    pub complete: bool,
}

/// What a backend provides to read its output back; [`Output`] checks indices first.
pub(crate) trait Reader: std::fmt::Debug + Send {
    /// Values of one field of one frame, row-major.
    fn read_frame(&self, stream: usize, field: usize, index: u64) -> Result<Vec<f32>>;
    /// Simulation steps of the first `frames` frames of `stream`.
    fn steps(&self, stream: usize, frames: u64) -> Result<Vec<u64>>;
}

/// A finished or interrupted output opened for reading (see [`crate::open_output`]).
#[derive(Debug)]
pub struct Output {
    pub(crate) path: PathBuf,
    pub(crate) format: OutputFormat,
    pub(crate) fields: Vec<String>,
    pub(crate) shape: [usize; 2],
    pub(crate) dtype: DType,
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

    /// Field names, in the order of [`crate::StreamLayout::fields`].
    pub fn fields(&self) -> &[String] {
        &self.fields
    }

    /// `[rows, cols]` of every field.
    pub fn shape(&self) -> [usize; 2] {
        self.shape
    }

    /// Element type of the stored values.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Run-level metadata given in [`crate::StreamLayout::attributes`].
    pub fn attributes(&self) -> &Attributes {
        &self.attributes
    }

    /// Whether the whole run finished without a failed write.
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
        self.fields.iter().position(|f| f == name)
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

    /// Values of one field of one frame, row-major (`rows × cols`).
    pub fn read_frame(&self, stream: usize, field: usize, index: u64) -> Result<Vec<f32>> {
        self.check(stream, field, Some(index))?;
        self.reader.read_frame(stream, field, index)
    }

    /// Simulation step of every complete frame of `stream`.
    pub fn steps(&self, stream: usize) -> Result<Vec<u64>> {
        let s = self.check(stream, 0, None)?;
        self.reader.steps(stream, s.frames)
    }
}
