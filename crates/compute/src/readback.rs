//! The readback ring: frames leave the GPU through a few staging buffers, so the GPU computes
//! frame n+1 while the host copies frame n out.
//!
//! What computes a frame is a [`FrameSource`]: the built-in field simulation ([`FieldSim`],
//! through [`FrameProducer::new`]) is one; an application's own wgpu pipeline is another
//! ([`FrameProducer::from_source`]), and gets the same ring and the same overlap.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::analysis::AnalysisSpec;
use crate::analysis::reducer::FieldReducer;
use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::f16_pack::HalfPacker;
use crate::field_sim::FieldSim;
use crate::output_dtype::{FieldEncoding, OutputDType};
use crate::timestamps::FrameTimer;
use crate::zfp::packer::ZfpPacker;

/// Produces frames on the GPU: records the work of one frame into a command encoder and the
/// copy of its bytes into a staging buffer. [`FrameProducer`] submits what it records, maps the
/// staging buffer when the GPU is done and copies it out, keeping several frames in flight.
///
/// An implementation holds its own device resources (created from the [`GpuDevice`] it is
/// given, whose `device()` and `queue()` are wgpu's), encodes any number of passes per frame,
/// and copies the frame's bytes, in the layout it declared to the pipeline (its fields one
/// after the other, each in C order, little-endian), into `staging` from offset 0 (`staging`
/// may be larger: frames are rounded up to whole words, and timestamps may follow). It must
/// not map `staging` itself: the encoder is submitted for it, and the buffer mapped. It may
/// submit work of its own before it records the frame's copy (steps that need the host in
/// between, as a split domain's halo exchange does): the queue runs it first.
pub trait FrameSource: Send {
    /// Bytes of one frame; every frame has this size (at most the device's `max_buffer_size`).
    fn frame_bytes(&self) -> u64;

    /// Records frame `index` (0, 1, 2, ... in order) into `encoder`, ending with copies of its
    /// bytes into `staging`, and returns the step (or time index) the frame stands for.
    fn encode_frame(
        &mut self,
        index: u64,
        encoder: &mut wgpu::CommandEncoder,
        staging: &wgpu::Buffer,
    ) -> std::result::Result<u64, Box<dyn std::error::Error + Send + Sync>>;

    /// Bytes of the complete state a restart needs: everything the frames after the one just
    /// encoded depend on (every field the source has, stored or not, at full precision, and
    /// any counters). 0, the default, means the source does not save its state: a run
    /// resumed after a failure then restarts it from frame 0.
    fn state_bytes(&self) -> u64 {
        0
    }

    /// Records into `encoder`, after the frame just encoded, copies of the state (as
    /// [`FrameSource::state_bytes`] counts it) into `staging` from offset 0. Called only when
    /// `state_bytes` is above 0; the state travels with the frame, so saving it overlaps
    /// compute as frames do.
    fn encode_state(
        &mut self,
        _encoder: &mut wgpu::CommandEncoder,
        _staging: &wgpu::Buffer,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Err("this frame source does not save its state".into())
    }

    /// Restores a state [`FrameSource::encode_state`] saved after frame `next - 1`, so that
    /// the next [`FrameSource::encode_frame`] (index `next`) continues exactly where the
    /// saved run was. Called once, before any frame is encoded.
    fn restore_state(
        &mut self,
        _state: &[u8],
        _next: u64,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Err("this frame source does not restore a saved state".into())
    }
}

/// How frames are produced and read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadbackConfig {
    /// Kernel steps between two frames; all of them go into one submission.
    pub steps_per_frame: u32,
    /// Frames to produce; frame i holds the state after (i + 1) × steps_per_frame steps.
    pub frames: u64,
    /// Staging buffers in the ring (at least 1). With 1 the GPU idles while a frame is copied
    /// out; with 2 or more it works ahead on the next frames.
    pub staging_buffers: usize,
    /// Indices of the fields each frame holds, in frame order.
    pub fields: Vec<usize>,
    /// Let the GPU work ahead: keep up to `staging_buffers` frames in flight, including while
    /// the caller stores the frame just returned. When false, the GPU computes one frame at a
    /// time and only inside [`FrameProducer::next_into`], so nothing overlaps the caller's
    /// work: that is the blocking baseline the overlap is measured against (sync I/O mode).
    pub work_ahead: bool,
}

/// Where a frame sits in its stream, and where the time to get it went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// Frame number, from 0.
    pub index: u64,
    /// Simulation steps done when the frame was taken.
    pub step: u64,
    /// Time blocked waiting for the GPU to finish the frame's steps and copy.
    pub gpu_wait: Duration,
    /// Time copying the mapped staging buffer into the caller's buffer (with whatever
    /// [`FrameProducer::next_into_observed`]'s observer did with each block: the runner's hash).
    pub copy: Duration,
    /// Time the GPU spent on the frame's commands, from timestamp queries; `None` when the
    /// device has no `TIMESTAMP_QUERY` or they are off ([`FrameProducer::without_timestamps`]).
    /// Counted from the previous frame's end when the GPU started this one earlier.
    pub gpu_time: Option<Duration>,
}

/// A frame whose steps and copy are submitted and whose staging buffer maps when they finish.
struct InFlight {
    slot: usize,
    info: FrameInfo,
    submission: wgpu::SubmissionIndex,
    mapped: mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
    /// The state saved with this frame, mapping with it (see [`FrameProducer::save_state_every`]).
    state: Option<mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>>,
}

/// Saving the source's state with every `every`-th frame: one buffer per staging slot, so
/// that frames in flight never share one.
struct StateSaving {
    every: u64,
    /// A frame that carries a state whatever the interval ([`FrameProducer::save_state_once`]).
    once: Option<u64>,
    buffers: Vec<wgpu::Buffer>,
}

/// `count` buffers of `size` bytes the GPU copies into and the host maps to read, labelled
/// `what-0`, `what-1`, ...: the staging ring, and the state buffers beside it.
fn readback_buffers(gpu: &GpuDevice, what: &str, count: usize, size: u64) -> Result<Vec<wgpu::Buffer>> {
    gpu.scoped(&format!("allocating {what} buffers"), |device| {
        (0..count)
            .map(|i| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("{what}-{i}")),
                    size,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .collect::<Vec<_>>()
    })
}

/// A pass that turns the read fields into what leaves the GPU, each into a buffer of its own.
enum Packer {
    Half(HalfPacker),
    Zfp(ZfpPacker),
}

impl Packer {
    fn new(sim: &FieldSim, fields: &[usize], encoding: FieldEncoding) -> Result<Option<Self>> {
        Ok(match encoding {
            FieldEncoding::Values(OutputDType::F32) => None,
            FieldEncoding::Values(OutputDType::F16) => Some(Packer::Half(HalfPacker::new(sim, fields)?)),
            FieldEncoding::Zfp(rate) => Some(Packer::Zfp(ZfpPacker::new(sim, fields, rate)?)),
        })
    }

    /// Bytes between two packed fields in staging.
    fn stride(&self) -> u64 {
        match self {
            Packer::Half(half) => half.padded_field_bytes(),
            Packer::Zfp(zfp) => zfp.stream_bytes(),
        }
    }

    /// Bytes of one packed field in the frame (f16 fields without their padding half).
    fn piece(&self, sim: &FieldSim) -> u64 {
        match self {
            Packer::Half(_) => sim.grid().cells() as u64 * OutputDType::F16.size(),
            Packer::Zfp(zfp) => zfp.stream_bytes(),
        }
    }

    fn encode(&self, encoder: &mut wgpu::CommandEncoder, side: usize, staging: &wgpu::Buffer) {
        match self {
            Packer::Half(half) => half.encode(encoder, side, staging),
            Packer::Zfp(zfp) => zfp.encode(encoder, side, staging),
        }
    }
}

/// A field simulation as a [`FrameSource`]: `steps_per_frame` steps, then the chosen fields,
/// as computed (f32) or packed by `pack` (to f16, or to ZFP streams).
struct FieldFrames {
    sim: FieldSim,
    /// The simulation's step count before frame 0.
    first_step: u64,
    steps_per_frame: u32,
    fields: Vec<usize>,
    pack: Option<Packer>,
    /// Reductions recorded after the steps, their results behind the fields.
    analysis: Option<FieldReducer>,
}

impl FieldFrames {
    /// Bytes of the fields in staging (packed f16 fields are padded to whole words).
    fn fields_bytes(&self) -> u64 {
        let field_bytes = self.pack.as_ref().map_or(self.sim.field_bytes(), Packer::stride);
        field_bytes * self.fields.len() as u64
    }
}

impl FrameSource for FieldFrames {
    /// The bytes copied into staging: the fields, then the analysis results.
    fn frame_bytes(&self) -> u64 {
        self.fields_bytes() + self.analysis.as_ref().map_or(0, FieldReducer::frame_bytes)
    }

    fn encode_frame(
        &mut self,
        _index: u64,
        encoder: &mut wgpu::CommandEncoder,
        staging: &wgpu::Buffer,
    ) -> std::result::Result<u64, Box<dyn std::error::Error + Send + Sync>> {
        self.sim.encode_steps(encoder, self.steps_per_frame);
        if let Some(analysis) = &self.analysis {
            analysis.encode(encoder, self.sim.current_side(), staging, self.fields_bytes());
        }
        if let Some(pack) = &self.pack {
            pack.encode(encoder, self.sim.current_side(), staging);
            return Ok(self.sim.steps());
        }
        let field_bytes = self.sim.field_bytes();
        for (k, f) in self.fields.iter().enumerate() {
            // FrameProducer::new checked every index against the kernel's fields.
            if let Some(current) = self.sim.current(*f) {
                encoder.copy_buffer_to_buffer(current, 0, staging, k as u64 * field_bytes, field_bytes);
            }
        }
        Ok(self.sim.steps())
    }

    fn state_bytes(&self) -> u64 {
        self.sim.state_bytes()
    }

    fn encode_state(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        staging: &wgpu::Buffer,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.sim.encode_state_copy(encoder, staging);
        Ok(())
    }

    fn restore_state(
        &mut self,
        state: &[u8],
        next: u64,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let step = next.saturating_mul(u64::from(self.steps_per_frame)).saturating_add(self.first_step);
        Ok(self.sim.restore_state(state, step)?)
    }
}

/// Produces the frames of one source (a simulation, or an application's own pipeline),
/// keeping up to `staging_buffers` of them in flight.
pub struct FrameProducer {
    gpu: GpuDevice,
    source: Box<dyn FrameSource>,
    /// The source's name (the kernel's, for a simulation), for messages.
    name: String,
    config: ReadbackConfig,
    staging: Vec<wgpu::Buffer>,
    free: Vec<usize>,
    in_flight: VecDeque<InFlight>,
    submitted: u64,
    frame_bytes: usize,
    /// How the frame sits in staging: `pieces` runs of `piece` bytes, `stride` bytes apart
    /// (one run for f32; one per field, each without its padding half, for f16), then
    /// `tail` bytes (the analysis results) right after the last stride.
    pieces: usize,
    piece: usize,
    stride: usize,
    tail: usize,
    /// GPU time per frame, where the device has timestamp queries.
    timer: Option<FrameTimer>,
    /// Saving the source's state with some frames (checkpoints); `None`: never.
    saving: Option<StateSaving>,
    /// The state saved with the frame [`FrameProducer::next_into`] returned last, if any.
    saved: Option<Vec<u8>>,
    /// Threads copying a frame out of its staging buffer ([`FrameProducer::with_copy_threads`]).
    copy_threads: usize,
}

impl std::fmt::Debug for FrameProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameProducer")
            .field("source", &self.name)
            .field("config", &self.config)
            .field("submitted", &self.submitted)
            .finish()
    }
}

impl FrameProducer {
    /// A producer that owns `sim` and reads back `config.fields` every `steps_per_frame` steps,
    /// as f32.
    pub fn new(sim: FieldSim, config: ReadbackConfig) -> Result<Self> {
        Self::with_dtype(sim, config, OutputDType::F32)
    }

    /// A producer that owns `sim` and reads back `config.fields` every `steps_per_frame` steps,
    /// as `dtype`: [`OutputDType::F16`] converts each field on the GPU after the frame's steps,
    /// so frames have half the bytes (fields back to back, 2 bytes a cell, little-endian).
    pub fn with_dtype(sim: FieldSim, config: ReadbackConfig, dtype: OutputDType) -> Result<Self> {
        Self::with_analysis(sim, config, dtype, &AnalysisSpec::default())
    }

    /// [`FrameProducer::with_dtype`], each frame followed by `analysis`'s reductions of the
    /// kernel's fields (computed on the device after the frame's steps, before the readback),
    /// in the order and shapes [`AnalysisSpec::outputs`] gives, each 4 bytes an element.
    /// `encoding` is an [`OutputDType`] or a [`FieldEncoding`]: with [`FieldEncoding::Zfp`]
    /// each field is a ZFP stream, encoded after the analysis has read the values.
    pub fn with_analysis(
        sim: FieldSim,
        config: ReadbackConfig,
        encoding: impl Into<FieldEncoding>,
        analysis: &AnalysisSpec,
    ) -> Result<Self> {
        let encoding = encoding.into();
        let invalid = |message: String| Error::InvalidKernel { kernel: sim.spec().name.clone(), message };
        if config.staging_buffers == 0 {
            return Err(invalid("staging_buffers must be at least 1".to_owned()));
        }
        if config.steps_per_frame == 0 {
            return Err(invalid("steps_per_frame must be at least 1".to_owned()));
        }
        if config.fields.is_empty() && analysis.is_empty() {
            return Err(invalid("choose at least one field to read back, or an analysis of them".to_owned()));
        }
        if let Some(bad) = config.fields.iter().find(|f| **f >= sim.spec().fields.len()) {
            return Err(invalid(format!(
                "field index {bad} is out of range; the kernel has fields {:?}",
                sim.spec().fields
            )));
        }
        let footprint = sim.gpu().check_grid(
            sim.grid(),
            sim.spec().fields.len(),
            config.fields.len(),
            sim.cells_per_workgroup(),
        )?;
        let (gpu, name) = (sim.gpu().clone(), sim.spec().name.clone());
        let pack = Packer::new(&sim, &config.fields, encoding)?;
        let field_bytes = pack.as_ref().map_or(sim.field_bytes(), |p| p.piece(&sim));
        let stride = pack.as_ref().map_or(field_bytes, Packer::stride);
        let fields = config.fields.len();
        let first_step = sim.steps();
        let reducer = if analysis.is_empty() { None } else { Some(FieldReducer::new(&sim, analysis)?) };
        let tail = reducer.as_ref().map_or(0, FieldReducer::frame_bytes);
        let source = FieldFrames {
            sim,
            first_step,
            steps_per_frame: config.steps_per_frame,
            fields: config.fields.clone(),
            pack,
            analysis: reducer,
        };
        debug_assert!(encoding != FieldEncoding::default() || source.fields_bytes() == footprint.frame_bytes);
        let mut producer = Self::with_ring(&gpu, name, Box::new(source), config)?;
        let invalid = |what: &str| Error::InvalidKernel {
            kernel: producer.name.clone(),
            message: format!("{what} does not fit in host memory"),
        };
        producer.pieces = fields;
        producer.piece = usize::try_from(field_bytes).map_err(|_| invalid("a field"))?;
        producer.stride = usize::try_from(stride).map_err(|_| invalid("a field"))?;
        producer.tail = usize::try_from(tail).map_err(|_| invalid("the analysis"))?;
        producer.frame_bytes = producer
            .piece
            .checked_mul(fields)
            .and_then(|b| b.checked_add(producer.tail))
            .ok_or_else(|| invalid("a frame"))?;
        Ok(producer)
    }

    /// A producer for an application's own `source` on `gpu` (named `name` in messages):
    /// `config.frames` frames through a ring of `config.staging_buffers` staging buffers,
    /// working ahead as `config.work_ahead` says. `steps_per_frame` and `fields` are the field
    /// simulation's and are ignored here.
    pub fn from_source(
        gpu: &GpuDevice,
        name: impl Into<String>,
        source: Box<dyn FrameSource>,
        config: ReadbackConfig,
    ) -> Result<Self> {
        let name = name.into();
        if config.staging_buffers == 0 {
            return Err(Error::InvalidKernel {
                kernel: name,
                message: "staging_buffers must be at least 1".to_owned(),
            });
        }
        let (size, limit) = (source.frame_bytes(), gpu.device().limits().max_buffer_size);
        if size == 0 || size > limit {
            return Err(Error::InvalidKernel {
                kernel: name,
                message: format!(
                    "frames of {size} bytes: a frame needs 1 to {limit} bytes (the device's max_buffer_size, one \
                     staging buffer per frame in flight)"
                ),
            });
        }
        Self::with_ring(gpu, name, source, config)
    }

    /// Allocates the staging ring for `source`: its frame, rounded up to whole words (copies
    /// between buffers move words), then the frame's two timestamps where the device has them.
    fn with_ring(gpu: &GpuDevice, name: String, source: Box<dyn FrameSource>, config: ReadbackConfig) -> Result<Self> {
        let data = source.frame_bytes();
        let (timestamps_at, with_timestamps) = FrameTimer::staging_bytes(data.next_multiple_of(4));
        // A frame at the device's buffer limit leaves no room behind it: it goes untimed.
        let room = with_timestamps <= gpu.device().limits().max_buffer_size;
        let timer = if room { FrameTimer::new(gpu, config.staging_buffers, timestamps_at)? } else { None };
        let size = if timer.is_some() { with_timestamps } else { data.next_multiple_of(4) };
        let invalid = |message: String| Error::InvalidKernel { kernel: name.clone(), message };
        let staging = readback_buffers(gpu, "staging", config.staging_buffers, size)?;
        let free = (0..config.staging_buffers).rev().collect();
        let frame_bytes =
            usize::try_from(data).map_err(|_| invalid("a frame does not fit in host memory".to_owned()))?;
        Ok(FrameProducer {
            gpu: gpu.clone(),
            source,
            name,
            config,
            staging,
            free,
            in_flight: VecDeque::new(),
            submitted: 0,
            frame_bytes,
            pieces: 1,
            piece: frame_bytes,
            stride: frame_bytes,
            tail: 0,
            timer,
            saving: None,
            saved: None,
            copy_threads: 1,
        })
    }

    /// The same producer without timestamp queries: every frame's
    /// [`FrameInfo::gpu_time`] is `None`, so callers fall back to host-measured time (the
    /// baseline to compare the GPU's figure with, and the path of devices without the feature).
    pub fn without_timestamps(mut self) -> Self {
        self.timer = None;
        self
    }

    /// The same producer copying each frame out of its staging buffer on up to `threads`
    /// threads (the calling one included; at least one, and one per
    /// [`COPY_BYTES_PER_THREAD`] of the frame at most). One thread copies at a few GB/s: on
    /// a GPU that computes a large frame in milliseconds, the copy is what bounds the
    /// frames a second. On a CPU adapter the extra threads take cores from the compute.
    #[must_use]
    pub fn with_copy_threads(mut self, threads: usize) -> Self {
        self.copy_threads = threads.max(1);
        self
    }

    /// Threads each frame is copied out on: [`FrameProducer::with_copy_threads`]'s, or fewer
    /// for a small frame.
    pub fn copy_threads(&self) -> usize {
        threads_for(self.copy_threads, self.frame_bytes)
    }

    /// Whether frames carry GPU time from timestamp queries.
    pub fn gpu_timestamps(&self) -> bool {
        self.timer.is_some()
    }

    /// Bytes of one frame: the chosen fields, one after the other, little-endian, f32 (or f16
    /// with [`FrameProducer::with_dtype`]).
    pub fn frame_bytes(&self) -> usize {
        self.frame_bytes
    }

    /// Frames handed out or still to come: the configured total.
    pub fn frames(&self) -> u64 {
        self.config.frames
    }

    /// Bytes of the source's saved state; 0 when it saves none (see [`FrameSource::state_bytes`]).
    pub fn state_bytes(&self) -> u64 {
        self.source.state_bytes()
    }

    /// Saves the source's complete state with every `every`-th frame (frames `every - 1`,
    /// `2 every - 1`, ..., not the last one, which ends the stream); 0 stops saving. The state
    /// is copied in the frame's own command buffer, after its work, and comes back with it:
    /// [`FrameProducer::take_state`] hands it over after [`FrameProducer::next_into`].
    /// Frames already in flight keep the interval they were submitted with. Errors when the
    /// source saves no state.
    pub fn save_state_every(&mut self, every: u64) -> Result<()> {
        if every == 0 {
            self.saving = None;
            return Ok(());
        }
        self.state_buffers()?.every = every;
        Ok(())
    }

    /// Saves the source's state with frame `index` (besides any interval set by
    /// [`FrameProducer::save_state_every`]): one checkpoint, for instance to measure what one
    /// costs. Errors when the source saves no state.
    pub fn save_state_once(&mut self, index: u64) -> Result<()> {
        self.state_buffers()?.once = Some(index);
        Ok(())
    }

    /// The state buffers, allocated on first use (saving nothing until told when).
    fn state_buffers(&mut self) -> Result<&mut StateSaving> {
        let saving = match self.saving.take() {
            Some(saving) => saving,
            None => StateSaving { every: u64::MAX, once: None, buffers: self.allocate_state_buffers()? },
        };
        Ok(self.saving.insert(saving))
    }

    /// One buffer per staging slot for the source's state, so frames in flight never share one.
    fn allocate_state_buffers(&self) -> Result<Vec<wgpu::Buffer>> {
        let bytes = self.source.state_bytes();
        if bytes == 0 {
            return Err(Error::Source {
                source_name: self.name.clone(),
                message: "it saves no state (its state_bytes is 0), so it cannot be checkpointed".to_owned(),
            });
        }
        readback_buffers(&self.gpu, "state", self.staging.len(), bytes.next_multiple_of(4))
    }

    /// The state saved with the frame [`FrameProducer::next_into`] returned last (`None` for
    /// frames without one): the bytes [`FrameProducer::resume_at`] restarts from.
    pub fn take_state(&mut self) -> Option<Vec<u8>> {
        self.saved.take()
    }

    /// Continues a stream from a saved state: `state` was saved with frame `next - 1`, and the
    /// next frame produced is frame `next` (of the same `frames` in all). Only before the
    /// first frame.
    pub fn resume_at(&mut self, next: u64, state: &[u8]) -> Result<()> {
        let source_error = |message: String| Error::Source { source_name: self.name.clone(), message };
        if self.submitted != 0 || !self.in_flight.is_empty() {
            return Err(source_error("a producer resumes from a saved state before its first frame".to_owned()));
        }
        if next > self.config.frames {
            return Err(source_error(format!(
                "a state saved after frame {next} is past the {} frames of the stream",
                self.config.frames
            )));
        }
        self.source.restore_state(state, next).map_err(|e| source_error(e.to_string()))?;
        self.submitted = next;
        Ok(())
    }

    /// Submits frames while a staging buffer is free and frames remain (one at a time
    /// without work-ahead).
    fn fill(&mut self) -> Result<()> {
        let limit = if self.config.work_ahead { self.config.staging_buffers } else { 1 };
        while self.submitted < self.config.frames && self.in_flight.len() < limit {
            let Some(slot) = self.free.pop() else { break };
            let mut encoder =
                self.gpu.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("frame") });
            if let Some(timer) = &self.timer {
                timer.begin(&mut encoder, slot);
            }
            let step = match self.source.encode_frame(self.submitted, &mut encoder, &self.staging[slot]) {
                Ok(step) => step,
                Err(e) => {
                    self.free.push(slot);
                    return Err(Error::Source { source_name: self.name.clone(), message: e.to_string() });
                }
            };
            if let Some(timer) = &self.timer {
                timer.end(&mut encoder, slot, &self.staging[slot]);
            }
            let index = self.submitted;
            let state = match &self.saving {
                Some(saving)
                    if ((index + 1).is_multiple_of(saving.every) || saving.once == Some(index))
                        && index + 1 < self.config.frames =>
                {
                    let buffer = &saving.buffers[slot];
                    if let Err(e) = self.source.encode_state(&mut encoder, buffer) {
                        self.free.push(slot);
                        return Err(Error::Source { source_name: self.name.clone(), message: e.to_string() });
                    }
                    let (tx, mapped) = mpsc::channel();
                    encoder.map_buffer_on_submit(buffer, wgpu::MapMode::Read, .., move |r| {
                        let _ = tx.send(r);
                    });
                    Some(mapped)
                }
                _ => None,
            };
            let (tx, mapped) = mpsc::channel();
            encoder.map_buffer_on_submit(&self.staging[slot], wgpu::MapMode::Read, .., move |r| {
                let _ = tx.send(r);
            });
            let submission = self.gpu.queue().submit([encoder.finish()]);
            let info = FrameInfo {
                index: self.submitted,
                step,
                gpu_wait: Duration::ZERO,
                copy: Duration::ZERO,
                gpu_time: None,
            };
            self.in_flight.push_back(InFlight { slot, info, submission, mapped, state });
            self.submitted += 1;
        }
        Ok(())
    }

    /// Copies the next frame into `out` (exactly [`FrameProducer::frame_bytes`] long) and
    /// returns where it sits, or `None` once every frame was produced.
    ///
    /// With work-ahead, the freed staging buffer is handed back to the GPU with the next
    /// frame's work before returning, so the GPU computes while the caller stores the frame.
    pub fn next_into(&mut self, out: &mut [u8]) -> Result<Option<FrameInfo>> {
        self.next_into_observed(out, &Unobserved)
    }

    /// [`FrameProducer::next_into`], handing each block of `out` to `observer` right after it
    /// is copied out of the staging buffer, while the block is still in the CPU's cache: the
    /// runner hashes a frame this way instead of reading it again once copied (on a fast GPU
    /// a second pass over a large frame costs as much as the copy: docs, "Benchmarks", "On a
    /// real GPU"). With
    /// [`FrameProducer::with_copy_threads`] the blocks are copied, and observed, on several
    /// threads at once, each block once, in no particular order.
    pub fn next_into_observed(&mut self, out: &mut [u8], observer: &dyn BlockObserver) -> Result<Option<FrameInfo>> {
        if out.len() != self.frame_bytes {
            return Err(Error::BufferSize { expected: self.frame_bytes, got: out.len() });
        }
        self.fill()?;
        let Some(frame) = self.in_flight.pop_front() else {
            return Ok(None);
        };
        let gpu = &self.gpu;
        let waiting = Instant::now();
        gpu.wait(frame.submission)?;
        gpu.mapped_result(&frame.mapped)?;
        let copying = Instant::now();
        let staging = &self.staging[frame.slot];
        let gpu_time = {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| Error::Gpu { device: gpu.label().to_owned(), message: e.to_string() })?;
            let places = Places { pieces: self.pieces, piece: self.piece, stride: self.stride };
            copy_frame(out, &view, places, self.copy_threads, observer);
            self.timer.as_mut().and_then(|t| t.read(&view))
        };
        staging.unmap();
        self.saved = match (&frame.state, &self.saving) {
            (Some(mapped), Some(saving)) => Some(self.copy_state(mapped, &saving.buffers[frame.slot])?),
            _ => None,
        };
        let info = FrameInfo { gpu_wait: copying - waiting, copy: copying.elapsed(), gpu_time, ..frame.info };
        self.free.push(frame.slot);
        if self.config.work_ahead {
            self.fill()?;
        }
        Ok(Some(info))
    }

    /// Copies a mapped state buffer out (the frame's submission is done) and unmaps it.
    fn copy_state(
        &self,
        mapped: &mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
        buffer: &wgpu::Buffer,
    ) -> Result<Vec<u8>> {
        self.gpu.mapped_result(mapped)?;
        let bytes = usize::try_from(self.source.state_bytes()).unwrap_or(usize::MAX);
        let state = {
            let view = buffer
                .get_mapped_range(..)
                .map_err(|e| Error::Gpu { device: self.gpu.label().to_owned(), message: e.to_string() })?;
            view.get(..bytes).map(<[u8]>::to_vec)
        };
        buffer.unmap();
        state.ok_or_else(|| Error::Source {
            source_name: self.name.clone(),
            message: "its state is larger than the buffer it was saved in".to_owned(),
        })
    }
}

/// Sees each block of a frame right after [`FrameProducer::next_into_observed`] copied it
/// out of the staging buffer, on the thread that copied it (the frame's hash, computed while
/// the block is in that core's cache).
pub trait BlockObserver: Sync {
    /// Bytes of a block (the last block of a frame may be shorter): the unit in which the
    /// frame is copied and observed, and split among copying threads. At least 1; small
    /// enough to stay in a core's cache (a few hundred KiB).
    fn block_bytes(&self) -> usize;

    /// Block `index` (the frame's bytes from `index` × [`BlockObserver::block_bytes`] on)
    /// was just copied into the caller's buffer: `block` is it. Called once per block.
    fn observe(&self, index: usize, block: &[u8]);
}

/// Observes nothing ([`FrameProducer::next_into`]).
struct Unobserved;

impl BlockObserver for Unobserved {
    fn block_bytes(&self) -> usize {
        COPY_BLOCK
    }
    fn observe(&self, _: usize, _: &[u8]) {}
}

/// Block of an unobserved copy.
const COPY_BLOCK: usize = 256 << 10;

/// Frame bytes a copying thread takes at least ([`FrameProducer::with_copy_threads`]):
/// starting a thread costs tens of microseconds, copying 4 MiB about half a millisecond.
pub const COPY_BYTES_PER_THREAD: usize = 4 << 20;

/// Threads of at most `threads` that copy a frame of `bytes`: one per
/// [`COPY_BYTES_PER_THREAD`], at least one.
fn threads_for(threads: usize, bytes: usize) -> usize {
    threads.min(bytes / COPY_BYTES_PER_THREAD).max(1)
}

/// Where a frame's bytes sit in its staging buffer: `pieces` runs of `piece` bytes, `stride`
/// bytes apart, then the rest (the analysis results) right after the last stride.
#[derive(Clone, Copy)]
struct Places {
    pieces: usize,
    piece: usize,
    stride: usize,
}

impl Places {
    /// Copies the frame's bytes from offset `at` on into `dst`, out of the mapped `view`.
    fn copy(self, view: &[u8], mut at: usize, mut dst: &mut [u8]) {
        let runs = self.pieces * self.piece;
        while !dst.is_empty() {
            let (src, n) = if at < runs {
                let (k, off) = (at / self.piece, at % self.piece);
                (k * self.stride + off, (self.piece - off).min(dst.len()))
            } else {
                (self.pieces * self.stride + (at - runs), dst.len())
            };
            let (now, rest) = dst.split_at_mut(n);
            now.copy_from_slice(&view[src..src + n]);
            dst = rest;
            at += n;
        }
    }
}

/// Copies the frame `out` out of the mapped `view` in blocks of the observer's size, each
/// handed to `observer` right after its copy; on up to `threads` threads (each with at least
/// [`COPY_BYTES_PER_THREAD`] bytes), each taking an equal run of consecutive blocks. The
/// share of a thread that cannot be started is copied by the calling thread.
fn copy_frame(out: &mut [u8], view: &[u8], places: Places, threads: usize, observer: &dyn BlockObserver) {
    let block = observer.block_bytes().max(1);
    let copy_run = |first: usize, run: &mut [u8]| {
        for (k, b) in run.chunks_mut(block).enumerate() {
            places.copy(view, (first + k) * block, b);
            observer.observe(first + k, b);
        }
    };
    if out.is_empty() {
        // A frame of no bytes is one empty block.
        observer.observe(0, out);
        return;
    }
    let blocks = out.len().div_ceil(block);
    let threads = threads_for(threads, out.len()).min(blocks);
    if threads == 1 {
        copy_run(0, out);
        return;
    }
    let per = blocks.div_ceil(threads);
    // Each share in a slot its thread takes, so that a thread not started leaves it there.
    let shares: Vec<std::sync::Mutex<Option<&mut [u8]>>> =
        out.chunks_mut(per * block).map(|share| std::sync::Mutex::new(Some(share))).collect();
    let copy_share = |t: usize| {
        let share = shares.get(t).and_then(|slot| slot.lock().ok()).and_then(|mut slot| slot.take());
        if let Some(share) = share {
            copy_run(t * per, share);
        }
    };
    std::thread::scope(|scope| {
        let mut not_started = Vec::new();
        for t in 1..shares.len() {
            let copy_share = &copy_share;
            if std::thread::Builder::new()
                .name("wgpipe-copy".into())
                .spawn_scoped(scope, move || copy_share(t))
                .is_err()
            {
                not_started.push(t);
            }
        }
        copy_share(0);
        not_started.into_iter().for_each(copy_share);
    });
}
