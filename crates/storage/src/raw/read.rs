//! The raw half of [`crate::open_output`]: a directory written by [`crate::RawSink`].

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::meta::{FORMAT as RAW_FORMAT, RUN_FILE, RunMeta, attrs_from_json, read_json};
use crate::error::{Error, Result};
use crate::frame::DType;
use crate::read::{Output, OutputFormat, Reader, StreamSummary};

/// Data file paths per stream (fields in layout order) and the steps file.
#[derive(Debug)]
struct RawReader {
    files: Vec<(Vec<PathBuf>, PathBuf)>,
    field_bytes: usize,
}

/// Frames complete in a file of `len` bytes holding `unit`-byte frames.
fn complete_frames(path: &Path, unit: usize) -> Result<u64> {
    let len = std::fs::metadata(path).map_err(|e| Error::io("cannot open", path, e))?.len();
    Ok(len / unit.max(1) as u64)
}

/// Opens the raw output directory `dir`.
pub(crate) fn open(dir: &Path) -> Result<Output> {
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
        reader: Box::new(RawReader { files, field_bytes }),
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

impl Reader for RawReader {
    fn read_frame(&self, stream: usize, field: usize, index: u64) -> Result<Vec<f32>> {
        let n = self.field_bytes;
        let bytes = read_at(&self.files[stream].0[field], index * n as u64, n)?;
        Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    fn steps(&self, stream: usize, frames: u64) -> Result<Vec<u64>> {
        let bytes = read_at(&self.files[stream].1, 0, frames as usize * 8)?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                u64::from_le_bytes(a)
            })
            .collect())
    }
}
