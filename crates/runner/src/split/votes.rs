//! The split domain's frame-boundary vote ([`FrameAgreement`]) over MPI: one `MPI_Allgather`
//! of a byte per rank, on a communicator of its own (the device thread's; the writer thread's
//! collective writes and the halo exchange use theirs).

use std::sync::Arc;

use mpi::traits::{Communicator, CommunicatorCollectives};

use super::Topology;

use crate::lockstep::{FrameAgreement, Tally, Vote};

/// Every rank's vote, gathered on every rank.
pub(crate) struct MpiVotes {
    pub topology: Arc<Topology>,
}

impl FrameAgreement for MpiVotes {
    fn agree(&self, mine: Vote) -> Tally {
        let code = |v: Vote| match v {
            Vote::Go => 0u8,
            Vote::Stop => 1,
            Vote::Fail => 2,
        };
        let comm = &self.topology.votes;
        let voters = comm.size().max(1) as usize;
        let mut all = vec![0u8; voters];
        comm.all_gather_into(&code(mine), &mut all[..]);
        Tally {
            failed: all.iter().enumerate().filter(|(_, v)| **v == code(Vote::Fail)).map(|(r, _)| r).collect(),
            stop: all.contains(&code(Vote::Stop)),
            voters,
        }
    }
}
