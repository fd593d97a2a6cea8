//! Disk space reserved ahead of the HDF5 library, so a full disk fails *before* HDF5 writes.
//!
//! HDF5 records the end of its allocated space in the superblock; if a write past the end of
//! the file fails (disk full, file size limit) the superblock can end up claiming more bytes
//! than the file has, and the library then refuses to open the file at all ("truncated
//! file"). So before each frame the sink extends the file past what the frame and its
//! metadata may need (`set_len`, a sparse extension): the file is then never shorter than
//! the superblock says, and a file size limit (EFBIG) stops the frame before HDF5 writes any
//! of it. After closing, [`trim`] cuts the unused extension off again.
//!
//! Why not `fallocate`, which would also turn ENOSPC into an early error: on ext4 it made
//! the HDF5 sink about 3x slower (1.46 GB/s → 0.5 GB/s with fsync, see the README), and the
//! sparse extension already keeps the file openable when the disk fills up; what ENOSPC can
//! still cost is the frame being written when it happens.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Room for metadata HDF5 may add while storing one frame (index nodes, object header
/// continuations, attributes at finish): a generous bound on what one frame needs.
pub(crate) const METADATA_MARGIN: u64 = 64 << 10;

/// A second handle on the HDF5 file, used only to grow it.
#[derive(Debug)]
pub(crate) struct Reserve {
    path: PathBuf,
    file: File,
}

impl Reserve {
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io("cannot open for reserving space", path, e))?;
        Ok(Reserve { path: path.to_path_buf(), file })
    }

    /// Makes the file at least `len` bytes long (sparse: no blocks are written).
    pub(crate) fn ensure(&self, len: u64) -> Result<()> {
        let have = self.file.metadata().map_err(|e| Error::io("cannot inspect", &self.path, e))?.len();
        if have >= len {
            return Ok(());
        }
        self.file.set_len(len).map_err(|e| Error::io("cannot reserve space for the next frame in", &self.path, e))
    }
}

/// End-of-file address recorded in the superblock of a closed HDF5 file (versions 0 to 3,
/// 8-byte addresses, superblock at offset 0 as this sink writes it).
fn stored_eof(path: &Path) -> Option<u64> {
    let mut head = [0u8; 48];
    File::open(path).ok()?.read_exact(&mut head).ok()?;
    let at = match head[8] {
        0 if head[13] == 8 => 40,
        2 | 3 if head[9] == 8 => 28,
        _ => return None,
    };
    let mut a = [0u8; 8];
    a.copy_from_slice(&head[at..at + 8]);
    Some(u64::from_le_bytes(a))
}

/// Cuts a closed HDF5 file back to the end HDF5 recorded, dropping unused reserved space.
pub(crate) fn trim(path: &Path) -> Result<()> {
    let Some(eof) = stored_eof(path) else {
        return Ok(());
    };
    let file = OpenOptions::new().write(true).open(path).map_err(|e| Error::io("cannot open", path, e))?;
    let len = file.metadata().map_err(|e| Error::io("cannot inspect", path, e))?.len();
    if len > eof {
        file.set_len(eof).map_err(|e| Error::io("cannot trim reserved space of", path, e))?;
    }
    Ok(())
}
