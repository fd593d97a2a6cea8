//! The shape of the grid a field-stencil kernel runs on: rank 1, 2 or 3, C order.

use std::fmt;

use crate::error::{Error, Result};
use crate::prelude::RANKS;

/// A grid of rank 1, 2 or 3, given as its shape in C order, the last axis fastest:
/// `[nx]`, `[ny, nx]` or `[nz, ny, nx]` (so a 2-D grid is `[rows, cols]`).
///
/// Cell `(z, y, x)` of every field sits at index `(z · ny + y) · nx + x`. The cell count is
/// at most 2^32 − 1, because WGSL indexes fields with `u32`; [`Grid::new`] checks that with
/// checked arithmetic, so no product here overflows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grid {
    /// `[nz, ny, nx]`, 1 along the axes the grid lacks.
    dims: [usize; 3],
    rank: usize,
    cells: usize,
}

impl Grid {
    /// A grid of `shape` (`[nx]`, `[ny, nx]` or `[nz, ny, nx]`).
    ///
    /// Errors when the rank is not 1–3, an axis is 0, or the grid has 2^32 cells or more.
    pub fn new(shape: &[usize]) -> Result<Self> {
        let invalid = |message: String| Error::InvalidGrid { shape: shape.to_vec(), message };
        let rank = shape.len();
        if !RANKS.contains(&rank) {
            return Err(invalid(format!(
                "a grid has rank 1, 2 or 3: give [nx], [ny, nx] or [nz, ny, nx], not {rank} sizes"
            )));
        }
        if let Some(axis) = shape.iter().position(|n| *n == 0) {
            return Err(invalid(format!("axis {axis} has size 0: every axis needs at least one cell")));
        }
        let cells = shape
            .iter()
            .try_fold(1usize, |acc, n| acc.checked_mul(*n))
            .filter(|c| u32::try_from(*c).is_ok())
            .ok_or_else(|| {
            let count = match shape.iter().try_fold(1u128, |acc, n| acc.checked_mul(*n as u128)) {
                Some(count) => count.to_string(),
                None => "more than 2^128".to_owned(),
            };
            invalid(format!(
                "{count} cells exceed the {max} a kernel can index with 32-bit integers: use a grid of at most \
                 {max} cells",
                max = u32::MAX
            ))
        })?;
        let mut dims = [1; 3];
        dims[3 - rank..].copy_from_slice(shape);
        Ok(Grid { dims, rank, cells })
    }

    /// A `rows × cols` grid for the CPU twins, whose callers already hold its fields in memory
    /// (so the cell count fits in `usize`); unlike [`Grid::new`] it does not limit the count
    /// to u32, which only the GPU needs.
    pub(crate) fn for_twin(rows: usize, cols: usize) -> Self {
        Grid { dims: [1, rows, cols], rank: 2, cells: rows.saturating_mul(cols) }
    }

    /// The shape as given: `rank()` sizes, slowest axis first.
    pub fn shape(&self) -> &[usize] {
        &self.dims[3 - self.rank..]
    }

    /// 1, 2 or 3.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Cells along x, the fastest axis.
    pub fn nx(&self) -> usize {
        self.dims[2]
    }

    /// Cells along y (1 for a 1-D grid).
    pub fn ny(&self) -> usize {
        self.dims[1]
    }

    /// Cells along z (1 for a 1-D or 2-D grid).
    pub fn nz(&self) -> usize {
        self.dims[0]
    }

    /// Number of cells: the length of every field.
    pub fn cells(&self) -> usize {
        self.cells
    }

    /// Index of cell `(z, y, x)` in a field (`z = 0` for 2-D, `y = z = 0` for 1-D).
    pub fn index(&self, z: usize, y: usize, x: usize) -> usize {
        (z * self.ny() + y) * self.nx() + x
    }
}

impl fmt::Display for Grid {
    /// `64×64×64`, `256×256`, `1000`: the shape, slowest axis first.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.shape().iter().enumerate() {
            if i > 0 {
                f.write_str("×")?;
            }
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn shapes_of_every_rank_in_c_order() {
        let g = Grid::new(&[4, 3, 5]).unwrap();
        assert_eq!((g.rank(), g.nz(), g.ny(), g.nx(), g.cells()), (3, 4, 3, 5, 60));
        assert_eq!(g.shape(), &[4, 3, 5]);
        assert_eq!(g.index(1, 2, 3), 15 + 10 + 3);
        assert_eq!(g.to_string(), "4×3×5");
        let g = Grid::new(&[3, 5]).unwrap();
        assert_eq!((g.rank(), g.nz(), g.ny(), g.nx(), g.cells()), (2, 1, 3, 5, 15));
        assert_eq!(g.index(0, 2, 1), 11);
        let g = Grid::new(&[7]).unwrap();
        assert_eq!((g.rank(), g.nz(), g.ny(), g.nx(), g.shape()), (1, 1, 1, 7, &[7][..]));
    }

    #[test]
    fn bad_shapes_are_errors_that_say_why() {
        let msg = |shape: &[usize]| Grid::new(shape).unwrap_err().to_string();
        assert!(msg(&[]).contains("rank 1, 2 or 3"), "{}", msg(&[]));
        assert!(msg(&[1, 2, 3, 4]).contains("not 4 sizes"), "{}", msg(&[1, 2, 3, 4]));
        assert!(msg(&[4, 0]).contains("axis 1 has size 0"), "{}", msg(&[4, 0]));
        // 2^32 cells: one too many for u32 indices; and a product that overflows usize.
        let e = msg(&[65536, 65536]);
        assert!(e.contains("4294967296 cells") && e.contains("4294967295"), "{e}");
        let e = msg(&[usize::MAX, 2, 2]);
        assert!(e.contains("exceed"), "{e}");
        assert!(Grid::new(&[65535, 65537]).is_ok(), "2^32 - 1 cells fit");
    }
}
