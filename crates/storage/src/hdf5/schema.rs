//! The one writer of an HDF5 output's structure: root attributes, a group per stream with its
//! attributes, a chunked dataset per field with its `dims`, the `steps` dataset, the netCDF-4
//! dimension scales, frame counts and `complete` flags.
//!
//! Every write path (serial, direct chunk, SWMR, MPI batch, MPI block) creates and finishes
//! its file here, so a reader cannot tell which one wrote it. They differ only by a [`Plan`]:
//! how long the datasets are made and when their space is allocated, and the filters. What
//! is collective under MPI (who calls what, and when) is the MPI files' business:
//! this module makes the same calls on every rank, in the same order, given the same
//! arguments, which is what parallel HDF5 asks of metadata changes.

use std::path::Path;

use hdf5::DatasetBuilderEmptyShape;
use hdf5::dataset::{AllocTime, FillTime};
use hdf5::filters::Filter;
use hdf5::{Dataset, Extent, File, Group, Location};
use ndarray::ArrayView1;

use super::format::{
    AXIS_ORDER_ATTR, DIMS_ATTR, FIELDS_ATTR, FORMAT, FRAME_DIM, h5err, set_attr, set_bool, set_strings, with_elem_type,
    with_frames,
};
use crate::append::Existing;
use crate::error::Result;
use crate::frame::DType;
use crate::options::Compression;
use crate::protocol::Outcome;
use crate::schema::{AXIS_ORDER, AttrValue, FieldSpec, StreamInfo, StreamLayout};
use crate::validate::STEPS_NAME;
use crate::zfp::Encoding;

/// Steps per chunk of the `steps` dataset (8 KiB chunks: small, rarely rewritten).
pub(crate) const STEPS_CHUNK: usize = 1024;

/// The step of a frame that was never written, in `steps` datasets allocated ahead of their
/// frames (the MPI sinks'): a step no run reaches.
pub(crate) const NO_STEP: u64 = u64::MAX;

/// How a write path wants its datasets made (the structure is the same for every path).
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Datasets are created holding each stream's expected frames, instead of none (then
    /// they grow with every frame). MPI ranks writing whole frames independently need it:
    /// growing a dataset is a collective call, which an independent write cannot make.
    pub full_length: bool,
    /// Chunk space is allocated when a dataset is created or grown, not when a frame first
    /// reaches a chunk: parallel HDF5 allocates collectively, so writes must find it there.
    pub early_allocation: bool,
    /// The filters of the field datasets.
    pub compression: Compression,
    /// Uncompressed fields stored as raw chunks under a deflate filter that only the fill
    /// chunks made at `begin` go through (`direct`'s `Coding::Raw`, see `preallocate`).
    pub raw_chunks: bool,
    /// Chunk shape of each field's dataset, `[chunk_frames, *part]` (`format::chunk_shape`).
    pub chunks: Vec<Vec<usize>>,
    /// Streams of an appended-to file that continue in place (from their kept frames, or
    /// from frame 0 instead of being deleted): they are laid out whole already
    /// ([`laid_out_whole`]), so only their `steps` entries from the kept frames on are
    /// marked [`NO_STEP`], and the file's metadata does not change (see `preallocate`).
    pub in_place: Vec<String>,
    /// Each stream's `frames` attribute exists from `begin` on and counts every frame as
    /// its step is stored ([`store_step`]). Without it (the MPI sinks: an attribute write is
    /// collective, a rank's frame write is not) a stream has no `frames` until `finish`
    /// writes it, so a killed job's file never claims fewer frames than its steps hold. The
    /// price: `finish` then adds an attribute to each stream's header instead of overwriting
    /// one in place, so a kill inside the MPI sinks' collective close (which already
    /// rewrites the extents of streams that fell short) can damage those headers, as a kill
    /// inside a serial file's `finish` could before its attributes were made at `begin`.
    pub counts_frames: bool,
}

/// Whether [`create`] appending `layout` to `file` changes none of its metadata: every stream
/// of the layout continues `in_place` ([`laid_out_whole`]), the run's attributes already hold
/// their values and the file says it is not complete. Any other append changes the file's
/// structure, which `sink` then does on a copy (see `copy`).
pub(crate) fn appends_in_place(file: &File, layout: &StreamLayout, in_place: &[String]) -> bool {
    // A stream made before `frames` was made with it (older versions) would have `finish`
    // create it in place: such a file continues on a copy (`continue_stream` makes it there).
    let stream_attrs_hold = |s: &StreamInfo| {
        file.group(&s.name).is_ok_and(|g| {
            s.attributes.iter().all(|(k, v)| super::format::holds(&g, k, v)) && g.attr(FRAMES_ATTR).is_ok()
        })
    };
    layout.streams.iter().all(|s| in_place.contains(&s.name) && stream_attrs_hold(s))
        && layout.attributes.iter().all(|(k, v)| super::format::holds(file, k, v))
        && super::format::holds_bool(file, "complete", false)
}

/// How an uncompressed output is laid out whole: the chunk shape of each field, and whether
/// its chunks are raw under a fill-carrying filter ([`Plan::raw_chunks`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaidOut<'a> {
    pub chunks: &'a [Vec<usize>],
    pub raw_chunks: bool,
}

/// The filters of an uncompressed field dataset: none, or with raw chunks the deflate that
/// only its fill chunks go through (level 1: the fill chunks of a frame cost a few bytes).
fn carrier(raw_chunks: bool) -> Vec<Filter> {
    if raw_chunks { vec![Filter::Deflate(1)] } else { Vec::new() }
}

/// Whether stream `s` is in `file` laid out whole as `plan_of` lays it out: every field's
/// dataset and `steps` hold its expected frames, the fields chunked as it says, unfiltered
/// (or under the raw chunks' carrier) and allocated early, `steps` filled with [`NO_STEP`].
/// Only then can it continue in place: its unwritten frames are space that exists, and a
/// step not written reads as the mark.
pub(crate) fn laid_out_whole(file: &File, layout: &StreamLayout, s: &StreamInfo, plan_of: &LaidOut<'_>) -> bool {
    let LaidOut { chunks, raw_chunks } = *plan_of;
    let Some(expected) = s.expected_frames.and_then(|e| usize::try_from(e).ok()) else { return false };
    let Ok(group) = file.group(&s.name) else { return false };
    let steps = group.dataset(STEPS_NAME).is_ok_and(|d| d.shape() == [expected] && marks_unwritten(&d));
    steps
        && layout.fields.iter().zip(chunks).all(|(f, chunk)| {
            group.dataset(&f.name).is_ok_and(|d| {
                let shape = d.shape();
                shape.first() == Some(&expected)
                    && shape[1..] == f.shape[..]
                    && d.chunk().as_deref() == Some(&chunk[..])
                    && d.filters() == carrier(raw_chunks)
                    && d.dcpl().is_ok_and(|p| p.alloc_time() == AllocTime::Early)
            })
        })
}

/// Whether a `steps` dataset reads [`NO_STEP`] where nothing was written (its fill value),
/// as every one made since the mark exists; older files filled them with 0.
fn marks_unwritten(steps: &Dataset) -> bool {
    steps.dcpl().is_ok_and(|p| p.fill_value_as::<u64>() == Some(NO_STEP))
}

/// The datasets of one stream.
#[derive(Debug)]
pub(crate) struct StreamSets {
    pub group: Group,
    /// One per field, in layout order.
    pub fields: Vec<Dataset>,
    pub steps: Dataset,
}

/// Writes the run's structure into `file` (at `path`, for errors): a new file gets the root
/// attributes; appending (`existing`), the incomplete streams to rewrite are deleted and the
/// new ones numbered after those kept. Then the layout's attributes, `complete = false`, and
/// every stream of `layout` ([`create_stream`]). `created` is the creation time.
pub(crate) fn create(
    file: &File,
    path: &Path,
    layout: &StreamLayout,
    existing: Option<&Existing>,
    created: &str,
    plan: &Plan,
) -> Result<Vec<StreamSets>> {
    let err = |what: String| move |e: hdf5::Error| h5err(what, path, e);
    let root: &Location = file;
    let mut first_index = 0;
    match existing {
        None => {
            for (k, v) in [
                ("format", AttrValue::from(FORMAT)),
                ("created", created.into()),
                ("wgpipe_storage_version", env!("CARGO_PKG_VERSION").into()),
                (AXIS_ORDER_ATTR, AXIS_ORDER.into()),
            ] {
                set_attr(root, k, &v).map_err(err(format!("cannot write attribute {k:?} to")))?;
            }
            let names: Vec<String> = layout.fields.iter().map(|f| f.name.clone()).collect();
            set_strings(root, FIELDS_ATTR, &names).map_err(err("cannot write attribute \"fields\" to".into()))?;
        }
        Some(existing) => {
            for name in existing.replace.iter().filter(|n| !plan.in_place.contains(n)) {
                file.unlink(name).map_err(err(format!("cannot delete incomplete stream {name:?} of")))?;
            }
            let groups = file.groups().map_err(err("cannot list groups of".into()))?;
            let last = groups.iter().filter_map(|g| super::read::u64_attr(g, "stream_index")).max();
            first_index = last.map_or(0, |n| n + 1);
        }
    }
    for (k, v) in &layout.attributes {
        set_attr(root, k, v).map_err(err(format!("cannot write attribute {k:?} to")))?;
    }
    set_bool(root, "complete", false).map_err(err("cannot write attribute \"complete\" to".into()))?;
    let dims = crate::dimensions::Dimensions::of(layout);
    let continued =
        |s: &StreamInfo| existing.is_some_and(|e| e.continued.contains(&s.name)) || plan.in_place.contains(&s.name);
    let mut next_index = first_index;
    layout
        .streams
        .iter()
        .map(|s| {
            if continued(s) {
                return continue_stream(file, layout, s, plan)
                    .map_err(err(format!("cannot cut stream {:?} to its {} kept frames in", s.name, s.kept_frames)));
            }
            next_index += 1;
            create_stream(file, layout, s, next_index - 1, &dims, plan)
                .map_err(err(format!("cannot create stream {:?} in", s.name)))
        })
        .collect()
}

/// Opens the existing stream `s` of an appended-to file and cuts its datasets to its kept
/// frames ([`StreamInfo::kept_frames`]): the frames after them are gone before a new one is
/// written, so none is ever stored twice. A plan of `full_length` datasets (the MPI batch
/// sink's) then grows them back to the expected frames, the steps of the new ones
/// [`NO_STEP`].
fn continue_stream(file: &File, layout: &StreamLayout, s: &StreamInfo, plan: &Plan) -> hdf5::Result<StreamSets> {
    let sets = open_stream(file, layout, &s.name)?;
    let kept = usize::try_from(s.kept_frames).map_err(|_| format!("{} frames do not fit this host", s.kept_frames))?;
    // A stream of an older version has no `frames`: made now, so that `finish` overwrites it
    // in place as it does a new stream's. (Such a file is continued on a copy:
    // `appends_in_place`.) Where frames are not counted as they come, the count of the run
    // that wrote the kept frames goes until `finish`: it would claim fewer than are there.
    let counted = sets.group.attr(FRAMES_ATTR).is_ok();
    if plan.counts_frames && !counted {
        set_attr(&sets.group, FRAMES_ATTR, &AttrValue::from(0u64))?;
    } else if !plan.counts_frames && counted {
        sets.group.delete_attr(FRAMES_ATTR)?;
    }
    if plan.in_place.contains(&s.name) {
        // The frames after the kept ones are taken out by their steps, in place; a stream
        // restarted from frame 0 takes this run's attributes (no change when they hold).
        let len = sets.steps.size();
        if kept < len {
            let marks = vec![NO_STEP; len - kept];
            sets.steps.write_slice(ArrayView1::from(&marks[..]), kept..len)?;
        }
        for (k, v) in &s.attributes {
            set_attr(&sets.group, k, v).map_err(|e| format!("attribute {k:?}: {e}"))?;
        }
        return Ok(sets);
    }
    resize(&sets, layout, kept)?;
    // Grown back to full length only where unwritten steps read as the mark (a file of an
    // older version keeps growing frame by frame: its steps would read 0).
    if plan.full_length && marks_unwritten(&sets.steps) {
        let expected = s.capacity().unwrap_or(s.kept_frames);
        resize(
            &sets,
            layout,
            usize::try_from(expected).map_err(|_| format!("{expected} frames do not fit this host"))?,
        )?;
    }
    Ok(sets)
}

/// Opens the group of the stream `name` with its datasets: one per field of `layout`, and
/// `steps`.
pub(crate) fn open_stream(file: &File, layout: &StreamLayout, name: &str) -> hdf5::Result<StreamSets> {
    let group = file.group(name)?;
    let fields = layout.fields.iter().map(|f| group.dataset(&f.name)).collect::<hdf5::Result<Vec<_>>>()?;
    let steps = group.dataset(STEPS_NAME)?;
    Ok(StreamSets { group, fields, steps })
}

/// A stream group's frame count: made with the group (0), counted with every frame's step
/// ([`store_step`]) and written by `finish` (only then where the plan does not count frames:
/// [`Plan::counts_frames`]).
const FRAMES_ATTR: &str = "frames";

/// Creates the group of stream `s` (numbered `index` in the file): its attributes, a dataset
/// per field, `steps`, and the netCDF-4 dimensions. The one place stream groups are made.
fn create_stream(
    file: &File,
    layout: &StreamLayout,
    s: &StreamInfo,
    index: u64,
    dims: &crate::dimensions::Dimensions,
    plan: &Plan,
) -> hdf5::Result<StreamSets> {
    let group = file.create_group(&s.name)?;
    let mut attrs = s.attributes.clone();
    attrs.insert("stream_index".into(), AttrValue::from(index));
    if let Some(e) = s.expected_frames {
        attrs.insert("expected_frames".into(), AttrValue::from(e));
    }
    for (k, v) in &attrs {
        set_attr(&group, k, v).map_err(|e| format!("attribute {k:?}: {e}"))?;
    }
    // Both made now, so that `finish` overwrites them in place ([`mark_complete`]); `frames`
    // only where frames are counted as they come ([`Plan::counts_frames`]).
    if plan.counts_frames {
        set_attr(&group, FRAMES_ATTR, &AttrValue::from(0u64))?;
    }
    set_bool(&group, "complete", false)?;
    let frames = if plan.full_length { s.capacity().unwrap_or(0) } else { 0 };
    let frames = usize::try_from(frames).map_err(|_| format!("{frames} frames do not fit this host"))?;
    let fields = layout
        .fields
        .iter()
        .zip(&plan.chunks)
        .map(|(f, chunk)| {
            create_field(&group, f, chunk, frames, plan)
                .map_err(|e| hdf5::Error::from(format!("dataset {}: {e}", f.name)))
        })
        .collect::<hdf5::Result<Vec<Dataset>>>()?;
    // An entry never written reads as NO_STEP, which tells a reader of a killed run's file
    // which frames are not there: those allocated ahead of their frames (`early_allocation`,
    // the MPI sinks), and a frame whose datasets had grown when the kill came, before its
    // step was written (the serial sink writes the step last).
    let mut steps =
        group.new_dataset::<u64>().chunk(STEPS_CHUNK).shape(frames..).fill_time(FillTime::Alloc).fill_value(NO_STEP);
    if plan.early_allocation {
        steps = steps.alloc_time(Some(AllocTime::Early));
    }
    let steps = steps.create(STEPS_NAME)?;
    steps.new_attr::<u64>().create(FILL_VALUE_ATTR)?.write_scalar(&NO_STEP)?;
    super::netcdf::describe_stream(&group, layout, dims, &fields, &steps)
        .map_err(|e| format!("netCDF-4 dimensions: {e}"))?;
    Ok(StreamSets { group, fields, steps })
}

/// Attribute of a field dataset whose chunks were encoded before the sink: `zfp:rate=R`.
pub(crate) const ENCODING_ATTR: &str = "wgpipe_encoding";

/// HDF5's registered id of the H5Z-ZFP filter plugin.
pub(crate) const ZFP_FILTER: hdf5_sys::h5z::H5Z_filter_t = 32013;

/// H5Z-ZFP's parameters for fixed-accuracy mode with absolute error `bound`: what its
/// `H5Pset_zfp_accuracy_cdata` macro writes, mode 3 then the bound's native bytes in the
/// third and fourth values (it stores a `double` over them).
fn zfp_accuracy(bound: f64) -> [std::ffi::c_uint; 4] {
    let b = bound.to_ne_bytes();
    let word = |i: usize| std::ffi::c_uint::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    [3, 0, word(0), word(4)]
}

/// H5Z-ZFP's parameters for fixed-rate mode at `rate` bits per value: what its
/// `H5Pset_zfp_rate_cdata` macro writes, mode 1 then the rate as a `double` over the third
/// and fourth values.
pub(crate) fn zfp_rate(rate: crate::ZfpRate) -> [std::ffi::c_uint; 4] {
    let [_, _, a, b] = zfp_accuracy(f64::from(rate.bits()));
    [1, 0, a, b]
}

/// Creates field `f`'s dataset in `group`: `frames` frames (resizable along the frame axis),
/// chunked as `chunk`, filtered as `plan` says, with its `dims` attribute.
fn create_field(group: &Group, f: &FieldSpec, chunk: &[usize], frames: usize, plan: &Plan) -> hdf5::Result<Dataset> {
    let extents: Vec<Extent> =
        std::iter::once(Extent::from(frames..)).chain(f.shape.iter().map(|&d| Extent::from(d))).collect();
    let b = with_elem_type!(f.dtype, T => unwritten_reads::<T>(group.new_dataset::<T>().chunk(chunk.to_vec()).shape(extents)));
    // Early: no fill written (unfiltered chunks stay holes, filtered ones get their fill
    // chunk anyway). Growing: a chunk's frames not written yet read as the fill value.
    let mut b = if plan.early_allocation {
        b.fill_time(FillTime::Never).alloc_time(Some(AllocTime::Early))
    } else {
        b.fill_time(FillTime::IfSet)
    };
    b = match (f.encoding, plan.compression) {
        // Its chunks arrive coded for this filter (`direct`), whatever the others use.
        (Encoding::Zfp(rate), _) => b.add_filter(ZFP_FILTER, &zfp_rate(rate)),
        (_, Compression::None) if plan.raw_chunks => b.deflate(1),
        (_, compression) => with_compression(b, f, compression),
    };
    let ds = b.create(f.name.as_str())?;
    with_elem_type!(f.dtype, T => mark_unwritten::<T>(&ds))?;
    let dims: Vec<String> = std::iter::once(FRAME_DIM.to_owned()).chain(f.dims.iter().cloned()).collect();
    set_strings(&ds, DIMS_ATTR, &dims)?;
    if let Encoding::Zfp(rate) = f.encoding {
        // What its chunks were made from (`read.rs`: an append must bring the same).
        set_attr(&ds, ENCODING_ATTR, &AttrValue::Text(format!("zfp:rate={rate}")))?;
    }
    Ok(ds)
}

/// CF's and netCDF's attribute naming the value that stands for "no data" (xarray masks it).
const FILL_VALUE_ATTR: &str = "_FillValue";

/// What an element of a frame that was never written reads as, so that readers see such
/// frames as missing (xarray masks them as NaN through `_FillValue`): NaN for floats, and
/// netCDF's default fill value for the integers that have one nobody stores (a count of
/// 2^32 − 1). Bytes have none: every byte value is data (masks, images), and netCDF readers
/// do not mask bytes by default either.
trait Unwritten: hdf5::H5Type + Copy {
    const VALUE: Option<Self>;
}

impl Unwritten for u8 {
    const VALUE: Option<u8> = None;
}
impl Unwritten for u16 {
    const VALUE: Option<u16> = Some(u16::MAX);
}
impl Unwritten for u32 {
    const VALUE: Option<u32> = Some(u32::MAX);
}
impl Unwritten for i32 {
    const VALUE: Option<i32> = Some(-i32::MAX);
}
impl Unwritten for half::f16 {
    const VALUE: Option<half::f16> = Some(half::f16::NAN);
}
impl Unwritten for f32 {
    const VALUE: Option<f32> = Some(f32::NAN);
}
impl Unwritten for f64 {
    const VALUE: Option<f64> = Some(f64::NAN);
}

/// `b` with [`Unwritten`]'s fill value for `T`.
fn unwritten_reads<T: Unwritten>(b: DatasetBuilderEmptyShape) -> DatasetBuilderEmptyShape {
    match T::VALUE {
        Some(v) => b.fill_value(v),
        None => b,
    }
}

/// Gives `ds` the `_FillValue` attribute of its fill value ([`Unwritten`]), of its own type
/// as netCDF requires.
fn mark_unwritten<T: Unwritten>(ds: &Dataset) -> hdf5::Result<()> {
    match T::VALUE {
        Some(v) => ds.new_attr::<T>().create(FILL_VALUE_ATTR)?.write_scalar(&v),
        None => Ok(()),
    }
}

/// `b` with the filters of `compression` for field `f`.
fn with_compression(b: DatasetBuilderEmptyShape, f: &FieldSpec, compression: Compression) -> DatasetBuilderEmptyShape {
    match compression {
        Compression::None => b,
        Compression::Deflate(level) => b.shuffle().deflate(level),
        #[cfg(feature = "blosc")]
        Compression::BloscLz4(level) => b.blosc_lz4(level, hdf5::filters::BloscShuffle::Byte),
        #[cfg(feature = "blosc")]
        Compression::BloscZstd(level) => b.blosc_zstd(level, hdf5::filters::BloscShuffle::Byte),
        // Refused before any file exists (`Compression::check_available`).
        #[cfg(not(feature = "blosc"))]
        Compression::BloscLz4(_) | Compression::BloscZstd(_) => b,
        // Refused when the sink is opened (`open.rs`): zstd is Zarr's.
        Compression::Zstd(_) => b,
        // ZFP compresses floats; other element types are stored as they are.
        Compression::Zfp(tolerance) if matches!(f.dtype, DType::F32 | DType::F64) => {
            b.add_filter(ZFP_FILTER, &zfp_accuracy(tolerance.get()))
        }
        Compression::ZfpRate(rate) if matches!(f.dtype, DType::F32 | DType::F64) => {
            b.add_filter(ZFP_FILTER, &zfp_rate(rate))
        }
        Compression::Zfp(_) | Compression::ZfpRate(_) => b,
    }
}

/// Chunks one frame of a field touches, and the bytes of one chunk.
pub(crate) fn chunk_row(spec: &FieldSpec, chunk: &[usize]) -> (usize, usize) {
    let per_frame = spec.shape.iter().zip(&chunk[1..]).map(|(&d, &c)| d.div_ceil(c)).product();
    (per_frame, chunk.iter().product::<usize>() * spec.dtype.size())
}

/// Sets a stream's field and step datasets to `frames` frames (under MPI: collective, every
/// rank the same `frames`).
pub(crate) fn resize(sets: &StreamSets, layout: &StreamLayout, frames: usize) -> hdf5::Result<()> {
    for (ds, spec) in sets.fields.iter().zip(&layout.fields) {
        let (dims, rank) = with_frames(frames, &spec.shape);
        ds.resize(&dims[..rank])?;
    }
    sets.steps.resize(frames)
}

/// Writes the step of frame `n`, the stream's last stored, and counts it in the stream's
/// `frames` (an attribute that exists since `begin`, overwritten in place): a killed run's
/// file says how many frames it holds, as a finished one does. The two reach the file in
/// the same flush, after the frame's fields, so `frames` never counts fewer frames than the
/// steps vouch for, nor a frame whose fields are not in the file.
pub(crate) fn store_step(sets: &StreamSets, n: usize, step: u64) -> hdf5::Result<()> {
    write_step(sets, n, step)?;
    sets.group.attr(FRAMES_ATTR)?.write_scalar(&(n as u64 + 1))
}

/// Writes the step of frame `n` of a stream whose `steps` holds at least `n + 1` entries.
pub(crate) fn write_step(sets: &StreamSets, n: usize, step: u64) -> hdf5::Result<()> {
    sets.steps.write_slice(ArrayView1::from(&[step][..]), n..n + 1)
}

/// Writes the end of a run: each stream's `frames` and `complete` (as `outcome` defines it:
/// its frames are its expected ones and nothing failed), then the file's `complete`, true
/// when every stream is, those an append kept too (`others_complete`). All of them exist
/// since the stream's or the file's creation and are overwritten in place (`set_attr`), so a
/// kill in the flush that follows cannot leave a header pointing at a chunk never written.
/// With `swmr` the attributes made before SWMR started are overwritten (see `swmr`).
pub(crate) fn mark_complete(
    file: &File,
    streams: &[StreamSets],
    outcome: &Outcome<'_>,
    others_complete: bool,
    swmr: bool,
) -> hdf5::Result<()> {
    for (i, (sets, &n)) in streams.iter().zip(outcome.frames()).enumerate() {
        let complete = outcome.stream_complete(i, n);
        if swmr {
            super::swmr::overwrite(&sets.group, n, complete)?;
        } else {
            set_attr(&sets.group, FRAMES_ATTR, &AttrValue::from(n))?;
            set_bool(&sets.group, "complete", complete)?;
        }
    }
    let complete = outcome.complete() && others_complete;
    if swmr { super::swmr::overwrite_complete(file, complete) } else { set_bool(file, "complete", complete) }
}
