//! Every rank's figures of its run, gathered on every rank at the end of an MPI job.

use mpi::Count;
use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};

use crate::report::RunReport;

/// Separates the fields of one rank's figures in the gathered text (never in a label or an
/// error message).
const SEP: char = '\u{1f}';

/// How one rank's run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RankOutcome {
    /// Every frame of its streams written.
    Done,
    /// Stopped early (Ctrl-C, [`crate::StopHandle`]) with its output closed cleanly.
    Interrupted,
    /// Failed: the run's error.
    Failed(String),
}

/// One rank's figures of its run.
#[derive(Debug, Clone, PartialEq)]
pub struct RankFigures {
    /// The rank.
    pub rank: usize,
    /// Frames its sink wrote.
    pub frames: u64,
    /// Bytes its sink wrote.
    pub bytes: u64,
    /// Its run's wall time.
    pub wall_seconds: f64,
    /// Time its writes took.
    pub write_seconds: f64,
    /// Cells updated, times steps.
    pub cell_steps: u64,
    /// `device (N frames: stream, stream)` for each of its devices, `; `-separated.
    pub devices: String,
    /// How its run ended.
    pub outcome: RankOutcome,
}

impl RankFigures {
    /// Rank `rank`'s figures of `report` (all 0 when the run ended before it had one).
    pub fn new(rank: usize, report: Option<&RunReport>, outcome: RankOutcome) -> Self {
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

    /// Whether the rank's run failed.
    pub fn failed(&self) -> bool {
        matches!(self.outcome, RankOutcome::Failed(_))
    }

    /// Whether the rank's run was stopped early.
    pub fn interrupted(&self) -> bool {
        self.outcome == RankOutcome::Interrupted
    }

    /// Rank `rank`'s figures when its own could not be read.
    fn unreadable(rank: usize) -> Self {
        let outcome = RankOutcome::Failed("its figures could not be read".to_owned());
        RankFigures::new(rank, None, outcome)
    }

    fn encode(&self) -> String {
        let (status, error) = match &self.outcome {
            RankOutcome::Done => ("done", ""),
            RankOutcome::Interrupted => ("interrupted", ""),
            RankOutcome::Failed(e) => ("failed", e.as_str()),
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
                "done" => RankOutcome::Done,
                "interrupted" => RankOutcome::Interrupted,
                _ => RankOutcome::Failed(error.to_owned()),
            },
        })
    }
}

/// Every rank's figures, in rank order, on every rank (collective).
pub fn gather_figures(comm: &SimpleCommunicator, mine: &RankFigures) -> Vec<RankFigures> {
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
            RankFigures::decode(&String::from_utf8_lossy(part)).unwrap_or_else(|| RankFigures::unreadable(r))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_survive_their_text_whatever_the_error_says() {
        let mut figures = RankFigures::new(3, None, RankOutcome::Failed(format!("disk full{SEP}really")));
        figures.devices = "gpu (4 frames: a, b)".to_owned();
        let back = RankFigures::decode(&figures.encode());
        assert_eq!(back.as_ref().map(|f| (f.rank, f.devices.as_str())), Some((3, "gpu (4 frames: a, b)")));
        assert_eq!(back.map(|f| f.outcome), Some(RankOutcome::Failed("disk full really".to_owned())));
        assert_eq!(RankFigures::decode("3\u{1f}x"), None);
    }
}
