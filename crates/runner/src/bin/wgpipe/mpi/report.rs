//! The summary of an MPI job: every rank's figures (gathered by the library,
//! [`wgpipe::ranks::gather_figures`]) printed by rank 0.

use wgpipe::ranks::{RankFigures, RankOutcome};

/// The per-rank table, the job's totals and where the frames went.
pub fn print(all: &[RankFigures], output: &str) {
    out!(
        "{:>4} {:>8} {:>12} {:>9} {:>9} {:>14}  status, devices (frames: streams)",
        "rank",
        "frames",
        "bytes",
        "wall s",
        "write s",
        "cell-steps/s"
    );
    for f in all {
        let status = match &f.outcome {
            RankOutcome::Done => "done".to_owned(),
            RankOutcome::Interrupted => "interrupted".to_owned(),
            RankOutcome::Failed(e) => format!("FAILED: {e}"),
        };
        out!(
            "{:>4} {:>8} {:>12} {:>9.3} {:>9.3} {:>14.3e}  {status}, {}",
            f.rank,
            f.frames,
            f.bytes,
            f.wall_seconds,
            f.write_seconds,
            f.cell_steps as f64 / f.wall_seconds.max(1e-9),
            f.devices
        );
    }
    let frames: u64 = all.iter().map(|f| f.frames).sum();
    let bytes: u64 = all.iter().map(|f| f.bytes).sum();
    let wall = all.iter().map(|f| f.wall_seconds).fold(0.0, f64::max);
    let cells: u64 = all.iter().map(|f| f.cell_steps).sum();
    out!(
        " all {frames:>8} {bytes:>12} {wall:>9.3} {:>9} {:>14.3e}  {} ranks (wall: the slowest rank)",
        "",
        cells as f64 / wall.max(1e-9),
        all.len()
    );
    out!("output: {output}");
}
