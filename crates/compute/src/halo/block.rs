//! [`Block`]: the part of a global grid one rank or device computes.

use crate::error::{Error, Result};
use crate::grid::Grid;

/// The part of a global grid one rank (or one device) computes: an offset and a shape per
/// axis, in C order like [`Grid::shape`] (`[z, y, x]` for a 3-D grid), of the grid's rank.
///
/// Every axis holds at least one cell and the block lies inside the grid
/// (`offset + shape <= global` on every axis); [`Block::new`] checks that.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Block {
    global: Grid,
    /// The block's own cells as a grid of their own.
    local: Grid,
    offset: Vec<usize>,
}

impl Block {
    /// The block of `global` starting at `offset` with `shape` cells per axis.
    ///
    /// Errors name the block, the grid and the axis: a rank that is not the grid's, an empty
    /// axis, or an axis that runs past the grid.
    pub fn new(global: &Grid, offset: &[usize], shape: &[usize]) -> Result<Block> {
        let invalid = |message: String| Error::InvalidBlock {
            what: format!("at offset {offset:?} of shape {shape:?}"),
            global: global.to_string(),
            message,
        };
        let rank = global.rank();
        if offset.len() != rank || shape.len() != rank {
            return Err(invalid(format!(
                "the grid has rank {rank}: give {rank} offsets and {rank} sizes, slowest axis first (C order, like \
                 the grid's shape)"
            )));
        }
        for (axis, ((o, n), g)) in offset.iter().zip(shape).zip(global.shape()).enumerate() {
            if *n == 0 {
                return Err(invalid(format!("axis {axis} has size 0: a block holds at least one cell per axis")));
            }
            if o.checked_add(*n).is_none_or(|end| end > *g) {
                return Err(invalid(format!(
                    "along axis {axis} it ends at {o} + {n}, past the grid's {g} cells: offset + size must be at \
                     most {g}"
                )));
            }
        }
        // Inside a valid grid, so within its cell count.
        let local = Grid::new(shape).map_err(|e| invalid(e.to_string()))?;
        Ok(Block { global: *global, local, offset: offset.to_vec() })
    }

    /// Block `coords` of `global` cut into `parts[a]` blocks along each axis `a` (C order, like
    /// an MPI Cartesian topology's dims and coords): along an axis of `n` cells, the first
    /// `n % p` blocks have one cell more than the others, `n / p`.
    ///
    /// Errors when a list has not the grid's rank, an axis is cut into 0 parts or into more
    /// parts than it has cells, or a coordinate is not below its axis' parts.
    pub fn of_decomposition(global: &Grid, parts: &[usize], coords: &[usize]) -> Result<Block> {
        let invalid = |message: String| Error::InvalidBlock {
            what: format!("at coordinates {coords:?} of the decomposition {parts:?}"),
            global: global.to_string(),
            message,
        };
        let rank = global.rank();
        if parts.len() != rank || coords.len() != rank {
            return Err(invalid(format!(
                "the grid has rank {rank}: give {rank} part counts and {rank} coordinates, slowest axis first"
            )));
        }
        let mut offset = Vec::with_capacity(rank);
        let mut shape = Vec::with_capacity(rank);
        for (axis, ((n, p), c)) in global.shape().iter().zip(parts).zip(coords).enumerate() {
            if *p == 0 || p > n {
                return Err(invalid(format!(
                    "axis {axis} of {n} cells cannot be cut into {p} blocks: use 1 to {n} parts along it"
                )));
            }
            if c >= p {
                return Err(invalid(format!("coordinate {c} along axis {axis} is not below its {p} parts")));
            }
            let (base, rem) = (n / p, n % p);
            offset.push(c * base + c.min(&rem));
            shape.push(base + usize::from(c < &rem));
        }
        Block::new(global, &offset, &shape)
    }

    /// The block that is the whole grid (one rank computing everything).
    pub fn whole(global: &Grid) -> Block {
        Block { global: *global, local: *global, offset: vec![0; global.rank()] }
    }

    /// The grid this block is part of.
    pub fn global(&self) -> &Grid {
        &self.global
    }

    /// The block's first cell in the global grid, per axis (C order).
    pub fn offset(&self) -> &[usize] {
        &self.offset
    }

    /// Cells per axis (C order).
    pub fn shape(&self) -> &[usize] {
        self.local.shape()
    }

    /// The block's own cells as a grid of their own (same rank, the block's shape).
    pub fn grid(&self) -> &Grid {
        &self.local
    }

    /// Number of the block's cells.
    pub fn cells(&self) -> usize {
        self.local.cells()
    }

    /// Whether the block is the whole grid.
    pub fn is_whole(&self) -> bool {
        self.local == self.global
    }

    /// The offset as `[z, y, x]`, 0 along axes the grid lacks.
    pub(crate) fn offset3(&self) -> [usize; 3] {
        let mut o = [0; 3];
        o[3 - self.offset.len()..].copy_from_slice(&self.offset);
        o
    }

    /// Whether the block reaches the grid's face on `axis`, `side` (high: its last cell is
    /// the grid's last).
    pub(crate) fn touches(&self, axis: usize, high: bool) -> bool {
        if high { self.offset[axis] + self.shape()[axis] == self.global.shape()[axis] } else { self.offset[axis] == 0 }
    }

    /// The values of the block's cells in a global state (`fields × global cells`, field after
    /// field, C order), as `fields × block cells`: how a rank takes its part of the global
    /// initial condition.
    pub fn extract(&self, global_state: &[f32], fields: usize) -> Result<Vec<f32>> {
        self.check_len("global state", global_state.len(), fields, self.global.cells())?;
        let mut out = Vec::with_capacity(fields * self.cells());
        for field in global_state.chunks_exact(self.global.cells()) {
            self.for_each_row(|global_at, _, len| out.extend_from_slice(&field[global_at..global_at + len]));
        }
        Ok(out)
    }

    /// Writes `block_state` (`fields × block cells`) into its place in `global_state`
    /// (`fields × global cells`): the inverse of [`Block::extract`], to gather blocks.
    pub fn place(&self, block_state: &[f32], fields: usize, global_state: &mut [f32]) -> Result<()> {
        self.check_len("global state", global_state.len(), fields, self.global.cells())?;
        self.check_len("block state", block_state.len(), fields, self.cells())?;
        let fields_out = global_state.chunks_exact_mut(self.global.cells());
        for (out, field) in fields_out.zip(block_state.chunks_exact(self.cells())) {
            self.for_each_row(|global_at, local_at, len| {
                out[global_at..global_at + len].copy_from_slice(&field[local_at..local_at + len]);
            });
        }
        Ok(())
    }

    /// Values exchanged through the face on `axis` (either side): `fields` × the product of
    /// the other axes' block extents; 0 for an axis the grid lacks.
    pub fn face_len(&self, axis: usize, fields: usize) -> usize {
        if axis >= self.local.rank() {
            return 0;
        }
        let others: usize = self.shape().iter().enumerate().filter(|(a, _)| *a != axis).map(|(_, n)| n).product();
        fields * others
    }

    /// Errors unless `len` is `fields × cells`.
    fn check_len(&self, what: &str, len: usize, fields: usize, cells: usize) -> Result<()> {
        if fields.checked_mul(cells) == Some(len) {
            return Ok(());
        }
        Err(Error::InvalidBlock {
            what: format!("at offset {:?} of shape {:?}", self.offset, self.shape()),
            global: self.global.to_string(),
            message: format!("the {what} holds {len} values, expected {fields} fields × {cells} cells"),
        })
    }

    /// Calls `f(global index, block index, length)` for every row (run along x) of the block.
    fn for_each_row(&self, mut f: impl FnMut(usize, usize, usize)) {
        let [oz, oy, ox] = self.offset3();
        let (l, g) = (&self.local, &self.global);
        for z in 0..l.nz() {
            for y in 0..l.ny() {
                f(g.index(oz + z, oy + y, ox), l.index(z, y, 0), l.nx());
            }
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    fn grid(shape: &[usize]) -> Grid {
        Grid::new(shape).unwrap()
    }

    #[test]
    fn blocks_are_validated_with_messages_that_name_the_axis() {
        let g = grid(&[4, 5, 6]);
        let b = Block::new(&g, &[1, 0, 2], &[3, 5, 4]).unwrap();
        assert_eq!((b.offset(), b.shape(), b.cells(), b.global()), (&[1, 0, 2][..], &[3, 5, 4][..], 60, &g));
        assert!(!b.is_whole() && Block::whole(&g).is_whole());
        assert_eq!(Block::new(&g, &[0, 0, 0], &[4, 5, 6]).unwrap(), Block::whole(&g));
        let e = |o: &[usize], s: &[usize]| Block::new(&g, o, s).unwrap_err().to_string();
        let past = e(&[1, 0, 3], &[3, 5, 4]);
        assert!(past.starts_with("invalid block at offset [1, 0, 3] of shape [3, 5, 4] of the 4×5×6 grid"), "{past}");
        assert!(past.contains("along axis 2 it ends at 3 + 4, past the grid's 6 cells"), "{past}");
        assert!(e(&[0, 0, 0], &[1, 0, 1]).contains("axis 1 has size 0"));
        assert!(e(&[0, 0], &[1, 1]).contains("give 3 offsets and 3 sizes"));
        assert!(e(&[usize::MAX, 0, 0], &[1, 1, 1]).contains("along axis 0"), "overflow is an error, not a panic");
    }

    #[test]
    fn extract_and_place_are_inverse_and_pick_the_right_cells() {
        let g = grid(&[3, 4, 5]);
        // Two fields whose values encode (field, global index).
        let state: Vec<f32> = (0..2 * 60).map(|v| v as f32).collect();
        let b = Block::new(&g, &[1, 2, 3], &[2, 2, 2]).unwrap();
        let part = b.extract(&state, 2).unwrap();
        // Cell (z, y, x) = (1 + dz, 2 + dy, 3 + dx): index (z * 4 + y) * 5 + x.
        let expected_u = [33, 34, 38, 39, 53, 54, 58, 59].map(|i| i as f32);
        assert_eq!(&part[..8], &expected_u);
        assert_eq!(part[8..], expected_u.map(|v| v + 60.0));
        let mut back = vec![-1.0; 120];
        b.place(&part, 2, &mut back).unwrap();
        for (i, v) in back.iter().enumerate() {
            let inside = part.contains(&(i as f32));
            assert_eq!(*v, if inside { i as f32 } else { -1.0 }, "index {i}");
        }
        let e = b.extract(&state[1..], 2).unwrap_err().to_string();
        assert!(e.contains("global state holds 119 values, expected 2 fields × 60 cells"), "{e}");
        assert!(b.place(&part[1..], 2, &mut back).unwrap_err().to_string().contains("block state holds 15"));
    }

    #[test]
    fn decompositions_cut_every_axis_as_evenly_as_possible() {
        let g = grid(&[24, 20, 16]);
        let parts = [5, 1, 3];
        let mut covered = vec![0u8; g.cells()];
        for z in 0..5 {
            for x in 0..3 {
                let b = Block::of_decomposition(&g, &parts, &[z, 0, x]).unwrap();
                // 24 = 5 + 5 + 5 + 5 + 4 along z, 16 = 6 + 5 + 5 along x.
                assert_eq!(b.shape(), [if z < 4 { 5 } else { 4 }, 20, if x < 1 { 6 } else { 5 }]);
                let ones = vec![1.0; b.cells()];
                let mut mark = vec![0.0; g.cells()];
                b.place(&ones, 1, &mut mark).unwrap();
                covered.iter_mut().zip(&mark).for_each(|(c, m)| *c += *m as u8);
            }
        }
        assert!(covered.iter().all(|c| *c == 1), "the blocks tile the grid exactly once");
        let e = |p: &[usize], c: &[usize]| Block::of_decomposition(&g, p, c).unwrap_err().to_string();
        assert!(e(&[1, 21, 1], &[0, 0, 0]).contains("axis 1 of 20 cells cannot be cut into 21 blocks"));
        assert!(e(&[1, 0, 1], &[0, 0, 0]).contains("into 0 blocks"));
        assert!(e(&[2, 2, 2], &[0, 2, 0]).contains("coordinate 2 along axis 1 is not below its 2 parts"));
        assert!(e(&[2, 2], &[0, 0]).contains("give 3 part counts"));
    }

    #[test]
    fn face_lengths_are_fields_times_the_other_extents() {
        let g = grid(&[24, 20, 16]);
        let b = Block::new(&g, &[8, 0, 8], &[8, 20, 8]).unwrap();
        assert_eq!([0, 1, 2].map(|a| b.face_len(a, 2)), [2 * 20 * 8, 2 * 8 * 8, 2 * 8 * 20]);
        assert_eq!(b.face_len(3, 2), 0, "an axis the grid lacks");
        let line = Block::new(&grid(&[10]), &[4], &[3]).unwrap();
        assert_eq!(line.face_len(0, 2), 2, "one value per field at each end of a 1-D block");
        assert!(b.touches(1, false) && b.touches(1, true) && b.touches(2, true) && !b.touches(0, false));
    }
}
