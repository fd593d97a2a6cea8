//! The sinks a config's run writes through under `mpirun` (cargo feature `mpi`): every rank
//! opens them, collectively, in the same order (with `output.every` or `output.when`, the
//! fields' output then the reductions'), each on a communicator of its own.

use std::collections::BTreeMap;

use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator;
use wgpipe_storage::{MpiHdf5Sink, Sink, open_sink};

use super::Config;
use crate::error::{Error, Result};
use crate::split::SplitDomain;

impl Config {
    /// Errors unless the config's one run can be split over MPI ranks and `resume`d as asked:
    /// a 3-D grid, written to HDF5, Zarr or nothing (`--resume`: HDF5 or Zarr). Alike on
    /// every rank.
    pub fn check_split_run(&self, resume: bool) -> Result<()> {
        let shape = self.grid_shape();
        let invalid = |key: &str, message: String| Err(Error::Config(self.source.invalid(key, message)));
        if shape.len() != 3 {
            let message = format!(
                "under mpirun a single run is split over the ranks, which needs a 3-D grid ([nz, ny, nx]); this one \
                 is {}-D: run it without mpirun, or give [[runs]] or a [sweep] to share runs over the ranks",
                shape.len()
            );
            return invalid("grid.shape", message);
        }
        let sink = self.sink_name();
        if resume && !matches!(sink, "hdf5" | "zarr") {
            let message = "--resume continues a split run in an HDF5 file or a Zarr store only (output.sink = \"hdf5\" \
                           or \"zarr\"); run it again";
            return invalid("output.sink", message.to_owned());
        }
        match sink {
            "hdf5" | "zarr" | "null" => Ok(()),
            other => invalid(
                "output.sink",
                format!(
                    "{other:?} cannot hold a domain split over MPI ranks: use hdf5 (one file, every rank writing its \
                     block), zarr (one store, every rank writing its chunks) or null"
                ),
            ),
        }
    }

    /// The sink of a batch shared over the ranks of `comm` (each rank runs its share of the
    /// streams): one HDF5 file every rank writes, or nothing (`null`). `kept_fields` as for
    /// [`Config::open_sink_resuming`].
    pub fn open_shared_sink(
        &self,
        append: bool,
        kept_fields: BTreeMap<String, u64>,
        comm: &SimpleCommunicator,
    ) -> Result<Box<dyn Sink>> {
        let shard = (comm.rank().max(0) as usize, comm.size().max(1) as usize);
        let sink = match self.sink_name() {
            "hdf5" => self.open_sink_with(append, kept_fields, shard, |options| {
                Ok(Box::new(MpiHdf5Sink::new(options, comm.duplicate())))
            }),
            "null" => self.open_sink_with(append, kept_fields, shard, |options| open_sink("null", &options)),
            other => {
                let message =
                    format!("{other:?} cannot be shared by MPI ranks: use hdf5 (one file for all ranks) or null");
                return Err(Error::Config(self.source.invalid("output.sink", message)));
            }
        };
        Ok(sink?)
    }

    /// The sinks of a run split over ranks (`split`), each rank writing its block (and, with
    /// `analysis.downsample`, its block's coarse cells of the downsampled fields): one HDF5
    /// file, one Zarr store, or nothing. `kept_fields` as for [`Config::open_sink_resuming`].
    pub fn open_block_sinks(
        &self,
        append: bool,
        kept_fields: BTreeMap<String, u64>,
        split: &SplitDomain,
    ) -> Result<Box<dyn Sink>> {
        let grid = split.block().global().shape().to_vec();
        let k = self.analysis().downsample.max(1) as usize;
        let sink = self.open_sink_with(append, kept_fields, (0, 1), |options| -> wgpipe_storage::Result<Box<dyn Sink>> {
            Ok(match self.sink_name() {
                "hdf5" => Box::new(split.block_sink(options).downsampled(&grid, k)),
                #[cfg(feature = "zarr")]
                "zarr" => Box::new(split.zarr_block_sink(options).downsampled(&grid, k)),
                "null" => Box::new(split.null_block_sink().downsampled(&grid, k)),
                other => {
                    let message = format!(
                        "output.sink = {other:?} cannot hold a domain split over MPI ranks: use hdf5 (one file, every \
                         rank writing its block), zarr (one store, every rank writing its chunks) or null"
                    );
                    return Err(wgpipe_storage::Error::InvalidOptions(message));
                }
            })
        });
        Ok(sink?)
    }
}
