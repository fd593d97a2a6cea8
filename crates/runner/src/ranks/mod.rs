//! What the ranks of an MPI job (cargo feature `mpi`) tell each other about their runs,
//! besides the frames the sinks share: which ranks failed a step, whether they were started
//! alike, every rank's progress while they run ([`ProgressGather`]) and its figures at the end
//! ([`RankFigures`]). `wgpipe run` under `mpirun` prints them on rank 0; an application that
//! shares a batch over its own ranks ([`crate::PipelineBuilder::shard`]) can do the same. A
//! split domain's figures are [`crate::split::SplitFigures`].
//!
//! Every function here is collective: every rank of the communicator calls it, in the same
//! order.

mod figures;
mod progress;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;

use mpi::Threading;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, Root};

use crate::error::{Error, Result};

pub use figures::{RankFigures, RankOutcome, gather_figures};
pub use progress::{ProgressGather, RankCounts};
/// The ranks whose `ok` is false, gathered on every rank.
pub use wgpipe_storage::failed_ranks;

/// Initialises MPI as a pipeline needs it: `Threading::Multiple` (a run's device and writer
/// threads, and a [`ProgressGather`], call MPI at the same time), and a panic on any thread
/// of this rank aborts the whole job (`MPI_Abort` with code 101, after the panic's message):
/// a panicking rank would otherwise leave the others waiting in a collective call forever.
/// MPI is finalised when the returned universe is dropped. Errors when MPI was initialised
/// already or grants less than `Multiple`.
pub fn initialize() -> Result<Universe> {
    let (universe, granted) = mpi::initialize_with_threading(Threading::Multiple)
        .ok_or_else(|| Error::Mpi("it was initialised already: initialise it once, here".to_owned()))?;
    if granted != Threading::Multiple {
        return Err(Error::Mpi(format!(
            "this MPI library grants thread level {granted:?}, wgpipe needs Multiple (its writer and progress \
             threads call MPI): use an MPI built with thread support (MPICH is)"
        )));
    }
    let comm = universe.world();
    let (rank, size) = (comm.rank(), comm.size());
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        // A closed stderr must not stop the abort.
        let _ = writeln!(std::io::stderr(), "error: MPI rank {rank} of {size} panicked: aborting the whole job");
        SimpleCommunicator::world().abort(101);
    }));
    Ok(universe)
}

/// Whether this rank's `value` hashes as rank 0's does: ranks started with different configs
/// (or `--set`s) would create different files, or the same file differently, and hang.
pub fn same_as_rank_zero(comm: &SimpleCommunicator, value: &impl Hash) -> bool {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    let own = h.finish();
    let mut rank_zero = own;
    comm.process_at_rank(0).broadcast_into(&mut rank_zero);
    rank_zero == own
}
