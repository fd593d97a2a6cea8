//! Descriptors do not leak into child processes: a child started while an HDF5 output is
//! open (being written, or being read) holds no descriptor of it.

#![cfg(all(feature = "hdf5", target_os = "linux"))]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use common::{frame, layout, tempdir};
use wgpipe_storage::{SinkOptions, open_output, open_sink};

/// Descriptors of process `pid` open on the file at `path` (same device and inode).
fn descriptors_of(pid: u32, path: &Path) -> Vec<String> {
    let target = std::fs::metadata(path).unwrap();
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| std::fs::metadata(e.path()).is_ok_and(|m| m.dev() == target.dev() && m.ino() == target.ino()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// A child that waits for its stdin to close: it has exec'd once `sleep`-like `cat` runs.
fn start_child() -> Child {
    Command::new("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn().unwrap()
}

/// Asserts this process holds `path` open and a child started now does not.
fn child_holds_nothing_of(path: &Path, what: &str) {
    assert!(
        !descriptors_of(std::process::id(), path).is_empty(),
        "{what}: this process has {} not open",
        path.display()
    );
    let mut child = start_child();
    // `cat` has exec'd once its /proc/<pid>/exe is cat (before exec it is this test binary).
    let start = std::time::Instant::now();
    while std::fs::read_link(format!("/proc/{}/exe", child.id()))
        .is_ok_and(|exe| exe == std::env::current_exe().unwrap())
    {
        assert!(start.elapsed().as_secs() < 10, "the child never exec'd");
        std::thread::yield_now();
    }
    let leaked = descriptors_of(child.id(), path);
    drop(child.stdin.take());
    child.wait().unwrap();
    assert!(leaked.is_empty(), "{what}: the child inherited descriptors {leaked:?} of {}", path.display());
}

#[test]
fn a_child_started_while_an_hdf5_output_is_open_inherits_none_of_it() {
    let dir = tempdir();
    let path = dir.path().join("out.h5");
    let l = layout(None);
    let mut sink = open_sink("hdf5", &SinkOptions::new(&path)).unwrap();
    sink.begin(&l).unwrap();
    sink.write(&frame(&l, 0, 0)).unwrap();
    child_holds_nothing_of(&path, "while writing");
    sink.finish().unwrap();

    let reader = open_output(&path).unwrap();
    child_holds_nothing_of(&path, "while reading");
    drop(reader);

    let mut sink = open_sink("hdf5", &SinkOptions::new(&path).with_append(true)).unwrap();
    let mut more = layout(None);
    more.streams.iter_mut().for_each(|s| s.name.push_str("-more"));
    sink.begin(&more).unwrap();
    child_holds_nothing_of(&path, "while appending");
    sink.finish().unwrap();
}

/// Close-on-exec takes effect when a child execs; until then a child started by another
/// thread holds HDF5's lock on a file this process just closed. Reopening must wait that
/// out rather than fail with "unable to lock file" (before the retry: 18 of 300 failed).
#[test]
fn reopening_while_another_thread_starts_children_works() {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let spawner = s.spawn(|| {
            let mut children = 0;
            while !stop.load(Relaxed) {
                Command::new("true").status().unwrap();
                children += 1;
            }
            children
        });
        let dir = tempdir();
        let l = layout(None);
        let failures: Vec<String> = (0..100)
            .filter_map(|i| {
                let path = dir.path().join(format!("out{i}.h5"));
                let mut sink = open_sink("hdf5", &SinkOptions::new(&path)).unwrap();
                sink.begin(&l).unwrap();
                sink.write(&frame(&l, 0, 0)).unwrap();
                sink.finish().unwrap();
                open_output(&path).err().map(|e| e.to_string())
            })
            .collect();
        stop.store(true, Relaxed);
        let children = spawner.join().unwrap();
        assert!(children > 20, "only {children} children started: the race was not exercised");
        assert!(failures.is_empty(), "{} of 100 reopens failed, e.g. {}", failures.len(), failures[0]);
    });
}
