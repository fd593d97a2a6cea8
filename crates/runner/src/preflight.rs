//! What a run is checked for before any device opens, so that a WGSL error or a bad stream
//! name costs nothing: the kernels' WGSL, the grid against the kernels' rank, the stream names.

use wgpipe_compute::{Grid, KernelSpec, tuning};
use wgpipe_storage::check_stream_name;

use crate::error::{Error, Result};
use crate::job::Job;

/// Distinct cells per workgroup of `kernels` (the block each dispatch divides the grid into:
/// the workgroup size, times the widest `CELLS_PER_INVOCATION_X` along x a device may run it
/// with, see `InvocationWidth`), each kernel's WGSL validated.
/// A batch of many runs of one kernel differs only in parameters and seeds: its shader is
/// looked at once here, and naga validates each text once anyway ([`KernelSpec::check`]).
pub(crate) fn kernel_workgroup_sizes<'a>(kernels: impl IntoIterator<Item = &'a KernelSpec>) -> Result<Vec<[u32; 3]>> {
    // What the sizes depend on (the prelude: rank, boundary, fields, forced workgroup shapes;
    // the kernel's code; the width asked for).
    let same_shader = |a: &KernelSpec, b: &KernelSpec| {
        (&a.wgsl, &a.fields, a.rank, a.boundary, a.invocation_width, a.workgroup_shapes)
            == (&b.wgsl, &b.fields, b.rank, b.boundary, b.invocation_width, b.workgroup_shapes)
    };
    let mut checked: Vec<&KernelSpec> = Vec::new();
    let mut sizes: Vec<[u32; 3]> = Vec::new();
    for kernel in kernels {
        if checked.iter().any(|k| same_shader(k, kernel)) {
            continue;
        }
        checked.push(kernel);
        let wgsl = kernel.check()?;
        let widest = tuning::widest(kernel.invocation_width, &wgsl, &kernel.name)?;
        sizes.push(wgsl.cells_per_workgroup_with([widest, 1, 1]));
    }
    sizes.sort_unstable();
    sizes.dedup();
    Ok(sizes)
}

/// The grid of `shape`, checked against the rank every kernel is written for, before any
/// device opens.
pub(crate) fn check_grid<'a>(shape: &[usize], kernels: impl IntoIterator<Item = &'a KernelSpec>) -> Result<Grid> {
    let grid = Grid::new(shape)?;
    if let Some(k) = kernels.into_iter().find(|k| k.rank != grid.rank()) {
        return Err(Error::Invalid(format!(
            "kernel {} is written for {}-D grids and the grid {grid} is {}-D: give a grid of rank {} \
             (grid.shape with {} sizes)",
            k.name,
            k.rank,
            grid.rank(),
            k.rank,
            k.rank
        )));
    }
    Ok(grid)
}

/// Errors on an empty job list, a stream name no sink can store (storage's naming rule) or
/// two jobs of one name.
pub(crate) fn check_job_names(jobs: &[Job]) -> Result<()> {
    if jobs.is_empty() {
        return Err(Error::Invalid("the job list is empty".to_owned()));
    }
    for job in jobs {
        check_stream_name(&job.name)?;
    }
    let mut names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::Invalid(format!("two jobs are named {:?}: stream names must be unique", w[0])));
    }
    Ok(())
}
