//! Run configurations: the TOML files `wgpipe run` reads, usable by embedders too.
//!
//! A [`Config`] is read from TOML (every key optional, unknown keys refused), with
//! `key=value` overrides applied on top, and checked completely before any GPU or file is
//! touched. Every error names the key and the line (or `--set` argument) it came from.
//! The key reference is docs/src/config-reference.md, generated from `model.rs`.
//!
//! ```
//! let config = wgpipe::config::Config::parse("inline", "[grid]\nshape = [32, 48]\n[output]\nsink = \"null\"", ".", &[])?;
//! assert_eq!(config.grid_shape(), [32, 48]);
//! assert!(config.runs().is_empty()); // a single run: one stream per device
//! # Ok::<(), wgpipe::config::ConfigError>(())
//! ```

mod batch;
mod decomposition;
mod kernel;
mod launch;
mod model;
#[cfg(feature = "mpi")]
mod mpi_sinks;
mod resume;
mod source;
mod validate;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use wgpipe_compute::zfp::ZfpRate;
use wgpipe_compute::{DeviceSelector, Grid, OutputDType};
use wgpipe_storage::{FieldSpec, Sink, SinkOptions, check_output, open_sink};

pub use crate::config_error::{ConfigError, Origin, Result};
pub use batch::{MAX_RUNS, RunSpec};
pub use kernel::{GRAY_SCOTT, GRAY_SCOTT_3D, ResolvedKernel};
pub use launch::Launch;
pub use model::{
    CheckpointMode, ConfigFile, DevicesSection, GridSection, IoSection, KernelSection, Mode, OutputSection, RunEntry,
    RunKernel, RunOverrides, RunSection, Select,
};

use crate::checkpoint::{self, Checkpoints, Interval};
use crate::thinning::{ThinnedSink, Thinning};
use crate::{Analysis, IoMode, Job, Pipeline, PipelineBuilder};
use source::Source;

/// The built-in default run: the text of `configs/gray-scott.toml`.
pub const DEFAULT_CONFIG: &str = include_str!("../../configs/gray-scott.toml");
/// The name the built-in default is reported under.
pub const DEFAULT_CONFIG_NAME: &str = "configs/gray-scott.toml (built-in default)";

/// The largest config file [`Config::load`] reads (configs are kilobytes; a sweep of many
/// `[[runs]]` stays far below).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The text of the config file `path`: a regular file of at most [`MAX_CONFIG_BYTES`], so that
/// `/dev/zero` or a FIFO is an error rather than a read that never ends.
fn read_config(path: &Path) -> Result<String> {
    let failed = |source| ConfigError::Read { path: path.to_owned(), source };
    let refuse = |message: String| failed(std::io::Error::new(std::io::ErrorKind::InvalidInput, message));
    let meta = std::fs::metadata(path).map_err(failed)?;
    if !meta.is_file() {
        return Err(refuse("not a regular file".to_owned()));
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(refuse(format!("{} bytes, more than a config's limit of {MAX_CONFIG_BYTES}", meta.len())));
    }
    let mut text = String::new();
    std::fs::File::open(path).and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_string(&mut text)).map_err(failed)?;
    Ok(text)
}

/// A checked run configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The keys as given (defaults filled in, overrides applied).
    pub file: ConfigFile,
    /// The kernel, its WGSL read and validated.
    pub kernel: ResolvedKernel,
    runs: Vec<RunSpec>,
    selector: DeviceSelector,
    sink_options: SinkOptions,
    fields: Vec<String>,
    shape: Vec<usize>,
    /// `grid.decomposition`, checked against the grid and kernel.
    decomposition: Option<Vec<usize>>,
    source: Source,
    dtype: OutputDType,
    /// `output.compress_on` resolved: the ZFP rate the device encodes at, or `None`.
    zfp_on_device: Option<ZfpRate>,
    /// What compresses the output where, for the summary and the run's attributes.
    compression_note: Option<String>,
    /// `output.every` and `output.when`.
    thinning: Thinning,
}

impl Config {
    /// Reads `path` (or the built-in default when `None`) with `sets` (`key=value`) applied.
    pub fn load(path: Option<&Path>, sets: &[String]) -> Result<Self> {
        match path {
            None => Config::parse(DEFAULT_CONFIG_NAME, DEFAULT_CONFIG, ".", sets),
            Some(p) => {
                let text = read_config(p)?;
                let base = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
                Config::parse(&p.display().to_string(), &text, base, sets)
            }
        }
    }

    /// Reads TOML `text` (named `name` in messages); relative WGSL paths resolve against
    /// `base_dir`.
    pub fn parse(name: &str, text: &str, base_dir: impl AsRef<Path>, sets: &[String]) -> Result<Self> {
        let (file, source) = source::parse(name, text, sets)?;
        validate::check(&file, &source)?;
        let shape = validate::grid_shape(&file, &source)?;
        let kernel = ResolvedKernel::resolve(&file.kernel, shape.len(), base_dir.as_ref(), &source)?;
        let require_all = matches!(kernel, ResolvedKernel::Custom { .. });
        kernel.check_params(&file.kernel.params, "kernel.params", require_all, &source)?;
        let fields = checked_fields(&file, &kernel, &source)?;
        let runs = batch::expand(&file, &kernel, &source)?;
        check_noise(&file, &kernel, &runs, &source)?;
        let decomposition = decomposition::check(&file, &shape, &kernel, &runs, &source)?;
        let selector = validate::selector(&file, &source)?;
        let compression = validate::compression(&file, &source)?;
        let given = file.grid.decomposition.as_deref().map(|parts| (shape.as_slice(), parts));
        let (zfp_on_device, compression_note) = validate::zfp_on_device(&file, &source, compression, given)?;
        let sink_options = validate::sink_options(&file, &source, compression)?;
        let dtype = validate::output_dtype(&file, &source)?;
        let thinning = validate::thinning(&file, &source)?;
        let config = Config {
            file,
            kernel,
            runs,
            selector,
            sink_options,
            fields,
            shape,
            decomposition,
            source,
            dtype,
            zfp_on_device,
            compression_note,
            thinning,
        };
        config.check_reductions_path()?;
        config.check_plan()?;
        Ok(config)
    }

    /// Errors unless the reductions of a thinned run (`output.every`, `output.when`) have
    /// a path beside the output: one named after the output's file or directory name.
    fn check_reductions_path(&self) -> Result<()> {
        if !self.thinning.thins() || self.sink_name() == "null" || self.analysis_output_path().is_some() {
            return Ok(());
        }
        Err(self.source.invalid(
            "output.path",
            format!(
                "{}: with output.every or output.when the reductions go beside the output, named after it: give a \
                 path that ends in a name",
                self.output_path().display()
            ),
        ))
    }

    /// The pipeline's plan of this config, checked before any device opens, on the
    /// `devices.count` devices each selected adapter gives at least (their limits are checked
    /// by [`Config::build`] once they are open): sizes, the sink's limits, host memory.
    fn check_plan(&self) -> Result<()> {
        let count = self.file.devices.count;
        let sink = self.open_sink(false).map_err(|e| self.source.invalid("output.sink", e.to_string()))?;
        let builder = self.builder().jobs(self.jobs(count, |_| false)).sink(sink);
        builder.check_unopened(count).map_err(|e| self.locate(e))
    }

    /// Builds `builder`, which [`Config::builder`] made and the caller gave devices, jobs and
    /// a sink: the pipeline's checks against the opened devices (their limits, the host memory
    /// they need together) run once, and an error names the config key to change and where it
    /// was set.
    pub fn build(&self, builder: PipelineBuilder) -> Result<Pipeline> {
        builder.build().map_err(|e| self.locate(e))
    }

    /// Checks, changing nothing, that the output can be written at `output.path` (its
    /// directory exists; an existing output is refused unless `output.overwrite` replaces it
    /// or `append`, what `--resume` does, adds to it). The sink checks again when it starts.
    pub fn check_output(&self, append: bool) -> Result<()> {
        for options in self.outputs() {
            check_output(self.sink_name(), &options.with_append(append))
                .map_err(|e| self.source.invalid("output.path", e.to_string()))?;
        }
        Ok(())
    }

    /// The sink of this config's output (`append`: adding to an existing one, what
    /// `--resume` does), creating nothing yet. With `output.every` or `output.when`, a
    /// [`ThinnedSink`] over two: the fields at `output.path`, the reductions at
    /// [`Config::analysis_output_path`]; `kept_fields` says, for streams that continue, how many
    /// frames the fields output keeps of each.
    pub fn open_sink(&self, append: bool) -> wgpipe_storage::Result<Box<dyn Sink>> {
        self.open_sink_resuming(append, BTreeMap::new())
    }

    /// [`Config::open_sink`] for a resumed run whose streams continue: `kept_fields` is how
    /// many frames the fields output keeps of each such stream (with `output.when` only the
    /// output knows).
    pub fn open_sink_resuming(
        &self,
        append: bool,
        kept_fields: BTreeMap<String, u64>,
    ) -> wgpipe_storage::Result<Box<dyn Sink>> {
        self.open_sink_with(append, kept_fields, (0, 1), |options| open_sink(self.sink_name(), &options))
    }

    /// [`Config::open_sink_resuming`] with each output's sink made by `open` from its options
    /// (under `mpirun`, a sink every rank shares), in the same order everywhere: the fields'
    /// output first, then the reductions'; `shard` is the process's share of the streams
    /// ([`ThinnedSink::with_shard`]; `(0, 1)`: all of them).
    pub fn open_sink_with(
        &self,
        append: bool,
        kept_fields: BTreeMap<String, u64>,
        shard: (usize, usize),
        mut open: impl FnMut(SinkOptions) -> wgpipe_storage::Result<Box<dyn Sink>>,
    ) -> wgpipe_storage::Result<Box<dyn Sink>> {
        let mut sinks = Vec::with_capacity(2);
        for options in self.outputs() {
            sinks.push(open(options.with_append(append))?);
        }
        match (sinks.pop(), sinks.pop()) {
            (Some(reductions), Some(fields)) => Ok(Box::new(
                ThinnedSink::new(fields, reductions, self.analysis(), self.thinning.clone())
                    .with_kept_fields(kept_fields)
                    .with_shard(shard.0, shard.1),
            )),
            (Some(only), None) => Ok(only),
            _ => Err(wgpipe_storage::Error::Usage("a config has one output or two")),
        }
    }

    /// The sink options of each output: `output.path`'s, then, when the run thins its fields
    /// (`output.every`, `output.when`), the reductions' beside it.
    fn outputs(&self) -> Vec<SinkOptions> {
        let mut outputs = vec![self.sink_options.clone()];
        if let Some(path) = self.analysis_output_path() {
            // No XDMF: the reductions are not fields on the grid.
            let mut reductions = self.sink_options.clone().with_xdmf(false);
            reductions.path = path;
            outputs.push(reductions);
        }
        outputs
    }

    /// `output.every` and `output.when`.
    pub fn thinning(&self) -> &Thinning {
        &self.thinning
    }

    /// Where the reductions of every frame go when the fields of only some frames are stored
    /// (`output.every`, `output.when`): beside `output.path`, `.analysis` before its
    /// extension (`out.h5` → `out.analysis.h5`, a raw directory `out` → `out.analysis`).
    /// `None`: the reductions, if any, share the fields' output.
    pub fn analysis_output_path(&self) -> Option<PathBuf> {
        if !self.thinning.thins() {
            return None;
        }
        let path = self.output_path();
        let name = path.file_name()?.to_string_lossy().into_owned();
        let sibling = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => format!("{stem}.analysis.{ext}"),
            _ => format!("{name}.analysis"),
        };
        Some(path.with_file_name(sibling))
    }

    /// Where the frames go, as a run's summary names it: `output.path`, and the reductions'
    /// output beside it when the run thins its fields ([`Self::analysis_output_path`]).
    pub fn shown_outputs(&self) -> String {
        let path = self.output_path();
        match self.analysis_output_path() {
            _ if self.sink_name() == "null" => "null sink (nothing stored)".to_owned(),
            Some(reductions) => {
                format!("{} (fields), {} (reductions of every frame)", path.display(), reductions.display())
            }
            None => path.display().to_string(),
        }
    }

    /// A pipeline error as a config error, at the key it is about.
    fn locate(&self, e: crate::Error) -> ConfigError {
        use crate::Error as E;
        let key = match &e {
            E::TooLarge { key, .. } => key,
            // A frame alone never passes HDF5's chunk limit (the sink splits it into chunks).
            E::Storage(wgpipe_storage::Error::ChunkTooLarge { .. }) => "output.chunk_frames",
            E::Compute(_) => "grid",
            // Names and fields are checked at their keys before; what is left is the sink's.
            _ => "output.sink",
        };
        self.source.invalid(key, e.to_string())
    }

    /// The runs of a batch (`[[runs]]` or `[sweep]`); empty for a single run.
    pub fn runs(&self) -> &[RunSpec] {
        &self.runs
    }

    /// Which adapters to open, and how many times each.
    pub fn devices(&self) -> (DeviceSelector, usize) {
        (self.selector.clone(), self.file.devices.count)
    }

    /// Sink name (`output.sink`).
    pub fn sink_name(&self) -> &str {
        &self.file.output.sink
    }

    /// Options for `wgpipe::storage::open_sink`.
    pub fn sink_options(&self) -> &SinkOptions {
        &self.sink_options
    }

    /// The grid's shape, slowest axis first (`grid.shape`, or `[grid.rows, grid.cols]`).
    pub fn grid_shape(&self) -> &[usize] {
        &self.shape
    }

    /// `grid.decomposition`: the MPI ranks along z, y and x a single 3-D run is split over,
    /// if the config chooses them.
    pub fn decomposition(&self) -> Option<&[usize]> {
        self.decomposition.as_deref()
    }

    /// Checks that `grid.decomposition`, if given, splits the grid over exactly `ranks`
    /// ranks (1 for a run without `mpirun`).
    pub fn check_ranks(&self, ranks: usize) -> Result<()> {
        let Some(parts) = &self.decomposition else {
            return Ok(());
        };
        let want: usize = parts.iter().product();
        if want == ranks {
            return Ok(());
        }
        Err(self.source.invalid(
            decomposition::KEY,
            format!(
                "{parts:?} splits the grid over {want} MPI ranks, and this run has {ranks}: start it with \
                 `mpirun -n {want}`, or change or remove {}",
                decomposition::KEY
            ),
        ))
    }

    /// Fields stored per frame.
    pub fn output_fields(&self) -> &[String] {
        &self.fields
    }

    /// Every array each frame of the output at `output.path` holds: the stored fields on the
    /// grid, then the analysis's reductions (`[analysis]`), as the pipeline lays them out;
    /// without the reductions when they have their own output ([`Config::reduction_fields`]).
    pub fn stored_fields(&self) -> Result<Vec<FieldSpec>> {
        let shape = self.grid_shape();
        let mut fields: Vec<FieldSpec> =
            self.fields.iter().map(|f| FieldSpec::new(f.clone(), self.stored_dtype(), shape)).collect();
        if !self.thinning.thins() {
            fields.extend(self.reduction_fields()?);
        }
        Ok(fields)
    }

    /// The analysis's reductions each frame holds, in layout order (none without `[analysis]`).
    pub fn reduction_fields(&self) -> Result<Vec<FieldSpec>> {
        let shape = self.grid_shape();
        let mut fields = Vec::new();
        let analysis = self.analysis();
        if !analysis.is_empty() {
            let grid = Grid::new(shape).map_err(|e| self.source.invalid("grid.shape", e.to_string()))?;
            let kernel = self.kernel.spec(&self.file.kernel.params, 0);
            let dims = FieldSpec::new("grid", self.stored_dtype(), shape).dims;
            let reductions = analysis
                .stored_fields(&kernel, &grid, &dims)
                .map_err(|e| self.source.invalid("analysis", e.to_string()))?;
            fields.extend(reductions);
        }
        Ok(fields)
    }

    /// `[analysis]` as the builder takes it.
    pub fn analysis(&self) -> Analysis {
        let a = &self.file.analysis;
        Analysis { fields: a.fields.clone(), pdf_bins: a.pdf_bins, downsample: a.downsample }
    }

    /// The ZFP rate the device encodes the fields at (`output.compression = "zfp:rate=R"`
    /// where `output.compress_on` resolves to the device), or `None`: the fields leave the
    /// device as values.
    pub fn zfp_on_device(&self) -> Option<ZfpRate> {
        self.zfp_on_device
    }

    /// Decides again where `zfp:rate=R` compresses, for the grid split over MPI ranks as
    /// `parts` (ranks along z, y and x; `mpirun` chose them where `grid.decomposition` is not
    /// given): the device encodes each rank's block for the zarr sink where the blocks share
    /// one shape; elsewhere `"auto"` compresses on the host and `"device"` is refused, naming
    /// the key.
    pub fn settle_split(&mut self, parts: [usize; 3]) -> Result<()> {
        let compression = self.sink_options.compression;
        let split = Some((self.shape.as_slice(), parts.as_slice()));
        let (zfp, note) = validate::zfp_on_device(&self.file, &self.source, compression, split)?;
        self.zfp_on_device = zfp;
        self.compression_note = note;
        Ok(())
    }

    /// How the output is compressed and where (`zfp:rate=8 on the device, ...`), or `None`
    /// when it is not: the run summary prints it and the output's run attributes record it.
    pub fn compression_note(&self) -> Option<&str> {
        self.compression_note.as_deref()
    }

    /// The element type the fields are computed into output as (`output.dtype`).
    pub fn output_dtype(&self) -> OutputDType {
        self.dtype
    }

    /// The storage type of the stored fields: what the output holds (`output.dtype`).
    pub fn stored_dtype(&self) -> wgpipe_storage::DType {
        crate::stored_dtype(self.dtype)
    }

    /// Where `key`'s value came from, for messages about it.
    pub fn origin(&self, key: &str) -> Origin {
        self.source.origin(key)
    }

    /// Stream names the run writes: the batch's run names, or `stream0..` for a single run
    /// on `devices` devices.
    pub fn stream_names(&self, devices: usize) -> Vec<String> {
        if self.runs.is_empty() {
            (0..devices).map(|d| format!("stream{d}")).collect()
        } else {
            self.runs.iter().map(|r| r.name.clone()).collect()
        }
    }

    /// The jobs of the run, leaving out streams `skip` names (a resumed batch's complete ones).
    ///
    /// A single run gives one job per device (`stream<d>`, seed `run.seed + d`), as
    /// [`PipelineBuilder::gray_scott`] does; a batch gives one job per run.
    pub fn jobs(&self, devices: usize, skip: impl Fn(&str) -> bool) -> Vec<Job> {
        let single: Vec<RunSpec>;
        let runs = if self.runs.is_empty() {
            let f = &self.file;
            single = self
                .stream_names(devices)
                .into_iter()
                .enumerate()
                .map(|(d, name)| RunSpec {
                    name,
                    params: f.kernel.params.clone(),
                    seed: f.run.seed + d as u64,
                    noise: f.run.noise,
                })
                .collect();
            &single
        } else {
            &self.runs
        };
        runs.iter()
            .filter(|r| !skip(&r.name))
            .map(|r| {
                let kernel = self.kernel.clone();
                let (seed, noise) = (r.seed, r.noise);
                let mut job = Job::new(r.name.clone(), self.kernel.spec(&r.params, seed), move |grid: &Grid| {
                    kernel.initial_state(grid, seed, noise)
                });
                job.attributes = self.kernel.attributes(&r.params, seed, noise);
                job
            })
            .collect()
    }

    /// Where and how often the run checkpoints (`run.checkpoint_every`, `run.checkpoint`),
    /// `None` when it does not: beside the output ([`checkpoint::dir_beside`]), synced as
    /// `output.fsync` says.
    pub fn checkpoints(&self) -> Option<Checkpoints> {
        let run = &self.file.run;
        let interval = match run.checkpoint {
            CheckpointMode::Auto => Interval::Auto { mtbf_seconds: run.mtbf },
            CheckpointMode::Fixed if run.checkpoint_every > 0 => Interval::Every(run.checkpoint_every),
            CheckpointMode::Fixed => return None,
        };
        let dir = checkpoint::dir_beside(&self.output_path());
        Some(Checkpoints::new(dir, interval).with_fsync(self.file.output.fsync))
    }

    /// A builder with grid, frames, steps, I/O, fields and checkpoints set; add devices, jobs
    /// and a sink.
    pub fn builder(&self) -> PipelineBuilder {
        let f = &self.file;
        let builder = match self.checkpoints() {
            Some(c) => Pipeline::builder().checkpoints(c),
            None => Pipeline::builder(),
        };
        let builder = match f.io.io_buffer {
            Some(n) => builder.io_buffer(n),
            None => builder,
        };
        let builder = match f.io.copy_threads {
            Some(n) => builder.copy_threads(n),
            None => builder,
        };
        let builder = match self.zfp_on_device {
            Some(rate) => builder.zfp_on_device(rate),
            None => builder,
        };
        let builder = match &self.compression_note {
            Some(note) => builder.attribute("compression", note.as_str()),
            None => builder,
        };
        builder
            .shape(self.shape.clone())
            .frames(f.run.frames)
            .steps_per_frame(f.run.steps_per_frame)
            .staging_buffers(f.io.staging_buffers)
            .mode(match f.io.mode {
                Mode::Auto => IoMode::Auto,
                Mode::Async => IoMode::Async,
                Mode::Sync => IoMode::Sync,
            })
            .fields(self.fields.clone())
            .output_dtype(self.dtype)
            .analysis(self.analysis())
            .attribute("config", self.source_name())
    }

    /// The file name (or built-in name) the config was read from.
    pub fn source_name(&self) -> String {
        self.source.name().to_owned()
    }

    /// The output path (`output.path`).
    pub fn output_path(&self) -> PathBuf {
        self.file.output.path.clone()
    }
}

/// The fields the output stores (`output.fields`, else the kernel's default), checked with
/// `analysis.fields` against the kernel's fields; `analysis.fields` lists each once.
fn checked_fields(file: &ConfigFile, kernel: &ResolvedKernel, source: &Source) -> Result<Vec<String>> {
    let fields = file.output.fields.clone().unwrap_or_else(|| kernel.default_output_fields());
    let all = kernel.fields();
    for (key, names) in [("output.fields", &fields), ("analysis.fields", &file.analysis.fields)] {
        if let Some(f) = names.iter().find(|f| !all.contains(f)) {
            return Err(source.invalid(key, format!("the kernel has no field {f:?}: choose from {}", all.join(", "))));
        }
    }
    let listed = &file.analysis.fields;
    if let Some((i, f)) = listed.iter().enumerate().find(|(i, f)| listed[..*i].contains(f)) {
        return Err(source.invalid("analysis.fields", format!("{f:?} is listed twice (at {i}): list each field once")));
    }
    Ok(fields)
}

/// Errors when the 3-D Gray-Scott model is given `run.noise` (in the file or a run of the
/// batch): it draws its own noise every step, from `kernel.params.noise`.
fn check_noise(file: &ConfigFile, kernel: &ResolvedKernel, runs: &[RunSpec], source: &Source) -> Result<()> {
    if !matches!(kernel, ResolvedKernel::GrayScott3d { .. }) {
        return Ok(());
    }
    let Some(noisy) = std::iter::once(file.run.noise).chain(runs.iter().map(|r| r.noise)).find(|n| *n != 0.0) else {
        return Ok(());
    };
    Err(source.invalid(
        "run.noise",
        format!(
            "{noisy}: the {GRAY_SCOTT_3D} model starts from its exact cube and draws its noise every step: set \
             kernel.params.noise instead (and run.noise = 0)"
        ),
    ))
}
