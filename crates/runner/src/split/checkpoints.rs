//! A split domain's checkpoint: every rank's block of the state gathered by rank 0 into the
//! whole grid's state and written as one file, the very file a run in one process writes. A
//! run resumes from it on any number of ranks (each cuts its block out of it again) or in one
//! process.

use std::sync::Arc;

use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, Root};
use wgpipe_compute::Block;
use wgpipe_storage::Error as StorageError;

use super::Topology;
use crate::checkpoint::{Checkpoints, SavedState, Saver};

/// Gathers the ranks' block states on the checkpoint communicator (the writer thread's own).
pub(crate) struct GatherToRankZero {
    pub(crate) topology: Arc<Topology>,
    /// Fields of the kernel (the state holds every one).
    pub(crate) fields: usize,
}

/// f32 values from little-endian bytes.
pub(crate) fn values(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// Little-endian bytes of f32 values.
pub(crate) fn bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

impl GatherToRankZero {
    /// Every rank's block, in rank order.
    fn blocks(&self) -> Result<Vec<Block>, String> {
        let t = &self.topology;
        let ranks = t.dims.iter().product::<usize>();
        (0..ranks)
            .map(|r| {
                let coords: Vec<usize> =
                    t.cart.rank_to_coordinates(r as i32).iter().map(|&c| c.max(0) as usize).collect();
                Block::of_decomposition(t.block.global(), &t.dims, &coords).map_err(|e| e.to_string())
            })
            .collect()
    }

    /// Rank 0: the whole grid's state from the gathered blocks, written as the checkpoint.
    fn assemble_and_write(
        &self,
        comm: &SimpleCommunicator,
        mine: &[f32],
        saved: &SavedState,
        checkpoints: &Checkpoints,
    ) -> Result<(), StorageError> {
        let fail = |m: String| StorageError::BadOutput { path: checkpoints.dir.clone(), reason: m };
        let blocks = self.blocks().map_err(fail)?;
        let counts: Vec<i32> = blocks.iter().map(|b| (b.cells() * self.fields) as i32).collect();
        let displs: Vec<i32> = counts.iter().scan(0, |at, &c| Some(std::mem::replace(at, *at + c))).collect();
        let mut gathered = vec![0f32; counts.iter().map(|&c| c as usize).sum()];
        comm.process_at_rank(0)
            .gather_varcount_into_root(mine, &mut PartitionMut::new(&mut gathered[..], &counts[..], &displs[..]));
        let global_cells = self.topology.block.global().cells();
        let mut whole = vec![0f32; global_cells * self.fields];
        for ((block, &at), &count) in blocks.iter().zip(&displs).zip(&counts) {
            let part = &gathered[at as usize..(at + count) as usize];
            block.place(part, self.fields, &mut whole).map_err(|e| fail(e.to_string()))?;
        }
        crate::checkpoint::write(
            &checkpoints.dir,
            &SavedState { state: bytes(&whole), ..saved.clone() },
            checkpoints.fsync,
        )
    }
}

impl Saver for GatherToRankZero {
    /// Collective on the split's ranks (each writer thread calls it for the same frames):
    /// gathers, rank 0 writes, and every rank learns whether it did.
    fn save(&mut self, saved: SavedState, checkpoints: &Checkpoints) -> Result<(), StorageError> {
        let comm = &self.topology.checkpoints;
        let mine = values(&saved.state);
        let root = comm.process_at_rank(0);
        let mut ok = [1u8];
        let written = if comm.rank() == 0 {
            let written = self.assemble_and_write(comm, &mine, &saved, checkpoints);
            ok[0] = u8::from(written.is_ok());
            written
        } else {
            root.gather_varcount_into(&mine[..]);
            Ok(())
        };
        root.broadcast_into(&mut ok[..]);
        match written {
            Err(e) => Err(e),
            Ok(()) if ok[0] == 0 => Err(StorageError::BadOutput {
                path: checkpoints.dir.clone(),
                reason: "MPI rank 0 could not write the split domain's checkpoint".to_owned(),
            }),
            Ok(()) => Ok(()),
        }
    }
}
