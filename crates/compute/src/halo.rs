//! One grid split into blocks: each block computed by its own [`BlockSim`] (on one rank, or
//! one device), with one-cell halos exchanged every step.
//!
//! A block's buffers hold its cells plus one ghost layer beyond each face; the kernel updates
//! only the block's cells and reads the ghosts as neighbours, so the step shader needs no
//! boundary rule. Before each step, every block sends its boundary layers ([`Faces`], read in
//! one GPU round trip) to its neighbours, and receives theirs into its ghosts. The noise is
//! keyed by the global cell index (`global_index(c)` in the prelude), so a split run is bit for
//! bit the whole grid's. [`exchange_in_process`] does the exchange for blocks in one process;
//! an MPI runner sends the same [`Faces`] between ranks.

mod block;
mod sim;

pub use block::Block;
pub use sim::BlockSim;

use crate::error::{Error, Result};
use crate::prelude::Boundary;

/// One side of an axis. Axes are numbered in C order of the grid's shape: for a 3-D grid
/// `[nz, ny, nx]`, axis 0 is z, 1 is y, 2 is x (the order of [`crate::Grid::shape`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Towards index 0.
    Low,
    /// Towards the last index.
    High,
}

impl Side {
    /// Both sides, low first (the order of faces in [`Faces`]).
    pub const BOTH: [Side; 2] = [Side::Low, Side::High];

    /// The other side.
    pub fn opposite(self) -> Side {
        match self {
            Side::Low => Side::High,
            Side::High => Side::Low,
        }
    }
}

impl std::fmt::Display for Side {
    /// `low`, `high`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Low => "low",
            Side::High => "high",
        })
    }
}

/// Values through every face of a block, per (axis, side) one run of
/// [`Block::face_len`] values: field after field, each in C order of the other axes.
///
/// Stored as one buffer (axis 0 low, axis 0 high, axis 1 low, ...), the layout the GPU packs
/// them in, so a whole exchange is one copy each way ([`Faces::as_slice`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Faces {
    values: Vec<f32>,
    /// Start of each (axis, side) in `values`, then the end: `2 · rank + 1` entries.
    starts: Vec<usize>,
}

impl Faces {
    /// Zero-filled faces of `block` with `fields` fields.
    pub fn new(block: &Block, fields: usize) -> Faces {
        let mut starts = vec![0];
        for axis in 0..block.global().rank() {
            for _ in Side::BOTH {
                starts.push(starts[starts.len() - 1] + block.face_len(axis, fields));
            }
        }
        Faces { values: vec![0.0; starts[starts.len() - 1]], starts }
    }

    /// The range of (axis, side) in `values`; empty for an axis the block lacks.
    fn range(&self, axis: usize, side: Side) -> std::ops::Range<usize> {
        let k = 2 * axis + usize::from(side == Side::High);
        match (self.starts.get(k), self.starts.get(k + 1)) {
            (Some(start), Some(end)) => *start..*end,
            _ => 0..0,
        }
    }

    /// The values through the face on `axis`, `side` (empty for an axis the grid lacks).
    pub fn get(&self, axis: usize, side: Side) -> &[f32] {
        &self.values[self.range(axis, side)]
    }

    /// The values through the face on `axis`, `side`, to fill (empty for an axis the grid lacks).
    pub fn get_mut(&mut self, axis: usize, side: Side) -> &mut [f32] {
        let range = self.range(axis, side);
        &mut self.values[range]
    }

    /// Every face, in order (axis 0 low, axis 0 high, axis 1 low, ...): one message's worth.
    pub fn as_slice(&self) -> &[f32] {
        &self.values
    }

    /// Every face, in order, to fill.
    pub fn as_mut_slice(&mut self) -> &mut [f32] {
        &mut self.values
    }

    /// Values per (axis, side), in order.
    pub fn lens(&self) -> Vec<usize> {
        self.starts.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// Whether `other` has the same faces and lengths.
    fn same_layout(&self, other: &Faces) -> bool {
        self.starts == other.starts
    }
}

/// The ghosts every block receives from its neighbours, given what every block sends
/// (`faces[i]`, from [`BlockSim::read_faces`] of `blocks[i]`): the exchange of one step for
/// blocks in one process, without the GPU.
///
/// The blocks must tile their grid as a Cartesian decomposition: each face of a block meets
/// exactly one block with the same extent along the other axes, across the grid's edge too
/// (periodic: one block along an axis is its own neighbour there). Under a zero-flux boundary
/// (one whole block only: [`BlockSim::new`]) a face on the grid's edge gets the block's own
/// boundary layer, as the neighbour past a face is the face cell itself.
pub fn exchange_faces(blocks: &[&Block], faces: &[Faces], boundary: Boundary) -> Result<Vec<Faces>> {
    let Some(first) = blocks.first() else { return Ok(Vec::new()) };
    let global = first.global();
    let invalid = |what: String, message: String| Error::InvalidBlock { what, global: global.to_string(), message };
    let name = |i: usize| format!("#{i} (offset {:?}, shape {:?})", blocks[i].offset(), blocks[i].shape());
    if faces.len() != blocks.len() {
        return Err(invalid(
            "list".to_owned(),
            format!("{} blocks but {} sets of faces: give one per block", blocks.len(), faces.len()),
        ));
    }
    if let Some(i) = blocks.iter().position(|b| b.global() != global) {
        return Err(invalid(
            name(i),
            format!("it is a block of the {} grid, not of block #0's: exchange blocks of one grid", blocks[i].global()),
        ));
    }
    let mut ghosts = Vec::with_capacity(blocks.len());
    for (i, block) in blocks.iter().enumerate() {
        let mut mine = faces[i].clone();
        for axis in 0..global.rank() {
            for side in Side::BOTH {
                let high = side == Side::High;
                let source = if boundary == Boundary::ZeroFlux && block.touches(axis, high) {
                    // The neighbour past a zero-flux face is the face cell: the block's own layer.
                    faces[i].get(axis, side)
                } else {
                    let j = neighbour(blocks, i, axis, side).ok_or_else(|| {
                        invalid(
                            name(i),
                            format!(
                                "no block meets its {side} face on axis {axis} with the same extent along the other \
                                 axes: the blocks must tile the grid as a Cartesian decomposition"
                            ),
                        )
                    })?;
                    faces[j].get(axis, side.opposite())
                };
                let target = mine.get_mut(axis, side);
                if target.len() != source.len() {
                    return Err(invalid(
                        name(i),
                        format!(
                            "its {side} face on axis {axis} holds {} values but its neighbour sent {}: give every \
                             block the faces of the same kernel",
                            target.len(),
                            source.len()
                        ),
                    ));
                }
                target.copy_from_slice(source);
            }
        }
        ghosts.push(mine);
    }
    Ok(ghosts)
}

/// The block that meets block `i`'s face on (`axis`, `side`), the grid wrapping around.
fn neighbour(blocks: &[&Block], i: usize, axis: usize, side: Side) -> Option<usize> {
    let me = blocks[i];
    let n = me.global().shape()[axis];
    let lines_up = |other: &Block| {
        (0..me.offset().len())
            .filter(|a| *a != axis)
            .all(|a| other.offset()[a] == me.offset()[a] && other.shape()[a] == me.shape()[a])
    };
    let meets = |other: &Block| match side {
        Side::High => other.offset()[axis] == (me.offset()[axis] + me.shape()[axis]) % n,
        Side::Low => (other.offset()[axis] + other.shape()[axis]) % n == me.offset()[axis],
    };
    let mut found = blocks.iter().enumerate().filter(|(_, b)| lines_up(b) && meets(b)).map(|(j, _)| j);
    let j = found.next()?;
    // Two blocks meeting one face overlap: not a decomposition.
    found.next().is_none().then_some(j)
}

/// One step's halo exchange between blocks computed in this process (several blocks on one
/// device, or on several devices of one machine, or the one block of a single rank): reads
/// every block's faces, hands each its neighbours' ([`exchange_faces`]) and writes them into
/// its ghosts. Call it before every [`BlockSim::run_step`], the first included.
///
/// ```
/// use wgpipe_compute::gray_scott_3d::{self, GrayScott3dParams};
/// use wgpipe_compute::{open_devices, Block, BlockSim, DeviceSelector, FieldSim, Grid, exchange_in_process};
///
/// let gpu = open_devices(&DeviceSelector::All, 1)?.remove(0);
/// let kernel = GrayScott3dParams { noise: 0.01, ..Default::default() }.kernel(1);
/// let grid = Grid::new(&[16, 12, 8])?;
/// let initial = gray_scott_3d::initial_state(&grid);
/// // Two uneven halves along z.
/// let halves = [Block::new(&grid, &[0, 0, 0], &[7, 12, 8])?, Block::new(&grid, &[7, 0, 0], &[9, 12, 8])?];
/// let mut sims = halves
///     .iter()
///     .map(|b| BlockSim::new(&gpu, &kernel, b, &b.extract(&initial, 2)?))
///     .collect::<Result<Vec<_>, _>>()?;
/// for _ in 0..10 {
///     exchange_in_process(&mut sims)?;
///     for sim in &mut sims {
///         sim.run_step()?;
///     }
/// }
/// let mut gathered = vec![0.0; initial.len()];
/// for sim in &sims {
///     sim.block().place(&sim.read_block(&[0, 1])?, 2, &mut gathered)?;
/// }
/// let mut whole = FieldSim::new(&gpu, &kernel, &grid, &initial)?;
/// whole.run_steps(10)?;
/// assert_eq!(gathered, whole.read_state()?); // bit for bit, noise included
/// # Ok::<(), wgpipe_compute::Error>(())
/// ```
pub fn exchange_in_process(sims: &mut [BlockSim]) -> Result<()> {
    let Some(first) = sims.first() else { return Ok(()) };
    let boundary = first.spec().boundary;
    let faces = sims.iter_mut().map(BlockSim::read_faces).collect::<Result<Vec<_>>>()?;
    let blocks: Vec<&Block> = sims.iter().map(BlockSim::block).collect();
    let ghosts = exchange_faces(&blocks, &faces, boundary)?;
    for (sim, ghosts) in sims.iter_mut().zip(&ghosts) {
        sim.write_ghosts(ghosts)?;
    }
    Ok(())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use crate::grid::Grid;

    fn grid(shape: &[usize]) -> Grid {
        Grid::new(shape).unwrap()
    }

    /// Faces whose every value names (block, axis, side).
    fn labelled(block: &Block, fields: usize, id: usize) -> Faces {
        let mut f = Faces::new(block, fields);
        for axis in 0..block.global().rank() {
            for (s, side) in Side::BOTH.into_iter().enumerate() {
                f.get_mut(axis, side).fill((100 * id + 10 * axis + s) as f32);
            }
        }
        f
    }

    #[test]
    fn faces_are_laid_out_axis_by_axis_low_then_high() {
        let g = grid(&[4, 5, 6]);
        let b = Block::new(&g, &[0, 1, 2], &[4, 3, 2]).unwrap();
        let f = labelled(&b, 2, 0);
        assert_eq!(f.lens(), [12, 12, 16, 16, 24, 24]);
        assert_eq!(f.as_slice().len(), 104);
        assert_eq!((f.get(1, Side::High)[0], f.as_slice()[24 + 16]), (11.0, 11.0));
        assert!(f.get(3, Side::Low).is_empty(), "an axis the grid lacks has no face");
        assert_eq!(Side::Low.opposite(), Side::High);
    }

    #[test]
    fn each_ghost_comes_from_the_neighbour_across_the_face_periodically() {
        // 1-D: [0, 3) [3, 7) [7, 10); block 0's low neighbour is block 2 across the edge.
        let g = grid(&[10]);
        let blocks = [[0, 3], [3, 4], [7, 3]].map(|[o, n]| Block::new(&g, &[o], &[n]).unwrap());
        let refs: Vec<&Block> = blocks.iter().collect();
        let faces: Vec<Faces> = blocks.iter().enumerate().map(|(i, b)| labelled(b, 1, i)).collect();
        let ghosts = exchange_faces(&refs, &faces, Boundary::Periodic).unwrap();
        // Ghost (axis 0, low) of block i is the high face (label 1) of block i - 1.
        assert_eq!(ghosts[0].get(0, Side::Low), [201.0]);
        assert_eq!(ghosts[0].get(0, Side::High), [100.0]);
        assert_eq!(ghosts[1].get(0, Side::Low), [1.0]);
        assert_eq!(ghosts[2].get(0, Side::High), [0.0]);
        // One whole block is its own neighbour; zero-flux mirrors its own layer instead.
        let whole = Block::whole(&g);
        let f = labelled(&whole, 1, 5);
        let periodic = exchange_faces(&[&whole], std::slice::from_ref(&f), Boundary::Periodic).unwrap();
        assert_eq!((periodic[0].get(0, Side::Low), periodic[0].get(0, Side::High)), (&[501.0][..], &[500.0][..]));
        let mirror = exchange_faces(&[&whole], &[f], Boundary::ZeroFlux).unwrap();
        assert_eq!((mirror[0].get(0, Side::Low), mirror[0].get(0, Side::High)), (&[500.0][..], &[501.0][..]));
    }

    #[test]
    fn blocks_that_do_not_tile_the_grid_are_refused() {
        let g = grid(&[4, 4, 4]);
        let a = Block::new(&g, &[0, 0, 0], &[2, 4, 4]).unwrap();
        // Its neighbour along z is split along y: no block has a's extent along y.
        let b = Block::new(&g, &[2, 0, 0], &[2, 2, 4]).unwrap();
        let c = Block::new(&g, &[2, 2, 0], &[2, 2, 4]).unwrap();
        let faces = [labelled(&a, 1, 0), labelled(&b, 1, 1), labelled(&c, 1, 2)];
        let e = exchange_faces(&[&a, &b, &c], &faces, Boundary::Periodic).unwrap_err().to_string();
        assert!(e.contains("#0 (offset [0, 0, 0], shape [2, 4, 4])") && e.contains("low face on axis 0"), "{e}");
        let other = Block::whole(&grid(&[4, 4, 5]));
        let e = exchange_faces(&[&a, &other], &faces[..2], Boundary::Periodic).unwrap_err().to_string();
        assert!(e.contains("block of the 4×4×5 grid"), "{e}");
    }
}
