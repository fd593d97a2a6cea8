//! The three timed primitives every benchmark is built from: the compute-only loop, a full
//! pipeline run, and a write-only run of a sink. Each returns seconds measured the same way
//! the runner measures its wall time, so their ratios compare like with like.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use wgpipe::compute::gray_scott::{self, GrayScottParams};
use wgpipe::compute::gray_scott_3d::GrayScott3dParams;
use wgpipe::compute::{FieldSim, FrameProducer, GpuDevice, Grid, KernelSpec, OutputDType, ReadbackConfig};
use wgpipe::storage::{Compression, Frame, Sink, SinkOptions, StreamInfo, StreamLayout, open_sink};
use wgpipe::{IoMode, Pipeline, PipelineBuilder, RunReport};

use super::cpu_time::Timed;

/// Seed and noise of the Gray-Scott start state (any fixed values do).
const SEED: u64 = 7;
const NOISE: f32 = 0.02;

/// Steps per frame of the ADIOS2 tutorial's 3-D runs (its `plotgap`).
pub const TUTORIAL_STEPS_PER_FRAME: u32 = 10;

/// The ADIOS2 tutorial's 3-D model at `edge`³ on `gpu`, `frames` frames of
/// [`TUTORIAL_STEPS_PER_FRAME`] steps, asynchronous, into `sink`: the run the 3-D cost benches
/// (checkpoints, analysis) compare variants of.
pub fn tutorial_3d(gpu: &GpuDevice, edge: usize, frames: u64, sink: Box<dyn Sink>) -> PipelineBuilder {
    Pipeline::builder()
        .gpus(vec![gpu.clone()])
        .shape([edge, edge, edge])
        .frames(frames)
        .steps_per_frame(TUTORIAL_STEPS_PER_FRAME)
        .mode(IoMode::Async)
        .gray_scott_3d(GrayScott3dParams::default(), 1)
        .sink(sink)
}

/// What is computed: the same for the compute-only loop and the pipeline.
#[derive(Debug, Clone)]
pub struct Workload {
    pub gpus: Vec<GpuDevice>,
    pub rows: usize,
    pub cols: usize,
    pub frames: u64,
    /// Fields stored per frame (`v` only, like `wgpipe run`'s default).
    pub fields: Vec<String>,
    /// Staging buffers in the readback ring.
    pub staging: usize,
}

impl Workload {
    /// Bytes of one frame.
    pub fn frame_bytes(&self) -> usize {
        self.frame_bytes_as(OutputDType::F32)
    }

    /// Bytes of one frame stored as `dtype`.
    pub fn frame_bytes_as(&self, dtype: OutputDType) -> usize {
        self.rows * self.cols * dtype.size() as usize * self.fields.len()
    }

    /// The grid the kernel runs on.
    pub fn grid(&self) -> Result<Grid> {
        Grid::new(&[self.rows, self.cols]).context("choosing the grid")
    }

    /// Cells × steps of one run at `spf` steps per frame, over all devices.
    pub fn cell_steps(&self, spf: u32) -> f64 {
        (self.rows * self.cols) as f64 * f64::from(spf) * self.frames as f64 * self.gpus.len() as f64
    }
}

/// The compute-only loop: per device, the same kernel and the same readback ring as the
/// pipeline (a [`FrameProducer`]) draining every frame into one reused buffer: no channel,
/// no pool, no sink. Timed like the pipeline's wall: start state and device buffers included.
pub fn compute_only(w: &Workload, spf: u32) -> Result<f64> {
    compute_only_timed(w, spf).map(|t| t.wall)
}

/// [`compute_only`], with the CPU time the process used over the same region.
pub fn compute_only_timed(w: &Workload, spf: u32) -> Result<Timed> {
    let kernel = GrayScottParams::default().kernel();
    let indices = kernel.field_indices(&w.fields).context("choosing the fields to read back")?;
    let mut timed = Timed::default();
    timed.time(|| drain_every_device(w, spf, &kernel, &indices))??;
    Ok(timed)
}

/// Every device of `w` computes its frames of `kernel` at `spf` steps per frame and reads
/// back the fields at `indices` into one reused buffer, on a thread of its own.
fn drain_every_device(w: &Workload, spf: u32, kernel: &KernelSpec, indices: &[usize]) -> Result<()> {
    std::thread::scope(|scope| -> Result<()> {
        let handles: Vec<_> = w
            .gpus
            .iter()
            .enumerate()
            .map(|(d, gpu)| {
                scope.spawn(move || -> Result<u64> {
                    let init = gray_scott::initial_state(w.rows, w.cols, SEED + d as u64, NOISE);
                    let sim = FieldSim::new(gpu, kernel, &w.grid()?, &init)
                        .with_context(|| format!("setting up the simulation on {}", gpu.label()))?;
                    drop(init);
                    let config = ReadbackConfig {
                        steps_per_frame: spf,
                        frames: w.frames,
                        staging_buffers: w.staging,
                        fields: indices.to_vec(),
                        work_ahead: true,
                    };
                    let mut producer = FrameProducer::new(sim, config).context("setting up the readback ring")?;
                    let mut buf = vec![0u8; producer.frame_bytes()];
                    let mut checksum = 0u64;
                    while producer.next_into(&mut buf).context("computing a frame")?.is_some() {
                        // Touch the frame so that the copy-out cannot be skipped.
                        checksum = checksum.wrapping_add(u64::from(buf[buf.len() / 2]));
                    }
                    Ok(checksum)
                })
            })
            .collect();
        for h in handles {
            let checksum = h.join().map_err(|_| anyhow::anyhow!("a compute-only thread panicked"))??;
            std::hint::black_box(checksum);
        }
        Ok(())
    })
}

/// One full pipeline run into `sink`.
pub fn pipeline(
    w: &Workload,
    spf: u32,
    mode: IoMode,
    io_buffer: usize,
    sink: Box<dyn Sink>,
    trace: bool,
) -> Result<RunReport> {
    pipeline_as(w, spf, mode, io_buffer, sink, trace, OutputDType::F32)
}

/// One full pipeline run into `sink`, storing the fields as `dtype`.
pub fn pipeline_as(
    w: &Workload,
    spf: u32,
    mode: IoMode,
    io_buffer: usize,
    sink: Box<dyn Sink>,
    trace: bool,
    dtype: OutputDType,
) -> Result<RunReport> {
    Pipeline::builder()
        .gpus(w.gpus.clone())
        .grid(w.rows, w.cols)
        .frames(w.frames)
        .steps_per_frame(spf)
        .staging_buffers(w.staging)
        .io_buffer(io_buffer)
        .mode(mode)
        .gray_scott(GrayScottParams::default(), SEED, NOISE)
        .fields(w.fields.clone())
        .output_dtype(dtype)
        .sink(sink)
        .trace(trace)
        .run()
        .with_context(|| format!("running the pipeline ({} I/O, {spf} steps per frame)", mode.name()))
}

/// Where one run's output goes: a directory for raw, a file for hdf5, a store for zarr.
pub fn output_path(dir: &Path, kind: &str, n: usize) -> PathBuf {
    match kind {
        "hdf5" => dir.join(format!("bench-{n}.h5")),
        "zarr" => dir.join(format!("bench-{n}.zarr")),
        _ => dir.join(format!("bench-{n}")),
    }
}

/// A sink that forces its data to the device in `finish` (inside the timed wall time),
/// compressing (HDF5) on `threads` threads.
pub fn durable_sink(kind: &str, path: &Path, compression: Compression, threads: usize) -> Result<Box<dyn Sink>> {
    let options = SinkOptions::new(path)
        .with_fsync(true)
        .with_overwrite(true)
        .with_compression(compression)
        .with_compression_threads(threads);
    open_sink(kind, &options).with_context(|| format!("opening the {kind} sink at {}", path.display()))
}

/// Bytes `path` takes: a file's length, or a directory's files' lengths summed.
pub fn disk_bytes(path: &Path) -> Result<u64> {
    if !path.is_dir() {
        return Ok(std::fs::metadata(path)?.len());
    }
    let mut total = 0;
    for entry in std::fs::read_dir(path)? {
        total += disk_bytes(&entry?.path())?;
    }
    Ok(total)
}

/// Removes what a run wrote (a file or a raw directory); absent is fine.
pub fn remove_output(path: &Path) -> Result<()> {
    let removed = if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    match removed {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove benchmark output {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// The frames of device 0 at `spf` steps per frame, kept in memory: realistic data for
/// the write-only run (compression, if any, sees what a real run stores).
pub fn capture_frames(w: &Workload, spf: u32) -> Result<Vec<Vec<u8>>> {
    capture_frames_as(w, spf, OutputDType::F32)
}

/// [`capture_frames`] of the fields stored as `dtype` (converted on the GPU, as a run does).
pub fn capture_frames_as(w: &Workload, spf: u32, dtype: OutputDType) -> Result<Vec<Vec<u8>>> {
    let gpu = w.gpus.first().context("no device to capture frames on")?;
    let kernel = GrayScottParams::default().kernel();
    let indices = kernel.field_indices(&w.fields).context("choosing the fields to read back")?;
    let init = gray_scott::initial_state(w.rows, w.cols, SEED, NOISE);
    let sim = FieldSim::new(gpu, &kernel, &w.grid()?, &init).context("setting up the simulation")?;
    let config = ReadbackConfig {
        steps_per_frame: spf,
        frames: w.frames,
        staging_buffers: w.staging,
        fields: indices,
        work_ahead: true,
    };
    let mut producer = FrameProducer::with_dtype(sim, config, dtype).context("setting up the readback ring")?;
    let mut frames = Vec::new();
    let mut buf = vec![0u8; producer.frame_bytes()];
    while producer.next_into(&mut buf).context("computing a frame")?.is_some() {
        frames.push(buf.clone());
    }
    Ok(frames)
}

/// The sink alone: `w.frames` frames per device stream of `data` (cycled; fields of type
/// `dtype`), `begin` to `finish` (fsync included), on this thread; only the sink's calls are
/// timed. This is t_io of Ravi et al. With it, the CPU time the process used during those
/// calls (the sink's compression threads, which `write` joins, included).
pub fn write_only_timed_as(
    w: &Workload,
    data: &[Vec<u8>],
    mut sink: Box<dyn Sink>,
    dtype: OutputDType,
) -> Result<Timed> {
    let mut layout = StreamLayout::grid2d(w.fields.iter().cloned(), w.rows, w.cols, wgpipe::stored_dtype(dtype));
    for d in 0..w.gpus.len() {
        layout = layout.with_stream(StreamInfo::new(format!("stream{d}")).with_expected_frames(w.frames));
    }
    let mut buf = vec![0u8; w.frame_bytes_as(dtype)];
    let mut timed = Timed::default();
    timed.time(|| sink.begin(&layout))?.context("write-only run: begin")?;
    for index in 0..w.frames {
        for stream in 0..w.gpus.len() {
            if let Some(src) = data.get(index as usize % data.len().max(1)).filter(|d| d.len() == buf.len()) {
                buf.copy_from_slice(src);
            }
            let frame = Frame::new(stream, index, index + 1, std::mem::take(&mut buf));
            timed.time(|| sink.write(&frame))?.context("write-only run: write")?;
            buf = frame.data;
        }
    }
    timed.time(|| sink.finish())?.context("write-only run: finish")?;
    Ok(timed)
}
