//! Single-writer/multiple-reader mode ([`crate::SinkOptions::swmr`]): readers follow the
//! frames while the run goes (h5py `File(path, "r", swmr=True)`, then `refresh()` on a
//! dataset).
//!
//! HDF5 1.10's SWMR needs the 1.10 file format ("libver latest") and allows, once
//! `H5Fstart_swmr_write` is called, no new objects and no new attributes. So the sink creates
//! the file in that format, creates every group, dataset, dimension scale and attribute first
//! (`frames` too, at 0), then starts SWMR; each frame's flush makes it visible to readers.
//! `finish` overwrites `frames` and `complete` in place (same type and size, so the object
//! headers keep their layout). It cannot close the file and reopen it normally instead: a
//! SWMR reader holds a shared lock on it, and the writer's exclusive reopen fails while one
//! is reading.
//!
//! Disk-space reservation: in the 1.10 format a chunked dataset with one unlimited axis
//! indexes its chunks with an *extensible array*, whose data blocks double in size and are
//! allocated whole, so one frame can add a block as large as the index so far (the v1 B-tree
//! of the default format grows by fixed nodes). [`index_bytes_bound`] adds that to the bytes
//! a frame may add, from the streams' expected frame counts, so the reservation stays ahead
//! of HDF5. Appending to a file is refused ([`crate::SinkOptions::check`]): an existing file
//! may be in the older format, which cannot enter SWMR mode.

use std::path::Path;

use hdf5::{File, Group, Location};

use super::format::set_attr;

use crate::error::{Error, Result};
use crate::schema::{AttrValue, StreamLayout};

/// The attributes `finish` writes: created before SWMR starts, overwritten in place after.
const FRAMES: &str = "frames";
const COMPLETE: &str = "complete";

/// Bytes one element of an extensible array chunk index takes, at most: the chunk's address,
/// and for a filtered chunk its size and filter mask.
const INDEX_ELEMENT_BYTES: u64 = 24;
/// Room for the index's header, index block and one super block.
const INDEX_BASE_BYTES: u64 = 64 << 10;

/// Creates the new file `at` (exclusively), in the 1.10 format when `swmr` is on.
pub(crate) fn create_file(at: &Path, swmr: bool) -> hdf5::Result<File> {
    if swmr { File::with_options().with_fapl(|p| p.libver_latest()).create_excl(at) } else { File::create_excl(at) }
}

/// Enters SWMR write mode; call once every object and attribute of the file exists.
/// Creates the `frames` attribute of every stream group first (0), so that `finish` can
/// overwrite it ([`overwrite`]).
pub(crate) fn start<'a>(file: &File, groups: impl IntoIterator<Item = &'a Group>) -> hdf5::Result<()> {
    for g in groups {
        set_attr(g, FRAMES, &AttrValue::Int(0))?;
    }
    file.start_swmr()
}

/// Writes a stream's final `frames` and `complete` into the attributes made before SWMR
/// started: same type and size, written in place (no new object, no new attribute).
pub(crate) fn overwrite(group: &Group, frames: u64, complete: bool) -> hdf5::Result<()> {
    group.attr(FRAMES)?.write_scalar(&i64::try_from(frames).unwrap_or(i64::MAX))?;
    overwrite_complete(group, complete)
}

/// Writes `complete` into the attribute made before SWMR started.
pub(crate) fn overwrite_complete(loc: &Location, complete: bool) -> hdf5::Result<()> {
    loc.attr(COMPLETE)?.write_scalar(&complete)
}

/// Bytes one frame can add to the chunk indexes of a SWMR file beyond what the default
/// format's bound counts: per dataset (each field and `steps`), a data block of up to twice
/// the chunks the stream will hold. `chunks_per_frame` lists, per field, the chunks one frame
/// touches. Errors when a stream's frame count is not known in advance (the bound needs it).
pub(crate) fn index_bytes_bound(layout: &StreamLayout, chunks_per_frame: &[usize], chunk_frames: usize) -> Result<u64> {
    let mut most = 0u64;
    for s in &layout.streams {
        let frames = s.expected_frames.ok_or_else(|| {
            Error::InvalidOptions(format!(
                "swmr: stream {:?} has no expected frame count; single-writer/multiple-reader mode needs \
                 it to reserve disk space for the chunk index: set it, or turn off reserve_space or swmr",
                s.name
            ))
        })?;
        most = most.max(frames);
    }
    let chunk_rows = most.div_ceil(chunk_frames.max(1) as u64).max(1);
    let per_dataset = |chunks: u64| INDEX_BASE_BYTES.saturating_add(chunks.saturating_mul(2 * INDEX_ELEMENT_BYTES));
    let fields = chunks_per_frame.iter().map(|&c| per_dataset(chunk_rows.saturating_mul(c as u64)));
    Ok(fields.fold(per_dataset(most), u64::saturating_add))
}
