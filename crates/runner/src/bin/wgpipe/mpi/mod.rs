//! `mpirun -n R wgpipe run CONFIG` (cargo feature `mpi`): the jobs of a batch spread over
//! the ranks, every stream in one HDF5 file shared through MPI-IO; a single run of a 3-D
//! field kernel is instead one domain split over the ranks ([`domain`]).
//!
//! Every rank loads the same config and expands the same job list; rank `r` runs jobs
//! `i % R == r` on its own devices (which pull them from a queue as in a serial run). The
//! sink ([`wgpipe::storage::MpiHdf5Sink`]) creates the whole file collectively and each rank
//! writes its own streams. Before the first collective step every rank checks its own
//! preparation and the ranks agree (a rank that failed is named and every rank stops, where
//! going on would hang the others); a panic aborts the whole job.

mod domain;
mod rank_progress;
mod report;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use wgpipe::config::Config;
use wgpipe::ranks::{RankFigures, RankOutcome, failed_ranks, gather_figures, same_as_rank_zero};
use wgpipe::storage::mpi::environment::Universe;
use wgpipe::storage::mpi::topology::SimpleCommunicator;
use wgpipe::storage::mpi::traits::Communicator;
use wgpipe::{Error, StopHandle};

use crate::run::{INTERRUPTED, RunArgs, plan};

/// An error already reported on stderr by the rank that met it (or by rank 0): `main` exits
/// with a failure without printing it again.
#[derive(Debug)]
pub struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failed on another MPI rank (reported there)")
    }
}

impl std::error::Error for Reported {}

/// MPI, initialised for threads that all call MPI (the writer thread does HDF5 + MPI-IO while
/// the progress thread reduces counters); finalised when dropped.
pub struct World {
    _universe: Universe,
    comm: SimpleCommunicator,
}

impl World {
    /// Initialises MPI for a run's threads, a panic on any rank aborting the whole job
    /// ([`wgpipe::ranks::initialize`]).
    pub fn init() -> anyhow::Result<Self> {
        let universe = wgpipe::ranks::initialize()?;
        let comm = universe.world();
        Ok(World { _universe: universe, comm })
    }

    /// Ranks in the job.
    pub fn size(&self) -> usize {
        self.comm.size().max(1) as usize
    }

    fn rank(&self) -> usize {
        self.comm.rank().max(0) as usize
    }

    /// Every rank learns whether every rank succeeded (collective). A rank that failed
    /// returns its error naming itself; rank 0, if it did not fail, names the ranks that did;
    /// the others return [`Reported`].
    fn agree<T>(&self, step: &str, result: anyhow::Result<T>) -> anyhow::Result<T> {
        let failed = failed_ranks(&self.comm, result.is_ok());
        let (rank, size) = (self.rank(), self.size());
        match result {
            Err(e) => Err(e.context(format!("MPI rank {rank} of {size}, {step}"))),
            Ok(_) if !failed.is_empty() && rank == 0 => {
                Err(anyhow!("MPI rank(s) {failed:?} of {size} failed {step} (their error is above)"))
            }
            Ok(_) if !failed.is_empty() => Err(Reported.into()),
            Ok(v) => Ok(v),
        }
    }
}

/// Every rank checks, collectively, that it would create the output rank 0 would (what the
/// sink creates and where); a rank that differs is named before any file is touched.
fn agree_on_output(world: &World, config: &Config, layout: &wgpipe::storage::StreamLayout) -> anyhow::Result<()> {
    let fingerprint = format!("{} {:?} {layout:?}", config.sink_name(), config.sink_options());
    let same = if same_as_rank_zero(&world.comm, &fingerprint) {
        Ok(())
    } else {
        Err(anyhow!(
            "its config makes a different output than rank 0's: start every rank with the same config and --set"
        ))
    };
    world.agree("comparing the ranks' outputs", same)
}

/// Whether the config names a `grid.decomposition`: such a run goes through the split-domain
/// code even on one rank. A config that does not load is left to the serial path to report.
pub fn split_requested(args: &RunArgs) -> bool {
    Config::load(args.config.as_deref(), &args.sets).is_ok_and(|c| c.decomposition().is_some())
}

/// `wgpipe run` on every rank of an MPI job of more than one rank, or of a split domain.
pub fn run(args: &RunArgs, world: &World) -> anyhow::Result<ExitCode> {
    let (rank, size) = (world.rank(), world.size());
    if let Some(address) = args.monitor {
        bail!(
            "--monitor {address}: the live view serves a run in one process; under mpirun it is not available yet: \
             run without --monitor (each rank's progress is on rank 0's stderr)"
        );
    }
    let planned = plan(args, size, rank == 0);
    let Some(plan) = world.agree("checking the config, the output and the devices", planned)? else {
        return Ok(ExitCode::SUCCESS);
    };
    if domain::is_split(&plan.config) {
        return domain::run(args, world, plan);
    }
    let stop = StopHandle::default();
    let shared = plan.config.open_shared_sink(args.resume, plan.kept_fields.clone(), &world.comm);
    let built = shared.map_err(anyhow::Error::from).and_then(|sink| {
        let config = &plan.config;
        let builder = config
            .builder()
            .gpus(plan.gpus)
            .jobs(plan.jobs)
            .shard(rank, size)
            .sink(sink)
            .stop_handle(stop.clone())
            .attribute("mpi_ranks", size as u64);
        Ok(config.build(builder)?)
    });
    let pipeline = world.agree("building the pipeline", built)?;
    agree_on_output(world, &plan.config, pipeline.layout())?;

    let on_ctrl_c = stop.clone();
    ctrlc::set_handler(move || on_ctrl_c.stop()).context("cannot install the Ctrl-C handler")?;
    let reporter = rank_progress::start(world, Arc::clone(&pipeline.progress()), args.progress);
    let result = pipeline.run();
    reporter.finish();

    let config = &plan.config;
    let shown = config.shown_outputs();
    let (outcome, summary) = match &result {
        Ok(r) => (RankOutcome::Done, Some(r)),
        Err(Error::Interrupted { report }) => (RankOutcome::Interrupted, Some(report.as_ref())),
        Err(e @ Error::Failed { report, .. }) => (RankOutcome::Failed(e.to_string()), Some(report.as_ref())),
        Err(e) => (RankOutcome::Failed(e.to_string()), None),
    };
    let all = gather_figures(&world.comm, &RankFigures::new(rank, summary, outcome));
    if rank == 0 {
        report::print(&all, &shown);
    }
    let failed: Vec<usize> = all.iter().filter(|f| f.failed()).map(|f| f.rank).collect();
    if !failed.is_empty() {
        if rank == 0 {
            bail!(
                "run of {} failed on MPI rank(s) {failed:?} of {size} (their errors are above)",
                config.source_name()
            );
        }
        return Err(Reported.into());
    }
    if all.iter().any(|f| f.interrupted()) {
        if rank == 0 {
            say!(
                "interrupted: {shown} was closed cleanly; a batch continues with `mpirun ... wgpipe run CONFIG --resume`"
            );
        }
        return Ok(ExitCode::from(INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}
