//! HDF5 outputs are netCDF-4 files: xarray (engine h5netcdf) opens a stream group with named
//! dimensions, the step coordinate, units and long names; h5py reads kernel parameters back
//! with the type and value the kernel used. (`ncdump -h`, netCDF-C's reader, is checked by the
//! `interop` group: `tests/interop/ncdump.rs`.)
//!
//! Needs a python3 with h5py, numpy, xarray and h5netcdf (see `common::python::python_with`);
//! without them the test fails saying what to install.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::process::Command;

use serde_json::Value;

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

#[test]
fn xarray_sees_dimensions_steps_units_and_parameters() {
    let python = common::python::python_with(&["h5py", "numpy", "xarray", "h5netcdf"]);
    let dir = tempfile::tempdir().unwrap();
    let (h2, h3) = (dir.path().join("gs.h5"), dir.path().join("c3.h5"));
    common::netcdf_files::write_all(&h2, &h3);

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
}
