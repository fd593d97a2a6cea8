//! What makes an HDF5 file a wgpipe output: its marker, attribute writing, how element types
//! map to HDF5 types, how frames are cut into chunks, error wrapping.
//!
//! Shared by the sink and the reader so the two cannot drift apart.

use std::path::Path;

use hdf5::types::{FloatSize, IntSize, TypeDescriptor, VarLenUnicode};
use hdf5::{Dataset, H5Type, Hyperslab, Location, SliceOrIndex};
use ndarray::{ArrayView1, ArrayViewD, IxDyn};

use crate::error::Error;
use crate::frame::DType;
use crate::schema::{AttrValue, FieldSpec, MAX_RANK, StreamLayout};

/// Root attribute listing the field names in layout order.
pub(crate) const FIELDS_ATTR: &str = "fields";
/// Root attribute recording the axis order of every dataset ([`crate::schema::AXIS_ORDER`]).
pub(crate) const AXIS_ORDER_ATTR: &str = "axis_order";
/// Attribute of each field dataset naming its axes, the frame axis first.
pub(crate) const DIMS_ATTR: &str = "dims";
/// Name of the frame axis in [`DIMS_ATTR`].
pub(crate) const FRAME_DIM: &str = "frame";

/// Bytes a chunk aims at when one frame of a field is larger: readers and HDF5's chunk cache
/// work best with chunks of a few MiB, and a 1024 × 1024 `float32` frame is exactly one.
pub(crate) const TARGET_CHUNK_BYTES: u64 = 4 << 20;
/// HDF5's limits on one chunk: at most 2^32 - 1 elements and 4 GiB - 1 bytes.
const MAX_CHUNK_ELEMENTS: u64 = u32::MAX as u64;
const MAX_CHUNK_BYTES: u64 = u32::MAX as u64;

/// The first 8 bytes of every HDF5 file.
const SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// Whether `path` is a file that starts like an HDF5 file (checked before the library opens
/// it, so that a directory or another file gets a clear error).
pub(crate) fn has_signature(path: &Path) -> bool {
    use std::io::Read;
    let mut sig = [0u8; 8];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut sig)).is_ok_and(|()| &sig == SIGNATURE)
}

/// Value of the root `format` attribute, which marks a file as written by this sink.
pub(crate) const FORMAT: &str = "wgpipe-hdf5";

/// Wraps an HDF5 error with what was done to which file.
pub(crate) fn h5err(action: impl Into<String>, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Hdf5 { action: action.into(), path: path.to_path_buf(), message: e.to_string() }
}

/// Whether `loc`'s attribute `name` is already the scalar `set_attr` or `set_bool` would write
/// (type and value): then neither rewrites it, and a resumed output whose attributes are
/// unchanged gets no metadata change from them (see `preallocate`).
pub(crate) fn holds(loc: &Location, name: &str, value: &AttrValue) -> bool {
    let Ok(a) = loc.attr(name) else { return false };
    let Some(kind) = a.dtype().ok().and_then(|t| t.to_descriptor().ok()).filter(|_| a.is_scalar()) else {
        return false;
    };
    match (value, kind) {
        (AttrValue::Int(i), TypeDescriptor::Integer(IntSize::U8)) => a.read_scalar::<i64>().ok() == Some(*i),
        (AttrValue::UInt(u), TypeDescriptor::Unsigned(IntSize::U8)) => a.read_scalar::<u64>().ok() == Some(*u),
        (AttrValue::Float(f), TypeDescriptor::Float(FloatSize::U8)) => {
            a.read_scalar::<f64>().ok().map(f64::to_bits) == Some(f.to_bits())
        }
        (AttrValue::Float32(f), TypeDescriptor::Float(FloatSize::U4)) => {
            a.read_scalar::<f32>().ok().map(f32::to_bits) == Some(f.to_bits())
        }
        (AttrValue::Text(t), TypeDescriptor::VarLenUnicode) => {
            a.read_scalar::<VarLenUnicode>().is_ok_and(|s| s.as_str() == t.replace('\0', ""))
        }
        _ => false,
    }
}

/// Whether `loc`'s attribute `name` is already the boolean `value` (see [`holds`]).
pub(crate) fn holds_bool(loc: &Location, name: &str, value: bool) -> bool {
    loc.attr(name).is_ok_and(|a| {
        a.dtype().ok().and_then(|t| t.to_descriptor().ok()) == Some(TypeDescriptor::Boolean)
            && a.read_scalar::<bool>().ok() == Some(value)
    })
}

/// The type of `loc`'s scalar attribute `name`, if it has one.
fn scalar_type(loc: &Location, name: &str) -> Option<TypeDescriptor> {
    let a = loc.attr(name).ok().filter(|a| a.is_scalar())?;
    a.dtype().ok()?.to_descriptor().ok()
}

/// Writes (or replaces) one scalar attribute; one that already holds `value` is left alone.
///
/// A numeric attribute that exists with `value`'s type is overwritten in place: its message
/// keeps its size and place in the object header, so the flush that follows rewrites the
/// header where it is. Replacing it (delete, then create) may move messages into a new
/// header chunk, and a kill in that flush, between the chunk that points to the new one and
/// the new one, left a root group whose attributes HDF5 cannot read ("bad version number for
/// attribute message": the zeros of a chunk never written; the kill test, about once in 400
/// kills, at `finish` writing `complete`).
pub(crate) fn set_attr(loc: &Location, name: &str, value: &AttrValue) -> hdf5::Result<()> {
    if holds(loc, name, value) {
        return Ok(());
    }
    let in_place = match (value, scalar_type(loc, name)) {
        (AttrValue::Int(i), Some(TypeDescriptor::Integer(IntSize::U8))) => Some(loc.attr(name)?.write_scalar(i)),
        (AttrValue::UInt(u), Some(TypeDescriptor::Unsigned(IntSize::U8))) => Some(loc.attr(name)?.write_scalar(u)),
        (AttrValue::Float(f), Some(TypeDescriptor::Float(FloatSize::U8))) => Some(loc.attr(name)?.write_scalar(f)),
        (AttrValue::Float32(f), Some(TypeDescriptor::Float(FloatSize::U4))) => Some(loc.attr(name)?.write_scalar(f)),
        _ => None,
    };
    if let Some(written) = in_place {
        return written;
    }
    if loc.attr_names()?.iter().any(|n| n == name) {
        loc.delete_attr(name)?;
    }
    match value {
        AttrValue::Int(i) => loc.new_attr::<i64>().create(name)?.write_scalar(i),
        AttrValue::UInt(u) => loc.new_attr::<u64>().create(name)?.write_scalar(u),
        AttrValue::Float(f) => loc.new_attr::<f64>().create(name)?.write_scalar(f),
        AttrValue::Float32(f) => loc.new_attr::<f32>().create(name)?.write_scalar(f),
        AttrValue::Text(t) => {
            // HDF5 strings end at NUL; drop any so the rest of the text survives.
            let s: VarLenUnicode = t.replace('\0', "").parse().map_err(|e| format!("{e}"))?;
            loc.new_attr::<VarLenUnicode>().create(name)?.write_scalar(&s)
        }
    }
}

/// Writes (or replaces) a boolean attribute (read by h5py as a numpy bool); one that already
/// holds `value` is left alone, one of another value overwritten in place.
pub(crate) fn set_bool(loc: &Location, name: &str, value: bool) -> hdf5::Result<()> {
    if holds_bool(loc, name, value) {
        return Ok(());
    }
    // In place, as `set_attr` writes numbers.
    if scalar_type(loc, name) == Some(TypeDescriptor::Boolean) {
        return loc.attr(name)?.write_scalar(&value);
    }
    if loc.attr_names()?.iter().any(|n| n == name) {
        loc.delete_attr(name)?;
    }
    loc.new_attr::<bool>().create(name)?.write_scalar(&value)
}

/// Writes (or replaces) a 1-D string array attribute (read by h5py as an array of str).
pub(crate) fn set_strings(loc: &Location, name: &str, values: &[String]) -> hdf5::Result<()> {
    if loc.attr_names()?.iter().any(|n| n == name) {
        loc.delete_attr(name)?;
    }
    let values = values
        .iter()
        .map(|v| v.parse::<VarLenUnicode>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot encode attribute {name:?}: {e}"))?;
    loc.new_attr::<VarLenUnicode>().shape(values.len()).create(name)?.write(ArrayView1::from(&values[..]))
}

/// Runs `$body` with `$T` the Rust type of `$dtype`'s elements, each an `hdf5::H5Type` and a
/// `bytemuck::Pod`, so one generic function serves every element type.
macro_rules! with_elem_type {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::frame::DType;
        match $dtype {
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::U16 => {
                type $T = u16;
                $body
            }
            DType::U32 => {
                type $T = u32;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::F16 => {
                type $T = half::f16;
                $body
            }
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
        }
    }};
}
pub(crate) use with_elem_type;

/// The element type of an HDF5 type, if it is one wgpipe writes.
pub(crate) fn dtype_of(desc: &TypeDescriptor) -> Option<DType> {
    match desc {
        TypeDescriptor::Unsigned(IntSize::U1) => Some(DType::U8),
        TypeDescriptor::Unsigned(IntSize::U2) => Some(DType::U16),
        TypeDescriptor::Unsigned(IntSize::U4) => Some(DType::U32),
        TypeDescriptor::Integer(IntSize::U4) => Some(DType::I32),
        TypeDescriptor::Float(FloatSize::U2) => Some(DType::F16),
        TypeDescriptor::Float(FloatSize::U4) => Some(DType::F32),
        TypeDescriptor::Float(FloatSize::U8) => Some(DType::F64),
        _ => None,
    }
}

/// Little-endian bytes as elements of `T`: borrowed when aligned on a little-endian host,
/// else copied into `scratch` (8-byte aligned, reused from frame to frame).
pub(crate) fn le_elements<'a, T: bytemuck::Pod>(
    bytes: &'a [u8],
    scratch: &'a mut Vec<u64>,
) -> Result<&'a [T], bytemuck::PodCastError> {
    if cfg!(target_endian = "little")
        && let Ok(v) = bytemuck::try_cast_slice::<u8, T>(bytes)
    {
        return Ok(v);
    }
    scratch.clear();
    scratch.resize(bytes.len().div_ceil(8), 0);
    let buf = &mut bytemuck::cast_slice_mut::<u64, u8>(scratch)[..bytes.len()];
    buf.copy_from_slice(bytes);
    if cfg!(target_endian = "big") {
        buf.chunks_exact_mut(size_of::<T>()).for_each(<[u8]>::reverse);
    }
    let scratch: &'a [u64] = scratch;
    bytemuck::try_cast_slice(&bytemuck::cast_slice::<u64, u8>(scratch)[..bytes.len()])
}

/// Elements of `T` as little-endian bytes.
pub(crate) fn to_le_bytes<T: bytemuck::Pod>(values: &[T]) -> Vec<u8> {
    let mut out = bytemuck::cast_slice::<T, u8>(values).to_vec();
    if cfg!(target_endian = "big") {
        out.chunks_exact_mut(size_of::<T>()).for_each(<[u8]>::reverse);
    }
    out
}

/// Chunk shape of a `[frames, *shape]` dataset of `elem`-byte elements: `chunk_frames` frames
/// deep, and each frame whole if it fits in [`TARGET_CHUNK_BYTES`], otherwise cut along its
/// leading axes into near-equal parts that do (HDF5 stores edge chunks whole, so equal parts
/// waste no space). Errors, saying which `chunk_frames` would do, when the chunk breaks
/// HDF5's limits.
pub(crate) fn chunk_shape(shape: &[usize], elem: usize, chunk_frames: usize) -> Result<Vec<usize>, String> {
    let mut part = shape.to_vec();
    for axis in 0..part.len() {
        // Bytes of one index along `axis`; fits in u64 because a frame's bytes fit in usize.
        let inner = shape[axis + 1..].iter().fold(elem as u64, |b, &d| b.saturating_mul(d as u64));
        if (part[axis] as u64).saturating_mul(inner) <= TARGET_CHUNK_BYTES {
            break;
        }
        let fit = (TARGET_CHUNK_BYTES / inner).max(1);
        let pieces = (shape[axis] as u64).div_ceil(fit);
        part[axis] = usize::try_from((shape[axis] as u64).div_ceil(pieces)).unwrap_or(1);
        if inner <= TARGET_CHUNK_BYTES {
            break;
        }
    }
    let part_elements = part.iter().fold(1u64, |n, &d| n.saturating_mul(d as u64));
    let part_bytes = part_elements.saturating_mul(elem as u64);
    let elements = part_elements.saturating_mul(chunk_frames as u64);
    let bytes = part_bytes.saturating_mul(chunk_frames as u64);
    if elements > MAX_CHUNK_ELEMENTS || bytes > MAX_CHUNK_BYTES {
        let most = (MAX_CHUNK_ELEMENTS / part_elements).min(MAX_CHUNK_BYTES / part_bytes);
        return Err(format!(
            "chunk_frames {chunk_frames} makes chunks of {chunk_frames} x {part:?} elements ({bytes} bytes), over \
             HDF5's limit of {MAX_CHUNK_ELEMENTS} elements and {MAX_CHUNK_BYTES} bytes per chunk: use chunk_frames \
             {most} or less"
        ));
    }
    Ok(std::iter::once(chunk_frames).chain(part).collect())
}

/// The chunk shape of a field encoded before the sink: one whole frame, `[1, *shape]`, within
/// HDF5's limits on a chunk's (decoded) elements and bytes.
fn encoded_chunk_shape(shape: &[usize], elem: usize) -> Result<Vec<usize>, String> {
    let elements = shape.iter().fold(1u64, |n, &d| n.saturating_mul(d as u64));
    let bytes = elements.saturating_mul(elem as u64);
    if elements > MAX_CHUNK_ELEMENTS || bytes > MAX_CHUNK_BYTES {
        return Err(format!(
            "a field encoded before the sink is stored one frame per chunk, and one frame of {shape:?} ({bytes} \
             bytes decoded) passes HDF5's limit of {MAX_CHUNK_ELEMENTS} elements and {MAX_CHUNK_BYTES} bytes per \
             chunk: encode on the host (wgpipe: output.compress_on = \"host\") or use a smaller grid"
        ));
    }
    Ok(std::iter::once(1).chain(shape.iter().copied()).collect())
}

/// [`chunk_shape`] of every field of `layout`, or the error naming the field whose
/// `chunk_frames` frames pass HDF5's chunk limit (a frame alone never does: it is split).
pub(crate) fn chunk_shapes(layout: &StreamLayout, chunk_frames: usize) -> crate::error::Result<Vec<Vec<usize>>> {
    let cf = chunk_frames.max(1);
    layout
        .fields
        .iter()
        .map(|f| {
            let shape = match f.encoding {
                // A stream encoded before the sink is one chunk of one frame, as H5Z-ZFP
                // would have coded that chunk.
                crate::Encoding::Zfp(_) => encoded_chunk_shape(&f.shape, f.dtype.size()),
                _ => chunk_shape(&f.shape, f.dtype.size(), cf),
            };
            shape.map_err(|message| Error::ChunkTooLarge {
                field: format!("{} ({})", f.name, f.describe()),
                chunk_frames: cf,
                message,
            })
        })
        .collect()
}

/// `[n, *shape]` in a fixed array (no allocation per frame), as a slice length.
pub(crate) fn with_frames(n: usize, shape: &[usize]) -> ([usize; MAX_RANK + 1], usize) {
    let mut dims = [n; MAX_RANK + 1];
    dims[1..=shape.len()].copy_from_slice(shape);
    (dims, shape.len() + 1)
}

/// Writes one frame's elements (`bytes`, little-endian) as frame `n` of `ds`, which already
/// holds at least `n + 1` frames: the one frame-writing step of the serial and MPI sinks.
pub(crate) fn write_frame_slab<T: H5Type + bytemuck::Pod>(
    ds: &Dataset,
    spec: &FieldSpec,
    bytes: &[u8],
    n: usize,
    scratch: &mut Vec<u64>,
) -> hdf5::Result<()> {
    let values =
        le_elements::<T>(bytes, scratch).map_err(|e| format!("cannot view the frame as {}: {e}", spec.dtype))?;
    let (one, rank) = with_frames(1, &spec.shape);
    let view = ArrayViewD::from_shape(IxDyn(&one[..rank]), values).map_err(|e| e.to_string())?;
    let slab: Vec<SliceOrIndex> = std::iter::once(SliceOrIndex::from(n..n + 1))
        .chain(spec.shape.iter().map(|_| SliceOrIndex::from(..)))
        .collect();
    ds.write_slice(view, Hyperslab::from(slab))
}

#[cfg(test)]
mod tests {
    use super::chunk_shape;

    #[test]
    fn frames_up_to_the_target_are_one_chunk() {
        assert_eq!(chunk_shape(&[8, 16], 4, 1), Ok(vec![1, 8, 16]));
        assert_eq!(chunk_shape(&[1024, 1024], 4, 1), Ok(vec![1, 1024, 1024]));
        assert_eq!(chunk_shape(&[64, 64, 64], 8, 3), Ok(vec![3, 64, 64, 64]));
        assert_eq!(chunk_shape(&[7], 1, 1), Ok(vec![1, 7]));
    }

    #[test]
    fn larger_frames_split_the_leading_axis_into_equal_parts() {
        // 2048 x 2048 f32 = 16 MiB: four bands of 512 rows.
        assert_eq!(chunk_shape(&[2048, 2048], 4, 1), Ok(vec![1, 512, 2048]));
        // 1000 rows of 8 KiB: 512 fit, so two parts of 500 rather than 512 + 488.
        assert_eq!(chunk_shape(&[1000, 2048], 4, 1), Ok(vec![1, 500, 2048]));
        // 3-D: planes of 4 MiB each, one plane per chunk.
        assert_eq!(chunk_shape(&[10, 1024, 1024], 4, 2), Ok(vec![2, 1, 1024, 1024]));
        // 1-D: 2^30 f64 cut into 4 MiB pieces.
        assert_eq!(chunk_shape(&[1 << 30], 8, 1), Ok(vec![1, 1 << 19]));
    }

    #[test]
    fn planes_larger_than_the_target_split_the_next_axis_too() {
        // Each z-plane is 64 MiB: one plane per chunk is too much, so y is cut as well.
        assert_eq!(chunk_shape(&[4, 4096, 4096], 4, 1), Ok(vec![1, 1, 256, 4096]));
        // Even one row is over the target: x alone is cut.
        assert_eq!(chunk_shape(&[2, 3, 1 << 21], 4, 1), Ok(vec![1, 1, 1, 1 << 20]));
    }

    #[test]
    fn every_chunk_is_within_the_target_and_covers_the_frame() {
        for shape in [vec![5usize], vec![3, 4], vec![2, 3, 5], vec![9999, 777], vec![33, 1111, 333], vec![1 << 24]] {
            for elem in [1usize, 2, 4, 8] {
                let c = chunk_shape(&shape, elem, 1).unwrap_or_default();
                let bytes: usize = c[1..].iter().product::<usize>() * elem;
                assert!(bytes as u64 <= super::TARGET_CHUNK_BYTES.max(elem as u64), "{shape:?} {elem}: {c:?}");
                assert!(c[1..].iter().zip(&shape).all(|(&p, &d)| p >= 1 && p <= d), "{shape:?}: {c:?}");
            }
        }
    }

    #[test]
    fn chunk_frames_past_hdf5s_limits_are_refused_with_the_largest_that_fits() {
        // One frame part is 4 MiB; 1024 of them would be exactly 4 GiB, one byte too many.
        let e = chunk_shape(&[1024, 1024], 4, 1024).err().unwrap_or_default();
        assert!(e.contains("chunk_frames 1024") && e.contains("use chunk_frames 1023 or less"), "{e}");
        assert!(chunk_shape(&[1024, 1024], 4, 1023).is_ok());
        // u8: the element limit (2^32 - 1) bites before the byte limit.
        let e = chunk_shape(&[1 << 22], 1, 1024).err().unwrap_or_default();
        assert!(e.contains("use chunk_frames 1023 or less"), "{e}");
    }
}
