//! The readback ring: frames leave the GPU through a few staging buffers, so the GPU computes
//! frame n+1 while the host copies frame n out.
//!
//! What computes a frame is a [`FrameSource`]: the built-in field simulation ([`FieldSim`],
//! through [`FrameProducer::new`]) is one; an application's own wgpu pipeline is another
//! ([`FrameProducer::from_source`]), and gets the same ring and the same overlap.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::field_sim::FieldSim;

/// Produces frames on the GPU: records the work of one frame into a command encoder and the
/// copy of its bytes into a staging buffer. [`FrameProducer`] submits what it records, maps the
/// staging buffer when the GPU is done and copies it out, keeping several frames in flight.
///
/// An implementation holds its own device resources (created from the [`GpuDevice`] it is
/// given, whose `device()` and `queue()` are wgpu's), encodes any number of passes per frame,
/// and copies the frame's bytes, in the layout it declared to the pipeline (its fields one
/// after the other, each in C order, little-endian), into `staging` from offset 0. It must
/// not submit work or map buffers itself in `encode_frame`: the encoder is submitted for it.
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
    /// Time copying the mapped staging buffer into the caller's buffer.
    pub copy: Duration,
}

/// A frame whose steps and copy are submitted and whose staging buffer maps when they finish.
struct InFlight {
    slot: usize,
    info: FrameInfo,
    submission: wgpu::SubmissionIndex,
    mapped: mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
}

/// A field simulation as a [`FrameSource`]: `steps_per_frame` steps, then the chosen fields.
struct FieldFrames {
    sim: FieldSim,
    steps_per_frame: u32,
    fields: Vec<usize>,
}

impl FrameSource for FieldFrames {
    fn frame_bytes(&self) -> u64 {
        self.sim.field_bytes() * self.fields.len() as u64
    }

    fn encode_frame(
        &mut self,
        _index: u64,
        encoder: &mut wgpu::CommandEncoder,
        staging: &wgpu::Buffer,
    ) -> std::result::Result<u64, Box<dyn std::error::Error + Send + Sync>> {
        self.sim.encode_steps(encoder, self.steps_per_frame);
        let field_bytes = self.sim.field_bytes();
        for (k, f) in self.fields.iter().enumerate() {
            // FrameProducer::new checked every index against the kernel's fields.
            if let Some(current) = self.sim.current(*f) {
                encoder.copy_buffer_to_buffer(current, 0, staging, k as u64 * field_bytes, field_bytes);
            }
        }
        Ok(self.sim.steps())
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

/// The outcome of a `map_async` callback, after the wait that should have run it.
pub(crate) fn mapped_result(gpu: &GpuDevice, rx: &mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>) -> Result<()> {
    let failed = |message: String| Error::Gpu { device: gpu.label().to_owned(), message };
    match rx.try_recv() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            gpu.check()?;
            Err(failed(format!("mapping a staging buffer failed: {e}")))
        }
        Err(_) => {
            gpu.check()?;
            Err(failed("a staging buffer was not mapped after its submission finished".to_owned()))
        }
    }
}

impl FrameProducer {
    /// A producer that owns `sim` and reads back `config.fields` every `steps_per_frame` steps.
    pub fn new(sim: FieldSim, config: ReadbackConfig) -> Result<Self> {
        let invalid = |message: String| Error::InvalidKernel { kernel: sim.spec().name.clone(), message };
        if config.staging_buffers == 0 {
            return Err(invalid("staging_buffers must be at least 1".to_owned()));
        }
        if config.steps_per_frame == 0 {
            return Err(invalid("steps_per_frame must be at least 1".to_owned()));
        }
        if config.fields.is_empty() {
            return Err(invalid("choose at least one field to read back".to_owned()));
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
        let source = FieldFrames { sim, steps_per_frame: config.steps_per_frame, fields: config.fields.clone() };
        debug_assert_eq!(source.frame_bytes(), footprint.frame_bytes);
        Self::with_ring(&gpu, name, Box::new(source), config)
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

    /// Allocates the staging ring for `source`.
    fn with_ring(gpu: &GpuDevice, name: String, source: Box<dyn FrameSource>, config: ReadbackConfig) -> Result<Self> {
        let size = source.frame_bytes();
        let invalid = |message: String| Error::InvalidKernel { kernel: name.clone(), message };
        let staging = gpu.scoped("allocating staging buffers", |device| {
            (0..config.staging_buffers)
                .map(|i| {
                    device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(&format!("staging-{i}")),
                        size,
                        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    })
                })
                .collect::<Vec<_>>()
        })?;
        let free = (0..config.staging_buffers).rev().collect();
        let frame_bytes =
            usize::try_from(size).map_err(|_| invalid("a frame does not fit in host memory".to_owned()))?;
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
        })
    }

    /// Bytes of one frame: the chosen fields, one after the other, f32 little-endian.
    pub fn frame_bytes(&self) -> usize {
        self.frame_bytes
    }

    /// Frames handed out or still to come: the configured total.
    pub fn frames(&self) -> u64 {
        self.config.frames
    }

    /// Submits frames while a staging buffer is free and frames remain (one at a time
    /// without work-ahead).
    fn fill(&mut self) -> Result<()> {
        let limit = if self.config.work_ahead { self.config.staging_buffers } else { 1 };
        while self.submitted < self.config.frames && self.in_flight.len() < limit {
            let Some(slot) = self.free.pop() else { break };
            let mut encoder =
                self.gpu.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("frame") });
            let step = match self.source.encode_frame(self.submitted, &mut encoder, &self.staging[slot]) {
                Ok(step) => step,
                Err(e) => {
                    self.free.push(slot);
                    return Err(Error::Source { source_name: self.name.clone(), message: e.to_string() });
                }
            };
            let (tx, mapped) = mpsc::channel();
            encoder.map_buffer_on_submit(&self.staging[slot], wgpu::MapMode::Read, .., move |r| {
                let _ = tx.send(r);
            });
            let submission = self.gpu.queue().submit([encoder.finish()]);
            let info = FrameInfo { index: self.submitted, step, gpu_wait: Duration::ZERO, copy: Duration::ZERO };
            self.in_flight.push_back(InFlight { slot, info, submission, mapped });
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
        mapped_result(gpu, &frame.mapped)?;
        let copying = Instant::now();
        let staging = &self.staging[frame.slot];
        {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| Error::Gpu { device: gpu.label().to_owned(), message: e.to_string() })?;
            out.copy_from_slice(&view);
        }
        staging.unmap();
        let info = FrameInfo { gpu_wait: copying - waiting, copy: copying.elapsed(), ..frame.info };
        self.free.push(frame.slot);
        if self.config.work_ahead {
            self.fill()?;
        }
        Ok(Some(info))
    }
}
