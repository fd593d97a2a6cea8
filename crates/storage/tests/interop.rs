//! What users read with their own tools: h5py and numpy (tests/python/read_outputs.py) open an
//! HDF5 file and a raw directory holding a field of every element type and rank and check
//! every frame byte for byte, and report dtypes, shapes, chunks, axis names and axis order.
//!
//! Needs a python3 with h5py and numpy: Debian's `apt-get install python3-h5py python3-numpy`
//! (found as /usr/bin/python3 when another python3 comes first on PATH), or name one in
//! `WGPIPE_PYTHON`. Without one the test fails saying so.

#![cfg(feature = "hdf5")]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::process::Command;

use common::{python, tempdir, write_recorded};
use serde_json::{Value, json};
use wgpipe_storage::{DType, FieldSpec, SinkOptions, StreamInfo, StreamLayout, open_sink};

/// A field of every element type, ranks 1 to 3, custom axis names on one, and one field
/// over the 4 MiB chunk target.
fn layout() -> StreamLayout {
    StreamLayout::new(vec![
        FieldSpec::new("img", DType::U8, [6, 10]),
        FieldSpec::new("hist", DType::U32, [16]),
        FieldSpec::new("count", DType::U16, [2, 3, 4]),
        FieldSpec::new("delta", DType::I32, [5, 4]),
        FieldSpec::new("h", DType::F16, [3, 5]),
        FieldSpec::new("u", DType::F32, [4, 6, 8]),
        FieldSpec::new("pos", DType::F64, [7, 3]).with_dims(["particle", "xyz"]),
        FieldSpec::new("big", DType::F32, [3, 625, 600]),
    ])
    .with_stream(StreamInfo::new("s0").with_expected_frames(2))
    .with_stream(StreamInfo::new("s1").with_expected_frames(2))
}

/// Writes two frames per stream with `kind` at `path` and each field's expected bytes into
/// `expected`.
fn write(kind: &str, path: &Path, layout: &StreamLayout, expected: &Path) {
    let sink = open_sink(kind, &SinkOptions::new(path)).unwrap();
    write_recorded(sink, layout, 2, &[0, 1], |_, i| i, expected);
}

#[test]
fn h5py_and_numpy_read_every_dtype_and_rank_as_written() {
    let python = python();
    let dir = tempdir();
    let (h5, raw, expected) = (dir.path().join("out.h5"), dir.path().join("raw"), dir.path().join("expected"));
    std::fs::create_dir(&expected).unwrap();
    let layout = layout();
    write("hdf5", &h5, &layout, &expected);
    std::fs::remove_dir_all(&expected).unwrap();
    std::fs::create_dir(&expected).unwrap();
    write("raw", &raw, &layout, &expected);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_outputs.py");
    let out = Command::new(&python).arg(script).arg(&h5).arg(&raw).arg(&expected).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();

    let names: Vec<&str> = layout.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(report["hdf5"]["axis_order"], "C");
    assert_eq!(report["hdf5"]["fields"], json!(names));
    assert_eq!(report["raw"]["axis_order"], "C");
    for s in ["s0", "s1"] {
        for f in &layout.fields {
            let framed = |rest: &[usize]| json!([&[2usize][..], rest].concat());
            // One frame per chunk (small frames too: they are not packed where chunks are
            // made as fill chunks at `begin`); `big` (4.5 MB) cut in two along its first axis.
            let chunks =
                if f.name == "big" { json!([1, 2, 625, 600]) } else { json!([&[1][..], &f.shape[..]].concat()) };
            let ds = &report["hdf5"]["datasets"][format!("{s}/{}", f.name)];
            let what = format!("hdf5 {s}/{}", f.name);
            assert_eq!(ds["dtype"], f.dtype.numpy_str(), "{what}");
            assert_eq!(ds["shape"], framed(&f.shape), "{what}");
            assert_eq!(ds["chunks"], chunks, "{what}");
            assert_eq!(ds["dims"], json!([&["frame".to_owned()][..], &f.dims[..]].concat()), "{what}");
            assert_eq!(ds["frames_equal"], json!([true, true]), "{what}");

            let file = &report["raw"]["files"][format!("{s}.{}.bin", f.name)];
            let what = format!("raw {s}.{}", f.name);
            assert_eq!(file["dtype"], f.dtype.numpy_str(), "{what}");
            assert_eq!(file["shape"], framed(&f.shape), "{what}");
            assert_eq!(file["dims"], json!(f.dims), "{what}");
            assert_eq!(file["run_json_agrees"], true, "{what}");
            assert_eq!(file["frames_equal"], json!([true, true]), "{what}");
        }
    }
}
