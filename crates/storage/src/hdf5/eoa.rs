//! Keeps the end of allocation that the file's superblock records ahead of everything the
//! metadata on disk may point at, so that a kill in the middle of a flush leaves no chunk
//! "beyond the end" of the file.
//!
//! Why: HDF5 records in the superblock where the file's allocated space ends, and readers
//! refuse to read past it ("addr overflow"). A frame written to a dataset that grows, or to a
//! compressed chunk that it rewrites (several frames per chunk), takes space at the end of
//! the file and points the chunk index there; the flush then writes the index nodes before
//! the superblock. A kill between the two left files whose index pointed at a chunk whose
//! bytes were in the file but past the recorded end: kill_stress with
//! `deflate,chunk_frames=4` lost a reported frame in 3 to 8 of 2000 kills this way, every one
//! readable again after `h5clear -i` (reliability guide).
//!
//! What it does, after a frame's datasets are written and before the flush: if HDF5's end of
//! allocation (`H5Fget_eoa`) has moved past what the superblock on disk records, it extends
//! the file to that end (sparse: no disk space is taken) and writes the new end into the
//! superblock itself, with its checksum (one 48-byte write within the file's first page). A
//! kill after it leaves a superblock that covers every chunk and index node HDF5 may write
//! in the flush, and a file at least that long (HDF5 refuses a file shorter than its
//! recorded end); the flush then writes the same end again. Only a version-2 superblock at
//! the start of the file with 8-byte addresses is touched (what this sink creates outside
//! SWMR mode); any other file is left to HDF5 alone.
//!
//! For a compressed dataset that HDF5 filters itself, the chunk must be allocated by the
//! write, not by the flush: such datasets get no chunk cache while they grow
//! (`schema::Plan::chunk_cache`), so a partial chunk is read back, completed and written
//! again by each frame.

use std::fs::File as FsFile;
use std::os::unix::fs::FileExt;
use std::path::Path;

use hdf5::File;

/// The superblock's signature, at the start of the file.
const SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";
/// Version 2 of the superblock (what the sink's files have; version 3, SWMR's, is left alone:
/// readers may be reading it): signature, version, sizes of offsets and lengths, flags, then
/// the base address (12), the extension's address (20), the end-of-file address (28), the
/// root group's object header address (36) and the checksum of what precedes (44).
const VERSION: u8 = 2;
const BASE_AT: usize = 12;
const END_AT: usize = 28;
const CHECKSUM_AT: usize = 44;
const SUPERBLOCK_BYTES: usize = 48;

/// The output file, opened once more by the sink to write its superblock's end ahead.
#[derive(Debug)]
pub(crate) struct EndAhead {
    file: FsFile,
}

impl EndAhead {
    /// Opens `path` (the file HDF5 has open for writing) for [`EndAhead::write`]; `None`
    /// when its superblock is not one this module writes.
    pub(crate) fn open(path: &Path) -> std::io::Result<Option<EndAhead>> {
        let file = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
        let ahead = EndAhead { file };
        Ok(ahead.superblock()?.map(|_| ahead))
    }

    /// The superblock's bytes, if it is one this module writes.
    fn superblock(&self) -> std::io::Result<Option<[u8; SUPERBLOCK_BYTES]>> {
        let mut bytes = [0u8; SUPERBLOCK_BYTES];
        self.file.read_exact_at(&mut bytes, 0)?;
        let ours = bytes.starts_with(SIGNATURE)
            && bytes[8] == VERSION
            && bytes[9] == 8
            && bytes[10] == 8
            && read_u64(&bytes, BASE_AT) == 0
            && read_u32(&bytes, CHECKSUM_AT) == lookup3(&bytes[..CHECKSUM_AT]);
        Ok(ours.then_some(bytes))
    }

    /// Moves the end recorded in the superblock of `h5` (this file) to HDF5's end of
    /// allocation, extending the file to it first, if the end has moved; returns whether it
    /// wrote. Call after writing a frame's datasets and before flushing them.
    pub(crate) fn write(&self, h5: &File) -> std::io::Result<bool> {
        let end = end_of_allocation(h5).map_err(|e| std::io::Error::other(e.to_string()))?;
        let Some(mut bytes) = self.superblock()? else {
            return Ok(false);
        };
        if end <= read_u64(&bytes, END_AT) {
            return Ok(false);
        }
        if self.file.metadata()?.len() < end {
            self.file.set_len(end)?;
        }
        bytes[END_AT..END_AT + 8].copy_from_slice(&end.to_le_bytes());
        let checksum = lookup3(&bytes[..CHECKSUM_AT]);
        bytes[CHECKSUM_AT..].copy_from_slice(&checksum.to_le_bytes());
        self.file.write_all_at(&bytes, 0)?;
        Ok(true)
    }
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

#[expect(unsafe_code, reason = "hdf5-metno-sys 0.12 does not declare H5Fget_eoa and H5Fincrement_filesize")]
unsafe extern "C" {
    /// HDF5 ≥ 1.10.2 (`H5Fpublic.h`); hdf5-metno-sys 0.12 does not declare it.
    fn H5Fget_eoa(file_id: hdf5_sys::h5i::hid_t, eoa: *mut hdf5_sys::h5::haddr_t) -> hdf5_sys::h5::herr_t;
    /// HDF5 ≥ 1.10.2: sets the end of allocation to the larger of it and the file's length,
    /// plus `increment`.
    fn H5Fincrement_filesize(file_id: hdf5_sys::h5i::hid_t, increment: hdf5_sys::h5::hsize_t) -> hdf5_sys::h5::herr_t;
}

/// Leaves a byte of unused space at the end of `file`'s allocation, before a frame rewrites
/// compressed chunks (several frames per chunk, filtered by HDF5).
///
/// Why: HDF5 rewrites such a chunk, grown by the new frame, by freeing its old space and
/// allocating new space. Without a free-space manager (`swmr::create_file`) a freed block is
/// dropped, except when it ends the allocation: then the end moves back over it, and the new
/// chunk is written over the old one, inside the write, while the index on disk still points
/// at the old one with its old length until the flush; a kill then leaves a chunk no reader
/// decompresses, frames reported written and all (seen by a review with one field: the chunk
/// stayed at one address while it grew; `kill_stress`'s two streams of two fields never left
/// the chunk last). With the gap the old chunk never ends the allocation, so it stays whole
/// until the index moves past it. The cost: every earlier version of a filling chunk stays in
/// the file (as it already did for outputs of several fields), about (k + 1) / 2 times the
/// compressed size of a chunk of k frames.
#[expect(unsafe_code, reason = "hdf5-metno 0.15 has no wrapper of H5Fincrement_filesize")]
pub(crate) fn leave_gap(file: &File) -> hdf5::Result<()> {
    hdf5::sync::sync(|| {
        // SAFETY: `file` is an open file (borrowed for the call); the HDF5 lock is held (`sync`).
        let status = unsafe { H5Fincrement_filesize(file.id(), 1) };
        hdf5::h5check(status).map(drop)
    })
}

/// HDF5's end of allocation in `file`: where the next block at the end would start.
#[expect(unsafe_code, reason = "hdf5-metno 0.15 has no wrapper of H5Fget_eoa")]
fn end_of_allocation(file: &File) -> hdf5::Result<u64> {
    hdf5::sync::sync(|| {
        let mut eoa: hdf5_sys::h5::haddr_t = 0;
        // SAFETY: `file` is an open file (borrowed for the call) and `eoa` a valid, writable
        // haddr_t, which the library sets; the HDF5 lock is held (`sync`).
        let status = unsafe { H5Fget_eoa(file.id(), &raw mut eoa) };
        hdf5::h5check(status).map(|_| eoa)
    })
}

/// Bob Jenkins' lookup3 `hashlittle` with initial value 0: HDF5's checksum of metadata
/// (`H5_checksum_lookup3`), over `key` read as little-endian words.
pub(crate) fn lookup3(key: &[u8]) -> u32 {
    let mix = |a: &mut u32, b: &mut u32, c: &mut u32| {
        *a = a.wrapping_sub(*c);
        *a ^= c.rotate_left(4);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a);
        *b ^= a.rotate_left(6);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b);
        *c ^= b.rotate_left(8);
        *b = b.wrapping_add(*a);
        *a = a.wrapping_sub(*c);
        *a ^= c.rotate_left(16);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a);
        *b ^= a.rotate_left(19);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b);
        *c ^= b.rotate_left(4);
        *b = b.wrapping_add(*a);
    };
    let word = |w: &[u8]| {
        let mut b = [0u8; 4];
        b[..w.len()].copy_from_slice(w);
        u32::from_le_bytes(b)
    };
    let init = 0xdead_beef_u32.wrapping_add(key.len() as u32);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut rest = key;
    while rest.len() > 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    let mut tail = [0u8; 12];
    tail[..rest.len()].copy_from_slice(rest);
    a = a.wrapping_add(word(&tail[0..4]));
    b = b.wrapping_add(word(&tail[4..8]));
    c = c.wrapping_add(word(&tail[8..12]));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(14));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(11));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(25));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(16));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(4));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(14));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(24));
    c
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn lookup3_is_jenkins_hashlittle_as_hdf5_checksums_metadata() {
        // The test vectors of Jenkins' lookup3.c, initial value 0.
        assert_eq!(lookup3(b""), 0xdead_beef);
        assert_eq!(lookup3(b"Four score and seven years ago"), 0x1777_0551);
    }

    /// A chunk written with a direct chunk write takes its space at once; the index entry
    /// pointing at it reaches the disk with the next flush. Between the two, `write` moves the
    /// end recorded in the superblock past the chunk: a copy of the file taken then (what a
    /// kill leaves) opens, records an end covering HDF5's, and is no shorter than it.
    #[test]
    fn the_recorded_end_covers_a_chunk_written_before_the_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.h5");
        let file = super::super::swmr::create_file(&path, false, false).unwrap();
        let ds = file.new_dataset::<u8>().chunk([1, 4096]).shape((1.., 4096)).create("d").unwrap();
        file.flush().unwrap();
        let ahead = EndAhead::open(&path).unwrap().unwrap();
        let recorded = |p: &Path| read_u64(&std::fs::read(p).unwrap(), END_AT);
        let before = recorded(&path);
        assert!(!ahead.write(&file).unwrap(), "nothing allocated since the flush");
        ds.resize((2, 4096)).unwrap();
        super::super::direct::write_chunk(&ds, &[1, 0], &[7u8; 4096], 0).unwrap();
        let end = end_of_allocation(&file).unwrap();
        assert!(end >= before + 4096, "the chunk took space at the end: {end} after {before}");
        assert!(ahead.write(&file).unwrap());
        let copy = dir.path().join("killed.h5");
        std::fs::copy(&path, &copy).unwrap();
        assert_eq!(recorded(&copy), end);
        assert!(std::fs::metadata(&copy).unwrap().len() >= end, "a file shorter than its end does not open");
        assert!(ahead.superblock().unwrap().is_some(), "the checksum holds");
        hdf5::File::open(&copy).unwrap();
        file.flush().unwrap();
        assert!(recorded(&path) >= end);
    }

    /// A chunk of several compressed frames, rewritten by the next frame while it is the
    /// last thing in the file: with the gap, a copy taken after the write and before the
    /// flush (what a kill leaves) still reads the frame flushed before. (Without it, HDF5
    /// writes the grown chunk over the old one, which the index on disk still names with
    /// its old length: the copy's frame 0 does not read.)
    #[test]
    fn a_rewritten_chunk_does_not_overwrite_the_one_the_index_on_disk_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.h5");
        let file = super::super::swmr::create_file(&path, false, false).unwrap();
        let ds = file.new_dataset::<f32>().chunk([4, 4096]).deflate(6).shape((0.., 4096)).create("d").unwrap();
        let mut x = 1u32;
        let mut frame = || -> Vec<f32> {
            (0..4096)
                .map(|_| {
                    x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    (x >> 8) as f32
                })
                .collect()
        };
        let first = frame();
        ds.resize((1, 4096)).unwrap();
        leave_gap(&file).unwrap();
        ds.write_slice(&first, (0, ..)).unwrap();
        file.flush().unwrap();
        ds.resize((2, 4096)).unwrap();
        leave_gap(&file).unwrap();
        ds.write_slice(&frame(), (1, ..)).unwrap();
        let killed = dir.path().join("killed.h5");
        std::fs::copy(&path, &killed).unwrap();
        let copy = hdf5::File::open(&killed).unwrap();
        let read: Vec<f32> = copy.dataset("d").unwrap().read_slice_1d((0, ..)).unwrap().to_vec();
        assert!(read == first, "frame 0 of the killed copy reads wrong");
    }

    /// SWMR's superblock (version 3) is left to HDF5: readers may be reading it.
    #[test]
    fn a_swmr_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.h5");
        let file = super::super::swmr::create_file(&path, true, false).unwrap();
        file.flush().unwrap();
        assert!(EndAhead::open(&path).unwrap().is_none());
    }
}
