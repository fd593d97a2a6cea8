//! What every backend shared by MPI ranks needs (feature `mpi`): agreement, so that a step all
//! ranks took either succeeded on all of them or fails on all of them, naming the ranks where
//! it failed; and, for a frame split into blocks, the checks and the layout of a rank's block.

use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};

use crate::error::{Error, Result};
use crate::schema::StreamLayout;

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

/// Errors unless `layout` is one stream whose every field holds the block at `offset` of
/// extent `shape` (C order): what a rank writing its block of every frame can store.
pub(crate) fn check_block(layout: &StreamLayout, offset: &[usize], shape: &[usize]) -> Result<()> {
    if layout.streams.len() != 1 {
        return Err(Error::InvalidLayout(format!(
            "a frame split into blocks is written as one stream, the layout has {}",
            layout.streams.len()
        )));
    }
    for f in &layout.fields {
        let fits = f.shape.len() == shape.len()
            && offset.len() == shape.len()
            && f.shape.iter().zip(offset).zip(shape).all(|((&n, &o), &s)| s >= 1 && o + s <= n);
        if !fits {
            return Err(Error::InvalidLayout(format!(
                "the block at offset {offset:?} of shape {shape:?} does not lie within field {} of shape {:?}",
                f.name, f.shape
            )));
        }
    }
    Ok(())
}

/// The layout of the frames a rank writes: `layout` with every field of the block's `shape`.
pub(crate) fn block_layout(layout: &StreamLayout, shape: &[usize]) -> StreamLayout {
    let mut block = layout.clone();
    for f in &mut block.fields {
        f.shape = shape.to_vec();
    }
    block
}
