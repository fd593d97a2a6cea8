//! What the ranks of a split run did together, reduced over the ranks at the end.

use mpi::collective::SystemOperation;
use mpi::traits::CommunicatorCollectives;

use super::SplitDomain;
use crate::report::RunReport;

/// The figures of a split run over every rank: the frames every rank wrote, the slowest
/// rank's seconds in each part, and the bytes the ranks left out together.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SplitFigures {
    /// Frames every rank wrote (the least any rank did).
    pub frames: u64,
    /// The slowest rank's seconds in each part of the run.
    pub slowest: SplitSeconds,
    /// Bytes of fields not stored (`output.every`, `output.when`), every rank's blocks.
    pub skipped_bytes: u64,
}

/// A rank's seconds in each part of a split run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SplitSeconds {
    /// The kernel: its steps and the block's readback, less the halo.
    pub compute: f64,
    /// The halo: faces read back, the exchange, the ghosts written.
    pub halo: f64,
    /// The MPI exchange alone (part of `halo`).
    pub mpi: f64,
    /// The collective writes.
    pub write: f64,
    /// Closing the output.
    pub close: f64,
    /// The run's wall time.
    pub wall: f64,
}

impl SplitSeconds {
    fn to_array(self) -> [f64; 6] {
        [self.compute, self.halo, self.mpi, self.write, self.close, self.wall]
    }

    fn from_array([compute, halo, mpi, write, close, wall]: [f64; 6]) -> Self {
        SplitSeconds { compute, halo, mpi, write, close, wall }
    }
}

impl SplitDomain {
    /// This rank's seconds in each part of its run, of which `report` is the report.
    pub fn seconds(&self, report: &RunReport) -> SplitSeconds {
        let (halo, mpi) = self.halo_seconds();
        let device: f64 = report.devices.iter().map(|d| d.compute_seconds).sum();
        SplitSeconds {
            compute: (device - halo).max(0.0),
            halo,
            mpi,
            write: report.write_seconds(),
            close: report.finish_seconds,
            wall: report.wall_seconds,
        }
    }

    /// The run's figures over every rank, from each rank's `report` (collective: every rank
    /// calls it once its run has ended, however it ended).
    pub fn gather_figures(&self, report: &RunReport) -> SplitFigures {
        let comm = &self.topology.comm;
        let mut frames = 0u64;
        comm.all_reduce_into(&report.written_frames(), &mut frames, SystemOperation::min());
        let mut slowest = [0f64; 6];
        comm.all_reduce_into(&self.seconds(report).to_array()[..], &mut slowest[..], SystemOperation::max());
        // Every rank skips the same frames; each skips its own block's bytes of them.
        let mut skipped_bytes = 0u64;
        comm.all_reduce_into(&report.sink.skipped_bytes, &mut skipped_bytes, SystemOperation::sum());
        SplitFigures { frames, slowest: SplitSeconds::from_array(slowest), skipped_bytes }
    }
}
