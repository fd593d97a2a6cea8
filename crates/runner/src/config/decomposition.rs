//! `grid.decomposition = [pz, py, px]`: how many MPI ranks a single 3-D run is split over
//! along each axis (read under `mpirun` with the `mpi` feature; see the README's MPI section).
//!
//! What can be checked from the config alone is checked when it loads; the rank count is
//! known only at run time ([`super::Config::check_ranks`]).

use super::batch::RunSpec;
use super::kernel::ResolvedKernel;
use super::model::ConfigFile;
use super::source::Source;
use crate::config_error::Result;
use wgpipe_compute::Boundary;

/// The config key.
pub(crate) const KEY: &str = "grid.decomposition";

/// `grid.decomposition` checked against the grid, the kernel and the batch: three factors,
/// each from 1 to its axis's size, for a single run of a periodic 3-D kernel.
pub(crate) fn check(
    file: &ConfigFile,
    shape: &[usize],
    kernel: &ResolvedKernel,
    runs: &[RunSpec],
    src: &Source,
) -> Result<Option<Vec<usize>>> {
    let Some(parts) = &file.grid.decomposition else {
        return Ok(None);
    };
    if shape.len() != 3 {
        return Err(src.invalid(
            KEY,
            format!(
                "a {}-D grid cannot be split over MPI ranks: only 3-D grids ([nz, ny, nx]) are; remove {KEY}",
                shape.len()
            ),
        ));
    }
    if parts.len() != 3 {
        return Err(src.invalid(
            KEY,
            format!("{} factors: give [pz, py, px], the ranks along z, y and x (e.g. [2, 1, 1])", parts.len()),
        ));
    }
    for (axis, (&p, &n)) in parts.iter().zip(shape).enumerate() {
        if p == 0 || p > n {
            return Err(src.invalid(
                KEY,
                format!(
                    "{p} ranks along axis {axis} ({}), whose size is {n}: use 1 to {n} (every rank needs a cell)",
                    ["z", "y", "x"][axis]
                ),
            ));
        }
    }
    if !runs.is_empty() {
        return Err(src.invalid(
            KEY,
            "a batch ([[runs]] or [sweep]) is shared out over the ranks run by run, not split: remove \
             grid.decomposition, or run a single run",
        ));
    }
    if file.output.dtype != "f32" {
        return Err(src.invalid(
            KEY,
            format!(
                "a split run writes float32 fields, and output.dtype is {:?}: set output.dtype = \"f32\", or remove \
                 grid.decomposition",
                file.output.dtype
            ),
        ));
    }
    if kernel.spec(&file.kernel.params, file.run.seed).boundary != Boundary::Periodic {
        return Err(src.invalid(
            KEY,
            "a split grid is periodic (its ranks form a periodic Cartesian topology): set kernel.boundary = \
             \"periodic\", or remove grid.decomposition",
        ));
    }
    Ok(Some(parts.clone()))
}
