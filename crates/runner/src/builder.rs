//! The pipeline builder: the few calls an embedding application makes. `build` checks
//! everything once into a plan (`plan.rs`) and hands it to the [`Pipeline`], which only
//! reads it.

use std::sync::Arc;

use wgpipe_compute::{
    DeviceSelector, GpuDevice, Grid, KernelSpec, OutputDType, gray_scott, gray_scott_3d, open_devices,
};
use wgpipe_storage::{AttrValue, Attributes, FieldSpec, Sink};

use crate::analysis::Analysis;
use crate::error::{Error, Result};
use crate::job::{Job, Work};
use crate::pipeline::Pipeline;
use crate::plan::Draft;
use crate::report::IoMode;
use crate::run_state::StopHandle;
use crate::settings::Settings;
use crate::sizes::DeviceSize;

/// The most times one adapter may be opened (`devices(selector, count)`, `devices.count`):
/// each copy is a device and a thread, and far fewer already share one GPU's time.
pub const MAX_DEVICE_COPIES: usize = 1024;

/// Which devices to run on.
enum Devices {
    Select(DeviceSelector, usize),
    Opened(Vec<GpuDevice>),
}

impl Devices {
    /// Errors unless each adapter is opened 1 to [`MAX_DEVICE_COPIES`] times.
    fn check(&self) -> Result<()> {
        match self {
            Devices::Select(_, count) if !(1..=MAX_DEVICE_COPIES).contains(count) => {
                Err(Error::Invalid(format!("devices(.., {count}): open each adapter 1 to {MAX_DEVICE_COPIES} times")))
            }
            _ => Ok(()),
        }
    }

    /// The devices, opened if the builder was given a selection.
    fn open(self) -> Result<Vec<GpuDevice>> {
        match self {
            Devices::Select(selector, count) => Ok(open_devices(&selector, count)?),
            Devices::Opened(gpus) if gpus.is_empty() => Err(Error::Invalid(
                "no devices given: pass .gpus(..) at least one opened device, or select adapters with .devices(..)"
                    .to_owned(),
            )),
            Devices::Opened(gpus) => Ok(gpus),
        }
    }
}

impl Pipeline {
    /// Starts configuring a pipeline.
    pub fn builder() -> PipelineBuilder {
        PipelineBuilder::default()
    }
}

/// Configures a [`Pipeline`]; see the crate docs for an example.
pub struct PipelineBuilder {
    devices: Devices,
    settings: Settings,
    work: Option<Work>,
    sink: Option<Box<dyn Sink>>,
}

impl Default for PipelineBuilder {
    fn default() -> Self {
        PipelineBuilder {
            devices: Devices::Select(DeviceSelector::All, 1),
            settings: Settings::default(),
            work: None,
            sink: None,
        }
    }
}

impl PipelineBuilder {
    /// Runs on the adapters `selector` picks, each opened `count` times (default: all, once).
    pub fn devices(mut self, selector: DeviceSelector, count: usize) -> Self {
        self.devices = Devices::Select(selector, count);
        self
    }

    /// Runs on devices the caller opened.
    pub fn gpus(mut self, gpus: Vec<GpuDevice>) -> Self {
        self.devices = Devices::Opened(gpus);
        self
    }

    /// The grid's shape in C order, slowest axis first: `[nx]`, `[ny, nx]` or `[nz, ny, nx]`
    /// (default `[256, 256]`). The kernels' rank must match; `build` checks the shape.
    pub fn shape(mut self, shape: impl Into<Vec<usize>>) -> Self {
        self.settings.shape = shape.into();
        self
    }

    /// A 2-D grid of `rows × cols`: the same as `.shape([rows, cols])`.
    pub fn grid(self, rows: usize, cols: usize) -> Self {
        self.shape([rows, cols])
    }

    /// Frames per stream (default 10).
    pub fn frames(mut self, frames: u64) -> Self {
        self.settings.frames = frames;
        self
    }

    /// Kernel steps between frames (default 32).
    pub fn steps_per_frame(mut self, steps: u32) -> Self {
        self.settings.steps_per_frame = steps;
        self
    }

    /// Staging buffers in each device's readback ring (default 2).
    pub fn staging_buffers(mut self, n: usize) -> Self {
        self.settings.staging_buffers = n;
        self
    }

    /// Threads each device copies its frames out of staging on, on every adapter (default: on
    /// a GPU the cores shared among the devices and the writer, at most 8; on a CPU adapter
    /// one, since its compute takes the cores).
    pub fn copy_threads(mut self, n: usize) -> Self {
        self.settings.copy_threads = Some(n);
        self
    }

    /// Capacity of the channel between devices and writer (0 = rendezvous). Default: 2 in
    /// the async and sync modes; in the auto mode up to [`crate::tuning::AUTO_IO_BUFFER`] as
    /// host memory allows, of which the run uses what its measurements ask for.
    pub fn io_buffer(mut self, n: usize) -> Self {
        self.settings.io_buffer = Some(n);
        self
    }

    /// How frames reach the sink: [`IoMode::Auto`] (default: measured and chosen), async or
    /// sync.
    pub fn mode(mut self, mode: IoMode) -> Self {
        self.settings.mode = mode;
        self
    }

    /// Fields each frame holds (default: every field of the kernel; `v` for Gray-Scott).
    pub fn fields<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Self {
        self.settings.fields = Some(fields.into_iter().map(Into::into).collect());
        self
    }

    /// The element type kernels' fields are stored as (default f32). The kernels compute in
    /// f32 either way; [`OutputDType::F16`] converts each frame on the GPU, so readback,
    /// channel and sink move half the bytes. Frame sources give their own types in
    /// [`PipelineBuilder::frame_layout`].
    pub fn output_dtype(mut self, dtype: OutputDType) -> Self {
        self.settings.output_dtype = dtype;
        self
    }

    /// Compresses the kernels' fields on the device, after each frame's steps and analysis, as
    /// ZFP fixed-rate streams of `rate` bits per value, and reads back only those: a frame
    /// moves `rate`/32 of its f32 bytes from the GPU to the disk. The sink must store encoded
    /// fields ([`wgpipe_storage::Encoding::Zfp`]: the hdf5 sink, as H5Z-ZFP chunks every reader
    /// with the ZFP filter decodes). f32 kernel fields only; not for a split domain.
    pub fn zfp_on_device(mut self, rate: wgpipe_compute::zfp::ZfpRate) -> Self {
        self.settings.zfp_on_device = Some(rate);
        self
    }

    /// Reductions of the kernel's fields computed on the device in each frame's command
    /// buffer, before readback, and stored beside the fields ([`Analysis`] lists them and
    /// their names). Kernels only: a frame source computes its own frames.
    pub fn analysis(mut self, analysis: Analysis) -> Self {
        self.settings.analysis = analysis;
        self
    }

    /// Whether the report's compute time comes from GPU timestamp queries on devices that
    /// have `TIMESTAMP_QUERY` (default true); false measures it on the host everywhere.
    pub fn gpu_timestamps(mut self, on: bool) -> Self {
        self.settings.gpu_timestamps = on;
        self
    }

    /// One stream per device, each running `kernel` from `init(stream, grid)`; device d's
    /// kernel keys the prelude's `uniform_noise` with `kernel.seed + d`, so streams differ.
    pub fn kernel(
        mut self,
        kernel: KernelSpec,
        init: impl Fn(usize, &Grid) -> Vec<f32> + Send + Sync + 'static,
    ) -> Self {
        let name = kernel.name.clone();
        self.work = Some(Work::PerDevice {
            kernel,
            init: Arc::new(init),
            attributes: Arc::new(move |_| Attributes::from([("kernel".to_owned(), AttrValue::from(name.as_str()))])),
        });
        self
    }

    /// One Gray-Scott stream per device, device d seeded with `seed + d` (wrapping past
    /// `u64::MAX`; the seed each stream used is the one it records), storing `v`
    /// unless [`PipelineBuilder::fields`] says otherwise.
    pub fn gray_scott(mut self, params: gray_scott::GrayScottParams, seed: u64, noise: f32) -> Self {
        self.work = Some(Work::PerDevice {
            kernel: params.kernel(),
            init: Arc::new(move |d, grid: &Grid| {
                gray_scott::initial_state(grid.ny(), grid.nx(), seed.wrapping_add(d as u64), noise)
            }),
            attributes: Arc::new(move |d| gray_scott_attributes(&params, seed.wrapping_add(d as u64), noise)),
        });
        if self.settings.fields.is_none() {
            self.settings.fields = Some(vec!["v".to_owned()]);
        }
        self
    }

    /// One stream per device of the 3-D Gray-Scott model of the ADIOS2 tutorial
    /// ([`gray_scott_3d`]), device d keying its noise with `seed + d`, storing `u` and `v`
    /// unless [`PipelineBuilder::fields`] says otherwise. Give it a 3-D grid with
    /// [`PipelineBuilder::shape`].
    pub fn gray_scott_3d(mut self, params: gray_scott_3d::GrayScott3dParams, seed: u64) -> Self {
        self.work = Some(Work::PerDevice {
            kernel: params.kernel(seed),
            init: Arc::new(|_, grid: &Grid| gray_scott_3d::initial_state(grid)),
            attributes: Arc::new(move |d| gray_scott_3d_attributes(&params, seed.wrapping_add(d as u64))),
        });
        if self.settings.fields.is_none() {
            self.settings.fields = Some(gray_scott_3d::FIELDS.iter().map(|f| (*f).to_owned()).collect());
        }
        self
    }

    /// The fields every frame of [`Job::from_source`] jobs holds, in order: name, element
    /// type and shape of each (what the sink stores; the source copies them into its staging
    /// buffer one after the other, each in C order).
    pub fn frame_layout(mut self, fields: Vec<FieldSpec>) -> Self {
        self.settings.frame_layout = Some(fields);
        self
    }

    /// A batch of jobs (one stream each) that the devices pull from a shared queue.
    pub fn jobs(mut self, jobs: Vec<Job>) -> Self {
        self.work = Some(Work::Jobs(jobs));
        self
    }

    /// Where frames go.
    pub fn sink(mut self, sink: impl Sink + 'static) -> Self {
        self.sink = Some(Box::new(sink));
        self
    }

    /// Adds a run-level metadata entry (stored as a file attribute).
    pub fn attribute(mut self, key: impl Into<String>, value: impl Into<AttrValue>) -> Self {
        self.settings.attributes.insert(key.into(), value.into());
        self
    }

    /// Uses `stop` to stop the run from elsewhere (e.g. a Ctrl-C handler).
    pub fn stop_handle(mut self, stop: StopHandle) -> Self {
        self.settings.stop = stop;
        self
    }

    /// Records a per-thread timeline of the run into the report's `spans`, for
    /// [`crate::chrome_trace`] (off by default).
    pub fn trace(mut self, on: bool) -> Self {
        self.settings.trace = on;
        self
    }

    /// Runs only shard `index` of `count` of the jobs: job `i` (in the order given to
    /// [`PipelineBuilder::jobs`]) runs here when `i % count == index`. The sink still receives
    /// the layout of every job, so that `count` processes that each run one shard (MPI ranks)
    /// can create the same shared output; stream ids stay those of the whole batch. Progress
    /// and the report count this shard only. Default: `(0, 1)`, every job.
    pub fn shard(mut self, index: usize, count: usize) -> Self {
        self.settings.shard = (index, count);
        self
    }

    /// Runs one grid split over the ranks of an MPI communicator (feature `mpi`): this
    /// process computes the block of the grid that `split` gives its rank, on one device,
    /// exchanging halos with the neighbouring ranks every step, and its sink receives its
    /// block of every frame (give it [`crate::split::SplitDomain::block_sink`], or a
    /// `NullSink`). The work is one field kernel ([`PipelineBuilder::gray_scott_3d`],
    /// [`PipelineBuilder::kernel`], or one kernel job) on the grid of `split`; the output is
    /// bit-identical to the same run in one process. Every rank builds and runs the same
    /// pipeline; they stop together (see [`crate::split`]).
    #[cfg(feature = "mpi")]
    pub fn split_domain(mut self, split: crate::split::SplitDomain) -> Self {
        self.settings.split = Some(split);
        self
    }

    /// Saves each stream's complete state with some of its frames into `checkpoints.dir`
    /// (see [`crate::checkpoint`]), so that a failed run can continue its streams from there
    /// ([`Job::resuming`]). Streams that complete delete their checkpoint.
    pub fn checkpoints(mut self, checkpoints: crate::checkpoint::Checkpoints) -> Self {
        self.settings.checkpoints = Some(checkpoints);
        self
    }

    /// Checks the configuration, validates the kernels and opens the devices, then checks
    /// every size against the devices, the sink and the host: each check runs once, and
    /// nothing is allocated or created before they all pass.
    pub fn build(self) -> Result<Pipeline> {
        let (draft, devices, sink) = self.draft()?;
        let gpus = devices.open()?;
        let plan = draft.plan(&gpus.iter().map(DeviceSize::of).collect::<Vec<_>>(), sink.as_ref())?;
        Ok(Pipeline::new(plan, gpus, sink))
    }

    /// Builds and runs.
    pub fn run(self) -> Result<crate::RunReport> {
        self.build()?.run()
    }

    /// The checks of [`PipelineBuilder::build`] on `count` devices that are not opened (their
    /// limits unknown): what the config module runs before any device opens.
    pub(crate) fn check_unopened(self, count: usize) -> Result<()> {
        let (draft, _, sink) = self.draft()?;
        draft.plan(&vec![DeviceSize::unopened(); count], sink.as_ref()).map(drop)
    }

    /// Everything checked before any device opens.
    fn draft(self) -> Result<(Draft, Devices, Box<dyn Sink>)> {
        let PipelineBuilder { devices, settings, work, sink } = self;
        devices.check()?;
        let Some(sink) = sink else {
            return Err(Error::Invalid(
                "no sink: call .sink(..) with a sink, e.g. wgpipe::storage::NullSink::default()".to_owned(),
            ));
        };
        let Some(work) = work else {
            return Err(Error::Invalid("no work: call .gray_scott(..), .kernel(..) or .jobs(..)".to_owned()));
        };
        Ok((Draft::new(settings, work)?, devices, sink))
    }
}

/// The attributes recorded with a Gray-Scott stream: kernel name, parameters, seed and noise.
pub fn gray_scott_attributes(params: &gray_scott::GrayScottParams, seed: u64, noise: f32) -> Attributes {
    let mut attributes = Attributes::from([
        ("kernel".to_owned(), AttrValue::from(gray_scott::NAME)),
        ("seed".to_owned(), AttrValue::from(seed)),
        ("noise".to_owned(), AttrValue::from(noise)),
    ]);
    for (name, value) in params.named() {
        attributes.insert(name.to_owned(), AttrValue::from(value));
    }
    attributes
}

/// The attributes recorded with a 3-D Gray-Scott stream: kernel name, parameters (`noise`
/// among them) and seed.
pub fn gray_scott_3d_attributes(params: &gray_scott_3d::GrayScott3dParams, seed: u64) -> Attributes {
    let mut attributes = Attributes::from([
        ("kernel".to_owned(), AttrValue::from(gray_scott_3d::NAME)),
        ("seed".to_owned(), AttrValue::from(seed)),
    ]);
    for (name, value) in params.named() {
        attributes.insert(name.to_owned(), AttrValue::from(value));
    }
    attributes
}
