//! The raw half of [`crate::open_output`]: a directory written by [`crate::RawSink`].

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::meta::{RUN_FILE, read_run};
use crate::error::{Error, Result};
use crate::json_meta::attrs_from_json;
use crate::read::{Output, OutputFormat, Reader, StreamSummary};
use crate::zfp::Encoding;

/// Per stream: one data file per field (layout order) and the steps file.
#[derive(Debug)]
struct RawReader {
    files: Vec<(Vec<PathBuf>, PathBuf)>,
    /// Bytes of one frame of each field as stored.
    field_bytes: Vec<usize>,
    /// Per field: how its frames are stored, and its shape (to decode a ZFP stream).
    encodings: Vec<(Encoding, Vec<usize>)>,
}

/// Frames complete in a file of `len` bytes holding `unit`-byte frames.
fn complete_frames(path: &Path, unit: usize) -> Result<u64> {
    let len = std::fs::metadata(path).map_err(|e| Error::io("cannot open", path, e))?.len();
    Ok(len / unit.max(1) as u64)
}

/// Opens the raw output directory `dir` (metadata format 1 or 2).
pub(crate) fn open(dir: &Path) -> Result<Output> {
    let run_path = dir.join(RUN_FILE);
    if !run_path.is_file() {
        return Err(Error::BadOutput { path: dir.to_path_buf(), reason: format!("directory without {RUN_FILE}") });
    }
    let run = read_run(&run_path)?;
    let bad = |reason: String| Error::BadOutput { path: run_path.clone(), reason };
    let mut fields = run.fields.iter().map(|f| f.to_spec(&run_path)).collect::<Result<Vec<_>>>()?;
    let field_bytes: Vec<usize> = run.fields.iter().map(|f| f.frame_bytes).collect();
    // Fields stored as ZFP streams read back as their values.
    let encodings = fields.iter().map(|f| (f.encoding, f.shape.clone())).collect();
    for f in &mut fields {
        f.encoding = Encoding::Values;
    }
    let mut streams = Vec::new();
    let mut files = Vec::new();
    for s in &run.streams {
        if s.data_files.len() != fields.len() {
            return Err(bad(format!(
                "stream {:?} lists {} data files for {} fields",
                s.name,
                s.data_files.len(),
                fields.len()
            )));
        }
        let data: Vec<PathBuf> = s.data_files.iter().map(|f| dir.join(f)).collect();
        let steps = dir.join(&s.steps_file);
        let mut frames = complete_frames(&steps, 8)?;
        for (d, &unit) in data.iter().zip(&field_bytes) {
            frames = frames.min(complete_frames(d, unit)?);
        }
        streams.push(StreamSummary {
            name: s.name.clone(),
            attributes: attrs_from_json(&s.attributes),
            frames,
            expected_frames: s.expected_frames,
            complete: s.complete && s.frames == Some(frames),
        });
        files.push((data, steps));
    }
    Ok(Output {
        path: dir.to_path_buf(),
        format: OutputFormat::Raw,
        fields,
        attributes: attrs_from_json(&run.attributes),
        complete: run.complete,
        streams,
        reader: Box::new(RawReader { files, field_bytes, encodings }),
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
    fn read_field(&self, stream: usize, field: usize, index: u64) -> Result<Vec<u8>> {
        let n = self.field_bytes[field];
        let path = &self.files[stream].0[field];
        // No overflow: `index` is below the frame count, which came from the file's size.
        let stored = read_at(path, index * n as u64, n)?;
        match &self.encodings[field] {
            (Encoding::Zfp(rate), shape) => {
                let values = rate.decode(&stored, shape).ok_or_else(|| Error::BadOutput {
                    path: path.clone(),
                    reason: format!("frame {index} is a ZFP stream of shape {shape:?}, which ZFP cannot code"),
                })?;
                Ok(values.iter().flat_map(|v| v.to_le_bytes()).collect())
            }
            _ => Ok(stored),
        }
    }

    fn stored_encoding(&self, field: usize) -> Encoding {
        self.encodings.get(field).map_or(Encoding::Values, |(e, _)| *e)
    }

    fn steps(&self, stream: usize, frames: u64) -> Result<Vec<u64>> {
        let path = &self.files[stream].1;
        let len = usize::try_from(frames).ok().and_then(|f| f.checked_mul(8)).ok_or_else(|| Error::BadOutput {
            path: path.clone(),
            reason: format!("{frames} frames do not fit in memory"),
        })?;
        let bytes = read_at(path, 0, len)?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }
}
