//! What every backend shared by MPI ranks needs (feature `mpi`): agreement, so that a step all
//! ranks took either succeeded on all of them or fails on all of them, naming the ranks where
//! it failed; and, for a frame split into blocks, the checks and the layout of a rank's block.

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};

use crate::error::{Error, Result};
use crate::schema::{FieldSpec, StreamLayout};

/// The ranks where `ok` is false, gathered on every rank (collective: every rank of `comm`
/// calls it).
pub fn failed_ranks(comm: &SimpleCommunicator, ok: bool) -> Vec<usize> {
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

/// Collective: errors on every rank ([`Error::RanksDisagree`]) unless every rank was given
/// the same bytes in `whole`, a frame's fields that are whole on every rank ([`Block::part`]
/// is `None`). Rank 0 alone writes those (the whole grid's reductions), and a rank whose copy
/// differed would, with `output.when`, keep other frames than the others and wait in a write
/// they never make: this turns that hang into an error at the frame where the copies part.
/// Costs a hash of the whole fields (small) and a gather of 8 bytes per rank.
pub(crate) fn agree_on_whole<'a>(
    comm: &SimpleCommunicator,
    whole: impl Iterator<Item = &'a [u8]>,
    action: impl FnOnce() -> String,
) -> Result<()> {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for bytes in whole {
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    let mut all = vec![0u64; comm.size().max(0) as usize];
    comm.all_gather_into(&hasher.digest(), &mut all[..]);
    let ranks: Vec<usize> = all.iter().enumerate().filter(|(_, h)| Some(*h) != all.first()).map(|(r, _)| r).collect();
    if ranks.is_empty() { Ok(()) } else { Err(Error::RanksDisagree { action: action(), ranks }) }
}

/// Where a rank's block lies in the fields of a frame split over ranks: the block at `offset`
/// of extent `shape` of the grid, and, where the grid is also stored downsampled by a factor
/// k (fields of the grid's shape divided by k, rounded up), the block's coarse cells in
/// those (its offset a multiple of k on every axis, so that no coarse cell straddles two
/// blocks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    offset: Vec<usize>,
    shape: Vec<usize>,
    /// The downsampled fields' shape and the factor.
    coarse: Option<(Vec<usize>, usize)>,
}

/// A rank's part of one field: `offset` and `shape` per axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    pub offset: Vec<usize>,
    pub shape: Vec<usize>,
}

impl Block {
    /// The block at `offset` of extent `shape` of every field of its rank.
    pub(crate) fn new(offset: &[usize], shape: &[usize]) -> Self {
        Block { offset: offset.to_vec(), shape: shape.to_vec(), coarse: None }
    }

    /// Makes the fields of the grid `grid`'s shape divided by `factor` (rounded up) the grid
    /// downsampled: this block's part of them is its coarse cells. A factor of 0 or 1 changes
    /// nothing.
    pub(crate) fn downsample(&mut self, grid: &[usize], factor: usize) {
        self.coarse = (factor > 1).then(|| (grid.iter().map(|n| n.div_ceil(factor)).collect(), factor));
    }

    /// The block's part of `field`, or `None` when the field is whole on every rank: a field
    /// of another rank than the block's (a reduction of the whole grid: one value, bin edges,
    /// counts per slice), which every rank passes whole, the same everywhere; rank 0 writes
    /// it, once every rank's copy is found the same ([`agree_on_whole`]). (By rank alone: a 1-D grid's
    /// bin edges would pass for blocks, so the split analysis is 3-D only.)
    pub(crate) fn part(&self, field: &FieldSpec) -> Option<Part> {
        if field.shape.len() != self.shape.len() {
            return None;
        }
        Some(match &self.coarse {
            Some((coarse, k)) if field.shape == *coarse => {
                let offset: Vec<usize> = self.offset.iter().map(|o| o / k).collect();
                let end = self.offset.iter().zip(&self.shape).map(|(o, s)| (o + s).div_ceil(*k));
                Part { shape: end.zip(&offset).map(|(e, o)| e - o).collect(), offset }
            }
            _ => Part { offset: self.offset.clone(), shape: self.shape.clone() },
        })
    }

    /// Errors unless `layout` is one stream whose every field of the block's rank holds the
    /// block's part ([`Block::part`]): what a rank writing its block of every frame can
    /// store. A layout without such a field (the reductions of a split run that stores some
    /// frames' fields only, beside them) is whole on every rank.
    pub(crate) fn check(&self, layout: &StreamLayout) -> Result<()> {
        if layout.streams.len() != 1 {
            return Err(Error::InvalidLayout(format!(
                "a frame split into blocks is written as one stream, the layout has {}",
                layout.streams.len()
            )));
        }
        if let Some((coarse, k)) = &self.coarse
            && layout.fields.iter().any(|f| f.shape == *coarse)
            && self.offset.iter().any(|o| o % k != 0)
        {
            return Err(Error::InvalidLayout(format!(
                "the block at offset {:?} does not start at a multiple of the downsampling factor {k}: a coarse \
                 cell would straddle two blocks",
                self.offset
            )));
        }
        for f in &layout.fields {
            let Some(part) = self.part(f) else { continue };
            let fits = part.offset.iter().zip(&part.shape).zip(&f.shape).all(|((&o, &s), &n)| s >= 1 && o + s <= n);
            if !fits {
                return Err(Error::InvalidLayout(format!(
                    "the block at offset {:?} of shape {:?} does not lie within field {} of shape {:?}",
                    part.offset, part.shape, f.name, f.shape
                )));
            }
        }
        Ok(())
    }

    /// The layout of the frames a rank writes: `layout` with every field of the block's rank
    /// of its part's shape ([`Block::part`]), the others whole.
    pub(crate) fn frame_layout(&self, layout: &StreamLayout) -> StreamLayout {
        let mut block = layout.clone();
        for f in &mut block.fields {
            if let Some(part) = self.part(f) {
                f.shape = part.shape;
            }
        }
        block
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;
    use crate::{DType, StreamInfo};

    fn layout(fields: &[(&str, &[usize])]) -> StreamLayout {
        let fields = fields.iter().map(|(n, s)| FieldSpec::new(*n, DType::F32, s.to_vec())).collect();
        StreamLayout::new(fields).with_stream(StreamInfo::new("s"))
    }

    /// 23 × 20 × 16 downsampled by 2 is 12 × 10 × 8: the last block along z (12 planes of 23
    /// from plane 12: 11) holds coarse planes 6 to 11, the last one half a coarse cell.
    #[test]
    fn a_blocks_part_of_a_downsampled_field_is_its_coarse_cells() {
        let mut block = Block::new(&[12, 0, 8], &[11, 20, 8]);
        block.downsample(&[23, 20, 16], 2);
        let l = layout(&[("v", &[23, 20, 16]), ("v_ds", &[12, 10, 8]), ("v_pdf", &[23, 4])]);
        block.check(&l).unwrap();
        let parts: Vec<Option<Part>> = l.fields.iter().map(|f| block.part(f)).collect();
        assert_eq!(
            parts,
            [
                Some(Part { offset: vec![12, 0, 8], shape: vec![11, 20, 8] }),
                Some(Part { offset: vec![6, 0, 4], shape: vec![6, 10, 4] }),
                None,
            ]
        );
        let frames = block.frame_layout(&l);
        assert_eq!(frames.fields[1].shape, [6, 10, 4]);
        let mut misplaced = Block::new(&[11, 0, 0], &[12, 20, 16]);
        misplaced.downsample(&[23, 20, 16], 2);
        assert!(misplaced.check(&l).unwrap_err().to_string().contains("multiple of the downsampling factor 2"));
    }
}
