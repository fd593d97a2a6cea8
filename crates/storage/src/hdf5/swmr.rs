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

use hdf5::plist::file_access::{FileAccessBuilder, LibraryVersion};
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
///
/// `index_rewritten` (chunk index entries of frames already reported change in place) puts
/// index nodes on pages of their own ([`Alignment::for_output`]).
pub(crate) fn create_file(at: &Path, swmr: bool, index_rewritten: bool) -> hdf5::Result<File> {
    let Alignment { threshold, alignment } = Alignment::for_file(swmr, index_rewritten);
    let mut options = File::with_options();
    options.with_fcpl(|p| p.file_space_strategy(FileSpaceStrategy::None));
    options.with_fapl(|p| file_formats(p, swmr).chunk_cache(0, 0, 1.0).alignment(threshold, alignment));
    options.create_excl(at)
}

/// The file formats every HDF5 output is written in, whatever HDF5 library wgpipe links:
/// the earliest that hold each object, up to 1.10's (the format the sink's kill safety was
/// built and measured on: version 1 object headers without checksums, `eoa`'s superblock),
/// and with `swmr` 1.10's own, which SWMR needs. HDF5 2.x's defaults differ (version 2
/// object headers, and "latest" is a 2.0 format 1.10 readers cannot open), so the bounds
/// are set, not left to the library.
pub(crate) fn file_formats(p: &mut FileAccessBuilder, swmr: bool) -> &mut FileAccessBuilder {
    let low = if swmr { LibraryVersion::V110 } else { LibraryVersion::Earliest };
    p.libver_bounds(low, LibraryVersion::V110)
}

/// Opens the existing file `at` for writing, allocating as [`create_file`] does and creating
/// objects in the formats it does ([`earliest_formats`]).
pub(crate) fn open_rw(at: &Path, index_rewritten: bool) -> hdf5::Result<File> {
    let Alignment { threshold, alignment } = Alignment::for_output(index_rewritten);
    let file =
        File::with_options().with_fapl(|p| p.chunk_cache(0, 0, 1.0).alignment(threshold, alignment)).open_rw(at)?;
    earliest_formats(&file)?;
    Ok(file)
}

/// Makes the objects HDF5 creates in `file` from now on use the earliest formats that hold
/// them (version 1 object headers, v1 B-tree chunk indexes), as in the files the sink creates.
///
/// Why: a file made without a free-space manager has a version 2 superblock, and HDF5 1.10
/// opening such a file raises the format of every object it creates to 1.8's: version 2
/// object headers, each checksummed as a whole. The streams an append creates again had such
/// headers, and the header of a growing dataset is rewritten in place at every frame: a kill
/// that cut that write at a page boundary left a header whose checksum no longer matched, and
/// the dataset did not open (`kill_stress ... deflate,chunk_frames=4,append`: "incorrect
/// metadata checksum" opening `a/steps`, 2 of 2000 kills). A version 1 header has no
/// checksum: a torn rewrite mixes the header's old and new bytes, and only the bytes that
/// changed (a dataset's extent) can be wrong.
#[expect(unsafe_code, reason = "hdf5-metno-sys 0.12 does not declare H5Fset_libver_bounds (HDF5 1.10.2 and later)")]
fn earliest_formats(file: &File) -> hdf5::Result<()> {
    use hdf5_sys::h5f::H5F_libver_t;
    unsafe extern "C" {
        fn H5Fset_libver_bounds(
            file_id: hdf5_sys::h5i::hid_t,
            low: H5F_libver_t,
            high: H5F_libver_t,
        ) -> hdf5_sys::h5::herr_t;
    }
    hdf5::sync::sync(|| {
        // SAFETY: `file` is an open file borrowed for the call, and the two bounds are values
        // of HDF5's own enumeration; the HDF5 lock is held (`sync`).
        hdf5::h5check(unsafe {
            H5Fset_libver_bounds(file.id(), H5F_libver_t::H5F_LIBVER_EARLIEST, H5F_libver_t::H5F_LIBVER_V110)
        })
    })
    .map(drop)
}

/// Where HDF5 places the file's larger objects (`H5Pset_alignment`: every object of
/// `threshold` bytes or more starts at a multiple of `alignment`), so that a write a kill cuts
/// short cannot leave a value half old and half new.
///
/// Why: Linux writes a `pwrite` into the page cache one page (4 KiB) at a time and stops at a
/// page boundary when the process gets SIGKILL, so a kill can leave the first pages of a
/// metadata block new and the rest old. For a block written anew that is the in-flight
/// frame's loss; for a block rewritten in place it mixes two versions of it.
///
/// - Always: objects of 4 KiB or more (every `steps` chunk, and larger chunks) start at a
///   multiple of 8, so no 8-byte value inside one crosses a page boundary: a frame's `steps`
///   entry is never half the never-written mark and half the step.
/// - Outputs whose chunks are neither laid out nor indexed at `begin` (chunks of several
///   compressed frames; streams of unknown length) and appends, SWMR files aside: objects of
///   2 KiB or more start at a page boundary. A chunk index node (a v1 B-tree node of 64
///   entries: 2096 bytes for a dataset of one axis, 3136 for three, 3656 for four) is
///   rewritten in place whenever a chunk moves to new space or a chunk is added, while it
///   also describes chunks of frames already reported; it then fits in one page, so its
///   entries are all old or all new. Measured before (`strace` of `kill_stress` with
///   `deflate,chunk_frames=4`, 40 frames): 9 of the 155 nodes rewritten in place changed
///   bytes on two pages, and an entry torn between its chunk's size and its address loses
///   the chunk's frames, reported ones included (1 in 10000 kills; the guide's Reliability
///   page has the counts). Datasets have at most four axes (fields of at most
///   [`crate::schema::MAX_RANK`] = 3, and the frame axis), whose nodes fit; one of five
///   would not (4176 bytes), which the unit test below guards. The cost: up to 4 KiB of
///   padding before each index node and each chunk of 2 KiB or more (64×64 `f32` frames,
///   deflate, 4 per chunk: 12 % larger).
/// - Outputs laid out whole at `begin` (uncompressed) rewrite no index node, and compressed
///   chunks of one frame made at `begin` change one entry, the in-flight frame's, when their
///   node is rewritten: a torn node loses nothing reported. They stay unpadded.
/// - SWMR files: every object starts at a page ([`Alignment::EVERY_OBJECT`]). They are in
///   1.10's format, where every block of metadata is checksummed: the object headers (a
///   dataset's is rewritten at every frame, its extent grows) and the extensible arrays that
///   index their chunks (header, index block, super and data blocks, rewritten as entries are
///   added). A block torn at a page boundary fails its checksum and every chunk it indexes is
///   lost, reported frames' too: `kill_stress ... deflate,chunk_frames=4,swmr` lost a
///   stream's whole field so, 1 in 12000 kills, through an index block of 326 bytes across a
///   page boundary. SWMR orders HDF5's writes (children before parents), not what a kill
///   cuts. Blocks of a page or less then lie in one page. What stays exposed: an extensible
///   array's data blocks of 512 entries and more, which span pages; they come after the first
///   8180 chunks of a dataset (HDF5 1.10's array: 4 entries in the index block, then data
///   blocks of 16, 32, 32, 64, 64, … entries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Alignment {
    pub threshold: u64,
    pub alignment: u64,
}

impl Alignment {
    /// A page: what a kill cannot cut inside.
    pub const PAGE: u64 = 4096;

    /// Every object at a page (a threshold of 0 aligns every object HDF5 allocates): SWMR
    /// files.
    pub const EVERY_OBJECT: Self = Self { threshold: 0, alignment: Self::PAGE };

    /// The alignment of a new file: every object of an SWMR file, else [`Self::for_output`].
    pub fn for_file(swmr: bool, index_rewritten: bool) -> Self {
        if swmr { Self::EVERY_OBJECT } else { Self::for_output(index_rewritten) }
    }

    /// The most padding a chunk of a file, SWMR or not, gets: what disk reservations count.
    pub fn widest(swmr: bool) -> Self {
        Self::for_file(swmr, true)
    }

    /// The alignment of an output whose index nodes are rewritten in place while they
    /// describe frames already reported (`index_rewritten`), or of any other.
    pub fn for_output(index_rewritten: bool) -> Self {
        if index_rewritten {
            Self { threshold: 2048, alignment: Self::PAGE }
        } else {
            Self { threshold: 4096, alignment: 8 }
        }
    }

    /// Bytes an object of `bytes` may take with its padding, at most.
    pub fn padded(self, bytes: u64) -> u64 {
        if bytes >= self.threshold { bytes.saturating_add(self.alignment - 1) } else { bytes }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::MAX_RANK;

    /// Bytes of a chunk index node (a version 1 B-tree node of HDF5's default 64 entries) of
    /// a dataset of `rank` axes: a 24-byte header (signature, type, level, entries, two
    /// sibling addresses), 65 keys (chunk size, filter mask, `rank + 1` offsets of 8 bytes)
    /// and 64 child addresses.
    fn chunk_index_node_bytes(rank: u64) -> u64 {
        24 + 65 * (8 + (rank + 1) * 8) + 64 * 8
    }

    #[test]
    fn every_chunk_index_node_fits_a_page() {
        // What the alignment's doc states for one, three and four axes, and five.
        let sizes: Vec<u64> = [1, 3, 4, 5].map(chunk_index_node_bytes).into();
        assert_eq!(sizes, [2096, 3136, 3656, 4176]);
        // The most axes a dataset has: a field's and the frame axis. A node that fitted no
        // page could be torn by a kill while it describes frames already reported: raising
        // MAX_RANK needs smaller nodes (`H5Pset_istore_k` when the file is created).
        let largest = chunk_index_node_bytes(MAX_RANK as u64 + 1);
        assert!(largest <= Alignment::PAGE, "datasets of {} axes: index nodes of {largest} bytes", MAX_RANK + 1);
        // And the smallest (one axis) is 2 KiB or more, so the alignment puts every node at a page.
        assert!(chunk_index_node_bytes(1) >= Alignment::for_output(true).threshold);
    }
}
