//! One 3-D Gray-Scott grid split over the ranks of `MPI_COMM_WORLD`, written into one HDF5
//! file by every rank together: wgpipe embedded in an MPI program (cargo feature `mpi`).
//!
//! ```text
//! cargo build-mpi --example mpi_split
//! mpirun.mpich -n 2 target-mpi/debug/examples/mpi_split split.h5
//! target-mpi/debug/examples/mpi_split whole.h5 --one-process   # the same run, not split
//! ```
//!
//! Each rank computes its block on its first device, exchanging halos with its neighbours
//! every step; the file is bit-identical to the run in one process (the test
//! `crates/runner/tests/mpi.rs` checks it).

use std::path::Path;

use anyhow::Context as _;
use wgpipe::compute::gray_scott_3d::GrayScott3dParams;
use wgpipe::compute::{DeviceSelector, open_devices};
use wgpipe::split::SplitDomain;
use wgpipe::storage::{Hdf5Sink, SinkOptions};
use wgpipe::{Pipeline, PipelineBuilder};

/// The grid, `[nz, ny, nx]`.
const SHAPE: [usize; 3] = [24, 16, 16];

/// The run, alike in both modes: one device, the 3-D Gray-Scott model with noise.
fn builder() -> anyhow::Result<PipelineBuilder> {
    let gpu = open_devices(&DeviceSelector::All, 1)?.into_iter().next().context("no device")?;
    Ok(Pipeline::builder()
        .gpus(vec![gpu])
        .shape(SHAPE)
        .frames(4)
        .steps_per_frame(6)
        .gray_scott_3d(GrayScott3dParams { noise: 0.01, ..Default::default() }, 7))
}

#[allow(dead_code, reason = "the test includes this file as a module and calls `run`")]
fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "mpi_split.h5".to_owned());
    run(Path::new(&path), args.next().as_deref() == Some("--one-process"))
}

/// Writes the run to `path`: split over the ranks of `MPI_COMM_WORLD`, or in one process
/// without a split (`one_process`).
pub fn run(path: &Path, one_process: bool) -> anyhow::Result<()> {
    let options = SinkOptions::new(path).with_overwrite(true);
    if one_process {
        let report = builder()?.sink(Hdf5Sink::new(options)).run()?;
        println!("one process: {} frames to {}", report.written_frames(), path.display());
        return Ok(());
    }
    // The device thread (halo exchange, votes) and the writer thread (collective writes)
    // call MPI at the same time; a panic on a rank aborts the job instead of leaving the
    // other ranks waiting.
    let universe = wgpipe::ranks::initialize()?;
    let split = SplitDomain::new(&universe.world(), &SHAPE, None)?;
    if split.rank() == 0 {
        println!("{}", split.describe());
    }
    let report = builder()?.sink(split.block_sink(options)).split_domain(split.clone()).run()?;
    let (halo, exchange) = split.halo_seconds();
    println!(
        "rank {}: {} frames of block {:?} at {:?}; halo {halo:.3} s (MPI {exchange:.3} s)",
        split.rank(),
        report.written_frames(),
        split.block().shape(),
        split.block().offset()
    );
    Ok(())
}
