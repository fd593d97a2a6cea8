//! `--reserve-cost`: what the HDF5 sink's disk-space reservation costs (no GPU).
//!
//! The same frames go through the HDF5 sink with [`SinkOptions::reserve_space`] on and off,
//! alternating which goes first in each repetition (on-off, off-on, ...) so that drift on a
//! shared machine hits both alike. Every run ends with `fsync` in `finish`, inside the timed
//! span: on ext4 the blocks fallocate reserves are "unwritten" extents, converted when the
//! data reaches the disk, so that is where a cost would show. `sync` runs before each run so
//! that no run pays for the previous one's writeback.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use wgpipe::storage::{DType, Frame, SinkOptions, StreamInfo, StreamLayout, open_sink};

use super::stats::Summary;

/// What the comparison found.
pub struct ReserveResult {
    pub json: Value,
    pub table: String,
}

/// Frames of varied bits (a cheap xorshift): nothing for a filesystem to deduplicate.
pub(super) fn frames(frame_bytes: usize, count: u64) -> Vec<Frame> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..count)
        .map(|i| {
            let data: Vec<u8> = (0..frame_bytes / 8)
                .flat_map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x.to_le_bytes()
                })
                .collect();
            Frame::new(0, i, i + 1, data)
        })
        .collect()
}

/// Seconds to write `frames` into a new HDF5 file at `path` and fsync it.
fn timed_run(path: &Path, layout: &StreamLayout, frames: &[Frame], reserve: bool) -> Result<f64> {
    let options = SinkOptions::new(path).with_fsync(true).with_reserve_space(reserve);
    let _ = Command::new("sync").status();
    let start = Instant::now();
    let mut sink = open_sink("hdf5", &options)?;
    sink.begin(layout)?;
    for f in frames {
        sink.write(f)?;
    }
    sink.finish()?;
    let seconds = start.elapsed().as_secs_f64();
    std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
    Ok(seconds)
}

/// Runs the comparison in `dir`: `reps` pairs of runs of `count` frames of `rows` × `cols`.
pub fn run(dir: &Path, rows: usize, cols: usize, count: u64, reps: usize) -> Result<ReserveResult> {
    let layout = StreamLayout::grid2d(["v"], rows, cols, DType::F32).with_stream(StreamInfo::new("s0"));
    let frame_bytes = layout.frame_bytes()?;
    let frames = frames(frame_bytes, count);
    let path = dir.join("reserve-cost.h5");
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        for reserve in if rep % 2 == 0 { [true, false] } else { [false, true] } {
            let seconds = timed_run(&path, &layout, &frames, reserve)?;
            if reserve { on.push(seconds) } else { off.push(seconds) }
        }
    }
    let mb = (frame_bytes as u64 * count) as f64 / 1e6;
    let rate = |xs: &[f64]| xs.iter().map(|s| mb / s).collect::<Vec<_>>();
    let ratio: Vec<f64> = on.iter().zip(&off).map(|(a, b)| a / b).collect();
    let per_frame_us: Vec<f64> = on.iter().zip(&off).map(|(a, b)| (a - b) * 1e6 / count as f64).collect();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "HDF5 sink, reserve_space on vs off: {count} frames of {:.2} MB, fsync in finish, median [min–max] of {reps} pairs",
        frame_bytes as f64 / 1e6
    );
    let _ = writeln!(t, "  reserve on:   {} MB/s", Summary::of(&rate(&on)).text(0));
    let _ = writeln!(t, "  reserve off:  {} MB/s", Summary::of(&rate(&off)).text(0));
    let _ = writeln!(t, "  time on/off:  {} (per pair)", Summary::of(&ratio).text(3));
    let _ = writeln!(t, "  cost per frame: {} µs", Summary::of(&per_frame_us).text(0));
    let json = json!({
        "rows": rows, "cols": cols, "frames": count, "reps": reps, "fsync": true,
        "seconds_reserve_on": Summary::json(&on),
        "seconds_reserve_off": Summary::json(&off),
        "time_ratio_on_over_off": Summary::json(&ratio),
        "cost_per_frame_us": Summary::json(&per_frame_us),
    });
    Ok(ReserveResult { json, table: t })
}
