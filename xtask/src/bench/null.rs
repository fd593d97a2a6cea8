//! `bench overhead`: the whole pipeline (device thread → channel → writer → null sink) against
//! the compute-only loop, alternated in one process so that drift on a shared machine hits
//! both alike. `overhead_ratio` = pipeline wall / compute-only wall; the goal is ≤ 1.05.

use std::fmt::Write as _;

use anyhow::Result;
use serde_json::{Value, json};
use wgpipe::storage::NullSink;
use wgpipe::{IoMode, RunReport};

use super::measure::{Workload, compute_only, pipeline};
use super::stats::Summary;

/// The goal for the pipeline's overhead over the compute-only loop.
pub const GOAL: f64 = 1.05;

/// What the null benchmark found.
pub struct NullResult {
    pub json: Value,
    pub table: String,
    /// Median overhead ratio.
    pub overhead_ratio: f64,
}

fn null_run(w: &Workload, spf: u32, io_buffer: usize, trace: bool) -> Result<RunReport> {
    pipeline(w, spf, IoMode::Async, io_buffer, Box::new(NullSink::new()), trace)
}

/// Runs `reps` alternating pairs (ABBA order) after one unmeasured warm-up of each.
pub fn run(w: &Workload, spf: u32, io_buffer: usize, reps: usize) -> Result<NullResult> {
    compute_only(w, spf)?;
    null_run(w, spf, io_buffer, false)?;
    let (mut compute, mut piped, mut ratios, mut blocked, mut waited) = (vec![], vec![], vec![], vec![], vec![]);
    for rep in 0..reps {
        let (c, report) = if rep % 2 == 0 {
            let c = compute_only(w, spf)?;
            (c, null_run(w, spf, io_buffer, false)?)
        } else {
            let r = null_run(w, spf, io_buffer, false)?;
            (compute_only(w, spf)?, r)
        };
        compute.push(c);
        piped.push(report.wall_seconds);
        ratios.push(report.wall_seconds / c);
        blocked.push(report.devices.iter().map(|d| d.blocked_seconds).sum::<f64>());
        waited.push(report.writer.wait_seconds);
    }
    let frames = (w.frames * w.gpus.len() as u64) as f64;
    let cell_steps = w.cell_steps(spf);
    let rate = |xs: &[f64], per: f64| xs.iter().map(|t| per / t).collect::<Vec<f64>>();
    let ratio = Summary::of(&ratios);
    let (c, p) = (Summary::of(&compute), Summary::of(&piped));
    let json = json!({
        "overhead_ratio": Summary::json(&ratios),
        "compute_only_seconds": Summary::json(&compute),
        "pipeline_seconds": Summary::json(&piped),
        "compute_only_frames_per_second": Summary::json(&rate(&compute, frames)),
        "pipeline_frames_per_second": Summary::json(&rate(&piped, frames)),
        "compute_only_cell_steps_per_second": Summary::json(&rate(&compute, cell_steps)),
        "pipeline_cell_steps_per_second": Summary::json(&rate(&piped, cell_steps)),
        "device_blocked_seconds": Summary::json(&blocked),
        "writer_wait_seconds": Summary::json(&waited),
        "goal": GOAL,
        "meets_goal": ratio.median <= GOAL,
    });
    let mut t = String::new();
    let _ = writeln!(t, "null sink: pipeline vs compute-only, {reps} alternating pairs, median [min–max]");
    let _ = writeln!(t, "  {:<16} {:>26} {:>16} {:>18}", "", "seconds", "frames/s", "cell-steps/s");
    for (name, s) in [("compute-only", c), ("pipeline", p)] {
        let _ = writeln!(
            t,
            "  {:<16} {:>26} {:>16.1} {:>18.3e}",
            name,
            s.text(4),
            frames / s.median,
            cell_steps / s.median
        );
    }
    let _ = writeln!(
        t,
        "  overhead_ratio = pipeline / compute-only = {}  (goal ≤ {GOAL}: {})",
        ratio.text(3),
        if ratio.median <= GOAL { "met" } else { "MISSED" }
    );
    let _ = writeln!(
        t,
        "  device blocked on send: {:.4} s median; writer waiting for frames: {:.4} s median",
        Summary::of(&blocked).median,
        Summary::of(&waited).median
    );
    Ok(NullResult { json, table: t, overhead_ratio: ratio.median })
}

/// One traced async run into the null sink, for `--trace`.
pub fn traced(w: &Workload, spf: u32, io_buffer: usize) -> Result<RunReport> {
    null_run(w, spf, io_buffer, true)
}
