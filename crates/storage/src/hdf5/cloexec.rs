//! Close-on-exec for the descriptors HDF5 opens, and reopening a file a child still holds.
//!
//! Every descriptor wgpipe opens itself is close-on-exec (Rust's standard library sets
//! `O_CLOEXEC`), but HDF5 1.10's sec2 driver opens files without it. A program that embeds
//! wgpipe and starts a child process while an HDF5 output is open would hand the child the
//! descriptor and, with it, HDF5's lock on the file: until the child exits, nobody can reopen
//! the file ("unable to lock file"). HDF5 takes no flag for this, so right after HDF5 opened a
//! file, [`close_on_exec`] finds the descriptors naming the same file (same device and inode)
//! in `/proc/self/fd` and sets `FD_CLOEXEC` on them.
//!
//! Why not `H5Fget_vfd_handle`: it is not wrapped by hdf5-metno, and calling the C library
//! beside hdf5-metno would bypass the lock hdf5-metno serialises HDF5 calls with.
//!
//! What remains: a child started by another thread in the microseconds between HDF5's `open`
//! and this call still inherits the descriptor. Descriptors of the same file that the
//! application opened itself without close-on-exec get the flag too. Where `/proc` is absent
//! (not Linux, or not mounted) nothing is done and HDF5's descriptors stay inheritable.
//!
//! Close-on-exec closes a descriptor in the child only when the child execs: between its
//! fork and its exec, a child started by any thread holds a copy of every descriptor, and so
//! HDF5's lock on a file this process may have just closed. Reopening the file in that
//! window fails with "unable to lock file" (EAGAIN): 18 of 300 reopens did, with another
//! thread starting children in a loop. [`retry_while_locked`] waits the window out.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::Result;

/// How long an HDF5 open is retried while the file is locked: far longer than a child takes
/// from fork to exec, far shorter than anyone waits for a file another process is writing.
const LOCK_PATIENCE: Duration = Duration::from_secs(2);

/// Runs `open` (an HDF5 open) again while it fails because the file is locked, for up to
/// [`LOCK_PATIENCE`]; then returns its error, which says the file is locked.
pub(crate) fn retry_while_locked<T>(mut open: impl FnMut() -> hdf5::Result<T>) -> hdf5::Result<T> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match open() {
            Err(e) if is_lock_conflict(&e) && start.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            result => return result,
        }
    }
}

/// Whether HDF5 failed to open a file because another descriptor holds its lock.
fn is_lock_conflict(e: &hdf5::Error) -> bool {
    let text = e.to_string();
    text.contains("unable to lock file") && text.contains("errno = 11")
}

/// Sets close-on-exec on every descriptor of this process open on the file at `path`.
#[cfg(target_os = "linux")]
pub(crate) fn close_on_exec(path: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;

    use crate::error::Error;

    let target = std::fs::metadata(path).map_err(|e| Error::io("cannot inspect", path, e))?;
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        // Follows the descriptor's link to what it is open on.
        let same = std::fs::metadata(entry.path()).is_ok_and(|m| m.dev() == target.dev() && m.ino() == target.ino());
        if same {
            set_close_on_exec(fd)
                .map_err(|e| Error::io("cannot set close-on-exec on HDF5's descriptor of", path, e))?;
        }
    }
    Ok(())
}

/// Does nothing: without `/proc/self/fd` HDF5's descriptor cannot be found (see the module).
#[cfg(not(target_os = "linux"))]
pub(crate) fn close_on_exec(_path: &Path) -> Result<()> {
    Ok(())
}

/// Sets `FD_CLOEXEC` on descriptor `fd`; a descriptor closed meanwhile is skipped.
#[cfg(target_os = "linux")]
#[expect(unsafe_code, reason = "HDF5 gives no handle on its descriptor: it can only be borrowed by number")]
fn set_close_on_exec(fd: i32) -> std::io::Result<()> {
    use rustix::fd::BorrowedFd;
    use rustix::io::{Errno, FdFlags, fcntl_getfd, fcntl_setfd};

    // SAFETY: `fd` was listed in /proc/self/fd as open on the output file, which HDF5 keeps
    // open until the caller closes the `hdf5::File` it holds across this call. The borrow
    // ends with this function. Should the application close a descriptor of its own on the
    // same file meanwhile, fcntl fails with EBADF, which is skipped; if the number were even
    // reused at once, the only effect is close-on-exec on that new descriptor.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    let result = fcntl_getfd(borrowed).and_then(|flags| {
        if flags.contains(FdFlags::CLOEXEC) { Ok(()) } else { fcntl_setfd(borrowed, flags | FdFlags::CLOEXEC) }
    });
    match result {
        Ok(()) | Err(Errno::BADF) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
