//! `wgpipe`: run WGSL compute kernels on GPUs and stream every frame to storage.
//!
//! This file only parses the command line and dispatches; each command has its module.

/// `eprintln!` that carries on when stderr is gone (a closed pipe: `wgpipe run … 2>&1 | head`):
/// a run must not die, nor its Ctrl-C handler, because nobody reads its messages any more.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `println!` that carries on when stdout is gone (`wgpipe info … | head`), as [`say!`].
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

mod colormap;
mod devices;
mod info;
mod monitor;
#[cfg(feature = "mpi")]
mod mpi;
mod progress;
mod render;
mod run;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Run WGSL compute kernels on every GPU and stream every frame to storage.
#[derive(Debug, Parser)]
#[command(name = "wgpipe", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a config (default: the built-in Gray-Scott run, configs/gray-scott.toml).
    Run(run::RunArgs),
    /// List the GPU adapters wgpu sees (index, name, backend, type, driver).
    Devices,
    /// Render frames of an output (HDF5 file or raw directory) to PNG.
    Render(render::RenderArgs),
    /// Describe an output (HDF5 file or raw directory): fields, streams, frames written of
    /// expected, parameters, the wgpipe version that wrote it.
    Info(info::InfoArgs),
}

#[expect(unsafe_code, reason = "quiet_vulkan_display_probe changes the environment: before any thread")]
fn main() -> ExitCode {
    // SAFETY: the first statement of `main`: no other thread exists yet.
    unsafe { wgpipe::compute::headless::quiet_vulkan_display_probe() };
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(&args),
        Command::Devices => devices::devices().map(|()| ExitCode::SUCCESS),
        Command::Render(args) => render::render(&args).map(|()| ExitCode::SUCCESS),
        Command::Info(args) => info::info(&args).map(|()| ExitCode::SUCCESS),
    };
    result.unwrap_or_else(|e| {
        #[cfg(feature = "mpi")]
        if e.is::<mpi::Reported>() {
            return ExitCode::FAILURE;
        }
        say!("error: {}", message(&e));
        ExitCode::FAILURE
    })
}

/// `wgpipe run`: the serial run, or under `mpirun` with more than one rank (feature `mpi`)
/// the batch shared over the ranks or the domain split over them (also on one rank when
/// `grid.decomposition` asks for it, the baseline of the scaling measurements).
fn run(args: &run::RunArgs) -> anyhow::Result<ExitCode> {
    #[cfg(feature = "mpi")]
    {
        let world = mpi::World::init()?;
        if world.size() > 1 || mpi::split_requested(args) {
            return mpi::run(args, &world);
        }
    }
    run::run(args)
}

/// The error and its causes joined by ": ", leaving out a cause whose text the message
/// already holds (library errors often quote their source).
fn message(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
    }
    text
}
