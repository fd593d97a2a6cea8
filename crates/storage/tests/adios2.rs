//! The `adios2` test group: the ADIOS2 sink's BP5 output read by the adios2 Python API
//! (tests/python/read_bp.py), every frame of every element type bit-exact with its step and
//! attributes; an SST stream received whole by the tutorial-style PDF reader
//! (`examples/adios2/pdf_reader.py`), with the queue policies and a reader that never comes.
//!
//! `cargo test -p wgpipe-storage --features adios2-python --test adios2`. Needs the adios2
//! wheel from PyPI: `.ci/run` installs it into its virtual environment and sets
//! `WGPIPE_ADIOS2_PYTHON` (its python) and `WGPIPE_ADIOS2_LIB` (the wheel's
//! `libadios2_c.so`); without them the tests fail saying so.

#![cfg(feature = "adios2-python")]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{tempdir, write_recorded};
use serde_json::{Value, json};
use wgpipe_storage::{
    Adios2Engine, DType, FieldSpec, Frame, QueueFullPolicy, SinkOptions, StreamInfo, StreamLayout, open_sink,
};

const FRAMES: u64 = 3;

/// The python with the adios2 module, or a failure saying how to get one; checks that the
/// sink will find the library too.
fn adios2_python() -> PathBuf {
    let python = std::env::var_os("WGPIPE_ADIOS2_PYTHON").map_or_else(|| PathBuf::from("python3"), PathBuf::from);
    let ok = Command::new(&python).args(["-c", "import adios2, numpy"]).output().is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{} cannot import adios2: make a virtual environment (python3 -m venv V && V/bin/pip install adios2 numpy) \
         and set WGPIPE_ADIOS2_PYTHON=V/bin/python and WGPIPE_ADIOS2_LIB=V/lib/python3.X/site-packages/adios2/libadios2_c.so",
        python.display()
    );
    assert!(
        std::env::var_os("WGPIPE_ADIOS2_LIB").is_some(),
        "WGPIPE_ADIOS2_LIB is not set: name the adios2 wheel's libadios2_c.so"
    );
    python
}

/// Every element type ADIOS2 has, ranks 0 (a reduction: one value per frame) to 3, with units
/// on one.
fn layout() -> StreamLayout {
    StreamLayout::new(vec![
        FieldSpec::new("img", DType::U8, [6, 10]),
        FieldSpec::new("hist", DType::U32, [16]),
        FieldSpec::new("count", DType::U16, [2, 3, 4]),
        FieldSpec::new("delta", DType::I32, [5, 4]),
        FieldSpec::new("u", DType::F32, [4, 6, 8]).with_units("1"),
        FieldSpec::new("pos", DType::F64, [7, 3]),
        FieldSpec::new("u_max", DType::F32, Vec::new()),
    ])
    .with_stream(StreamInfo::new("s0").with_expected_frames(FRAMES).with_attribute("feed", 0.03_f32))
    .with_stream(StreamInfo::new("s1").with_expected_frames(FRAMES).with_attribute("seed", 7_i64))
    .with_attribute("config", "[run]\nsteps = 10\n")
}

#[test]
fn the_adios2_python_api_reads_every_frame_of_a_bp5_output() {
    let python = adios2_python();
    let dir = tempdir();
    let (bp, expected) = (dir.path().join("out.bp"), dir.path().join("expected"));
    std::fs::create_dir(&expected).unwrap();
    let layout = layout();
    // Streams interleave unevenly: s1 runs ahead.
    let sink = open_sink("adios2", &SinkOptions::new(&bp)).unwrap();
    let summary = write_recorded(sink, &layout, FRAMES, &[1, 0], |s, i| 100 * (i + 1) + s as u64, &expected);
    assert_eq!(summary.frames, 2 * FRAMES);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_bp.py");
    let out = Command::new(&python).arg(script).arg(&bp).arg(&expected).output().unwrap();
    assert!(out.status.success(), "read_bp.py: {}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let types = [
        ("img", "uint8_t"),
        ("hist", "uint32_t"),
        ("count", "uint16_t"),
        ("delta", "int32_t"),
        ("u", "float"),
        ("pos", "double"),
        ("u_max", "float"),
    ];
    for s in ["s0", "s1"] {
        for (f, ty) in types {
            let name = format!("{s}/{f}");
            assert_eq!(r["variables"][&name]["type"], ty, "{name}: {}", r["variables"]);
            assert_eq!(r["variables"][&name]["steps"], FRAMES, "{name}");
            assert_eq!(r["frames_equal"][&name], json!(vec![true; FRAMES as usize]), "{name}");
        }
    }
    assert_eq!(r["variables"]["s0/u"]["shape"], "4, 6, 8");
    assert_eq!(r["variables"]["s0/u_max"]["shape"], "", "a global value");
    assert_eq!(r["steps"]["s0"], json!([100, 200, 300]));
    assert_eq!(r["steps"]["s1"], json!([101, 201, 301]));
    assert_eq!(r["attributes"]["s0/feed"]["type"], "float");
    assert_eq!(r["attributes"]["s1/seed"]["type"], "int64_t");
    assert_eq!(r["attributes"]["s0/u/units"]["value"], "\"1\"");
    assert_eq!(r["attributes"]["format"]["value"], "\"wgpipe-adios2\"");
    assert_eq!(r["attributes"]["config"]["value"], json!("\"[run]\nsteps = 10\n\""));
    // What only the end knows, in the closing step.
    assert_eq!(r["attributes"]["complete"]["value"], "1");
    assert_eq!(r["attributes"]["s1/complete"]["value"], "1");
    assert_eq!(r["attributes"]["s0/frames"]["value"], "3");
}

/// Bins of the PDFs the reader computes.
const BINS: usize = 100;

/// A 3-D float field pair, as the Gray-Scott tutorial's u and v, one stream.
fn sst_layout(frames: u64) -> StreamLayout {
    StreamLayout::new(vec![FieldSpec::new("u", DType::F32, [4, 8, 8]), FieldSpec::new("v", DType::F32, [4, 8, 8])])
        .with_stream(StreamInfo::new("s0").with_expected_frames(frames))
}

/// Values of field `f` of frame `i`: smooth, different per frame and field, one frame constant.
fn values(f: usize, i: u64) -> Vec<f32> {
    (0..256).map(|k| if i == 2 { 0.25 } else { ((k as f32) * 0.37 + i as f32 + f as f32 * 1.7).sin() }).collect()
}

fn frame(i: u64) -> Frame {
    let data: Vec<u8> = (0..2).flat_map(|f| values(f, i)).flat_map(f32::to_le_bytes).collect();
    Frame::new(0, i, 10 * (i + 1), data)
}

/// The PDF of `v` per slice of 64 values, by the definition in pdf_reader.py's doc.
fn pdf(v: &[f32]) -> Vec<Vec<u64>> {
    let lo = v.iter().copied().fold(f32::INFINITY, f32::min) as f64;
    let hi = v.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    v.chunks(64)
        .map(|slice| {
            let mut counts = vec![0u64; BINS];
            for &x in slice {
                let bin = if hi == lo {
                    BINS / 2
                } else {
                    (((f64::from(x) - lo) / ((hi - lo) / BINS as f64)).floor() as usize).min(BINS - 1)
                };
                counts[bin] += 1;
            }
            counts
        })
        .collect()
}

/// The reader program of the repository, streaming from `stream`.
fn start_reader(python: &Path, stream: &Path, delay: f64) -> std::process::Child {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/adios2/pdf_reader.py");
    Command::new(python)
        .arg(script)
        .arg(stream)
        .args(["--bins", &BINS.to_string(), "--delay", &delay.to_string(), "--timeout", "60"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn sst_options(stream: &Path, limit: usize, policy: QueueFullPolicy) -> SinkOptions {
    SinkOptions::new(stream)
        .with_adios2_engine(Adios2Engine::Sst)
        .with_queue(limit, policy)
        .with_open_timeout(Duration::from_secs(60))
}

/// Streams `frames` frames to a reader sleeping `delay` s per frame; returns its frame lines
/// and the time the writer took from `begin` to `finish`.
fn stream_to_reader(frames: u64, limit: usize, policy: QueueFullPolicy, delay: f64) -> (Vec<Value>, Duration) {
    let python = adios2_python();
    let dir = tempdir();
    let stream = dir.path().join("gs");
    let reader = start_reader(&python, &stream, delay);
    let started = Instant::now();
    let mut sink = open_sink("adios2", &sst_options(&stream, limit, policy)).unwrap();
    sink.begin(&sst_layout(frames)).unwrap();
    for i in 0..frames {
        sink.write(&frame(i)).unwrap();
    }
    sink.finish().unwrap();
    let took = started.elapsed();
    let out = reader.wait_with_output().unwrap();
    assert!(out.status.success(), "pdf_reader.py: {}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (last, frames) = lines.split_last().unwrap();
    assert_eq!(last["received"], frames.len(), "{last}");
    (frames.to_vec(), took)
}

#[test]
fn an_sst_reader_receives_every_frame_while_the_run_goes_and_its_pdfs_are_right() {
    let (lines, _) = stream_to_reader(5, 2, QueueFullPolicy::Block, 0.0);
    let steps: Vec<u64> = lines.iter().map(|l| l["step"].as_u64().unwrap()).collect();
    assert_eq!(steps, [10, 20, 30, 40, 50], "every frame, in order");
    for (i, line) in lines.iter().enumerate() {
        for (f, name) in ["u", "v"].iter().enumerate() {
            let v = values(f, i as u64);
            let got = &line["fields"][name];
            let lo = v.iter().copied().fold(f32::INFINITY, f32::min);
            assert_eq!(got["min"].as_f64().unwrap(), f64::from(lo), "frame {i} {name}");
            assert_eq!(got["pdf"], json!(pdf(&v)), "frame {i} {name}: the PDF per z-slice");
        }
    }
    // The constant frame: every value of each slice in bin 50.
    assert_eq!(lines[2]["fields"]["u"]["pdf"][0][BINS / 2], 64);
}

#[test]
fn a_full_queue_blocks_the_writer_or_discards_as_configured() {
    // A slow reader (0.3 s per frame), a queue of one step. Blocking: every frame arrives,
    // and the writer waited for the reader. Discarding: the writer never waits, the reader
    // misses frames.
    let (blocked, waited) = stream_to_reader(8, 1, QueueFullPolicy::Block, 0.3);
    assert_eq!(blocked.len(), 8, "block loses nothing");
    assert!(waited >= Duration::from_millis(1200), "the writer did not wait for the reader: {waited:?}");
    let (discarded, _) = stream_to_reader(8, 1, QueueFullPolicy::Discard, 0.3);
    assert!(!discarded.is_empty() && discarded.len() < 8, "discard: {} of 8 frames arrived", discarded.len());
}

#[test]
fn a_reader_that_never_connects_fails_the_run_naming_the_engine_and_the_stream() {
    adios2_python();
    let dir = tempdir();
    let stream = dir.path().join("nobody");
    let options = sst_options(&stream, 0, QueueFullPolicy::Block).with_open_timeout(Duration::from_secs(2));
    let started = Instant::now();
    let err = open_sink("adios2", &options).unwrap().begin(&sst_layout(1)).unwrap_err().to_string();
    assert!(started.elapsed() < Duration::from_secs(30), "waited {:?}", started.elapsed());
    assert!(err.contains("SST") && err.contains(&stream.display().to_string()), "{err}");
    assert!(err.contains("no reader connected"), "{err}");
}

#[test]
fn a_reader_that_dies_mid_run_does_not_hang_the_writer() {
    let python = adios2_python();
    let dir = tempdir();
    let stream = dir.path().join("gs");
    let mut reader = start_reader(&python, &stream, 0.2);
    let mut sink = open_sink("adios2", &sst_options(&stream, 2, QueueFullPolicy::Block)).unwrap();
    sink.begin(&sst_layout(40)).unwrap();
    let started = Instant::now();
    for i in 0..3 {
        sink.write(&frame(i)).unwrap();
    }
    reader.kill().unwrap();
    reader.wait().unwrap();
    for i in 3..40 {
        sink.write(&frame(i)).unwrap();
    }
    sink.finish().unwrap();
    assert!(started.elapsed() < Duration::from_secs(60), "the writer took {:?}", started.elapsed());
}
