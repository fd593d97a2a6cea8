//! The Zarr sink: a Zarr v3 directory store, one group per stream, one array per field.
//!
//! Crash safety comes from two orders. Within a value: every chunk, shard and `zarr.json`
//! is replaced atomically ([`AtomicDirStore`]). Between values: a frame's chunks are
//! written before any array's shape grows to include them, and the steps array grows last,
//! so a reader (or a kill) never sees a frame whose data is missing. After a kill, a
//! stream's frames are those of its shortest array, every one of them whole; the field
//! arrays may hold one frame more than `steps` for the instant between their updates, which
//! [`crate::open_output`] leaves out and `--resume` rewrites.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use zarrs::array::{Array, ArrayBytes};

use super::read::{self, read_root};
use super::schema::{
    ArrayPlan, METADATA_FILE, Root, STEPS_CHUNK, StreamState, field_array, field_entries, steps_array, store_err,
    store_zfpy_chunk, write_root, write_stream,
};
use super::store::{AtomicDirStore, sync_tree};
use crate::append::Existing;
use crate::dimensions::Dimensions;
use crate::error::{Error, Result};
use crate::frame::{Fields, Frame};
use crate::options::SinkOptions;
use crate::prepare::{OutputKind, Staged};
use crate::protocol::{Backend, Checked, Outcome};
use crate::read::OutputFormat;
use crate::schema::{StreamInfo, StreamLayout};
use crate::time::now_rfc3339;
use crate::zfp::Encoding;

/// One stream's arrays and what of them is still in memory.
#[derive(Debug)]
pub(super) struct StreamArrays {
    pub(super) info: StreamInfo,
    /// Its position among the store's streams (kept ones first).
    pub(super) index: usize,
    pub(super) fields: Vec<Array<AtomicDirStore>>,
    pub(super) steps: Array<AtomicDirStore>,
    /// The steps of the current chunk of the steps array (rewritten with every frame).
    pub(super) steps_chunk: Vec<u64>,
    /// Sharded: per field, the frames of the current shard (rewritten with every frame).
    shards: Vec<Vec<u8>>,
}

/// State between `begin` and `finish` (the MPI block sink's rank 0 opens a store as this
/// sink does, and keeps the root, its stream and `kept_complete`).
#[derive(Debug)]
pub(super) struct Open {
    store: Arc<AtomicDirStore>,
    pub(super) root: Root,
    pub(super) streams: Vec<StreamArrays>,
    /// Appending: whether every stream kept from the existing store is complete.
    pub(super) kept_complete: bool,
    plan: ArrayPlan,
    /// Bytes of one frame of each field.
    field_bytes: Vec<usize>,
    /// How each field's bytes arrive: values, which zarrs encodes with the array's codecs, or a
    /// ZFP stream, stored as the `zfpy` chunk it is ([`store_zfpy_chunk`]).
    encodings: Vec<Encoding>,
}

/// The Zarr backend: writes a Zarr v3 directory store readable by zarr-python 3, xarray
/// (`xr.open_zarr(path, group=STREAM)`), zarrs and every Zarr v3 reader.
///
/// Each field of each stream is an array shaped `[frames, *shape]` with `dimension_names`,
/// one frame per chunk (or per inner chunk of `shard_frames`-frame shards), compressed with
/// `zstd`, `gzip` or `blosc` ([`crate::Compression`]); `steps` holds each frame's
/// simulation step. The layout is described in the guide ("Output formats").
#[derive(Debug)]
pub struct ZarrBackend {
    options: SinkOptions,
    open: Option<Open>,
}

/// The Zarr sink: [`ZarrBackend`] driven through the sink protocol.
pub type ZarrSink = Checked<ZarrBackend>;

impl ZarrSink {
    /// A Zarr sink writing the store `options.path` (a directory, created by `begin`).
    pub fn new(options: SinkOptions) -> Self {
        Checked::from(ZarrBackend { options, open: None })
    }
}

/// The most bytes one shard of one field may hold: it is kept in memory per stream and
/// rewritten with every frame that goes into it.
const MAX_SHARD_BYTES: usize = 1 << 30;

/// The index of a frame's chunk along the frame axis, and the frame's slot in it.
fn chunk_of(index: u64, frames_per_chunk: u64) -> (u64, usize) {
    (index / frames_per_chunk, (index % frames_per_chunk) as usize)
}

/// Deletes the group of the incomplete stream `name` from the store `dir` (nothing when it is
/// gone already).
fn remove_stream(dir: &Path, name: &str) -> Result<()> {
    let group = dir.join(name);
    match fs::remove_dir_all(&group) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io("cannot delete incomplete stream", group, e))
        }
        _ => Ok(()),
    }
}

impl ZarrBackend {
    fn dir(&self) -> &Path {
        &self.options.path
    }

    /// The arrays of stream `s`, numbered `index`, holding `frames` frames (not stored).
    pub(super) fn stream_arrays(
        store: &Arc<AtomicDirStore>,
        layout: &StreamLayout,
        s: &StreamInfo,
        index: usize,
        plan: &ArrayPlan,
    ) -> Result<StreamArrays> {
        let dims = Dimensions::of(layout);
        let fields = layout
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let names = dims.names_of(i).into_iter().map(str::to_owned).collect();
                field_array(store, &s.name, f, names, plan, 0)
            })
            .collect::<Result<Vec<_>>>()?;
        let shards = if plan.shard_frames > 1 {
            layout
                .fields
                .iter()
                .map(|f| vec![0u8; f.bytes().unwrap_or_default() * plan.shard_frames as usize])
                .collect()
        } else {
            Vec::new()
        };
        Ok(StreamArrays {
            info: s.clone(),
            index,
            fields,
            steps: steps_array(store, &s.name, &dims.time, 0)?,
            steps_chunk: vec![0; STEPS_CHUNK as usize],
            shards,
        })
    }

    /// Creates every stream's group and arrays (empty) in `store`.
    pub(super) fn create_streams(store: &Arc<AtomicDirStore>, streams: &[StreamArrays]) -> Result<()> {
        for s in streams {
            write_stream(store, &s.info, StreamState { index: s.index, frames: None, complete: false })?;
            for a in s.fields.iter().chain([&s.steps]) {
                a.store_metadata().map_err(|e| store_err(store, "cannot create", a.path().as_str(), e))?;
            }
        }
        Ok(())
    }

    /// Creates a new store (built under a staging name, published once whole) or adds the
    /// layout's streams to an existing one (`append`), its arrays laid out by `plan`.
    pub(super) fn open_store(options: &SinkOptions, layout: &StreamLayout, plan: ArrayPlan) -> Result<Open> {
        let dir = options.path.as_path();
        let existing =
            if options.append { crate::append::check(dir, layout, OutputFormat::Zarr, read::open)? } else { None };
        // Before anything is written: a continued stream's arrays must be chunked and encoded
        // as this run writes them.
        if existing.is_some() {
            Self::check_continued_chunks(dir, layout, &plan)?;
        }
        let (root, kept_complete) = match &existing {
            None => (Self::create_store(options, layout, &plan)?, true),
            Some(existing) => (Self::add_streams(dir, layout, existing, &plan)?, existing.others_complete),
        };
        // The arrays write through a store at the published path.
        let store = Arc::new(AtomicDirStore::new(dir));
        let streams = layout
            .streams
            .iter()
            .map(|s| Self::open_stream(dir, &store, layout, &root, s, &plan))
            .collect::<Result<Vec<_>>>()?;
        let field_bytes = layout.fields.iter().map(|f| f.bytes().unwrap_or_default()).collect();
        let encodings = layout.fields.iter().map(|f| f.encoding).collect();
        Ok(Open { store, root, streams, kept_complete, plan, field_bytes, encodings })
    }

    /// Errors unless the arrays of every stream `layout` continues in the store `dir` are
    /// chunked and encoded as `plan` writes them.
    fn check_continued_chunks(dir: &Path, layout: &StreamLayout, plan: &ArrayPlan) -> Result<()> {
        let store = Arc::new(AtomicDirStore::new(dir));
        for s in layout.streams.iter().filter(|s| s.kept_frames > 0) {
            let arrays = Self::stream_arrays(&store, layout, s, 0, plan)?;
            for array in arrays.fields.iter().chain([&arrays.steps]) {
                check_same_chunks(dir, array)?;
            }
        }
        Ok(())
    }

    /// Builds the new store of `layout` under its staging name (its root, every stream's
    /// group and arrays, empty) and publishes it; returns its root.
    fn create_store(options: &SinkOptions, layout: &StreamLayout, plan: &ArrayPlan) -> Result<Root> {
        let root = Root {
            created: now_rfc3339(),
            fields: field_entries(&layout.fields),
            streams: layout.streams.iter().map(|s| s.name.clone()).collect(),
            attributes: layout.attributes.clone(),
            complete: false,
        };
        let staged = Staged::prepare(&options.path, options.overwrite, OutputKind::ZarrStore)?;
        fs::create_dir(staged.staging()).map_err(|e| Error::io("cannot create directory", staged.staging(), e))?;
        let store = Arc::new(AtomicDirStore::new(staged.staging()));
        write_root(&store, &root)?;
        let streams = layout
            .streams
            .iter()
            .enumerate()
            .map(|(i, s)| Self::stream_arrays(&store, layout, s, i, plan))
            .collect::<Result<Vec<_>>>()?;
        Self::create_streams(&store, &streams)?;
        staged.publish(options.fsync)?;
        Ok(root)
    }

    /// Adds `layout`'s streams to the existing store `dir` (`existing`: what it holds): the
    /// streams to rewrite deleted, the new ones created after the rest; returns its root.
    fn add_streams(dir: &Path, layout: &StreamLayout, existing: &Existing, plan: &ArrayPlan) -> Result<Root> {
        let store = Arc::new(AtomicDirStore::new(dir));
        let mut root = read_root(dir)?;
        // The root stops listing the streams to rewrite before their groups go, so a kill in
        // between leaves a store that opens (they are simply missing).
        root.streams.retain(|s| !existing.replace.contains(s));
        root.complete = false;
        write_root(&store, &root)?;
        for name in &existing.replace {
            remove_stream(dir, name)?;
        }
        // Continued streams stay where they are; new ones are listed after the rest.
        let first = root.streams.len();
        let new: Vec<&StreamInfo> = layout.streams.iter().filter(|s| !existing.continued.contains(&s.name)).collect();
        root.streams.extend(new.iter().map(|s| s.name.clone()));
        let streams = new
            .iter()
            .enumerate()
            .map(|(i, s)| Self::stream_arrays(&store, layout, s, first + i, plan))
            .collect::<Result<Vec<_>>>()?;
        Self::create_streams(&store, &streams)?;
        write_root(&store, &root)?;
        Ok(root)
    }

    /// The arrays of stream `s` in the published store `dir` (numbered as `root` lists it),
    /// a continued stream's cut to its kept frames (see [`Self::continue_stream`]).
    fn open_stream(
        dir: &Path,
        store: &Arc<AtomicDirStore>,
        layout: &StreamLayout,
        root: &Root,
        s: &StreamInfo,
        plan: &ArrayPlan,
    ) -> Result<StreamArrays> {
        let index = root.streams.iter().position(|n| *n == s.name).ok_or_else(|| Error::BadOutput {
            path: dir.to_path_buf(),
            reason: format!("its root does not list stream {:?}", s.name),
        })?;
        let mut arrays = Self::stream_arrays(store, layout, s, index, plan)?;
        if s.kept_frames > 0 {
            Self::continue_stream(dir, store, &mut arrays, plan.shard_frames)?;
        }
        Ok(arrays)
    }

    /// Cuts a continued stream's arrays to its kept frames (its later frames gone before a
    /// new one is written) and reads back what the next frames share with the kept ones and
    /// rewrite whole: the current chunk of `steps` and, with shards, each field's shard.
    fn continue_stream(dir: &Path, store: &AtomicDirStore, s: &mut StreamArrays, shard_frames: u64) -> Result<()> {
        let kept = s.info.kept_frames;
        for array in s.fields.iter_mut().chain([&mut s.steps]) {
            set_frames(store, array, kept)?;
        }
        let node = |a: &Array<AtomicDirStore>| a.path().as_str().trim_start_matches('/').to_owned();
        let mismatch = |node: String, got: usize, want: usize| Error::BadOutput {
            path: dir.join(&node),
            reason: format!("a chunk of {node} holds {got} bytes instead of {want}"),
        };
        let (chunk, slot) = chunk_of(kept, STEPS_CHUNK);
        if slot > 0 {
            let bytes = read::chunk_bytes(dir, &node(&s.steps), &[chunk])?;
            if bytes.len() != s.steps_chunk.len() * 8 {
                return Err(mismatch(node(&s.steps), bytes.len(), s.steps_chunk.len() * 8));
            }
            for (step, b) in s.steps_chunk.iter_mut().zip(bytes.chunks_exact(8)) {
                *step = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            }
        }
        let (chunk, slot) = chunk_of(kept, shard_frames);
        if shard_frames > 1 && slot > 0 {
            for (array, buffer) in s.fields.iter().zip(&mut s.shards) {
                let mut indices = vec![0u64; array.dimensionality()];
                indices[0] = chunk;
                let bytes = read::chunk_bytes(dir, &node(array), &indices)?;
                if bytes.len() != buffer.len() {
                    return Err(mismatch(node(array), bytes.len(), buffer.len()));
                }
                buffer.copy_from_slice(&bytes);
            }
        }
        Ok(())
    }
}

/// Errors unless the stored array `array` describes (its `zarr.json` under `dir`) has the
/// chunk grid and codecs `array` has: frames are continued chunk by chunk, and a store
/// written with other chunks (another MPI decomposition, `shard_frames`) or other codecs
/// (`compression`) would be corrupted, not continued.
fn check_same_chunks(dir: &Path, array: &Array<AtomicDirStore>) -> Result<()> {
    let node = array.path().as_str().trim_start_matches('/');
    let file = dir.join(node).join(METADATA_FILE);
    let text = fs::read_to_string(&file).map_err(|e| Error::io("cannot read", &file, e))?;
    let bad = |reason: String| Error::BadOutput { path: file.clone(), reason };
    let stored: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let planned = serde_json::to_value(array.metadata()).map_err(|e| bad(e.to_string()))?;
    for key in ["chunk_grid", "codecs"] {
        let (have, want) = (stored.get(key), planned.get(key));
        if have != want {
            let shown = |v: Option<&serde_json::Value>| v.map_or_else(|| "none".to_owned(), ToString::to_string);
            return Err(Error::AppendMismatch {
                path: dir.to_path_buf(),
                reason: format!(
                    "its array {node} has {key} {}, and this run writes {}: continue it with the settings that \
                     wrote it (under mpirun, the same decomposition: its chunks are the ranks' blocks; the same \
                     output.shard_frames and output.compression)",
                    shown(have),
                    shown(want)
                ),
            });
        }
    }
    Ok(())
}

/// Errors unless every field that arrives as a ZFP stream is one this sink stores as a chunk
/// of numcodecs' `zfpy` codec: the build has the codec (`zarr-zfp`: readers need the array's
/// codec to be the one its chunks are in), a frame is a chunk (a shard's inner chunks are
/// indexed by the sharding codec, which encodes values), and zfp's header describes it.
pub(super) fn check_encoded_fields(layout: &StreamLayout, shard_frames: usize) -> Result<()> {
    for f in &layout.fields {
        let Encoding::Zfp(rate) = f.encoding else { continue };
        let refuse = |why: String| {
            Err(Error::InvalidLayout(format!(
                "field {:?} arrives as {}, which the zarr sink cannot store {why}: let the values arrive (wgpipe: \
                 output.compress_on = \"host\")",
                f.name,
                f.encoding.describe()
            )))
        };
        if !cfg!(feature = "zarr-zfp") {
            return refuse("in this build (it leaves out the `zarr-zfp` cargo feature)".into());
        }
        if shard_frames != 1 {
            return refuse(format!("in shards (shard_frames = {shard_frames}): set shard_frames = 1, or"));
        }
        if !rate.zfpy_describes(&f.shape) {
            return refuse(format!("as zfpy chunks: zfp's header cannot describe a field of shape {:?}", f.shape));
        }
    }
    Ok(())
}

/// Sets the frame count of `array` to `frames` and replaces its metadata.
pub(super) fn set_frames(store: &AtomicDirStore, array: &mut Array<AtomicDirStore>, frames: u64) -> Result<()> {
    let mut shape = array.shape().to_vec();
    shape[0] = frames;
    let path = array.path().as_str().to_owned();
    array.set_shape(shape).map_err(|e| store_err(store, "cannot resize", &path, e))?;
    array.store_metadata().map_err(|e| store_err(store, "cannot write the metadata of", &path, e))
}

impl Backend for ZarrBackend {
    /// Names that cannot be Zarr nodes here: `__`-prefixed (reserved by Zarr v3), `.`-prefixed
    /// (the store's temporary files), `zarr.json`; and options the sink has no use for.
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        let names =
            layout.streams.iter().map(|s| ("stream", &s.name)).chain(layout.fields.iter().map(|f| ("field", &f.name)));
        for (kind, name) in names {
            if name.starts_with("__") || name.starts_with('.') || name == METADATA_FILE {
                return Err(Error::InvalidLayout(format!(
                    "{kind} name {name:?} cannot name a Zarr group or array (no leading \"__\" or \".\", not \
                     {METADATA_FILE:?}): rename the {kind}"
                )));
            }
        }
        // A shard is rewritten whole with every frame, from a buffer of its frames per stream
        // and field: refuse one that could not be held (a typo in shard_frames must not
        // abort the process on a failed allocation).
        for f in &layout.fields {
            let bytes =
                f.bytes().and_then(|b| b.checked_mul(self.options.shard_frames)).filter(|&b| b <= MAX_SHARD_BYTES);
            if bytes.is_none() {
                return Err(Error::InvalidOptions(format!(
                    "shard_frames = {}: a shard of field {:?} ({} per frame) would exceed {} MiB, which the zarr \
                     sink holds in memory and rewrites with every frame: use fewer frames per shard",
                    self.options.shard_frames,
                    f.name,
                    f.describe(),
                    MAX_SHARD_BYTES >> 20
                )));
            }
        }
        if self.options.chunk_frames != 1 {
            return Err(Error::InvalidOptions(format!(
                "chunk_frames = {}: the zarr sink stores one frame per chunk; group frames into shard files with \
                 shard_frames instead",
                self.options.chunk_frames
            )));
        }
        check_encoded_fields(layout, self.options.shard_frames)
    }

    /// Appending: a continued stream's arrays are cut to its kept frames in `begin`.
    fn continues_streams(&self) -> bool {
        self.options.append
    }

    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.options.check()?;
        self.check_layout(layout)?;
        let plan = ArrayPlan {
            compression: self.options.compression,
            shard_frames: self.options.shard_frames as u64,
            frame_chunks: Default::default(),
        };
        self.open = Some(Self::open_store(&self.options, layout, plan)?);
        Ok(())
    }

    fn write(&mut self, frame: &Frame, fields: Fields<'_>) -> Result<Option<u64>> {
        self.write_frame(frame, fields).map_err(|e| match e {
            // The store knows the file that failed, the frame what it needed.
            Error::DiskFull { path, needed: 0, source } => {
                Error::DiskFull { path, needed: frame.data.len() as u64, source }
            }
            e => e,
        })
    }

    fn finish(&mut self, outcome: &Outcome<'_>) -> Result<()> {
        self.finish_store(outcome)
    }
}

impl ZarrBackend {
    /// [`Backend::write`]: the frame's chunks, then the shapes that make it visible.
    fn write_frame(&mut self, frame: &Frame, fields: Fields<'_>) -> Result<Option<u64>> {
        let open = self.open.as_mut().ok_or(Error::Usage("write called before begin"))?;
        let store = &open.store;
        let s = &mut open.streams[frame.stream];
        let shard = open.plan.shard_frames;
        let (chunk, slot) = chunk_of(frame.index, shard);
        // 1. The frame's chunks (or the shards holding it), each replaced atomically.
        for (fi, bytes) in fields.iter().enumerate() {
            let array = &s.fields[fi];
            let mut indices = vec![0u64; array.dimensionality()];
            indices[0] = chunk;
            if let Encoding::Zfp(rate) = open.encodings[fi] {
                // Its bytes are the chunk's coded form already: stored as they are.
                let shape: Vec<usize> = array.shape()[1..].iter().map(|&d| d as usize).collect();
                store_zfpy_chunk(store, array, &indices, (rate, &shape), bytes)?;
                continue;
            }
            let data = if shard > 1 {
                let n = open.field_bytes[fi];
                let buffer = &mut s.shards[fi];
                if slot == 0 {
                    buffer.fill(0);
                }
                buffer[slot * n..(slot + 1) * n].copy_from_slice(bytes);
                ArrayBytes::new_flen(buffer.as_slice())
            } else {
                ArrayBytes::new_flen(bytes)
            };
            let path = array.path().as_str();
            array.store_chunk(&indices, data).map_err(|e| store_err(store, "cannot write frame to", path, e))?;
        }
        let (steps_chunk, steps_slot) = chunk_of(frame.index, STEPS_CHUNK);
        if steps_slot == 0 {
            s.steps_chunk.fill(0);
        }
        s.steps_chunk[steps_slot] = frame.step;
        let steps_path = s.steps.path().as_str().to_owned();
        s.steps
            .store_chunk(&[steps_chunk], s.steps_chunk.as_slice())
            .map_err(|e| store_err(store, "cannot write the step to", &steps_path, e))?;
        // 2. Only then the shapes grow to hold the frame: the fields, then steps.
        let frames = frame.index + 1;
        for array in s.fields.iter_mut().chain([&mut s.steps]) {
            set_frames(store, array, frames)?;
        }
        Ok(None)
    }

    /// [`Backend::finish`]: shapes rolled back to the frames acknowledged after a failure,
    /// then each stream's and the root's `complete`.
    fn finish_store(&mut self, outcome: &Outcome<'_>) -> Result<()> {
        let mut open = self.open.take().ok_or(Error::Usage("finish called without begin"))?;
        let store = open.store.clone();
        let mut first_err = None;
        for (s, &n) in open.streams.iter_mut().zip(outcome.frames()) {
            if outcome.failed() {
                // A failed write may have grown some arrays past the frames acknowledged.
                for array in s.fields.iter_mut().chain([&mut s.steps]) {
                    if array.shape()[0] != n
                        && let Err(e) = set_frames(&store, array, n)
                    {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        let stored = first_err.is_none();
        for (i, (s, &n)) in open.streams.iter().zip(outcome.frames()).enumerate() {
            let state =
                StreamState { index: s.index, frames: Some(n), complete: stored && outcome.stream_complete(i, n) };
            if let Err(e) = write_stream(&store, &s.info, state) {
                first_err.get_or_insert(e);
            }
        }
        open.root.complete = first_err.is_none() && outcome.complete() && open.kept_complete;
        let root = write_root(&store, &open.root);
        if self.options.fsync {
            root.and_then(|()| sync_tree(self.dir()))?;
        } else {
            root?;
        }
        first_err.map_or(Ok(()), Err)
    }
}
