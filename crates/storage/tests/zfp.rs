//! ZFP (`zfp:accuracy=E`; HDF5 through HDF5's H5Z-ZFP filter plugin, Zarr through the `zfpy`
//! codec): every f32 and f64 value read back lies within E of the value written, by wgpipe's
//! reader and (HDF5) by h5py; other element types are stored exactly; smooth fields take a
//! fraction of their bytes; a bound that is not a number above 0 is refused. (zarr-python
//! reads the Zarr stores: tests/zarr_python.rs.)
#![cfg(all(feature = "hdf5", feature = "zarr-zfp"))]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::process::Command;

use wgpipe_storage::{
    Compression, DType, FieldSpec, Frame, SinkOptions, StreamInfo, StreamLayout, open_output, open_sink,
};

const FRAMES: u64 = 4;
const BOUND: f64 = 1e-3;

fn layout() -> StreamLayout {
    StreamLayout::new(vec![
        FieldSpec::new("u", DType::F32, [64, 48]),
        FieldSpec::new("w", DType::F64, [8, 12, 10]),
        FieldSpec::new("n", DType::U32, [40]),
    ])
    .with_stream(StreamInfo::new("s").with_expected_frames(FRAMES))
}

/// Smooth waves (what simulations produce), different per frame; counts for `n`.
fn frame(i: u64) -> Frame {
    let t = i as f64 * 0.3;
    let u = (0..64 * 48).flat_map(|k| {
        let (y, x) = ((k / 48) as f64, (k % 48) as f64);
        (((0.11 * x + t).sin() * (0.07 * y).cos()) as f32).to_le_bytes()
    });
    let w = (0..8 * 12 * 10).flat_map(|k| (1e3 * (0.05 * k as f64 + t).sin()).to_le_bytes());
    let n = (0..40u32).flat_map(|k| (k * 7 + i as u32).to_le_bytes());
    Frame::new(0, i, 10 * (i + 1), u.chain(w).chain(n).collect())
}

fn write(kind: &str, path: &std::path::Path, compression: Compression) {
    let options = SinkOptions::new(path).with_compression(compression);
    let mut sink = open_sink(kind, &options).unwrap();
    sink.begin(&layout()).unwrap();
    for i in 0..FRAMES {
        sink.write(&frame(i)).unwrap();
    }
    sink.finish().unwrap();
}

/// The largest error of fields `u` and `w` of every frame of `lossy` against `exact`, after
/// checking that `n` is exact.
fn largest_error(exact: &std::path::Path, lossy: &std::path::Path) -> f64 {
    let (a, b) = (open_output(exact).unwrap(), open_output(lossy).unwrap());
    assert!(b.complete());
    let mut worst = 0.0f64;
    for i in 0..FRAMES {
        for (f, name) in ["u", "w"].iter().enumerate() {
            let (x, y) = (a.read_field(0, f, i).unwrap().to_f64(), b.read_field(0, f, i).unwrap().to_f64());
            // NaN anywhere is an unbounded error, not one `max` skips.
            let err = x
                .iter()
                .zip(&y)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, |m, e| if e.is_nan() { f64::INFINITY } else { m.max(e) });
            assert!(err > 0.0, "{name} frame {i}: ZFP was not applied (no error at all)");
            worst = worst.max(err);
        }
        assert_eq!(a.read_field(0, 2, i).unwrap(), b.read_field(0, 2, i).unwrap(), "counts are stored exactly");
    }
    worst
}

#[test]
fn every_float_is_within_the_bound_and_everything_else_exact() {
    let dir = common::tempdir();
    let zfp: Compression = format!("zfp:accuracy={BOUND}").parse().unwrap();
    assert_eq!(zfp.to_string(), "zfp:accuracy=0.001");
    let (exact, lossy) = (dir.path().join("exact.h5"), dir.path().join("zfp.h5"));
    write("hdf5", &exact, Compression::None);
    write("hdf5", &lossy, zfp);
    let worst = largest_error(&exact, &lossy);
    assert!(worst <= BOUND, "hdf5: error {worst} above {BOUND}");
    // Zarr: the same bound through the zfpy codec, and under half the bytes of the plain store
    // (its zarr.json and the codec's per-chunk header included).
    let (exact_zarr, lossy_zarr) = (dir.path().join("exact.zarr"), dir.path().join("zfp.zarr"));
    write("zarr", &exact_zarr, Compression::None);
    write("zarr", &lossy_zarr, zfp);
    let worst = largest_error(&exact_zarr, &lossy_zarr);
    assert!(worst <= BOUND, "zarr: error {worst} above {BOUND}");
    let size = |p: &std::path::Path| dir_bytes(&p.join("s").join("u"));
    assert!(size(&lossy_zarr) * 2 < size(&exact_zarr), "{} vs {}", size(&lossy_zarr), size(&exact_zarr));
    // h5py, through HDF5's plugin directory as any reader finds it: the same bound, and the
    // filter recorded on the float datasets only.
    let script = common::python_choice::ZFP_PREAMBLE.to_owned()
        + r#"
import sys, h5py, numpy as np
bound = float(sys.argv[3])
with h5py.File(sys.argv[1]) as a, h5py.File(sys.argv[2]) as b:
    for name in ("u", "w"):
        err = np.abs(a["s/" + name][...].astype("f8") - b["s/" + name][...].astype("f8")).max()
        assert 0 < err <= bound, (name, err)
        assert 32013 in b["s/" + name]._filters or "32013" in b["s/" + name]._filters, b["s/" + name]._filters
    assert (a["s/n"][...] == b["s/n"][...]).all()
    assert not b["s/n"]._filters, b["s/n"]._filters
    print("ok", b["s/u"].id.get_storage_size(), a["s/u"].id.get_storage_size())
"#;
    let out = Command::new(common::python_choice::python_reading_zfp())
        .args(["-c", &script])
        .arg(&exact)
        .arg(&lossy)
        .arg(BOUND.to_string())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.starts_with("ok "), "{text}");
    let sizes: Vec<u64> = text.split_whitespace().skip(1).map(|s| s.parse().unwrap()).collect();
    assert!(sizes[0] * 3 < sizes[1], "smooth f32 data takes under a third of its bytes: {sizes:?}");
}

#[test]
fn a_bound_that_is_not_a_number_above_zero_is_refused() {
    for bad in [
        "zfp:accuracy=0",
        "zfp:accuracy=-1",
        "zfp:accuracy=nan",
        "zfp:accuracy=inf",
        "zfp:accuracy=x",
        "zfp",
        "zfp:1e-3",
    ] {
        let e = bad.parse::<Compression>().unwrap_err().to_string();
        assert!(e.contains("zfp:accuracy="), "{bad}: {e}");
    }
}

/// Bytes of the files under `path`.
fn dir_bytes(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| if p.is_dir() { dir_bytes(&p) } else { p.metadata().unwrap().len() })
        .sum()
}
