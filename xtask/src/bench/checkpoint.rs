//! `bench checkpoint-cost`: what checkpoints cost a run (see `wgpipe::checkpoint`).
//!
//! The 3-D Gray-Scott model (the tutorial's, `L`³, 10 steps per frame) writes HDF5 with fsync
//! in `finish`, asynchronously, three ways per repetition, in rotating order so that drift
//! hits all alike: without checkpoints, with a checkpoint with every frame (the worst case,
//! whose extra wall time per checkpoint is the cost a checkpoint adds to the run), and with
//! `Interval::Auto` for an MTBF of one hour (Young's interval from the cost measured with
//! the first frame: the default a user gets). Overheads are time ratios against the run
//! without checkpoints, per repetition.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use wgpipe::RunReport;
use wgpipe::checkpoint::{Checkpoints, Interval};
use wgpipe::compute::GpuDevice;
use wgpipe::storage::{SinkOptions, open_sink};

use super::measure::{TUTORIAL_STEPS_PER_FRAME, tutorial_3d};
use super::stats::Summary;

/// The MTBF `Interval::Auto` plans for here: one hour.
pub const MTBF_SECONDS: f64 = 3600.0;

/// What the comparison found.
pub struct CheckpointResult {
    pub json: Value,
    pub table: String,
}

/// One run of `frames` frames of the `edge`³ model into `dir`, checkpointing at `interval`.
fn timed_run(gpu: &GpuDevice, dir: &Path, edge: usize, frames: u64, interval: Option<Interval>) -> Result<RunReport> {
    let path = dir.join("checkpoint-cost.h5");
    let options = SinkOptions::new(&path).with_fsync(true).with_overwrite(true);
    let sink = open_sink("hdf5", &options).context("opening the HDF5 sink")?;
    let mut builder = tutorial_3d(gpu, edge, frames, sink);
    if let Some(interval) = interval {
        builder = builder.checkpoints(Checkpoints::new(dir.join("checkpoint-cost.h5.checkpoints"), interval));
    }
    let report = builder.run().context("running the 3-D model")?;
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    Ok(report)
}

/// Runs the comparison in `dir` on `gpu`: `reps` rotations of the three runs.
pub fn run(gpu: &GpuDevice, dir: &Path, edge: usize, frames: u64, reps: usize) -> Result<CheckpointResult> {
    let auto = Interval::Auto { mtbf_seconds: MTBF_SECONDS };
    let kinds = [None, Some(Interval::Every(1)), Some(auto)];
    let mut walls: [Vec<f64>; 3] = Default::default();
    let mut reports: [Vec<RunReport>; 3] = Default::default();
    for rep in 0..reps {
        for k in 0..3 {
            let which = (k + rep) % 3;
            let report = timed_run(gpu, dir, edge, frames, kinds[which])?;
            walls[which].push(report.wall_seconds);
            reports[which].push(report);
        }
    }
    let ratio = |i: usize| walls[i].iter().zip(&walls[0]).map(|(a, b)| a / b).collect::<Vec<f64>>();
    let every_frame = ratio(1);
    let at_auto = ratio(2);
    // Extra wall time per checkpoint, with every frame checkpointed.
    let added_ms: Vec<f64> = walls[1]
        .iter()
        .zip(&walls[0])
        .zip(&reports[1])
        .map(|((a, b), r)| (a - b) * 1e3 / r.checkpoints.written.max(1) as f64)
        .collect();
    // The writer's time per checkpoint (what Interval::Auto measures).
    let write_ms: Vec<f64> =
        reports[1].iter().map(|r| r.checkpoints.seconds * 1e3 / r.checkpoints.written.max(1) as f64).collect();
    let chosen: Vec<f64> = reports[2]
        .iter()
        .filter_map(|r| r.devices.first().and_then(|d| d.checkpoint_interval))
        .map(|n| n as f64)
        .collect();
    let written_auto: Vec<f64> = reports[2].iter().map(|r| r.checkpoints.written as f64).collect();
    let state_mb =
        reports[1].first().map_or(0.0, |r| r.checkpoints.bytes as f64 / r.checkpoints.written.max(1) as f64 / 1e6);
    let mut t = String::new();
    let _ = writeln!(
        t,
        "checkpoints of the 3-D model ({edge}³, {frames} frames of {TUTORIAL_STEPS_PER_FRAME} steps, HDF5, fsync in finish), state {state_mb:.2} MB; \
         median [min–max] of {reps} rotations"
    );
    let _ = writeln!(t, "  wall without checkpoints:       {} s", Summary::of(&walls[0]).text(3));
    let _ = writeln!(t, "  every frame / without:          {}", Summary::of(&every_frame).text(3));
    let _ = writeln!(t, "    wall added per checkpoint:    {} ms", Summary::of(&added_ms).text(2));
    let _ = writeln!(t, "    writer time per checkpoint:   {} ms", Summary::of(&write_ms).text(2));
    let _ = writeln!(t, "  auto (MTBF {MTBF_SECONDS} s) / without:  {}", Summary::of(&at_auto).text(3));
    let _ = writeln!(
        t,
        "    Young's interval chosen:      {} frames; checkpoints written {}",
        Summary::of(&chosen).text(0),
        Summary::of(&written_auto).text(0)
    );
    let json = json!({
        "model": "gray-scott-3d", "edge": edge, "frames": frames, "steps_per_frame": TUTORIAL_STEPS_PER_FRAME, "reps": reps,
        "sink": "hdf5", "fsync": true, "state_mb": state_mb, "mtbf_seconds": MTBF_SECONDS,
        "wall_seconds_without": Summary::json(&walls[0]),
        "wall_seconds_every_frame": Summary::json(&walls[1]),
        "wall_seconds_auto": Summary::json(&walls[2]),
        "time_ratio_every_frame": Summary::json(&every_frame),
        "time_ratio_auto": Summary::json(&at_auto),
        "wall_ms_added_per_checkpoint": Summary::json(&added_ms),
        "writer_ms_per_checkpoint": Summary::json(&write_ms),
        "auto_interval_frames": Summary::json(&chosen),
        "auto_checkpoints_written": Summary::json(&written_auto),
    });
    Ok(CheckpointResult { json, table: t })
}
