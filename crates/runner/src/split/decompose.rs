//! How a 3-D grid is split over MPI ranks: the ranks along each axis (given, or
//! `MPI_Dims_create`'s); each rank's block is [`Block::of_decomposition`]'s (remainders spread
//! over the first ranks of an axis, so blocks differ by at most one cell per axis).

use wgpipe_compute::{Block, Grid};

use crate::error::{Error, Result};

/// Ranks along z, y and x for `ranks` ranks over `grid`: `given` (checked: its product is
/// `ranks`, no axis gets more ranks than cells), or MPI's balanced choice, refused when it
/// gives an axis more ranks than cells.
pub(crate) fn dims(grid: &Grid, ranks: usize, given: Option<[usize; 3]>) -> Result<[usize; 3]> {
    let shape = grid.shape();
    let dims = match given {
        Some(dims) => {
            if dims.iter().product::<usize>() != ranks || dims.contains(&0) {
                return Err(Error::Invalid(format!(
                    "decomposition {dims:?} splits the grid over {} MPI ranks, and the communicator has {ranks}: \
                     give one whose product is {ranks}, or start {} ranks",
                    dims.iter().product::<usize>(),
                    dims.iter().product::<usize>()
                )));
            }
            dims
        }
        None => dims_create(ranks)?,
    };
    if let Some(axis) = (0..3).find(|&a| dims[a] > shape[a]) {
        let chosen = if given.is_some() { "the decomposition" } else { "MPI_Dims_create" };
        return Err(Error::Invalid(format!(
            "{chosen} splits {ranks} ranks as {}, which gives axis {axis} ({} cells) more ranks than cells: \
             choose the split with --set grid.decomposition=[pz,py,px] (each at most its axis, product {ranks})",
            text(&dims),
            shape[axis]
        )));
    }
    Ok(dims)
}

/// `MPI_Dims_create(ranks, 3)`: the most balanced three factors of `ranks`, largest first
/// (so the slowest axis, z, is split most: blocks are then contiguous runs of planes, the
/// cheapest shape for the file's hyperslabs). The `mpi` crate 0.8 does not wrap it.
#[expect(unsafe_code, reason = "the mpi crate 0.8 has no safe MPI_Dims_create")]
fn dims_create(ranks: usize) -> Result<[usize; 3]> {
    use mpi::ffi::MPI_Dims_create;
    let Ok(nodes) = i32::try_from(ranks) else {
        return Err(Error::Invalid(format!("{ranks} MPI ranks do not fit MPI's int")));
    };
    let mut dims = [0i32; 3];
    // SAFETY: `dims` holds the 3 ints MPI_Dims_create reads (0: free to choose) and writes;
    // MPI is initialised (the caller holds a communicator).
    let code = unsafe { MPI_Dims_create(nodes, 3, dims.as_mut_ptr()) };
    if code != 0 || dims.iter().any(|&d| d < 1) {
        return Err(Error::Invalid(format!(
            "MPI_Dims_create({ranks}, 3) failed (code {code}): give the decomposition [pz, py, px]"
        )));
    }
    Ok(dims.map(|d| d as usize))
}

/// `[a, b, c]` as `axbxc`.
pub(crate) fn text(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join("x")
}

/// The grid, the split, and the blocks (the largest, rank 0's, when they differ), e.g.
/// `domain 23x20x16 split 2x1x1 over 2 ranks, blocks up to 12x20x16`.
pub(crate) fn describe(grid: &Grid, dims: &[usize; 3]) -> Result<String> {
    let ranks: usize = dims.iter().product();
    let first = Block::of_decomposition(grid, dims, &[0, 0, 0])?;
    let even = grid.shape().iter().zip(dims).all(|(n, p)| n.is_multiple_of(*p));
    Ok(format!(
        "domain {} split {} over {ranks} rank{}, blocks {}{}",
        text(grid.shape()),
        text(dims),
        if ranks == 1 { "" } else { "s" },
        if even { "" } else { "up to " },
        text(first.shape())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_line_names_grid_split_and_blocks() -> Result<()> {
        let line = |shape: &[usize], dims: [usize; 3]| describe(&Grid::new(shape)?, &dims);
        assert_eq!(line(&[64, 64, 64], [2, 1, 1])?, "domain 64x64x64 split 2x1x1 over 2 ranks, blocks 32x64x64");
        assert_eq!(line(&[5, 4, 4], [2, 2, 1])?, "domain 5x4x4 split 2x2x1 over 4 ranks, blocks up to 3x2x4");
        assert_eq!(line(&[8, 8, 8], [1, 1, 1])?, "domain 8x8x8 split 1x1x1 over 1 rank, blocks 8x8x8");
        Ok(())
    }

    #[test]
    fn a_given_decomposition_must_match_the_ranks_and_the_grid() -> Result<()> {
        let grid = Grid::new(&[4, 8, 8])?;
        assert_eq!(dims(&grid, 4, Some([1, 2, 2]))?, [1, 2, 2]);
        let e = dims(&grid, 2, Some([2, 2, 1])).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("over 4 MPI ranks, and the communicator has 2"), "{e}");
        let e = dims(&grid, 8, Some([8, 1, 1])).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("gives axis 0 (4 cells) more ranks than cells"), "{e}");
        Ok(())
    }
}
