//! `--sweep`: efficiency ratios (async / sync) over channel capacity × compute/I-O ratio, to
//! show where overlap helps and where it cannot. With compute c and write w per frame the
//! best async can do is max(c, w) / (c + w): 0.5 at balance, 0.8 when one side is 4× the
//! other, so far from balance there is little to win whatever the buffer.

use std::fmt::Write as _;

use anyhow::Result;
use serde_json::{Value, json};
use wgpipe::IoMode;

use super::io::{Calibration, IoBench};
use super::stats::Summary;

/// Channel capacities swept.
pub const IO_BUFFERS: [usize; 5] = [0, 1, 2, 4, 8];
/// Compute/I-O ratios swept (compute per frame / write per frame).
pub const RATIOS: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];
/// Repetitions per cell (median); small so the sweep runs in a few minutes.
const REPS: usize = 2;

/// What the sweep found.
pub struct SweepResult {
    pub json: Value,
    pub table: String,
}

/// Runs the sweep; one sync baseline per ratio serves every io_buffer (sync mode has no
/// channel), measured in the same rotation as the async runs.
pub fn run(b: &IoBench<'_>, cal: &Calibration) -> Result<SweepResult> {
    let mut rows = Vec::new();
    let mut t = String::new();
    let _ =
        writeln!(t, "sweep ({} sink): efficiency ratio async/sync, median of {REPS}; theory = max(c,w)/(c+w)", b.kind);
    let mut header = format!("  {:>6} {:>6} {:>7}", "c/w", "steps", "theory");
    for io in IO_BUFFERS {
        let _ = write!(header, " {:>7}", format!("buf {io}"));
    }
    let _ = writeln!(t, "{header}  verdict");
    let mut done: Vec<u32> = Vec::new();
    for ratio in RATIOS {
        let spf = cal.steps_for(ratio);
        if !cal.reachable(ratio) || done.contains(&spf) {
            let why = if cal.reachable(ratio) {
                format!("same steps/frame ({spf}) as a row above")
            } else {
                format!(
                    "unreachable: 1 step/frame already computes {:.1}x the write time",
                    cal.compute_per_frame(1) / cal.write_per_frame
                )
            };
            let _ = writeln!(t, "  {:>6.2} {:>6} {:>7}  {why}", ratio, "-", "-");
            rows.push(json!({ "target_compute_to_io": ratio, "skipped": why }));
            continue;
        }
        done.push(spf);
        let achieved = cal.compute_per_frame(spf) / cal.write_per_frame;
        let theory = achieved.max(1.0) / (achieved + 1.0);
        let mut sync = Vec::new();
        let mut asyncs: Vec<Vec<f64>> = vec![Vec::new(); IO_BUFFERS.len()];
        for rep in 0..REPS {
            let runs = IO_BUFFERS.len() + 1;
            for k in 0..runs {
                match (rep + k) % runs {
                    0 => sync.push(b.pipeline(b.w, spf, IoMode::Sync, 2, false)?.wall_seconds),
                    i => {
                        asyncs[i - 1].push(b.pipeline(b.w, spf, IoMode::Async, IO_BUFFERS[i - 1], false)?.wall_seconds)
                    }
                }
            }
        }
        let s = Summary::of(&sync).median;
        let effs: Vec<f64> = asyncs.iter().map(|a| Summary::of(a).median / s).collect();
        let best = effs.iter().copied().fold(f64::INFINITY, f64::min);
        let verdict = if best > 0.9 {
            "no measurable gain"
        } else if theory >= 0.75 {
            "little to win: one side dominates"
        } else if best - theory <= 0.1 {
            "async helps, near theory"
        } else {
            "async helps, short of theory"
        };
        let mut line = format!("  {:>6.2} {:>6} {:>7.2}", achieved, spf, theory);
        for e in &effs {
            let _ = write!(line, " {e:>7.2}");
        }
        let _ = writeln!(t, "{line}  {verdict}");
        rows.push(json!({
            "target_compute_to_io": ratio,
            "model_compute_to_io": achieved,
            "steps_per_frame": spf,
            "theory": theory,
            "sync_seconds": Summary::json(&sync),
            "async_seconds": IO_BUFFERS.iter().zip(&asyncs).map(|(io, a)| json!({"io_buffer": io, "seconds": Summary::json(a)})).collect::<Vec<_>>(),
            "efficiency_ratio": IO_BUFFERS.iter().zip(&effs).map(|(io, e)| json!({"io_buffer": io, "ratio": e})).collect::<Vec<_>>(),
            "verdict": verdict,
        }));
    }
    Ok(SweepResult {
        json: json!({ "io_buffers": IO_BUFFERS, "ratios": RATIOS, "reps": REPS, "rows": rows }),
        table: t,
    })
}
