//! Outputs written before fields had their own type and shape (raw metadata format 1; HDF5
//! files without `axis_order` and `dims`) still open, read back, and take appended streams.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;

use common::tempdir;
use wgpipe_storage::{
    DType, Error, FieldSpec, Frame, Sink, SinkOptions, StreamInfo, StreamLayout, open_output, open_sink,
};

/// 2 frames of a 3 x 4 float32 field `u`, frame `i` holding `i * 100 + k` at element `k`.
fn old_values(i: u64) -> Vec<f32> {
    (0..12).map(|k| (i * 100 + k) as f32).collect()
}

fn le(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A raw directory as wgpipe-storage 0.1 wrote it (format_version 1).
fn write_raw_v1(dir: &Path) {
    std::fs::create_dir(dir).unwrap();
    let run = r#"{
      "format": "wgpipe-raw", "format_version": 1, "wgpipe_storage_version": "0.1.0",
      "created": "2026-01-01T00:00:00Z", "dtype": "float32", "numpy_dtype": "<f4", "byte_order": "little",
      "shape": [3, 4], "fields": ["u"],
      "streams": [{"name": "dev0", "data_files": ["dev0.u.bin"], "steps_file": "dev0.steps.bin",
                   "expected_frames": 2, "frames": 2, "complete": true, "attributes": {"seed": 7}}],
      "attributes": {"kernel": "gray-scott"}, "complete": true
    }"#;
    std::fs::write(dir.join("run.json"), run).unwrap();
    std::fs::write(dir.join("dev0.u.bin"), [le(&old_values(0)), le(&old_values(1))].concat()).unwrap();
    std::fs::write(dir.join("dev0.steps.bin"), [10u64.to_le_bytes(), 20u64.to_le_bytes()].concat()).unwrap();
}

fn assert_old_output(path: &Path) {
    let out = open_output(path).unwrap();
    assert_eq!(out.fields(), [FieldSpec::new("u", DType::F32, [3, 4])]);
    assert_eq!(out.fields()[0].dims, ["y", "x"]);
    assert_eq!(out.streams()[0].name, "dev0");
    assert_eq!(out.streams()[0].frames, 2);
    assert!(out.streams()[0].complete && out.complete());
    assert_eq!(out.steps(0).unwrap(), [10, 20]);
    for i in 0..2 {
        assert_eq!(out.read_f32(0, 0, i).unwrap(), old_values(i));
    }
}

#[test]
fn raw_format_1_opens_and_takes_appended_streams() {
    let dir = tempdir();
    let path = dir.path().join("old-raw");
    write_raw_v1(&path);
    assert_old_output(&path);

    let layout =
        StreamLayout::grid2d(["u"], 3, 4, DType::F32).with_stream(StreamInfo::new("dev1").with_expected_frames(1));
    let mut sink = open_sink("raw", &SinkOptions::new(&path).with_append(true)).unwrap();
    sink.begin(&layout).unwrap();
    sink.write(&Frame::new(0, 0, 5, le(&old_values(9)))).unwrap();
    sink.finish().unwrap();
    let out = open_output(&path).unwrap();
    assert_eq!(out.streams().iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["dev0", "dev1"]);
    assert_eq!(out.read_f32(0, 0, 1).unwrap(), old_values(1), "the old stream is untouched");
    assert_eq!(out.read_f32(1, 0, 0).unwrap(), old_values(9));
    assert!(out.complete());
}

#[test]
fn raw_metadata_from_the_future_or_edited_wrongly_is_refused_with_the_reason() {
    let dir = tempdir();
    for (i, (edit, says)) in [
        (("\"format_version\": 1", "\"format_version\": 9"), "format_version Some(9)"),
        (("\"numpy_dtype\": \"<f4\"", "\"numpy_dtype\": \"<i8\""), "format 1 stores <f4"),
        (("\"shape\": [3, 4]", "\"shape\": [4611686018427387904, 4]"), "frame_bytes"),
        (("\"shape\": [3, 4]", "\"shape\": [3, 0]"), "frame_bytes"),
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.path().join(format!("raw-{i}"));
        write_raw_v1(&path);
        let run = std::fs::read_to_string(path.join("run.json")).unwrap();
        std::fs::write(path.join("run.json"), run.replace(edit.0, edit.1)).unwrap();
        let err = open_output(&path).unwrap_err();
        assert!(matches!(err, Error::BadOutput { .. }), "{edit:?}: {err}");
        assert!(err.to_string().contains(says), "{edit:?}: {err}");
        assert!(err.to_string().contains("run.json"), "{edit:?}: names the file: {err}");
    }
}

/// An HDF5 file as wgpipe-storage 0.1 wrote it: no `axis_order`, no `dims`.
#[cfg(feature = "hdf5")]
fn write_hdf5_v1(path: &Path) {
    use hdf5::types::VarLenUnicode;
    let file = hdf5::File::create(path).unwrap();
    let text = |s: &str| s.parse::<VarLenUnicode>().unwrap();
    file.new_attr::<VarLenUnicode>().create("format").unwrap().write_scalar(&text("wgpipe-hdf5")).unwrap();
    file.new_attr::<VarLenUnicode>().shape(1).create("fields").unwrap().write(&[text("u")]).unwrap();
    file.new_attr::<bool>().create("complete").unwrap().write_scalar(&true).unwrap();
    let g = file.create_group("dev0").unwrap();
    g.new_attr::<i64>().create("stream_index").unwrap().write_scalar(&0).unwrap();
    g.new_attr::<i64>().create("expected_frames").unwrap().write_scalar(&2).unwrap();
    g.new_attr::<bool>().create("complete").unwrap().write_scalar(&true).unwrap();
    let values: Vec<f32> = [old_values(0), old_values(1)].concat();
    let u = ndarray::Array3::from_shape_vec((2, 3, 4), values).unwrap();
    g.new_dataset_builder().with_data(&u).chunk((1, 3, 4)).create("u").unwrap();
    g.new_dataset_builder().with_data(&[10u64, 20]).create("steps").unwrap();
}

#[cfg(feature = "hdf5")]
#[test]
fn hdf5_files_without_axis_order_and_dims_open_with_the_defaults() {
    let dir = tempdir();
    let path = dir.path().join("old.h5");
    write_hdf5_v1(&path);
    assert_old_output(&path);
}
