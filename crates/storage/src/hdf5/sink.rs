//! The HDF5 sink: one self-describing file that stays readable if the run is killed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use hdf5::{Dataset, Extent, File, Group, H5Type, Location};
use ndarray::ArrayView1;

use super::cloexec::{close_on_exec, retry_while_locked};
use super::direct::{ChunkPlan, DirectWriter, write_chunk};
use super::format::{
    AXIS_ORDER_ATTR, DIMS_ATTR, FIELDS_ATTR, FORMAT, FRAME_DIM, chunk_shape, h5err, set_attr, set_bool, set_strings,
    with_elem_type, with_frames, write_frame_slab,
};
use super::reserve::Reserve;
use crate::error::{Error, Result};
use crate::frame::Frame;
use crate::options::{Compression, SinkOptions};
use crate::prepare::{OutputKind, Staged};
use crate::read::OutputFormat;
use crate::schema::{AXIS_ORDER, AttrValue, FieldSpec, StreamLayout};
use crate::sink::{Sink, SinkSummary};
use crate::time::now_rfc3339;
use crate::validate::{STEPS_NAME, Validator};

/// Steps per chunk of the `steps` dataset (8 KiB chunks: small, rarely rewritten).
pub(super) const STEPS_CHUNK: usize = 1024;
/// Metadata one frame may add per dataset, at most: a split of the chunk index (a v1 B-tree
/// of 8 KiB nodes or less, up to three of them when the root splits) and a new metadata
/// aggregator block. A generous bound, used only to reserve disk space ahead.
const METADATA_PER_DATASET: u64 = 64 << 10;
/// Room `finish` needs after the last frame, per stream: the `frames` and `complete`
/// attributes (each may need a new object header chunk).
const FINISH_PER_STREAM: u64 = 16 << 10;
/// Room `finish` needs in any case: the root's `complete`, flush and close.
const FINISH_BASE: u64 = 64 << 10;

/// Bytes one frame can add to the file, at most: for every field, all the chunks that cover
/// it (HDF5 allocates a chunk of `chunk_frames` frames when its first frame arrives, and
/// rewrites a compressed chunk whole, incompressible data growing by at most the compressor's
/// small overhead) with an index entry each, a chunk of the `steps` dataset, and index
/// metadata. The disk-full error can therefore come up to one chunk early.
fn frame_bytes_bound(layout: &StreamLayout, options: &SinkOptions) -> u64 {
    let cf = options.chunk_frames.max(1) as u64;
    let data = layout.fields.iter().fold(0u64, |sum, f| {
        let mut bytes = cf.saturating_mul(f.bytes().unwrap_or(usize::MAX) as u64);
        if options.compression != Compression::None {
            bytes = bytes.saturating_add(bytes / 64).saturating_add(4096);
        }
        sum.saturating_add(bytes)
    });
    data.saturating_add(frame_overhead_bound(layout, data))
}

/// What one frame adds besides its chunks' bytes (`data`), at most: one B-tree record per
/// chunk (a generous bound of one per 64 KiB), a chunk of the `steps` dataset and index
/// metadata. With direct chunk writes the chunks' sizes are known before anything is
/// written, and this plus their sum is the frame's bound.
fn frame_overhead_bound(layout: &StreamLayout, data: u64) -> u64 {
    let fields = layout.fields.len() as u64;
    (data / (64 << 10))
        .saturating_add(layout.fields.len() as u64)
        .saturating_mul(64)
        .saturating_add((STEPS_CHUNK * 8) as u64)
        .saturating_add((fields + 1).saturating_mul(METADATA_PER_DATASET))
}

/// Bytes `begin` can add to the file after creating or opening it, at most: per stream a
/// group and per field a dataset (object headers, 4 KiB is ample) and room for twice the
/// attributes' bytes, plus a base for the root's attributes and the heaps.
fn begin_bytes_bound(layout: &StreamLayout) -> u64 {
    let attr_bytes = |a: &crate::schema::Attributes| -> u64 {
        a.iter()
            .map(|(k, v)| {
                let value = match v {
                    AttrValue::Text(t) => t.len() as u64,
                    AttrValue::Int(_) | AttrValue::UInt(_) | AttrValue::Float(_) | AttrValue::Float32(_) => 8,
                };
                k.len() as u64 + value + 64
            })
            .sum()
    };
    let netcdf = super::netcdf::stream_bytes_bound(layout);
    let per_stream = |s: &crate::schema::StreamInfo| {
        FINISH_PER_STREAM + 4096 * (layout.fields.len() as u64 + 1) + 2 * attr_bytes(&s.attributes) + netcdf
    };
    FINISH_BASE + 2 * attr_bytes(&layout.attributes) + layout.streams.iter().map(per_stream).sum::<u64>()
}

/// Bytes `finish` can add to the file (see [`FINISH_PER_STREAM`]).
fn finish_bytes_bound(layout: &StreamLayout) -> u64 {
    FINISH_BASE.saturating_add((layout.streams.len() as u64).saturating_mul(FINISH_PER_STREAM))
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
    /// Disk space reserved ahead of HDF5 (`None` when `reserve_space` is off).
    reserve: Option<Reserve>,
    /// Bytes one frame can add to the file, at most.
    frame_bound: u64,
    validator: Validator,
    streams: Vec<StreamSets>,
    /// Aligned copies of fields that are not aligned in their frame (or on a big-endian host).
    scratch: Vec<u64>,
    /// Compressed datasets written with direct chunk writes (deflate on a little-endian
    /// host), or `None` when HDF5 runs the filters itself.
    direct: Option<DirectWriter>,
    /// A write failed: later writes are refused, `finish` keeps what was stored before.
    failed: bool,
    /// Appending: every stream already in the file and not rewritten is complete.
    others_complete: bool,
}

/// Writes every stream into one HDF5 file: a group per stream, per field a chunked dataset of
/// shape `[frames, *shape]` and the field's element type with an unlimited first dimension,
/// and a `steps` dataset.
///
/// A chunk holds [`SinkOptions::chunk_frames`] frames; a frame larger than 4 MiB is cut into
/// several chunks along its leading axes (see the crate README). Each frame grows the
/// datasets by one, writes its slab and flushes the file, so a run killed at any point leaves
/// a file that opens and holds every frame completed before the kill. Layout and attributes
/// are listed in the crate README.
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

    /// The chunk shape of every field's dataset, or the error naming the field whose
    /// `chunk_frames` frames pass HDF5's chunk limit (a frame alone never does: it is split).
    fn chunk_shapes(&self, layout: &StreamLayout) -> Result<Vec<Vec<usize>>> {
        let cf = self.options.chunk_frames.max(1);
        layout
            .fields
            .iter()
            .map(|f| {
                chunk_shape(&f.shape, f.dtype.size(), cf).map_err(|message| Error::ChunkTooLarge {
                    field: format!("{} ({})", f.name, f.describe()),
                    chunk_frames: cf,
                    message,
                })
            })
            .collect()
    }

    /// Opens the space reservation (unless `reserve_space` is off) and reserves what `begin`
    /// still writes into `file`, found at `at` (the path, or its staging name while new).
    fn reserve(&self, file: &File, at: &Path, layout: &StreamLayout) -> Result<Option<Reserve>> {
        if !self.options.reserve_space {
            return Ok(None);
        }
        let mut reserve = Reserve::open(at, self.path(), finish_bytes_bound(layout))?;
        reserve.before_write(file.size(), begin_bytes_bound(layout))?;
        Ok(Some(reserve))
    }

    /// Creates the file (or, appending, opens it and drops the streams to rewrite), its
    /// groups, datasets and run attributes.
    fn create(&mut self, layout: &StreamLayout) -> Result<Open> {
        let path = self.path().to_path_buf();
        self.check_layout(layout)?;
        let validator = Validator::new(layout)?;
        let chunks = self.chunk_shapes(layout)?;
        if let Compression::Deflate(_) = self.options.compression
            && !hdf5::filters::deflate_available()
        {
            return Err(Error::InvalidOptions(
                "deflate is not available in this HDF5 library: use compression none".into(),
            ));
        }
        blosc_ready(self.options.compression, self.options.compression_threads)?;
        let err = |what: &str| {
            let path = path.clone();
            let what = what.to_owned();
            move |e: hdf5::Error| h5err(what.clone(), &path, e)
        };
        let existing = if self.options.append {
            crate::append::check(&path, layout, OutputFormat::Hdf5, super::read::open)?
        } else {
            None
        };
        // Deflate with one frame per chunk is compressed by the sink and written with direct
        // chunk writes (see `direct`); frames arrive as little-endian bytes, which HDF5's
        // native types are only on a little-endian host.
        let direct_candidate = matches!(self.options.compression, Compression::Deflate(_))
            && self.options.chunk_frames == 1
            && cfg!(target_endian = "little");
        if self.options.xdmf && existing.is_none() {
            super::xdmf::check_free(&path, self.options.overwrite)?;
        }
        let reserve;
        let mut staged = None;
        let (file, first_index, others_complete) = match &existing {
            None => {
                let staging = staged.insert(Staged::prepare(&path, self.options.overwrite, OutputKind::File)?);
                let at = staging.staging();
                // No free-space management: HDF5 never reuses or gives back file space, so its
                // end of file only grows. With the default manager, deleting the incomplete
                // streams of a resumed file frees the space at its end, and the next flush
                // truncates the file before it rewrites the superblock: a kill between the two
                // left a file HDF5 refuses to open ("truncated file"), complete streams and
                // all (kill_stress, `append`: 53 of 200 kills). It also keeps direct chunk
                // writes safe: space freed since the last flush is never reused (see `direct`).
                // The cost: the space of deleted streams and of replaced index blocks stays in
                // the file. (`swmr::create_file` sets it.)
                let file = super::swmr::create_file(at, self.options.swmr).map_err(err("cannot create HDF5 file"))?;
                close_on_exec(at)?;
                reserve = self.reserve(&file, at, layout)?;
                let root: &Location = &file;
                for (k, v) in [
                    ("format", AttrValue::from(FORMAT)),
                    ("created", now_rfc3339().into()),
                    ("wgpipe_storage_version", env!("CARGO_PKG_VERSION").into()),
                    (AXIS_ORDER_ATTR, AXIS_ORDER.into()),
                ] {
                    set_attr(root, k, &v).map_err(err(&format!("cannot write attribute {k:?} to")))?;
                }
                let names: Vec<String> = layout.fields.iter().map(|f| f.name.clone()).collect();
                set_strings(root, FIELDS_ATTR, &names).map_err(err("cannot write attribute \"fields\" to"))?;
                (file, 0, true)
            }
            Some(existing) => {
                let file =
                    retry_while_locked(|| File::open_rw(&path)).map_err(err("cannot open HDF5 file for appending"))?;
                close_on_exec(&path)?;
                // Before anything changes: a full disk must not damage the streams already there.
                reserve = self.reserve(&file, &path, layout)?;
                for name in &existing.replace {
                    file.unlink(name).map_err(err(&format!("cannot delete incomplete stream {name:?} of")))?;
                }
                let groups = file.groups().map_err(err("cannot list groups of"))?;
                let next = groups.iter().filter_map(|g| super::read::u64_attr(g, "stream_index")).max();
                (file, next.map_or(0, |n| n + 1), existing.others_complete)
            }
        };
        let root: &Location = &file;
        for (k, v) in &layout.attributes {
            set_attr(root, k, v).map_err(err(&format!("cannot write attribute {k:?} to")))?;
        }
        set_bool(root, "complete", false).map_err(err("cannot write attribute to"))?;

        let dims = super::netcdf::Dimensions::of(layout);
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
            for (f, chunk) in layout.fields.iter().zip(&chunks) {
                let extents: Vec<Extent> =
                    std::iter::once(Extent::from(0..)).chain(f.shape.iter().map(|&d| Extent::from(d))).collect();
                let mut b = with_elem_type!(f.dtype, T => group.new_dataset::<T>())
                    .chunk(chunk.clone())
                    .shape(extents)
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
                if self.options.compression != Compression::None && !direct_candidate {
                    // A filtered chunk should stay in the cache until all its frames are in:
                    // room for two rows of the chunks one frame touches. Odd and over ten
                    // times the chunks held, so consecutive chunks never share a slot.
                    let (per_frame, chunk_bytes) = chunk_row(f, chunk);
                    b = b.chunk_cache((20 * per_frame) | 1, 2 * per_frame * chunk_bytes, 1.0);
                }
                let name = &f.name;
                let ds =
                    b.create(name.as_str()).map_err(err(&format!("cannot create dataset {}/{name} in", s.name)))?;
                let dims: Vec<String> = std::iter::once(FRAME_DIM.to_owned()).chain(f.dims.iter().cloned()).collect();
                set_strings(&ds, DIMS_ATTR, &dims)
                    .map_err(err(&format!("cannot write attribute \"dims\" of {}/{name} to", s.name)))?;
                fields.push(ds);
            }
            let steps = group
                .new_dataset::<u64>()
                .chunk(STEPS_CHUNK)
                .shape(0..)
                .create(STEPS_NAME)
                .map_err(err(&format!("cannot create dataset {}/steps in", s.name)))?;
            super::netcdf::describe_stream(&group, layout, &dims, &fields, &steps)
                .map_err(err(&format!("cannot write the netCDF-4 dimensions of stream {:?} to", s.name)))?;
            streams.push(StreamSets { group, fields, steps });
        }
        file.flush().map_err(err("cannot flush"))?;
        if self.options.swmr {
            super::swmr::start(&file, streams.iter().map(|s| &s.group))
                .map_err(err("cannot start single-writer/multiple-reader mode on"))?;
        }
        if let Some(staged) = staged {
            staged.publish(self.options.fsync)?;
        }
        let frame_bound = frame_bytes_bound(layout, &self.options);
        let direct = match streams.first() {
            Some(first) if direct_candidate => {
                let plans: Option<Vec<ChunkPlan>> = first
                    .fields
                    .iter()
                    .zip(&layout.fields)
                    .zip(&chunks)
                    .map(|((ds, spec), chunk)| ChunkPlan::new(spec, chunk, &ds.filters()))
                    .collect();
                plans.map(|p| DirectWriter::new(&p, streams.len(), self.options.compression_threads))
            }
            _ => None,
        };
        Ok(Open {
            file,
            reserve,
            frame_bound,
            validator,
            streams,
            scratch: Vec::new(),
            direct,
            failed: false,
            others_complete,
        })
    }
}

/// Errors unless this build can write `compression`'s blosc filter (a no-op for others), and
/// gives blosc `threads` threads.
///
/// hdf5-metno registers the blosc filter with the HDF5 library when the library is first
/// used (and so before any dataset exists); this checks that the registration took.
///
/// Blosc compresses the blocks of one chunk on c-blosc's own thread pool, inside the filter
/// HDF5 calls on the writer thread, so blosc gets parallel compression without direct chunk
/// writes. The pool is c-blosc's one process-wide setting: the last sink begun sets it.
fn blosc_ready(compression: Compression, threads: usize) -> Result<()> {
    compression.check_available()?;
    #[cfg(feature = "blosc")]
    if compression.is_blosc() {
        if !hdf5::filters::blosc_available() {
            return Err(Error::InvalidOptions(format!(
                "compression {compression}: the blosc filter could not be registered with the HDF5 \
                 library: use none or deflate"
            )));
        }
        hdf5::filters::blosc_set_nthreads(u8::try_from(threads).unwrap_or(u8::MAX));
    }
    #[cfg(not(feature = "blosc"))]
    let _ = threads;
    Ok(())
}

/// Chunks one frame of a field touches, and the bytes of one chunk.
fn chunk_row(spec: &FieldSpec, chunk: &[usize]) -> (usize, usize) {
    let per_frame = spec.shape.iter().zip(&chunk[1..]).map(|(&d, &c)| d.div_ceil(c)).product();
    (per_frame, chunk.iter().product::<usize>() * spec.dtype.size())
}

/// Grows `ds` to `n + 1` frames and writes one frame's elements (`bytes`) as frame `n`.
fn write_field<T: H5Type + bytemuck::Pod>(
    ds: &Dataset,
    spec: &FieldSpec,
    bytes: &[u8],
    n: usize,
    scratch: &mut Vec<u64>,
) -> hdf5::Result<()> {
    let (grown, rank) = with_frames(n + 1, &spec.shape);
    ds.resize(&grown[..rank])?;
    write_frame_slab::<T>(ds, spec, bytes, n, scratch)
}

/// Appends one frame to its stream's datasets through direct chunk writes: compresses its
/// chunks (in parallel), reserves their exact size, grows the datasets, writes the chunks,
/// then the step, and flushes the file (index and extent after the chunks they reference).
fn append_direct(open: &mut Open, frame: &Frame, path: &Path) -> Result<()> {
    let Open { file, reserve, validator, streams, direct, .. } = open;
    let Some(direct) = direct.as_mut() else { return Err(Error::Usage("direct chunk write without a plan")) };
    let l = validator.layout();
    let n = validator.frames()[frame.stream] as usize;
    let sets = &streams[frame.stream];
    let name = &l.streams[frame.stream].name;
    let fields: Vec<&[u8]> = (0..l.fields.len()).map(|i| validator.field(frame, i)).collect();
    let writes = direct
        .prepare(frame.stream, n as u64, &fields)
        .map_err(|e| h5err(format!("cannot compress frame {n} of {name} for"), path, e))?;
    if let Some(reserve) = reserve.as_mut() {
        let data = writes.iter().map(|w| w.bytes.len() as u64).sum::<u64>();
        reserve.before_write(file.size(), data.saturating_add(frame_overhead_bound(l, data)))?;
    }
    for (ds, spec) in sets.fields.iter().zip(&l.fields) {
        let (grown, rank) = with_frames(n + 1, &spec.shape);
        ds.resize(&grown[..rank])
            .map_err(|e| h5err(format!("cannot grow {name}/{} to {} frames in", spec.name, n + 1), path, e))?;
    }
    for w in &writes {
        let spec = &l.fields[w.field];
        write_chunk(&sets.fields[w.field], &w.offset, w.bytes)
            .map_err(|e| h5err(format!("cannot write frame {n} of {name}/{} to", spec.name), path, e))?;
    }
    let ctx = || format!("cannot write step of frame {n} of {name} to");
    sets.steps.resize(n + 1).map_err(|e| h5err(ctx(), path, e))?;
    sets.steps.write_slice(ArrayView1::from(&[frame.step][..]), n..n + 1).map_err(|e| h5err(ctx(), path, e))?;
    file.flush().map_err(|e| h5err(format!("cannot flush frame {n} of {name} to"), path, e))
}

/// Appends one frame to its stream's datasets and flushes the file.
fn append(open: &mut Open, frame: &Frame, path: &Path) -> Result<()> {
    if open.direct.is_some() {
        return append_direct(open, frame, path);
    }
    let l = open.validator.layout();
    let n = open.validator.frames()[frame.stream] as usize;
    let sets = &open.streams[frame.stream];
    let name = &l.streams[frame.stream].name;
    if let Some(reserve) = open.reserve.as_mut() {
        reserve.before_write(open.file.size(), open.frame_bound)?;
    }
    for (i, (ds, spec)) in sets.fields.iter().zip(&l.fields).enumerate() {
        let bytes = open.validator.field(frame, i);
        with_elem_type!(spec.dtype, T => write_field::<T>(ds, spec, bytes, n, &mut open.scratch))
            .map_err(|e| h5err(format!("cannot write frame {n} of {name}/{} to", spec.name), path, e))?;
    }
    let ctx = || format!("cannot write step of frame {n} of {name} to");
    sets.steps.resize(n + 1).map_err(|e| h5err(ctx(), path, e))?;
    sets.steps.write_slice(ArrayView1::from(&[frame.step][..]), n..n + 1).map_err(|e| h5err(ctx(), path, e))?;
    open.file.flush().map_err(|e| h5err(format!("cannot flush frame {n} of {name} to"), path, e))
}

/// Shrinks a stream's datasets back to `n` frames after a failed append, so the file does
/// not claim a frame it may not hold (and HDF5 can give back the space it had allocated).
fn roll_back(sets: &StreamSets, n: usize, layout: &StreamLayout) {
    for (ds, spec) in sets.fields.iter().zip(&layout.fields) {
        if ds.shape().first().is_some_and(|&len| len > n) {
            let (dims, rank) = with_frames(n, &spec.shape);
            let _ = ds.resize(&dims[..rank]);
        }
    }
    if sets.steps.shape().first().is_some_and(|&len| len > n) {
        let _ = sets.steps.resize(n);
    }
}

impl Sink for Hdf5Sink {
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        crate::validate::check_layout(layout)?;
        self.chunk_shapes(layout).map(drop)
    }

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
            roll_back(&open.streams[frame.stream], n, l);
            return Err(e);
        }
        open.validator.commit(frame);
        self.summary.record(frame, start);
        Ok(())
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        let start = Instant::now();
        let path: PathBuf = self.options.path.clone();
        let mut open = self.open.take().ok_or(Error::Usage("finish called without begin"))?;
        let write_failed = open.failed;
        // Without room for the attributes, writing them could damage the file: leave it as
        // the last frame's flush left it (`complete` is false since `begin`).
        let reserved = open.reserve.as_mut().map_or(Ok(()), |r| r.before_finish(open.file.size()));
        let failed = write_failed || reserved.is_err();
        let Open { file, streams, reserve, validator, others_complete, .. } = open;
        let l = validator.layout();
        // SWMR: attributes may not be created any more, only the ones made before SWMR
        // started overwritten in place (see `swmr`).
        let swmr = self.options.swmr;
        let finished = (|| -> hdf5::Result<()> {
            if reserved.is_err() {
                return Ok(());
            }
            let mut every_stream_complete = true;
            for ((sets, info), &n) in streams.iter().zip(&l.streams).zip(validator.frames()) {
                let complete = !failed && info.expected_frames.is_none_or(|e| e == n);
                every_stream_complete &= complete;
                if swmr {
                    super::swmr::overwrite(&sets.group, n, complete)?;
                } else {
                    set_attr(&sets.group, "frames", &AttrValue::from(n))?;
                    set_bool(&sets.group, "complete", complete)?;
                }
            }
            let complete = every_stream_complete && others_complete;
            if swmr {
                super::swmr::overwrite_complete(&file, complete)?
            } else {
                set_bool(&file, "complete", complete)?
            }
            file.flush()
        })();
        drop(streams);
        let closed = file.close();
        let released = reserve.map_or(Ok(()), Reserve::release);
        if !write_failed {
            reserved?;
        }
        if !failed {
            finished.map_err(|e| h5err("cannot finish", &path, e))?;
            closed.map_err(|e| h5err("cannot close", &path, e))?;
            released?;
        }
        if self.options.xdmf {
            // Also after a failure, for the frames written; then the failure is the error.
            let sidecar = super::xdmf::write_sidecar(&path);
            if !failed {
                sidecar?;
            }
        }
        if self.options.fsync {
            std::fs::File::open(&path).and_then(|f| f.sync_all()).map_err(|e| Error::io("cannot sync", &path, e))?;
            crate::prepare::sync_dir(path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))?;
        }
        self.summary.write_seconds += start.elapsed().as_secs_f64();
        Ok(std::mem::take(&mut self.summary))
    }
}
