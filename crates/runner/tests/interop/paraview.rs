//! ParaView's XDMF reader, run headless by `pvbatch`, loads the XDMF sidecar of 2-D and 3-D
//! outputs with the right times, grid dimensions and values.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use wgpipe::storage::{DType, FieldSpec, Frame, Hdf5Sink, Sink, SinkOptions, StreamInfo, StreamLayout, open_output};

use super::common::cli::{small_config, text, wgpipe};

/// `pvbatch`, or a failure saying how to install it.
fn pvbatch() -> std::ffi::OsString {
    let pv = std::env::var_os("WGPIPE_PVBATCH").unwrap_or_else(|| "pvbatch".into());
    match Command::new(&pv).arg("--version").output() {
        Ok(o) if o.status.success() => pv,
        other => panic!(
            "this test loads the XDMF sidecar in ParaView, and {} does not run ({other:?}): install it with \
             sudo apt-get install paraview python3-paraview, or point WGPIPE_PVBATCH at a pvbatch",
            pv.to_string_lossy()
        ),
    }
}

/// Loads an XDMF file with ParaView's XDMF reader and prints, as JSON, its time steps and,
/// per time, the point dimensions and the values of every point array.
const PARAVIEW_CHECK: &str = r#"
import json, sys
from paraview import simple, servermanager
r = simple.XDMFReader(FileNames=[sys.argv[1]])
r.UpdatePipelineInformation()
out = {"times": list(r.TimestepValues), "frames": []}
for t in out["times"]:
    r.UpdatePipeline(t)
    d = servermanager.Fetch(r)
    g = d.GetBlock(0) if d.IsA("vtkMultiBlockDataSet") else d
    pd = g.GetPointData()
    arrays = {}
    for i in range(pd.GetNumberOfArrays()):
        a = pd.GetArray(i)
        arrays[pd.GetArrayName(i)] = [a.GetValue(k) for k in range(a.GetNumberOfTuples())]
    out["frames"].append({"dims": list(g.GetDimensions()), "arrays": arrays})
print("JSON" + json.dumps(out))
"#;

/// A JSON array of numbers as f32 (ParaView hands f32 values to Python as doubles, printed
/// in their shortest form; parsing that text may land one f64 ulp away, never one f32 ulp).
fn as_f32(v: &Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

fn paraview_sees(pv: &std::ffi::OsString, xdmf: &Path) -> Value {
    let script = xdmf.with_extension("check.py");
    std::fs::write(&script, PARAVIEW_CHECK).unwrap();
    let out = Command::new(pv).arg(&script).arg(xdmf).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "pvbatch failed on {}:\n{t}", xdmf.display());
    let json = t.lines().find_map(|l| l.strip_prefix("JSON")).unwrap_or_else(|| panic!("no result from pvbatch:\n{t}"));
    serde_json::from_str(json).unwrap()
}

#[test]
fn paraview_loads_the_xdmf_sidecar_of_2d_and_3d_outputs() {
    let pv = pvbatch();
    let dir = tempfile::tempdir().unwrap();
    // 2-D: a Gray-Scott run through the CLI.
    std::fs::write(dir.path().join("g.toml"), small_config("g.h5", "xdmf = true")).unwrap();
    let run = wgpipe(dir.path(), &["run", "g.toml"]);
    assert!(run.status.success(), "{}", text(&run));
    let seen = paraview_sees(&pv, &dir.path().join("g.xdmf"));
    assert_eq!(seen["times"], serde_json::json!([4.0, 8.0, 12.0]), "{seen}");
    let out = open_output(dir.path().join("g.h5")).unwrap();
    for (i, frame) in seen["frames"].as_array().unwrap().iter().enumerate() {
        // VTK lists dimensions x, y, z; the 2-D grid is one layer of x-y.
        assert_eq!(frame["dims"], serde_json::json!([5, 6, 1]), "{frame}");
        assert_eq!(as_f32(&frame["arrays"]["v"]), out.read_f32(0, 0, i as u64).unwrap(), "frame {i}");
    }

    // 3-D, two element types: the sink directly.
    let path = dir.path().join("c.h5");
    let layout =
        StreamLayout::new(vec![FieldSpec::new("c", DType::F32, [4, 3, 5]), FieldSpec::new("n", DType::U16, [4, 3, 5])])
            .with_stream(StreamInfo::new("s").with_expected_frames(2));
    let mut sink = Hdf5Sink::new(SinkOptions::new(&path).with_xdmf(true));
    sink.begin(&layout).unwrap();
    for i in 0..2u64 {
        let c = (0..60).flat_map(|e| (i as f32 * 100.0 + e as f32).to_le_bytes());
        let n = (0..60).flat_map(|e| (1000 * i as u16 + 2 * e as u16).to_le_bytes());
        sink.write(&Frame::new(0, i, 10 * (i + 1), c.chain(n).collect())).unwrap();
    }
    sink.finish().unwrap();
    let seen = paraview_sees(&pv, &dir.path().join("c.xdmf"));
    assert_eq!(seen["times"], serde_json::json!([10.0, 20.0]), "{seen}");
    let frame = &seen["frames"][1];
    assert_eq!(frame["dims"], serde_json::json!([5, 3, 4]), "{frame}");
    let c: Vec<f32> = (0..60).map(|e| 100.0 + e as f32).collect();
    let n: Vec<u16> = (0..60).map(|e| 1000 + 2 * e).collect();
    assert_eq!(as_f32(&frame["arrays"]["c"]), c, "{frame}");
    assert_eq!(frame["arrays"]["n"], serde_json::json!(n), "{frame}");
}
