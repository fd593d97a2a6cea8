//! The TOML layout of a run configuration: one struct per table, unknown keys refused.
//!
//! Every key has a default, so an empty file is a valid (Gray-Scott) run. Range checks live
//! in `validate.rs`, so that they can name the line or `--set` argument a value came from.
//!
//! The doc comments here are the user's reference: `cargo xtask codegen` turns them into
//! `docs/src/config-reference.md` (a test fails when that page is stale). A key's doc comment
//! says what it does, then in paragraphs of their own `Accepted values: ...` (unless its type
//! lists them: booleans and enums) and, where the model leaves its default unset or empty,
//! `Default: ...`. Types, defaults and enum values come from the code itself.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::de::{self, SeqAccess, Unexpected, Visitor};
use serde::{Deserialize, Deserializer};

/// A run configuration: the TOML file that `wgpipe run CONFIG` reads.
///
/// Every key is optional: an empty file is a valid run (the 2-D Gray-Scott model on 256 × 256
/// cells, 100 frames into `output.h5`), and without a file `wgpipe run` runs the built-in
/// `configs/gray-scott.toml`. A key this page does not list is an error that names the valid
/// keys of its table. `wgpipe run --set KEY=VALUE` sets a key on top of the file, the value
/// read as TOML, else as a bare string (`--set grid.shape=[64,64,64]`, `--set
/// output.sink=raw`; repeatable). Everything is checked before any GPU or file is touched, and
/// every error names the key, the line or `--set` it came from, and what is accepted.
///
/// Programs that embed wgpipe read the same files with `wgpipe::config::Config::load`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// What runs: a built-in model or your own WGSL shader, and its parameters.
    #[serde(default)]
    pub kernel: KernelSection,
    /// The grid every field lives on, and its split over MPI ranks.
    #[serde(default)]
    pub grid: GridSection,
    /// How many frames each stream stores, the steps between them, and the initial state.
    #[serde(default)]
    pub run: RunSection,
    /// Which GPU adapters compute, and how many devices each one opens.
    #[serde(default)]
    pub devices: DevicesSection,
    /// How frames travel from the devices to the sink.
    #[serde(default)]
    pub io: IoSection,
    /// Where and how frames are stored.
    #[serde(default)]
    pub output: OutputSection,
    /// Reductions of the kernel's fields computed on the device with each frame.
    #[serde(default)]
    pub analysis: AnalysisSection,
    /// A batch of named runs, each one a stream of the output with its own parameters, seed or noise.
    #[serde(default)]
    pub runs: Vec<RunEntry>,
    /// A batch over the cartesian product of parameter lists: `NAME = [values]` for each kernel
    /// parameter to vary, and `seed = [values]` to vary the seed.
    ///
    /// Each combination is one run and one stream of the output, named from its values in key
    /// order (`feed0.02_kill0.05`), the last key varying fastest; parameters not listed keep
    /// their `[kernel.params]` value. A sweep makes at most 100 000 runs, and a config holds
    /// either `[[runs]]` or a `[sweep]`, not both.
    ///
    /// Accepted values: a table whose keys are the kernel's parameter names or `seed`, each a
    /// non-empty array of finite numbers (whole numbers from 0 for `seed`).
    ///
    /// Default: no sweep: a single run, or the `[[runs]]` batch.
    #[serde(default)]
    pub sweep: Option<BTreeMap<String, Vec<f64>>>,
}

/// `[analysis]`: per-frame reductions of the kernel's fields, computed on the device in the
/// frame's command buffer before readback and stored beside the fields in every sink. For
/// each field `F` listed: `F_min`, `F_max`, `F_mean` and `F_sum` (one value per frame); with
/// `analysis.pdf_bins`, the PDF of each slice along the slowest axis, `F_pdf` (counts shaped
/// `[slices, bins]`) with its left bin edges `F_bins` (bins between the frame's min and max, as
/// the ADIOS2 Gray-Scott tutorial defines them); with `analysis.downsample`, `F_ds`, the field
/// averaged over blocks. See the guide's "Analysis" page.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AnalysisSection {
    /// The kernel's fields to reduce, stored or not.
    ///
    /// Accepted values: names of the kernel's fields, each once.
    ///
    /// Default: none: no analysis.
    pub fields: Vec<String>,
    /// Bins of each field's PDF per slice along the slowest axis (the tutorial uses 100).
    ///
    /// Accepted values: 0 (no PDF) to 2048, with `analysis.fields`.
    pub pdf_bins: u32,
    /// Downsample each field by this factor along every axis of the grid: each coarse cell
    /// is the mean of a k × k (× k) block (fewer cells at the far edges).
    ///
    /// Accepted values: 0 or 1 (none) up to the grid's longest axis, with `analysis.fields`.
    pub downsample: u32,
}

/// `[kernel]`: the kernel every stream runs, the 2-D Gray-Scott model unless this table
/// says otherwise.
///
/// Built in are `"gray-scott"` (2-D reaction-diffusion) and `"gray-scott-3d"` (the 3-D model
/// of the ADIOS2 tutorial, with u and v stored). A custom kernel is a WGSL step shader
/// (`kernel.wgsl`) with its field names (`kernel.fields`); its parameters are the members of
/// the shader's `struct Params`, set in `[kernel.params]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSection {
    /// The kernel's name: a built-in model, or with `kernel.wgsl` the name a custom kernel is
    /// reported and stored under.
    ///
    /// Accepted values: `"gray-scott"` (built in, 2-D) or `"gray-scott-3d"` (built in, 3-D, the
    /// ADIOS2 tutorial's model); with `kernel.wgsl`, any name.
    ///
    /// Default: `"gray-scott"`; with `kernel.wgsl`, the shader file's name without its extension.
    pub name: Option<String>,
    /// A custom kernel: the path of its WGSL step shader, relative to the config file's
    /// directory. It needs `kernel.fields`, and runs on grids of any rank.
    ///
    /// Accepted values: a path to a WGSL file written as a wgpipe kernel (validated when the
    /// config loads).
    ///
    /// Default: none: the built-in kernel `kernel.name` runs.
    pub wgsl: Option<PathBuf>,
    /// The field names of a custom kernel, in the order its shader lays them out. Each stored
    /// field keeps its name in the output (an HDF5 dataset, a raw file).
    ///
    /// Accepted values: names of letters, digits, `-`, `_` and `.` (not `.`, `..` or `steps`),
    /// only with `kernel.wgsl`.
    ///
    /// Default: none: a custom kernel needs it; the built-in kernels have the fields `u` and `v`.
    pub fields: Option<Vec<String>>,
    /// What the stencil sees beyond the grid's faces, for built-in and custom kernels alike.
    ///
    /// Accepted values: `"periodic"` (each face wraps around to the opposite one) or
    /// `"zero-flux"` (each face mirrors its cell: nothing flows across it).
    ///
    /// Default: `"periodic"`.
    pub boundary: Option<String>,
    /// The kernel's parameters by name, as `[kernel.params]` with `feed = 0.02` and so on. A
    /// built-in kernel's parameters not given keep their defaults; a custom kernel needs every
    /// member of its shader's `struct Params`.
    ///
    /// Accepted values: finite numbers, by name. `"gray-scott"`: `feed`, `kill`, `du`, `dv` and
    /// `dt`; `"gray-scott-3d"`: those and `noise` (added to u's rate each step, drawn from the
    /// seed, cell and step); a custom kernel: the members of its `struct Params`.
    ///
    /// Default: `"gray-scott"`: `feed = 0.014`, `kill = 0.054`, `du = 0.1`, `dv = 0.05`,
    /// `dt = 1.0`; `"gray-scott-3d"`: `feed = 0.01`, `kill = 0.05`, `du = 0.2`, `dv = 0.1`,
    /// `dt = 2.0`, `noise = 1e-7`.
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
}

/// `[grid]`: the grid every field lives on, in C order (the last axis varies fastest),
/// given as `shape` (rank 1 to 3) or, in 2-D, as `rows` and `cols`; not both. Without
/// either, 256 × 256.
///
/// A grid holds at most 2^32 − 1 cells, and its rank is the kernel's: 2 for `"gray-scott"`,
/// 3 for `"gray-scott-3d"`, any for a custom kernel.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GridSection {
    /// The grid's size along each axis, slowest axis first.
    ///
    /// Accepted values: `[nx]`, `[ny, nx]` or `[nz, ny, nx]`, each size 1 or more; not with
    /// `grid.rows` or `grid.cols`.
    ///
    /// Default: `[grid.rows, grid.cols]`, so `[256, 256]` when neither is given.
    pub shape: Option<Vec<usize>>,
    /// Rows of a 2-D grid: `rows` and `cols` are the 2-D spelling of `shape = [rows, cols]`.
    ///
    /// Accepted values: 1 or more; not with `grid.shape`.
    ///
    /// Default: 256.
    pub rows: Option<usize>,
    /// Columns of a 2-D grid (see `grid.rows`).
    ///
    /// Accepted values: 1 or more; not with `grid.shape`.
    ///
    /// Default: 256.
    pub cols: Option<usize>,
    /// `[pz, py, px]`: how many MPI ranks a single 3-D run is split over along z, y and x when
    /// it runs under `mpirun` (cargo feature `mpi`); each rank computes and stores its own block
    /// of the grid.
    ///
    /// Accepted values: three whole numbers, each from 1 to its axis's size, whose product is the
    /// number of ranks (1 without `mpirun`); only for a 3-D grid and a single run (no `[[runs]]`
    /// or `[sweep]`) with `kernel.boundary = "periodic"` and `output.dtype = "f32"`.
    ///
    /// Default: MPI chooses the split when a single 3-D run has more than one rank.
    pub decomposition: Option<Vec<usize>>,
}

/// The grid edge of the default 2-D grid.
pub const DEFAULT_GRID_EDGE: usize = 256;

/// `[run]`: how many frames each stream stores, the kernel steps between two frames, and
/// the initial state.
///
/// The 2-D Gray-Scott model starts from u = 1, v = 0, with the centred square (rows and
/// columns 2/5 to 3/5) at u = 0, v = 1. A custom kernel starts with every field 0 except the
/// last, which is 1 on that square (on the centred box of a 3-D grid). `run.noise` then adds
/// seeded uniform noise. The 3-D model starts from the ADIOS2 tutorial's cube, without
/// initial noise.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSection {
    /// Frames each stream stores.
    ///
    /// Accepted values: 1 or more.
    pub frames: u64,
    /// Kernel steps computed between two stored frames.
    ///
    /// Accepted values: 1 to 4294967295.
    pub steps_per_frame: u32,
    /// Seed of the initial noise (and of the 3-D model's noise). Stream `d` of a single run
    /// uses `seed + d`, so that the devices' streams differ; the runs of a batch use it unless
    /// they set their own.
    ///
    /// Accepted values: whole numbers from 0.
    pub seed: u64,
    /// Amplitude of the uniform noise added to the initial state (the result clamped to
    /// [0, 1]).
    ///
    /// Accepted values: a number from 0 to 1; 0 for `"gray-scott-3d"`, whose noise is
    /// `kernel.params.noise`.
    pub noise: f32,
    /// Save every stream's complete state (a checkpoint) with every N-th frame, so that
    /// `wgpipe run --resume` restarts an incomplete stream from its newest checkpoint
    /// instead of from frame 0. A checkpoint holds every field of the kernel, stored or not,
    /// at full precision, and the step; it is written beside the output after the frame it
    /// was taken with, replacing the previous one atomically. Off by default: a run of
    /// seconds gains nothing from it. See the guide's "Checkpoints and restart".
    ///
    /// Accepted values: 0 (none, unless `run.checkpoint = "auto"`) or more.
    pub checkpoint_every: u64,
    /// How the checkpoint interval is chosen: `"fixed"` uses `run.checkpoint_every`;
    /// `"auto"` measures the cost of one checkpoint (taken with the first frame) and the
    /// time per frame, then checkpoints every sqrt(2 × cost × `run.mtbf`) seconds (Young's
    /// interval, Daly's first-order optimum), rounded to whole frames.
    pub checkpoint: CheckpointMode,
    /// Mean time between failures, in seconds, that `run.checkpoint = "auto"` plans for:
    /// the longer, the rarer the checkpoints.
    ///
    /// Accepted values: a number above 0.
    pub mtbf: f64,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            frames: 100,
            steps_per_frame: 32,
            seed: 0,
            noise: 0.0,
            checkpoint_every: 0,
            checkpoint: CheckpointMode::Fixed,
            mtbf: 86400.0,
        }
    }
}

/// `run.checkpoint`: how the checkpoint interval is chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointMode {
    /// Every `run.checkpoint_every` frames (none when it is 0).
    #[default]
    Fixed,
    /// The interval of Young's formula (Daly's first-order optimum) from the measured
    /// checkpoint cost and `run.mtbf`.
    Auto,
}

/// `devices.select`: a selector string, one adapter index, or a list of indices.
#[derive(Debug, Clone, PartialEq)]
pub enum Select {
    /// `"all"` (each physical adapter once, hardware preferred: see `wgpipe devices`),
    /// `"all-backends"` (every adapter on every backend), a backend (`"vulkan"`, `"gl"`,
    /// `"metal"`, `"dx12"`), a list of indices such as `"0,1"`, or a part of an adapter's name.
    Text(String),
    /// One adapter index, as `wgpipe devices` lists them.
    Index(usize),
    /// Adapter indices, as `wgpipe devices` lists them, such as `[0, 1]`.
    Indices(Vec<usize>),
}

/// What `devices.select` accepts, as error messages list it.
pub(crate) const SELECT_ACCEPTS: &str = "\"all\" (each physical adapter once), \"all-backends\", a backend (\"vulkan\", \"gl\", \"metal\", \"dx12\"), a name \
     substring, an adapter index such as 0, or a list of indices such as [0, 1]";

/// An adapter index: a whole number from 0.
struct AdapterIndex(usize);

impl<'de> Deserialize<'de> for AdapterIndex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = AdapterIndex;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an adapter index (a whole number from 0, as `wgpipe devices` lists them)")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<AdapterIndex, E> {
                usize::try_from(v).map(AdapterIndex).map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<AdapterIndex, E> {
                u64::try_from(v)
                    .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
                    .and_then(|v| self.visit_u64(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// Deserialized by hand so that a wrong value gets a message listing what is accepted
/// (an untagged enum says only "data did not match any variant").
impl<'de> Deserialize<'de> for Select {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Select;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(SELECT_ACCEPTS)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Select, E> {
                Ok(Select::Text(v.to_owned()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Select, E> {
                usize::try_from(v).map(Select::Index).map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Select, E> {
                u64::try_from(v)
                    .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Select, A::Error> {
                let mut indices = Vec::new();
                while let Some(AdapterIndex(i)) = seq.next_element()? {
                    indices.push(i);
                }
                Ok(Select::Indices(indices))
            }
        }
        d.deserialize_any(V)
    }
}

/// `[devices]`: the GPU adapters that compute. Each selected adapter is opened `count`
/// times, and each opened device has its own thread: a single run stores one stream per
/// device, a batch hands its runs out to the devices as they become free.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DevicesSection {
    /// Which adapters compute. `wgpipe devices` lists the adapters wgpu sees, with their
    /// indices.
    pub select: Select,
    /// How many times each selected adapter is opened: each copy is a device with its own
    /// thread (and, in a single run, its own stream).
    ///
    /// Accepted values: 1 to 1024.
    pub count: usize,
}

impl Default for DevicesSection {
    fn default() -> Self {
        DevicesSection { select: Select::Text("all".to_owned()), count: 1 }
    }
}

/// `io.mode`: who stores the frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The run measures its first frames' compute and write times and chooses: a writer
    /// thread and how many frames may wait for it, or each device writing its own frames
    /// while the GPU computes the next (when writes are too short to be worth handing over);
    /// the summary says what it chose and why.
    #[default]
    Auto,
    /// A writer thread stores frames while the devices compute the next ones.
    Async,
    /// Each device thread stores its own frames between its steps (the baseline that shows
    /// what the writer thread saves).
    Sync,
}

/// `[io]`: how frames travel from the devices to the sink. The frames waiting and the
/// readback buffers take host memory, which the run checks before it starts.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IoSection {
    /// Who stores the frames: a writer thread beside the devices, or the devices' own threads.
    pub mode: Mode,
    /// Frames that may wait between the devices and the writer thread: room to absorb a slow
    /// write without stalling the GPUs, at the cost of host memory.
    ///
    /// Default: 8 in the auto mode, lowered until host memory holds them (the run uses as many
    /// as its slowest write asks for, at least 2); 2 in the async and sync modes.
    ///
    /// Accepted values: 0 or more (0 hands each frame over directly).
    pub io_buffer: Option<usize>,
    /// Staging buffers in each device's readback ring: how many frames may be on their way
    /// back from the GPU while it computes the next ones.
    ///
    /// Accepted values: 1 or more.
    pub staging_buffers: usize,
    /// Threads each device copies (and hashes) its frames out of its staging buffers on: one
    /// thread copies a few GB/s, which bounds the frames a second of large frames on a fast
    /// GPU. A frame gets one thread per 4 MiB of it at most.
    ///
    /// Default: on a GPU, the cores this process may run on shared among the devices and the
    /// writer (at most 8); on a CPU adapter one (its compute takes the cores).
    ///
    /// Accepted values: 1 or more.
    pub copy_threads: Option<usize>,
}

impl Default for IoSection {
    fn default() -> Self {
        IoSection { mode: Mode::Auto, io_buffer: None, staging_buffers: 2, copy_threads: None }
    }
}

/// `[output]`: where the frames are stored and how: the sink (an HDF5 file, a raw
/// directory, or nothing), which fields in which element type, compression and durability.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSection {
    /// The sink that stores the frames.
    ///
    /// Accepted values: `"hdf5"` (one HDF5 file, a group per stream), `"adios2"` (ADIOS2:
    /// BP5 files or an SST stream to live readers, see `output.engine`), `"zarr"` (a Zarr v3
    /// directory store, a group per stream and an array per field, read by zarr-python and
    /// xarray), `"raw"` (a directory of little-endian binary files, one per stream and field,
    /// with JSON metadata, readable with `numpy.fromfile`) or `"null"` (stores nothing and
    /// counts the frames: for measuring the pipeline).
    pub sink: String,
    /// Where the output goes: the HDF5 file, or the raw sink's or the Zarr store's directory,
    /// relative to the working directory. The null sink ignores it.
    ///
    /// Accepted values: a path whose parent directory exists; an existing output is refused
    /// unless `output.overwrite` replaces it (or `wgpipe run --resume` adds to it).
    pub path: PathBuf,
    /// Replace an existing output of the same kind at `output.path` instead of refusing to
    /// start.
    pub overwrite: bool,
    /// The fields stored per frame, a subset of the kernel's.
    ///
    /// Accepted values: a list of the kernel's field names (`"u"` and `"v"` for the built-in
    /// kernels); empty only with `analysis.fields`, to store the reductions alone.
    ///
    /// Default: `["v"]` for `"gray-scott"`; every field for `"gray-scott-3d"` and custom kernels.
    pub fields: Option<Vec<String>>,
    /// Store the fields of every k-th frame only (frames 0, k, 2k, ...), and the analysis's
    /// reductions of every frame. The reductions then go to an output of their own beside
    /// `output.path` (`NAME.analysis.EXT`: each output has one time axis); a frame's fields
    /// and reductions share its step. With `output.when`, a frame is kept when either keeps it.
    ///
    /// Accepted values: 1 (every frame) or more, with `analysis.fields`.
    ///
    /// Default: every frame's fields (unless `output.when` chooses).
    pub every: Option<u64>,
    /// Store a frame's fields only when this condition over its reductions holds (the
    /// reductions of every frame are stored, beside `output.path` as with `output.every`).
    ///
    /// Accepted values: a condition over the one-value reductions of `analysis.fields`
    /// (`F_min`, `F_max`, `F_mean`, `F_sum`) with numbers, `+ - * /`, `< <= > >= == !=`,
    /// `and`, `or`, `not` and parentheses, e.g. `"v_max > 0.3"`.
    ///
    /// Default: no condition (every frame's fields, unless `output.every` chooses).
    pub when: Option<String>,
    /// The element type the fields are stored as. Kernels compute in f32 either way; `"f16"`
    /// converts each frame on the GPU, halving the bytes read back, queued and written.
    ///
    /// Accepted values: `"f32"` (the values as computed) or `"f16"` (IEEE half precision, about 3
    /// significant digits); `"f32"` for a split grid (`grid.decomposition`).
    pub dtype: String,
    /// How the HDF5 and Zarr sinks compress their chunks. `LEVEL` runs from 1 to 9; without
    /// it, deflate uses 4, blosc-lz4 5, blosc-zstd and zstd 3. `gzip` is deflate's other name
    /// (Zarr's `gzip` codec). The HDF5 sink's blosc compressors need wgpipe built with cargo
    /// feature `blosc` (a build without it refuses them here); Zarr's blosc is always there.
    ///
    /// Accepted values: `"none"`, `"deflate"`, `"deflate:LEVEL"`, `"gzip"`, `"gzip:LEVEL"`,
    /// `"blosc-lz4"`, `"blosc-lz4:LEVEL"`, `"blosc-zstd"` or `"blosc-zstd:LEVEL"` (hdf5 and
    /// zarr); `"zstd"` or `"zstd:LEVEL"` (zarr only); `"zfp:accuracy=E"` (hdf5 and zarr,
    /// lossy: every f32/f64 value within E of the value computed, for finite values whose
    /// magnitude E does not undercut by more than the type's precision; HDF5 through its ZFP
    /// filter plugin, Debian's `hdf5-filter-plugin-zfp-serial`, Zarr through numcodecs' `zfpy`
    /// codec; other element types, and in HDF5 one-value arrays, stored as they are);
    /// `"zfp:rate=R"` (hdf5 and zarr, lossy: every f32 value takes R bits, 1 to 32, whatever
    /// the data, so R = 8 stores a quarter of the bytes; the error is not bounded, smooth
    /// fields lose least; see `output.compress_on`).
    pub compression: String,
    /// Where `"zfp:rate=R"` compresses the kernel's fields: `"device"` encodes them on the GPU
    /// after each frame's steps and analysis (which see the values as computed), so only R/32
    /// of the bytes are read back, queued and written; `"host"` reads the values back and the
    /// sink compresses them (HDF5's ZFP filter plugin, Zarr's zfpy codec). In HDF5 both store
    /// the same bytes where the host keeps a frame in one chunk (frames of a field up to 4 MiB;
    /// the device always does), which every ZFP reader decodes. The device stores to the hdf5
    /// sink (H5Z-ZFP chunks), the zarr sink (one frame a chunk of numcodecs' zfpy codec, which
    /// zarr-python and zarrs decode; not with `output.shard_frames`) and the raw sink (each
    /// frame's ZFP stream, which wgpipe's reader decodes), f32 fields; a grid split over MPI
    /// ranks only to the zarr sink, each rank encoding its block into its chunk, where every
    /// block has one shape (the decomposition divides each axis). `"auto"` picks it there and
    /// the host elsewhere (the raw sink then stores values: it has no compression of its own),
    /// and the run says which. Other compressions ignore it.
    ///
    /// Accepted values: `"auto"`, `"device"` or `"host"`.
    pub compress_on: String,
    /// Frames per HDF5 chunk. 1 writes each frame as whole chunks, the fastest and the most
    /// crash-proof. With compression, more frames per chunk make the file larger while it is
    /// written, not smaller: a chunk is compressed again with each frame and every earlier
    /// version stays in the file (about 2.5 times at 4 frames per chunk), so that a kill never
    /// finds it half overwritten; keep 1. An uncompressed file packs the
    /// frames of a field smaller than 4 KiB a frame (a one-value reduction, say) into chunks of
    /// about 4 KiB, as it lays every chunk out when the run starts. The raw sink has no chunks; the
    /// Zarr sink stores one frame per chunk (see `output.shard_frames`) and refuses other values.
    ///
    /// Accepted values: 1 or more, with one chunk (`chunk_frames` × one field's part of a frame)
    /// under 2^32 values and 2^32 bytes.
    pub chunk_frames: usize,
    /// Frames per Zarr shard file. 1 stores each frame of each field as its own chunk file;
    /// more groups that many frames into one shard (Zarr's sharding codec, one frame per inner
    /// chunk): fewer files, at the cost of rewriting the shard, atomically, with every frame.
    /// zarr only.
    ///
    /// Accepted values: 1 or more.
    pub shard_frames: usize,
    /// The ADIOS2 engine: BP5 writes a directory at `output.path` read by `bpls` and the
    /// `adios2` Python API; SST streams every frame to readers running at the same time
    /// (`output.path` names the stream; readers open its contact file `PATH.sst`). adios2
    /// only.
    ///
    /// Accepted values: `"BP5"` or `"SST"`.
    pub engine: String,
    /// Frames an SST writer keeps for readers that have not taken them. adios2 SST only.
    ///
    /// Accepted values: 0 (no limit) or more.
    pub queue_limit: usize,
    /// What an SST writer does when `output.queue_limit` frames wait: `"block"` waits for the
    /// readers (backpressure into the pipeline: nothing is lost, the devices slow down),
    /// `"discard"` drops the oldest frame (the run never waits, readers miss frames).
    /// adios2 SST only.
    ///
    /// Accepted values: `"block"` or `"discard"`.
    pub queue_full_policy: String,
    /// Seconds an SST writer waits for its first reader before the run fails. adios2 SST only.
    ///
    /// Accepted values: 1 or more.
    pub open_timeout: u64,
    /// Threads compressing each frame's HDF5 chunks at once with `"deflate"` (and
    /// `chunk_frames = 1`); 1 compresses on the writer thread alone. With blosc, the size of
    /// c-blosc's own thread pool (one setting per process).
    ///
    /// Accepted values: 1 or more.
    ///
    /// Default: the machine's cores, at most 4.
    pub compression_threads: Option<usize>,
    /// Force the output to stable storage (fsync) when the run ends, so that a finished run
    /// survives a power cut; costs the time the disk needs to absorb the page cache.
    pub fsync: bool,
    /// Also write an XDMF description, `OUT.xdmf` beside `OUT.h5`, when the run ends, so that
    /// ParaView and VisIt open the output. hdf5 only.
    pub xdmf: bool,
    /// Single-writer/multiple-reader mode (HDF5 SWMR): readers can open the file and follow
    /// the frames while the run writes them. hdf5 only; not with `wgpipe run --resume`.
    pub swmr: bool,
}

impl Default for OutputSection {
    fn default() -> Self {
        OutputSection {
            sink: "hdf5".to_owned(),
            path: PathBuf::from("output.h5"),
            overwrite: false,
            fields: None,
            every: None,
            when: None,
            dtype: "f32".to_owned(),
            compression: "none".to_owned(),
            compress_on: "auto".to_owned(),
            chunk_frames: 1,
            shard_frames: 1,
            engine: "BP5".to_owned(),
            queue_limit: 0,
            queue_full_policy: "block".to_owned(),
            open_timeout: 60,
            compression_threads: None,
            fsync: false,
            xdmf: false,
            swmr: false,
        }
    }
}

/// `[[runs]]`: one entry is one named run of a batch, stored as one stream of the output,
/// with the file's `[kernel.params]`, `run.seed` and `run.noise` except where it overrides
/// them.
///
/// The devices take the runs from a shared queue. A config holds `[[runs]]` or a `[sweep]`,
/// not both, and at most 100 000 runs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunEntry {
    /// The run's name: the name of its stream in the output (an HDF5 group, the raw sink's
    /// file prefix).
    ///
    /// Accepted values: letters, digits, `-`, `_` and `.`, not `.` or `..`; unique in the batch.
    pub name: String,
    /// This run's `[kernel.params]` overrides (`kernel.params.feed = 0.03` in the entry).
    #[serde(default)]
    pub kernel: RunKernel,
    /// This run's `run.seed` and `run.noise` overrides (`run.seed = 7` in the entry).
    #[serde(default)]
    pub run: RunOverrides,
}

/// `[[runs]].kernel`: this run's kernel parameters.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunKernel {
    /// Parameters replacing `[kernel.params]` entries for this run.
    ///
    /// Accepted values: finite numbers, by the kernel's parameter names (see `kernel.params`).
    ///
    /// Default: none: the run uses `[kernel.params]` as they are.
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
}

/// `[[runs]].run`: this run's seed and noise.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOverrides {
    /// This run's seed.
    ///
    /// Accepted values: whole numbers from 0.
    ///
    /// Default: `run.seed`.
    pub seed: Option<u64>,
    /// This run's initial noise amplitude.
    ///
    /// Accepted values: a number from 0 to 1.
    ///
    /// Default: `run.noise`.
    pub noise: Option<f32>,
}
