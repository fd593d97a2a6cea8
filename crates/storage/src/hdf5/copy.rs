//! A copy of an HDF5 file for an append that changes its structure (see `sink`'s `create`):
//! the changes are made to the copy, flushed, and the copy renamed over the file, so a kill
//! at any moment leaves the old file or the new one, never a half-written structure.
//!
//! Why: HDF5 1.10 has no journal, and an append that deletes, adds or grows streams rewrites
//! the root group's links, chunk indexes and the superblock in several writes; a kill among
//! them left a file that does not open ("addr overflow"; `kill_stress ... append-stopped`: 62
//! of 2000 kills while the datasets of a stopped run were laid out again in place).
//!
//! The copy holds the file's data and leaves its holes holes (an output laid out whole and
//! stopped early is mostly holes), copied in the kernel (`copy_file_range`; a read/write loop
//! where the filesystem has none), with the file's permissions. Not a reflink (`FICLONE`):
//! every overwrite of a shared block would then need a new one.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use rustix::fs::SeekFrom;
use rustix::io::Errno;

use crate::error::{Error, Result};

/// Copies the file `from` to the new file `to` (replacing it), holes kept.
pub(crate) fn copy_file(from: &Path, to: &Path) -> Result<()> {
    let src = File::open(from).map_err(|e| Error::io("cannot open for copying", from, e))?;
    let dst = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(to)
        .map_err(|e| Error::io("cannot create the copy of the output at", to, e))?;
    let meta = src.metadata().map_err(|e| Error::io("cannot inspect", from, e))?;
    let len = meta.len();
    dst.set_permissions(meta.permissions()).map_err(|e| Error::io("cannot set the permissions of", to, e))?;
    dst.set_len(len).map_err(|e| Error::io("cannot size the copy of the output at", to, e))?;
    let failed = |e: Errno| match e {
        Errno::NOSPC | Errno::DQUOT => {
            Error::NoRoomToAppend { path: from.to_path_buf(), needed: len, source: e.into() }
        }
        e => Error::io("cannot copy the output to", to, io::Error::from(e)),
    };
    let mut at = 0u64;
    while at < len {
        // The next data region (ENXIO: only a hole up to the end).
        let start = match rustix::fs::seek(&src, SeekFrom::Data(at)) {
            Ok(start) => start,
            Err(Errno::NXIO) => break,
            Err(e) => return Err(failed(e)),
        };
        let end = rustix::fs::seek(&src, SeekFrom::Hole(start)).map_err(failed)?.min(len);
        copy_range(&src, &dst, start, end).map_err(failed)?;
        at = end;
    }
    Ok(())
}

/// Copies `[start, end)` of `src` to the same place in `dst`: in the kernel, or through a
/// buffer where the filesystem cannot (`copy_file_range` unsupported, across filesystems).
fn copy_range(src: &File, dst: &File, start: u64, end: u64) -> std::result::Result<(), Errno> {
    let (mut off_in, mut off_out) = (start, start);
    while off_in < end {
        let want = usize::try_from(end - off_in).unwrap_or(usize::MAX).min(1 << 30);
        match rustix::fs::copy_file_range(src, Some(&mut off_in), dst, Some(&mut off_out), want) {
            Ok(0) => return Err(Errno::IO),
            Ok(_) => {}
            Err(Errno::NOSYS | Errno::OPNOTSUPP | Errno::XDEV | Errno::INVAL) => break,
            Err(e) => return Err(e),
        }
    }
    let mut buffer = vec![0u8; 1 << 20];
    while off_in < end {
        let want = usize::try_from(end - off_in).unwrap_or(usize::MAX).min(buffer.len());
        let read = rustix::io::pread(src, &mut buffer[..want], off_in)?;
        if read == 0 {
            return Err(Errno::IO);
        }
        let mut done = 0;
        while done < read {
            done += rustix::io::pwrite(dst, &buffer[done..read], off_in + done as u64)?;
        }
        off_in += read as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests fail loudly")]

    use std::io::{Seek, Write};
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn a_copy_holds_the_same_bytes_and_keeps_holes() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("a"), dir.path().join("b"));
        let mut f = File::create(&from).unwrap();
        f.write_all(&[7u8; 10_000]).unwrap();
        f.seek(io::SeekFrom::Start(64 << 20)).unwrap();
        f.write_all(b"tail").unwrap();
        drop(f);
        std::fs::write(&to, b"old contents, longer than nothing").unwrap();
        copy_file(&from, &to).unwrap();
        let (a, b) = (std::fs::read(&from).unwrap(), std::fs::read(&to).unwrap());
        assert!(a == b, "the copy differs");
        assert!(std::fs::metadata(&to).unwrap().blocks() * 512 < 1 << 20, "the hole was filled");
    }
}
