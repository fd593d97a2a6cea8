//! wgpipe's Gray-Scott output checked from outside Rust: h5py opens the HDF5 file and an
//! independent numpy implementation of the model (tests/python/gray_scott_reference.py)
//! recomputes every frame; the raw output of the same run must hold the same bytes.
//!
//! Needs a python3 with h5py and numpy (`apt-get install python3-h5py python3-numpy`;
//! `.ci/run` installs them): `WGPIPE_PYTHON`, else `python3` on `PATH`, else
//! `/usr/bin/python3` (see `common::python::python_with`). Without one the test fails and says what to
//! install.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::Path;
use std::process::Command;

use wgpipe::Pipeline;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::storage::{Hdf5Sink, RawSink, SinkOptions};

#[test]
fn an_independent_numpy_model_reproduces_the_hdf5_frames() {
    // Found first: a missing interpreter fails the test before any GPU work.
    let python = common::python::python_with(&["h5py", "numpy"]);
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
    let out = Command::new(&python).arg(script).arg(&h5).arg(&raw).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the numpy reference disagrees:\n{text}");
    assert!(text.contains("ok: 12 frames match"), "{text}");
}
