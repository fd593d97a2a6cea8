//! The `zarr-python` test group: zarr-python 3 and xarray (tests/python/read_zarr.py) open
//! stores the Zarr sink wrote, uncompressed, compressed with each codec, and sharded, holding
//! a field of every element type and rank, and read every frame byte for byte.
//!
//! `cargo test -p wgpipe-storage --features zarr-python --test zarr_python`. Needs a python3
//! with `zarr>=3`, `xarray` and `numpy` from PyPI: `.ci/run` makes a virtual environment and
//! names its python in `WGPIPE_ZARR_PYTHON`; without one the test fails saying so.

#![cfg(feature = "zarr-python")]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{tempdir, write_recorded};
use serde_json::{Value, json};
use wgpipe_storage::{Compression, DType, FieldSpec, SinkOptions, StreamInfo, StreamLayout, open_sink};

/// Frames per stream: more than a shard of 3, so the last shard is partial.
const FRAMES: u64 = 4;

/// A field of every element type, ranks 1 to 3, custom axis names and units on some.
fn layout() -> StreamLayout {
    StreamLayout::new(vec![
        FieldSpec::new("img", DType::U8, [6, 10]),
        FieldSpec::new("hist", DType::U32, [16]),
        FieldSpec::new("count", DType::U16, [2, 3, 4]),
        FieldSpec::new("delta", DType::I32, [5, 4]),
        FieldSpec::new("h", DType::F16, [3, 5]),
        FieldSpec::new("u", DType::F32, [4, 6, 8]).with_units("1").with_long_name("activator concentration"),
        FieldSpec::new("pos", DType::F64, [7, 3]).with_dims(["particle", "xyz"]),
    ])
    .with_stream(StreamInfo::new("s0").with_expected_frames(FRAMES).with_attribute("feed", 0.03_f32))
    .with_stream(StreamInfo::new("s1").with_expected_frames(FRAMES).with_attribute("seed", 7_i64))
    .with_attribute("config", "[run]\nsteps = 10\n")
}

/// The python with zarr-python 3 and xarray, or a failure saying how to get one.
fn zarr_python() -> PathBuf {
    let candidates: Vec<PathBuf> = match std::env::var_os("WGPIPE_ZARR_PYTHON") {
        Some(p) => vec![p.into()],
        None => vec!["python3".into()],
    };
    let check = "import zarr, xarray, numpy; assert int(zarr.__version__.split('.')[0]) >= 3";
    candidates
        .iter()
        .find(|p| Command::new(p).args(["-c", check]).output().is_ok_and(|o| o.status.success()))
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no python3 with zarr>=3, xarray and numpy among {candidates:?}: make a virtual environment \
                 (python3 -m venv V && V/bin/pip install 'zarr>=3' xarray) and set WGPIPE_ZARR_PYTHON=V/bin/python"
            )
        })
}

/// Writes every frame with `options` and each field's expected bytes into `expected`.
fn write(options: SinkOptions, layout: &StreamLayout, expected: &Path) {
    let sink = open_sink("zarr", &options).unwrap();
    write_recorded(sink, layout, FRAMES, &[0, 1], |s, i| 100 * (i + 1) + s as u64, expected);
}

/// Reads `store` with read_zarr.py.
fn read(python: &Path, store: &Path, expected: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_zarr.py");
    let out = Command::new(python).arg(script).arg(store).arg(expected).output().unwrap();
    assert!(out.status.success(), "read_zarr.py {}: {}", store.display(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn zarr_python_and_xarray_read_every_frame_of_every_codec_and_sharding() {
    let python = zarr_python();
    let dir = tempdir();
    let expected = dir.path().join("expected");
    std::fs::create_dir(&expected).unwrap();
    let layout = layout();
    let cases = [
        ("plain", Compression::None, 1, json!([])),
        ("zstd", Compression::Zstd(3), 1, json!(["ZstdCodec"])),
        ("gzip", Compression::Deflate(4), 1, json!(["GzipCodec"])),
        ("blosc, 3 frames per shard", Compression::BloscLz4(5), 3, json!(["BloscCodec"])),
    ];
    for (i, (label, compression, shard, compressors)) in cases.into_iter().enumerate() {
        let store = dir.path().join(format!("out{i}.zarr"));
        write(SinkOptions::new(&store).with_compression(compression).with_shard_frames(shard), &layout, &expected);
        let report = read(&python, &store, &expected);
        assert_eq!(report["zarr_format"], 3, "{label}");
        assert_eq!(report["attributes"]["format"], "wgpipe-zarr", "{label}");
        assert_eq!(report["attributes"]["complete"], true, "{label}");
        assert_eq!(report["attributes"]["config"], "[run]\nsteps = 10\n", "{label}");
        for (si, s) in ["s0", "s1"].iter().enumerate() {
            let r = &report["streams"][s];
            let steps: Vec<u64> = (0..FRAMES).map(|i| 100 * (i + 1) + si as u64).collect();
            assert_eq!(r["steps"], json!(steps), "{label} {s}");
            assert_eq!(r["xarray_steps"], json!(steps), "{label} {s}");
            assert_eq!(r["attributes"]["complete"], true, "{label} {s}");
            assert_eq!(r["attributes"]["frames"], FRAMES, "{label} {s}");
            for f in &layout.fields {
                let a = &r["arrays"][&f.name];
                let framed = |rest: &[usize]| json!([&[FRAMES as usize][..], rest].concat());
                assert_eq!(a["shape"], framed(&f.shape), "{label} {s}/{}", f.name);
                assert_eq!(a["dtype"], f.dtype.numpy_str(), "{label} {s}/{}", f.name);
                assert_eq!(a["xarray_dtype"], f.dtype.numpy_str(), "{label} {s}/{} through xarray", f.name);
                // Dimension names by the rule of the HDF5 sink's netCDF dimensions: `time`, then
                // each axis name, suffixed by its length where fields disagree on it.
                let dims = match f.name.as_str() {
                    "img" => json!(["time", "y_6", "x_10"]),
                    "hist" => json!(["time", "x_16"]),
                    "count" => json!(["time", "z_2", "y_3", "x_4"]),
                    "delta" => json!(["time", "y_5", "x_4"]),
                    "h" => json!(["time", "y_3", "x_5"]),
                    "u" => json!(["time", "z_4", "y_6", "x_8"]),
                    _ => json!(["time", "particle", "xyz"]),
                };
                assert_eq!(a["dimension_names"], dims, "{label} {s}/{}", f.name);
                assert_eq!(r["xarray_dims"][&f.name], dims, "{label} {s}/{}", f.name);
                let inner = json!([&[1usize][..], &f.shape[..]].concat());
                assert_eq!(a["chunks"], inner, "{label} {s}/{}: one frame per (inner) chunk", f.name);
                let shards = if shard > 1 { json!([&[shard][..], &f.shape[..]].concat()) } else { Value::Null };
                assert_eq!(a["shards"], shards, "{label} {s}/{}", f.name);
                assert_eq!(a["compressors"], compressors, "{label} {s}/{}", f.name);
                let all = json!(vec![true; FRAMES as usize]);
                assert_eq!(a["frames_equal"], all, "{label} {s}/{}: zarr-python", f.name);
                assert_eq!(a["xarray_frames_equal"], all, "{label} {s}/{}: xarray", f.name);
            }
        }
        let u = &report["streams"]["s0"]["arrays"]["u"]["attributes"];
        assert_eq!(u["units"], "1", "{label}");
        assert_eq!(u["long_name"], "activator concentration", "{label}");
        assert_eq!(report["streams"]["s0"]["attributes"]["feed"], json!(0.03), "{label}");
        assert_eq!(report["streams"]["s0"]["attributes"]["attribute_types"]["feed"], "float32", "{label}");
    }
}

/// ZFP (`zfp:accuracy=E`): zarr-python reads the float arrays through numcodecs' `zfpy`
/// codec, every value within E of the value written, and the counts exactly.
#[cfg(feature = "zarr-zfp")]
#[test]
fn zarr_python_reads_zfp_arrays_within_their_bound() {
    let python = zarr_python();
    let dir = tempdir();
    let layout = StreamLayout::new(vec![
        FieldSpec::new("u", DType::F32, [4, 6, 8]),
        FieldSpec::new("pos", DType::F64, [7, 3]),
        FieldSpec::new("hist", DType::U32, [16]),
    ])
    .with_stream(StreamInfo::new("s0").with_expected_frames(FRAMES));
    let bound = 1e-3;
    let store = dir.path().join("zfp.zarr");
    let options = SinkOptions::new(&store).with_compression(format!("zfp:accuracy={bound}").parse().unwrap());
    let mut sink = open_sink("zarr", &options).unwrap();
    sink.begin(&layout).unwrap();
    let mut expected = Vec::new();
    for i in 0..FRAMES {
        let t = i as f64 * 0.4;
        let u: Vec<u8> = (0..4 * 6 * 8).flat_map(|k| ((0.2 * k as f64 + t).sin() as f32).to_le_bytes()).collect();
        let pos: Vec<u8> = (0..7 * 3).flat_map(|k| (10.0 * (0.3 * k as f64 - t).cos()).to_le_bytes()).collect();
        let hist: Vec<u8> = (0..16u32).flat_map(|k| (k * 3 + i as u32).to_le_bytes()).collect();
        expected.push([u.clone(), pos.clone(), hist.clone()]);
        sink.write(&wgpipe_storage::Frame::new(0, i, i + 1, [u, pos, hist].concat())).unwrap();
    }
    sink.finish().unwrap();
    let expected_dir = dir.path().join("expected");
    std::fs::create_dir(&expected_dir).unwrap();
    for (i, fields) in expected.iter().enumerate() {
        for (name, bytes) in ["u", "pos", "hist"].iter().zip(fields) {
            std::fs::write(expected_dir.join(format!("{name}.{i}.bin")), bytes).unwrap();
        }
    }
    let script = r#"
import os, sys, numpy as np, zarr
store, expected, bound = sys.argv[1], sys.argv[2], float(sys.argv[3])
group = zarr.open_group(store, mode="r")["s0"]
for name, dtype in (("u", "<f4"), ("pos", "<f8"), ("hist", "<u4")):
    a = group[name]
    codecs = [c.to_dict()["name"] for c in a.metadata.codecs]
    for frame in range(a.shape[0]):
        got = np.asarray(a[frame])
        want = np.fromfile(os.path.join(expected, f"{name}.{frame}.bin"), dtype=dtype).reshape(got.shape)
        if name == "hist":
            assert "numcodecs.zfpy" not in codecs, codecs
            assert (got == want).all(), (name, frame)
        else:
            assert "numcodecs.zfpy" in codecs, codecs
            err = np.abs(got.astype("f8") - want.astype("f8")).max()
            assert 0 < err <= bound, (name, frame, err)
print("ok")
"#;
    let out = Command::new(&python)
        .args(["-c", script])
        .arg(&store)
        .arg(&expected_dir)
        .arg(bound.to_string())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).trim_end() == "ok", "{text}");
}

/// Frames each stream holds when [`zarr_killed_child`] aborts (of [`FRAMES`] expected).
const KILLED_AT: [u64; 2] = [3, 2];

/// Child side of `a_killed_store_reads_right_in_xarray`: writes [`KILLED_AT`] frames into a
/// Zarr store sharded 3 frames a shard (a shard left open), then aborts, as a SIGKILL would.
#[test]
#[ignore = "child process of a_killed_store_reads_right_in_xarray"]
fn zarr_killed_child() {
    let Ok(path) = std::env::var("WGPIPE_TEST_OUT") else { return };
    let l = layout();
    let mut sink = open_sink("zarr", &SinkOptions::new(&path).with_shard_frames(3)).unwrap();
    sink.begin(&l).unwrap();
    for (s, &n) in KILLED_AT.iter().enumerate() {
        for i in 0..n {
            sink.write(&common::frame(&l, s, i)).unwrap();
        }
    }
    std::process::abort();
}

/// A killed run's Zarr store, read by xarray and zarr-python without wgpipe: every stream
/// shows exactly the frames written (its arrays' shapes grew with each frame, after its
/// data), their steps, and no frame count it does not hold.
#[test]
fn a_killed_store_reads_right_in_xarray() {
    let python = zarr_python();
    let dir = tempdir();
    let store = dir.path().join("killed.zarr");
    let out = Command::new(common::test_exe())
        .args(["--exact", "zarr_killed_child", "--ignored", "--nocapture"])
        .env("WGPIPE_TEST_OUT", &store)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the child should have aborted");
    let script = r#"
import sys, xarray, zarr
store = sys.argv[1]
for stream, written in zip(("s0", "s1"), map(int, sys.argv[2:])):
    ds = xarray.open_zarr(store, group=stream, consolidated=False)
    for name, var in ds.variables.items():
        if "frame" in var.dims or var.dims[:1] == ds["steps"].dims[:1]:
            assert var.shape[0] == written, (stream, name, var.shape, written)
    steps = ds["steps"].values
    assert list(steps) == [10 * (i + 1) + (stream == "s1") for i in range(written)], (stream, list(steps))
    assert "frames" not in zarr.open_group(store, mode="r")[stream].attrs, stream
print("ok")
"#;
    let read = Command::new(&python)
        .args(["-c", script])
        .arg(&store)
        .args(KILLED_AT.iter().map(u64::to_string))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&read.stdout);
    assert!(read.status.success() && stdout.trim_end() == "ok", "{stdout}{}", String::from_utf8_lossy(&read.stderr));
}
