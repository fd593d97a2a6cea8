//! `bench dtype raw|hdf5`: the same run storing f32 and f16 fields, side by side in one process.
//!
//! f16 output converts each frame on the GPU (`pack2x16float`), so every byte after the
//! kernel halves: readback, channel, sink. Two measurements, each alternating f32 and f16
//! (f32 first in even repetitions, f16 first in odd ones) so that drift hits both alike:
//! - the sink alone: the same run's captured frames in each type, fsync included: seconds
//!   per frame and MB/s of stored bytes;
//! - the I/O-bound pipeline: an async run at the given steps per frame (default 1), wall
//!   time, with the compute time the report gives and where it comes from (GPU timestamps
//!   or host-measured).

use std::fmt::Write as _;

use anyhow::Result;
use serde_json::{Value, json};
use wgpipe::IoMode;
use wgpipe::compute::OutputDType;

use super::io::IoBench;
use super::measure::capture_frames_as;
use super::stats::Summary;

/// What the comparison found.
pub struct DtypeResult {
    pub json: Value,
    pub table: String,
}

/// Runs the comparison of f32 against f16 output.
pub fn run(b: &IoBench<'_>, spf: u32, io_buffer: usize, reps: usize) -> Result<DtypeResult> {
    let types = [OutputDType::F32, OutputDType::F16];
    let data = [capture_frames_as(b.w, 1, types[0])?, capture_frames_as(b.w, 1, types[1])?];
    let order = |rep: usize| if rep.is_multiple_of(2) { [0, 1] } else { [1, 0] };
    let frames = b.w.frames as f64 * b.w.gpus.len() as f64;
    let bytes = types.map(|t| b.w.frame_bytes_as(t));
    let (mut write, mut wall, mut compute) = ([vec![], vec![]], [vec![], vec![]], [vec![], vec![]]);
    let mut sources = [String::new(), String::new()];
    for rep in 0..reps {
        for k in order(rep) {
            write[k].push(b.write_only_of(&data[k], types[k])? / frames);
        }
    }
    for rep in 0..reps {
        for k in order(rep) {
            let report = b.pipeline_as(b.w, spf, IoMode::Async, io_buffer, false, types[k])?;
            wall[k].push(report.wall_seconds);
            compute[k].push(report.compute_seconds());
            report.compute_source().name().clone_into(&mut sources[k]);
        }
    }
    // Per repetition, so that each ratio compares runs made next to each other.
    let ratio = |x: &[Vec<f64>; 2]| x[1].iter().zip(&x[0]).map(|(h, f)| h / f).collect::<Vec<f64>>();
    let mb_per_s = |k: usize| write[k].iter().map(|s| bytes[k] as f64 / 1e6 / s).collect::<Vec<f64>>();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} sink{}: f32 vs f16 output, {} frames, median [min–max] of {reps} alternating reps",
        b.kind,
        if b.kind == "hdf5" { format!(" ({})", b.compression.get()) } else { String::new() },
        b.w.frames
    );
    let _ = writeln!(t, "  bytes per frame:            f32 {}   f16 {}", bytes[0], bytes[1]);
    for (k, name) in ["f32", "f16"].into_iter().enumerate() {
        let _ = writeln!(
            t,
            "  write time per frame, {name}: {} ms   ({} MB/s)",
            Summary::of(&write[k].iter().map(|s| s * 1e3).collect::<Vec<_>>()).text(3),
            Summary::of(&mb_per_s(k)).text(1)
        );
    }
    let _ = writeln!(t, "  write time f16/f32:         {}", Summary::of(&ratio(&write)).text(2));
    for (k, name) in ["f32", "f16"].into_iter().enumerate() {
        let _ = writeln!(
            t,
            "  async wall at {spf} step(s)/frame, {name}: {} s   (compute {} s, {})",
            Summary::of(&wall[k]).text(3),
            Summary::of(&compute[k]).text(3),
            sources[k]
        );
    }
    let _ = writeln!(t, "  wall f16/f32:               {}", Summary::of(&ratio(&wall)).text(2));
    let per_type = |x: &[Vec<f64>; 2]| json!({ "f32": Summary::json(&x[0]), "f16": Summary::json(&x[1]) });
    let json = json!({
        "reps": reps,
        "steps_per_frame": spf,
        "bytes_per_frame": { "f32": bytes[0], "f16": bytes[1] },
        "write_seconds_per_frame": per_type(&write),
        "write_mb_per_s": { "f32": Summary::json(&mb_per_s(0)), "f16": Summary::json(&mb_per_s(1)) },
        "write_ratio_f16_over_f32": Summary::json(&ratio(&write)),
        "async_wall_seconds": per_type(&wall),
        "async_wall_ratio_f16_over_f32": Summary::json(&ratio(&wall)),
        "compute_seconds": per_type(&compute),
        "compute_source": { "f32": sources[0], "f16": sources[1] },
    });
    Ok(DtypeResult { json, table: t })
}
