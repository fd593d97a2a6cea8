//! The raw sink: one little-endian file per stream and field, readable with `numpy.fromfile`.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::meta::{
    FORMAT, FORMAT_VERSION, FieldMeta, RUN_FILE, RunMeta, RunStream, data_file, meta_file, read_run, steps_file,
    write_json,
};
use crate::error::{Error, Result, is_disk_full};
use crate::frame::Fields;
use crate::frame::Frame;
use crate::json_meta::{FieldEntry, attrs_to_json};
use crate::options::SinkOptions;
use crate::prepare::{OutputKind, Staged, sync_dir};
use crate::protocol::{Backend, Checked, Outcome};
use crate::read::OutputFormat;
use crate::schema::{AXIS_ORDER, StreamLayout};
use crate::time::now_rfc3339;

/// Bytes checksummed and written at a time: small enough to stay in a core's L2 cache
/// between the checksum and the copy into the page cache.
const CHECKSUM_PIECE: usize = 256 << 10;

/// Frames of at least this many bytes that come unhashed are hashed on a thread of their own
/// while they are written (starting one costs tens of microseconds; hashing this much, a few
/// times that).
const PARALLEL_HASH_BYTES: usize = 1 << 20;

/// An open data file with the path it is reported under.
///
/// Unbuffered on purpose: each field goes to the kernel before `write` returns (in one
/// call, or in pieces of [`CHECKSUM_PIECE`] where the sink hashes it as it goes), so a frame
/// that `write` acknowledged is in the page cache and cannot be lost to a later failing flush.
#[derive(Debug)]
struct Out {
    path: PathBuf,
    file: File,
}

impl Out {
    /// Opens the existing file `name` in `dir`, cut to `len` bytes, for writing after them.
    fn continue_at(dir: &Path, name: &str, len: u64) -> Result<Self> {
        let path = dir.join(name);
        let mut file =
            fs::OpenOptions::new().write(true).open(&path).map_err(|e| Error::io("cannot open", &path, e))?;
        file.set_len(len).map_err(|e| Error::io("cannot truncate", &path, e))?;
        file.seek(SeekFrom::Start(len)).map_err(|e| Error::io("cannot seek in", &path, e))?;
        Ok(Out { path, file })
    }

    /// Creates the file `name` in `build` (the output directory, or its staging name while
    /// the output is new), reported as `name` in `dir`.
    fn create(build: &Path, dir: &Path, name: &str) -> Result<Self> {
        let at = build.join(name);
        let file = File::create(&at).map_err(|e| Error::io("cannot create", &at, e))?;
        Ok(Out { path: dir.join(name), file })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_all(bytes).map_err(|e| match is_disk_full(&e) {
            true => Error::DiskFull { path: self.path.clone(), needed: bytes.len() as u64, source: e },
            false => Error::io("cannot write frame to", &self.path, e),
        })
    }

    /// Cuts the file to `len` bytes (drops a partial frame left by a failed write).
    fn truncate(&mut self, len: u64) -> Result<()> {
        self.file.set_len(len).map_err(|e| Error::io("cannot truncate", &self.path, e))
    }

    fn sync(&mut self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io("cannot sync", &self.path, e))
    }
}

/// The files of one stream: one per field (layout order) and the steps.
#[derive(Debug)]
struct StreamFiles {
    fields: Vec<Out>,
    steps: Out,
}

/// State between `begin` and `finish`.
#[derive(Debug)]
struct Open {
    layout: StreamLayout,
    streams: Vec<StreamFiles>,
    created: String,
    /// Appending: the streams already in the directory that this run leaves untouched.
    kept: Vec<RunStream>,
}

/// The raw backend: writes each stream's fields to their own files of little-endian values,
/// frame after frame, in a directory (see the crate README for the file names and metadata
/// keys).
///
/// Raw files need no library to read (`numpy.fromfile(path, dtype=numpy_dtype).reshape(-1,
/// *shape)` with the field's `numpy_dtype` and `shape` from the metadata) and cost nothing to
/// write beyond the copy into the page cache. They survive a crash as far as their bytes
/// reached the disk: complete frames = file size / the field's frame bytes.
#[derive(Debug)]
pub struct RawBackend {
    options: SinkOptions,
    open: Option<Open>,
}

/// The raw sink: [`RawBackend`] driven through the sink protocol.
pub type RawSink = Checked<RawBackend>;

impl RawSink {
    /// A raw sink writing into the directory `options.path` (created by `begin`).
    pub fn new(options: SinkOptions) -> Self {
        Checked::from(RawBackend { options, open: None })
    }
}

impl RawBackend {
    fn dir(&self) -> &Path {
        &self.options.path
    }

    /// Builds `run.json` for `frames` stored per stream (`None` while the run is open: no
    /// count, nothing complete), `complete(i, n)` saying whether stream `i` holding `n`
    /// frames is complete.
    fn run_meta(&self, open: &Open, frames: Option<&[u64]>, complete: &dyn Fn(usize, u64) -> bool) -> RunMeta {
        let l = &open.layout;
        let mut run = RunMeta {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            wgpipe_storage_version: env!("CARGO_PKG_VERSION").into(),
            created: open.created.clone(),
            byte_order: "little".into(),
            axis_order: AXIS_ORDER.into(),
            fields: l.fields.iter().map(FieldEntry::from_spec).collect(),
            streams: open
                .kept
                .iter()
                .cloned()
                .chain(l.streams.iter().enumerate().map(|(i, s)| {
                    let n = frames.and_then(|f| f.get(i).copied());
                    RunStream {
                        name: s.name.clone(),
                        data_files: l.fields.iter().map(|f| data_file(&s.name, &f.name)).collect(),
                        steps_file: steps_file(&s.name),
                        expected_frames: s.expected_frames,
                        frames: n,
                        complete: n.is_some_and(|n| complete(i, n)),
                        attributes: attrs_to_json(&s.attributes),
                    }
                }))
                .collect::<Vec<_>>(),
            attributes: attrs_to_json(&l.attributes),
            complete: false,
        };
        // The run is complete when every stream is, the kept ones included.
        run.complete = run.streams.iter().all(|s| s.complete);
        run
    }

    /// Writes `run.json` and every `<stream>.<field>.json` into `dir` (see
    /// [`RawBackend::run_meta`]).
    fn write_meta(
        &self,
        dir: &Path,
        open: &Open,
        frames: Option<&[u64]>,
        complete: &dyn Fn(usize, u64) -> bool,
    ) -> Result<()> {
        let run = self.run_meta(open, frames, complete);
        for (si, s) in run.streams.iter().enumerate().skip(open.kept.len()) {
            for (fi, field) in run.fields.iter().enumerate() {
                let meta = FieldMeta {
                    format: FORMAT.into(),
                    format_version: FORMAT_VERSION,
                    data_file: s.data_files[fi].clone(),
                    steps_file: s.steps_file.clone(),
                    field: field.name.clone(),
                    field_index: fi,
                    dtype: field.dtype.clone(),
                    numpy_dtype: field.numpy_dtype.clone(),
                    byte_order: run.byte_order.clone(),
                    axis_order: run.axis_order.clone(),
                    shape: field.shape.clone(),
                    dims: field.dims.clone(),
                    frame_bytes: field.frame_bytes,
                    encoding: field.encoding.clone(),
                    stream: s.name.clone(),
                    stream_index: si,
                    stream_attributes: s.attributes.clone(),
                    run_attributes: run.attributes.clone(),
                    expected_frames: s.expected_frames,
                    frames: s.frames,
                    complete: s.complete,
                };
                write_json(&dir.join(meta_file(&s.name, &field.name)), &meta, self.options.fsync)?;
            }
        }
        write_json(&dir.join(RUN_FILE), &run, self.options.fsync)
    }

    /// Creates the directory, the data files and the first metadata.
    fn create(&self, layout: &StreamLayout) -> Result<Open> {
        self.check_layout(layout)?;
        let existing = if self.options.append {
            crate::append::check(self.dir(), layout, OutputFormat::Raw, super::read::open)?
        } else {
            None
        };
        let (kept, created, staged) = match existing {
            None => {
                let staged = Staged::prepare(self.dir(), self.options.overwrite, OutputKind::RawDir)?;
                fs::create_dir(staged.staging())
                    .map_err(|e| Error::io("cannot create directory", staged.staging(), e))?;
                (Vec::new(), now_rfc3339(), Some(staged))
            }
            Some(existing) => {
                let (mut kept, created) = self.drop_streams(&existing.replace)?;
                // Continued streams are the layout's now, listed after the kept ones.
                kept.retain(|s| !existing.continued.contains(&s.name));
                (kept, created, None)
            }
        };
        let build = staged.as_ref().map_or(self.dir(), Staged::staging).to_path_buf();
        let mut streams = Vec::with_capacity(layout.streams.len());
        for s in &layout.streams {
            let (dir, n) = (self.dir(), s.kept_frames);
            // A continued stream's files are cut to its kept frames (its later frames gone
            // before a new one is written); the others are new files.
            let open = |name: &str, unit: u64| {
                if n > 0 { Out::continue_at(dir, name, n * unit) } else { Out::create(&build, dir, name) }
            };
            let fields = layout
                .fields
                .iter()
                .map(|f| open(&data_file(&s.name, &f.name), f.bytes().unwrap_or_default() as u64))
                .collect::<Result<Vec<_>>>()?;
            let steps = open(&steps_file(&s.name), 8)?;
            streams.push(StreamFiles { fields, steps });
        }
        let open = Open { layout: layout.clone(), streams, created, kept };
        // No frame count while the run is open: a killed run's metadata claims none, and
        // the data files' lengths say what they hold.
        self.write_meta(&build, &open, None, &|_, _| false)?;
        if let Some(staged) = staged {
            staged.publish(self.options.fsync)?;
        }
        Ok(open)
    }
}

impl RawBackend {
    /// Appending: deletes the files of the streams named in `replace` and returns the
    /// streams left in place with the directory's creation time.
    ///
    /// `run.json` stops listing those streams before their files go, so a run killed in
    /// between leaves a directory that opens (the streams are simply missing, and the next
    /// `--resume` adds them).
    fn drop_streams(&self, replace: &[String]) -> Result<(Vec<RunStream>, String)> {
        let mut run = read_run(&self.dir().join(RUN_FILE))?;
        let (gone, kept): (Vec<RunStream>, Vec<RunStream>) =
            std::mem::take(&mut run.streams).into_iter().partition(|s| replace.contains(&s.name));
        if !gone.is_empty() {
            run.streams = kept.clone();
            run.complete = false;
            write_json(&self.dir().join(RUN_FILE), &run, self.options.fsync)?;
        }
        for s in &gone {
            let files = s.data_files.iter().cloned().chain([s.steps_file.clone()]);
            let metas = run.fields.iter().map(|f| meta_file(&s.name, &f.name));
            for f in files.chain(metas) {
                let path = self.dir().join(f);
                match fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(Error::io("cannot delete incomplete stream file", &path, e));
                    }
                    _ => {}
                }
            }
        }
        Ok((kept, run.created))
    }
}

impl Backend for RawBackend {
    /// That no two (stream, field) pairs share a file name.
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        let mut names = BTreeSet::new();
        for s in &layout.streams {
            for f in layout.fields.iter().map(|f| f.name.as_str()).chain(["steps"]) {
                if !names.insert(format!("{}.{f}", s.name)) {
                    return Err(Error::InvalidLayout(format!(
                        "stream {:?} and field {f:?} give a file name another stream and field \
                         also give: avoid '.' in stream or field names",
                        s.name
                    )));
                }
            }
        }
        Ok(())
    }

    /// Appending: a continued stream's files are cut to its kept frames in `begin`.
    fn continues_streams(&self) -> bool {
        self.options.append
    }

    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.options.check()?;
        // A half-made new directory never reaches the path: `Staged` removes it.
        self.open = Some(self.create(layout)?);
        Ok(())
    }

    fn write(&mut self, frame: &Frame, fields: Fields<'_>) -> Result<Option<u64>> {
        let open = self.open.as_mut().ok_or(Error::Usage("write called before begin"))?;
        let files = &mut open.streams[frame.stream];
        // Each field in one write, or, hashed as it goes, piece by piece.
        let write_all = |files: &mut StreamFiles, mut sum: Option<&mut crate::checksum::Running>| -> Result<()> {
            for (out, bytes) in files.fields.iter_mut().zip(fields.iter()) {
                match sum.as_deref_mut() {
                    None => out.write(bytes)?,
                    Some(sum) => bytes.chunks(CHECKSUM_PIECE).try_for_each(|piece| {
                        sum.update(piece);
                        out.write(piece)
                    })?,
                }
            }
            files.steps.write(&frame.step.to_le_bytes())
        };
        // A frame whose producer hashed it (the runner's device threads do) is written as
        // is: the writer's thread only copies.
        if frame.data_hash.is_some() {
            return write_all(files, None).map(|()| None);
        }
        // A large frame is hashed on a thread of its own while it is written, so that the
        // write waits for the slower of the two, not for both; if that thread cannot start,
        // and for small frames, each piece is hashed right before it is written, while it
        // is in the cache (see `checksum::Running`).
        if frame.data.len() >= PARALLEL_HASH_BYTES {
            let parallel = std::thread::scope(|scope| {
                let hashing = std::thread::Builder::new()
                    .name("wgpipe-raw-hash".to_owned())
                    .spawn_scoped(scope, || crate::checksum::frame_checksum(frame))
                    .ok()?;
                let written = write_all(files, None);
                Some(written.map(|()| hashing.join().unwrap_or_else(|_| crate::checksum::frame_checksum(frame))))
            });
            if let Some(written) = parallel {
                return written.map(Some);
            }
        }
        let mut sum = crate::checksum::Running::new(frame.data.len());
        write_all(files, Some(&mut sum))?;
        Ok(Some(sum.finish(frame)))
    }

    fn finish(&mut self, outcome: &Outcome<'_>) -> Result<()> {
        let mut open = self.open.take().ok_or(Error::Usage("finish called without begin"))?;
        let fsync = self.options.fsync;
        let failed = outcome.failed();
        let field_bytes: Vec<u64> = open.layout.fields.iter().map(|f| f.bytes().unwrap_or_default() as u64).collect();
        let frames = outcome.frames();
        let mut first_err = None;
        for (files, &n) in open.streams.iter_mut().zip(frames) {
            if failed {
                // A failed write may have left part of a frame: cut every file back to the
                // frames acknowledged, so `numpy.fromfile(..).reshape(-1, *shape)` works.
                for (out, &unit) in files.fields.iter_mut().zip(&field_bytes) {
                    if let Err(e) = out.truncate(n * unit) {
                        first_err.get_or_insert(e);
                    }
                }
                if let Err(e) = files.steps.truncate(n * 8) {
                    first_err.get_or_insert(e);
                }
            }
            if fsync {
                for out in files.fields.iter_mut().chain([&mut files.steps]) {
                    if let Err(e) = out.sync() {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        let stored = first_err.is_none();
        let meta = self.write_meta(self.dir(), &open, Some(frames), &|i, n| stored && outcome.stream_complete(i, n));
        drop(open);
        if fsync {
            meta.and_then(|()| sync_dir(self.dir()))?;
        } else {
            meta?;
        }
        first_err.map_or(Ok(()), Err)
    }
}
