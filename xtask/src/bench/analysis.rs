//! `bench analysis-cost`: what analysis on the device costs a run and what it saves (see
//! `wgpipe::analysis`).
//!
//! The 3-D Gray-Scott model (`L`³, 10 steps per frame) runs into the null sink, so that the
//! device's work is the whole of the wall time, twice per repetition in alternating order:
//! without analysis, and with u and v reduced (min, max, mean, sum) with the tutorial's
//! 100-bin PDF per z slice. The overhead is the ratio of GPU time per frame (timestamp
//! queries, where the device has them; else wall time) per repetition, and per step. The bytes
//! are per frame: the two fields against their reductions.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use wgpipe::compute::GpuDevice;
use wgpipe::storage::NullSink;
use wgpipe::{Analysis, RunReport};

use super::measure::{TUTORIAL_STEPS_PER_FRAME, tutorial_3d};
use super::stats::Summary;

/// The tutorial's PDF: 100 bins.
pub const PDF_BINS: u32 = 100;

/// What the comparison found.
pub struct AnalysisResult {
    pub json: Value,
    pub table: String,
}

/// One run of `frames` frames of the `edge`³ model into the null sink, analysed or not.
fn timed_run(gpu: &GpuDevice, edge: usize, frames: u64, analysed: bool) -> Result<RunReport> {
    let mut builder = tutorial_3d(gpu, edge, frames, Box::new(NullSink::default())).fields(["u", "v"]);
    if analysed {
        builder = builder.analysis(Analysis::of(["u", "v"]).with_pdf(PDF_BINS));
    }
    builder.run().context("running the 3-D model")
}

/// Runs the comparison on `gpu`: `reps` alternating pairs.
pub fn run(gpu: &GpuDevice, edge: usize, frames: u64, reps: usize) -> Result<AnalysisResult> {
    let mut compute: [Vec<f64>; 2] = Default::default();
    let mut walls: [Vec<f64>; 2] = Default::default();
    let mut bytes = [0u64; 2];
    let mut source = String::new();
    for rep in 0..reps {
        for k in 0..2 {
            let analysed = (k + rep) % 2 == 1;
            let report = timed_run(gpu, edge, frames, analysed)?;
            let i = usize::from(analysed);
            compute[i].push(report.compute_seconds());
            walls[i].push(report.wall_seconds);
            bytes[i] = report.sink.bytes / report.written_frames().max(1);
            source = format!("{:?}", report.compute_source());
        }
    }
    let ratio = |v: &[Vec<f64>; 2]| v[1].iter().zip(&v[0]).map(|(a, b)| a / b).collect::<Vec<f64>>();
    let (compute_ratio, wall_ratio) = (ratio(&compute), ratio(&walls));
    let steps = frames as f64 * f64::from(TUTORIAL_STEPS_PER_FRAME);
    let per_step_us: Vec<f64> = compute[1].iter().zip(&compute[0]).map(|(a, b)| (a - b) / steps * 1e6).collect();
    let field_bytes = bytes[0];
    let analysis_bytes = bytes[1].saturating_sub(bytes[0]);
    let saving = field_bytes as f64 / analysis_bytes.max(1) as f64;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "analysis of the 3-D model ({edge}³, {frames} frames of {TUTORIAL_STEPS_PER_FRAME} steps, null sink): u and v, min/max/mean/sum and \
         a {PDF_BINS}-bin PDF per z slice; median [min–max] of {reps} pairs; compute time from {source}"
    );
    let _ = writeln!(t, "  compute without analysis:       {} s", Summary::of(&compute[0]).text(3));
    let _ = writeln!(t, "  with / without (compute time):  {}", Summary::of(&compute_ratio).text(3));
    let _ = writeln!(t, "  with / without (wall time):     {}", Summary::of(&wall_ratio).text(3));
    let _ = writeln!(t, "  added per step:                 {} µs", Summary::of(&per_step_us).text(1));
    let _ = writeln!(
        t,
        "  bytes per frame: fields {field_bytes}, reductions {analysis_bytes} ({saving:.0}× fewer than the fields)"
    );
    let json = json!({
        "model": "gray-scott-3d", "edge": edge, "frames": frames, "steps_per_frame": TUTORIAL_STEPS_PER_FRAME, "reps": reps,
        "sink": "null", "fields": ["u", "v"], "pdf_bins": PDF_BINS, "compute_source": source,
        "compute_seconds_without": Summary::json(&compute[0]),
        "compute_seconds_with": Summary::json(&compute[1]),
        "compute_ratio": Summary::json(&compute_ratio),
        "wall_ratio": Summary::json(&wall_ratio),
        "added_microseconds_per_step": Summary::json(&per_step_us),
        "field_bytes_per_frame": field_bytes,
        "analysis_bytes_per_frame": analysis_bytes,
        "fields_over_analysis_bytes": saving,
    });
    Ok(AnalysisResult { json, table: t })
}
