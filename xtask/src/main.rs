//! Developer tasks for wgpipe: `cargo xtask <task>`.
//!
//! `main` only dispatches; each task lives in its own module.
//!
//! - `bench`: pipeline overhead, non-blocking I/O efficiency, kernels, peers and the costs of
//!   features, one subcommand per benchmark (`cargo xtask bench --help`).
//! - `bench-report`: renders the benchmark page's tables from the benches' JSON files (in the
//!   library, so that a test checks the page).
//! - `soak`: many frames through every sink, failing if memory or descriptors grow
//!   (`cargo xtask soak --help`).
//! - `gpu-report`: on a machine with a GPU, the adapter, the GPU-relevant tests and the
//!   benchmarks judged on a GPU, into one JSON (`.ci/gpu-report` prepares and runs it).
//! - `codegen`: writes the files generated from the source, such as the configuration
//!   reference (`cargo xtask codegen --help`; in the library, so that tests call it).

mod bench;
mod gpu_report;
mod soak;

use std::process::ExitCode;

use clap::Parser;
use xtask::{bench_report, codegen};

/// `cargo xtask <task>`.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", about = "wgpipe's developer tasks")]
enum Task {
    /// Measure the pipeline, one subcommand per benchmark
    Bench(bench::args::BenchCommand),
    /// Render the tables of docs/src/benchmarks.md from docs/src/bench/*.json, or --check them
    BenchReport(bench_report::Args),
    /// Check that long runs do not leak
    Soak(soak::args::Args),
    /// On a machine with a GPU: the adapter, the GPU-relevant tests and the benchmarks whose
    /// goals are judged on a GPU, into one JSON (under 8 minutes)
    GpuReport(gpu_report::Args),
    /// Write the files generated from the source (the config reference, the public API
    /// record), or --check them
    Codegen(codegen::Args),
}

#[expect(unsafe_code, reason = "quiet_vulkan_display_probe changes the environment: before any thread")]
fn main() -> ExitCode {
    // SAFETY: the first statement of `main`: no other thread exists yet. The benches' lines
    // stay free of Mesa's "error: XDG_RUNTIME_DIR is invalid" on a machine without a display.
    unsafe { wgpipe::compute::headless::quiet_vulkan_display_probe() };
    let result = match Task::parse() {
        Task::Bench(command) => bench::main(command),
        Task::BenchReport(args) => bench_report::main(&args),
        Task::Soak(args) => soak::main(args),
        Task::GpuReport(args) => gpu_report::main(&args),
        Task::Codegen(args) => codegen::main(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
