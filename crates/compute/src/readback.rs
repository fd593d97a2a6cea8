//! The readback ring: frames leave the GPU through a few staging buffers, so the GPU computes
//! frame n+1 while the host copies frame n out.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::field_sim::FieldSim;

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

/// Produces the frames of one simulation, keeping up to `staging_buffers` of them in flight.
pub struct FrameProducer {
    sim: FieldSim,
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
            .field("sim", &self.sim)
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
        let footprint =
            sim.gpu().check_grid(sim.grid(), sim.spec().fields.len(), config.fields.len(), sim.workgroup_size())?;
        let size = footprint.frame_bytes;
        let staging = sim.gpu().scoped("allocating staging buffers", |device| {
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
        Ok(FrameProducer { sim, config, staging, free, in_flight: VecDeque::new(), submitted: 0, frame_bytes })
    }

    /// Bytes of one frame: the chosen fields, one after the other, f32 little-endian.
    pub fn frame_bytes(&self) -> usize {
        self.frame_bytes
    }

    /// The simulation (its state reflects every submitted step, not only the returned frames).
    pub fn sim(&self) -> &FieldSim {
        &self.sim
    }

    /// Frames handed out or still to come: the configured total.
    pub fn frames(&self) -> u64 {
        self.config.frames
    }

    /// Submits frames while a staging buffer is free and frames remain (one at a time
    /// without work-ahead).
    fn fill(&mut self) {
        let limit = if self.config.work_ahead { self.config.staging_buffers } else { 1 };
        while self.submitted < self.config.frames && self.in_flight.len() < limit {
            let Some(slot) = self.free.pop() else { break };
            let mut encoder = self
                .sim
                .gpu()
                .device()
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("frame") });
            self.sim.encode_steps(&mut encoder, self.config.steps_per_frame);
            let field_bytes = self.sim.field_bytes();
            for (k, f) in self.config.fields.iter().enumerate() {
                // FrameProducer::new checked every index against the kernel's fields.
                if let Some(current) = self.sim.current(*f) {
                    encoder.copy_buffer_to_buffer(current, 0, &self.staging[slot], k as u64 * field_bytes, field_bytes);
                }
            }
            let (tx, mapped) = mpsc::channel();
            encoder.map_buffer_on_submit(&self.staging[slot], wgpu::MapMode::Read, .., move |r| {
                let _ = tx.send(r);
            });
            let submission = self.sim.gpu().queue().submit([encoder.finish()]);
            let info = FrameInfo {
                index: self.submitted,
                step: self.sim.steps(),
                gpu_wait: Duration::ZERO,
                copy: Duration::ZERO,
            };
            self.in_flight.push_back(InFlight { slot, info, submission, mapped });
            self.submitted += 1;
        }
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
        self.fill();
        let Some(frame) = self.in_flight.pop_front() else {
            return Ok(None);
        };
        let gpu = self.sim.gpu();
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
            self.fill();
        }
        Ok(Some(info))
    }
}
