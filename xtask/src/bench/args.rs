//! The command line of `cargo xtask bench`, parsed by hand (no CLI dependency for one task).

use std::path::PathBuf;

use crate::flags::Flags;
use anyhow::{Context, Result, bail};
use wgpipe::storage::Compression;

/// Usage text, printed by `--help`.
pub const USAGE: &str = "\
usage: cargo xtask bench --sink null|raw|hdf5|zarr [options]
       cargo xtask bench --micro
       cargo xtask bench --reserve-cost [--out DIR] [--rows R --cols C --frames N --reps K]
       cargo xtask bench --layout-cost [--out DIR] [--rows R --cols C --frames N --reps K]
       cargo xtask bench --checkpoint-cost [--out DIR] [--rows EDGE --frames N --reps K]
       cargo xtask bench --analysis-cost [--rows EDGE --frames N --reps K]
       cargo xtask bench --zfp-device [--compression zfp:rate=R] [--out DIR] [--rows EDGE --frames N --reps K]
       cargo xtask bench --sink raw --against posix [--out DIR] [--rows R --cols C --frames N]
       cargo xtask bench --sink hdf5 --against h5py [--out DIR] [--rows R --cols C --frames N]
       cargo xtask bench --sink hdf5 --against gs-mpiio [--out DIR] [--rows EDGE --frames N --ranks R --bin WGPIPE]
       cargo xtask bench --kernel [--rows R --cols C | --large] [--reps K --devices SEL --candidate[-3d] FILE]
       cargo xtask bench --roofline [--large] [--reps K --devices SEL]
       cargo xtask bench --python --python-bin PY [--out DIR] [--rows R --cols C --frames N --steps-per-frame S --reps K --bin WGPIPE]

  --sink KIND          null: pipeline vs compute-only overhead (plus the microbenchmarks);
                       raw/hdf5/zarr: non-blocking efficiency ratio (async wall / sync wall)
  --rows R --cols C    grid (default 128x128 for null, 512x512 for raw/hdf5/zarr)
  --frames N           frames per run (default 30 for null, 24 for raw/hdf5/zarr)
  --steps-per-frame S  null: kernel steps per frame (default 16);
                       raw/hdf5/zarr: skip the calibration and use S
  --io-buffer B        channel capacity between device and writer (default 2)
  --devices SEL        adapters: all, vulkan, gl, 0,1 or a name part (default 0)
  --reps K             alternating repetitions per measurement, each --sweep cell
                       included (default 5; every figure is median [min–max] of K)
  --compression C      hdf5, zarr: none (default), deflate:LEVEL, zstd (zarr), ...; compressing
                       is CPU work the writer thread can overlap with compute
  --compression-threads N  hdf5 with deflate: threads compressing each frame
                       (default: the machine's cores, up to 4)
  --compare-threads A,B  hdf5 with deflate or blosc: instead of the efficiency ratio, writer
                       throughput (MB/s, write-only runs) and the I/O-bound async run's
                       wall time with A and with B compression threads, alternating
  --compare-compression A,B  hdf5, zarr: the same captured frames stored with A and with B,
                       alternating: writer throughput (write-only runs), bytes on disk and
                       the largest absolute error read back (e.g. deflate:4,zfp:accuracy=1e-4)
  --zfp-device         ZFP fixed rate (--compression zfp:rate=R, default 8) encoded on the GPU
                       vs the same rate by HDF5's filter on the host vs no compression, the
                       3-D model (edge --rows, default 64; --frames, default 20), rotating:
                       wall per frame, bytes read back and on disk; then the largest error
                       at rates 4, 8, 12 and 16
  --compare-dtype      raw/hdf5: instead of the efficiency ratio, f32 vs f16 output
                       (converted on the GPU): bytes per frame, the sink's write time per
                       frame (write-only runs) and the I/O-bound async run's wall time
                       (--steps-per-frame, default 1), alternating
  --against posix      with --sink raw: the raw sink vs a plain write loop of the same
                       frames, alternating (no GPU; default 1024x1024, 128 frames, fsync)
  --against h5py       with --sink hdf5: the HDF5 sink vs an h5py writer of the same shape
                       in its own Python process, alternating (no GPU; defaults as above)
  --against gs-mpiio   with --sink hdf5: wgpipe's 3-D run (edge --rows, default 64; --frames
                       output steps of 10 steps, default 100) vs the ADIOS2 tutorial's C++
                       MPI simulation writing with MPI-IO on --ranks ranks (one per core),
                       alternating, whole runs (needs mpicxx.mpich and nlohmann-json3-dev)
  --ranks R            with --against gs-mpiio: gs-mpiio's MPI ranks (default: the cores)
  --bin WGPIPE         with --against gs-mpiio or --python: the wgpipe binary run as a process
                       of its own (default target/release/wgpipe: cargo build --release -p wgpipe)
  --python             the Python package against the Rust paths, alternating: frames/s through
                       Pipeline.frames() over the binary's (null sink), a numpy sink over the raw
                       sink (in --out), and the copies from staging to the numpy array (default
                       1024x1024 f32, 100 frames of 1 step)
  --python-bin PY      with --python: a Python with the package installed (pip install
                       ./crates/python in a virtual environment: a release build)
  --out DIR            where raw/hdf5 write (default: a temp dir under the current directory)
  --json FILE          write every figure, the parameters and the machine as JSON
  --trace FILE         Chrome trace (Perfetto) of one async run
  --sweep              raw/hdf5: io_buffer x compute/I-O ratio table of efficiency ratios,
                       each row's theory from its own measured t_comp and t_io; exits
                       non-zero (after its JSON) when io.mode auto is over 5 % slower than
                       the best fixed mode in a row, beyond the row's spread (--reps 3 or
                       more: fewer measure no spread)
  --micro              only the microbenchmarks (no GPU)
  --kernel             the shipped kernels alone, on the first device --devices selects
                       (2-D Gray-Scott 1024² and 512², heat 1024², 3-D Gray-Scott 64³
                       and 128³): cell-steps/s, effective GB/s (each field read and
                       written once per cell-step), and the Gray-Scott speedups over the
                       shaders they replaced (2-D: the %-wrapped one; 3-D: one cell per
                       invocation) and over themselves at the cells per invocation the
                       adapter did not get (1 on a CPU driver, 8 on a GPU) and, every
                       kernel, with the workgroup shapes it did not get (other-shapes),
                       alternating, results checked bit for bit; lavapipe
                       keeps LP_NUM_THREADS as set (all cores when unset); with
                       --rows/--cols: only the 2-D Gray-Scott on that grid; steps per
                       timing grow until the shipped kernel takes 0.1 s (a real GPU)
  --large              with --kernel: the Gray-Scott models on 4096² and 256³ too (64 MiB
                       a field: a GPU's memory rather than its caches)
  --roofline           --kernel, plus the adapter's copy bandwidth (a device-local buffer
                       copy and a compute shader's copy, read + write, before and after the
                       kernels) and each shipped kernel's effective GB/s as a fraction of
                       the faster copy's
  --candidate FILE     with --kernel: a 2-D Gray-Scott step shader measured alongside
                       (repeat it for several, labelled by file name)
                       (same prelude, fields and Params), its result compared bit for bit
  --candidate-3d FILE  the same for the 3-D Gray-Scott cases
  --reserve-cost       the HDF5 sink with its disk-space reservation on and off, alternating
                       (no GPU; default 512x512, 256 frames, fsync in finish, --out DIR)
  --layout-cost        the HDF5 sink laying an uncompressed output out whole at the start
                       (frame count known) vs growing it frame by frame, alternating (no
                       GPU; default 64x64, 2000 frames, fsync in finish, --out DIR)
  --checkpoint-cost    the 3-D model (edge --rows, default 48; --frames, default 60) without
                       checkpoints, with one every frame and at Young's interval (MTBF 1 h),
                       rotating (HDF5, fsync in finish, --out DIR)
  --analysis-cost      the 3-D model (edge --rows, default 64; --frames, default 40) with and
                       without u and v reduced on the device (100-bin PDFs), alternating (null
                       sink): GPU time ratio, time per step, bytes of the reductions

Runs lavapipe with LP_NUM_THREADS=1 (re-executes itself to set it) so the writer has a core.";

/// What the user asked for; `None` means the default of the chosen sink.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    pub sink: Option<String>,
    pub rows: Option<usize>,
    pub cols: Option<usize>,
    pub frames: Option<u64>,
    pub steps_per_frame: Option<u32>,
    pub io_buffer: usize,
    pub devices: String,
    pub reps: usize,
    pub compression: Compression,
    pub compression_threads: usize,
    pub compare_threads: Option<(usize, usize)>,
    pub compare_compression: Option<(Compression, Compression)>,
    pub compare_dtype: bool,
    pub against_posix: bool,
    pub against_h5py: bool,
    /// `--against gs-mpiio`: the 3-D run vs the ADIOS2 tutorial's MPI-IO simulation.
    pub against_gs_mpiio: bool,
    /// `--ranks`: gs-mpiio's MPI ranks (`None`: one per core).
    pub ranks: Option<usize>,
    /// `--bin`: the wgpipe binary `--against gs-mpiio` and `--python` run (`None`:
    /// target/release/wgpipe).
    pub bin: Option<PathBuf>,
    /// `--python`: the Python package against the Rust paths.
    pub python: bool,
    /// `--python-bin`: the Python with the package installed.
    pub python_bin: Option<String>,
    pub out: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub trace: Option<PathBuf>,
    pub sweep: bool,
    pub micro: bool,
    pub reserve_cost: bool,
    pub layout_cost: bool,
    pub checkpoint_cost: bool,
    pub analysis_cost: bool,
    pub zfp_device: bool,
    pub kernel: bool,
    pub roofline: bool,
    pub large: bool,
    /// `--candidate`, repeatable: each shader runs beside the others on every 2-D Gray-Scott case.
    pub candidate: Vec<PathBuf>,
    /// `--candidate-3d`, repeatable: each shader runs beside the others on every 3-D case.
    pub candidate_3d: Vec<PathBuf>,
    pub help: bool,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            sink: None,
            rows: None,
            cols: None,
            frames: None,
            steps_per_frame: None,
            io_buffer: 2,
            devices: "0".to_owned(),
            reps: 5,
            compression: Compression::None,
            compression_threads: wgpipe::storage::default_compression_threads(),
            compare_threads: None,
            compare_compression: None,
            compare_dtype: false,
            against_posix: false,
            against_h5py: false,
            against_gs_mpiio: false,
            ranks: None,
            bin: None,
            python: false,
            python_bin: None,
            out: None,
            json: None,
            trace: None,
            sweep: false,
            micro: false,
            reserve_cost: false,
            layout_cost: false,
            checkpoint_cost: false,
            analysis_cost: false,
            zfp_device: false,
            kernel: false,
            roofline: false,
            large: false,
            candidate: Vec::new(),
            candidate_3d: Vec::new(),
            help: false,
        }
    }
}

/// Parses `--flag value` and `--flag=value` forms.
pub fn parse(argv: &[String]) -> Result<Args> {
    let mut a = Args::default();
    let mut flags = Flags::new(argv);
    while let Some((flag, inline)) = flags.next_flag() {
        let mut value = || flags.value(flag, inline);
        match flag {
            "--sink" => {
                let v = value()?;
                if !["null", "raw", "hdf5", "zarr"].contains(&v.as_str()) {
                    bail!("--sink {v:?} is unknown: use null, raw, hdf5 or zarr");
                }
                a.sink = Some(v);
            }
            "--rows" => a.rows = Some(number(flag, &value()?)?),
            "--cols" => a.cols = Some(number(flag, &value()?)?),
            "--frames" => a.frames = Some(number(flag, &value()?)?),
            "--steps-per-frame" => a.steps_per_frame = Some(number(flag, &value()?)?),
            "--io-buffer" => a.io_buffer = number(flag, &value()?)?,
            "--devices" => a.devices = value()?,
            "--reps" => a.reps = number(flag, &value()?)?,
            "--compression" => {
                let v = value()?;
                a.compression = v.parse().with_context(|| format!("reading --compression {v:?}"))?;
            }
            "--compression-threads" => a.compression_threads = number(flag, &value()?)?,
            "--compare-threads" => {
                let v = value()?;
                let (x, y) =
                    v.split_once(',').with_context(|| format!("--compare-threads {v:?}: use A,B (e.g. 1,2)"))?;
                a.compare_threads = Some((number(flag, x)?, number(flag, y)?));
            }
            "--compare-compression" => {
                let v = value()?;
                let (x, y) = v.split_once(',').with_context(|| {
                    format!("--compare-compression {v:?}: use A,B (e.g. deflate:4,zfp:accuracy=1e-4)")
                })?;
                let parse =
                    |c: &str| c.parse::<Compression>().with_context(|| format!("reading --compare-compression {c:?}"));
                a.compare_compression = Some((parse(x)?, parse(y)?));
            }
            "--compare-dtype" => a.compare_dtype = true,
            "--against" => match value()?.as_str() {
                "posix" => a.against_posix = true,
                "h5py" => a.against_h5py = true,
                "gs-mpiio" => a.against_gs_mpiio = true,
                v => bail!(
                    "--against {v:?} is unknown: use --against posix (raw), --against h5py or --against gs-mpiio (hdf5)"
                ),
            },
            "--ranks" => a.ranks = Some(number(flag, &value()?)?),
            "--bin" => a.bin = Some(PathBuf::from(value()?)),
            "--python" => a.python = true,
            "--python-bin" => a.python_bin = Some(value()?),
            "--out" => a.out = Some(PathBuf::from(value()?)),
            "--json" => a.json = Some(PathBuf::from(value()?)),
            "--trace" => a.trace = Some(PathBuf::from(value()?)),
            "--sweep" => a.sweep = true,
            "--micro" => a.micro = true,
            "--reserve-cost" => a.reserve_cost = true,
            "--layout-cost" => a.layout_cost = true,
            "--checkpoint-cost" => a.checkpoint_cost = true,
            "--analysis-cost" => a.analysis_cost = true,
            "--zfp-device" => a.zfp_device = true,
            "--kernel" => a.kernel = true,
            "--roofline" => {
                a.kernel = true;
                a.roofline = true;
            }
            "--large" => a.large = true,
            "--candidate" => a.candidate.push(PathBuf::from(value()?)),
            "--candidate-3d" => a.candidate_3d.push(PathBuf::from(value()?)),
            "--help" | "-h" => a.help = true,
            other => bail!("unknown argument {other:?}\n\n{USAGE}"),
        }
    }
    check_values(&a)?;
    check_comparisons(&a)?;
    check_benchmark(&a)?;
    Ok(a)
}

/// Errors unless every number is in range and the sink takes the options given.
fn check_values(a: &Args) -> Result<()> {
    if a.reps == 0 {
        bail!("--reps must be at least 1");
    }
    if a.rows == Some(0) || a.cols == Some(0) || a.frames == Some(0) || a.steps_per_frame == Some(0) {
        bail!("--rows, --cols, --frames and --steps-per-frame must be at least 1");
    }
    if a.sweep && a.sink.as_deref() == Some("null") {
        bail!("--sweep measures I/O overlap: use it with --sink raw, hdf5 or zarr");
    }
    if a.compression != Compression::None && !matches!(a.sink.as_deref(), Some("hdf5" | "zarr")) {
        bail!("--compression applies to --sink hdf5 and --sink zarr only");
    }
    if a.compression_threads == 0 || a.compare_threads.is_some_and(|(x, y)| x == 0 || y == 0) {
        bail!("--compression-threads and --compare-threads need 1 thread or more");
    }
    Ok(())
}

/// Errors unless each comparison (`--compare-*`, `--against`) is complete and fits the sink.
fn check_comparisons(a: &Args) -> Result<()> {
    if a.compare_threads.is_some_and(|(x, y)| x == y) {
        bail!("--compare-threads A,B compares two different thread counts");
    }
    if a.compare_threads.is_some() && a.compression == Compression::None {
        bail!(
            "--compare-threads compares compression threads: add --sink hdf5 --compression deflate:LEVEL (or \
             blosc-zstd:LEVEL / blosc-lz4:LEVEL with `cargo run -p xtask --release --features blosc -- bench`)"
        );
    }
    if a.compare_compression.is_some() && !matches!(a.sink.as_deref(), Some("hdf5" | "zarr")) {
        bail!("--compare-compression compares what a sink stores: use it with --sink hdf5 or --sink zarr");
    }
    if a.compare_compression.is_some_and(|(x, y)| x == y) {
        bail!("--compare-compression A,B compares two different compressions");
    }
    if a.compare_compression.is_some() && (a.compare_threads.is_some() || a.compare_dtype || a.sweep) {
        bail!(
            "--compare-compression is a comparison of its own: run it without --compare-threads, --compare-dtype and --sweep"
        );
    }
    if a.compare_dtype && !matches!(a.sink.as_deref(), Some("raw" | "hdf5")) {
        bail!("--compare-dtype compares what a sink stores: use it with --sink raw or --sink hdf5");
    }
    if a.compare_dtype && (a.compare_threads.is_some() || a.sweep) {
        bail!("--compare-dtype is a comparison of its own: run it without --compare-threads and --sweep");
    }
    if a.against_posix && a.sink.as_deref() != Some("raw") {
        bail!("--against posix compares the raw sink: use it with --sink raw");
    }
    if a.against_h5py && a.sink.as_deref() != Some("hdf5") {
        bail!("--against h5py compares the HDF5 sink: use it with --sink hdf5");
    }
    if a.against_gs_mpiio && a.sink.as_deref() != Some("hdf5") {
        bail!("--against gs-mpiio compares a run writing HDF5: use it with --sink hdf5");
    }
    if a.ranks.is_some() && !a.against_gs_mpiio {
        bail!("--ranks is --against gs-mpiio's: use it with it");
    }
    if a.bin.is_some() && !a.against_gs_mpiio && !a.python {
        bail!("--bin is for --against gs-mpiio and --python: use it with one of them");
    }
    if a.python && (a.sink.is_some() || a.micro || a.reserve_cost || a.kernel || a.checkpoint_cost || a.analysis_cost) {
        bail!("--python is a benchmark of its own: run it without the other benchmarks");
    }
    if a.python != a.python_bin.is_some() {
        bail!("--python and --python-bin PY go together: PY is a Python with the wgpipe package installed");
    }
    if a.ranks == Some(0) {
        bail!("--ranks 0: give gs-mpiio at least one MPI rank");
    }
    Ok(())
}

/// Errors unless exactly one benchmark is chosen, with only its own options.
fn check_benchmark(a: &Args) -> Result<()> {
    if a.layout_cost && (a.sink.is_some() || a.micro || a.reserve_cost || a.kernel) {
        bail!("--layout-cost is a benchmark of its own: run it without --sink, --micro, --reserve-cost and --kernel");
    }
    if a.reserve_cost && (a.sink.is_some() || a.micro) {
        bail!("--reserve-cost is a benchmark of its own: run it without --sink and --micro");
    }
    if a.checkpoint_cost && (a.sink.is_some() || a.micro || a.reserve_cost || a.kernel) {
        bail!(
            "--checkpoint-cost is a benchmark of its own: run it without --sink, --micro, --reserve-cost and --kernel"
        );
    }
    if a.analysis_cost && (a.sink.is_some() || a.micro || a.reserve_cost || a.checkpoint_cost || a.kernel) {
        bail!("--analysis-cost is a benchmark of its own: run it without the other benchmarks");
    }
    if a.zfp_device
        && (a.sink.is_some() || a.micro || a.reserve_cost || a.checkpoint_cost || a.analysis_cost || a.kernel)
    {
        bail!("--zfp-device is a benchmark of its own: run it without the other benchmarks");
    }
    if a.zfp_device && !matches!(a.compression, Compression::None | Compression::ZfpRate(_)) {
        bail!("--zfp-device compares ZFP fixed rate: give --compression zfp:rate=R (or none for rate 8)");
    }
    if a.kernel && (a.sink.is_some() || a.micro || a.reserve_cost) {
        bail!("--kernel is a benchmark of its own: run it without --sink, --micro and --reserve-cost");
    }
    if a.large && !a.kernel {
        bail!("--large adds grids to the kernel bench: add --kernel or --roofline");
    }
    if a.large && (a.rows.is_some() || a.cols.is_some()) {
        bail!("--large adds the large grids, which --rows/--cols leave out: drop --rows/--cols");
    }
    if (!a.candidate.is_empty() || !a.candidate_3d.is_empty()) && !a.kernel {
        bail!("--candidate and --candidate-3d name a shader for the kernel bench: add --kernel");
    }
    if !a.candidate_3d.is_empty() && (a.rows.is_some() || a.cols.is_some()) {
        bail!("--candidate-3d runs on the 3-D cases, which --rows/--cols leave out: drop --rows/--cols");
    }
    if a.sink.is_none()
        && !a.micro
        && !a.reserve_cost
        && !a.layout_cost
        && !a.checkpoint_cost
        && !a.analysis_cost
        && !a.zfp_device
        && !a.kernel
        && !a.python
        && !a.help
    {
        bail!(
            "choose what to measure: --sink null|raw|hdf5|zarr, --kernel, --micro, --reserve-cost, --layout-cost, --checkpoint-cost, \
             --analysis-cost, --zfp-device or --python\n\n{USAGE}"
        );
    }
    Ok(())
}

/// `text` as the whole number `flag` expects (shared with `cargo xtask soak`).
pub(crate) fn number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T> {
    text.parse().ok().with_context(|| format!("{flag} expects a whole number, got {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Args> {
        parse(&s.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
    }

    #[test]
    fn parses_flags_and_rejects_nonsense() -> Result<()> {
        let a = args("--sink raw --rows 64 --cols=32 --frames 4 --io-buffer 0 --sweep --out /dev/shm")?;
        assert_eq!(a.sink.as_deref(), Some("raw"));
        assert_eq!((a.rows, a.cols, a.frames, a.io_buffer), (Some(64), Some(32), Some(4), 0));
        assert!(a.sweep);
        assert!(args("--sink tape").is_err());
        assert!(args("--sink null --sweep").is_err());
        assert!(args("--sink null --rows x").is_err());
        assert!(args("--sink null --rows").is_err());
        assert!(args("").is_err());
        assert!(args("--micro").is_ok());
        assert!(args("--reserve-cost --out /dev/shm").is_ok_and(|a| a.reserve_cost));
        assert!(args("--reserve-cost --sink hdf5").is_err());
        let a = args("--sink hdf5 --compression deflate:6 --compare-threads 1,2 --compression-threads 3")?;
        assert_eq!((a.compare_threads, a.compression_threads), (Some((1, 2)), 3));
        assert!(args("--sink hdf5 --compare-threads 1,2").is_err());
        assert!(args("--sink raw --against posix").is_ok_and(|a| a.against_posix));
        assert!(args("--sink hdf5 --compare-dtype").is_ok_and(|a| a.compare_dtype));
        assert!(args("--sink null --compare-dtype").is_err());
        assert!(args("--sink raw --compare-dtype --sweep").is_err());
        assert!(args("--sink hdf5 --against posix").is_err());
        assert!(args("--sink raw --against dd").is_err());
        assert!(args("--sink hdf5 --against h5py").is_ok_and(|a| a.against_h5py && !a.against_posix));
        assert!(
            args("--sink hdf5 --against gs-mpiio --ranks 4").is_ok_and(|a| a.against_gs_mpiio && a.ranks == Some(4))
        );
        assert!(args("--sink hdf5 --ranks 4").is_err());
        assert!(args("--sink raw --against gs-mpiio").is_err());
        assert!(args("--sink hdf5 --against gs-mpiio --ranks 0").is_err());
        assert!(args("--sink raw --against h5py").is_err());
        assert!(args("--sink hdf5 --compression deflate --compare-threads 2").is_err());
        assert!(args("--sink hdf5 --compression deflate --compression-threads 0").is_err());
        let a = args("--kernel --reps 7 --candidate gs.wgsl")?;
        assert!(a.kernel && a.reps == 7 && a.candidate == [PathBuf::from("gs.wgsl")]);
        assert!(args("--kernel --sink null").is_err());
        assert!(args("--candidate gs.wgsl --micro").is_err());
        assert!(args("--kernel --candidate-3d gs3.wgsl").is_ok_and(|a| a.candidate_3d.len() == 1));
        assert!(args("--kernel --candidate-3d a.wgsl --candidate-3d b.wgsl").is_ok_and(|a| a.candidate_3d.len() == 2));
        assert!(args("--kernel --candidate-3d gs3.wgsl --rows 64").is_err());
        let a = args("--python --python-bin .venv/bin/python --bin target/release/wgpipe --reps 3")?;
        assert!(a.python && a.python_bin.as_deref() == Some(".venv/bin/python") && a.bin.is_some());
        assert!(args("--python").is_err(), "needs the Python that has the package");
        assert!(args("--python-bin py --sink raw").is_err());
        assert!(args("--python --python-bin py --sink raw").is_err());
        Ok(())
    }
}
