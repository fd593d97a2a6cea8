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

use std::hash::{DefaultHasher, Hash, Hasher};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use wgpipe::config::Config;
use wgpipe::storage::mpi::environment::Universe;
use wgpipe::storage::mpi::topology::SimpleCommunicator;
use wgpipe::storage::mpi::traits::{Communicator, CommunicatorCollectives, Root};
use wgpipe::storage::mpi::{self as mpi_crate, Threading};
use wgpipe::storage::{MpiHdf5Sink, Sink, open_sink};
use wgpipe::{Error, StopHandle};

use crate::run::{INTERRUPTED, RunArgs, plan};
use wgpipe::config::Launch;

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
    /// Initialises MPI and installs a panic hook that aborts the whole job: a panicking rank
    /// would otherwise leave the others waiting in a collective call forever.
    pub fn init() -> anyhow::Result<Self> {
        let (universe, granted) = mpi_crate::initialize_with_threading(Threading::Multiple)
            .ok_or_else(|| anyhow!("MPI was initialised twice"))?;
        if granted != Threading::Multiple {
            bail!(
                "this MPI library grants thread level {granted:?}, wgpipe needs Multiple \
                 (its writer and progress threads call MPI): use an MPI built with thread support (MPICH is)"
            );
        }
        let comm = universe.world();
        let (rank, size) = (comm.rank(), comm.size());
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            say!("error: MPI rank {rank} of {size} panicked: aborting the whole job");
            SimpleCommunicator::world().abort(101);
        }));
        Ok(World { _universe: universe, comm })
    }

    /// Ranks in the job.
    pub fn size(&self) -> usize {
        self.comm.size().max(1) as usize
    }

    fn rank(&self) -> usize {
        self.comm.rank().max(0) as usize
    }

    /// The ranks whose `ok` is false (collective).
    fn failed(&self, ok: bool) -> Vec<usize> {
        let mut all = vec![0u8; self.size()];
        self.comm.all_gather_into(&u8::from(ok), &mut all[..]);
        all.iter().enumerate().filter(|(_, ok)| **ok == 0).map(|(r, _)| r).collect()
    }

    /// Every rank learns whether every rank succeeded (collective). A rank that failed
    /// returns its error naming itself; rank 0, if it did not fail, names the ranks that did;
    /// the others return [`Reported`].
    fn agree<T>(&self, step: &str, result: anyhow::Result<T>) -> anyhow::Result<T> {
        let failed = self.failed(result.is_ok());
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

/// A fingerprint of what the sink will create and where, for checking that every rank agrees
/// (ranks started with different configs or `--set` would create different files, or the
/// same file differently, and hang).
fn output_fingerprint(config: &Config, layout: &wgpipe::storage::StreamLayout) -> u64 {
    let mut h = DefaultHasher::new();
    format!("{} {:?} {layout:?}", config.sink_name(), config.sink_options()).hash(&mut h);
    h.finish()
}

/// Every rank checks, collectively, that it would create the output rank 0 would
/// ([`output_fingerprint`]); a rank that differs is named before any file is touched.
fn agree_on_output(world: &World, config: &Config, layout: &wgpipe::storage::StreamLayout) -> anyhow::Result<()> {
    let own = output_fingerprint(config, layout);
    let mut hash = own;
    world.comm.process_at_rank(0).broadcast_into(&mut hash);
    let same = if hash == own {
        Ok(())
    } else {
        Err(anyhow!(
            "its config makes a different output than rank 0's: start every rank with the same config and --set"
        ))
    };
    world.agree("comparing the ranks' outputs", same)
}

/// The sink every rank writes through: the shared HDF5 file (with `output.every`, the fields'
/// file and the reductions' beside it, each shared), or nothing.
fn shared_sink(plan: &Launch, world: &World, append: bool) -> anyhow::Result<Box<dyn Sink>> {
    let config = &plan.config;
    let kept = plan.kept_fields.clone();
    let shard = (world.rank(), world.size());
    match config.sink_name() {
        // Every rank opens the outputs in the same order: each duplicate is collective.
        "hdf5" => Ok(config.open_sink_with(append, kept, shard, |options| {
            Ok(Box::new(MpiHdf5Sink::new(options, world.comm.duplicate())))
        })?),
        "null" => Ok(config.open_sink_with(append, kept, shard, |options| open_sink("null", &options))?),
        other => bail!(
            "{}: output.sink = {other:?} cannot be shared by MPI ranks: use hdf5 (one file for all ranks) or null",
            config.origin("output.sink")
        ),
    }
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
    let built = shared_sink(&plan, world, args.resume).and_then(|sink| {
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
    let reporter =
        rank_progress::Reporter::start(world.comm.duplicate(), Arc::clone(&pipeline.progress()), args.progress);
    let result = pipeline.run();
    reporter.finish();

    let config = &plan.config;
    let shown = config.shown_outputs();
    let (outcome, summary) = match &result {
        Ok(r) => (report::Outcome::Done, Some(r)),
        Err(Error::Interrupted { report }) => (report::Outcome::Interrupted, Some(report.as_ref())),
        Err(Error::Failed { report, .. }) => (report::Outcome::Failed(result_text(&result)), Some(report.as_ref())),
        Err(_) => (report::Outcome::Failed(result_text(&result)), None),
    };
    let all = report::gather(&world.comm, &report::RankFigures::new(rank, summary, outcome));
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

/// The error text of a failed run.
fn result_text<T>(result: &Result<T, Error>) -> String {
    match result {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    }
}
