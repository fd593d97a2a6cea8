//! `output.compression = "zfp:rate=R"` with `output.compress_on = "device"`, as a user runs it:
//! the fields are encoded on the GPU and only their ZFP streams are read back and stored. The
//! same run compressed on the host (HDF5's H5Z-ZFP filter plugin) and uncompressed, then h5py
//! and numpy check from outside Rust (crates/runner/tests/python/zfp_device_check.py) that the
//! device's chunks are byte for byte the plugin's, decode to the same values, and lie close to
//! the uncompressed run's. Needs a python3 whose h5py decodes ZFP: h5py from PyPI with
//! `hdf5plugin`, or Debian's python3-h5py with hdf5-filter-plugin-zfp-serial
//! (`common::python::python_reading_zfp`).
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use wgpipe::storage::open_output;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// `wgpipe run CONFIG` with `sets` on top of a short run.
fn wgpipe(config: &str, sets: &[String]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wgpipe"));
    cmd.args(["run", "--progress", "none"]).arg(repo(config));
    for set in ["run.frames=4", "run.steps_per_frame=20"].iter().map(|s| (*s).to_owned()).chain(sets.iter().cloned()) {
        cmd.args(["--set", &set]);
    }
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Runs `config` to `path` with `sets`, which must succeed; returns what it printed.
fn run(config: &str, path: &Path, sets: &[&str]) -> String {
    let mut all = vec![format!("output.path={:?}", path.display().to_string())];
    all.extend(sets.iter().map(|s| (*s).to_owned()));
    let out = wgpipe(config, &all);
    assert!(out.status.success(), "wgpipe run {config} {all:?} failed:\n{}", text(&out));
    text(&out)
}

/// Device, host and uncompressed runs of `config` with `sets`, checked by the Python script.
fn device_matches_host(config: &str, sets: &[&str], rate: u32, max_error: f64) -> String {
    let python = common::python::python_reading_zfp();
    let dir = tempfile::tempdir().unwrap();
    let [device, host, plain] = ["device.h5", "host.h5", "plain.h5"].map(|n| dir.path().join(n));
    let zfp = format!("output.compression=\"zfp:rate={rate}\"");
    let with =
        |extra: &[&str]| sets.iter().copied().chain(extra.iter().copied()).map(str::to_owned).collect::<Vec<_>>();
    let device_sets = with(&[&zfp, "output.compress_on=\"device\""]);
    let said = run(config, &device, &device_sets.iter().map(String::as_str).collect::<Vec<_>>());
    let host_sets = with(&[&zfp, "output.compress_on=\"host\""]);
    run(config, &host, &host_sets.iter().map(String::as_str).collect::<Vec<_>>());
    run(config, &plain, sets);
    // wgpipe's own reader decodes the device's file like any other (HDF5 runs the filter).
    let (a, b) = (open_output(&device).unwrap(), open_output(&host).unwrap());
    assert!(a.complete() && a.steps(0).unwrap().len() == 4);
    assert_eq!(a.read_f32(0, 0, 3).unwrap(), b.read_f32(0, 0, 3).unwrap());
    let script = repo("crates/runner/tests/python/zfp_device_check.py");
    let check = Command::new(python)
        .arg(script)
        .args([&device, &host, &plain])
        .arg(max_error.to_string())
        .args(["u", "v"])
        .output()
        .unwrap();
    let out = text(&check);
    assert!(check.status.success() && out.trim_end().ends_with("ok"), "device and host ZFP disagree:\n{out}");
    said + &out
}

#[test]
fn the_devices_zfp_chunks_are_h5z_zfps_for_a_3d_grid_not_a_multiple_of_4() {
    let out = device_matches_host(
        "configs/gray-scott-3d.toml",
        &["grid.shape=[18, 13, 22]", "output.fields=[\"u\", \"v\"]"],
        8,
        0.05,
    );
    assert!(out.contains("/u: 4 frames") && out.contains("/v: 4 frames"), "{out}");
}

#[test]
fn a_2d_grid_at_a_rate_whose_blocks_share_words_matches_too() {
    // 2-D blocks of 16 values at 3 bits: 48 bits, so blocks share 32-bit words on the device.
    let out = device_matches_host(
        "configs/gray-scott.toml",
        &["grid.rows=33", "grid.cols=31", "output.fields=[\"u\", \"v\"]"],
        3,
        0.5,
    );
    assert!(out.contains("/v: 4 frames"), "{out}");
}

#[test]
fn the_device_is_refused_where_it_cannot_encode_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let sets = [
        format!("output.path={:?}", dir.path().join("out.zarr").display().to_string()),
        "output.sink=\"zarr\"".to_owned(),
        "output.shard_frames=2".to_owned(),
        "output.compression=\"zfp:rate=8\"".to_owned(),
        "output.compress_on=\"device\"".to_owned(),
    ];
    let out = wgpipe("configs/gray-scott.toml", &sets);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("output.compress_on") && said.contains("shard_frames") && said.contains("\"host\""),
        "{said}"
    );
    let bad = wgpipe("configs/gray-scott.toml", &["output.compress_on=\"gpu\"".to_owned()]);
    assert!(!bad.status.success() && text(&bad).contains("output.compress_on"), "{}", text(&bad));
    let rate = wgpipe("configs/gray-scott.toml", &["output.compression=\"zfp:rate=40\"".to_owned()]);
    assert!(!rate.status.success() && text(&rate).contains("1 to 32"), "{}", text(&rate));
}

#[test]
fn the_analysis_and_output_when_see_the_values_as_computed() {
    // The reductions run before the encoder: a device run's reductions are those of the run
    // that compresses on the host (which reduces the values as computed), stored the same way
    // (the reductions' own output is compressed on the host in both), and `output.when` keeps
    // the frames the uncompressed run keeps.
    let dir = tempfile::tempdir().unwrap();
    let sets = [
        "run.frames=6",
        "analysis.fields=[\"u\", \"v\"]",
        "analysis.pdf_bins=16",
        "output.when=\"v_max > 0.41\"",
        "output.fields=[\"u\", \"v\"]",
    ];
    let [device, host, plain] = ["device.h5", "host.h5", "plain.h5"].map(|n| dir.path().join(n));
    let with = |extra: [&'static str; 2]| sets.iter().copied().chain(extra).collect::<Vec<_>>();
    run(
        "configs/gray-scott.toml",
        &device,
        &with(["output.compression=\"zfp:rate=6\"", "output.compress_on=\"device\""]),
    );
    run("configs/gray-scott.toml", &host, &with(["output.compression=\"zfp:rate=6\"", "output.compress_on=\"host\""]));
    run("configs/gray-scott.toml", &plain, &sets);
    // The reductions go beside the output (`NAME.analysis.h5`).
    let analysis = |p: &Path| open_output(p.with_extension("analysis.h5")).unwrap();
    let (a, b) = (analysis(&device), analysis(&host));
    assert!(a.fields().len() >= 8, "{:?}", a.fields());
    for f in 0..a.fields().len() {
        for i in 0..6 {
            assert_eq!(
                a.read_field(0, f, i).unwrap().bytes,
                b.read_field(0, f, i).unwrap().bytes,
                "field {f} frame {i}"
            );
        }
    }
    let kept = |p: &Path| open_output(p).unwrap().steps(0).unwrap();
    let (kept_device, kept_plain) = (kept(&device), kept(&plain));
    assert_eq!(kept_device, kept_plain);
    assert!(!kept_device.is_empty() && kept_device.len() < 6, "output.when kept {kept_device:?}");
}

#[test]
fn raw_and_zarr_outputs_hold_the_devices_streams_and_read_back_as_the_hdf5_files_values() {
    // The raw sink stores each frame's stream as it left the device, the zarr sink the same
    // stream after zfp's header (a zfpy chunk); wgpipe's reader decodes the first (in Rust)
    // and zarrs the second (zfp's C library) to what HDF5's filter decodes from the same bytes.
    let dir = tempfile::tempdir().unwrap();
    let [raw, zarr, h5] = ["out.raw", "out.zarr", "out.h5"].map(|n| dir.path().join(n));
    let sets = ["grid.shape=[9, 14, 11]", "output.compression=\"zfp:rate=7\""];
    for (path, sink) in [(&raw, "output.sink=\"raw\""), (&zarr, "output.sink=\"zarr\"")] {
        let said = run("configs/gray-scott-3d.toml", path, &[&sets[..], &[sink]].concat());
        assert!(said.contains("on the device"), "{said}");
    }
    run("configs/gray-scott-3d.toml", &h5, &sets);
    let b = open_output(&h5).unwrap();
    for a in [open_output(&raw).unwrap(), open_output(&zarr).unwrap()] {
        assert!(a.complete());
        for field in 0..2 {
            for i in 0..4 {
                let (x, y) = (a.read_f32(0, field, i).unwrap(), b.read_f32(0, field, i).unwrap());
                let same = x.iter().map(|v| v.to_bits()).eq(y.iter().map(|v| v.to_bits()));
                assert!(same, "{}: field {field} frame {i}", a.path().display());
            }
        }
    }
    // The field's metadata says what the data file holds, and `wgpipe info` says it for all.
    let meta = std::fs::read_to_string(raw.join("stream0.u.json")).unwrap();
    assert!(meta.contains("\"encoding\": \"zfp:rate=7\""), "{meta}");
    let array = std::fs::read_to_string(zarr.join("stream0/u/zarr.json")).unwrap();
    assert!(array.contains("numcodecs.zfpy") && array.contains("\"rate\": 7.0"), "{array}");
    for path in [&raw, &zarr, &h5] {
        let info = Command::new(env!("CARGO_BIN_EXE_wgpipe")).arg("info").arg(path).output().unwrap();
        let info = text(&info);
        assert!(
            info.contains("u: float32 [9, 14, 11] (z, y, x), stored as ZFP fixed-rate streams at 7 bits"),
            "{info}"
        );
    }
    let host = wgpipe(
        "configs/gray-scott.toml",
        &[
            format!("output.path={:?}", dir.path().join("h.raw").display().to_string()),
            "output.sink=\"raw\"".to_owned(),
            "output.compression=\"zfp:rate=8\"".to_owned(),
            "output.compress_on=\"host\"".to_owned(),
        ],
    );
    assert!(!host.status.success() && text(&host).contains("encoded on the device"), "{}", text(&host));
}
