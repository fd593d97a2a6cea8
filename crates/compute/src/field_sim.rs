//! The GPU state of a field-stencil kernel: a ping-pong pair of buffers per field, and the
//! compiled step.

use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::kernel::KernelSpec;
use crate::limits::F32_BYTES as F32;
use crate::noise::noise_key;
use crate::prelude::{CLOCK_BYTES, FIRST_FIELD_BINDING, GRID_BINDING, PARAMS_BINDING};

/// A kernel running on one device. Every field lives in its own two buffers that swap roles
/// each step (read `NAME_in`, write `NAME_out`), so a step never reads what it is writing and a
/// field is limited by the device's per-buffer limits, not the whole state.
pub struct FieldSim {
    gpu: GpuDevice,
    spec: KernelSpec,
    grid: Grid,
    pipeline: wgpu::ComputePipeline,
    /// Per field: the buffer read at even steps, then the one read at odd steps.
    buffers: Vec<[wgpu::Buffer; 2]>,
    bind_groups: [wgpu::BindGroup; 2],
    workgroup_size: [u32; 3],
    /// Cells one workgroup updates per axis (the workgroup size, times the kernel's
    /// `CELLS_PER_INVOCATION_X` along x): the block the dispatch divides the grid into.
    cells_per_workgroup: [u32; 3],
    workgroups: [u32; 3],
    /// The step the initial state stands for (0 unless resumed).
    first_step: u64,
    /// Steps encoded since the initial state; its parity says which buffer is current.
    done: u64,
}

impl std::fmt::Debug for FieldSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldSim")
            .field("kernel", &self.spec.name)
            .field("device", &self.gpu.label())
            .field("grid", &self.grid.shape())
            .field("steps", &self.steps())
            .finish()
    }
}

/// Errors unless `gpu` can pass the step clock as immediate data, the one feature field
/// kernels need beyond WebGPU's defaults. Sizes are [`GpuDevice::check_grid`]'s.
fn check_immediates(gpu: &GpuDevice) -> Result<()> {
    let limits = gpu.device().limits();
    if !gpu.device().features().contains(wgpu::Features::IMMEDIATES) || limits.max_immediate_size < CLOCK_BYTES {
        return Err(Error::Gpu {
            device: gpu.label().to_owned(),
            message: format!(
                "field kernels receive their step clock as {CLOCK_BYTES} bytes of immediate data (push \
                 constants), which this device does not offer; choose another adapter (`wgpipe devices`)"
            ),
        });
    }
    Ok(())
}

impl FieldSim {
    /// Compiles `spec` on `gpu` for `grid` and uploads `initial`: every field, field after
    /// field, each in C order (`fields × cells` values). The state is at step 0.
    pub fn new(gpu: &GpuDevice, spec: &KernelSpec, grid: &Grid, initial: &[f32]) -> Result<Self> {
        let invalid = |message: String| Error::InvalidKernel { kernel: spec.name.clone(), message };
        if grid.rank() != spec.rank {
            return Err(invalid(format!(
                "it is written for {}-D grids and the grid {grid} is {}-D: give a grid of rank {} or a kernel \
                 for rank {}",
                spec.rank,
                grid.rank(),
                spec.rank,
                grid.rank()
            )));
        }
        let checked = spec.check()?;
        let fields = spec.fields.len();
        // Sized by the cells a workgroup covers, which is what the dispatch divides the grid by.
        let footprint = gpu.check_grid(grid, fields, fields, checked.cells_per_workgroup())?;
        check_immediates(gpu)?;
        let cells = grid.cells();
        if initial.len() as u64 != footprint.cells * fields as u64 {
            return Err(invalid(format!(
                "initial state holds {} values, expected {fields} fields × {grid} = {}",
                initial.len(),
                footprint.cells * fields as u64
            )));
        }
        let workgroups = footprint.dispatch();
        // Grid::new keeps the cell count and every axis within u32.
        let dims = [grid.nx(), grid.ny(), grid.nz(), cells].map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        let mut params: Vec<f32> = spec.params.clone();
        params.resize(params.len().div_ceil(4).max(1) * 4, 0.0);

        gpu.scoped(&format!("compiling kernel {}", spec.name), |device| {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(&spec.name),
                source: wgpu::ShaderSource::Wgsl(checked.source.as_str().into()),
            });
            let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
                count: None,
            };
            let mut entries = vec![
                entry(GRID_BINDING, wgpu::BufferBindingType::Uniform),
                entry(PARAMS_BINDING, wgpu::BufferBindingType::Uniform),
            ];
            for k in 0..fields as u32 {
                let binding = FIRST_FIELD_BINDING + 2 * k;
                entries.push(entry(binding, wgpu::BufferBindingType::Storage { read_only: true }));
                entries.push(entry(binding + 1, wgpu::BufferBindingType::Storage { read_only: false }));
            }
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("field-stencil"),
                entries: &entries,
            });
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("field-stencil"),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: CLOCK_BYTES,
            });
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&spec.name),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
            // Created empty and filled through the queue, not `create_buffer_init`: that one maps
            // the buffer at creation and panics inside wgpu when the device is lost meanwhile
            // (a device failing mid-run must be an error, not a panic). Every size here is a
            // multiple of 4 bytes (u32/f32 contents), as `write_buffer` needs.
            let filled = |label: &str, contents: &[u8], usage: wgpu::BufferUsages| {
                let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: contents.len() as u64,
                    usage: usage | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                gpu.queue().write_buffer(&buffer, 0, contents);
                buffer
            };
            let grid_buf = filled("grid", bytemuck::cast_slice(&dims), wgpu::BufferUsages::UNIFORM);
            let params_buf = filled("params", bytemuck::cast_slice(&params), wgpu::BufferUsages::UNIFORM);
            let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
            let buffers: Vec<[wgpu::Buffer; 2]> = spec
                .fields
                .iter()
                .zip(initial.chunks_exact(cells))
                .map(|(name, values)| {
                    [0, 1].map(|side| {
                        filled(&format!("field {name} ({})", ["a", "b"][side]), bytemuck::cast_slice(values), usage)
                    })
                })
                .collect();
            let bind = |read: usize| {
                let mut entries = vec![
                    wgpu::BindGroupEntry { binding: GRID_BINDING, resource: grid_buf.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: PARAMS_BINDING, resource: params_buf.as_entire_binding() },
                ];
                for (k, pair) in buffers.iter().enumerate() {
                    let binding = FIRST_FIELD_BINDING + 2 * k as u32;
                    entries.push(wgpu::BindGroupEntry { binding, resource: pair[read].as_entire_binding() });
                    entries.push(wgpu::BindGroupEntry {
                        binding: binding + 1,
                        resource: pair[1 - read].as_entire_binding(),
                    });
                }
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("field-stencil"),
                    layout: &layout,
                    entries: &entries,
                })
            };
            let bind_groups = [bind(0), bind(1)];
            (pipeline, buffers, bind_groups)
        })
        .map(|(pipeline, buffers, bind_groups)| FieldSim {
            gpu: gpu.clone(),
            spec: spec.clone(),
            grid: *grid,
            pipeline,
            buffers,
            bind_groups,
            workgroup_size: checked.workgroup_size,
            cells_per_workgroup: checked.cells_per_workgroup(),
            workgroups,
            first_step: 0,
            done: 0,
        })
    }

    /// The same simulation with its current state taken as the state after `step` steps: what
    /// a resumed run does with a stored state, so that step-dependent terms (the noise) and
    /// the steps reported with frames continue where the interrupted run left off.
    pub fn starting_at_step(mut self, step: u64) -> Self {
        self.first_step = step.saturating_sub(self.done);
        self
    }

    /// The device this state lives on.
    pub fn gpu(&self) -> &GpuDevice {
        &self.gpu
    }

    /// The kernel.
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Steps done (or encoded) so far, counting from step 0 (see [`FieldSim::starting_at_step`]).
    pub fn steps(&self) -> u64 {
        self.first_step + self.done
    }

    /// Index of the buffer of each pair that holds the current state.
    fn current_side(&self) -> usize {
        (self.done % 2) as usize
    }

    /// The kernel's workgroup size `[x, y, z]`.
    pub fn workgroup_size(&self) -> [u32; 3] {
        self.workgroup_size
    }

    /// The cells one workgroup updates, `[x, y, z]`: the workgroup size, times the kernel's
    /// `CELLS_PER_INVOCATION_X` along x; the dispatch divides the grid into these blocks.
    pub fn cells_per_workgroup(&self) -> [u32; 3] {
        self.cells_per_workgroup
    }

    /// Bytes of one field.
    pub fn field_bytes(&self) -> u64 {
        self.grid.cells() as u64 * F32
    }

    /// Records `n` steps into one compute pass of `encoder`, each with its own step clock.
    pub fn encode_steps(&mut self, encoder: &mut wgpu::CommandEncoder, n: u32) {
        let mut pass =
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("steps"), timestamp_writes: None });
        pass.set_pipeline(&self.pipeline);
        let [x, y, z] = self.workgroups;
        for _ in 0..n {
            let step = self.steps();
            let clock = [step as u32, (step >> 32) as u32, noise_key(self.spec.seed, step)];
            pass.set_bind_group(0, &self.bind_groups[self.current_side()], &[]);
            pass.set_immediates(0, bytemuck::cast_slice(&clock));
            pass.dispatch_workgroups(x, y, z);
            self.done += 1;
        }
    }

    /// The buffer holding field `field` (by index) after the steps encoded so far.
    pub fn current(&self, field: usize) -> Option<&wgpu::Buffer> {
        self.buffers.get(field).map(|pair| &pair[self.current_side()])
    }

    /// Runs `n` steps and waits for them; for tests and tools, not for streaming.
    pub fn run_steps(&mut self, n: u32) -> Result<()> {
        let mut encoder = self.gpu.device().create_command_encoder(&Default::default());
        self.encode_steps(&mut encoder, n);
        let submission = self.gpu.queue().submit([encoder.finish()]);
        self.gpu.wait(submission)
    }

    /// Copies the whole current state (every field, field after field) back to the host, blocking.
    pub fn read_state(&self) -> Result<Vec<f32>> {
        let field_bytes = self.field_bytes();
        let size = field_bytes * self.buffers.len() as u64;
        let staging = self.gpu.scoped("allocating a readback buffer", |device| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("read-state"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        let mut encoder = self.gpu.device().create_command_encoder(&Default::default());
        for (k, pair) in self.buffers.iter().enumerate() {
            let current = &pair[self.current_side()];
            encoder.copy_buffer_to_buffer(current, 0, &staging, k as u64 * field_bytes, field_bytes);
        }
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
