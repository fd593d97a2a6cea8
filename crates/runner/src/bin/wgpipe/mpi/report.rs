//! The summary of an MPI job: every rank's figures gathered and printed by rank 0.

use wgpipe::RunReport;
use wgpipe::storage::mpi::Count;
use wgpipe::storage::mpi::datatype::PartitionMut;
use wgpipe::storage::mpi::topology::SimpleCommunicator;
use wgpipe::storage::mpi::traits::{Communicator, CommunicatorCollectives};

/// Separates the fields of one rank's figures in the gathered text (never in a label or an
/// error message).
const SEP: char = '\u{1f}';

/// How one rank's run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done,
    Interrupted,
    /// The run's error.
    Failed(String),
}

/// One rank's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct RankFigures {
    pub rank: usize,
    frames: u64,
    bytes: u64,
    wall_seconds: f64,
    write_seconds: f64,
    cell_steps: u64,
    /// `device: job, job` per device thread.
    devices: String,
    outcome: Outcome,
}

impl RankFigures {
    /// The figures of `report` (none when the run ended before it had one).
    pub fn new(rank: usize, report: Option<&RunReport>, outcome: Outcome) -> Self {
        let r = report.cloned().unwrap_or_default();
        let devices: Vec<String> =
            r.devices.iter().map(|d| format!("{} ({} frames: {})", d.device, d.frames, d.jobs.join(", "))).collect();
        RankFigures {
            rank,
            frames: r.written_frames(),
            bytes: r.sink.bytes,
            wall_seconds: r.wall_seconds,
            write_seconds: r.write_seconds(),
            cell_steps: r.cell_steps,
            devices: devices.join("; "),
            outcome,
        }
    }

    pub fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Failed(_))
    }

    pub fn interrupted(&self) -> bool {
        self.outcome == Outcome::Interrupted
    }

    fn encode(&self) -> String {
        let (status, error) = match &self.outcome {
            Outcome::Done => ("done", ""),
            Outcome::Interrupted => ("interrupted", ""),
            Outcome::Failed(e) => ("failed", e.as_str()),
        };
        let clean = |s: &str| s.replace(SEP, " ");
        [
            self.rank.to_string(),
            self.frames.to_string(),
            self.bytes.to_string(),
            self.wall_seconds.to_string(),
            self.write_seconds.to_string(),
            self.cell_steps.to_string(),
            clean(&self.devices),
            status.to_owned(),
            clean(error),
        ]
        .join(&SEP.to_string())
    }

    fn decode(text: &str) -> Option<Self> {
        let parts: Vec<&str> = text.split(SEP).collect();
        let [rank, frames, bytes, wall, write, cells, devices, status, error] = parts[..] else { return None };
        Some(RankFigures {
            rank: rank.parse().ok()?,
            frames: frames.parse().ok()?,
            bytes: bytes.parse().ok()?,
            wall_seconds: wall.parse().ok()?,
            write_seconds: write.parse().ok()?,
            cell_steps: cells.parse().ok()?,
            devices: devices.to_owned(),
            outcome: match status {
                "done" => Outcome::Done,
                "interrupted" => Outcome::Interrupted,
                _ => Outcome::Failed(error.to_owned()),
            },
        })
    }
}

/// Every rank's figures, in rank order, on every rank (collective).
pub fn gather(comm: &SimpleCommunicator, mine: &RankFigures) -> Vec<RankFigures> {
    let text = mine.encode().into_bytes();
    let ranks = comm.size().max(1) as usize;
    let mut counts: Vec<Count> = vec![0; ranks];
    let own = Count::try_from(text.len()).unwrap_or(Count::MAX);
    comm.all_gather_into(&own, &mut counts[..]);
    let displs: Vec<Count> = counts
        .iter()
        .scan(0, |at: &mut Count, &c| {
            let d = *at;
            *at = at.saturating_add(c);
            Some(d)
        })
        .collect();
    let total: usize = counts.iter().map(|&c| c.max(0) as usize).sum();
    let mut all = vec![0u8; total];
    comm.all_gather_varcount_into(&text[..], &mut PartitionMut::new(&mut all[..], &counts[..], &displs[..]));
    counts
        .iter()
        .zip(&displs)
        .enumerate()
        .map(|(r, (&c, &d))| {
            let part = all.get(d as usize..(d + c) as usize).unwrap_or_default();
            RankFigures::decode(&String::from_utf8_lossy(part)).unwrap_or_else(|| RankFigures {
                rank: r,
                frames: 0,
                bytes: 0,
                wall_seconds: 0.0,
                write_seconds: 0.0,
                cell_steps: 0,
                devices: String::new(),
                outcome: Outcome::Failed("its figures could not be read".to_owned()),
            })
        })
        .collect()
}

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
            Outcome::Done => "done".to_owned(),
            Outcome::Interrupted => "interrupted".to_owned(),
            Outcome::Failed(e) => format!("FAILED: {e}"),
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
