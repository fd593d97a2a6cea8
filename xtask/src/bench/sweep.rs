//! `--sweep`: efficiency ratios (async / sync) over channel capacity × compute/I-O ratio, to
//! show where overlap helps and where it cannot, and `io.mode = "auto"` beside them: its
//! wall time over the best of the fixed modes' (medians) says what its measuring and choosing
//! cost or won. With compute c and write w per frame the
//! best async can do is max(c, w) / (c + w): 0.5 at balance, 0.8 when one side is 4× the
//! other, so far from balance there is little to win whatever the buffer.
//!
//! The calibration only picks each row's steps per frame (aiming at a compute/I-O ratio);
//! the row's c/w and theory come from t_comp and t_io measured in that row's own rotation,
//! next to its async and sync runs, so a row compares with the theory of what it measured.

use std::fmt::Write as _;

use anyhow::{Result, bail};
use serde_json::{Value, json};
use wgpipe::IoMode;
use wgpipe::tuning::{AUTO_IO_BUFFER, DEFAULT_IO_BUFFER};

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
    /// The rows where auto was slower than the best fixed mode beyond the rule
    /// ([`auto_too_slow`]), in words: the sweep fails on any.
    pub auto_too_slow: Vec<String>,
}

/// How much slower than the best fixed mode (median wall time) auto may be in a row.
pub const AUTO_TOLERANCE: f64 = 1.05;

/// Rotations a row needs before the sweep judges auto: fewer measure no spread to be beyond.
pub const REPS_TO_JUDGE: usize = 3;

/// Whether auto (`auto`, its wall times) lost to the best fixed mode (`best`) in a row: its
/// median more than [`AUTO_TOLERANCE`] times the best's, and its fastest run slower than the
/// best's slowest, so that the gap is beyond the run-to-run spread the row measured.
fn auto_too_slow(auto: Summary, best: Summary) -> bool {
    auto.median > AUTO_TOLERANCE * best.median && auto.min > best.max
}

/// The timings of one row, one entry per repetition.
#[derive(Default)]
struct RowRuns {
    sync: Vec<f64>,
    asyncs: Vec<Vec<f64>>,
    auto: Vec<f64>,
    /// What auto ran with at the end of each repetition ([`ran_with`]).
    chosen: Vec<String>,
    compute: Vec<f64>,
    write: Vec<f64>,
}

/// Runs every measurement of one row `reps` times, rotating the order each repetition so
/// that drift on a shared machine spreads over all of them: one sync baseline (sync mode has
/// no channel), one async run per io_buffer, one auto run (its channel as deep as auto's
/// default), the compute-only loop and the write-only run.
fn measure_row(b: &IoBench<'_>, spf: u32, reps: usize) -> Result<RowRuns> {
    let mut r = RowRuns { asyncs: vec![Vec::new(); IO_BUFFERS.len()], ..Default::default() };
    let runs = IO_BUFFERS.len() + 4;
    for rep in 0..reps {
        for k in 0..runs {
            match (rep + k) % runs {
                0 => r.sync.push(b.pipeline(b.w, spf, IoMode::Sync, 2, false)?.wall_seconds),
                1 => r.compute.push(b.compute_only(b.w, spf)?),
                2 => r.write.push(b.write_only()?),
                3 => {
                    let report = b.pipeline(b.w, spf, IoMode::Auto, AUTO_IO_BUFFER, false)?;
                    r.auto.push(report.wall_seconds);
                    r.chosen.push(ran_with(&report.tuning.unwrap_or_default()));
                }
                i => r.asyncs[i - 4].push(b.pipeline(b.w, spf, IoMode::Async, IO_BUFFERS[i - 4], false)?.wall_seconds),
            }
        }
    }
    Ok(r)
}

/// What an auto run ran with at its end, from the report's fields rather than the words of
/// its reason: `inline`, `async, io_buffer N`, or `async, io_buffer N (undecided)` (it ended
/// before it had measured enough to choose).
fn ran_with(tuning: &wgpipe::TuningReport) -> String {
    match (tuning.decided_after_frames, tuning.inline) {
        (None, _) => format!("async, io_buffer {} (undecided)", tuning.io_buffer),
        (Some(_), true) => "inline".to_owned(),
        (Some(_), false) => format!("async, io_buffer {}", tuning.io_buffer),
    }
}

/// `a ×2; b ×1`: each distinct choice with how many repetitions made it, first seen first.
fn tally(chosen: &[String]) -> String {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for c in chosen {
        match seen.iter_mut().find(|(s, _)| *s == c.as_str()) {
            Some((_, n)) => *n += 1,
            None => seen.push((c, 1)),
        }
    }
    seen.iter().map(|(c, n)| format!("{c} ×{n}")).collect::<Vec<_>>().join("; ")
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
    let mut t = header(b.kind, reps);
    let mut done: Vec<u32> = Vec::new();
    let mut too_slow = Vec::new();
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
        let row = measured_row(b, cal, ratio, spf, reps)?;
        let _ = writeln!(t, "{}", row.line);
        rows.push(row.json);
        too_slow.extend(row.auto_too_slow);
    }
    if reps < REPS_TO_JUDGE {
        let _ = writeln!(t, "  (auto is judged against the best fixed mode with --reps {REPS_TO_JUDGE} or more)");
    }
    Ok(SweepResult {
        json: json!({
            "io_buffers": IO_BUFFERS, "ratios": RATIOS, "reps": reps, "rows": rows,
            "auto_tolerance": AUTO_TOLERANCE, "auto_too_slow": too_slow,
        }),
        table: t,
        auto_too_slow: too_slow,
    })
}

/// The table's title and column headers, for the `kind` sink.
fn header(kind: &str, reps: usize) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "sweep ({kind} sink): efficiency ratio async/sync, median [min–max] of {reps} rotations; c/w and theory = \
         max(c,w)/(c+w) from t_comp and t_io measured in the same rotations"
    );
    let mut header = format!("  {:>5} {:>5} {:>16}", "c/w", "steps", "theory");
    for io in IO_BUFFERS {
        let _ = write!(header, " {:>16}", format!("buf {io}"));
    }
    let _ = writeln!(t, "{header} {:>16} {:>9} {:>16}  verdict", "auto", "auto/best", "auto/(s|a)");
    t
}

/// One measured row: its table line, its JSON, and what it found against auto ([`auto_too_slow`]).
struct Row {
    line: String,
    json: Value,
    auto_too_slow: Option<String>,
}

/// What a row's async runs say: how much async gains against theory, and whether the
/// io_buffer matters (the best and worst ranges apart).
fn verdict(eff: &[Summary], th: Summary) -> String {
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
    format!("{gain}; {buffers}")
}

/// Measures the row aimed at compute/I-O `ratio` (`spf` steps per frame), `reps` rotations.
fn measured_row(b: &IoBench<'_>, cal: &Calibration, ratio: f64, spf: u32, reps: usize) -> Result<Row> {
    let r = measure_row(b, spf, reps)?;
    let (tc, tio) = (Summary::of(&r.compute), Summary::of(&r.write));
    let measured_ratio = tc.median / tio.median;
    // Per repetition: its own theory and its own async/sync ratios (same rotation).
    let theories: Vec<f64> = r.compute.iter().zip(&r.write).map(|(c, w)| theory(*c, *w)).collect();
    let effs: Vec<Vec<f64>> = r.asyncs.iter().map(|a| a.iter().zip(&r.sync).map(|(a, s)| a / s).collect()).collect();
    let th = Summary::of(&theories);
    let eff: Vec<Summary> = effs.iter().map(|e| Summary::of(e)).collect();
    let verdict = verdict(&eff, th);
    let mut line = format!("  {:>5.2} {:>5} {:>16}", measured_ratio, spf, th.text(2));
    for e in &eff {
        let _ = write!(line, " {:>16}", e.text(2));
    }
    let auto_eff: Vec<f64> = r.auto.iter().zip(&r.sync).map(|(a, s)| a / s).collect();
    // The better of the fixed modes, by median wall time: sync or async at any io_buffer.
    let best_fixed = r
        .asyncs
        .iter()
        .chain([&r.sync])
        .map(|runs| Summary::of(runs))
        .min_by(|a, b| a.median.total_cmp(&b.median))
        .unwrap_or(Summary::of(&r.sync));
    let auto = Summary::of(&r.auto);
    let auto_vs_best = auto.median / best_fixed.median;
    let too_slow = (reps >= REPS_TO_JUDGE && auto_too_slow(auto, best_fixed)).then(|| {
        format!(
            "c/w {measured_ratio:.2}: auto {} s against the best fixed mode's {} s ({auto_vs_best:.3}x)",
            auto.text(4),
            best_fixed.text(4)
        )
    });
    // The yardstick, per rotation: auto over the better of sync and async at the
    // fixed modes' default io_buffer, what a user chose between before auto.
    let Some(default_async) = IO_BUFFERS.iter().position(|io| *io == DEFAULT_IO_BUFFER).map(|k| &r.asyncs[k]) else {
        bail!("the sweep's io_buffers {IO_BUFFERS:?} lack the default {DEFAULT_IO_BUFFER}");
    };
    let auto_vs_sync_or_async: Vec<f64> =
        r.auto.iter().zip(&r.sync).zip(default_async).map(|((a, s), d)| a / s.min(*d)).collect();
    let _ = write!(
        line,
        " {:>16} {auto_vs_best:>9.3} {:>16}  {verdict}; auto chose {}",
        Summary::of(&auto_eff).text(2),
        Summary::of(&auto_vs_sync_or_async).text(3),
        tally(&r.chosen)
    );
    let json = json!({
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
        "auto_seconds": Summary::json(&r.auto),
        "auto_efficiency_ratio": Summary::json(&auto_eff),
        "auto_over_best_fixed_median": auto_vs_best,
        "auto_over_better_of_sync_and_async": Summary::json(&auto_vs_sync_or_async),
        "default_io_buffer": DEFAULT_IO_BUFFER,
        "auto_chose": r.chosen,
        "verdict": verdict,
    });
    Ok(Row { line, json, auto_too_slow: too_slow })
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
    fn choices_are_tallied_in_the_order_first_seen() {
        let c = |s: &[&str]| s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(tally(&c(&["b", "a", "b"])), "b ×2; a ×1");
        assert_eq!(tally(&[]), "");
    }

    #[test]
    fn auto_fails_only_beyond_the_tolerance_and_the_spread() {
        let s = |median, min, max| Summary { median, min, max };
        // 10 % slower, ranges apart: too slow.
        assert!(auto_too_slow(s(1.10, 1.08, 1.12), s(1.0, 0.98, 1.02)));
        // 10 % slower, but its fastest run within the best's spread: not shown.
        assert!(!auto_too_slow(s(1.10, 1.01, 1.12), s(1.0, 0.98, 1.02)));
        // Apart, but within 5 %.
        assert!(!auto_too_slow(s(1.04, 1.03, 1.05), s(1.0, 0.99, 1.01)));
        // Faster.
        assert!(!auto_too_slow(s(0.9, 0.88, 0.92), s(1.0, 0.98, 1.02)));
    }

    #[test]
    fn ranges_are_apart_only_when_they_do_not_overlap() {
        let s = |min, max| Summary { median: (min + max) / 2.0, min, max };
        assert!(apart(s(0.50, 0.53), s(0.55, 0.60)));
        assert!(!apart(s(0.50, 0.56), s(0.55, 0.60)));
        assert!(!apart(s(0.55, 0.60), s(0.50, 0.56)));
    }
}
