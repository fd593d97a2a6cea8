//! A run killed without `finish` leaves an output holding every frame written before the kill.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::process::Command;

use common::{assert_holds, frame, layout, tempdir, test_exe};
use wgpipe_storage::{SinkOptions, open_output, open_sink};

/// Frames each stream holds when the child aborts.
const K: [u64; 2] = [5, 3];

/// Child side: writes `K` frames then aborts the process, as a SIGKILL or a crash would
/// (no destructors, no `finish`). Does nothing unless started by the parent.
#[test]
#[ignore = "child process of killed_runs_leave_every_complete_frame_readable"]
fn crash_child() {
    let (Ok(kind), Ok(path)) = (std::env::var("WGPIPE_TEST_KIND"), std::env::var("WGPIPE_TEST_OUT")) else {
        return;
    };
    let l = layout(Some(10));
    let swmr = std::env::var("WGPIPE_TEST_SWMR").is_ok();
    let mut sink = open_sink(&kind, &SinkOptions::new(&path).with_swmr(swmr)).unwrap();
    sink.begin(&l).unwrap();
    for i in 0..K[0] {
        sink.write(&frame(&l, 0, i)).unwrap();
        if i < K[1] {
            sink.write(&frame(&l, 1, i)).unwrap();
        }
    }
    std::process::abort();
}

#[test]
fn killed_runs_leave_every_complete_frame_readable() {
    let dir = tempdir();
    // An SWMR file killed while written keeps its "open for writing" flags: wgpipe's reader
    // opens it as an SWMR reader (plain HDF5 readers need `h5clear -s` first).
    let cases = [("raw", false), ("hdf5", false), ("hdf5", true)];
    for (kind, swmr) in cases.into_iter().filter(|(k, _)| *k == "raw" || cfg!(feature = "hdf5")) {
        let path = dir.path().join(format!("killed-{kind}-{swmr}"));
        let mut child = Command::new(test_exe());
        child
            .args(["--exact", "crash_child", "--ignored", "--nocapture"])
            .env("WGPIPE_TEST_KIND", kind)
            .env("WGPIPE_TEST_OUT", &path);
        if swmr {
            child.env("WGPIPE_TEST_SWMR", "1");
        }
        let out = child.output().unwrap();
        assert!(!out.status.success(), "{kind}: the child should have aborted");
        let output = open_output(&path).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_holds(&output, &layout(Some(10)), &K, kind);
        assert!(!output.complete(), "{kind}");
        assert!(output.streams().iter().all(|s| !s.complete && s.expected_frames == Some(10)));
    }
}
