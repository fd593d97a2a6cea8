//! HDF5's limits on one chunk, checked before anything is created.
//!
//! The HDF5 sink stores each field as a dataset chunked by `chunk_frames` whole frames, and
//! HDF5 refuses a chunk of 2^32 elements or more (`H5Pset_chunk`: "number of elements in chunk
//! must be < 4GB") or of 2^32 bytes or more (`H5D__chunk_construct`: "chunk size must be <
//! 4GB"). Met inside HDF5, that failure comes after the file exists and names neither the
//! grid nor the fix; checked here, a too-large grid is refused first, with both.

use crate::error::{Error, Result};
use crate::frame::DType;

/// The most elements HDF5 accepts in one chunk.
pub const HDF5_MAX_CHUNK_ELEMENTS: u64 = u32::MAX as u64;
/// The most bytes HDF5 accepts in one chunk.
pub const HDF5_MAX_CHUNK_BYTES: u64 = u32::MAX as u64;

/// Errors with [`Error::ChunkTooLarge`] unless a chunk of `chunk_frames` frames of one
/// `rows × cols` field of `dtype` fits HDF5's limits. The HDF5 sink calls this in
/// [`crate::Sink::check_layout`] and `begin`; a runner calls it through `check_layout`
/// before it allocates anything.
pub fn check_hdf5_chunk(rows: usize, cols: usize, dtype: DType, chunk_frames: usize) -> Result<()> {
    let size = dtype.size() as u64;
    let frames = chunk_frames.max(1) as u64;
    let cells = (rows as u64).checked_mul(cols as u64);
    let elements = cells.and_then(|c| c.checked_mul(frames));
    let bytes = elements.and_then(|e| e.checked_mul(size));
    if let (Some(elements), Some(bytes)) = (elements, bytes)
        && elements <= HDF5_MAX_CHUNK_ELEMENTS
        && bytes <= HDF5_MAX_CHUNK_BYTES
    {
        return Ok(());
    }
    let max_cells = HDF5_MAX_CHUNK_ELEMENTS.min(HDF5_MAX_CHUNK_BYTES / size);
    let frame_fits = cells.is_some_and(|c| c <= max_cells);
    let shown = |v: Option<u64>| v.map_or_else(|| "more than 2^64".to_owned(), |v| v.to_string());
    let what = format!(
        "one HDF5 chunk of {frames} frame{s} × {rows} × {cols} {dtype} values holds {} values ({} bytes), \
         above HDF5's limit of {HDF5_MAX_CHUNK_ELEMENTS} values and {HDF5_MAX_CHUNK_BYTES} bytes per chunk",
        shown(elements),
        shown(bytes),
        s = if frames == 1 { "" } else { "s" },
        dtype = dtype.name(),
    );
    let fix = match cells {
        Some(c) if frame_fits => {
            format!("store at most {} frames per chunk (chunk_frames)", max_cells / c.max(1))
        }
        _ => format!(
            "use a grid of at most {max_cells} cells (e.g. {side}×{side}), or the raw sink, which has no chunk limit",
            side = max_cells.isqrt()
        ),
    };
    Err(Error::ChunkTooLarge { rows, cols, chunk_frames, message: format!("{what}: {fix}") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_are_hdf5s_and_the_messages_say_what_to_change() {
        // Both edges as h5py (HDF5 1.10) draws them: 32767×32768 f32 is accepted, 32768×32768
        // (exactly 4 GiB) is refused.
        assert!(check_hdf5_chunk(32767, 32768, DType::F32, 1).is_ok());
        let e = check_hdf5_chunk(32768, 32768, DType::F32, 1).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with("grid 32768×32768: one HDF5 chunk of 1 frame × 32768 × 32768 float32"), "{e}");
        assert!(e.contains("4294967296 bytes") && e.contains("at most 1073741823 cells (e.g. 32767×32767)"), "{e}");
        let e = check_hdf5_chunk(1000, 1000, DType::F32, 2000).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("2000 frames") && e.contains("at most 1073 frames per chunk"), "{e}");
        let e =
            check_hdf5_chunk(usize::MAX, usize::MAX, DType::F32, 1).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("more than 2^64 values"), "{e}");
    }
}
