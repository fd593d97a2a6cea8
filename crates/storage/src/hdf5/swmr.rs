//! Single-writer/multiple-reader mode ([`crate::SinkOptions::swmr`]): readers follow the
//! frames while the run goes (h5py `File(path, "r", swmr=True)`, then `refresh()` on a
//! dataset).
//!
//! HDF5 1.10's SWMR needs the 1.10 file format ("libver latest") and allows, once
//! `H5Fstart_swmr_write` is called, only appending to existing datasets: no new objects and no
//! attribute writes. So the sink creates the file in that format, creates every group,
//! dataset, dimension scale and attribute first, then starts SWMR; each frame's flush makes
//! it visible to readers. `finish` cannot write its `frames`/`complete` attributes in SWMR
//! mode: it closes the file and reopens it normally for them ([`reopen`]); a reader that
//! still has it open keeps reading.
//!
//! Disk-space reservation: in the 1.10 format a chunked dataset with one unlimited axis
//! indexes its chunks with an *extensible array*, whose data blocks double in size and are
//! allocated whole, so one frame can add a block as large as the index so far (the v1 B-tree
//! of the default format grows by fixed nodes). [`index_bytes_bound`] adds that to the bytes
//! a frame may add, from the streams' expected frame counts, so the reservation stays ahead
//! of HDF5. Appending to a file is refused ([`crate::SinkOptions::check`]): an existing file
//! may be in the older format, which cannot enter SWMR mode.

use std::path::Path;

use hdf5::{File, Group};

use crate::error::{Error, Result};
use crate::schema::StreamLayout;

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
pub(crate) fn start(file: &File) -> hdf5::Result<()> {
    file.start_swmr()
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

/// Closes a SWMR file and opens it again for writing, without SWMR, so that `finish` can
/// write attributes; `groups` (closed first, as every handle on the file must be) are
/// returned open again in the new file.
pub(crate) fn leave(file: File, groups: Vec<Group>, path: &Path) -> hdf5::Result<(File, Vec<Group>)> {
    let names: Vec<String> = groups.iter().map(|g| g.name()).collect();
    drop(groups);
    file.close()?;
    let file = super::cloexec::retry_while_locked(|| File::open_rw(path))?;
    super::cloexec::close_on_exec(path).map_err(|e| e.to_string())?;
    let groups = names.iter().map(|n| file.group(n)).collect::<hdf5::Result<_>>()?;
    Ok((file, groups))
}
