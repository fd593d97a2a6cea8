//! `cargo xtask bench SUBCOMMAND`: what the pipeline costs and what overlap buys, one
//! subcommand per benchmark ([`args`]; `cargo xtask bench --help`).
//!
//! - `overhead`: pipeline vs compute-only loop (`overhead_ratio`, [`null`]), plus [`micro`].
//! - `overlap raw|hdf5|zarr`: calibration to compute ≈ write per frame, then the non-blocking
//!   efficiency ratio async/sync ([`io`]), and with `--sweep` the [`sweep`] table.
//! - `dtype raw|hdf5`: f32 vs f16 output, bytes and write time ([`dtype`]).
//! - `compression hdf5|zarr A,B`: two compressions of the same frames ([`compression`]).
//! - `compression-threads A,B --compression C`: HDF5 compression threads A vs B ([`threads`]).
//! - `micro`: only the microbenchmarks (no GPU).
//! - `kernel`: the step kernels alone, against their predecessors ([`kernel`]); with
//!   `--roofline`, each as a fraction of the adapter's copy bandwidth ([`roofline`]).
//! - `peers posix|h5py|gs-mpiio`: a sink against a plain write loop ([`posix`]), h5py
//!   ([`h5py`]), or the ADIOS2 tutorial's MPI-IO simulation ([`gs_mpiio`]).
//! - `reserve-cost`, `layout-cost`: the HDF5 sink with and without its disk-space reservation,
//!   laid out whole or growing ([`reserve`]).
//! - `checkpoint-cost`: a 3-D run without checkpoints, with one every frame, and at Young's
//!   interval ([`checkpoint`]).
//! - `analysis-cost`: a 3-D run with and without reductions on the device ([`analysis`]).
//! - `zfp-device`: ZFP fixed rate encoded on the GPU vs on the host vs none ([`zfp`]).
//! - `zfp-encoder`: the GPU's ZFP encoder alone vs zfp's on one core, and vs the memory roof
//!   ([`zfp_encoder`]).
//! - `python`: the Python package against the Rust paths ([`python`]).
//! - `mpi`: weak and strong scaling of a domain split over MPI ranks ([`mpi`]).
//!
//! Every comparison alternates its runs in one process, because absolute times on a shared
//! machine drift more than the effects measured. The JSON report (`--json`) holds the
//! command line besides the figures, the parameters and the machine:
//! `cargo xtask bench-report` renders the benchmark page's tables from those files.

mod analysis;
pub(crate) mod args;
mod checkpoint;
mod compression;
mod cpu_time;
mod dtype;
mod file_sink;
mod gs_mpiio;
mod h5py;
mod io;
mod kernel;
pub(crate) mod machine;
mod measure;
mod micro;
mod mpi;
mod null;
pub(crate) mod output;
mod posix;
mod python;
mod reserve;
mod roofline;
mod stats;
mod sweep;
mod threads;
mod zfp;
mod zfp_encoder;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::{Map, Value, json};
use wgpipe::compute::{DeviceSelector, GpuDevice, open_devices};

use args::{Bench, BenchCommand, Peer, Scratch};

/// The JSON report of a benchmark: its figures by name, the parameters, the machine.
type Report = Map<String, Value>;

/// Entry point of `cargo xtask bench SUBCOMMAND`.
pub fn main(command: BenchCommand) -> Result<ExitCode> {
    let bench = command.bench;
    if bench.wants_one_lavapipe_thread()
        && let Some(code) = machine::reexec_with_one_lavapipe_thread()?
    {
        return Ok(code);
    }
    let mut report = measure(&bench)?;
    report.insert("command".to_owned(), json!(machine::command_line()));
    if let Some(path) = bench.json() {
        output::write_json(path, &Value::Object(report.clone()))?;
        println!("JSON report: {}", path.display());
    }
    Ok(verdict(&report))
}

/// Runs the benchmark asked for, printing its tables: its report.
fn measure(bench: &Bench) -> Result<Report> {
    let mut report = Report::new();
    match bench {
        Bench::Overhead(a) => file_sink::overhead(a, &mut report)?,
        Bench::Overlap { sink } => file_sink::overlap(sink, &mut report)?,
        Bench::Dtype(a) => file_sink::dtype(a, &mut report)?,
        Bench::Compression(a) => file_sink::compression(a, &mut report)?,
        Bench::CompressionThreads(a) => file_sink::compression_threads(a, &mut report)?,
        Bench::Micro(a) => {
            run_micro(a.io_buffer.io_buffer, &mut report)?;
            report.insert("machine".to_owned(), machine::describe(&[], None));
        }
        Bench::Kernel(a) => run_kernel(a, &mut report)?,
        Bench::Peers { peer: Peer::Posix(a) } => run_against(a, &mut report, "raw_against_posix", posix::run)?,
        Bench::Peers { peer: Peer::H5py(a) } => run_against(a, &mut report, "hdf5_against_h5py", h5py::run)?,
        Bench::Peers { peer: Peer::GsMpiio(a) } => run_against_gs_mpiio(a, &mut report)?,
        Bench::ReserveCost(a) => {
            let shape = (a.rows, a.cols, a.frames);
            run_hdf5_comparison(&a.scratch, a.report.reps, shape, &mut report, "reserve_cost", reserve::run)?;
        }
        Bench::LayoutCost(a) => {
            let shape = (a.rows, a.cols, a.frames);
            run_hdf5_comparison(&a.scratch, a.report.reps, shape, &mut report, "layout_cost", reserve::run_layout)?;
        }
        Bench::CheckpointCost(a) => run_checkpoint_cost(a, &mut report)?,
        Bench::AnalysisCost(a) => run_analysis_cost(a, &mut report)?,
        Bench::ZfpDevice(a) => run_zfp_device(a, &mut report)?,
        Bench::ZfpEncoder(a) => run_zfp_encoder(a, &mut report)?,
        Bench::Python(a) => run_python(a, &mut report)?,
        Bench::Mpi(a) => report = mpi::run(a)?,
    }
    Ok(report)
}

/// Failure when a measurement found what must fail the bench (after its JSON is written):
/// `--sweep`'s cells where auto lost to the best fixed mode beyond tolerance and spread.
fn verdict(report: &Report) -> ExitCode {
    let slow = report.get("sweep").and_then(|s| s["auto_too_slow"].as_array()).is_some_and(|c| !c.is_empty());
    if slow { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// The microbenchmarks, printed and stored under `micro`.
fn run_micro(io_buffer: usize, report: &mut Report) -> Result<()> {
    let m = micro::run(io_buffer)?;
    println!("{}", m.table);
    report.insert("micro".to_owned(), m.json);
    Ok(())
}

/// The bench's scratch directory under `--out`, announced with its filesystem and the load
/// average (the GPU-free benches have no calibration line to show the machine's state).
fn scratch_with_load(scratch: &Scratch) -> Result<output::ScratchDir> {
    let scratch = output::ScratchDir::under(scratch.out.as_deref(), "bench")?;
    println!(
        "writing to {} ({}), load average {}",
        scratch.path().display(),
        machine::filesystem_type(scratch.path()),
        machine::load_average().map_or("unknown".to_owned(), |l| format!("{l:.2}"))
    );
    Ok(scratch)
}

/// The signature of [`reserve::run`] and [`reserve::run_layout`]: dir, rows, cols, frames, reps.
type Hdf5Comparison = fn(&Path, usize, usize, u64, usize) -> Result<reserve::ReserveResult>;

/// One of the GPU-free HDF5 sink comparisons (`reserve-cost`, `layout-cost`) under `--out`,
/// on frames of `shape` (rows, cols, frames), its figures stored under `key`.
fn run_hdf5_comparison(
    scratch: &Scratch,
    reps: usize,
    shape: (usize, usize, u64),
    report: &mut Report,
    key: &str,
    compare: Hdf5Comparison,
) -> Result<()> {
    let scratch = scratch_with_load(scratch)?;
    let (rows, cols, frames) = shape;
    let r = compare(scratch.path(), rows, cols, frames, reps)?;
    println!("{}", r.table);
    report.insert(key.to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&[], Some(scratch.path())));
    Ok(())
}

/// `bench python`: the Python package against the Rust paths, under `--out`.
fn run_python(a: &args::Python, report: &mut Report) -> Result<()> {
    let scratch = scratch_with_load(&a.scratch)?;
    let bench = python::PythonBench {
        python: &a.python_bin,
        binary: &a.bin,
        dir: scratch.path(),
        shape: (a.rows, a.cols),
        frames: a.frames,
        steps: u64::from(a.steps_per_frame),
        reps: a.report.reps,
    };
    let r = python::run(&bench)?;
    println!("{}", r.table);
    report.insert("python".to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&[], Some(scratch.path())));
    Ok(())
}

/// The device `--devices` selects (its first adapter), announced with lavapipe's thread count;
/// never empty.
fn bench_devices(devices: &args::Devices) -> Result<Vec<GpuDevice>> {
    let selector = DeviceSelector::parse(&devices.devices).context("reading --devices")?;
    let gpus = open_devices(&selector, 1).context("opening the device to benchmark")?;
    if gpus.is_empty() {
        anyhow::bail!("--devices selected no device");
    }
    println!("{}", machine::lp_threads_note());
    Ok(gpus)
}

/// `bench zfp-device`: ZFP fixed rate on the device, on the host and not at all, under `--out`.
fn run_zfp_device(a: &args::ZfpDevice, report: &mut Report) -> Result<()> {
    let scratch = scratch_with_load(&a.scratch)?;
    let gpus = bench_devices(&a.devices)?;
    let r = zfp::run(&gpus[0], (&a.sink, scratch.path()), a.edge, a.frames, a.rate, a.report.reps)?;
    println!("{}", r.table);
    report.insert("zfp_device".to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&gpus, Some(scratch.path())));
    Ok(())
}

/// `bench zfp-encoder`: the device's ZFP encoder alone against zfp's on the host.
fn run_zfp_encoder(a: &args::ZfpEncoder, report: &mut Report) -> Result<()> {
    let gpus = bench_devices(&a.devices)?;
    let rate = wgpipe::compute::zfp::ZfpRate::new(a.rate.bits())?;
    let r = zfp_encoder::run(&gpus[0], a.edge, rate, a.report.reps)?;
    println!("{}", r.table);
    report.insert("zfp_encoder".to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&gpus, None));
    Ok(())
}

/// `bench checkpoint-cost`: the 3-D model with and without checkpoints, under `--out`.
fn run_checkpoint_cost(a: &args::CheckpointCost, report: &mut Report) -> Result<()> {
    let scratch = scratch_with_load(&a.scratch)?;
    let gpus = bench_devices(&a.devices)?;
    let r = checkpoint::run(&gpus[0], scratch.path(), a.edge, a.frames, a.report.reps)?;
    println!("{}", r.table);
    report.insert("checkpoint_cost".to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&gpus, Some(scratch.path())));
    Ok(())
}

/// `bench analysis-cost`: the 3-D model with and without analysis on the device.
fn run_analysis_cost(a: &args::AnalysisCost, report: &mut Report) -> Result<()> {
    let gpus = bench_devices(&a.devices)?;
    let r = analysis::run(&gpus[0], a.edge, a.frames, a.report.reps)?;
    println!("{}", r.table);
    report.insert("analysis_cost".to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&gpus, None));
    Ok(())
}

/// `bench peers gs-mpiio`: the 3-D run beside the ADIOS2 tutorial's MPI-IO simulation, under
/// `--out`, lavapipe on every core (gs-mpiio's ranks use them all too).
fn run_against_gs_mpiio(a: &args::GsMpiio, report: &mut Report) -> Result<()> {
    let scratch = scratch_with_load(&a.scratch)?;
    let selector = DeviceSelector::parse(&a.devices.devices).context("reading --devices")?;
    println!("{}", machine::lp_threads_note());
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"), PathBuf::from);
    let bin = a.bin.clone().unwrap_or_else(|| target.join("release/wgpipe"));
    let peer = gs_mpiio::Comparison {
        devices: &a.devices.devices,
        bin: &bin,
        dir: scratch.path(),
        edge: a.edge,
        frames: a.frames,
        ranks: a.ranks.unwrap_or(cores),
        reps: a.report.reps,
    };
    let r = gs_mpiio::run(&peer)?;
    println!("{}", r.table);
    report.insert("against_gs_mpiio".to_owned(), r.json);
    let gpus = open_devices(&selector, 1).context("opening the device to describe it")?;
    report.insert("machine".to_owned(), machine::describe(&gpus, Some(scratch.path())));
    Ok(())
}

/// The `--candidate` or `--candidate-3d` shaders with their labels: "candidate" for one, else
/// "candidate-" and the file's stem, so that several measured side by side stay apart.
fn candidates(paths: &[PathBuf], flag: &str) -> Result<Vec<(String, wgpipe::compute::WgslSource)>> {
    let mut out: Vec<(String, wgpipe::compute::WgslSource)> = Vec::new();
    for path in paths {
        let wgsl = wgpipe::compute::WgslSource::from_file(path).with_context(|| format!("reading {flag}"))?;
        let label = if paths.len() == 1 {
            "candidate".to_owned()
        } else {
            format!("candidate-{}", path.file_stem().map_or("?".into(), |s| s.to_string_lossy()))
        };
        if out.iter().any(|(l, _)| *l == label) {
            anyhow::bail!("two {flag} files are named {label:?}: give them different file names");
        }
        out.push((label, wgsl));
    }
    Ok(out)
}

/// `bench kernel`: the step kernels on the first selected device (and with `--roofline` the
/// adapter's copy bandwidth before and after them).
fn run_kernel(a: &args::Kernel, report: &mut Report) -> Result<()> {
    let candidates_2d = candidates(&a.candidate, "--candidate")?;
    let candidates_3d = candidates(&a.candidate_3d, "--candidate-3d")?;
    let gpus = bench_devices(&a.devices)?;
    let gpu = &gpus[0];
    println!(
        "device: {}, load average {}",
        gpu.label(),
        machine::load_average().map_or("unknown".to_owned(), |l| format!("{l:.2}"))
    );
    let reps = a.report.reps;
    let before = if a.roofline { Some(roofline::copy_bandwidth(gpu, reps)?) } else { None };
    let r = kernel::run(gpu, reps, &candidates_2d, &candidates_3d, a.grid_2d(), a.large)?;
    println!("{}", r.table);
    if let Some(before) = before {
        let after = roofline::copy_bandwidth(gpu, reps)?;
        let (text, json) = roofline::report(&before, &after, &r.json["cases"]);
        println!("{text}");
        report.insert("roofline".to_owned(), json);
    }
    report.insert("kernel".to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(std::slice::from_ref(gpu), None));
    Ok(())
}

/// The signature of a comparison against a peer writer: `(dir, rows, cols, frames, reps)`.
type AgainstRun = fn(&Path, usize, usize, u64, usize) -> Result<posix::AgainstResult>;

/// `bench peers posix|h5py`: a sink vs a peer writer of the same frames, under `--out`, its
/// figures under `key`.
fn run_against(a: &args::PeerWrite, report: &mut Report, key: &str, run: AgainstRun) -> Result<()> {
    let scratch = scratch_with_load(&a.scratch)?;
    let r = run(scratch.path(), a.rows, a.cols, a.frames, a.report.reps)?;
    println!("{}", r.table);
    report.insert(key.to_owned(), r.json);
    report.insert("machine".to_owned(), machine::describe(&[], Some(scratch.path())));
    Ok(())
}
