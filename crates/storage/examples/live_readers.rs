//! The live-reader harness: a reader process follows an output while a run writes it, for
//! HDF5 in SWMR mode (h5py), Zarr (zarr-python) and ADIOS2 SST (the adios2 Python API). It
//! checks that the reader never sees a partial frame and measures, per backend, the time from
//! "frame computed" (just before the sink takes it) to "frame visible to the reader": p50 and
//! p99, printed as JSON (the guide's benchmark page records them).
//!
//! ```sh
//! cargo run --release -p wgpipe-storage --features adios2 --example live_readers -- \
//!     --python ~/.cache/wgpipe/venv/bin/python [--frames 200] [--interval-ms 20] [--elements 65536]
//! ```
//! Needs h5py, zarr>=3 and adios2 in that python, and `WGPIPE_ADIOS2_LIB` (see the guide's
//! ADIOS2 page). Exits non-zero if a reader saw a partial frame or missed one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use wgpipe_storage::{Adios2Engine, DType, FieldSpec, Frame, SinkOptions, StreamInfo, StreamLayout, open_sink};

struct Args {
    python: PathBuf,
    frames: u64,
    interval: Duration,
    elements: usize,
    backends: Vec<String>,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        python: PathBuf::from("python3"),
        frames: 200,
        interval: Duration::from_millis(20),
        elements: 1 << 16,
        backends: vec!["hdf5".into(), "zarr".into(), "sst".into()],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--python" => a.python = value.into(),
            "--frames" => a.frames = value.parse().context("--frames")?,
            "--interval-ms" => a.interval = Duration::from_millis(value.parse().context("--interval-ms")?),
            "--elements" => a.elements = value.parse().context("--elements")?,
            "--backends" => a.backends = value.split(',').map(str::to_owned).collect(),
            _ => bail!("unknown flag {flag}: use --python, --frames, --interval-ms, --elements, --backends"),
        }
    }
    if a.elements < 3 {
        bail!("--elements {} is too small: use 3 or more", a.elements);
    }
    Ok(a)
}

/// Frame `i`: its computed time, its index, then index + k / 1000 (see live_reader.py).
fn frame(i: u64, elements: usize) -> anyhow::Result<Frame> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos() as f64;
    let values = (0..elements).map(|k| match k {
        0 => now,
        1 => i as f64,
        k => i as f64 + k as f64 / 1000.0,
    });
    Ok(Frame::new(0, i, i, values.flat_map(f64::to_le_bytes).collect()))
}

/// Waits until the reader says it has the output open (it creates `marker`): frames written
/// before that would time the reader's start (Python and its imports, seconds on a loaded
/// machine), not the backend, and a short run could end before the reader opened it at all.
fn wait_until_opened(reader: &mut std::process::Child, marker: &Path, backend: &str) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !marker.exists() {
        if let Some(status) = reader.try_wait()? {
            bail!("{backend}: the reader exited ({status}) before it opened the output");
        }
        if std::time::Instant::now() > deadline {
            bail!("{backend}: the reader did not open the output within 120 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// The `q` quantile (0..=1) of sorted `v`, in ms.
fn quantile_ms(v: &[i64], q: f64) -> f64 {
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i] as f64 / 1e6
}

fn run(a: &Args, backend: &str, dir: &Path) -> anyhow::Result<Value> {
    let layout = StreamLayout::new(vec![FieldSpec::new("u", DType::F64, [a.elements])])
        .with_stream(StreamInfo::new("s0").with_expected_frames(a.frames));
    let (kind, options) = match backend {
        "hdf5" => ("hdf5", SinkOptions::new(dir.join("live.h5")).with_swmr(true)),
        "zarr" => ("zarr", SinkOptions::new(dir.join("live.zarr"))),
        "sst" => ("adios2", SinkOptions::new(dir.join("live")).with_adios2_engine(Adios2Engine::Sst)),
        other => bail!("unknown backend {other}: use hdf5, zarr or sst"),
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/live_reader.py");
    let marker = dir.join(format!("{backend}.opened"));
    let mut reader = Command::new(&a.python)
        .arg(script)
        .arg(backend)
        .arg(&options.path)
        .arg(a.frames.to_string())
        .arg(&marker)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", a.python.display()))?;
    let written = (|| -> anyhow::Result<()> {
        let mut sink = open_sink(kind, &options)?;
        sink.begin(&layout)?;
        wait_until_opened(&mut reader, &marker, backend)?;
        for i in 0..a.frames {
            sink.write(&frame(i, a.elements)?)?;
            std::thread::sleep(a.interval);
        }
        sink.finish()?;
        Ok(())
    })();
    if let Err(e) = written {
        // The reader would wait for frames that never come.
        let _ = reader.kill();
        let _ = reader.wait();
        return Err(e.context(format!("{backend}: the run failed")));
    }
    let out = reader.wait_with_output()?;
    if !out.status.success() {
        bail!("{backend}: the reader failed ({})", out.status);
    }
    let r: Value = serde_json::from_slice(&out.stdout)?;
    // Latencies of the frames computed once the reader had the output open (all of them, as
    // the writer waits for it; the filter guards against a clock step).
    let opened = r["opened_ns"].as_f64().unwrap_or(f64::INFINITY);
    let times = r["frames"].as_array().into_iter().flatten().filter_map(|t| Some((t[0].as_f64()?, t[1].as_f64()?)));
    let mut lat: Vec<i64> = times.filter(|&(computed, _)| computed >= opened).map(|(c, v)| (v - c) as i64).collect();
    lat.sort_unstable();
    if lat.is_empty() {
        bail!("{backend}: no frame was computed after the reader had the output open: write more frames");
    }
    Ok(json!({
        "backend": backend,
        "frames_written": a.frames,
        "frames_seen": r["frames_seen"],
        "frames_timed": lat.len(),
        "partial_frames": r["partial"],
        "latency_ms_p50": quantile_ms(&lat, 0.5),
        "latency_ms_p99": quantile_ms(&lat, 0.99),
        "frame_bytes": a.elements * 8,
        "interval_ms": a.interval.as_millis() as u64,
    }))
}

fn main() -> anyhow::Result<()> {
    let a = args()?;
    let dir = tempfile::tempdir()?;
    let mut results = Vec::new();
    for backend in &a.backends {
        results.push(run(&a, backend, dir.path())?);
    }
    println!("{}", serde_json::to_string_pretty(&results)?);
    let bad = results.iter().any(|r| r["frames_seen"] != r["frames_written"] || r["partial_frames"] != json!([]));
    if bad {
        bail!("a reader saw a partial frame or missed one");
    }
    Ok(())
}
