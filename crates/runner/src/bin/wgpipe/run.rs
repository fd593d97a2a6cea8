//! `wgpipe run`: load a config, open the devices, run the pipeline with a progress
//! reporter and a Ctrl-C handler, print the summary.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use wgpipe::config::Config;
use wgpipe::{Error, RunReport, StopHandle};

use crate::monitor::{Latest, Monitor, TapSink};
use crate::progress::{ProgressMode, Reporter, Scale};
use crate::resume::{from_checkpoints, held_streams};

/// Exit code of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = 130;

/// Arguments of `wgpipe run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Config file (TOML); without it, the built-in default run (configs/gray-scott.toml).
    pub config: Option<PathBuf>,
    /// Override a config key, e.g. --set grid.rows=128 (repeatable; checked like the file).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Add to an existing output: skip the runs already complete in it, redo incomplete ones.
    #[arg(long)]
    pub resume: bool,
    /// Progress on stderr: bars on a terminal (auto), a line every 2 s (plain), a line per
    /// change of the frames written (frames), a JSON object per line every second (json), or none.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// Serve a live view of the run at ADDRESS (e.g. 127.0.0.1:8000; port 0 picks a free one):
    /// a page with progress, the newest frame and the PDFs, and JSON under /api/. Give a
    /// loopback address unless others should see it; it stops with the run.
    #[arg(long, value_name = "ADDRESS")]
    pub monitor: Option<std::net::SocketAddr>,
}

/// What a run will do: the checked config, the opened devices and the jobs still to run.
/// (The pipeline's own plan checks the devices once, when `Config::build` builds it.)
pub struct Plan {
    pub config: Config,
    pub gpus: Vec<wgpipe::compute::GpuDevice>,
    pub jobs: Vec<wgpipe::Job>,
    /// Per stream continuing from its checkpoint, the frames its fields output keeps.
    pub kept_fields: BTreeMap<String, u64>,
}

/// Loads and checks the config (for a run of `ranks` MPI ranks: 1 without `mpirun`) and the
/// output path, opens the devices and lists the jobs still to run; `None` when `--resume`
/// finds every run complete. Only a process that `speaks` (rank 0 of an MPI job) says on
/// stderr what it resumes: every rank plans alike.
pub fn plan(args: &RunArgs, ranks: usize, speaks: bool) -> anyhow::Result<Option<Plan>> {
    // Everything that can be checked without a device is checked before one opens: the whole
    // config (sizes included), then the output path.
    let config = Config::load(args.config.as_deref(), &args.sets)?;
    config.check_ranks(ranks)?;
    let path = config.output_path();
    for output in std::iter::once(path.clone()).chain(config.analysis_output_path()) {
        if !args.resume && config.sink_name() != "null" && !config.file.output.overwrite && output.exists() {
            bail!(
                "{}: output.path: output {} already exists: remove it, choose another path (--set \
                 output.path=...), replace it (--set output.overwrite=true), or add the missing runs of a batch \
                 with --resume",
                config.origin("output.path"),
                output.display()
            );
        }
    }
    if args.resume && config.file.output.swmr {
        bail!(
            "{}: output.swmr: --resume cannot use single-writer/multiple-reader mode (a file enters it only when \
             it is created): resume with --set output.swmr=false",
            config.origin("output.swmr")
        );
    }
    config.check_output(args.resume)?;
    let held = if args.resume { held_streams(&config)? } else { Default::default() };
    let done = &held.complete;

    let (selector, count) = config.devices();
    let gpus = wgpipe::compute::open_devices(&selector, count)
        .with_context(|| format!("{}: devices.select", config.origin("devices.select")))?;
    let jobs = config.jobs(gpus.len(), |name| done.contains(name));
    let (jobs, kept_fields) =
        if args.resume { from_checkpoints(&config, &held, jobs, speaks)? } else { (jobs, BTreeMap::new()) };
    if jobs.is_empty() {
        if speaks {
            eprintln!("nothing to do: every run is already complete in {}", path.display());
        }
        return Ok(None);
    }
    if speaks && !done.is_empty() {
        eprintln!("resuming {}: {} runs complete, {} to run", path.display(), done.len(), jobs.len());
    }
    Ok(Some(Plan { config, gpus, jobs, kept_fields }))
}

pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let Some(Plan { config, gpus, jobs, kept_fields }) = plan(args, 1, true)? else {
        return Ok(ExitCode::SUCCESS);
    };
    let sink = config
        .open_sink_resuming(args.resume, kept_fields)
        .with_context(|| format!("{}: output.sink", config.origin("output.sink")))?;
    let stop = StopHandle::default();
    let latest = Arc::new(Latest::default());
    let sink = if args.monitor.is_some() { Box::new(TapSink::new(sink, Arc::clone(&latest))) } else { sink };
    // The devices' limits and the host memory they need together, before anything is allocated.
    let labels = gpus.iter().map(|g| g.label().to_owned()).collect();
    let pipeline = config.build(config.builder().gpus(gpus).jobs(jobs).sink(sink).stop_handle(stop.clone()))?;
    let scale = Scale {
        labels,
        cell_steps_per_frame: config.grid_shape().iter().map(|n| *n as f64).product::<f64>()
            * f64::from(config.file.run.steps_per_frame),
        io_buffer: pipeline.io_buffer(),
        streams: pipeline.layout().streams.iter().map(|s| s.name.clone()).collect(),
    };
    let on_ctrl_c = stop.clone();
    ctrlc::set_handler(move || {
        eprintln!("\nstopping: finishing the frames in flight and closing the output");
        on_ctrl_c.stop();
    })
    .context("cannot install the Ctrl-C handler")?;
    let monitor = match args.monitor {
        Some(address) => Some(Monitor::start(address, Arc::clone(&pipeline.progress()), scale.clone(), latest)?),
        None => None,
    };
    let reporter = Reporter::start(Arc::clone(&pipeline.progress()), scale, args.progress);
    let result = pipeline.run();
    reporter.finish();
    if let Some(monitor) = monitor {
        monitor.stop();
    }
    let shown = config.shown_outputs();
    match result {
        Ok(report) => {
            summary(&report, &shown);
            Ok(ExitCode::SUCCESS)
        }
        Err(Error::Interrupted { report }) => {
            summary(&report, &shown);
            eprintln!(
                "interrupted: {} frames written to {shown}, which was closed cleanly; \
                 a batch continues with `wgpipe run CONFIG --resume`",
                report.written_frames()
            );
            Ok(ExitCode::from(INTERRUPTED))
        }
        Err(e) => Err(e).context(format!("run of {} failed", config.source_name())),
    }
}

/// The summary table and where the frames went.
fn summary(report: &RunReport, output: &str) {
    println!("{report}");
    println!("output: {output}");
}
