//! ZFP (`zfp:accuracy=E`, HDF5 only, through HDF5's H5Z-ZFP filter plugin): every f32 and f64
//! value read back lies within E of the value written, by wgpipe's reader and by h5py; other
//! element types are stored exactly; smooth fields take a fraction of their bytes; a bound
//! that is not a number above 0 is refused.
#![cfg(feature = "hdf5")]
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

fn write(path: &std::path::Path, compression: Compression) {
    let options = SinkOptions::new(path).with_compression(compression);
    let mut sink = open_sink("hdf5", &options).unwrap();
    sink.begin(&layout()).unwrap();
    for i in 0..FRAMES {
        sink.write(&frame(i)).unwrap();
    }
    sink.finish().unwrap();
}

#[test]
fn every_float_is_within_the_bound_and_everything_else_exact() {
    let dir = common::tempdir();
    let zfp: Compression = format!("zfp:accuracy={BOUND}").parse().unwrap();
    assert_eq!(zfp.to_string(), "zfp:accuracy=0.001");
    let (exact, lossy) = (dir.path().join("exact.h5"), dir.path().join("zfp.h5"));
    write(&exact, Compression::None);
    write(&lossy, zfp);
    let (a, b) = (open_output(&exact).unwrap(), open_output(&lossy).unwrap());
    assert!(b.complete());
    for i in 0..FRAMES {
        for (f, name) in ["u", "w"].iter().enumerate() {
            let (x, y) = (a.read_field(0, f, i).unwrap().to_f64(), b.read_field(0, f, i).unwrap().to_f64());
            let worst = x.iter().zip(&y).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
            assert!(worst <= BOUND, "{name} frame {i}: error {worst} above {BOUND}");
            assert!(worst > 0.0, "{name} frame {i}: ZFP was not applied (no error at all)");
        }
        assert_eq!(a.read_field(0, 2, i).unwrap(), b.read_field(0, 2, i).unwrap(), "counts are stored exactly");
    }
    // h5py, through HDF5's plugin directory as any reader finds it: the same bound, and the
    // filter recorded on the float datasets only.
    let script = r#"
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
    let out = Command::new(common::python())
        .args(["-c", script])
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
    // The Zarr sink does not write it (yet): refused when the store would be laid out.
    let dir = common::tempdir();
    let options = SinkOptions::new(dir.path().join("a.zarr")).with_compression("zfp:accuracy=1e-3".parse().unwrap());
    let mut sink = open_sink("zarr", &options).unwrap();
    let e = sink.begin(&layout()).unwrap_err().to_string();
    assert!(e.contains("hdf5 sink only"), "{e}");
    assert!(!dir.path().join("a.zarr").exists());
}
