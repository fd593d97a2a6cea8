//! `wgpipe run`: load a config, open the devices, run the pipeline with a progress
//! reporter and a Ctrl-C handler, print the summary.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use wgpipe::config::{Config, Launch};
use wgpipe::{Error, RunReport, StopHandle};

use crate::monitor::{Latest, Monitor, TapSink};
use crate::progress::{ProgressMode, Reporter, Scale};

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
    /// Serve a live view of the run at ADDRESS:PORT, or at PORT on 127.0.0.1 (e.g. 8000;
    /// port 0 picks a free one): a page with progress, the newest frame and the PDFs, and JSON
    /// under /api/. Give a loopback address unless others should see it; it stops with the run.
    #[arg(long, value_name = "[ADDRESS:]PORT", value_parser = parse_monitor)]
    pub monitor: Option<std::net::SocketAddr>,
}

/// `--monitor`'s value: an address with its port, or a bare port on the loopback address, so
/// that nothing is served beyond this machine unless an address says so.
fn parse_monitor(s: &str) -> Result<std::net::SocketAddr, String> {
    let s = s.trim();
    if let Ok(port) = s.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse().map_err(|_| format!("{s:?} is neither ADDRESS:PORT (127.0.0.1:8000, [::1]:8000) nor a PORT (8000)"))
}

/// Loads and checks the config for a run of `ranks` MPI ranks (1 without `mpirun`), checks
/// the output path, opens the devices and lists the jobs still to run
/// ([`Config::launch`]); `None` when `--resume` finds every run complete. Only a process that
/// `speaks` (rank 0 of an MPI job) says on stderr what it resumes: every rank plans alike.
pub fn plan(args: &RunArgs, ranks: usize, speaks: bool) -> anyhow::Result<Option<Launch>> {
    let launch = Config::load(args.config.as_deref(), &args.sets)?.launch(args.resume, ranks)?;
    if speaks {
        for note in &launch.notes {
            // One write per line: the ranks of an MPI job share stderr, and `eprintln!`
            // writes a line in pieces, which another rank's output can split.
            let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{note}\n").as_bytes());
        }
    }
    Ok((!launch.jobs.is_empty()).then_some(launch))
}

pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let Some(launch) = plan(args, 1, true)? else {
        return Ok(ExitCode::SUCCESS);
    };
    let sink = launch.open_sink()?;
    let stop = StopHandle::default();
    let latest = Arc::new(Latest::default());
    let sink = if args.monitor.is_some() { Box::new(TapSink::new(sink, Arc::clone(&latest))) } else { sink };
    // The devices' limits and the host memory they need together, before anything is allocated.
    let (config, pipeline) = launch.pipeline(sink, stop.clone())?;
    let labels = pipeline.gpus().iter().map(|g| g.label().to_owned()).collect();
    let scale = Scale {
        labels,
        cell_steps_per_frame: config.grid_shape().iter().map(|n| *n as f64).product::<f64>()
            * f64::from(config.file.run.steps_per_frame),
        io_buffer: pipeline.io_buffer(),
        streams: pipeline.layout().streams.iter().map(|s| s.name.clone()).collect(),
    };
    let on_ctrl_c = stop.clone();
    ctrlc::set_handler(move || {
        on_ctrl_c.stop();
        // Stderr may be gone (a closed pipe): the stop must not depend on saying so.
        say!("\nstopping: finishing the frames in flight and closing the output");
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
            summary(&report, &shown, config.compression_note());
            Ok(ExitCode::SUCCESS)
        }
        Err(Error::Interrupted { report }) => {
            summary(&report, &shown, config.compression_note());
            say!(
                "interrupted: {} frames written to {shown}, which was closed cleanly; \
                 a batch continues with `wgpipe run CONFIG --resume`",
                report.written_frames()
            );
            Ok(ExitCode::from(INTERRUPTED))
        }
        Err(e) => Err(e).context(format!("run of {} failed", config.source_name())),
    }
}

/// The summary table, where the frames went, and how they were compressed where.
fn summary(report: &RunReport, output: &str, compression: Option<&str>) {
    out!("{report}");
    out!("output: {output}");
    if let Some(compression) = compression {
        out!("compression: {compression}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_monitor_port_is_served_on_loopback_only() {
        assert_eq!(parse_monitor("8000"), Ok(std::net::SocketAddr::from(([127, 0, 0, 1], 8000))));
        assert_eq!(parse_monitor("0.0.0.0:80"), Ok(std::net::SocketAddr::from(([0, 0, 0, 0], 80))));
        assert_eq!(parse_monitor("[::1]:0"), Ok(std::net::SocketAddr::from(([0, 0, 0, 0, 0, 0, 0, 1], 0))));
        assert!(parse_monitor("localhost:80").is_err() && parse_monitor("70000").is_err());
    }
}
