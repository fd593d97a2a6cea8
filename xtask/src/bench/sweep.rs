//! `--sweep`: efficiency ratios (async / sync) over channel capacity × compute/I-O ratio, to
//! show where overlap helps and where it cannot. With compute c and write w per frame the
//! best async can do is max(c, w) / (c + w): 0.5 at balance, 0.8 when one side is 4× the
//! other, so far from balance there is little to win whatever the buffer.
//!
//! The calibration only picks each row's steps per frame (aiming at a compute/I-O ratio);
//! the row's c/w and theory come from t_comp and t_io measured in that row's own rotation,
//! next to its async and sync runs, so a row compares with the theory of what it measured.

use std::fmt::Write as _;

use anyhow::Result;
use serde_json::{Value, json};
use wgpipe::IoMode;

use super::io::{Calibration, IoBench};
use super::stats::Summary;

/// Channel capacities swept.
pub const IO_BUFFERS: [usize; 5] = [0, 1, 2, 4, 8];
/// Compute/I-O ratios aimed at (compute per frame / write per frame).
pub const RATIOS: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];

/// What the sweep found.
pub struct SweepResult {
    pub json: Value,
    pub table: String,
}

/// The timings of one row, one entry per repetition.
#[derive(Default)]
struct RowRuns {
    sync: Vec<f64>,
    asyncs: Vec<Vec<f64>>,
    compute: Vec<f64>,
    write: Vec<f64>,
}

/// Runs every measurement of one row `reps` times, rotating the order each repetition so
/// that drift on a shared machine spreads over all of them: one sync baseline (sync mode has
/// no channel), one async run per io_buffer, the compute-only loop and the write-only run.
fn measure_row(b: &IoBench<'_>, spf: u32, reps: usize) -> Result<RowRuns> {
    let mut r = RowRuns { asyncs: vec![Vec::new(); IO_BUFFERS.len()], ..Default::default() };
    let runs = IO_BUFFERS.len() + 3;
    for rep in 0..reps {
        for k in 0..runs {
            match (rep + k) % runs {
                0 => r.sync.push(b.pipeline(b.w, spf, IoMode::Sync, 2, false)?.wall_seconds),
                1 => r.compute.push(b.compute_only(b.w, spf)?),
                2 => r.write.push(b.write_only()?),
                i => r.asyncs[i - 3].push(b.pipeline(b.w, spf, IoMode::Async, IO_BUFFERS[i - 3], false)?.wall_seconds),
            }
        }
    }
    Ok(r)
}

/// max(c, w) / (c + w): the best async / sync ratio for compute c and write w.
fn theory(c: f64, w: f64) -> f64 {
    c.max(w) / (c + w)
}

/// Whether two measurements' [min–max] ranges are apart, i.e. their difference is larger
/// than the spread of either over the repetitions.
fn apart(a: Summary, b: Summary) -> bool {
    a.max < b.min || b.max < a.min
}

/// Runs the sweep with `reps` repetitions per cell.
pub fn run(b: &IoBench<'_>, cal: &Calibration, reps: usize) -> Result<SweepResult> {
    let mut rows = Vec::new();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "sweep ({} sink): efficiency ratio async/sync, median [min–max] of {reps} rotations; c/w and theory = \
         max(c,w)/(c+w) from t_comp and t_io measured in the same rotations",
        b.kind
    );
    let mut header = format!("  {:>5} {:>5} {:>16}", "c/w", "steps", "theory");
    for io in IO_BUFFERS {
        let _ = write!(header, " {:>16}", format!("buf {io}"));
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
            let _ = writeln!(t, "  {:>5.2} {:>5} {:>16}  aimed at; {why}", ratio, "-", "-");
            rows.push(json!({ "target_compute_to_io": ratio, "skipped": why }));
            continue;
        }
        done.push(spf);
        let r = measure_row(b, spf, reps)?;
        let (tc, tio) = (Summary::of(&r.compute), Summary::of(&r.write));
        let measured_ratio = tc.median / tio.median;
        // Per repetition: its own theory and its own async/sync ratios (same rotation).
        let theories: Vec<f64> = r.compute.iter().zip(&r.write).map(|(c, w)| theory(*c, *w)).collect();
        let effs: Vec<Vec<f64>> =
            r.asyncs.iter().map(|a| a.iter().zip(&r.sync).map(|(a, s)| a / s).collect()).collect();
        let th = Summary::of(&theories);
        let eff: Vec<Summary> = effs.iter().map(|e| Summary::of(e)).collect();
        let best = eff.iter().copied().min_by(|a, b| a.median.total_cmp(&b.median)).unwrap_or(eff[0]);
        let worst = eff.iter().copied().max_by(|a, b| a.median.total_cmp(&b.median)).unwrap_or(eff[0]);
        let gain = if best.min > 0.9 {
            "no measurable gain"
        } else if th.median >= 0.75 {
            "little to win: one side dominates"
        } else if best.median - th.median <= 0.1 {
            "async helps, near theory"
        } else {
            "async helps, short of theory"
        };
        let buffers = if apart(best, worst) {
            "io_buffer matters (best and worst ranges apart)"
        } else {
            "io_buffer differences within the spread"
        };
        let verdict = format!("{gain}; {buffers}");
        let mut line = format!("  {:>5.2} {:>5} {:>16}", measured_ratio, spf, th.text(2));
        for e in &eff {
            let _ = write!(line, " {:>16}", e.text(2));
        }
        let _ = writeln!(t, "{line}  {verdict}");
        rows.push(json!({
            "target_compute_to_io": ratio,
            "calibration_compute_to_io": cal.compute_per_frame(spf) / cal.write_per_frame,
            "steps_per_frame": spf,
            "t_comp_seconds": Summary::json(&r.compute),
            "t_io_seconds": Summary::json(&r.write),
            "measured_compute_to_io": measured_ratio,
            "theory": Summary::json(&theories),
            "sync_seconds": Summary::json(&r.sync),
            "async_seconds": IO_BUFFERS.iter().zip(&r.asyncs).map(|(io, a)| json!({"io_buffer": io, "seconds": Summary::json(a)})).collect::<Vec<_>>(),
            "efficiency_ratio": IO_BUFFERS.iter().zip(&effs).map(|(io, e)| json!({"io_buffer": io, "ratio": Summary::json(e)})).collect::<Vec<_>>(),
            "verdict": verdict,
        }));
    }
    Ok(SweepResult {
        json: json!({ "io_buffers": IO_BUFFERS, "ratios": RATIOS, "reps": reps, "rows": rows }),
        table: t,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theory_is_half_at_balance_and_the_larger_share_otherwise() {
        assert_eq!(theory(1.0, 1.0), 0.5);
        assert_eq!(theory(4.0, 1.0), 0.8);
        assert_eq!(theory(1.0, 4.0), 0.8);
    }

    #[test]
    fn ranges_are_apart_only_when_they_do_not_overlap() {
        let s = |min, max| Summary { median: (min + max) / 2.0, min, max };
        assert!(apart(s(0.50, 0.53), s(0.55, 0.60)));
        assert!(!apart(s(0.50, 0.56), s(0.55, 0.60)));
        assert!(!apart(s(0.55, 0.60), s(0.50, 0.56)));
    }
}
