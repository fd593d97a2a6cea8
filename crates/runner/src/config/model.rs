//! The TOML layout of a run configuration: one struct per table, unknown keys refused.
//!
//! Every key has a default, so an empty file is a valid (Gray-Scott) run. Range checks live
//! in `validate.rs`, so that they can name the line or `--set` argument a value came from.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::de::{self, SeqAccess, Unexpected, Visitor};
use serde::{Deserialize, Deserializer};

/// A whole config file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// `[kernel]`: what runs.
    #[serde(default)]
    pub kernel: KernelSection,
    /// `[grid]`: the size of every field.
    #[serde(default)]
    pub grid: GridSection,
    /// `[run]`: frames, steps and the initial state.
    #[serde(default)]
    pub run: RunSection,
    /// `[devices]`: which adapters.
    #[serde(default)]
    pub devices: DevicesSection,
    /// `[io]`: how frames get to the sink.
    #[serde(default)]
    pub io: IoSection,
    /// `[output]`: where frames go.
    #[serde(default)]
    pub output: OutputSection,
    /// `[[runs]]`: a batch of named runs, each overriding some keys.
    #[serde(default)]
    pub runs: Vec<RunEntry>,
    /// `[sweep]`: a batch over the cartesian product of parameter lists.
    #[serde(default)]
    pub sweep: Option<BTreeMap<String, Vec<f64>>>,
}

/// `[kernel]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSection {
    /// `"gray-scott"` (built in, 2-D), `"gray-scott-3d"` (built in, 3-D), or the name of a
    /// custom kernel given by `wgsl`.
    pub name: Option<String>,
    /// Path of a custom step shader (relative to the config file's directory).
    pub wgsl: Option<PathBuf>,
    /// Field names of a custom kernel, in the shader's layout order.
    pub fields: Option<Vec<String>>,
    /// What the stencil sees beyond the grid's faces: `"periodic"` (default) or `"zero-flux"`.
    pub boundary: Option<String>,
    /// Parameters by name: for a custom kernel, the members of its `struct Params`.
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
}

/// `[grid]`: `shape = [nz, ny, nx]` (any rank from 1 to 3, C order), or the 2-D spelling
/// `rows`/`cols`; not both. Without any, 256 × 256.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GridSection {
    /// The shape, slowest axis first: `[nx]`, `[ny, nx]` or `[nz, ny, nx]`.
    pub shape: Option<Vec<usize>>,
    /// Rows of a 2-D grid (`shape = [rows, cols]`).
    pub rows: Option<usize>,
    /// Columns of a 2-D grid.
    pub cols: Option<usize>,
    /// `[pz, py, px]`: the MPI ranks along each axis when a single 3-D run is split over the
    /// ranks of `mpirun` (their product must be the rank count); without it MPI chooses.
    pub decomposition: Option<Vec<usize>>,
}

/// The grid edge of the default 2-D grid.
pub const DEFAULT_GRID_EDGE: usize = 256;

/// `[run]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSection {
    /// Frames per stream.
    pub frames: u64,
    /// Kernel steps between frames.
    pub steps_per_frame: u32,
    /// Seed of the initial noise (stream i of a single run uses seed + i).
    pub seed: u64,
    /// Amplitude of uniform noise added to the initial state, in [0, 1].
    pub noise: f32,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection { frames: 100, steps_per_frame: 32, seed: 0, noise: 0.0 }
    }
}

/// `devices.select`: a selector string, one adapter index, or a list of indices.
#[derive(Debug, Clone, PartialEq)]
pub enum Select {
    /// `"all"`, a backend, a list like `"0,1"` or a name substring.
    Text(String),
    /// One adapter index, as listed by `wgpipe devices`.
    Index(usize),
    /// Adapter indices as listed by `wgpipe devices`.
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

/// `[devices]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DevicesSection {
    /// Which adapters.
    pub select: Select,
    /// How many times each selected adapter is opened.
    pub count: usize,
}

impl Default for DevicesSection {
    fn default() -> Self {
        DevicesSection { select: Select::Text("all".to_owned()), count: 1 }
    }
}

/// `io.mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A writer thread stores frames while the devices compute.
    #[default]
    Async,
    /// Each device thread stores its own frames (the baseline).
    Sync,
}

/// `[io]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IoSection {
    /// Async or sync.
    pub mode: Mode,
    /// Frames that may wait between the devices and the writer (0 = hand over directly).
    pub io_buffer: usize,
    /// Staging buffers per device readback ring.
    pub staging_buffers: usize,
}

impl Default for IoSection {
    fn default() -> Self {
        IoSection { mode: Mode::Async, io_buffer: 2, staging_buffers: 2 }
    }
}

/// `[output]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSection {
    /// Sink name: one of `wgpipe::storage::SINK_NAMES`.
    pub sink: String,
    /// Output file (hdf5) or directory (raw), relative to the working directory.
    pub path: PathBuf,
    /// Replace an existing output.
    pub overwrite: bool,
    /// Fields stored per frame (default: `["v"]` for Gray-Scott, every field otherwise).
    pub fields: Option<Vec<String>>,
    /// Element type of the stored fields: `"f32"` (default) or `"f16"` (computed in f32,
    /// converted on the GPU: half the bytes read back and written).
    pub dtype: String,
    /// `"none"`, `"deflate"`, `"deflate:LEVEL"`, `"blosc-lz4"`, `"blosc-lz4:LEVEL"`, `"blosc-zstd"` or
    /// `"blosc-zstd:LEVEL"` (HDF5 only; blosc needs cargo feature `blosc`).
    pub compression: String,
    /// Frames per HDF5 chunk.
    pub chunk_frames: usize,
    /// Threads compressing a frame's HDF5 chunks at once with deflate (default: the
    /// machine's cores, up to 4; 1 compresses on the writer thread alone).
    pub compression_threads: Option<usize>,
    /// fsync the output when the run ends.
    pub fsync: bool,
    /// Write an XDMF sidecar (`OUT.xdmf`) for ParaView and VisIt (hdf5 only).
    pub xdmf: bool,
    /// Single-writer/multiple-reader mode: readers follow frames during the run (hdf5 only).
    pub swmr: bool,
}

impl Default for OutputSection {
    fn default() -> Self {
        OutputSection {
            sink: "hdf5".to_owned(),
            path: PathBuf::from("output.h5"),
            overwrite: false,
            fields: None,
            dtype: "f32".to_owned(),
            compression: "none".to_owned(),
            chunk_frames: 1,
            compression_threads: None,
            fsync: false,
            xdmf: false,
            swmr: false,
        }
    }
}

/// One `[[runs]]` entry: a named stream overriding parameters, seed or noise.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunEntry {
    /// Stream name in the output.
    pub name: String,
    /// `kernel.params.*` overrides.
    #[serde(default)]
    pub kernel: RunKernel,
    /// `run.seed` / `run.noise` overrides.
    #[serde(default)]
    pub run: RunOverrides,
}

/// `[[runs]].kernel`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunKernel {
    /// Parameters replacing `kernel.params` entries for this run.
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
}

/// `[[runs]].run`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOverrides {
    /// Seed for this run.
    pub seed: Option<u64>,
    /// Noise for this run.
    pub noise: Option<f32>,
}
