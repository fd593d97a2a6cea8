//! Outputs opened by the tools people already use, and by `wgpipe info`:
//! - `wgpipe info` describes HDF5 and raw outputs;
//! - `output.xdmf = true` writes a sidecar that ParaView's XDMF reader (run headless by
//!   `pvbatch`) loads with the right times, grid dimensions and values;
//! - `output.swmr = true` lets an h5py reader (`swmr=True`) see the frame count grow while
//!   the sink writes;
//! - both keys are refused, naming the key, where they cannot work.
//!
//! Needs `pvbatch` (Debian: `apt-get install paraview python3-paraview`, or set
//! `WGPIPE_PVBATCH`) and a python3 with h5py (see `common::python`); `.ci/run` installs them.
//! Without them the tests fail saying what to install.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use wgpipe::storage::{DType, FieldSpec, Frame, Hdf5Sink, Sink, SinkOptions, StreamInfo, StreamLayout, open_output};

fn wgpipe(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wgpipe")).current_dir(dir).args(args).stdin(Stdio::null()).output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A small Gray-Scott run config writing `path` with `extra` lines in `[output]`.
fn config(path: &str, extra: &str) -> String {
    format!(
        "[grid]\nrows = 6\ncols = 5\n[run]\nframes = 3\nsteps_per_frame = 4\n[devices]\nselect = [0]\n\
         [output]\npath = \"{path}\"\n{extra}\n"
    )
}

#[test]
fn info_describes_hdf5_and_raw_outputs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("h.toml"), config("h.h5", "")).unwrap();
    std::fs::write(dir.path().join("r.toml"), config("r", "sink = \"raw\"")).unwrap();
    for (cfg, out, format) in [("h.toml", "h.h5", "(HDF5)"), ("r.toml", "r", "(raw directory)")] {
        let run = wgpipe(dir.path(), &["run", cfg]);
        assert!(run.status.success(), "{}", text(&run));
        let info = wgpipe(dir.path(), &["info", out]);
        let t = text(&info);
        assert!(info.status.success(), "{t}");
        for expect in [
            format,
            &format!("written by wgpipe {}", env!("CARGO_PKG_VERSION")),
            "complete: yes",
            "v: float32 [6, 5] (y, x), \"inhibitor v\", units \"1\"",
            "stream0: 3 of 3 frames, complete, steps 4 to 12",
            "kernel = \"gray-scott\"",
        ] {
            assert!(t.contains(expect), "wgpipe info {out} lacks {expect:?}:\n{t}");
        }
        // The HDF5 file keeps the kernel's f32; raw JSON has no f32 and holds its decimal.
        let du = if format == "(HDF5)" { "du = 0.1 (float32)" } else { "du = 0.1\n" };
        assert!(t.contains(du), "{t}");
    }
    let missing = wgpipe(dir.path(), &["info", "nothing.h5"]);
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    assert!(text(&missing).contains("cannot describe nothing.h5"), "{}", text(&missing));
}

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
    std::fs::write(dir.path().join("g.toml"), config("g.h5", "xdmf = true")).unwrap();
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

#[test]
fn the_xdmf_sidecar_of_an_unfinished_stream_lists_the_frames_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("part.h5");
    let layout = StreamLayout::new(vec![FieldSpec::new("v", DType::F32, [3, 2])])
        .with_stream(StreamInfo::new("s").with_expected_frames(5));
    let mut sink = Hdf5Sink::new(SinkOptions::new(&path).with_xdmf(true));
    sink.begin(&layout).unwrap();
    for i in 0..2 {
        sink.write(&Frame::new(0, i, 7 * (i + 1), vec![0; 24])).unwrap();
    }
    sink.finish().unwrap();
    let xdmf = std::fs::read_to_string(dir.path().join("part.xdmf")).unwrap();
    assert_eq!(xdmf.matches("<Time Value=").count(), 2, "{xdmf}");
    assert!(xdmf.contains("<Time Value=\"14\"/>") && xdmf.contains("Dimensions=\"2 3 2\""), "{xdmf}");
    assert!(!open_output(&path).unwrap().streams()[0].complete);
    // An existing sidecar of a new output is refused like the output itself.
    std::fs::remove_file(&path).unwrap();
    let mut again = Hdf5Sink::new(SinkOptions::new(&path).with_xdmf(true));
    let e = again.begin(&layout).unwrap_err().to_string();
    assert!(e.contains("part.xdmf") && e.contains("already exists"), "{e}");
    assert!(!path.exists(), "a refused begin created {}", path.display());
}

/// Opens the file in SWMR read mode, prints the frame count of `s/v`, waits for a line on
/// stdin, refreshes, prints the count, the steps and the last frame's first value; then,
/// after another line, the count again (the writer has finished meanwhile).
const SWMR_READER: &str = r#"
import sys, h5py
f = h5py.File(sys.argv[1], "r", swmr=True)
v, steps = f["s/v"], f["s/steps"]
v.refresh()
print(v.shape[0], flush=True)
sys.stdin.readline()
v.refresh(); steps.refresh()
n = v.shape[0]
print(n, [int(s) for s in steps[:n]], float(v[n - 1, 0, 0]), flush=True)
sys.stdin.readline()
v.refresh()
print(v.shape[0], flush=True)
f.close()
"#;

#[test]
fn an_h5py_reader_follows_frames_while_the_sink_writes() {
    let python = common::python::python_with(&["h5py"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.h5");
    let layout = StreamLayout::new(vec![FieldSpec::new("v", DType::F32, [8, 4])])
        .with_stream(StreamInfo::new("s").with_expected_frames(5));
    let mut sink = Hdf5Sink::new(SinkOptions::new(&path).with_swmr(true));
    sink.begin(&layout).unwrap();
    let frame = |i: u64| Frame::new(0, i, 3 * i, (0..32).flat_map(|_| (i as f32).to_le_bytes()).collect());
    sink.write(&frame(0)).unwrap();

    let mut reader = Command::new(&python)
        .args(["-c", SWMR_READER])
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(reader.stdout.take().unwrap()).lines();
    let mut next = || lines.next().and_then(Result::ok).unwrap_or_default();
    assert_eq!(next(), "1", "the reader does not see the first frame");
    for i in 1..4 {
        sink.write(&frame(i)).unwrap();
    }
    let mut stdin = reader.stdin.take().unwrap();
    writeln!(stdin).unwrap();
    assert_eq!(next(), "4 [0, 3, 6, 9] 3.0", "the reader does not follow the frames written since");

    // The run ends while the reader still has the file open: finish reopens it (without
    // SWMR) for its attributes all the same.
    sink.write(&frame(4)).unwrap();
    sink.finish().unwrap();
    writeln!(stdin).unwrap();
    assert_eq!(next(), "5", "the reader does not see the last frame");
    drop(stdin);
    let status = reader.wait_with_output().unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let out = open_output(&path).unwrap();
    assert!(out.complete() && out.streams()[0].frames == 5, "{:?}", out.streams());
}

#[test]
fn xdmf_and_swmr_are_refused_where_they_cannot_work() {
    let dir = tempfile::tempdir().unwrap();
    for key in ["xdmf", "swmr"] {
        std::fs::write(dir.path().join("r.toml"), config("r", &format!("sink = \"raw\"\n{key} = true"))).unwrap();
        let out = wgpipe(dir.path(), &["run", "r.toml"]);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{t}");
        assert!(t.contains(&format!("output.{key}")) && t.contains("only the hdf5 sink"), "{t}");
    }
    std::fs::write(dir.path().join("s.toml"), config("s.h5", "swmr = true")).unwrap();
    let run = wgpipe(dir.path(), &["run", "s.toml"]);
    assert!(run.status.success(), "{}", text(&run));
    assert!(open_output(dir.path().join("s.h5")).unwrap().complete());
    let resume = wgpipe(dir.path(), &["run", "s.toml", "--resume"]);
    let t = text(&resume);
    assert_eq!(resume.status.code(), Some(1), "{t}");
    assert!(t.contains("output.swmr") && t.contains("--resume"), "{t}");

    // The sink itself refuses to append in SWMR mode, before anything is created.
    let path = dir.path().join("n.h5");
    let layout = StreamLayout::new(vec![FieldSpec::new("v", DType::F32, [2])]).with_stream(StreamInfo::new("s"));
    let e = Hdf5Sink::new(SinkOptions::new(&path).with_swmr(true).with_append(true)).begin(&layout).unwrap_err();
    assert!(e.to_string().contains("swmr cannot append"), "{e}");
    assert!(!path.exists(), "a refused begin created {}", path.display());
}
