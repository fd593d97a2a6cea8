//! The directory store the Zarr sink writes through: every key is replaced atomically.
//!
//! zarrs's own `FilesystemStore` truncates a file and writes it in place, so a kill in the
//! middle leaves half a `zarr.json` (the array no longer opens) or half a chunk (a frame
//! already reported written reads back as garbage). Here every value goes to a temporary
//! file beside its key (`.NAME.wgpipe-tmp`, a name no Zarr reader lists) and is renamed over
//! it: a reader or a kill sees the old value or the new one, never a mix. Durability against
//! a power cut is [`sync_tree`]'s, once, when the sink finishes (`SinkOptions::fsync`), not a
//! sync per value: a frame writes several files, and syncing each would cost more than the
//! frame.
//!
//! Write-only: the sink never reads what it wrote (shard buffers and steps stay in memory);
//! readers open the directory with zarrs's `FilesystemStore`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use zarrs::storage::{Bytes, OffsetBytesIterator, StorageError, StoreKey, StorePrefix, WritableStorageTraits};

/// A write-only Zarr store over the directory `root`, replacing each key atomically.
#[derive(Debug)]
pub(crate) struct AtomicDirStore {
    root: PathBuf,
    /// The operating system's error of the last failed write, with its path: zarrs wraps it
    /// in a [`StorageError`] that loses its kind, which a full disk needs.
    last_error: Mutex<Option<(PathBuf, std::io::Error)>>,
}

impl AtomicDirStore {
    /// A store writing under `root` (which exists).
    pub(crate) fn new(root: &Path) -> Self {
        AtomicDirStore { root: root.to_path_buf(), last_error: Mutex::new(None) }
    }

    /// The directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Takes the operating system's error of the last failed write, if any.
    pub(crate) fn take_error(&self) -> Option<(PathBuf, std::io::Error)> {
        self.last_error.lock().ok().and_then(|mut e| e.take())
    }

    fn path_of(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }

    /// Records `e` for [`AtomicDirStore::take_error`] and turns it into zarrs's error.
    fn fail(&self, path: &Path, e: std::io::Error) -> StorageError {
        let message = format!("{}: {e}", path.display());
        if let Ok(mut last) = self.last_error.lock() {
            *last = Some((path.to_path_buf(), e));
        }
        StorageError::Other(message)
    }

    /// Writes `value` to `path` through a temporary file and a rename.
    fn replace(&self, path: &Path, value: &[u8]) -> Result<(), StorageError> {
        let parent = path.parent().unwrap_or(&self.root);
        fs::create_dir_all(parent).map_err(|e| self.fail(parent, e))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = parent.join(format!(".{name}.wgpipe-tmp"));
        let written = fs::File::create(&tmp).and_then(|mut f| f.write_all(value));
        if let Err(e) = written.and_then(|()| fs::rename(&tmp, path)) {
            // Nothing half-written stays behind (a full disk frees the partial file's blocks).
            let _ = fs::remove_file(&tmp);
            return Err(self.fail(path, e));
        }
        Ok(())
    }
}

impl WritableStorageTraits for AtomicDirStore {
    fn set(&self, key: &StoreKey, value: Bytes) -> Result<(), StorageError> {
        self.replace(&self.path_of(key.as_str()), &value)
    }

    fn set_partial_many(&self, key: &StoreKey, _offset_values: OffsetBytesIterator<'_>) -> Result<(), StorageError> {
        // Unreachable: `supports_set_partial` is false, so zarrs writes whole values.
        Err(StorageError::Other(format!("{}: partial writes would not be atomic", key.as_str())))
    }

    fn erase(&self, key: &StoreKey) -> Result<(), StorageError> {
        let path = self.path_of(key.as_str());
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.fail(&path, e)),
            _ => Ok(()),
        }
    }

    fn erase_prefix(&self, prefix: &StorePrefix) -> Result<(), StorageError> {
        let path = self.path_of(prefix.as_str());
        match fs::remove_dir_all(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.fail(&path, e)),
            _ => Ok(()),
        }
    }

    fn supports_set_partial(&self) -> bool {
        false
    }
}

/// Forces every file and directory under `dir` to stable storage (fsync), directories after
/// their entries, so that a finished store survives a power cut with every rename in it.
pub(crate) fn sync_tree(dir: &Path) -> crate::error::Result<()> {
    let entries = fs::read_dir(dir).map_err(|e| crate::error::Error::io("cannot list", dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| crate::error::Error::io("cannot list", dir, e))?.path();
        if path.is_dir() {
            sync_tree(&path)?;
        } else {
            fs::File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(|e| crate::error::Error::io("cannot sync", &path, e))?;
        }
    }
    crate::prepare::sync_dir(dir)
}
