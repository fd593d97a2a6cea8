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
//! indexes its chunks with an *extensible array* instead of a v1 B-tree. Its data blocks
//! double in size but are paged (1024 entries a page) and pages are written as they fill, so
//! one frame adds at most a page and a super block to the index, within the 64 KiB per
//! dataset the sink already reserves for index metadata: measured with h5py on the same
//! HDF5 1.10.8, 40 000 one-chunk frames flushed one by one in SWMR mode, the largest growth
//! of the file at one flush was 10.5 KB (every 1024 frames: a new page). The full-disk test
//! (`tests/disk_full.rs`) runs a SWMR sink into full tmpfs filesystems. Appending to a file
//! is refused ([`crate::SinkOptions::check`]): an existing file may be in the older format,
//! which cannot enter SWMR mode.

use std::path::Path;

use hdf5::plist::file_create::FileSpaceStrategy;
use hdf5::{File, Group, Location};

use super::format::set_attr;

use crate::schema::AttrValue;

/// The attributes `finish` writes: created before SWMR starts, overwritten in place after.
const FRAMES: &str = "frames";
const COMPLETE: &str = "complete";

/// Creates the new file `at` (exclusively), in the 1.10 format when `swmr` is on.
///
/// Either way without HDF5's free-space manager (see the sink's `create`): freed space is
/// dropped, not reused, except a block at the very end, which the end of allocation takes
/// back (see `eoa::leave_gap`). And without a chunk cache: a chunk takes its space
/// in the write that fills it, before the flush, so that the sink can write the superblock's
/// end of allocation past it first (`eoa`).
pub(crate) fn create_file(at: &Path, swmr: bool) -> hdf5::Result<File> {
    let mut options = File::with_options();
    options.with_fcpl(|p| p.file_space_strategy(FileSpaceStrategy::None));
    options.with_fapl(|p| {
        if swmr {
            p.libver_latest();
        }
        p.chunk_cache(0, 0, 1.0).alignment(ALIGN_THRESHOLD, ALIGNMENT)
    });
    options.create_excl(at)
}

/// Opens the existing file `at` for writing, allocating as [`create_file`] does.
pub(crate) fn open_rw(at: &Path) -> hdf5::Result<File> {
    File::with_options().with_fapl(|p| p.chunk_cache(0, 0, 1.0).alignment(ALIGN_THRESHOLD, ALIGNMENT)).open_rw(at)
}

/// Objects of this many bytes or more (every `steps` chunk, and larger chunks) start at a
/// multiple of [`ALIGNMENT`]: then no 8-byte value inside one crosses a page boundary, so a
/// kill in the middle of a write cannot leave a frame's `steps` entry half written (part
/// the never-written mark, part the step).
const ALIGN_THRESHOLD: u64 = 4096;
const ALIGNMENT: u64 = 8;

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
