//! The HDF5 sink: one self-describing file that stays readable if the run is killed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use hdf5::types::VarLenUnicode;
use hdf5::{Dataset, File, Group, Location};
use ndarray::{ArrayView1, ArrayView3};

use crate::error::{Error, Result};
use crate::frame::Frame;
use crate::layout::{AttrValue, StreamLayout};
use crate::options::{Compression, SinkOptions};
use crate::output::{OutputKind, Staged};
use crate::read::OutputFormat;
use crate::reserve::{METADATA_MARGIN, Reserve, trim};
use crate::sink::{Sink, SinkSummary};
use crate::time::now_rfc3339;
use crate::validate::{STEPS_NAME, Validator};

/// Value of the root `format` attribute, which marks a file as written by this sink.
pub(crate) const FORMAT: &str = "wgpipe-hdf5";
/// Steps per chunk of the `steps` dataset (8 KiB chunks: small, rarely rewritten).
const STEPS_CHUNK: usize = 1024;

/// Wraps an HDF5 error with what was done to which file.
pub(crate) fn h5err(action: impl Into<String>, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Hdf5 { action: action.into(), path: path.to_path_buf(), message: e.to_string() }
}

/// Writes (or replaces) one scalar attribute.
fn set_attr(loc: &Location, name: &str, value: &AttrValue) -> hdf5::Result<()> {
    if loc.attr_names()?.iter().any(|n| n == name) {
        loc.delete_attr(name)?;
    }
    match value {
        AttrValue::Int(i) => loc.new_attr::<i64>().create(name)?.write_scalar(i),
        AttrValue::Float(f) => loc.new_attr::<f64>().create(name)?.write_scalar(f),
        AttrValue::Text(t) => {
            // HDF5 strings end at NUL; drop any so the rest of the text survives.
            let s: VarLenUnicode = t.replace('\0', "").parse().map_err(|e| format!("{e}"))?;
            loc.new_attr::<VarLenUnicode>().create(name)?.write_scalar(&s)
        }
    }
}

/// Writes (or replaces) a boolean attribute (read by h5py as a numpy bool).
fn set_bool(loc: &Location, name: &str, value: bool) -> hdf5::Result<()> {
    if loc.attr_names()?.iter().any(|n| n == name) {
        loc.delete_attr(name)?;
    }
    loc.new_attr::<bool>().create(name)?.write_scalar(&value)
}

/// Field bytes as `f32`s: borrowed when aligned on a little-endian host, else copied.
fn as_f32<'a>(bytes: &'a [u8], scratch: &'a mut Vec<f32>) -> &'a [f32] {
    if cfg!(target_endian = "little")
        && let Ok(v) = bytemuck::try_cast_slice::<u8, f32>(bytes)
    {
        return v;
    }
    scratch.clear();
    scratch.extend(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])));
    scratch
}

/// The datasets of one stream.
#[derive(Debug)]
struct StreamSets {
    group: Group,
    fields: Vec<Dataset>,
    steps: Dataset,
}

/// State between `begin` and `finish`.
#[derive(Debug)]
struct Open {
    file: File,
    reserve: Reserve,
    validator: Validator,
    streams: Vec<StreamSets>,
    scratch: Vec<f32>,
    /// A write failed: later writes are refused, `finish` keeps what was stored before.
    failed: bool,
    /// Appending: every stream already in the file and not rewritten is complete.
    others_complete: bool,
}

/// Writes every stream into one HDF5 file: a group per stream, a chunked dataset of shape
/// (frames, rows, cols) per field with an unlimited first dimension, and a `steps` dataset.
///
/// Each frame grows the datasets by one, writes its slab and flushes the file, so a run
/// killed at any point leaves a file that opens and holds every frame completed before the
/// kill. Layout and attributes are listed in the crate README.
#[derive(Debug)]
pub struct Hdf5Sink {
    options: SinkOptions,
    open: Option<Open>,
    summary: SinkSummary,
}

impl Hdf5Sink {
    /// An HDF5 sink writing the file `options.path` (created by `begin`).
    pub fn new(options: SinkOptions) -> Self {
        Hdf5Sink { options, open: None, summary: SinkSummary::default() }
    }

    fn path(&self) -> &Path {
        &self.options.path
    }

    /// Creates the file (or, appending, opens it and drops the streams to rewrite), its
    /// groups, datasets and run attributes.
    fn create(&self, layout: &StreamLayout) -> Result<Open> {
        let path = self.path().to_path_buf();
        let validator = Validator::new(layout)?;
        if let Compression::Deflate(_) = self.options.compression
            && !hdf5::filters::deflate_available()
        {
            return Err(Error::InvalidOptions(
                "deflate is not available in this HDF5 library: use compression none".into(),
            ));
        }
        blosc_ready(self.options.compression)?;
        let err = |what: &str| {
            let path = path.clone();
            let what = what.to_owned();
            move |e: hdf5::Error| h5err(what.clone(), &path, e)
        };
        let existing =
            if self.options.append { crate::append::check(&path, layout, OutputFormat::Hdf5)? } else { None };
        let mut staged = None;
        let (file, first_index, others_complete) = match &existing {
            None => {
                let staging = staged.insert(Staged::prepare(&path, self.options.overwrite, OutputKind::File)?);
                let file = File::create_excl(staging.staging()).map_err(err("cannot create HDF5 file"))?;
                let root: &Location = &file;
                for (k, v) in [
                    ("format", AttrValue::from(FORMAT)),
                    ("created", now_rfc3339().into()),
                    ("wgpipe_storage_version", env!("CARGO_PKG_VERSION").into()),
                ] {
                    set_attr(root, k, &v).map_err(err(&format!("cannot write attribute {k:?} to")))?;
                }
                let names = layout
                    .fields
                    .iter()
                    .map(|f| f.parse::<VarLenUnicode>())
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| h5err("cannot encode field names for", &path, e))?;
                root.new_attr::<VarLenUnicode>()
                    .shape(names.len())
                    .create("fields")
                    .and_then(|a| a.write(ArrayView1::from(&names[..])))
                    .map_err(err("cannot write attribute \"fields\" to"))?;
                (file, 0, true)
            }
            Some(existing) => {
                let file = File::open_rw(&path).map_err(err("cannot open HDF5 file for appending"))?;
                for name in &existing.replace {
                    file.unlink(name).map_err(err(&format!("cannot delete incomplete stream {name:?} of")))?;
                }
                let groups = file.groups().map_err(err("cannot list groups of"))?;
                let next = groups.iter().filter_map(|g| crate::hdf5_read::u64_attr(g, "stream_index")).max();
                (file, next.map_or(0, |n| n + 1), existing.others_complete)
            }
        };
        let root: &Location = &file;
        for (k, v) in &layout.attributes {
            set_attr(root, k, v).map_err(err(&format!("cannot write attribute {k:?} to")))?;
        }
        set_bool(root, "complete", false).map_err(err("cannot write attribute to"))?;

        let (rows, cols) = (layout.rows, layout.cols);
        let cf = self.options.chunk_frames.max(1);
        let chunk_bytes = cf * layout.field_bytes();
        let mut streams = Vec::with_capacity(layout.streams.len());
        for (si, s) in layout.streams.iter().enumerate() {
            let group = file.create_group(&s.name).map_err(err(&format!("cannot create group {:?} in", s.name)))?;
            let mut attrs = s.attributes.clone();
            attrs.insert("stream_index".into(), AttrValue::from(first_index + si as u64));
            if let Some(e) = s.expected_frames {
                attrs.insert("expected_frames".into(), AttrValue::from(e));
            }
            for (k, v) in &attrs {
                set_attr(&group, k, v)
                    .map_err(err(&format!("cannot write attribute {k:?} of stream {:?} to", s.name)))?;
            }
            set_bool(&group, "complete", false).map_err(err("cannot write attribute to"))?;
            let mut fields = Vec::with_capacity(layout.fields.len());
            for f in &layout.fields {
                let mut b = group
                    .new_dataset::<f32>()
                    .chunk((cf, rows, cols))
                    .shape((0.., rows, cols))
                    .fill_time(hdf5::dataset::FillTime::Never);
                b = match self.options.compression {
                    Compression::None => b,
                    Compression::Deflate(level) => b.shuffle().deflate(level),
                    #[cfg(feature = "blosc")]
                    Compression::BloscLz4(level) => b.blosc_lz4(level, hdf5::filters::BloscShuffle::Byte),
                    #[cfg(feature = "blosc")]
                    Compression::BloscZstd(level) => b.blosc_zstd(level, hdf5::filters::BloscShuffle::Byte),
                    // Refused by `blosc_ready` above.
                    #[cfg(not(feature = "blosc"))]
                    Compression::BloscLz4(_) | Compression::BloscZstd(_) => b,
                };
                if self.options.compression != Compression::None {
                    // Filtered chunks must sit in the cache until complete; room for two.
                    b = b.chunk_cache(521, 2 * chunk_bytes, 1.0);
                }
                let ds = b.create(f.as_str()).map_err(err(&format!("cannot create dataset {}/{f} in", s.name)))?;
                fields.push(ds);
            }
            let steps = group
                .new_dataset::<u64>()
                .chunk(STEPS_CHUNK)
                .shape(0..)
                .create(STEPS_NAME)
                .map_err(err(&format!("cannot create dataset {}/steps in", s.name)))?;
            streams.push(StreamSets { group, fields, steps });
        }
        file.flush().map_err(err("cannot flush"))?;
        if let Some(staged) = staged {
            staged.publish(self.options.fsync)?;
        }
        let reserve = Reserve::open(&path)?;
        Ok(Open { file, reserve, validator, streams, scratch: Vec::new(), failed: false, others_complete })
    }
}

/// Errors unless this build can write `compression`'s blosc filter (a no-op for others).
///
/// hdf5-metno registers the blosc filter with the HDF5 library when the library is first
/// used (and so before any dataset exists); this checks that the registration took.
fn blosc_ready(compression: Compression) -> Result<()> {
    compression.check_available()?;
    #[cfg(feature = "blosc")]
    if compression.is_blosc() && !hdf5::filters::blosc_available() {
        return Err(Error::InvalidOptions(format!(
            "compression {compression}: the blosc filter could not be registered with the HDF5 \
             library: use none or deflate"
        )));
    }
    Ok(())
}

/// Appends one frame to its stream's datasets and flushes the file.
fn append(open: &mut Open, frame: &Frame, path: &Path) -> Result<()> {
    let l = open.validator.layout();
    let (rows, cols) = (l.rows, l.cols);
    let n = open.validator.frames()[frame.stream] as usize;
    let sets = &open.streams[frame.stream];
    let name = &l.streams[frame.stream].name;
    open.reserve.ensure(open.file.size() + frame.data.len() as u64 + METADATA_MARGIN)?;
    for (i, ds) in sets.fields.iter().enumerate() {
        let ctx = || format!("cannot write frame {n} of {name}/{} to", l.fields[i]);
        let values = as_f32(frame.field(i).unwrap_or_default(), &mut open.scratch);
        let view = ArrayView3::from_shape((1, rows, cols), values).map_err(|e| h5err(ctx(), path, e))?;
        ds.resize((n + 1, rows, cols)).map_err(|e| h5err(ctx(), path, e))?;
        ds.write_slice(view, (n..n + 1, .., ..)).map_err(|e| h5err(ctx(), path, e))?;
    }
    let ctx = || format!("cannot write step of frame {n} of {name} to");
    sets.steps.resize(n + 1).map_err(|e| h5err(ctx(), path, e))?;
    sets.steps.write_slice(ArrayView1::from(&[frame.step][..]), n..n + 1).map_err(|e| h5err(ctx(), path, e))?;
    open.file.flush().map_err(|e| h5err(format!("cannot flush frame {n} of {name} to"), path, e))
}

/// Shrinks a stream's datasets back to `n` frames after a failed append, so the file does
/// not claim a frame it may not hold (and HDF5 can give back the space it had allocated).
fn roll_back(sets: &StreamSets, n: usize, rows: usize, cols: usize) {
    for ds in &sets.fields {
        if ds.shape().first().is_some_and(|&len| len > n) {
            let _ = ds.resize((n, rows, cols));
        }
    }
    if sets.steps.shape().first().is_some_and(|&len| len > n) {
        let _ = sets.steps.resize(n);
    }
}

impl Sink for Hdf5Sink {
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        let start = Instant::now();
        if self.open.is_some() {
            return Err(Error::Usage("begin called twice"));
        }
        self.options.check()?;
        // A half-made new file never reaches the path: `Staged` removes it. An appended-to
        // file is left as it is.
        self.open = Some(self.create(layout)?);
        self.summary.write_seconds += start.elapsed().as_secs_f64();
        Ok(())
    }

    fn write(&mut self, frame: &Frame) -> Result<()> {
        let start = Instant::now();
        let path = self.options.path.clone();
        let open = self.open.as_mut().ok_or(Error::Usage("write called before begin"))?;
        if open.failed {
            return Err(Error::Usage("write called after a failed write: call finish"));
        }
        open.validator.check(frame)?;
        if let Err(e) = append(open, frame, &path) {
            open.failed = true;
            let l = open.validator.layout();
            let n = open.validator.frames()[frame.stream] as usize;
            roll_back(&open.streams[frame.stream], n, l.rows, l.cols);
            return Err(e);
        }
        open.validator.commit(frame);
        self.summary.record(frame, start);
        Ok(())
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        let start = Instant::now();
        let path: PathBuf = self.options.path.clone();
        let open = self.open.take().ok_or(Error::Usage("finish called without begin"))?;
        let failed = open.failed;
        let l = open.validator.layout();
        let reserved = open.reserve.ensure(open.file.size() + METADATA_MARGIN);
        let failed = failed || reserved.is_err();
        let finished = (|| -> hdf5::Result<()> {
            for ((sets, info), &n) in open.streams.iter().zip(&l.streams).zip(open.validator.frames()) {
                set_attr(&sets.group, "frames", &AttrValue::from(n))?;
                let complete = !failed && info.expected_frames.is_none_or(|e| e == n);
                set_bool(&sets.group, "complete", complete)?;
            }
            set_bool(&open.file, "complete", !failed && open.others_complete)?;
            open.file.flush()
        })();
        let Open { file, streams, reserve, .. } = open;
        drop(streams);
        let closed = file.close();
        drop(reserve);
        let trimmed = trim(&path);
        if !failed {
            finished.map_err(|e| h5err("cannot finish", &path, e))?;
            closed.map_err(|e| h5err("cannot close", &path, e))?;
            trimmed?;
        }
        if self.options.fsync {
            std::fs::File::open(&path).and_then(|f| f.sync_all()).map_err(|e| Error::io("cannot sync", &path, e))?;
            crate::output::sync_dir(path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))?;
        }
        self.summary.write_seconds += start.elapsed().as_secs_f64();
        Ok(std::mem::take(&mut self.summary))
    }
}
