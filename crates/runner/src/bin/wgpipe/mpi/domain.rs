//! `mpirun -n R wgpipe run CONFIG` for a single run of a 3-D field kernel: one domain split
//! over the ranks, run by the library ([`wgpipe::split`]). Here: the checks only a split run
//! has, the ranks' agreement before the start, and rank 0's lines.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use wgpipe::config::Config;
use wgpipe::split::{SplitDomain, SplitSeconds};
use wgpipe::{Error, RunReport, StopHandle};

use super::{World, agree_on_output};
use crate::progress::{ProgressMode, Reporter, Scale};
use crate::run::{INTERRUPTED, RunArgs};
use wgpipe::config::Launch;

/// The rule under `mpirun`: a config without `[[runs]]` or `[sweep]` (one run) is one domain
/// split over the ranks; a batch is shared out run by run ([`super::run`]).
pub fn is_split(config: &Config) -> bool {
    config.runs().is_empty()
}

/// The split run on every rank; `plan` is checked and agreed on by every rank.
pub fn run(args: &RunArgs, world: &World, mut plan: Launch) -> anyhow::Result<ExitCode> {
    world.agree("planning the split domain", plan.config.check_split_run(args.resume).map_err(anyhow::Error::from))?;
    let decomposition = plan.config.decomposition().and_then(|d| <[usize; 3]>::try_from(d).ok());
    let split = SplitDomain::new(&world.comm, plan.config.grid_shape(), decomposition).map_err(anyhow::Error::from);
    let split = world.agree("placing its block", split)?;
    // Where ZFP runs depends on the blocks (the split mpirun chose, if the config gave none).
    let settled = plan.config.settle_split(split.decomposition()).map_err(anyhow::Error::from);
    world.agree("deciding where ZFP compresses", settled)?;
    let config = &plan.config;
    if world.rank() == 0 {
        out!("{}", split.describe());
    }
    let sinks = config.open_block_sinks(args.resume, plan.kept_fields.clone(), &split).map_err(anyhow::Error::from);
    let sink = world.agree("opening the output", sinks)?;
    let stop = StopHandle::default();
    let built = config
        .builder()
        .gpus(plan.gpus)
        .jobs(plan.jobs)
        .sink(sink)
        .stop_handle(stop.clone())
        .split_domain(split.clone())
        .build()
        .map_err(anyhow::Error::from);
    let pipeline = world.agree("building the pipeline", built)?;
    agree_on_output(world, config, pipeline.layout())?;

    let on_ctrl_c = stop.clone();
    ctrlc::set_handler(move || on_ctrl_c.stop()).context("cannot install the Ctrl-C handler")?;
    let scale = Scale {
        labels: pipeline.gpus().iter().map(|g| g.label().to_owned()).collect(),
        cell_steps_per_frame: split.block().cells() as f64 * f64::from(config.file.run.steps_per_frame),
        io_buffer: pipeline.io_buffer(),
        streams: pipeline.layout().streams.iter().map(|s| s.name.clone()).collect(),
    };
    let mode = if world.rank() == 0 { args.progress } else { ProgressMode::None };
    let reporter = Reporter::start(Arc::clone(&pipeline.progress()), scale, mode);
    let result = pipeline.run();
    reporter.finish();

    let frames = summarise(world, config, &result, &split);
    let outcome = match result {
        Err(Error::Interrupted { .. }) => Ok(true),
        other => other.map(|_| false).map_err(anyhow::Error::from),
    };
    let block = split.block();
    let outcome = outcome.with_context(|| format!("block {:?} at {:?}", block.shape(), block.offset()));
    if world.agree("running the split domain", outcome)? {
        if world.rank() == 0 {
            let next = how_to_continue(config);
            say!(
                "interrupted: {frames} of {} frames written; the output was closed cleanly; {next}",
                config.file.run.frames
            );
        }
        return Ok(ExitCode::from(INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// What the ranks did together ([`SplitDomain::gather_figures`]), printed by rank 0: the
/// frames every rank wrote (returned), the slowest rank's times, the bytes not stored.
fn summarise(world: &World, config: &Config, result: &wgpipe::Result<RunReport>, split: &SplitDomain) -> u64 {
    let report = match result {
        Ok(r) => r,
        Err(Error::Interrupted { report } | Error::Failed { report, .. }) => report.as_ref(),
        Err(_) => &RunReport::default(),
    };
    let figures = split.gather_figures(report);
    if world.rank() == 0 {
        print_report(config, figures.frames, figures.slowest, split.ranks());
        if report.sink.skipped_frames > 0 {
            out!(
                "fields not stored (output.every, output.when): {} of {} frames, {:.1} MB saved",
                report.sink.skipped_frames,
                report.sink.frames,
                figures.skipped_bytes as f64 / 1e6
            );
        }
        out!("output: {}", config.shown_outputs());
        if let Some(compression) = config.compression_note() {
            out!("compression: {compression}");
        }
    }
    figures.frames
}

/// How an interrupted split run continues, by its sink.
fn how_to_continue(config: &Config) -> &'static str {
    match config.sink_name() {
        "hdf5" => {
            "continue it with `mpirun ... wgpipe run CONFIG --resume` (from each checkpoint with \
             run.checkpoint_every, else from frame 0)"
        }
        "zarr" => {
            "continue it with `mpirun ... wgpipe run CONFIG --resume` on the same decomposition (the \
             store's chunks are its blocks; from each checkpoint with run.checkpoint_every, else from \
             frame 0)"
        }
        _ => "only an HDF5 or Zarr split run continues with --resume",
    }
}

/// Prints the run's figures (rank 0): the slowest rank's time per frame in each part.
fn print_report(config: &Config, frames: u64, t: SplitSeconds, ranks: usize) {
    let SplitSeconds { compute, halo, mpi, write, close, wall } = t;
    let cells: f64 = config.grid_shape().iter().map(|&n| n as f64).product();
    let steps = frames as f64 * f64::from(config.file.run.steps_per_frame);
    let per = |s: f64| if frames == 0 { 0.0 } else { s * 1e3 / frames as f64 };
    let rate = if wall > 0.0 { cells * steps / wall } else { 0.0 };
    let plural = if ranks == 1 { "" } else { "s" };
    out!("frames {frames}, steps {steps}, wall {wall:.3} s, {rate:.3e} cell-steps/s over {ranks} rank{plural}");
    out!(
        "per frame, slowest rank: compute {:.2} ms, halo {:.2} ms (MPI exchange {:.2} ms), write {:.2} ms; \
         closing the file {close:.3} s",
        per(compute),
        per(halo),
        per(mpi),
        per(write),
    );
}
