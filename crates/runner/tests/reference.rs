//! wgpipe's Gray-Scott output checked from outside Rust: h5py opens the HDF5 file and an
//! independent numpy implementation of the model (tests/python/gray_scott_reference.py)
//! recomputes every frame; the raw output of the same run must hold the same bytes.
//!
//! Needs python3 with h5py and numpy (`.ci/run` installs them). Without them the test says
//! so and passes, except in CI (`CI` set), where it fails.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::Path;
use std::process::Command;

use wgpipe::Pipeline;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::storage::{Hdf5Sink, RawSink, SinkOptions};

fn python_has_h5py() -> bool {
    Command::new("python3").args(["-c", "import h5py, numpy"]).output().is_ok_and(|o| o.status.success())
}

#[test]
fn an_independent_numpy_model_reproduces_the_hdf5_frames() {
    if !python_has_h5py() {
        assert!(std::env::var_os("CI").is_none(), "CI must run this check: python3 -m pip install h5py numpy");
        eprintln!("skipped: python3 with h5py and numpy not found (python3 -m pip install h5py numpy)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let h5 = dir.path().join("gs.h5");
    let raw = dir.path().join("gs-raw");
    let params = GrayScottParams { feed: 0.03, kill: 0.06, ..Default::default() };
    for (path, hdf5) in [(&h5, true), (&raw, false)] {
        let options = SinkOptions::new(path);
        let builder = Pipeline::builder()
            .gpus(common::lavapipe(2))
            .grid(40, 36)
            .frames(6)
            .steps_per_frame(25)
            .gray_scott(params, 5, 0.05);
        let report = if hdf5 { builder.sink(Hdf5Sink::new(options)) } else { builder.sink(RawSink::new(options)) };
        assert_eq!(report.run().unwrap().written_frames(), 12);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/gray_scott_reference.py");
    let out = Command::new("python3").arg(script).arg(&h5).arg(&raw).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the numpy reference disagrees:\n{text}");
    assert!(text.contains("ok: 12 frames match"), "{text}");
}
