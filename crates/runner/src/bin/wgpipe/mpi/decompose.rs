//! How a 3-D grid is split over MPI ranks: the ranks along each axis (`grid.decomposition`
//! or `MPI_Dims_create`); each rank's block is [`Block::of_decomposition`]'s (remainders
//! spread over the first ranks of an axis, so blocks differ by at most one cell per axis).

use anyhow::bail;

use wgpipe::compute::{Block, Grid};
use wgpipe::config::Config;

/// Ranks along z, y and x: the config's `grid.decomposition` (already checked against the
/// rank count), or MPI's balanced choice, refused when it gives an axis more ranks than cells.
pub fn dims(config: &Config, ranks: usize) -> anyhow::Result<[usize; 3]> {
    if let Some(parts) = config.decomposition()
        && let [z, y, x] = *parts
    {
        return Ok([z, y, x]);
    }
    let dims = dims_create(ranks)?;
    let shape = config.grid_shape();
    if let Some(axis) = (0..3).find(|&a| dims[a] > shape[a]) {
        bail!(
            "MPI_Dims_create splits {ranks} ranks as {}, which gives axis {axis} ({} cells) more ranks than cells: \
             choose the split with --set grid.decomposition=[pz,py,px] (each at most its axis, product {ranks})",
            text(&dims),
            shape[axis]
        );
    }
    Ok(dims)
}

/// `MPI_Dims_create(ranks, 3)`: the most balanced three factors of `ranks`, largest first
/// (so the slowest axis, z, is split most: blocks are then contiguous runs of planes, the
/// cheapest shape for the file's hyperslabs). The `mpi` crate 0.8 does not wrap it.
#[expect(unsafe_code, reason = "the mpi crate 0.8 has no safe MPI_Dims_create")]
fn dims_create(ranks: usize) -> anyhow::Result<[usize; 3]> {
    use wgpipe::storage::mpi::ffi::MPI_Dims_create;
    let Ok(nodes) = i32::try_from(ranks) else {
        bail!("{ranks} MPI ranks do not fit MPI's int");
    };
    let mut dims = [0i32; 3];
    // SAFETY: `dims` holds the 3 ints MPI_Dims_create reads (0: free to choose) and writes;
    // MPI is initialised (the caller holds the `World`).
    let code = unsafe { MPI_Dims_create(nodes, 3, dims.as_mut_ptr()) };
    if code != 0 || dims.iter().any(|&d| d < 1) {
        bail!("MPI_Dims_create({ranks}, 3) failed (code {code}): set grid.decomposition = [pz, py, px]");
    }
    Ok(dims.map(|d| d as usize))
}

/// `[a, b, c]` as `axbxc`.
pub fn text(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join("x")
}

/// The line `wgpipe run` prints on rank 0: the grid, the split, and the blocks (the largest,
/// rank 0's, when they differ).
pub fn describe(grid: &Grid, dims: &[usize; 3]) -> anyhow::Result<String> {
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
    fn the_printed_line_names_grid_split_and_blocks() -> anyhow::Result<()> {
        let line = |shape: &[usize], dims: [usize; 3]| describe(&Grid::new(shape)?, &dims);
        assert_eq!(line(&[64, 64, 64], [2, 1, 1])?, "domain 64x64x64 split 2x1x1 over 2 ranks, blocks 32x64x64");
        assert_eq!(line(&[5, 4, 4], [2, 2, 1])?, "domain 5x4x4 split 2x2x1 over 4 ranks, blocks up to 3x2x4");
        assert_eq!(line(&[8, 8, 8], [1, 1, 1])?, "domain 8x8x8 split 1x1x1 over 1 rank, blocks 8x8x8");
        Ok(())
    }
}
