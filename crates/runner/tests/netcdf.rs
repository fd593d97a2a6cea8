//! HDF5 outputs are netCDF-4 files: xarray (engine h5netcdf) opens a stream group with named
//! dimensions, the step coordinate, units and long names; `ncdump -h` (netCDF-C) reads the
//! whole file; h5py reads kernel parameters back with the type and value the kernel used.
//!
//! Needs a python3 with h5py, numpy, xarray and h5netcdf (see `common::python::python_with`)
//! and `ncdump` (Debian: `apt-get install netcdf-bin`; `.ci/run` installs both). Without them
//! the tests fail saying what to install.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use wgpipe::Pipeline;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::storage::{DType, FieldSpec, Frame, Hdf5Sink, Sink, SinkOptions, StreamInfo, StreamLayout};

/// Prints, as JSON, what xarray sees in group `stream0` of each file given but the last,
/// in the group the last argument names of the file before it, and what h5py reads of the
/// parameter `du` of the first file.
const XARRAY_CHECK: &str = r#"
import json, sys
import h5py, numpy, xarray
out = {}
for path in sys.argv[1:-1]:
    ds = xarray.open_dataset(path, engine="h5netcdf", group=sys.argv[-1] if path == sys.argv[-2] else "stream0")
    out[path] = {
        "vars": {k: {"dims": list(v.dims), "attrs": {a: str(x) for a, x in v.attrs.items()}}
                 for k, v in ds.data_vars.items()},
        "coords": {k: {"dims": list(v.dims), "values": [int(x) for x in v.values]} for k, v in ds.coords.items()},
        "sizes": {k: int(n) for k, n in ds.sizes.items()},
    }
    first = next(iter(ds.data_vars))
    out[path]["first_frame_sum"] = float(ds[first].isel(time=0).sum())
with h5py.File(sys.argv[1], "r") as f:
    du = f["stream0"].attrs["du"]
    out["du"] = {"dtype": str(du.dtype), "text": str(du), "is_0.1f": bool(du == numpy.float32(0.1))}
print(json.dumps(out))
"#;

/// A 3-D output written through the sink directly: field `c` of shape [4, 3, 5] (z, y, x),
/// stream `stream` (added to the file when `append`), frames at steps 7 and 14, element
/// (z, y, x) of frame i = i * 100 + z * 15 + y * 5 + x.
fn write_3d(path: &Path, stream: &str, append: bool) {
    let field = FieldSpec::new("c", DType::F32, [4, 3, 5]).with_units("mol/L").with_long_name("concentration");
    let layout = StreamLayout::new(vec![field]).with_stream(StreamInfo::new(stream).with_expected_frames(2));
    let mut sink = Hdf5Sink::new(SinkOptions::new(path).with_append(append));
    sink.begin(&layout).unwrap();
    for (i, step) in [7u64, 14].into_iter().enumerate() {
        let values: Vec<f32> = (0..60).map(|e| (i * 100 + e) as f32).collect();
        sink.write(&Frame::new(0, i as u64, step, values.iter().flat_map(|v| v.to_le_bytes()).collect())).unwrap();
    }
    sink.finish().unwrap();
}

/// `ncdump -h path`, or a failure saying how to install it.
fn ncdump(path: &Path) -> String {
    let out = Command::new("ncdump").arg("-h").arg(path).output().unwrap_or_else(|e| {
        panic!("cannot run ncdump ({e}): this test checks that netCDF-C reads the file; install it with: sudo apt-get install netcdf-bin")
    });
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ncdump -h {} failed:\n{text}{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn xarray_and_ncdump_see_dimensions_steps_units_and_parameters() {
    let python = common::python::python_with(&["h5py", "numpy", "xarray", "h5netcdf"]);
    let dir = tempfile::tempdir().unwrap();
    let (h2, h3) = (dir.path().join("gs.h5"), dir.path().join("c3.h5"));
    let report = Pipeline::builder()
        .gpus(common::lavapipe(1))
        .grid(12, 10)
        .frames(3)
        .steps_per_frame(5)
        .fields(["u", "v"])
        .gray_scott(GrayScottParams::default(), 1, 0.0)
        .sink(Hdf5Sink::new(SinkOptions::new(&h2)))
        .run()
        .unwrap();
    assert_eq!(report.written_frames(), 3);
    write_3d(&h3, "stream0", false);
    // A stream appended later (what --resume does) gets its dimensions too.
    write_3d(&h3, "stream1", true);

    // The last argument names the group read from the last file.
    let out = Command::new(&python).arg("-c").arg(XARRAY_CHECK).arg(&h2).arg(&h3).arg("stream1").output().unwrap();
    assert!(out.status.success(), "xarray/h5py failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (s2, s3) = (&seen[h2.to_str().unwrap()], &seen[h3.to_str().unwrap()]);

    assert_eq!(s2["vars"]["u"]["dims"], serde_json::json!(["time", "y", "x"]), "{s2}");
    assert_eq!(s2["vars"]["v"]["dims"], serde_json::json!(["time", "y", "x"]), "{s2}");
    assert_eq!(s2["sizes"], serde_json::json!({"time": 3, "y": 12, "x": 10}), "{s2}");
    assert_eq!(s2["coords"]["steps"], serde_json::json!({"dims": ["time"], "values": [5, 10, 15]}), "{s2}");
    assert_eq!(s2["vars"]["u"]["attrs"]["long_name"], "activator u", "{s2}");
    assert_eq!(s2["vars"]["v"]["attrs"]["long_name"], "inhibitor v", "{s2}");
    assert_eq!(s2["vars"]["v"]["attrs"]["units"], "1", "{s2}");

    assert_eq!(s3["vars"]["c"]["dims"], serde_json::json!(["time", "z", "y", "x"]), "{s3}");
    assert_eq!(s3["sizes"], serde_json::json!({"time": 2, "z": 4, "y": 3, "x": 5}), "{s3}");
    assert_eq!(s3["coords"]["steps"]["values"], serde_json::json!([7, 14]), "{s3}");
    assert_eq!(s3["vars"]["c"]["attrs"]["units"], "mol/L", "{s3}");
    assert_eq!(s3["first_frame_sum"], serde_json::json!((0..60).sum::<i32>() as f64), "{s3}");

    // The kernel ran with du = 0.1f32: stored as float32, it prints as 0.1.
    assert_eq!(seen["du"], serde_json::json!({"dtype": "float32", "text": "0.1", "is_0.1f": true}));

    let header = ncdump(&h2);
    for line in
        ["group: stream0 {", "time = UNLIMITED ; // (3 currently)", "y = 12 ;", "x = 10 ;", "float u(time, y, x) ;"]
    {
        assert!(header.contains(line), "ncdump -h lacks {line:?}:\n{header}");
    }
    assert!(header.contains("v:long_name = \"inhibitor v\""), "{header}");
    let header = ncdump(&h3);
    assert!(header.contains("float c(time, z, y, x) ;") && header.contains("z = 4 ;"), "{header}");
}
