//! The checkpoint file: `STREAM.ckpt` in the checkpoint directory, replaced atomically.
//!
//! Layout: the magic `WGPIPECK`, a little-endian u32 format version, a u32 header length,
//! the header as JSON (stream, frames, step, fingerprint, state bytes and their checksum),
//! then the state's bytes. The checksum catches a file damaged on disk; a torn file cannot
//! happen (it is written under a temporary name and renamed into place).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wgpipe_storage::Error as StorageError;

const MAGIC: &[u8; 8] = b"WGPIPECK";
const VERSION: u32 = 1;
/// Headers are a few hundred bytes; anything larger is not a checkpoint.
const MAX_HEADER: u32 = 1 << 20;

/// A stream's saved state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedState {
    /// The stream's name.
    pub stream: String,
    /// Frames of the stream done when it was saved: the stream continues at this frame index.
    pub frames: u64,
    /// The simulation step of the last frame done.
    pub step: u64,
    /// What produced it (kernel, parameters, seed, grid, steps per frame, shader): a run
    /// resumes from it only when its own stream has the same.
    pub fingerprint: String,
    /// The source's state bytes.
    pub state: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    stream: String,
    frames: u64,
    step: u64,
    fingerprint: String,
    state_bytes: u64,
    checksum: u64,
}

/// The file of stream `stream` in `dir`.
fn path(dir: &Path, stream: &str) -> PathBuf {
    dir.join(format!("{stream}.ckpt"))
}

/// FNV-1a, 64 bits: enough to notice a damaged file (or a changed shader in a fingerprint),
/// and no dependency.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn io(action: &'static str, path: &Path, source: std::io::Error) -> StorageError {
    StorageError::Io { action, path: path.to_path_buf(), source }
}

/// Errors unless `dir` is a directory or nothing: something else there would make every
/// checkpoint fail with a less helpful error.
fn check_dir(dir: &Path) -> Result<(), StorageError> {
    match fs::metadata(dir) {
        Ok(m) if !m.is_dir() => Err(io(
            "the output's checkpoints go to",
            dir,
            std::io::Error::new(std::io::ErrorKind::NotADirectory, "it is not a directory: move it away"),
        )),
        _ => Ok(()),
    }
}

/// Writes `saved` as `dir/STREAM.ckpt`, replacing the previous one atomically: under a
/// temporary name first, then renamed (with `fsync`, the file and then the directory synced).
pub fn write(dir: &Path, saved: &SavedState, fsync: bool) -> Result<(), StorageError> {
    check_dir(dir)?;
    fs::create_dir_all(dir).map_err(|e| io("cannot create the checkpoint directory", dir, e))?;
    let header = Header {
        stream: saved.stream.clone(),
        frames: saved.frames,
        step: saved.step,
        fingerprint: saved.fingerprint.clone(),
        state_bytes: saved.state.len() as u64,
        checksum: checksum(&saved.state),
    };
    let header = serde_json::to_vec(&header).map_err(|e| io("cannot encode checkpoint", dir, e.into()))?;
    let target = path(dir, &saved.stream);
    let temporary = dir.join(format!(".{}.ckpt.writing", saved.stream));
    let written = (|| {
        let mut f = fs::File::create(&temporary)?;
        f.write_all(MAGIC)?;
        f.write_all(&VERSION.to_le_bytes())?;
        f.write_all(&(header.len() as u32).to_le_bytes())?;
        f.write_all(&header)?;
        f.write_all(&saved.state)?;
        if fsync {
            f.sync_all()?;
        }
        Ok(())
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temporary);
        return Err(io("cannot write checkpoint", &temporary, e));
    }
    fs::rename(&temporary, &target).map_err(|e| io("cannot replace checkpoint", &target, e))?;
    if fsync {
        fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io("cannot sync", dir, e))?;
    }
    Ok(())
}

/// The checkpoint of `stream` in `dir`, `None` when there is none; an error names the file
/// when it exists but is not a whole checkpoint of that stream.
pub fn read(dir: &Path, stream: &str) -> Result<Option<SavedState>, StorageError> {
    let at = path(dir, stream);
    let bytes = match fs::read(&at) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("cannot read checkpoint", &at, e)),
    };
    let bad = |reason: String| StorageError::BadOutput {
        path: at.clone(),
        reason: format!("{reason}: delete it to restart the stream {stream:?} from frame 0"),
    };
    if bytes.len() < 16 || &bytes[..8] != MAGIC {
        return Err(bad("it is not a wgpipe checkpoint".to_owned()));
    }
    let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    if word(8) != VERSION {
        return Err(bad(format!("checkpoint format {} is not the {VERSION} this wgpipe reads", word(8))));
    }
    let header_len = word(12);
    if header_len > MAX_HEADER || bytes.len() < 16 + header_len as usize {
        return Err(bad("its header is cut short".to_owned()));
    }
    let (header, state) = bytes[16..].split_at(header_len as usize);
    let header: Header = serde_json::from_slice(header).map_err(|e| bad(format!("its header does not read ({e})")))?;
    if header.state_bytes != state.len() as u64 || header.checksum != checksum(state) {
        return Err(bad(format!(
            "its state is damaged ({} bytes of {}, or a wrong checksum)",
            state.len(),
            header.state_bytes
        )));
    }
    if header.stream != stream {
        return Err(bad(format!("it holds stream {:?}", header.stream)));
    }
    Ok(Some(SavedState {
        stream: header.stream,
        frames: header.frames,
        step: header.step,
        fingerprint: header.fingerprint,
        state: state.to_vec(),
    }))
}

/// Deletes the checkpoint of `stream` in `dir` (nothing when there is none), and `dir` once
/// it is empty.
pub fn remove(dir: &Path, stream: &str) -> Result<(), StorageError> {
    check_dir(dir)?;
    let at = path(dir, stream);
    match fs::remove_file(&at) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io("cannot delete checkpoint", &at, e)),
        _ => {}
    }
    // Fails while other streams' checkpoints remain (or the directory is gone): both fine.
    let _ = fs::remove_dir(dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests fail loudly")]
    use super::*;

    fn saved(stream: &str, frames: u64) -> SavedState {
        SavedState {
            stream: stream.to_owned(),
            frames,
            step: frames * 8,
            fingerprint: "gray-scott, seed 3".to_owned(),
            state: (0..1000u32).flat_map(|i| (i * frames as u32).to_le_bytes()).collect(),
        }
    }

    #[test]
    fn a_checkpoint_reads_back_replaces_the_previous_one_and_goes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("out.h5.checkpoints");
        assert_eq!(read(&d, "a").unwrap(), None);
        write(&d, &saved("a", 3), false).unwrap();
        write(&d, &saved("b", 5), true).unwrap();
        write(&d, &saved("a", 6), false).unwrap();
        assert_eq!(read(&d, "a").unwrap(), Some(saved("a", 6)));
        assert_eq!(read(&d, "b").unwrap(), Some(saved("b", 5)));
        let mut names: Vec<_> = fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["a.ckpt", "b.ckpt"], "no temporary file is left");
        remove(&d, "a").unwrap();
        assert!(d.exists());
        remove(&d, "b").unwrap();
        assert!(!d.exists(), "the empty directory goes with its last checkpoint");
    }

    #[test]
    fn a_damaged_checkpoint_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &saved("a", 3), false).unwrap();
        let at = dir.path().join("a.ckpt");
        let mut bytes = fs::read(&at).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&at, &bytes).unwrap();
        let e = read(dir.path(), "a").unwrap_err().to_string();
        assert!(e.contains("a.ckpt") && e.contains("damaged") && e.contains("delete it"), "{e}");
        fs::write(&at, &bytes[..20]).unwrap();
        assert!(read(dir.path(), "a").unwrap_err().to_string().contains("cut short"));
        fs::write(&at, b"not a checkpoint at all").unwrap();
        assert!(read(dir.path(), "a").unwrap_err().to_string().contains("not a wgpipe checkpoint"));
    }
}
