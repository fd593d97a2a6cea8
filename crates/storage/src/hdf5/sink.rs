//! The HDF5 sink: one self-describing file that stays readable if the run is killed.

use std::path::{Path, PathBuf};

use hdf5::File;

use super::cloexec::{close_on_exec, retry_while_locked};
use super::direct::{DirectWriter, write_chunk};
use super::eoa::EndAhead;
use super::format::{chunk_shapes, h5err, with_elem_type, write_frame_slab};
use super::reserve::Reserve;
use super::schema::{LaidOut, NO_STEP, STEPS_CHUNK, StreamSets};
use super::swmr::Alignment;
use super::write_path::WritePath;
use crate::append::Existing;
use crate::error::{Error, Result};
use crate::frame::Fields;
use crate::frame::Frame;
use crate::options::{Compression, SinkOptions};
use crate::prepare::{OutputKind, Staged};
use crate::protocol::{Backend, Checked, Outcome};
use crate::read::OutputFormat;
use crate::schema::{AttrValue, StreamLayout};
use crate::time::now_rfc3339;
use crate::zfp::Encoding;

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
        match options.compression {
            Compression::None => {}
            // Fixed-accuracy ZFP with a bound below the data's precision can spend more bits
            // than the raw values: about one more per value, in blocks of 4^d values padded
            // from each axis's length (an axis of 2 counts as 4: twice the values), plus a
            // header per chunk. 2.5 times covers both.
            Compression::Zfp(_) | Compression::ZfpRate(_) => {
                bytes = bytes.saturating_mul(5).saturating_div(2).saturating_add(4096)
            }
            _ => bytes = bytes.saturating_add(bytes / 64).saturating_add(4096),
        }
        // A chunk may start at a page (`swmr::Alignment`: every object of an SWMR file does).
        sum.saturating_add(Alignment::widest(options.swmr).padded(bytes))
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

/// State between `begin` and `finish`.
#[derive(Debug)]
struct Open {
    file: File,
    /// Disk space reserved ahead of HDF5 (`None` when `reserve_space` is off).
    reserve: Option<Reserve>,
    /// Bytes one frame can add to the file, at most.
    frame_bound: u64,
    layout: StreamLayout,
    streams: Vec<StreamSets>,
    /// Aligned copies of fields that are not aligned in their frame (or on a big-endian host).
    scratch: Vec<u64>,
    /// Compressed datasets written with direct chunk writes (deflate on a little-endian
    /// host), or `None` when HDF5 runs the filters itself.
    direct: Option<DirectWriter>,
    /// Appending: every stream already in the file and not rewritten is complete.
    others_complete: bool,
    /// `(stream, frames)` of each stream whose datasets a failed write grew and HDF5 then
    /// refused to shrink back: `finish` tries again (see [`roll_back`]).
    unshrunk: Vec<(usize, usize)>,
    /// The streams were laid out whole at `begin` (see `preallocate`; compressed: their
    /// chunks indexed): a frame is written without changing the datasets' extents, and
    /// `finish` shrinks the streams that stopped early.
    preallocated: bool,
    /// The fields are compressed: a frame written in place still grows the file (its chunks
    /// take new space, their size known only once compressed).
    compressed: bool,
    /// Writes the superblock's end of allocation ahead of each frame's flush (see `eoa`);
    /// `None` for a file whose superblock it does not write (SWMR's).
    end_ahead: Option<EndAhead>,
    /// HDF5 rewrites the compressed chunks frame after frame (several frames per chunk): a
    /// gap is left at the end of the allocation before each frame (`eoa::leave_gap`).
    rewrites_chunks: bool,
    /// The most padding HDF5 puts before a chunk of this file ([`Alignment::widest`]).
    chunk_padding: Alignment,
}

/// Faults the tests inject where no real one can be arranged on demand: a write failing after
/// the datasets grew, HDF5 refusing to shrink them back, and a write in place failing after
/// the fields, before the step.
#[cfg(test)]
mod fault {
    use std::cell::Cell;
    thread_local! {
        pub(super) static FAIL_AFTER_GROW: Cell<bool> = const { Cell::new(false) };
        pub(super) static FAIL_SHRINK: Cell<bool> = const { Cell::new(false) };
        pub(super) static FAIL_BEFORE_STEP: Cell<bool> = const { Cell::new(false) };
    }
}

/// Takes frame `n` of stream `s` back out after its write failed, so that no reader ever sees
/// a frame that was not stored whole (a "phantom" frame): first its `steps` entry is set to
/// [`NO_STEP`], which every wgpipe reader stops before in a stream not complete (the stream is
/// not: the run failed), then the datasets shrink to the `n` frames stored, which hides it
/// from every other reader too. Returns whether they shrank; if not, the entry still marks
/// the frame, and `finish` tries again.
///
/// A stream laid out whole (`preallocate`) is only marked: its datasets are full length
/// anyway, and a shrink is metadata written, which the failure (a full disk) may break;
/// `finish` cuts the stream to its frames.
fn roll_back(open: &Open, s: usize, n: usize) -> bool {
    let Some(sets) = open.streams.get(s) else { return true };
    if n < sets.steps.size() {
        // Best effort, flushed so that a kill from here on finds the mark: if even this
        // fails, the shrink below is what hides the frame.
        let marked = super::schema::write_step(sets, n, NO_STEP).and_then(|()| open.file.flush());
        if open.preallocated && marked.is_ok() {
            return true;
        }
    }
    #[cfg(test)]
    if fault::FAIL_SHRINK.get() {
        return false;
    }
    super::schema::resize(sets, &open.layout, n).is_ok()
}

/// The HDF5 backend: writes every stream into one HDF5 file, a group per stream, per field a chunked dataset of
/// shape `[frames, *shape]` and the field's element type with an unlimited first dimension,
/// and a `steps` dataset.
///
/// A chunk holds [`SinkOptions::chunk_frames`] frames; a frame larger than 4 MiB is cut into
/// several chunks along its leading axes (see the crate README). An uncompressed file whose
/// streams' frame counts are known is laid out whole at `begin`, and a frame is then only
/// data written in place (see `preallocate`: a kill at any moment loses no frame written);
/// otherwise each frame grows the datasets by one, writes its slab and flushes the file.
/// Layout and attributes are listed in the crate README.
#[derive(Debug)]
pub struct Hdf5Backend {
    options: SinkOptions,
    open: Option<Open>,
}

/// The HDF5 sink: [`Hdf5Backend`] driven through the sink protocol.
pub type Hdf5Sink = Checked<Hdf5Backend>;

impl Hdf5Sink {
    /// An HDF5 sink writing the file `options.path` (created by `begin`).
    pub fn new(options: SinkOptions) -> Self {
        Checked::from(Hdf5Backend { options, open: None })
    }
}

impl Hdf5Backend {
    fn path(&self) -> &Path {
        &self.options.path
    }

    /// Opens the space reservation (unless `reserve_space` is off) and reserves what `begin`
    /// still writes into `file`, found at `at` (the path, or its staging name while new).
    /// Streams laid out whole (`preallocate`) set the file's length to `laid_out` bytes more
    /// when `begin` flushes: that length is checked against the file size limit, with the
    /// reservation or without (a write past the limit would kill the process).
    fn reserve(
        &self,
        file: &File,
        at: &Path,
        layout: &StreamLayout,
        laid_out: u64,
        fill: u64,
    ) -> Result<Option<Reserve>> {
        if laid_out > 0 {
            let length = file.size().saturating_add(begin_bytes_bound(layout)).saturating_add(laid_out);
            super::reserve::check_size_limit(self.path(), length).map_err(|e| does_not_fit(e, laid_out))?;
        }
        if !self.options.reserve_space {
            return Ok(None);
        }
        let mut reserve = Reserve::open(at, self.path(), finish_bytes_bound(layout))?;
        if laid_out == 0 {
            reserve.before_write(file.size(), begin_bytes_bound(layout).saturating_add(fill))?;
        }
        // Else the flush of `begin` sets the file's length past anything reserved here, and
        // what `begin` writes goes to a staged new file or copy, which a full disk leaves
        // unpublished: `finish`'s room is reserved after that flush.
        Ok(Some(reserve))
    }

    /// Creates the file (or, appending, opens it and drops the streams to rewrite), its
    /// groups, datasets and run attributes: the write path decided first ([`WritePath`]),
    /// then the file made or opened, the streams laid out, the file flushed and published.
    fn create(&mut self, layout: &StreamLayout) -> Result<Open> {
        let path = self.path().to_path_buf();
        let way = WritePath::choose(&self.options, layout)?;
        filters_ready(&self.options)?;
        let existing = if self.options.append {
            crate::append::check(&path, layout, OutputFormat::Hdf5, super::read::open)?
        } else {
            None
        };
        if self.options.xdmf && existing.is_none() {
            super::xdmf::check_free(&path, self.options.overwrite)?;
        }
        // Dropped in reverse on an error: the file closed before a staged one is removed.
        let Opened { mut reserve, staged, at, file, in_place } = match &existing {
            None => self.create_new(layout, &way)?,
            Some(e) => self.open_to_append(layout, &way, e)?,
        };
        let plan = way.plan(self.options.compression, in_place);
        let streams = super::schema::create(&file, &path, layout, existing.as_ref(), &now_rfc3339(), &plan)?;
        file.flush().map_err(|e| h5err("cannot flush", &path, e))?;
        // After the flush: the superblock on disk is HDF5's, checksum and all.
        let end_ahead = EndAhead::open(&at).map_err(|e| Error::io("cannot open", &at, e))?;
        if way.holes
            && let Some(r) = reserve.as_mut()
        {
            // Past the file's new length (the whole output's).
            r.before_finish(file.size())?;
        }
        if self.options.swmr {
            super::swmr::start(&file, streams.iter().map(|s| &s.group))
                .map_err(|e| h5err("cannot start single-writer/multiple-reader mode on", &path, e))?;
        }
        if let Some(staged) = staged {
            staged.publish(self.options.fsync)?;
        }
        let direct = way.direct_writer(layout, &streams, self.options.compression_threads);
        Ok(Open {
            file,
            reserve,
            frame_bound: frame_bytes_bound(layout, &self.options),
            layout: layout.clone(),
            streams,
            scratch: Vec::new(),
            direct,
            others_complete: existing.is_none_or(|e| e.others_complete),
            unshrunk: Vec::new(),
            preallocated: way.preallocated || way.indexed,
            compressed: self.options.compression != Compression::None,
            end_ahead,
            rewrites_chunks: self.options.compression != Compression::None && self.options.chunk_frames > 1,
            chunk_padding: Alignment::widest(self.options.swmr),
        })
    }

    /// Creates the new file, staged (see `Staged`), and reserves what `begin` writes into it.
    fn create_new(&self, layout: &StreamLayout, way: &WritePath) -> Result<Opened> {
        let staged = Staged::prepare(self.path(), self.options.overwrite, OutputKind::File)?;
        let at = staged.staging().to_path_buf();
        // No free-space management: HDF5 never reuses or gives back file space, so its end of
        // file only grows. With the default manager, deleting the incomplete streams of a
        // resumed file frees the space at its end, and the next flush truncates the file
        // before it rewrites the superblock: a kill between the two left a file HDF5 refuses
        // to open ("truncated file"), complete streams and all (kill_stress, `append`: 53 of
        // 200 kills). It also keeps direct chunk writes safe: space freed since the last flush
        // is never reused (see `direct`). The cost: the space of deleted streams and of
        // replaced index blocks stays in the file. (`swmr::create_file` sets it.)
        let file = super::swmr::create_file(&at, self.options.swmr, way.index_rewritten)
            .map_err(|e| h5err("cannot create HDF5 file", self.path(), e))?;
        close_on_exec(&at)?;
        let reserve = self.reserve(&file, &at, layout, way.laid_out(layout, &[]), way.fill(layout, &[]))?;
        Ok(Opened { reserve, staged: Some(staged), at, file, in_place: Vec::new() })
    }

    /// Opens the existing file to append `layout` to it (`existing`: what it holds), on a
    /// copy when its structure changes, and reserves what `begin` writes into it.
    fn open_to_append(&self, layout: &StreamLayout, way: &WritePath, existing: &Existing) -> Result<Opened> {
        let path = self.path();
        let mut staged = None;
        let mut file = open_rw(path, path, way.index_rewritten)?;
        let in_place = if way.preallocated { continuing_in_place(&file, layout, existing, way) } else { Vec::new() };
        let mut at = path.to_path_buf();
        if !super::schema::appends_in_place(&file, layout, &in_place) {
            // The structure changes: on a copy, renamed over the file once flushed (see
            // `copy`), so a kill leaves the file as it was or as it will be.
            file.close().map_err(|e| h5err("cannot close", path, e))?;
            let staging = staged.insert(Staged::replacing(path, OutputKind::File)?);
            super::copy::copy_file(path, staging.staging())?;
            at = staging.staging().to_path_buf();
            file = open_rw(&at, path, way.index_rewritten)?;
        }
        // Before anything changes: a full disk must not damage the streams already there.
        let reserve = self.reserve(&file, &at, layout, way.laid_out(layout, &in_place), way.fill(layout, &in_place))?;
        Ok(Opened { reserve, staged, at, file, in_place })
    }
}

/// The file `create` made or opened, before its streams are laid out.
struct Opened {
    /// Disk space reserved ahead of HDF5 (`None` when `reserve_space` is off).
    reserve: Option<Reserve>,
    /// The new file or changed copy, published once flushed (`None`: appended in place).
    staged: Option<Staged>,
    /// The file HDF5 has open: the staged new file or copy, or the file itself.
    at: PathBuf,
    file: File,
    /// Streams of an appended-to file that continue in place ([`super::schema::Plan::in_place`]).
    in_place: Vec<String>,
}

/// Opens the existing HDF5 file at `at` (the output `path`, or its staged copy) to append
/// to it, waiting while another process holds its lock.
fn open_rw(at: &Path, path: &Path, index_rewritten: bool) -> Result<File> {
    let file = retry_while_locked(|| super::swmr::open_rw(at, index_rewritten))
        .map_err(|e| h5err("cannot open HDF5 file for appending", path, e))?;
    close_on_exec(at)?;
    Ok(file)
}

/// The streams of `layout` to rewrite or continue (`existing`) whose datasets in `file` are
/// laid out whole already: they continue in place ([`super::schema::Plan::in_place`]).
fn continuing_in_place(file: &File, layout: &StreamLayout, existing: &Existing, way: &WritePath) -> Vec<String> {
    let laid_out = LaidOut { chunks: &way.chunks, raw_chunks: way.raw_chunks() };
    layout
        .streams
        .iter()
        .filter(|s| existing.replace.contains(&s.name) || existing.continued.contains(&s.name))
        .filter(|s| super::schema::laid_out_whole(file, layout, s, &laid_out))
        .map(|s| s.name.clone())
        .collect()
}

/// Errors unless this HDF5 library has the filter of `options`' compression (deflate,
/// blosc), and gives blosc its threads ([`blosc_ready`]).
fn filters_ready(options: &SinkOptions) -> Result<()> {
    if let Compression::Deflate(_) = options.compression
        && !hdf5::filters::deflate_available()
    {
        return Err(Error::InvalidOptions(
            "deflate is not available in this HDF5 library: use compression none".into(),
        ));
    }
    blosc_ready(options.compression, options.compression_threads)
}

/// The error of an output laid out whole (`preallocate`) whose `need` bytes would pass the
/// file size limit, from the limit's (other errors as they are).
fn does_not_fit(e: Error, need: u64) -> Error {
    match e {
        Error::FileSizeLimit { path, limit, .. } => Error::OutputDoesNotFit {
            path,
            needed: need,
            why: format!("file size limit reached (this process's limit is {limit} bytes: ulimit -f)"),
        },
        e => e,
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

/// Writes one frame (`fields`, frame `frame.index` of its stream) into its stream's datasets
/// through direct chunk writes: compresses its chunks (in parallel), reserves their exact
/// size, grows the datasets, writes the chunks, flushes the file (index and extent after the
/// chunks they reference), then writes the step and flushes again.
fn write_frame_direct(open: &mut Open, frame: &Frame, fields: Fields<'_>, path: &Path) -> Result<()> {
    let Open { file, reserve, layout, streams, direct, preallocated, end_ahead, scratch, chunk_padding, .. } = open;
    let Some(direct) = direct.as_mut() else { return Err(Error::Usage("direct chunk write without a plan")) };
    let n = frame.index as usize;
    let sets = &streams[frame.stream];
    let name = &layout.streams[frame.stream].name;
    let fields: Vec<&[u8]> = fields.iter().collect();
    // Fields beside encoded ones that HDF5 writes, through their own filters.
    let beside: Vec<usize> = (0..fields.len()).filter(|&i| direct.leaves_to_hdf5(i)).collect();
    let writes = direct
        .prepare(frame.stream, frame.index, &fields)
        .map_err(|e| h5err(format!("cannot compress frame {n} of {name} for"), path, e))?;
    if let Some(reserve) = reserve.as_mut() {
        // Each chunk may start at a page (`swmr::Alignment`). Fields HDF5 writes itself beside
        // encoded ones: bounded as `frame_bytes_bound` bounds a filtered chunk.
        let data = writes.iter().map(|w| chunk_padding.padded(w.bytes.len() as u64)).sum::<u64>();
        let beside_bytes = beside
            .iter()
            .map(|&i| chunk_padding.padded((fields[i].len() as u64).saturating_mul(5) / 2 + 4096))
            .sum::<u64>();
        let data = data.saturating_add(beside_bytes);
        reserve.before_write(file.size(), data.saturating_add(frame_overhead_bound(layout, data)))?;
    }
    // Chunks indexed at `begin` (see `preallocate`): the frame's chunks replace their fill
    // chunks, each changing its one index entry in place; then a flush, then the step.
    let indexed = *preallocated && n < sets.steps.size();
    if !indexed {
        super::schema::resize(sets, layout, n + 1)
            .map_err(|e| h5err(format!("cannot grow stream {name} to {} frames in", n + 1), path, e))?;
    }
    for w in &writes {
        let spec = &layout.fields[w.field];
        write_chunk(&sets.fields[w.field], &w.offset, w.bytes, w.filter_mask)
            .map_err(|e| h5err(format!("cannot write frame {n} of {name}/{} to", spec.name), path, e))?;
    }
    for &i in &beside {
        let (ds, spec, bytes) = (&sets.fields[i], &layout.fields[i], fields[i]);
        with_elem_type!(spec.dtype, T => write_frame_slab::<T>(ds, spec, bytes, n, scratch))
            .map_err(|e| h5err(format!("cannot write frame {n} of {name}/{} to", spec.name), path, e))?;
    }
    let flush = || flush_frame(file, end_ahead.as_ref(), path, || format!("cannot flush frame {n} of {name} to"));
    // The chunks and their index first, then the step (see `write_frame`).
    flush()?;
    super::schema::store_step(sets, n, frame.step)
        .map_err(|e| h5err(format!("cannot write step of frame {n} of {name} to"), path, e))?;
    flush()
}

/// Writes one frame (`fields`, frame `frame.index` of its stream) into datasets laid out
/// whole at `begin` (see `preallocate`): its fields, a flush, its step, a flush. No
/// metadata changes (compressed: each chunk the frame completes takes new space and changes
/// its own index entry, in place), and the step reaches the file after the fields it vouches
/// for.
fn write_frame_in_place(open: &mut Open, frame: &Frame, fields: Fields<'_>, path: &Path) -> Result<()> {
    match open.reserve.as_mut() {
        // Compressed: HDF5 writes each chunk anew at the end of the file when it flushes.
        Some(reserve) if open.compressed => reserve.before_write(open.file.size(), open.frame_bound)?,
        Some(reserve) => reserve.check_free(fields.iter().map(|f| f.len() as u64).sum())?,
        None => {}
    }
    let n = frame.index as usize;
    let l = &open.layout;
    let sets = &open.streams[frame.stream];
    let name = &l.streams[frame.stream].name;
    for ((ds, spec), bytes) in sets.fields.iter().zip(&l.fields).zip(fields.iter()) {
        with_elem_type!(spec.dtype, T => write_frame_slab::<T>(ds, spec, bytes, n, &mut open.scratch))
            .map_err(|e| h5err(format!("cannot write frame {n} of {name}/{} to", spec.name), path, e))?;
    }
    flush_frame(&open.file, open.end_ahead.as_ref(), path, || format!("cannot flush frame {n} of {name} to"))?;
    #[cfg(test)]
    if fault::FAIL_BEFORE_STEP.get() {
        return Err(h5err(format!("cannot write step of frame {n} of {name} to"), path, "injected fault"));
    }
    super::schema::store_step(sets, n, frame.step)
        .map_err(|e| h5err(format!("cannot write step of frame {n} of {name} to"), path, e))?;
    flush_frame(&open.file, open.end_ahead.as_ref(), path, || {
        format!("cannot flush the step of frame {n} of {name} to")
    })
}

/// Flushes `file` after writes of a frame, the superblock's end of allocation written past
/// everything they allocated first (`end_ahead`, see `eoa`): a kill in the flush, between the
/// index nodes and the superblock, then leaves no index entry past the recorded end.
fn flush_frame(file: &File, end_ahead: Option<&EndAhead>, path: &Path, what: impl Fn() -> String) -> Result<()> {
    if let Some(ahead) = end_ahead {
        ahead.write(file).map_err(|e| Error::io("cannot write the superblock of", path, e))?;
    }
    file.flush().map_err(|e| h5err(what(), path, e))
}

/// Writes one frame (`fields`, frame `frame.index` of its stream) into its stream's datasets,
/// flushes the file, then writes its step and flushes again.
fn write_frame(open: &mut Open, frame: &Frame, fields: Fields<'_>, path: &Path) -> Result<()> {
    if open.direct.is_some() {
        return write_frame_direct(open, frame, fields, path);
    }
    let n = frame.index as usize;
    // A frame past a stream's expected ones (a library caller may send more) grows the
    // datasets as an open-ended stream does.
    if open.preallocated && open.streams.get(frame.stream).is_some_and(|s| n < s.steps.size()) {
        return write_frame_in_place(open, frame, fields, path);
    }
    let l = &open.layout;
    let sets = &open.streams[frame.stream];
    let name = &l.streams[frame.stream].name;
    if let Some(reserve) = open.reserve.as_mut() {
        reserve.before_write(open.file.size(), open.frame_bound)?;
    }
    super::schema::resize(sets, l, n + 1)
        .map_err(|e| h5err(format!("cannot grow stream {name} to {} frames in", n + 1), path, e))?;
    #[cfg(test)]
    if fault::FAIL_AFTER_GROW.get() {
        return Err(h5err(format!("cannot write frame {n} of {name} to"), path, "injected fault"));
    }
    if open.rewrites_chunks {
        super::eoa::leave_gap(&open.file)
            .map_err(|e| h5err(format!("cannot make room for frame {n} of {name} in"), path, e))?;
    }
    for ((ds, spec), bytes) in sets.fields.iter().zip(&l.fields).zip(fields.iter()) {
        with_elem_type!(spec.dtype, T => write_frame_slab::<T>(ds, spec, bytes, n, &mut open.scratch))
            .map_err(|e| h5err(format!("cannot write frame {n} of {name}/{} to", spec.name), path, e))?;
    }
    // The fields and their index first, then the step: without a chunk cache the step goes
    // to the file as it is written, and must not vouch for a frame whose chunks the index on
    // disk does not name yet (a kill between would show a frame of fill values).
    flush_frame(&open.file, open.end_ahead.as_ref(), path, || format!("cannot flush frame {n} of {name} to"))?;
    super::schema::store_step(sets, n, frame.step)
        .map_err(|e| h5err(format!("cannot write step of frame {n} of {name} to"), path, e))?;
    flush_frame(&open.file, open.end_ahead.as_ref(), path, || {
        format!("cannot flush the step of frame {n} of {name} to")
    })
}

/// Cuts each stream laid out whole (`preallocate`) that holds fewer frames than its datasets
/// to its frames (uncompressed, the chunks of the others were never written: no disk space
/// to give back; compressed, their fill values stay in the file, a few bytes each).
fn cut_short_streams(open: &Open, outcome: &Outcome<'_>, path: &Path) -> Result<()> {
    for (s, (sets, &frames)) in open.streams.iter().zip(outcome.frames()).enumerate() {
        let (len, frames) = (sets.steps.size(), frames as usize);
        if frames >= len {
            continue;
        }
        if let Err(e) = super::schema::resize(sets, &open.layout, frames) {
            let name = open.layout.streams.get(s).map_or("?", |st| st.name.as_str());
            return Err(h5err(format!("cannot cut stream {name} to its {frames} frames in"), path, e));
        }
    }
    Ok(())
}

impl Backend for Hdf5Backend {
    /// That every field's chunk is within HDF5's limits, and that fields encoded before the
    /// sink can be stored: HDF5 has their filter, and the host is little-endian (their chunks
    /// are written as they arrive).
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        chunk_shapes(layout, self.options.chunk_frames)?;
        for f in &layout.fields {
            if let Encoding::Zfp(rate) = f.encoding {
                // One chunk a frame for every field: chunks of several frames beside them would
                // be rewritten as they fill, which the direct path does not order for a kill.
                if self.options.chunk_frames != 1 {
                    return Err(Error::InvalidOptions(format!(
                        "field {:?} arrives ZFP-encoded, which the hdf5 sink stores one frame per chunk, with \
                         every other field: set chunk_frames to 1 (it is {})",
                        f.name, self.options.chunk_frames
                    )));
                }
                if cfg!(target_endian = "big") {
                    return Err(Error::InvalidLayout(format!(
                        "field {:?} arrives ZFP-encoded, which the hdf5 sink stores on little-endian hosts only",
                        f.name
                    )));
                }
                Compression::ZfpRate(rate).check_available()?;
            }
        }
        Ok(())
    }

    /// Appending: a continued stream's datasets are cut to its kept frames in `begin`.
    fn continues_streams(&self) -> bool {
        self.options.append
    }

    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.options.check()?;
        // A half-made new file never reaches the path: `Staged` removes it. An appended-to
        // file is left as it is.
        self.open = Some(self.create(layout)?);
        Ok(())
    }

    fn write(&mut self, frame: &Frame, fields: Fields<'_>) -> Result<Option<u64>> {
        let path = self.options.path.clone();
        let open = self.open.as_mut().ok_or(Error::Usage("write called before begin"))?;
        if let Err(e) = write_frame(open, frame, fields, &path) {
            // Back to the frames stored, so the file does not claim a frame it may not hold
            // (and HDF5 can give back the space it had allocated); the error is the one told.
            let (s, n) = (frame.stream, frame.index as usize);
            if !roll_back(open, s, n) {
                open.unshrunk.push((s, n));
            }
            return Err(e);
        }
        Ok(None)
    }

    fn finish(&mut self, outcome: &Outcome<'_>) -> Result<()> {
        let path: PathBuf = self.options.path.clone();
        let mut open = self.open.take().ok_or(Error::Usage("finish called without begin"))?;
        // Frames a failed write left in datasets that would not shrink: once more, and if they
        // still do not, the caller hears of it (their steps read NO_STEP, which wgpipe's
        // readers stop before, but h5py shows the frames).
        let unshrunk = std::mem::take(&mut open.unshrunk);
        let phantoms: Vec<String> = unshrunk
            .into_iter()
            .filter(|&(s, n)| !roll_back(&open, s, n))
            .map(|(s, n)| {
                let name = open.layout.streams.get(s).map_or("?", |st| st.name.as_str());
                format!("frame {n} of stream {name}")
            })
            .collect();
        // Streams laid out whole that stopped early: cut to their frames (readers other than
        // wgpipe's see exactly them).
        let cut = if open.preallocated { cut_short_streams(&open, outcome, &path) } else { Ok(()) };
        let write_failed = outcome.failed();
        // Without room for the attributes, writing them could damage the file: leave it as
        // the last frame's flush left it (`complete` is false since `begin`).
        let reserved = open.reserve.as_mut().map_or(Ok(()), |r| r.before_finish(open.file.size()));
        let failed = write_failed || reserved.is_err() || cut.is_err();
        let Open { file, streams, reserve, others_complete, end_ahead, .. } = open;
        // SWMR: attributes may not be created any more, only the ones made before SWMR
        // started overwritten in place (see `swmr`).
        let finished = if reserved.is_ok() {
            // The attributes may take new object header space: the end written ahead of it
            // too (see `eoa`), a kill in this flush loses no stream group.
            super::schema::mark_complete(&file, &streams, outcome, others_complete, self.options.swmr)
                .map_err(|e| h5err("cannot finish", &path, e))
                .and_then(|()| flush_frame(&file, end_ahead.as_ref(), &path, || "cannot finish".to_owned()))
        } else {
            Ok(())
        };
        drop(streams);
        let closed = file.close();
        let released = reserve.map_or(Ok(()), Reserve::release);
        if !write_failed {
            reserved?;
            cut?;
        }
        if !failed {
            finished?;
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
        if !phantoms.is_empty() {
            return Err(h5err(
                format!(
                    "cannot take back {} (never stored whole: its write failed, and HDF5 twice refused to shrink the \
                     datasets) from",
                    phantoms.join(", ")
                ),
                &path,
                format!(
                    "its step reads {NO_STEP}, so wgpipe's readers and --resume leave it out, but readers of the bare \
                     datasets (h5py) see it: drop the frames whose step is {NO_STEP}"
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::super::read::open as open_output;
    use super::fault::{FAIL_AFTER_GROW, FAIL_BEFORE_STEP, FAIL_SHRINK};
    use super::*;
    use crate::frame::DType;
    use crate::schema::{FieldSpec, StreamInfo};
    use crate::sink::Sink;

    /// One stream of unknown length: its datasets grow with every frame.
    fn layout() -> StreamLayout {
        StreamLayout::new(vec![FieldSpec::new("u", DType::F32, [4, 3])]).with_stream(StreamInfo::new("s"))
    }

    fn frame(i: u64) -> Frame {
        Frame::new(0, i, 10 * (i + 1), (0..12u32).flat_map(|v| (v as f32 + i as f32).to_le_bytes()).collect())
    }

    /// Two frames stored, the third's write failing after the datasets grew, with HDF5
    /// refusing to shrink them as long as `shrink_fails_at_finish` says; returns finish's
    /// result and the datasets' length (`u`, `steps`) and the last step entry as HDF5 has them.
    fn failed_write(path: &Path, shrink_fails_at_finish: bool) -> (Result<()>, usize, usize, u64) {
        let mut sink = Hdf5Sink::new(SinkOptions::new(path));
        sink.begin(&layout()).unwrap();
        sink.write(&frame(0)).unwrap();
        sink.write(&frame(1)).unwrap();
        FAIL_AFTER_GROW.set(true);
        FAIL_SHRINK.set(true);
        let e = sink.write(&frame(2)).unwrap_err().to_string();
        FAIL_AFTER_GROW.set(false);
        assert!(e.contains("frame 2 of s") && e.contains("injected"), "{e}");
        FAIL_SHRINK.set(shrink_fails_at_finish);
        let finished = sink.finish().map(drop);
        FAIL_SHRINK.set(false);
        let file = hdf5::File::open(path).unwrap();
        let (u, steps) = (file.dataset("s/u").unwrap(), file.dataset("s/steps").unwrap());
        let last: Vec<u64> = steps.read_raw().unwrap();
        (finished, u.shape()[0], steps.size(), last.last().copied().unwrap_or(0))
    }

    #[test]
    fn a_frame_whose_write_failed_is_never_visible_even_when_the_shrink_fails() {
        let dir = tempfile::tempdir().unwrap();
        // The shrink fails at the write and again at finish: the frame stays in the datasets,
        // its step marked, finish says so, and wgpipe's readers stop before it.
        let path = dir.path().join("kept.h5");
        let (finished, u, steps, last) = failed_write(&path, true);
        let e = finished.unwrap_err().to_string();
        assert!(e.contains("cannot take back frame 2 of stream s") && e.contains("h5py"), "{e}");
        assert_eq!((u, steps, last), (3, 3, NO_STEP), "the frame is in the datasets, its step marked");
        let out = open_output(&path).unwrap();
        assert_eq!(out.streams()[0].frames, 2, "the reader stops before the marked frame");
        assert!(!out.streams()[0].complete);
        assert_eq!(out.steps(0).unwrap(), [10, 20]);
        assert_eq!(out.read_field(0, 0, 1).unwrap().bytes, frame(1).data);
        // The shrink fails at the write only: finish takes the frame out.
        let path = dir.path().join("shrunk.h5");
        let (finished, u, steps, last) = failed_write(&path, false);
        assert!(finished.is_ok(), "{finished:?}");
        assert_eq!((u, steps, last), (2, 2, 20), "finish shrank the datasets back to the frames stored");
        assert_eq!(open_output(&path).unwrap().streams()[0].frames, 2);
    }

    /// A stream of known length is laid out whole at `begin`; stopped after 2 of its 100
    /// frames (16 KiB each), `finish` cuts it to them, and the 98 never written took no disk
    /// space. One frame a chunk, its chunks are fill chunks until written (the frames never
    /// written read NaN until `finish`, and the file grows frame by frame); two frames a
    /// chunk, they are holes of a sparse file of the whole output's length.
    #[test]
    fn a_stream_laid_out_whole_and_stopped_early_is_cut_to_its_frames() {
        use std::os::unix::fs::MetadataExt;
        for chunk_frames in [1, 2] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("whole.h5");
            let layout = StreamLayout::new(vec![FieldSpec::new("u", DType::F32, [64, 64])])
                .with_stream(StreamInfo::new("s").with_expected_frames(100));
            let mut sink = Hdf5Sink::new(SinkOptions::new(&path).with_chunk_frames(chunk_frames));
            sink.begin(&layout).unwrap();
            {
                let file = hdf5::File::open(&path).unwrap();
                assert_eq!(file.dataset("s/u").unwrap().shape(), [100, 64, 64], "laid out whole");
                let steps: Vec<u64> = file.dataset("s/steps").unwrap().read_raw().unwrap();
                assert!(steps.iter().all(|&s| s == NO_STEP), "steps of frames not written are marked");
            }
            let frame = |i: u64| {
                Frame::new(0, i, 10 * (i + 1), (0..4096u32).flat_map(|v| (v + 7 * i as u32).to_le_bytes()).collect())
            };
            sink.write(&frame(0)).unwrap();
            sink.write(&frame(1)).unwrap();
            let at_two = std::fs::metadata(&path).unwrap();
            if chunk_frames == 1 {
                assert!(at_two.len() < 10 * 16384, "{} bytes: the frames' space was laid out", at_two.len());
                let file = hdf5::File::open(&path).unwrap();
                let u: Vec<f32> = file.dataset("s/u").unwrap().read_raw().unwrap();
                assert!(u[2 * 4096..].iter().all(|v| v.is_nan()), "frames never written read as NaN");
                assert_eq!(u[4096].to_bits(), 7, "frame 1 as written");
            } else {
                assert!(at_two.len() >= 100 * 16384, "{} bytes: the frames' space is not laid out", at_two.len());
            }
            sink.finish().unwrap();
            let file = hdf5::File::open(&path).unwrap();
            assert_eq!(file.dataset("s/u").unwrap().shape(), [2, 64, 64]);
            assert_eq!(file.dataset("s/steps").unwrap().read_raw::<u64>().unwrap(), [10, 20]);
            drop(file);
            let out = open_output(&path).unwrap();
            assert_eq!((out.streams()[0].frames, out.streams()[0].complete), (2, false));
            assert_eq!(out.read_field(0, 0, 1).unwrap().bytes, frame(1).data);
            let done = std::fs::metadata(&path).unwrap();
            assert!(
                done.blocks() * 512 < 10 * 16384,
                "{} bytes allocated for a file of {}: the frames never written took disk space",
                done.blocks() * 512,
                done.len()
            );
        }
    }

    /// A write into a stream laid out whole as holes (two frames a chunk) that fails after
    /// its fields, before its step (a full disk, say): the frame is only marked (no metadata
    /// written in the middle of the run), the run goes on to `finish`, which cuts the stream
    /// to the frames stored.
    #[test]
    fn a_failed_write_in_place_is_marked_and_cut_at_finish() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in-place.h5");
        let layout = StreamLayout::new(vec![FieldSpec::new("u", DType::F32, [4, 3])])
            .with_stream(StreamInfo::new("s").with_expected_frames(5));
        let mut sink = Hdf5Sink::new(SinkOptions::new(&path).with_chunk_frames(2));
        sink.begin(&layout).unwrap();
        sink.write(&frame(0)).unwrap();
        sink.write(&frame(1)).unwrap();
        FAIL_BEFORE_STEP.set(true);
        let e = sink.write(&frame(2)).unwrap_err().to_string();
        FAIL_BEFORE_STEP.set(false);
        assert!(e.contains("frame 2 of s") && e.contains("injected"), "{e}");
        {
            let file = hdf5::File::open(&path).unwrap();
            assert_eq!(file.dataset("s/u").unwrap().shape(), [5, 4, 3], "shrunk in the middle of the run");
            let steps: Vec<u64> = file.dataset("s/steps").unwrap().read_raw().unwrap();
            assert_eq!(steps, [10, 20, NO_STEP, NO_STEP, NO_STEP]);
        }
        sink.finish().unwrap();
        let file = hdf5::File::open(&path).unwrap();
        assert_eq!(file.dataset("s/u").unwrap().shape(), [2, 4, 3]);
        assert_eq!(file.dataset("s/steps").unwrap().read_raw::<u64>().unwrap(), [10, 20]);
        drop(file);
        let out = open_output(&path).unwrap();
        assert_eq!((out.streams()[0].frames, out.streams()[0].complete), (2, false));
    }
}
