//! The analysis of a split domain's frame, combined over the ranks: each rank's block
//! statistics into the whole grid's, then each rank's PDF counts into the whole grid's (see
//! [`wgpipe_compute::BlockAnalysis`]). On the device thread's Cartesian communicator, between
//! the frame's steps and its hand-off, so every rank makes the same calls in the same order.

use mpi::collective::SystemOperation;
use mpi::topology::CartesianCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};
use wgpipe_compute::BlockStatistics;

/// The whole grid's statistics of each field from every rank's: min of the mins, max of the
/// maxes, and the sum of the sums added in rank order (in f64), so that every rank gets the
/// same bits. `mine` has the same length on every rank (the analysed fields).
pub(crate) fn combine_statistics(comm: &CartesianCommunicator, mine: &[BlockStatistics]) -> Vec<BlockStatistics> {
    let flat: Vec<f32> = mine.iter().flat_map(|s| [s.min, s.max, s.sum]).collect();
    let mut all = vec![0f32; flat.len() * comm.size().max(1) as usize];
    comm.all_gather_into(&flat[..], &mut all[..]);
    (0..mine.len())
        .map(|f| {
            let per_rank = all.chunks_exact(flat.len().max(1)).map(|rank| &rank[3 * f..3 * f + 3]);
            let (mut min, mut max, mut sum) = (f32::INFINITY, f32::NEG_INFINITY, 0f64);
            for s in per_rank {
                min = min.min(s[0]);
                max = max.max(s[1]);
                sum += f64::from(s[2]);
            }
            BlockStatistics { min, max, sum: sum as f32 }
        })
        .collect()
}

/// The whole grid's PDF counts of each field: every rank's summed (a rank's are zero outside
/// its slices; ranks side by side share slices). Exact: the counts are integers.
pub(crate) fn combine_counts(comm: &CartesianCommunicator, mine: &[Vec<u32>]) -> Vec<Vec<u32>> {
    mine.iter()
        .map(|counts| {
            let mut total = vec![0u32; counts.len()];
            comm.all_reduce_into(&counts[..], &mut total[..], SystemOperation::sum());
            total
        })
        .collect()
}
