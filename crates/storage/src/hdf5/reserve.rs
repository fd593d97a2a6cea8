//! Disk space reserved ahead of the HDF5 library, so that a full disk or a file size limit
//! stops the HDF5 sink *between* frames, never inside HDF5.
//!
//! Why: HDF5 1.10 has no journal. When one of its writes fails (ENOSPC, EFBIG) while it
//! stores a frame or flushes its metadata, some metadata blocks reach the disk and others do
//! not, and the file then points at blocks it never wrote. h5py and h5dump refuse such a
//! file ("addr overflow ... eoa"): every frame is lost, not only the last one (the default
//! run on a 6 MiB tmpfs lost all 23 frames it had reported written). Extending the file
//! sparsely (`set_len`) does not help: it allocates nothing, so the write still fails. So the
//! sink never lets HDF5 meet a full disk:
//!
//! - Before each frame, `fallocate(FALLOC_FL_KEEP_SIZE)` makes the filesystem allocate real
//!   blocks beyond the end of the file for everything the frame can add (its chunks, index
//!   nodes), plus a reserve for `finish` (attributes, flush, close). KEEP_SIZE leaves the
//!   file size alone, so HDF5 sees an ordinary file, and a write into allocated blocks cannot
//!   fail for lack of space. When the allocation fails, the frame is refused before HDF5
//!   writes any of it, and the finish reserve, allocated with the previous frame, lets
//!   `finish` close a consistent file that says `complete = false`.
//! - The reservation grows in steps (a sixteenth of the file, 8 MiB to 256 MiB, and at most
//!   half the free space so the sink never takes the last of a shared disk), so that most
//!   frames find their blocks already allocated; near a full disk it falls back to exactly
//!   what the next frame needs. Not larger: allocating costs about as much per byte as the
//!   write itself on tmpfs, and what is left at the end is allocated for nothing and freed
//!   again: with 64 MiB steps a run on tmpfs took clearly longer than without reservation,
//!   with these steps the difference is within the noise (`cargo xtask bench reserve-cost
//!   --out /dev/shm`; the guide's benchmarks page).
//! - A truncate releases blocks allocated beyond the end of a file (ext4 and tmpfs both do,
//!   even a truncate to the same size), and HDF5 truncates the file to its end of allocation
//!   when it flushes and the two differ, so a reservation made earlier is not a promise.
//!   Before each frame the file's allocated size (`st_blocks`) is compared with what was
//!   reserved: while it holds, the frame costs one `fstat`; when it fell short (a truncate),
//!   the frame's range is allocated again.
//! - A file size limit (`RLIMIT_FSIZE`, `ulimit -f`) is invisible to KEEP_SIZE fallocate,
//!   and a write past it raises SIGXFSZ, which kills the process. The limit is read before
//!   each frame, and a frame that could take the file past it, finish reserve included, is
//!   refused.
//! - [`Reserve::release`] truncates the closed file to its own size, which gives the unused
//!   reservation back (punching a hole past the end of a file does nothing on ext4).
//!
//! Weaker cases. Where fallocate is not supported (EOPNOTSUPP: some network and FUSE
//! filesystems), the sink checks the free space (`fstatvfs`) before each frame instead: that
//! catches a disk filling up, but not another writer taking the space between the check and
//! HDF5's write. An I/O error other than a full disk (EIO from a failing device) cannot be
//! reserved against: HDF5 may then leave the file as inconsistent as described above. A run
//! killed between frames keeps its reservation beyond the end of the file (counted by `du`,
//! not by `ls`) until the file is next written by wgpipe or truncated to its own size.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::FallocateFlags;
use rustix::io::Errno;
use rustix::process::{Resource, getrlimit};

use crate::error::{Error, Result};

/// Smallest step by which the reservation grows.
const MIN_STEP: u64 = 8 << 20;
/// Largest step: about what a killed run may leave allocated beyond the end of its file.
const MAX_STEP: u64 = 256 << 20;

/// How space is made sure of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Blocks are allocated ahead with fallocate (the guarantee described above).
    Allocate,
    /// The filesystem has no fallocate: free space is checked before each frame.
    CheckFreeSpace,
}

/// A second handle on the HDF5 file (opened close-on-exec), used only to reserve space.
#[derive(Debug)]
pub(crate) struct Reserve {
    path: PathBuf,
    file: File,
    mode: Mode,
    /// Bytes kept beyond every frame's needs for `finish`.
    finish: u64,
    /// End of the range this handle last had allocated (0 before the first frame).
    reserved: u64,
}

/// Size and allocated bytes of a file.
struct Extent {
    size: u64,
    allocated: u64,
}

impl Reserve {
    /// Opens the file at `at` (already created by HDF5: the output `path` itself, or its
    /// staging name while it is new) for reserving; errors name `path`. `finish` is the room
    /// `finish` needs after the last frame.
    pub(crate) fn open(at: &Path, path: &Path, finish: u64) -> Result<Self> {
        let file =
            OpenOptions::new().write(true).open(at).map_err(|e| Error::io("cannot open for reserving space", at, e))?;
        Ok(Reserve { path: path.to_path_buf(), file, mode: Mode::Allocate, finish, reserved: 0 })
    }

    /// Makes sure the disk holds `need` bytes past `end` (HDF5's end of file) plus the
    /// finish reserve, before HDF5 is given something (a frame, new streams) that may add up
    /// to `need` bytes.
    ///
    /// Errors, with nothing written, if the disk is full or the file size limit would be
    /// passed; the finish reserve of the previous call is kept, so `finish` can still close
    /// the file.
    pub(crate) fn before_write(&mut self, end: u64, need: u64) -> Result<()> {
        let extent = self.extent()?;
        let end = end.max(extent.size);
        let want = end.saturating_add(need).saturating_add(self.finish);
        check_size_limit(&self.path, want)?;
        let limit = file_size_limit();
        if self.mode == Mode::Allocate {
            // Everything reserved is still allocated (no truncate gave it back): nothing to do.
            if extent.allocated >= self.reserved && want <= self.reserved {
                return Ok(());
            }
            if extent.allocated < self.reserved {
                self.reserved = extent.size;
            }
            if want > self.reserved {
                self.grow(end, want, limit)?;
            }
        }
        // HDF5 writes from `end` on, and may fill a partial chunk just below it.
        self.ensure(end.saturating_sub(need), want, want - end)
    }

    /// Re-asserts the finish reserve past `end` before `finish` writes its attributes.
    pub(crate) fn before_finish(&mut self, end: u64) -> Result<()> {
        let end = end.max(self.extent()?.size);
        let want = end.saturating_add(self.finish);
        check_size_limit(&self.path, want)?;
        self.ensure(end, want, self.finish)
    }

    /// Errors with a full disk unless `need` bytes are free: before a frame written into
    /// space that exists in the file but has no blocks yet (an output laid out whole, see
    /// `preallocate`), where a full disk could only fail the frame's data, never metadata,
    /// but the error is clearer between frames. Another writer may take the space between
    /// this check and the write; the frame then fails the same way, as the run's error.
    pub(crate) fn check_free(&self, need: u64) -> Result<()> {
        if self.free_bytes()?.is_some_and(|free| free < need) {
            return Err(Error::DiskFull { path: self.path.clone(), needed: need, source: Errno::NOSPC.into() });
        }
        Ok(())
    }

    /// Gives back what was reserved beyond the end of the file; call after HDF5 closed it.
    pub(crate) fn release(self) -> Result<()> {
        if self.mode != Mode::Allocate {
            return Ok(());
        }
        let size = self.extent()?.size;
        // A truncate to the current size frees the blocks allocated beyond it.
        self.file.set_len(size).map_err(|e| Error::io("cannot give back the space reserved for", &self.path, e))
    }

    /// Tries one large step of reservation, so that the next frames find their blocks
    /// allocated. Failing for lack of space is no error here: [`Reserve::ensure`] then asks
    /// for exactly what the frame needs.
    fn grow(&mut self, end: u64, want: u64, limit: Option<u64>) -> Result<()> {
        let mut step = (end / 16).clamp(MIN_STEP, MAX_STEP);
        if let Ok(Some(free)) = self.free_bytes() {
            step = step.min(free / 2);
        }
        let mut target = want.max(end.saturating_add(step));
        if let Some(limit) = limit {
            target = target.min(limit);
        }
        let from = self.reserved.max(end);
        if target <= from {
            return Ok(());
        }
        match allocate(&self.file, from, target - from) {
            Ok(()) => self.reserved = target,
            Err(e) if unsupported(e) => self.mode = Mode::CheckFreeSpace,
            Err(Errno::NOSPC | Errno::DQUOT) => {}
            Err(e) => return Err(Error::io("cannot reserve space for the next frame in", &self.path, e.into())),
        }
        Ok(())
    }

    /// Makes sure `[from, to)` is allocated (or, without fallocate, that `needed` bytes are
    /// free).
    fn ensure(&mut self, from: u64, to: u64, needed: u64) -> Result<()> {
        if self.mode == Mode::Allocate {
            match allocate(&self.file, from, to - from) {
                Ok(()) => {
                    self.reserved = self.reserved.max(to);
                    return Ok(());
                }
                Err(e) if unsupported(e) => self.mode = Mode::CheckFreeSpace,
                Err(e @ (Errno::NOSPC | Errno::DQUOT)) => {
                    return Err(Error::DiskFull { path: self.path.clone(), needed, source: e.into() });
                }
                Err(e) => return Err(Error::io("cannot reserve space for the next frame in", &self.path, e.into())),
            }
        }
        self.check_free(needed)
    }

    /// Current size and allocated bytes of the file.
    fn extent(&self) -> Result<Extent> {
        let m = self.file.metadata().map_err(|e| Error::io("cannot inspect", &self.path, e))?;
        Ok(Extent { size: m.len(), allocated: m.blocks().saturating_mul(512) })
    }

    /// Bytes an unprivileged writer may still use on the file's filesystem; `None` for a
    /// filesystem without a size (ramfs reports 0 blocks in all).
    fn free_bytes(&self) -> Result<Option<u64>> {
        let s = rustix::fs::fstatvfs(&self.file)
            .map_err(|e| Error::io("cannot read the free space of the disk holding", &self.path, io::Error::from(e)))?;
        Ok((s.f_blocks > 0).then(|| s.f_bavail.saturating_mul(s.f_frsize)))
    }
}

/// Allocates `[offset, offset + len)` of `file` without changing its size.
fn allocate(file: &File, offset: u64, len: u64) -> std::result::Result<(), Errno> {
    if len == 0 {
        return Ok(());
    }
    rustix::fs::fallocate(file, FallocateFlags::KEEP_SIZE, offset, len)
}

/// Whether fallocate failed because the filesystem (or kernel) does not offer it.
fn unsupported(e: Errno) -> bool {
    matches!(e, Errno::OPNOTSUPP | Errno::NOSYS)
}

/// Errors when a file at `path` of `size` bytes would pass this process's file size limit,
/// where a write past it would raise SIGXFSZ and kill the process.
pub(crate) fn check_size_limit(path: &Path, size: u64) -> Result<()> {
    match file_size_limit().filter(|&l| size > l) {
        Some(limit) => Err(Error::FileSizeLimit { path: path.to_path_buf(), needed: size, limit }),
        None => Ok(()),
    }
}

/// This process's file size limit (`RLIMIT_FSIZE` soft limit), if any.
fn file_size_limit() -> Option<u64> {
    getrlimit(Resource::Fsize).current
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn allocated(path: &Path) -> u64 {
        std::fs::metadata(path).unwrap().blocks() * 512
    }

    /// A truncate gives every block past the end of the file back (as HDF5's flush may do):
    /// the next frame notices and allocates its range again; `release` gives the rest back.
    #[test]
    fn a_reservation_lost_to_a_truncate_is_made_again_and_released_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![1u8; 10_000]).unwrap();
        let (need, finish) = (1 << 20, 64 << 10);
        let mut r = Reserve::open(&path, &path, finish).unwrap();
        r.before_write(10_000, need).unwrap();
        assert_eq!(r.mode, Mode::Allocate, "{} has no fallocate", dir.path().display());
        assert!(allocated(&path) >= 10_000 + need + finish, "{} bytes allocated", allocated(&path));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 10_000, "the size changed");

        OpenOptions::new().write(true).open(&path).unwrap().set_len(10_000).unwrap();
        assert!(allocated(&path) < 10_000 + need, "the truncate kept {} bytes", allocated(&path));
        r.before_write(10_000, need).unwrap();
        assert!(allocated(&path) >= 10_000 + need + finish, "not allocated again: {} bytes", allocated(&path));

        r.release().unwrap();
        assert!(allocated(&path) <= 16_384, "{} bytes still allocated after release", allocated(&path));
    }
}
