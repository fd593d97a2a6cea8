//! The command line of `cargo xtask bench`: one subcommand per benchmark (clap derive), each
//! with only the options it reads, so that a combination no benchmark runs does not parse.
//! What remains to check by hand is a value's range, done by the value parsers below.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, Parser, Subcommand, ValueEnum};
use wgpipe::storage::{Compression, ZfpRate};

use super::{compression, mpi};

/// `cargo xtask bench SUBCOMMAND`.
#[derive(Debug, Parser)]
#[command(
    name = "bench",
    bin_name = "cargo xtask bench",
    about = "Measure what the pipeline costs and what overlapping I/O buys",
    long_about = "Measure what the pipeline costs and what overlapping I/O buys.\n\n\
                  Every comparison alternates its runs in one process (absolute times on a shared machine drift \
                  more than the effects measured), and every figure is the median [min–max] of the repetitions. \
                  The benchmarks that run the model re-execute themselves with LP_NUM_THREADS=1 when it is unset, \
                  so that lavapipe leaves the writer thread a core. docs/src/benchmarks.md has the latest figures."
)]
pub struct BenchCommand {
    #[command(subcommand)]
    pub bench: Bench,
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum Bench {
    /// The pipeline against a compute-only loop (null sink): what the machinery costs a run,
    /// plus the microbenchmarks
    Overhead(Overhead),
    /// Non-blocking I/O: async wall time over the blocking baseline's at the balance point
    /// where computing a frame takes as long as writing it (Buettner et al. 2009)
    Overlap {
        #[command(subcommand)]
        sink: OverlapSink,
    },
    /// f32 against f16 output (converted on the GPU): bytes per frame, the sink's write time
    /// per frame and the I/O-bound async run's wall time
    Dtype(Dtype),
    /// The same captured frames stored with two compressions: writer throughput, bytes on
    /// disk and the largest absolute error read back
    Compression(CompressionPair),
    /// The HDF5 sink compressing on A and on B threads: writer throughput and the I/O-bound
    /// async run's wall time
    CompressionThreads(CompressionThreads),
    /// The pipeline's per-frame machinery and its progress counters, without a GPU
    Micro(Micro),
    /// The shipped step kernels alone, against the shaders they replaced and their other
    /// per-adapter choices (cells per invocation, workgroup shapes), results checked bit for bit
    Kernel(Kernel),
    /// A sink against a peer writing the same data: a plain write loop, h5py, or the ADIOS2
    /// tutorial's MPI-IO simulation
    Peers {
        #[command(subcommand)]
        peer: Peer,
    },
    /// The HDF5 sink with its disk-space reservation on and off (no GPU)
    ReserveCost(ReserveCost),
    /// The HDF5 sink laying an uncompressed output out whole at the start against growing it
    /// frame by frame (no GPU)
    LayoutCost(LayoutCost),
    /// The 3-D model without checkpoints, with one every frame and at Young's interval
    CheckpointCost(CheckpointCost),
    /// The 3-D model with and without u and v reduced on the device (100-bin PDFs)
    AnalysisCost(AnalysisCost),
    /// ZFP fixed rate encoded on the GPU against the same rate by HDF5's filter on the host
    /// and against no compression
    ZfpDevice(ZfpDevice),
    /// The device's ZFP encoder alone against the zfp C library on one host core, and against
    /// the adapter's copy bandwidth
    ZfpEncoder(ZfpEncoder),
    /// The Python package against the Rust paths: Pipeline.frames() against the binary, a
    /// numpy sink against the raw sink, and the copies into the numpy array
    Python(Python),
    /// Weak and strong scaling of the 3-D model split over MPI ranks (the MPI build of
    /// wgpipe: cargo build-mpi --release)
    Mpi(mpi::Args),
}

/// How many repetitions, and where the JSON report goes: every benchmark's.
#[derive(Debug, Clone, Args)]
pub struct Report {
    /// Alternating repetitions of every measurement; each figure is their median [min–max]
    #[arg(long, value_name = "K", default_value_t = 5, value_parser = at_least_one::<usize>)]
    pub reps: usize,
    /// Write every figure, the parameters, the machine and this command line as JSON
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// The adapter a GPU benchmark runs on.
#[derive(Debug, Clone, Args)]
pub struct Devices {
    /// Adapters: all, vulkan, gl, 0,1 or a part of a name; the first one selected is measured
    #[arg(long, value_name = "SEL", default_value = "0")]
    pub devices: String,
}

/// Where a benchmark that writes files writes them.
#[derive(Debug, Clone, Args)]
pub struct Scratch {
    /// Write under DIR, in a directory of the bench's own removed afterwards [default: the
    /// current directory]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// The channel capacity between device and writer unless `--io-buffer` says otherwise: the
/// runner's default.
pub use wgpipe::tuning::DEFAULT_IO_BUFFER;

/// The channel capacity between the device and the writer.
#[derive(Debug, Clone, Args)]
pub struct IoBuffer {
    /// Frames the channel between device and writer holds
    #[arg(long, value_name = "B", default_value_t = DEFAULT_IO_BUFFER)]
    pub io_buffer: usize,
}

/// The workload of the benchmarks that run the 2-D model into a file sink.
#[derive(Debug, Clone, Args)]
pub struct SinkRun {
    /// Grid rows
    #[arg(long, value_name = "R", default_value_t = 512, value_parser = at_least_one::<usize>)]
    pub rows: usize,
    /// Grid columns
    #[arg(long, value_name = "C", default_value_t = 512, value_parser = at_least_one::<usize>)]
    pub cols: usize,
    /// Frames per run
    #[arg(long, value_name = "N", default_value_t = 24, value_parser = at_least_one::<u64>)]
    pub frames: u64,
    #[command(flatten)]
    pub devices: Devices,
    #[command(flatten)]
    pub scratch: Scratch,
    #[command(flatten)]
    pub report: Report,
}

/// `bench overhead`.
#[derive(Debug, Clone, Args)]
pub struct Overhead {
    /// Grid rows
    #[arg(long, value_name = "R", default_value_t = 128, value_parser = at_least_one::<usize>)]
    pub rows: usize,
    /// Grid columns
    #[arg(long, value_name = "C", default_value_t = 128, value_parser = at_least_one::<usize>)]
    pub cols: usize,
    /// Frames per run
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = at_least_one::<u64>)]
    pub frames: u64,
    /// Kernel steps per frame
    #[arg(long, value_name = "S", default_value_t = 16, value_parser = at_least_one::<u32>)]
    pub steps_per_frame: u32,
    #[command(flatten)]
    pub io_buffer: IoBuffer,
    /// Write a Chrome (Perfetto) trace of one pipeline run
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub devices: Devices,
    #[command(flatten)]
    pub report: Report,
}

/// `bench overlap SINK`: the sink measured.
#[derive(Debug, Clone, Subcommand)]
pub enum OverlapSink {
    /// The raw sink's efficiency ratio (uncompressed writes: a compute-bound run on lavapipe)
    Raw(Overlap),
    /// The HDF5 sink's efficiency ratio; --compression gives the writer CPU work to overlap
    Hdf5(CompressedOverlap),
    /// The Zarr sink's efficiency ratio; --compression gives the writer CPU work to overlap
    Zarr(CompressedOverlap),
}

/// `bench overlap raw|hdf5|zarr`.
#[derive(Debug, Clone, Args)]
pub struct Overlap {
    /// Kernel steps per frame instead of the calibrated balance
    #[arg(long, value_name = "S", value_parser = at_least_one::<u32>)]
    pub steps_per_frame: Option<u32>,
    #[command(flatten)]
    pub io_buffer: IoBuffer,
    /// Also the io_buffer x compute/I-O table of efficiency ratios, io.mode "auto" beside the
    /// fixed modes; exits non-zero (after its JSON) where auto is over 5 % slower than the
    /// best fixed mode of a row beyond the row's spread (judged with --reps 3 or more)
    #[arg(long)]
    pub sweep: bool,
    /// Write a Chrome (Perfetto) trace of one async run
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub run: SinkRun,
}

/// `bench overlap hdf5|zarr`: [`Overlap`] with the sink's compression.
#[derive(Debug, Clone, Args)]
pub struct CompressedOverlap {
    #[command(flatten)]
    pub overlap: Overlap,
    #[command(flatten)]
    pub compressing: Compressing,
}

/// How a compressing sink compresses.
#[derive(Debug, Clone, Args)]
pub struct Compressing {
    /// none, deflate:LEVEL, zstd (zarr), zfp:accuracy=E, ...: CPU work the writer thread
    /// overlaps with compute
    #[arg(long, value_name = "C", default_value_t = Compression::None)]
    pub compression: Compression,
    #[command(flatten)]
    pub threads: CompressionThreadCount,
}

/// The threads compressing each frame.
#[derive(Debug, Clone, Args)]
pub struct CompressionThreadCount {
    /// Threads compressing each frame (HDF5 with deflate or blosc) [default: the machine's
    /// cores, up to 4]
    #[arg(long, value_name = "N", value_parser = at_least_one::<usize>)]
    pub compression_threads: Option<usize>,
}

impl CompressionThreadCount {
    /// The count given, else wgpipe's default.
    pub fn get(&self) -> usize {
        self.compression_threads.unwrap_or_else(wgpipe::storage::default_compression_threads)
    }
}

/// The sinks `bench dtype` compares the element types in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DtypeSink {
    Raw,
    Hdf5,
}

/// `bench dtype SINK`.
#[derive(Debug, Clone, Args)]
pub struct Dtype {
    /// The sink storing the frames
    #[arg(value_enum)]
    pub sink: DtypeSink,
    /// Kernel steps per frame of the async runs (1: the writer sets the pace)
    #[arg(long, value_name = "S", default_value_t = 1, value_parser = at_least_one::<u32>)]
    pub steps_per_frame: u32,
    #[command(flatten)]
    pub io_buffer: IoBuffer,
    #[command(flatten)]
    pub run: SinkRun,
}

/// The sinks that compress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompressingSink {
    Hdf5,
    Zarr,
}

/// `bench compression SINK A,B`.
#[derive(Debug, Clone, Args)]
pub struct CompressionPair {
    /// The sink storing the frames
    #[arg(value_enum)]
    pub sink: CompressingSink,
    /// The two compressions compared, e.g. deflate:4,zfp:accuracy=1e-4
    #[arg(value_name = "A,B", value_parser = compression_pair)]
    pub pair: (Compression, Compression),
    /// Kernel steps between the captured frames (an evolved pattern: the first steps' frames
    /// are nearly uniform and would flatter every codec)
    #[arg(long, value_name = "S", default_value_t = compression::STEPS_PER_FRAME, value_parser = at_least_one::<u32>)]
    pub steps_per_frame: u32,
    #[command(flatten)]
    pub threads: CompressionThreadCount,
    #[command(flatten)]
    pub run: SinkRun,
}

/// `bench compression-threads A,B --compression C`.
#[derive(Debug, Clone, Args)]
pub struct CompressionThreads {
    /// The two thread counts compared, e.g. 1,2
    #[arg(value_name = "A,B", value_parser = thread_pair)]
    pub pair: (usize, usize),
    /// What the threads compress with: deflate:LEVEL, or blosc-zstd:LEVEL / blosc-lz4:LEVEL in
    /// a build with feature blosc (`cargo run -p xtask --release --features blosc -- bench ...`)
    #[arg(long, value_name = "C", value_parser = some_compression)]
    pub compression: Compression,
    /// Kernel steps per frame of the async runs (1: the writer sets the pace)
    #[arg(long, value_name = "S", default_value_t = 1, value_parser = at_least_one::<u32>)]
    pub steps_per_frame: u32,
    #[command(flatten)]
    pub io_buffer: IoBuffer,
    #[command(flatten)]
    pub run: SinkRun,
}

/// `bench micro`.
#[derive(Debug, Clone, Args)]
pub struct Micro {
    #[command(flatten)]
    pub io_buffer: IoBuffer,
    /// Write every figure and the machine as JSON
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `bench kernel`.
#[derive(Debug, Clone, Args)]
pub struct Kernel {
    /// Only the 2-D Gray-Scott, on a grid of R rows [default with --cols: 1024]
    #[arg(long, value_name = "R", value_parser = at_least_one::<usize>, conflicts_with_all = ["large", "candidate_3d"])]
    pub rows: Option<usize>,
    /// Only the 2-D Gray-Scott, on a grid of C columns [default with --rows: 1024]
    #[arg(long, value_name = "C", value_parser = at_least_one::<usize>, conflicts_with_all = ["large", "candidate_3d"])]
    pub cols: Option<usize>,
    /// The Gray-Scott models on 4096² and 256³ too (64 MiB a field: a GPU's memory rather than
    /// its caches)
    #[arg(long)]
    pub large: bool,
    /// Also the adapter's copy bandwidth (a buffer copy and a compute shader's, before and
    /// after the kernels) and each kernel's effective GB/s as a share of the faster copy's
    #[arg(long)]
    pub roofline: bool,
    /// A 2-D Gray-Scott step shader (same prelude, fields and Params) measured alongside and
    /// compared bit for bit; repeat it for several, labelled by file name
    #[arg(long, value_name = "FILE")]
    pub candidate: Vec<PathBuf>,
    /// The same for the 3-D Gray-Scott cases
    #[arg(long = "candidate-3d", value_name = "FILE")]
    pub candidate_3d: Vec<PathBuf>,
    #[command(flatten)]
    pub devices: Devices,
    #[command(flatten)]
    pub report: Report,
}

impl Kernel {
    /// The 2-D grid `--rows`/`--cols` ask for (rows, cols), if they do.
    pub fn grid_2d(&self) -> Option<(usize, usize)> {
        match (self.rows, self.cols) {
            (None, None) => None,
            (rows, cols) => Some((rows.unwrap_or(1024), cols.unwrap_or(1024))),
        }
    }
}

/// `bench peers PEER`.
#[derive(Debug, Clone, Subcommand)]
pub enum Peer {
    /// The raw sink against a plain write loop of the same frames, fdatasync in both (no GPU)
    Posix(PeerWrite),
    /// The HDF5 sink against an h5py writer of the same shape in its own Python process (no GPU)
    H5py(PeerWrite),
    /// wgpipe's 3-D run writing HDF5 against the ADIOS2 tutorial's C++ MPI simulation writing
    /// with MPI-IO, whole runs (needs mpicxx.mpich and nlohmann-json3-dev)
    GsMpiio(GsMpiio),
}

/// `bench peers posix|h5py`.
#[derive(Debug, Clone, Args)]
pub struct PeerWrite {
    /// Frame rows
    #[arg(long, value_name = "R", default_value_t = 1024, value_parser = at_least_one::<usize>)]
    pub rows: usize,
    /// Frame columns
    #[arg(long, value_name = "C", default_value_t = 1024, value_parser = at_least_one::<usize>)]
    pub cols: usize,
    /// Frames per run
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = at_least_one::<u64>)]
    pub frames: u64,
    #[command(flatten)]
    pub scratch: Scratch,
    #[command(flatten)]
    pub report: Report,
}

/// `bench peers gs-mpiio`.
#[derive(Debug, Clone, Args)]
pub struct GsMpiio {
    /// Cells along each edge of the 3-D grid
    #[arg(long, value_name = "L", default_value_t = 64, value_parser = at_least_one::<usize>)]
    pub edge: usize,
    /// Output steps of 10 steps each
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = at_least_one::<u64>)]
    pub frames: u64,
    /// gs-mpiio's MPI ranks [default: one per core]
    #[arg(long, value_name = "R", value_parser = at_least_one::<usize>)]
    pub ranks: Option<usize>,
    /// The wgpipe binary run as a process of its own [default: the target directory's
    /// release/wgpipe: cargo build --release -p wgpipe]
    #[arg(long, value_name = "WGPIPE")]
    pub bin: Option<PathBuf>,
    #[command(flatten)]
    pub devices: Devices,
    #[command(flatten)]
    pub scratch: Scratch,
    #[command(flatten)]
    pub report: Report,
}

/// `bench reserve-cost`.
#[derive(Debug, Clone, Args)]
pub struct ReserveCost {
    /// Frame rows
    #[arg(long, value_name = "R", default_value_t = 512, value_parser = at_least_one::<usize>)]
    pub rows: usize,
    /// Frame columns
    #[arg(long, value_name = "C", default_value_t = 512, value_parser = at_least_one::<usize>)]
    pub cols: usize,
    /// Frames per run
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = at_least_one::<u64>)]
    pub frames: u64,
    #[command(flatten)]
    pub scratch: Scratch,
    #[command(flatten)]
    pub report: Report,
}

/// `bench layout-cost`.
#[derive(Debug, Clone, Args)]
pub struct LayoutCost {
    /// Frame rows
    #[arg(long, value_name = "R", default_value_t = 64, value_parser = at_least_one::<usize>)]
    pub rows: usize,
    /// Frame columns
    #[arg(long, value_name = "C", default_value_t = 64, value_parser = at_least_one::<usize>)]
    pub cols: usize,
    /// Frames per run
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = at_least_one::<u64>)]
    pub frames: u64,
    #[command(flatten)]
    pub scratch: Scratch,
    #[command(flatten)]
    pub report: Report,
}

/// `bench checkpoint-cost`.
#[derive(Debug, Clone, Args)]
pub struct CheckpointCost {
    /// Cells along each edge of the 3-D grid
    #[arg(long, value_name = "L", default_value_t = 48, value_parser = at_least_one::<usize>)]
    pub edge: usize,
    /// Frames of 10 steps per run
    #[arg(long, value_name = "N", default_value_t = 60, value_parser = at_least_one::<u64>)]
    pub frames: u64,
    #[command(flatten)]
    pub devices: Devices,
    #[command(flatten)]
    pub scratch: Scratch,
    #[command(flatten)]
    pub report: Report,
}

/// `bench analysis-cost`.
#[derive(Debug, Clone, Args)]
pub struct AnalysisCost {
    /// Cells along each edge of the 3-D grid
    #[arg(long, value_name = "L", default_value_t = 64, value_parser = at_least_one::<usize>)]
    pub edge: usize,
    /// Frames of 10 steps per run
    #[arg(long, value_name = "N", default_value_t = 40, value_parser = at_least_one::<u64>)]
    pub frames: u64,
    #[command(flatten)]
    pub devices: Devices,
    #[command(flatten)]
    pub report: Report,
}

/// `bench zfp-device`.
#[derive(Debug, Clone, Args)]
pub struct ZfpDevice {
    /// ZFP's fixed rate, bits per value (1 to 32); the largest errors are also measured at 4,
    /// 8, 12 and 16
    #[arg(long, value_name = "BITS", default_value = "8", value_parser = zfp_rate)]
    pub rate: ZfpRate,
    /// Cells along each edge of the 3-D grid
    #[arg(long, value_name = "L", default_value_t = 64, value_parser = at_least_one::<usize>)]
    pub edge: usize,
    /// Frames of 10 steps per run
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = at_least_one::<u64>)]
    pub frames: u64,
    /// The sink the three ways store through: hdf5 (H5Z-ZFP on the host) or zarr (zfpy)
    #[arg(long, value_name = "SINK", default_value = "hdf5", value_parser = ["hdf5", "zarr"])]
    pub sink: String,
    #[command(flatten)]
    pub devices: Devices,
    #[command(flatten)]
    pub scratch: Scratch,
    #[command(flatten)]
    pub report: Report,
}

/// `bench zfp-encoder`.
#[derive(Debug, Clone, Args)]
pub struct ZfpEncoder {
    /// ZFP's fixed rate, bits per value (1 to 32)
    #[arg(long, value_name = "BITS", default_value = "8", value_parser = zfp_rate)]
    pub rate: ZfpRate,
    /// Cells along each edge of the 3-D field
    #[arg(long, value_name = "L", default_value_t = 64, value_parser = at_least_one::<usize>)]
    pub edge: usize,
    #[command(flatten)]
    pub devices: Devices,
    #[command(flatten)]
    pub report: Report,
}

/// `bench python`.
#[derive(Debug, Clone, Args)]
pub struct Python {
    /// A Python with the wgpipe package installed (pip install ./crates/python in a virtual
    /// environment: a release build)
    #[arg(long, value_name = "PY")]
    pub python_bin: String,
    /// The wgpipe binary run as a process of its own (cargo build --release -p wgpipe)
    #[arg(long, value_name = "WGPIPE", default_value = "target/release/wgpipe")]
    pub bin: PathBuf,
    /// Grid rows
    #[arg(long, value_name = "R", default_value_t = 1024, value_parser = at_least_one::<usize>)]
    pub rows: usize,
    /// Grid columns
    #[arg(long, value_name = "C", default_value_t = 1024, value_parser = at_least_one::<usize>)]
    pub cols: usize,
    /// Frames per run
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = at_least_one::<u64>)]
    pub frames: u64,
    /// Kernel steps per frame
    #[arg(long, value_name = "S", default_value_t = 1, value_parser = at_least_one::<u32>)]
    pub steps_per_frame: u32,
    #[command(flatten)]
    pub scratch: Scratch,
    #[command(flatten)]
    pub report: Report,
}

impl Bench {
    /// Whether lavapipe, which computes on the CPU, must run on one thread
    /// (`LP_NUM_THREADS=1`): where the model runs on the device while a writer thread works
    /// beside it, and where the device's ZFP encoder is compared with zfp's, which runs on one
    /// core. The kernel bench keeps lavapipe's threads as set, and gs-mpiio's comparison gives
    /// lavapipe every core, as its ranks have.
    pub fn wants_one_lavapipe_thread(&self) -> bool {
        match self {
            Bench::Overhead(_)
            | Bench::Overlap { .. }
            | Bench::Dtype(_)
            | Bench::Compression(_)
            | Bench::CompressionThreads(_)
            | Bench::CheckpointCost(_)
            | Bench::AnalysisCost(_)
            | Bench::ZfpDevice(_)
            | Bench::ZfpEncoder(_)
            | Bench::Python(_) => true,
            Bench::Micro(_)
            | Bench::Kernel(_)
            | Bench::Peers { .. }
            | Bench::ReserveCost(_)
            | Bench::LayoutCost(_)
            | Bench::Mpi(_) => false,
        }
    }

    /// Where `--json` writes the report, if it was given.
    pub fn json(&self) -> Option<&PathBuf> {
        let report = match self {
            Bench::Overhead(a) => &a.report,
            Bench::Overlap { sink: OverlapSink::Raw(a) } => &a.run.report,
            Bench::Overlap { sink: OverlapSink::Hdf5(a) | OverlapSink::Zarr(a) } => &a.overlap.run.report,
            Bench::Dtype(a) => &a.run.report,
            Bench::Compression(a) => &a.run.report,
            Bench::CompressionThreads(a) => &a.run.report,
            Bench::Micro(a) => return a.json.as_ref(),
            Bench::Kernel(a) => &a.report,
            Bench::Peers { peer: Peer::Posix(a) | Peer::H5py(a) } => &a.report,
            Bench::Peers { peer: Peer::GsMpiio(a) } => &a.report,
            Bench::ReserveCost(a) => &a.report,
            Bench::LayoutCost(a) => &a.report,
            Bench::CheckpointCost(a) => &a.report,
            Bench::AnalysisCost(a) => &a.report,
            Bench::ZfpDevice(a) => &a.report,
            Bench::ZfpEncoder(a) => &a.report,
            Bench::Python(a) => &a.report,
            Bench::Mpi(a) => return a.json.as_ref(),
        };
        report.json.as_ref()
    }
}

/// `text` as a number of at least 1: counts, sizes and repetitions.
pub(crate) fn at_least_one<T: FromStr + PartialOrd + From<u8>>(text: &str) -> Result<T, String> {
    let n: T = text.parse().map_err(|_| format!("expects a whole number, got {text:?}"))?;
    if n < T::from(1) {
        return Err("must be at least 1".to_owned());
    }
    Ok(n)
}

/// `A,B`: two values of `what` to compare, which must differ.
fn pair<T: PartialEq>(text: &str, what: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<(T, T), String> {
    let (a, b) = text.split_once(',').ok_or_else(|| format!("give two {what}s as A,B"))?;
    let (a, b) = (parse(a)?, parse(b)?);
    if a == b {
        return Err(format!("compares two different {what}s"));
    }
    Ok((a, b))
}

/// `A,B`: two thread counts of 1 or more.
fn thread_pair(text: &str) -> Result<(usize, usize), String> {
    pair(text, "thread count", at_least_one::<usize>)
}

/// `A,B`: two compressions, as `output.compression` writes them.
fn compression_pair(text: &str) -> Result<(Compression, Compression), String> {
    pair(text, "compression", |c| c.parse::<Compression>().map_err(|e| e.to_string()))
}

/// A compression other than none: what compression threads are for.
fn some_compression(text: &str) -> Result<Compression, String> {
    match text.parse::<Compression>().map_err(|e| e.to_string())? {
        Compression::None => Err("compression threads compress: give deflate:LEVEL (or blosc-zstd:LEVEL)".to_owned()),
        c => Ok(c),
    }
}

/// A ZFP fixed rate in bits per value.
fn zfp_rate(text: &str) -> Result<ZfpRate, String> {
    let bits: u32 = text.parse().map_err(|_| format!("expects a whole number of bits, got {text:?}"))?;
    ZfpRate::new(bits).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Bench, clap::Error> {
        BenchCommand::try_parse_from(std::iter::once("bench").chain(s.split_whitespace())).map(|c| c.bench)
    }

    #[test]
    fn parses_each_benchmark_and_rejects_nonsense() {
        let Ok(Bench::Overlap { sink: OverlapSink::Raw(a) }) =
            args("overlap raw --rows 64 --cols=32 --frames 4 --io-buffer 0 --sweep --out /dev/shm")
        else {
            panic!("overlap raw")
        };
        assert_eq!((a.run.rows, a.run.cols, a.run.frames, a.io_buffer.io_buffer), (64, 32, 4, 0));
        assert!(a.sweep && a.run.scratch.out.is_some() && a.run.report.reps == 5);
        assert!(args("overlap tape").is_err());
        assert!(args("overhead --sweep").is_err(), "the sweep measures I/O overlap");
        assert!(args("overhead --rows x").is_err());
        assert!(args("overhead --rows").is_err());
        assert!(args("overhead --rows 0").is_err());
        assert!(args("overhead --reps 0").is_err());
        assert!(args("").is_err());
        assert!(args("--sink null").is_err(), "the old flags are gone");
        assert!(matches!(args("micro"), Ok(Bench::Micro(_))));
        assert!(matches!(args("reserve-cost --out /dev/shm"), Ok(Bench::ReserveCost(_))));
        assert!(args("reserve-cost --compression deflate").is_err());
        assert!(args("overlap raw --compression deflate:6").is_err(), "the raw sink does not compress");
        let Ok(Bench::Overlap { sink: OverlapSink::Hdf5(a) }) = args("overlap hdf5 --compression deflate:6") else {
            panic!("overlap hdf5")
        };
        assert_eq!(a.compressing.compression, Compression::Deflate(6));
        let Ok(Bench::CompressionThreads(a)) = args("compression-threads 1,2 --compression deflate:6") else {
            panic!("compression-threads")
        };
        assert_eq!((a.pair, a.compression), ((1, 2), Compression::Deflate(6)));
        assert!(args("compression-threads 1,2").is_err(), "what the threads compress is needed");
        assert!(args("compression-threads 1,2 --compression deflate --compression-threads 3").is_err());
        assert!(args("compression-threads 1,2 --compression none").is_err());
        assert!(args("compression-threads 2 --compression deflate").is_err());
        assert!(args("compression-threads 2,2 --compression deflate").is_err());
        assert!(args("compression-threads 0,2 --compression deflate").is_err());
        assert!(args("overlap hdf5 --compression deflate --compression-threads 0").is_err());
        assert!(matches!(args("compression zarr zstd,zfp:accuracy=1e-4"), Ok(Bench::Compression(_))));
        assert!(args("compression hdf5 deflate:4,deflate:4").is_err());
        assert!(args("compression raw deflate:4,zstd").is_err());
        assert!(matches!(args("dtype hdf5"), Ok(Bench::Dtype(a)) if a.sink == DtypeSink::Hdf5));
        assert!(args("dtype zarr").is_err());
        assert!(args("dtype raw --sweep").is_err());
        assert!(matches!(args("peers posix --out /dev/shm"), Ok(Bench::Peers { peer: Peer::Posix(_) })));
        assert!(matches!(args("peers h5py"), Ok(Bench::Peers { peer: Peer::H5py(_) })));
        assert!(args("peers dd").is_err());
        let Ok(Bench::Peers { peer: Peer::GsMpiio(a) }) = args("peers gs-mpiio --ranks 4 --edge 16") else {
            panic!("peers gs-mpiio")
        };
        assert_eq!((a.ranks, a.edge, a.frames), (Some(4), 16, 100));
        assert!(args("peers posix --ranks 4").is_err());
        assert!(args("peers gs-mpiio --ranks 0").is_err());
        let Ok(Bench::Kernel(a)) = args("kernel --reps 7 --candidate gs.wgsl") else { panic!("kernel") };
        assert!(a.report.reps == 7 && a.candidate == [PathBuf::from("gs.wgsl")] && a.grid_2d().is_none());
        assert!(
            args("kernel --candidate-3d a.wgsl --candidate-3d b.wgsl")
                .is_ok_and(|b| matches!(b, Bench::Kernel(k) if k.candidate_3d.len() == 2))
        );
        assert!(args("kernel --candidate-3d gs3.wgsl --rows 64").is_err());
        assert!(args("kernel --large --cols 64").is_err());
        assert!(matches!(args("kernel --rows 64"), Ok(Bench::Kernel(k)) if k.grid_2d() == Some((64, 1024))));
        assert!(args("micro --candidate gs.wgsl").is_err());
        assert!(matches!(args("kernel --roofline --large"), Ok(Bench::Kernel(k)) if k.roofline && k.large));
        let Ok(Bench::Python(a)) = args("python --python-bin .venv/bin/python --bin target/release/wgpipe --reps 3")
        else {
            panic!("python")
        };
        assert_eq!(a.python_bin, ".venv/bin/python");
        assert!(args("python").is_err(), "needs the Python that has the package");
        assert!(
            matches!(args("zfp-device --rate 12"), Ok(Bench::ZfpDevice(a)) if ZfpRate::new(12).is_ok_and(|r| a.rate == r))
        );
        assert!(args("zfp-device --rate 33").is_err());
        assert!(
            matches!(args("zfp-encoder --edge 128"), Ok(Bench::ZfpEncoder(a)) if a.edge == 128 && a.rate.bits() == 8)
        );
        assert!(args("zfp-encoder --rate 0").is_err());
        assert!(args("checkpoint-cost --rows 64").is_err(), "the 3-D model's size is its --edge");
    }

    /// The commands the benchmark page quotes from `docs/src/bench/*.json` parse: the page
    /// never tells a reader to run what the bench no longer takes.
    #[test]
    fn every_recorded_command_parses() -> anyhow::Result<()> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/bench");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
            let Some(command) = json.get("command").and_then(|c| c.as_str()) else { continue };
            let words: Vec<&str> = command.split_whitespace().skip_while(|w| w.contains('=')).collect();
            let Some(rest) = words.strip_prefix(&["cargo", "xtask", "bench"]) else {
                panic!("{}: {command:?} is not a `cargo xtask bench` command", path.display())
            };
            if let Err(e) = BenchCommand::try_parse_from(std::iter::once("bench").chain(rest.iter().copied())) {
                panic!("{}: {command:?} does not parse:\n{e}", path.display());
            }
            checked += 1;
        }
        assert!(checked > 10, "only {checked} recorded commands found in {}", dir.display());
        Ok(())
    }
}
