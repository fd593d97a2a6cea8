//! What every backend shared by MPI ranks needs (feature `mpi`): agreement, so that a step all
//! ranks took either succeeded on all of them or fails on all of them, naming the ranks where
//! it failed; and, for a frame split into blocks, the checks and the layout of a rank's block.

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};

use crate::error::{Error, Result};
use crate::schema::{FieldSpec, StreamLayout};

/// The ranks where `ok` is false, gathered on every rank (collective).
pub(crate) fn failed_ranks(comm: &SimpleCommunicator, ok: bool) -> Vec<usize> {
    let mut all = vec![0u8; comm.size().max(0) as usize];
    comm.all_gather_into(&u8::from(ok), &mut all[..]);
    all.iter().enumerate().filter(|(_, ok)| **ok == 0).map(|(r, _)| r).collect()
}

/// The streams (of `streams`) that any rank said ended short (`mine`, this rank's, from
/// [`crate::protocol::Outcome::short`]), gathered on every rank (collective): a stream a run
/// stopped early on one rank is incomplete in the shared output however many frames the
/// others gave it, and every rank marks the same.
pub(crate) fn short_streams(comm: &SimpleCommunicator, streams: usize, mine: &[usize]) -> Vec<usize> {
    let flags: Vec<u8> = (0..streams).map(|i| u8::from(mine.contains(&i))).collect();
    let mut any = vec![0u8; streams];
    comm.all_reduce_into(&flags[..], &mut any[..], SystemOperation::max());
    (0..streams).filter(|&i| any[i] > 0).collect()
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

/// Whether `field` is split into the ranks' blocks of extent `block`: a field of the block's
/// rank (the grid's fields). A field of another rank (a reduction of the whole grid: one
/// value, bin edges, counts per slice) is whole on every rank, which passes it whole, the same
/// on every rank; rank 0 writes it, and nothing checks that the other ranks' copies agree.
/// (By rank alone: a 1-D grid's bin edges would pass for blocks, so the split analysis is
/// 3-D only.)
pub(crate) fn is_blocked(field: &FieldSpec, block: &[usize]) -> bool {
    field.shape.len() == block.len()
}

/// Errors unless `layout` is one stream whose every field of the block's rank holds the
/// block at `offset` of extent `shape` (C order): what a rank writing its block of every
/// frame can store ([`is_blocked`]). A layout without such a field (the reductions of a split
/// run that stores some frames' fields only, beside them) is whole on every rank.
pub(crate) fn check_block(layout: &StreamLayout, offset: &[usize], shape: &[usize]) -> Result<()> {
    if layout.streams.len() != 1 {
        return Err(Error::InvalidLayout(format!(
            "a frame split into blocks is written as one stream, the layout has {}",
            layout.streams.len()
        )));
    }
    for f in layout.fields.iter().filter(|f| is_blocked(f, shape)) {
        let fits = offset.len() == shape.len()
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

/// The layout of the frames a rank writes: `layout` with every field of the block's rank
/// of the block's `shape`, the others whole ([`is_blocked`]).
pub(crate) fn block_layout(layout: &StreamLayout, shape: &[usize]) -> StreamLayout {
    let mut block = layout.clone();
    for f in block.fields.iter_mut().filter(|f| is_blocked(f, shape)) {
        f.shape = shape.to_vec();
    }
    block
}
