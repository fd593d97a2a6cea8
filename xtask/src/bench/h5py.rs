//! `bench peers h5py`: the HDF5 sink next to h5py writing the same frames (no GPU).
//!
//! Both write one stream of `count` frames of `rows` × `cols` `f32` (8 distinct frames of
//! random bytes, repeated) into one HDF5 file, chunked one frame per chunk, and fsync it at the
//! end, inside the timed span. h5py runs in a Python process of its own that times itself from
//! opening the file to the fsync (its start-up and imports not counted), as a Python user's
//! writer would be written: `create_dataset` for all the frames, `dataset[i] = frame` and the
//! step, nothing flushed until the file closes. The sink does what a wgpipe run does: the
//! output laid out whole at `begin`, each frame's fields flushed before its step and the step
//! flushed (a kill keeps every frame reported), a disk-space reservation, `frames`/`complete`
//! written at the end. A plain loop of `write` calls of the same bytes into one file
//! (`bench peers posix`'s) runs in the same rotation: the disk's speed, which neither can beat.
//! The three rotate their order between repetitions, `sync` before every run, and each run's
//! file is removed after it.
//!
//! The Python interpreter: `WGPIPE_PYTHON` if set, else the first of `python3` and
//! `/usr/bin/python3` that imports h5py and numpy (the tests' rule).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::json;
use wgpipe::storage::{DType, Frame, StreamInfo, StreamLayout};

use super::posix::{AgainstResult, plain_run, sink_run};
use super::reserve::frames;
use super::stats::Summary;

/// Distinct frames written in turn.
const DISTINCT: u64 = 8;

/// The writer h5py runs: argv = path, rows, cols, frames, distinct; prints its seconds.
const H5PY_WRITER: &str = r#"
import os, sys, time
import h5py, numpy as np
path, rows, cols, count, distinct = sys.argv[1], *map(int, sys.argv[2:6])
frames = [np.frombuffer(os.urandom(rows * cols * 4), dtype="<f4").reshape(rows, cols) for _ in range(distinct)]
start = time.perf_counter()
with h5py.File(path, "w") as f:
    g = f.create_group("s0")
    v = g.create_dataset("v", shape=(count, rows, cols), dtype="<f4", chunks=(1, rows, cols))
    steps = g.create_dataset("steps", shape=(count,), dtype="<u8")
    for i in range(count):
        v[i] = frames[i % distinct]
        steps[i] = i + 1
fd = os.open(path, os.O_RDONLY)
os.fsync(fd)
os.close(fd)
print(time.perf_counter() - start)
"#;

/// A Python that imports h5py and numpy, by the tests' rule.
fn python() -> Result<String> {
    let imports =
        |p: &str| Command::new(p).args(["-c", "import h5py, numpy"]).output().is_ok_and(|o| o.status.success());
    if let Ok(chosen) = std::env::var("WGPIPE_PYTHON") {
        if imports(&chosen) {
            return Ok(chosen);
        }
        bail!("WGPIPE_PYTHON={chosen} cannot import h5py and numpy: install them there, or unset it");
    }
    ["python3", "/usr/bin/python3"].into_iter().find(|p| imports(p)).map(str::to_owned).context(
        "no python3 imports h5py and numpy: install them (Debian: apt-get install python3-h5py), or point \
         WGPIPE_PYTHON at a python3 that has them",
    )
}

/// Seconds h5py took (its own timing) to write the same shape into `dir/h5py.h5` and fsync.
fn h5py_run(python: &str, dir: &Path, rows: usize, cols: usize, count: u64) -> Result<f64> {
    let path = dir.join("h5py.h5");
    let _ = Command::new("sync").status();
    let args =
        [path.display().to_string(), rows.to_string(), cols.to_string(), count.to_string(), DISTINCT.to_string()];
    let out = Command::new(python)
        .args(["-c", H5PY_WRITER])
        .args(&args)
        .output()
        .with_context(|| format!("cannot run {python}"))?;
    if !out.status.success() {
        bail!("the h5py writer failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let seconds: f64 =
        text.trim().parse().with_context(|| format!("the h5py writer printed {text:?}, not its seconds"))?;
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    Ok(seconds)
}

/// Runs `reps` rotations of the two writers, `count` frames of `rows` × `cols` `f32` each, in `dir`.
pub fn run(dir: &Path, rows: usize, cols: usize, count: u64, reps: usize) -> Result<AgainstResult> {
    let python = python()?;
    let layout = StreamLayout::grid2d(["v"], rows, cols, DType::F32)
        .with_stream(StreamInfo::new("s0").with_expected_frames(count));
    let frame_bytes = layout.frame_bytes()?;
    // Hashed by the producer, as the runner's device threads hand frames over.
    let mut pool: Vec<Frame> = frames(frame_bytes, DISTINCT.min(count)).into_iter().map(Frame::hash_data).collect();
    let (mut sink, mut h5py, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        for k in 0..3 {
            match (rep + k) % 3 {
                0 => sink.push(sink_run("hdf5", &dir.join("sink.h5"), &layout, &mut pool, count)?),
                1 => h5py.push(h5py_run(&python, dir, rows, cols, count)?),
                _ => plain.push(plain_run(dir, &pool, count)?),
            }
        }
    }
    let mb = (frame_bytes as u64 * count) as f64 / 1e6;
    let rate = |xs: &[f64]| xs.iter().map(|s| mb / s).collect::<Vec<_>>();
    // Throughputs over another's in the same repetition.
    let over = |xs: &[f64], ys: &[f64]| xs.iter().zip(ys).map(|(x, y)| y / x).collect::<Vec<f64>>();
    let (ratio, sink_plain, h5py_plain) = (over(&sink, &h5py), over(&sink, &plain), over(&h5py, &plain));
    let mut t = String::new();
    let _ = writeln!(
        t,
        "hdf5 sink vs h5py: {count} frames of {:.2} MB, one frame per chunk, fsync at the end, median [min–max] of \
         {reps} rotations ({python})",
        frame_bytes as f64 / 1e6
    );
    let _ = writeln!(t, "  hdf5 sink (laid out, each frame flushed): {} MB/s", Summary::of(&rate(&sink)).text(0));
    let _ = writeln!(t, "  h5py (flushed at close):                 {} MB/s", Summary::of(&rate(&h5py)).text(0));
    let _ = writeln!(t, "  plain write loop:                        {} MB/s", Summary::of(&rate(&plain)).text(0));
    let _ = writeln!(t, "  sink / h5py throughput: {} (goal ≥ 1.3)", Summary::of(&ratio).text(3));
    let _ = writeln!(
        t,
        "  sink / plain: {}, h5py / plain: {}",
        Summary::of(&sink_plain).text(3),
        Summary::of(&h5py_plain).text(3)
    );
    let json = json!({
        "rows": rows, "cols": cols, "frames": count, "reps": reps, "fsync": true, "python": python,
        "seconds_sink": Summary::json(&sink),
        "seconds_h5py": Summary::json(&h5py),
        "seconds_plain": Summary::json(&plain),
        "throughput_ratio_sink_over_h5py": Summary::json(&ratio),
        "throughput_ratio_sink_over_plain": Summary::json(&sink_plain),
        "throughput_ratio_h5py_over_plain": Summary::json(&h5py_plain),
    });
    Ok(AgainstResult { json, table: t })
}
