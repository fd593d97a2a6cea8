//! `output.dtype = "f16"` as a user runs it: the same run with f32 and with f16 output, to
//! HDF5 (and raw for f16), then h5py and numpy check from outside Rust that the f16 file holds
//! float16, that each value is numpy's round-to-nearest-even of the f32 value (exactly: the GPU's
//! `pack2x16float` rounds that way on lavapipe and llvmpipe), and that the raw metadata says
//! `<f2` (crates/runner/tests/python/f16_check.py). Needs a python3 with h5py and numpy, found as
//! `common::python::python_with` says; without one the test fails and says what to install.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use wgpipe::storage::{DType, open_output};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// `wgpipe run ARGS` of the default Gray-Scott config on an odd 33 × 31 grid (odd cell counts
/// leave a padding half per packed field), storing u and v, with `sets` on top.
fn wgpipe(sets: &[String], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wgpipe"));
    cmd.args(["run", "--progress", "none"]).args(args);
    for set in ["run.frames=6", "run.steps_per_frame=50", "grid.rows=33", "grid.cols=31", "output.fields=[\"u\",\"v\"]"]
        .iter()
        .map(|s| (*s).to_owned())
        .chain(sets.iter().cloned())
    {
        cmd.args(["--set", &set]);
    }
    cmd.output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// [`wgpipe`] without extra arguments, which must succeed.
fn run(sets: &[String]) {
    let out = wgpipe(sets, &[]);
    assert!(out.status.success(), "wgpipe run {sets:?} failed:\n{}", stderr(&out));
}

fn path_set(path: &Path) -> String {
    format!("output.path={:?}", path.display().to_string())
}

#[test]
fn f16_output_is_the_f32_output_rounded_to_nearest_even() {
    let python = common::python::python_with(&["h5py", "numpy"]);
    let dir = tempfile::tempdir().unwrap();
    let (full, half, raw) = (dir.path().join("f32.h5"), dir.path().join("f16.h5"), dir.path().join("f16.raw"));
    run(&[path_set(&full)]);
    run(&[path_set(&half), "output.dtype=\"f16\"".to_owned()]);
    run(&[path_set(&raw), "output.dtype=\"f16\"".to_owned(), "output.sink=\"raw\"".to_owned()]);

    // wgpipe reads its own f16 output back: float16 fields of half the bytes, values widened.
    for path in [&half, &raw] {
        let output = open_output(path).unwrap();
        assert!(output.fields().iter().all(|f| f.dtype == DType::F16 && f.shape == [33, 31]), "{:?}", output.fields());
        let f32_out = open_output(&full).unwrap();
        for field in 0..2 {
            let (a, b) = (f32_out.read_f32(0, field, 5).unwrap(), output.read_f32(0, field, 5).unwrap());
            let error = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
            // Values in [0, 1]: an f16 rounding error is at most half an ulp, 2^-11 near 1.
            assert!(error <= 2f32.powi(-11), "{}: field {field} differs by {error}", path.display());
            assert!(a != b, "{}: field {field} was not rounded at all", path.display());
        }
    }
    let info = Command::new(env!("CARGO_BIN_EXE_wgpipe")).arg("info").arg(&half).output().unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains("float16"), "wgpipe info names the type:\n{info}");

    let script = repo("crates/runner/tests/python/f16_check.py");
    let check = Command::new(python).arg(script).args([&full, &half, &raw]).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&check.stdout), String::from_utf8_lossy(&check.stderr));
    assert!(check.status.success(), "the f16 output is not the f32 output rounded:\n{text}");
    assert!(text.contains("u: 6 frames") && text.contains("v: 6 frames") && text.trim_end().ends_with("ok"), "{text}");
    assert!(text.contains("raw metadata '<f2'"), "{text}");
    eprintln!("{}", text.trim());
}

/// `--resume` compares the stored type too: an f16 output resumes with `output.dtype = "f16"`
/// (nothing left to do) and is refused, naming both types, by an f32 config.
#[test]
fn resume_checks_the_stored_type() {
    let dir = tempfile::tempdir().unwrap();
    let half = dir.path().join("f16.h5");
    let f16 = "output.dtype=\"f16\"".to_owned();
    run(&[path_set(&half), f16.clone()]);
    let again = wgpipe(&[path_set(&half), f16], &["--resume"]);
    assert!(again.status.success() && stderr(&again).contains("nothing to do"), "{}", stderr(&again));
    let as_f32 = wgpipe(&[path_set(&half)], &["--resume"]);
    let err = stderr(&as_f32);
    assert!(!as_f32.status.success(), "{err}");
    assert!(err.contains("cannot resume") && err.contains("float16") && err.contains("float32"), "{err}");
}

#[test]
fn an_unknown_output_dtype_names_the_key_and_the_choices() {
    let out = Command::new(env!("CARGO_BIN_EXE_wgpipe"))
        .args(["run", "--set", "output.dtype=\"f64\"", "--set", "output.sink=\"null\""])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("output.dtype") && err.contains("\"f64\"") && err.contains("\"f16\""), "{err}");
}
