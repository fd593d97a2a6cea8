//! Agreement between the MPI ranks that share an output (feature `mpi`), for every backend
//! whose writes are collective: a step all ranks took either succeeded on all of them, or
//! fails on all of them, naming the ranks where it failed.

use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};

use crate::error::{Error, Result};

/// The ranks where `ok` is false, gathered on every rank (collective).
pub(crate) fn failed_ranks(comm: &SimpleCommunicator, ok: bool) -> Vec<usize> {
    let mut all = vec![0u8; comm.size().max(0) as usize];
    comm.all_gather_into(&u8::from(ok), &mut all[..]);
    all.iter().enumerate().filter(|(_, ok)| **ok == 0).map(|(r, _)| r).collect()
}

/// Makes every rank agree on the outcome of a step they all took (collective): a rank that
/// failed returns its own error, the others an [`Error::OtherRank`] naming it. Without this,
/// the ranks that succeeded would go on to the next collective call and wait forever.
pub(crate) fn agree<T>(comm: &SimpleCommunicator, result: Result<T>, action: impl FnOnce() -> String) -> Result<T> {
    let ranks = failed_ranks(comm, result.is_ok());
    match result {
        Err(e) => Err(e),
        Ok(_) if !ranks.is_empty() => Err(Error::OtherRank { action: action(), ranks }),
        Ok(v) => Ok(v),
    }
}
