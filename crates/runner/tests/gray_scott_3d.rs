//! The flagship 3-D model as a user runs it: `wgpipe run configs/gray-scott-3d.toml` (the
//! ADIOS2 tutorial's Gray-Scott, 64³), then h5py reads every frame and an independent float64
//! numpy implementation (crates/compute/tests/python/gray_scott_3d_reference.py, which states
//! the tolerance and why) recomputes it. Needs a python3 with h5py and numpy, found as
//! `common::python::python_with` says; without one the test fails and says what to install.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::Path;
use std::process::Command;

use wgpipe::storage::open_output;

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

#[test]
fn the_3d_config_runs_and_matches_the_float64_reference() {
    let python = common::python::python_with(&["h5py", "numpy"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gs3d.h5");
    // 10 frames of 10 steps: the reference's 100 steps, every frame checked. Noise on, so the
    // check covers the counter-based noise as well as the deterministic model.
    let run = Command::new(env!("CARGO_BIN_EXE_wgpipe"))
        .arg("run")
        .arg(repo("configs/gray-scott-3d.toml"))
        .args(["--set", "run.frames=10", "--set", "kernel.params.noise=0.001", "--set", "run.seed=7"])
        .args(["--set", &format!("output.path={:?}", out.display().to_string()), "--progress", "none"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "wgpipe run failed:\n{stderr}");

    let output = open_output(&out).unwrap();
    let names: Vec<&str> = output.fields().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["u", "v"]);
    assert!(output.fields().iter().all(|f| f.shape == [64, 64, 64]), "{:?}", output.fields());
    assert_eq!(output.streams().len(), 1);
    assert_eq!(output.streams()[0].frames, 10);
    assert_eq!(output.steps(0).unwrap(), (1..=10).map(|i| i * 10).collect::<Vec<u64>>());

    let script = repo("crates/compute/tests/python/gray_scott_3d_reference.py");
    let check = Command::new(python).arg(script).arg("--h5").arg(&out).arg("stream0").output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&check.stdout), String::from_utf8_lossy(&check.stderr));
    assert!(check.status.success(), "the float64 reference disagrees:\n{text}");
    assert!(text.contains("ok: 10 frames of u and v match"), "{text}");
    eprintln!("{}", text.trim());
}
