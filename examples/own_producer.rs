//! Your own wgpu pipeline, streamed by wgpipe: a particle system computed in three compute
//! passes per frame (advance the particles, clear a histogram, bin the particles into it with
//! atomics), whose frames are the particle positions (f32 `[n, 3]`) and the density histogram
//! (u32 `[64, 64]`). wgpipe gives it the device, the staging ring (so the GPU computes frame
//! n + 1 while frame n is copied out and written), the writer thread, progress and the report.
//!
//! `cargo run --release -p wgpipe --example own_producer -- [OUT.h5]`
//!
//! The arithmetic is exact in f32 (positions are multiples of 2^-16, velocities of 2^-10, the
//! time step 2^-6), so [`cpu_frames`] reproduces every frame bit for bit; the test
//! `crates/runner/tests/own_producer.rs` checks the file against it.

use std::path::Path;

use anyhow::Context as _;
use wgpipe::compute::wgpu::util::DeviceExt as _;
use wgpipe::compute::{DeviceSelector, FrameSource, GpuDevice, wgpu};
use wgpipe::storage::{DType, FieldSpec, Hdf5Sink, SinkOptions};
use wgpipe::{BoxError, Job, Pipeline, RunReport};

/// Particles per swarm.
pub const PARTICLES: usize = 4096;
/// Histogram bins along x and y.
pub const BINS: usize = 64;
/// Frames per stream.
pub const FRAMES: u64 = 12;
/// Particle steps between two frames.
pub const STEPS_PER_FRAME: u64 = 8;
/// The swarms, one stream each; the number seeds the starting state.
pub const SWARMS: [(&str, u32); 2] = [("swarm-a", 1), ("swarm-b", 2)];

const WORKGROUP: u32 = 64;

/// The three passes. Every particle moves by `v · dt` and bounces off the faces of the unit
/// cube; the histogram counts particles per (y, x) bin of the x-y plane.
fn shader() -> String {
    format!(
        r#"
const N: u32 = {PARTICLES}u;
const BINS: u32 = {BINS}u;
const DT: f32 = 0.015625;

@group(0) @binding(0) var<storage, read_write> pos: array<f32>;
@group(0) @binding(1) var<storage, read_write> vel: array<f32>;
@group(0) @binding(2) var<storage, read_write> density: array<atomic<u32>>;

@compute @workgroup_size({WORKGROUP})
fn advance(@builtin(global_invocation_id) id: vec3<u32>) {{
    if (id.x >= N) {{ return; }}
    for (var a = 0u; a < 3u; a++) {{
        let k = 3u * id.x + a;
        var x = pos[k] + vel[k] * DT;
        var v = vel[k];
        if (x < 0.0) {{ x = -x; v = -v; }}
        if (x >= 1.0) {{ x = 2.0 - x; v = -v; }}
        pos[k] = x;
        vel[k] = v;
    }}
}}

@compute @workgroup_size({WORKGROUP})
fn clear(@builtin(global_invocation_id) id: vec3<u32>) {{
    if (id.x < BINS * BINS) {{ atomicStore(&density[id.x], 0u); }}
}}

@compute @workgroup_size({WORKGROUP})
fn bin(@builtin(global_invocation_id) id: vec3<u32>) {{
    if (id.x >= N) {{ return; }}
    let bx = min(u32(pos[3u * id.x] * f32(BINS)), BINS - 1u);
    let by = min(u32(pos[3u * id.x + 1u] * f32(BINS)), BINS - 1u);
    atomicAdd(&density[by * BINS + bx], 1u);
}}
"#
    )
}

/// The starting state of swarm `seed`: positions in [0, 1) as multiples of 2^-16, velocities
/// in [-1/16, 1/16] as multiples of 2^-10.
pub fn initial_state(seed: u32) -> (Vec<f32>, Vec<f32>) {
    let (mut pos, mut vel) = (Vec::with_capacity(3 * PARTICLES), Vec::with_capacity(3 * PARTICLES));
    for i in 0..PARTICLES as u32 {
        for a in 0..3u32 {
            let h = (i.wrapping_mul(7919) ^ a.wrapping_mul(104_729) ^ seed.wrapping_mul(2_654_435_761)) % 65_536;
            pos.push(h as f32 / 65_536.0);
            let k = (i.wrapping_mul(31) + a * 17 + seed * 5) % 129;
            vel.push((k as f32 - 64.0) / 1024.0);
        }
    }
    (pos, vel)
}

/// The frame layout: what the sink stores, in the order the staging buffer holds it.
pub fn frame_layout() -> Vec<FieldSpec> {
    vec![FieldSpec::new("position", DType::F32, [PARTICLES, 3]), FieldSpec::new("density", DType::U32, [BINS, BINS])]
}

/// One swarm on one device.
struct Particles {
    passes: [wgpu::ComputePipeline; 3],
    bind_group: wgpu::BindGroup,
    pos: wgpu::Buffer,
    density: wgpu::Buffer,
}

impl Particles {
    fn new(gpu: &GpuDevice, seed: u32) -> Self {
        let device = gpu.device();
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("particles"),
            source: wgpu::ShaderSource::Wgsl(shader().into()),
        });
        let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let (pos, vel) = initial_state(seed);
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
        let buffer = |label, contents: &[u8]| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents, usage })
        };
        let (pos, vel) = (buffer("pos", &bytes(&pos)), buffer("vel", &bytes(&vel)));
        let density = buffer("density", &vec![0u8; BINS * BINS * 4]);
        let entry = |binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: false },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("particles"),
            entries: &[entry(0), entry(1), entry(2)],
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("particles"),
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: pos.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: vel.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: density.as_entire_binding() },
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("particles"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let passes = ["advance", "clear", "bin"].map(|entry_point| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry_point),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry_point),
                compilation_options: Default::default(),
                cache: None,
            })
        });
        Particles { passes, bind_group, pos, density }
    }

    fn dispatch(&self, encoder: &mut wgpu::CommandEncoder, pass: usize, items: usize) {
        let mut cpass =
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
        cpass.set_pipeline(&self.passes[pass]);
        cpass.set_bind_group(0, &self.bind_group, &[]);
        cpass.dispatch_workgroups((items as u32).div_ceil(WORKGROUP), 1, 1);
    }
}

impl FrameSource for Particles {
    fn frame_bytes(&self) -> u64 {
        self.pos.size() + self.density.size()
    }

    fn encode_frame(
        &mut self,
        index: u64,
        encoder: &mut wgpu::CommandEncoder,
        staging: &wgpu::Buffer,
    ) -> Result<u64, BoxError> {
        for _ in 0..STEPS_PER_FRAME {
            self.dispatch(encoder, 0, PARTICLES);
        }
        self.dispatch(encoder, 1, BINS * BINS);
        self.dispatch(encoder, 2, PARTICLES);
        // The frame, in layout order: positions, then the histogram.
        encoder.copy_buffer_to_buffer(&self.pos, 0, staging, 0, self.pos.size());
        encoder.copy_buffer_to_buffer(&self.density, 0, staging, self.pos.size(), self.density.size());
        Ok((index + 1) * STEPS_PER_FRAME)
    }
}

/// The frames of swarm `seed` computed on the CPU: positions and histogram after each frame.
pub fn cpu_frames(seed: u32) -> Vec<(Vec<f32>, Vec<u32>)> {
    let (mut pos, mut vel) = initial_state(seed);
    let dt = 0.015625f32;
    let mut frames = Vec::new();
    for _ in 0..FRAMES {
        for _ in 0..STEPS_PER_FRAME {
            for (x, v) in pos.iter_mut().zip(vel.iter_mut()) {
                *x += *v * dt;
                if *x < 0.0 {
                    (*x, *v) = (-*x, -*v);
                }
                if *x >= 1.0 {
                    (*x, *v) = (2.0 - *x, -*v);
                }
            }
        }
        let mut density = vec![0u32; BINS * BINS];
        for p in pos.chunks_exact(3) {
            let bin = |x: f32| ((x * BINS as f32) as usize).min(BINS - 1);
            density[bin(p[1]) * BINS + bin(p[0])] += 1;
        }
        frames.push((pos.clone(), density));
    }
    frames
}

/// Streams every swarm into the HDF5 file `path` on the adapters `devices` picks.
pub fn run(path: &Path, devices: DeviceSelector) -> anyhow::Result<RunReport> {
    let jobs = SWARMS
        .iter()
        .map(|&(name, seed)| {
            Job::from_source(name, move |gpu: &GpuDevice| -> Result<Box<dyn FrameSource>, BoxError> {
                Ok(Box::new(Particles::new(gpu, seed)))
            })
            .with_attribute("seed", u64::from(seed))
            .with_attribute("steps_per_frame", STEPS_PER_FRAME)
        })
        .collect();
    Pipeline::builder()
        .devices(devices, 1)
        .frames(FRAMES)
        .frame_layout(frame_layout())
        .jobs(jobs)
        .sink(Hdf5Sink::new(SinkOptions::new(path).with_overwrite(true)))
        .run()
        .with_context(|| format!("streaming the particles into {}", path.display()))
}

#[allow(dead_code, reason = "the test includes this file as a module and calls `run`")]
fn main() -> anyhow::Result<()> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "particles.h5".to_owned());
    let report = run(Path::new(&path), DeviceSelector::All)?;
    println!("{report}\nwrote {path}: datasets <swarm>/position [frames, {PARTICLES}, 3] and <swarm>/density");
    Ok(())
}
