//! `bench python`: the Python package against the Rust paths, side by side in one run.
//!
//! Three figures (the Python issue's yardsticks): frames per second through
//! `Pipeline.frames()` with the null sink over the `wgpipe` binary's on the same config
//! (1024² f32 by default; goal ≥ 0.95), a Python sink writing numpy arrays over the Rust raw
//! sink (goal ≥ 0.9), and the copies from the device's staging buffer to the numpy array
//! (goal 1, as in Rust: staging → the pooled frame buffer, which the array views). The
//! measurements run in one Python process (`python_bench.py`), the binary as a process of its
//! own; each rotation runs the four in a rotating order.
//!
//! The Python: `--python-bin PY`, a Python with the package installed in release mode (`pip
//! install ./crates/python` in a virtual environment); the binary: `--bin` (default
//! target/release/wgpipe).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::stats::Summary;

/// The measurements, run by the package's Python.
const SCRIPT: &str = include_str!("python_bench.py");

/// What the bench measured: the figures as a table, and as JSON.
pub struct PythonResult {
    /// The table printed.
    pub table: String,
    /// Every figure.
    pub json: Value,
}

/// The settings of one `bench python` run.
pub struct PythonBench<'a> {
    /// A Python with the package installed.
    pub python: &'a str,
    /// The `wgpipe` binary.
    pub binary: &'a Path,
    /// Where the sinks write.
    pub dir: &'a Path,
    /// Grid rows and columns.
    pub shape: (usize, usize),
    /// Frames per run, steps per frame.
    pub frames: u64,
    /// Kernel steps per frame.
    pub steps: u64,
    /// Rotations.
    pub reps: usize,
}

/// The numbers `key` holds in the script's output.
fn series(out: &Value, key: &str) -> Result<Vec<f64>> {
    let values = out.get(key).and_then(Value::as_array).with_context(|| format!("the bench printed no {key:?}"))?;
    Ok(values.iter().filter_map(Value::as_f64).collect())
}

/// Runs the measurements and summarises them.
pub fn run(b: &PythonBench<'_>) -> Result<PythonResult> {
    if !b.binary.is_file() {
        bail!("--bin {}: no wgpipe binary there: build it with cargo build --release -p wgpipe", b.binary.display());
    }
    let imports = Command::new(b.python).args(["-c", "import wgpipe"]).output();
    if !imports.as_ref().is_ok_and(|o| o.status.success()) {
        bail!(
            "--python-bin {}: it cannot import wgpipe: in a virtual environment, pip install ./crates/python (a \
             release build), and pass that environment's python",
            b.python
        );
    }
    let (rows, cols) = b.shape;
    let args = [rows.to_string(), cols.to_string(), b.frames.to_string(), b.steps.to_string(), b.reps.to_string()];
    let out = Command::new(b.python)
        .args(["-c", SCRIPT, &b.binary.display().to_string(), &b.dir.display().to_string()])
        .args(&args)
        .output()
        .with_context(|| format!("cannot run {}", b.python))?;
    if !out.status.success() {
        bail!("the Python bench failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out: Value = serde_json::from_slice(&out.stdout).context("the Python bench printed no JSON")?;
    summarise(b, out)
}

/// Per rotation: `base[i] / over[i]` (a throughput ratio when both are times).
fn ratios(over: &[f64], base: &[f64]) -> Vec<f64> {
    over.iter().zip(base).map(|(o, b)| b / o).collect()
}

/// The table and the JSON of the script's output.
fn summarise(b: &PythonBench<'_>, out: Value) -> Result<PythonResult> {
    let (binary, frames) = (series(&out, "binary")?, series(&out, "frames")?);
    let (raw, numpy) = (series(&out, "raw")?, series(&out, "numpy")?);
    let (binary_process, frames_process) = (series(&out, "binary_process")?, series(&out, "frames_process")?);
    let fps = |walls: &[f64]| walls.iter().map(|w| b.frames as f64 / w).collect::<Vec<_>>();
    let frames_ratio = ratios(&frames, &binary);
    let process_ratio = ratios(&frames_process, &binary_process);
    let sink_ratio = ratios(&numpy, &raw);
    let copies = out.get("copies").cloned().unwrap_or(Value::Null);
    let views = copies.get("arrays_view_the_pooled_buffer").and_then(Value::as_bool).unwrap_or(false);
    let copy_count = if views { 1 } else { 2 };
    let mut t = String::new();
    let (rows, cols) = b.shape;
    let _ = writeln!(
        t,
        "Python package vs Rust: {rows}x{cols} f32, {} frames of {} steps, median [min–max] of {} rotations",
        b.frames, b.steps, b.reps
    );
    let _ = writeln!(t, "  binary, null sink:           {} frames/s", Summary::of(&fps(&binary)).text(1));
    let _ = writeln!(t, "  Pipeline.frames(), null:     {} frames/s", Summary::of(&fps(&frames)).text(1));
    let _ = writeln!(t, "  frames() / binary:           {} (goal ≥ 0.95)", Summary::of(&frames_ratio).text(3));
    let _ = writeln!(t, "    whole processes:           {}", Summary::of(&process_ratio).text(3));
    let _ = writeln!(t, "  numpy sink / raw sink:       {} (goal ≥ 0.9)", Summary::of(&sink_ratio).text(3));
    let _ = writeln!(t, "  copies, staging → numpy:     {copy_count} (goal 1; {copies})");
    let json = json!({
        "rows": rows, "cols": cols, "frames": b.frames, "steps_per_frame": b.steps, "reps": b.reps,
        "out": b.dir.display().to_string(),
        "seconds_binary": Summary::json(&binary),
        "seconds_frames": Summary::json(&frames),
        "seconds_binary_process": Summary::json(&binary_process),
        "seconds_frames_process": Summary::json(&frames_process),
        "seconds_raw_sink": Summary::json(&raw),
        "seconds_numpy_sink": Summary::json(&numpy),
        "throughput_ratio_frames_over_binary": Summary::json(&frames_ratio),
        "throughput_ratio_frames_over_binary_processes": Summary::json(&process_ratio),
        "throughput_ratio_numpy_sink_over_raw_sink": Summary::json(&sink_ratio),
        "copies_staging_to_numpy": copy_count,
        "copy_evidence": copies,
        "python": out.get("python"), "numpy": out.get("numpy_version"), "adapters": out.get("adapters"),
    });
    Ok(PythonResult { table: t, json })
}
