//! The GPU state of a field-stencil kernel: ping-pong field buffers and the compiled step.

use wgpu::util::DeviceExt;

use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::kernel::KernelSpec;
use crate::limits::F32_BYTES as F32;

/// A kernel running on one device: every field lives in two buffers that swap roles each
/// step (read `src`, write `dst`), so a step never reads what it is writing.
pub struct FieldSim {
    gpu: GpuDevice,
    spec: KernelSpec,
    rows: usize,
    cols: usize,
    pipeline: wgpu::ComputePipeline,
    buffers: [wgpu::Buffer; 2],
    bind_groups: [wgpu::BindGroup; 2],
    workgroup_size: [u32; 2],
    workgroups: [u32; 2],
    steps: u64,
}

impl std::fmt::Debug for FieldSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldSim")
            .field("kernel", &self.spec.name)
            .field("device", &self.gpu.label())
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("steps", &self.steps)
            .finish()
    }
}

impl FieldSim {
    /// Compiles `spec` on `gpu` and uploads `initial` (every field, field after field,
    /// row-major, `fields × rows × cols` values).
    pub fn new(gpu: &GpuDevice, spec: &KernelSpec, rows: usize, cols: usize, initial: &[f32]) -> Result<Self> {
        let checked = spec.check()?;
        let invalid = |message: String| Error::InvalidKernel { kernel: spec.name.clone(), message };
        if rows == 0 || cols == 0 {
            return Err(invalid(format!("the grid must have at least one row and column, got {rows}×{cols}")));
        }
        let fields = spec.fields.len();
        let footprint = gpu.check_grid(rows, cols, fields, fields, checked.workgroup_size)?;
        if initial.len() as u64 != footprint.cells * fields as u64 {
            return Err(invalid(format!(
                "initial state holds {} values, expected {fields} fields × {rows} × {cols} = {}",
                initial.len(),
                footprint.cells * fields as u64
            )));
        }
        // All fit u32: check_grid bounds cells by i32::MAX and the dispatch by the device's
        // per-dimension limit.
        let workgroups = footprint.workgroups.map(|w| w as u32);
        let grid = [rows as u32, cols as u32, footprint.cells as u32, fields as u32];
        let mut params: Vec<f32> = spec.params.clone();
        params.resize(params.len().div_ceil(4).max(1) * 4, 0.0);

        gpu.scoped(&format!("compiling kernel {}", spec.name), |device| {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(&spec.name),
                source: wgpu::ShaderSource::Wgsl(checked.source.as_str().into()),
            });
            let storage = |binding, read_only| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            };
            let uniform = |binding| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            };
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("field-stencil"),
                entries: &[uniform(0), storage(1, true), storage(2, false), uniform(3)],
            });
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("field-stencil"),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&spec.name),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
            let grid_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("grid"),
                contents: bytemuck::cast_slice(&grid),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let params_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: bytemuck::cast_slice(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let field_buf = |label| {
                device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: bytemuck::cast_slice(initial),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                })
            };
            let buffers = [field_buf("fields-a"), field_buf("fields-b")];
            let bind = |src: &wgpu::Buffer, dst: &wgpu::Buffer| {
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("field-stencil"),
                    layout: &layout,
                    entries: &[
                        wgpu::BindGroupEntry { binding: 0, resource: grid_buf.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 1, resource: src.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 2, resource: dst.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 3, resource: params_buf.as_entire_binding() },
                    ],
                })
            };
            let bind_groups = [bind(&buffers[0], &buffers[1]), bind(&buffers[1], &buffers[0])];
            (pipeline, buffers, bind_groups)
        })
        .map(|(pipeline, buffers, bind_groups)| FieldSim {
            gpu: gpu.clone(),
            spec: spec.clone(),
            rows,
            cols,
            pipeline,
            buffers,
            bind_groups,
            workgroup_size: [checked.workgroup_size[0], checked.workgroup_size[1]],
            workgroups,
            steps: 0,
        })
    }

    /// The device this state lives on.
    pub fn gpu(&self) -> &GpuDevice {
        &self.gpu
    }

    /// The kernel.
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
    }

    /// Grid rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Grid columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Steps encoded so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The kernel's workgroup size `[x, y]`.
    pub fn workgroup_size(&self) -> [u32; 2] {
        self.workgroup_size
    }

    /// Bytes of one field.
    pub fn field_bytes(&self) -> u64 {
        (self.rows * self.cols) as u64 * F32
    }

    /// Records `n` steps into one compute pass of `encoder`.
    pub fn encode_steps(&mut self, encoder: &mut wgpu::CommandEncoder, n: u32) {
        let mut pass =
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("steps"), timestamp_writes: None });
        pass.set_pipeline(&self.pipeline);
        for _ in 0..n {
            pass.set_bind_group(0, &self.bind_groups[(self.steps % 2) as usize], &[]);
            pass.dispatch_workgroups(self.workgroups[0], self.workgroups[1], 1);
            self.steps += 1;
        }
    }

    /// The buffer holding the state after the steps encoded so far.
    pub fn current(&self) -> &wgpu::Buffer {
        &self.buffers[(self.steps % 2) as usize]
    }

    /// Runs `n` steps and waits for them; for tests and tools, not for streaming.
    pub fn run_steps(&mut self, n: u32) -> Result<()> {
        let mut encoder = self.gpu.device().create_command_encoder(&Default::default());
        self.encode_steps(&mut encoder, n);
        let submission = self.gpu.queue().submit([encoder.finish()]);
        self.gpu.wait(submission)
    }

    /// Copies the whole current state (every field) back to the host, blocking.
    pub fn read_state(&self) -> Result<Vec<f32>> {
        let size = self.current().size();
        let staging = self.gpu.scoped("allocating a readback buffer", |device| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("read-state"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        let mut encoder = self.gpu.device().create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(self.current(), 0, &staging, 0, size);
        let (tx, rx) = std::sync::mpsc::channel();
        encoder.map_buffer_on_submit(&staging, wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        let submission = self.gpu.queue().submit([encoder.finish()]);
        self.gpu.wait(submission)?;
        crate::readback::mapped_result(&self.gpu, &rx)?;
        let values = {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| Error::Gpu { device: self.gpu.label().to_owned(), message: e.to_string() })?;
            bytemuck::pod_collect_to_vec::<u8, f32>(&view)
        };
        staging.unmap();
        Ok(values)
    }
}
