//! Outputs opened by the tools people already use, and by `wgpipe info`:
//! - `wgpipe info` describes HDF5 and raw outputs;
//! - `output.xdmf = true` writes a sidecar listing the frames written (ParaView loading it is
//!   checked by the `interop` group: `tests/interop/paraview.rs`);
//! - `output.swmr = true` lets an h5py reader (`swmr=True`) see the frame count grow while
//!   the sink writes;
//! - both keys are refused, naming the key, where they cannot work.
//!
//! Needs a python3 with h5py (see `common::python`); without it the tests fail saying what to
//! install.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::cli::{small_config, text, wgpipe};
use wgpipe::storage::{DType, FieldSpec, Frame, Hdf5Sink, Sink, SinkOptions, StreamInfo, StreamLayout, open_output};

#[test]
fn info_describes_hdf5_and_raw_outputs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("h.toml"), small_config("h.h5", "")).unwrap();
    std::fs::write(dir.path().join("r.toml"), small_config("r", "sink = \"raw\"")).unwrap();
    for (cfg, out, format) in [("h.toml", "h.h5", "(HDF5 file)"), ("r.toml", "r", "(raw directory)")] {
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
        let du = if format == "(HDF5 file)" { "du = 0.1 (float32)" } else { "du = 0.1\n" };
        assert!(t.contains(du), "{t}");
    }
    let missing = wgpipe(dir.path(), &["info", "nothing.h5"]);
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    assert!(text(&missing).contains("cannot describe nothing.h5"), "{}", text(&missing));
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
        std::fs::write(dir.path().join("r.toml"), small_config("r", &format!("sink = \"raw\"\n{key} = true"))).unwrap();
        let out = wgpipe(dir.path(), &["run", "r.toml"]);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{t}");
        assert!(t.contains(&format!("output.{key}")) && t.contains("only the hdf5 sink"), "{t}");
    }
    std::fs::write(dir.path().join("s.toml"), small_config("s.h5", "swmr = true")).unwrap();
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
