//! Reading an output back, whatever sink wrote it: for tests, `wgpipe render` and `--resume`.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::frame::DType;
use crate::layout::Attributes;
use crate::raw_meta::{FORMAT as RAW_FORMAT, RUN_FILE, RunMeta, attrs_from_json, read_json};

/// The first 8 bytes of every HDF5 file.
const HDF5_SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

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

/// Format-specific handles.
#[derive(Debug)]
enum Backend {
    /// Data file paths per stream (fields in layout order) and the steps file.
    Raw { files: Vec<(Vec<PathBuf>, PathBuf)> },
    #[cfg(feature = "hdf5")]
    Hdf5(crate::hdf5_read::Hdf5Reader),
}

/// A finished or interrupted output opened for reading (see [`open_output`]).
#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    format: OutputFormat,
    fields: Vec<String>,
    shape: [usize; 2],
    dtype: DType,
    attributes: Attributes,
    complete: bool,
    streams: Vec<StreamSummary>,
    backend: Backend,
}

/// Opens what a sink wrote at `path`: a raw directory or an HDF5 file, told apart by content.
///
/// Counts the frames every stream holds completely, so an output left by a killed run opens
/// too and reports what survived.
pub fn open_output(path: impl AsRef<Path>) -> Result<Output> {
    let path = path.as_ref();
    let meta = std::fs::metadata(path).map_err(|e| Error::io("cannot open output", path, e))?;
    if meta.is_dir() {
        return open_raw(path);
    }
    let mut sig = [0u8; 8];
    let is_hdf5 =
        File::open(path).and_then(|mut f| f.read_exact(&mut sig)).map(|()| &sig == HDF5_SIGNATURE).unwrap_or(false);
    if !is_hdf5 {
        return Err(Error::BadOutput {
            path: path.to_path_buf(),
            reason: "neither a raw output directory nor an HDF5 file".into(),
        });
    }
    open_hdf5(path)
}

#[cfg(feature = "hdf5")]
fn open_hdf5(path: &Path) -> Result<Output> {
    let r = crate::hdf5_read::Hdf5Reader::open(path)?;
    Ok(Output {
        path: path.to_path_buf(),
        format: OutputFormat::Hdf5,
        fields: r.fields.clone(),
        shape: r.shape,
        dtype: DType::F32,
        attributes: r.attributes.clone(),
        complete: r.complete,
        streams: r.streams.clone(),
        backend: Backend::Hdf5(r),
    })
}

#[cfg(not(feature = "hdf5"))]
fn open_hdf5(_path: &Path) -> Result<Output> {
    Err(Error::FeatureDisabled { what: "reading HDF5 files", feature: "hdf5" })
}

/// Frames complete in a file of `len` bytes holding `unit`-byte frames.
fn complete_frames(path: &Path, unit: usize) -> Result<u64> {
    let len = std::fs::metadata(path).map_err(|e| Error::io("cannot open", path, e))?.len();
    Ok(len / unit.max(1) as u64)
}

fn open_raw(dir: &Path) -> Result<Output> {
    let run_path = dir.join(RUN_FILE);
    if !run_path.is_file() {
        return Err(Error::BadOutput { path: dir.to_path_buf(), reason: format!("directory without {RUN_FILE}") });
    }
    let run: RunMeta = read_json(&run_path)?;
    let bad = |reason: String| Error::BadOutput { path: run_path.clone(), reason };
    if run.format != RAW_FORMAT {
        return Err(bad(format!("format {:?} is not {RAW_FORMAT:?}", run.format)));
    }
    if run.numpy_dtype != DType::F32.numpy_str() {
        return Err(bad(format!("dtype {:?} is not supported", run.numpy_dtype)));
    }
    let field_bytes = run.shape[0] * run.shape[1] * DType::F32.size();
    let mut streams = Vec::new();
    let mut files = Vec::new();
    for s in &run.streams {
        if s.data_files.len() != run.fields.len() {
            return Err(bad(format!("stream {:?} lists the wrong number of files", s.name)));
        }
        let data: Vec<PathBuf> = s.data_files.iter().map(|f| dir.join(f)).collect();
        let steps = dir.join(&s.steps_file);
        let mut frames = complete_frames(&steps, 8)?;
        for d in &data {
            frames = frames.min(complete_frames(d, field_bytes)?);
        }
        streams.push(StreamSummary {
            name: s.name.clone(),
            attributes: attrs_from_json(&s.attributes),
            frames,
            expected_frames: s.expected_frames,
            complete: s.complete && frames == s.frames,
        });
        files.push((data, steps));
    }
    Ok(Output {
        path: dir.to_path_buf(),
        format: OutputFormat::Raw,
        fields: run.fields,
        shape: run.shape,
        dtype: DType::F32,
        attributes: attrs_from_json(&run.attributes),
        complete: run.complete,
        streams,
        backend: Backend::Raw { files },
    })
}

/// Reads `len` bytes at `offset` of `path`.
fn read_at(path: &Path, offset: u64, len: usize) -> Result<Vec<u8>> {
    let mut f = File::open(path).map_err(|e| Error::io("cannot open", path, e))?;
    let mut buf = vec![0u8; len];
    f.seek(SeekFrom::Start(offset))
        .and_then(|_| f.read_exact(&mut buf))
        .map_err(|e| Error::io("cannot read", path, e))?;
    Ok(buf)
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
        match &self.backend {
            Backend::Raw { files } => {
                let n = self.shape[0] * self.shape[1] * self.dtype.size();
                let path = &files[stream].0[field];
                let bytes = read_at(path, index * n as u64, n)?;
                Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
            }
            #[cfg(feature = "hdf5")]
            Backend::Hdf5(r) => r.read_frame(stream, field, index),
        }
    }

    /// Simulation step of every complete frame of `stream`.
    pub fn steps(&self, stream: usize) -> Result<Vec<u64>> {
        let s = self.check(stream, 0, None)?;
        match &self.backend {
            Backend::Raw { files } => {
                let bytes = read_at(&files[stream].1, 0, s.frames as usize * 8)?;
                Ok(bytes
                    .chunks_exact(8)
                    .map(|c| {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(c);
                        u64::from_le_bytes(a)
                    })
                    .collect())
            }
            #[cfg(feature = "hdf5")]
            Backend::Hdf5(r) => r.steps(stream, s.frames),
        }
    }
}
