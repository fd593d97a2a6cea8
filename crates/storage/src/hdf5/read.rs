//! The HDF5 half of [`crate::open_output`]: a file written by [`crate::Hdf5Sink`].

use std::path::{Path, PathBuf};

use hdf5::types::{FloatSize, TypeDescriptor, VarLenAscii, VarLenUnicode};
use hdf5::{Attribute, Dataset, File, H5Type, Hyperslab, Location, SliceOrIndex};
use ndarray::IxDyn;

use super::format::{
    AXIS_ORDER_ATTR, DIMS_ATTR, FIELDS_ATTR, FORMAT, FRAME_DIM, dtype_of, h5err, has_signature, to_le_bytes,
    with_elem_type,
};
use super::schema::NO_STEP;
use crate::error::{Error, Result};
use crate::read::{Output, OutputFormat, Reader, StreamSummary};
use crate::schema::{AXIS_ORDER, AttrValue, Attributes, FieldSpec, MAX_RANK};
use crate::validate::{RESERVED_RUN_ATTRS, RESERVED_STREAM_ATTRS, STEPS_NAME};
use crate::zfp::{Encoding, ZfpRate};

/// An open HDF5 output.
#[derive(Debug)]
struct Hdf5Reader {
    path: PathBuf,
    _file: File,
    /// The fields, for their element types and ranks.
    fields: Vec<FieldSpec>,
    /// Per stream: field datasets (layout order) and steps.
    sets: Vec<(Vec<Dataset>, Dataset)>,
    /// Per field: how its chunks were made (the first stream's `wgpipe_encoding` attribute).
    encodings: Vec<Encoding>,
}

/// A 1-D string array attribute.
fn strings_attr(loc: &Location, name: &str) -> hdf5::Result<Vec<String>> {
    Ok(loc.attr(name)?.read_raw::<VarLenUnicode>()?.iter().map(|s| s.as_str().to_owned()).collect())
}

/// The field a dataset holds: element type and frame shape from the dataset itself, axis
/// names from its `dims` attribute (absent in files of wgpipe-storage before 0.2: then the
/// defaults by rank).
fn field_spec(ds: &Dataset, name: &str) -> std::result::Result<FieldSpec, String> {
    let shape = ds.shape();
    let desc = ds.dtype().and_then(|t| t.to_descriptor()).map_err(|e| e.to_string())?;
    let dtype = dtype_of(&desc).ok_or_else(|| format!("holds {desc}, not a type wgpipe writes"))?;
    if !(1..=MAX_RANK + 1).contains(&shape.len()) || shape[1..].contains(&0) {
        return Err(format!("has shape {shape:?}: expected [frames, *shape] with 0 to {MAX_RANK} non-empty axes"));
    }
    let mut spec = FieldSpec::new(name, dtype, shape[1..].to_vec());
    let text = |attr: &str| match ds.attr(attr).ok().and_then(|a| attr_value(&a)) {
        Some(AttrValue::Text(t)) => Some(t),
        _ => None,
    };
    spec.units = text("units");
    spec.long_name = text("long_name");
    if let Ok(dims) = strings_attr(ds, DIMS_ATTR) {
        match dims.split_first() {
            Some((frame, rest)) if frame == FRAME_DIM && rest.len() == spec.shape.len() => spec.dims = rest.to_vec(),
            _ => return Err(format!("has attribute dims = {dims:?}, which does not fit its shape {shape:?}")),
        }
    }
    Ok(spec)
}

/// A scalar attribute as an [`AttrValue`]; `None` for kinds wgpipe does not write.
fn attr_value(a: &Attribute) -> Option<AttrValue> {
    if !a.is_scalar() {
        return None;
    }
    match a.dtype().ok()?.to_descriptor().ok()? {
        TypeDescriptor::Integer(_) => a.read_scalar::<i64>().ok().map(AttrValue::Int),
        TypeDescriptor::Unsigned(_) => a.read_scalar::<u64>().ok().map(AttrValue::from),
        TypeDescriptor::Boolean => a.read_scalar::<bool>().ok().map(|b| AttrValue::Int(b.into())),
        TypeDescriptor::Float(FloatSize::U4) => a.read_scalar::<f32>().ok().map(AttrValue::Float32),
        TypeDescriptor::Float(_) => a.read_scalar::<f64>().ok().map(AttrValue::Float),
        TypeDescriptor::VarLenUnicode => {
            a.read_scalar::<VarLenUnicode>().ok().map(|s| AttrValue::Text(s.as_str().to_owned()))
        }
        TypeDescriptor::VarLenAscii => {
            a.read_scalar::<VarLenAscii>().ok().map(|s| AttrValue::Text(s.as_str().to_owned()))
        }
        _ => None,
    }
}

/// Every readable scalar attribute of `loc` except the `reserved` ones.
fn user_attrs(loc: &Location, reserved: &[&str]) -> hdf5::Result<Attributes> {
    let mut out = Attributes::new();
    for name in loc.attr_names()? {
        if reserved.contains(&name.as_str()) {
            continue;
        }
        if let Some(v) = attr_value(&loc.attr(&name)?) {
            out.insert(name, v);
        }
    }
    Ok(out)
}

/// A boolean attribute, `false` when absent.
fn bool_attr(loc: &Location, name: &str) -> bool {
    loc.attr(name).ok().and_then(|a| attr_value(&a)).is_some_and(|v| v == AttrValue::Int(1))
}

/// An integer attribute, `None` when absent or negative.
pub(crate) fn u64_attr(loc: &Location, name: &str) -> Option<u64> {
    match loc.attr(name).ok().and_then(|a| attr_value(&a)) {
        Some(AttrValue::Int(i)) => u64::try_from(i).ok(),
        Some(AttrValue::UInt(u)) => Some(u),
        _ => None,
    }
}

/// Frames of an incomplete stream whose `steps` holds `len` entries: those before the first
/// entry that reads [`NO_STEP`], which marks a frame not stored whole: never written, where
/// `steps` was allocated ahead of its frames (the MPI sinks' datasets; a killed job leaves
/// them full length), or taken back after its write failed (the serial sink's roll-back,
/// should HDF5 refuse to shrink the datasets). When the steps do not read (a serial file
/// killed while it grew them: reading the frame's step then fails, as before), all `len`:
/// opening the output must not depend on them.
fn frames_written(steps: &Dataset, len: u64) -> u64 {
    if len == 0 {
        return len;
    }
    match steps.read_slice_1d::<u64, _>(0..len as usize) {
        Ok(values) => values.iter().position(|&s| s == NO_STEP).map_or(len, |p| p as u64),
        Err(_) => len,
    }
}

/// Opens the HDF5 output `path`.
pub(crate) fn open(path: &Path) -> Result<Output> {
    Hdf5Reader::open(path)
}

impl Hdf5Reader {
    fn open(path: &Path) -> Result<Output> {
        let err = |what: &'static str| move |e: hdf5::Error| h5err(what, path, e);
        if !has_signature(path) {
            return Err(bad_output(path, "neither a raw output directory nor an HDF5 file".into()));
        }
        let file = open_file(path)?;
        let root: &Location = &file;
        check_root(root, path)?;
        let names = strings_attr(root, FIELDS_ATTR).map_err(err("cannot read attribute \"fields\" of"))?;
        let attributes = user_attrs(root, RESERVED_RUN_ATTRS).map_err(err("cannot read attributes of"))?;
        let complete = bool_attr(root, "complete");
        let mut groups = file.groups().map_err(err("cannot list groups of"))?;
        groups.sort_by_key(|g| u64_attr(g, "stream_index").unwrap_or(u64::MAX));
        let mut fields: Vec<FieldSpec> = Vec::new();
        let mut streams = Vec::new();
        let mut sets = Vec::new();
        for g in groups {
            let (stream, datasets) = read_stream(&g, &names, &mut fields, path)?;
            streams.push(stream);
            sets.push(datasets);
        }
        if fields.len() != names.len() {
            return Err(bad_output(path, "no stream groups: the file holds no frames and no field shapes".into()));
        }
        let encodings = sets.first().map_or_else(Vec::new, |(datasets, _)| datasets.iter().map(encoding_of).collect());
        Ok(Output {
            path: path.to_path_buf(),
            format: OutputFormat::Hdf5,
            fields: fields.clone(),
            attributes,
            complete,
            streams,
            reader: Box::new(Hdf5Reader { path: path.to_path_buf(), _file: file, fields, sets, encodings }),
        })
    }
}

/// The error of an output at `path` that is not what wgpipe writes, for `reason`.
fn bad_output(path: &Path, reason: String) -> Error {
    Error::BadOutput { path: path.to_path_buf(), reason }
}

/// How many times an SWMR reader reads a metadata block whose checksum fails before it gives
/// up. HDF5 sleeps between attempts, 1 ns doubling each time, and its default for SWMR
/// readers is 100 attempts: a block a killed writer left unfinished then holds the reader
/// for ever (2^40 ns alone is 18 minutes: `kill_stress ... swmr` hung CI that way). 24
/// attempts wait 17 ms in all, far longer than a live writer takes to finish a block.
const SWMR_READ_ATTEMPTS: u32 = 24;

/// Opens the HDF5 file `path` to read it, waiting while another process holds its lock.
///
/// A file an SWMR writer has open, or left so when it was killed (the superblock's status
/// flags stay set), opens only as an SWMR reader: reading it needs no more. Such a reader
/// reads a metadata block whose checksum fails again, [`SWMR_READ_ATTEMPTS`] times.
fn open_file(path: &Path) -> Result<File> {
    let file = super::cloexec::retry_while_locked(|| File::open(path))
        .or_else(|e| match e.to_string().contains("already open for write") {
            true => File::with_options()
                .with_fapl(|p| p.metadata_read_attempts(SWMR_READ_ATTEMPTS))
                .open_as(path, hdf5::file::OpenMode::ReadSWMR),
            false => Err(e),
        })
        .map_err(|e| h5err("cannot open HDF5 file", path, e))?;
    super::cloexec::close_on_exec(path)?;
    Ok(file)
}

/// Errors unless the root of the file `path` says it is a wgpipe output in C axis order.
fn check_root(root: &Location, path: &Path) -> Result<()> {
    match root.attr("format").ok().and_then(|a| attr_value(&a)) {
        Some(AttrValue::Text(f)) if f == FORMAT => {}
        _ => return Err(bad_output(path, format!("no root attribute format = {FORMAT:?}"))),
    }
    match root.attr(AXIS_ORDER_ATTR).ok().and_then(|a| attr_value(&a)) {
        None => Ok(()), // files of wgpipe-storage before 0.2, which wrote C order too
        Some(AttrValue::Text(o)) if o == AXIS_ORDER => Ok(()),
        Some(other) => Err(bad_output(path, format!("axis_order is {other:?}; wgpipe writes {AXIS_ORDER:?} only"))),
    }
}

/// The stream of group `g`: its summary, and its datasets of the fields `names` (layout
/// order) and steps. The first stream read sets `fields`; every later one must hold the same.
fn read_stream(
    g: &hdf5::Group,
    names: &[String],
    fields: &mut Vec<FieldSpec>,
    path: &Path,
) -> Result<(StreamSummary, (Vec<Dataset>, Dataset))> {
    let name = g.name().trim_start_matches('/').to_owned();
    let mut frames = u64::MAX;
    let mut datasets = Vec::new();
    for (i, f) in names.iter().enumerate() {
        let ds = g.dataset(f).map_err(|e| h5err(format!("cannot open dataset {name}/{f} in"), path, e))?;
        let spec = field_spec(&ds, f).map_err(|e| bad_output(path, format!("dataset {name}/{f} {e}")))?;
        match fields.get(i) {
            None => fields.push(spec),
            Some(first) if *first == spec => {}
            Some(first) => {
                return Err(bad_output(
                    path,
                    format!(
                        "dataset {name}/{f} holds {}, the first stream's holds {}",
                        spec.describe(),
                        first.describe()
                    ),
                ));
            }
        }
        frames = frames.min(ds.shape()[0] as u64);
        datasets.push(ds);
    }
    let steps = g.dataset(STEPS_NAME).map_err(|e| h5err(format!("cannot open dataset {name}/steps in"), path, e))?;
    frames = frames.min(steps.size() as u64);
    let complete = bool_attr(g, "complete");
    if !complete {
        frames = frames_written(&steps, frames);
    }
    let stream = StreamSummary {
        attributes: user_attrs(g, RESERVED_STREAM_ATTRS).map_err(|e| h5err("cannot read attributes of", path, e))?,
        expected_frames: u64_attr(g, "expected_frames"),
        complete,
        frames,
        name,
    };
    Ok((stream, (datasets, steps)))
}

/// Frame `i` of a field dataset of rank `rank` (frame axis excluded), as little-endian bytes.
fn read_frame_of<T: H5Type + bytemuck::Pod>(ds: &Dataset, rank: usize, i: usize) -> hdf5::Result<Vec<u8>> {
    let slab: Vec<SliceOrIndex> =
        std::iter::once(SliceOrIndex::from(i..i + 1)).chain((0..rank).map(|_| SliceOrIndex::from(..))).collect();
    let arr = ds.read_slice::<T, _, IxDyn>(Hyperslab::from(slab))?;
    let values = arr.as_slice().ok_or("the library returned a frame not in C order")?;
    Ok(to_le_bytes(values))
}

/// How a field dataset's chunks were made: `wgpipe_encoding = "zfp:rate=R"` for a stream
/// encoded before the sink, else its values (whatever filter HDF5 ran).
fn encoding_of(ds: &Dataset) -> Encoding {
    let rate = match ds.attr(super::schema::ENCODING_ATTR).ok().and_then(|a| attr_value(&a)) {
        Some(AttrValue::Text(t)) => t.strip_prefix("zfp:rate=").and_then(|r| r.parse::<u32>().ok()),
        _ => None,
    };
    rate.and_then(|r| ZfpRate::new(r).ok()).map_or(Encoding::Values, Encoding::Zfp)
}

impl Reader for Hdf5Reader {
    fn stored_encoding(&self, field: usize) -> Encoding {
        self.encodings.get(field).copied().unwrap_or_default()
    }

    fn read_field(&self, stream: usize, field: usize, index: u64) -> Result<Vec<u8>> {
        let spec = &self.fields[field];
        let ds = &self.sets[stream].0[field];
        let i = usize::try_from(index).unwrap_or(usize::MAX);
        with_elem_type!(spec.dtype, T => read_frame_of::<T>(ds, spec.shape.len(), i))
            .map_err(|e| h5err(format!("cannot read frame {index} of field {:?} from", spec.name), &self.path, e))
    }

    fn steps(&self, stream: usize, frames: u64) -> Result<Vec<u64>> {
        if frames == 0 {
            return Ok(Vec::new());
        }
        let arr = self.sets[stream]
            .1
            .read_slice_1d::<u64, _>(0..frames as usize)
            .map_err(|e| h5err("cannot read steps from", &self.path, e))?;
        Ok(arr.to_vec())
    }
}
