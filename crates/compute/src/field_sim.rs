//! The GPU state of a field-stencil kernel: a ping-pong pair of buffers per field, and the
//! compiled step.

use std::sync::Arc;

use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::invocation_width;
use crate::kernel::KernelSpec;
use crate::limits::{F32_BYTES as F32, GridFootprint};
use crate::noise::noise_key;
use crate::pipeline::{ComputeShader, storage};
use crate::prelude::{
    self, CLOCK_BYTES, FIRST_FIELD_BINDING, GRID_BINDING, Indexing, PARAMS_BINDING, VectorViews, WorkgroupShapes,
};
use crate::wgsl_check::CheckedWgsl;

/// How a [`FieldSim`]'s buffers map onto the grid: the whole grid, or one block of it with
/// ghost layers ([`crate::BlockSim`]). It sets the prelude's indexing, the dispatch and the
/// `grid` uniform.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    /// The grid the buffers hold (for a block: its cells plus one ghost layer per face).
    pub buffers: Grid,
    /// The cells a step updates, one invocation each.
    pub updated: Grid,
    /// The whole grid (`global_index` and the noise count its cells).
    pub global: Grid,
    /// The first updated cell's position in `global`, `[z, y, x]`.
    pub offset: [usize; 3],
    /// The prelude's mapping from invocations to cells.
    pub indexing: Indexing,
}

impl Layout {
    /// Buffers holding the whole `grid`.
    pub fn whole(grid: &Grid) -> Self {
        Layout { buffers: *grid, updated: *grid, global: *grid, offset: [0; 3], indexing: Indexing::Whole }
    }

    /// The `grid` uniform (`struct Grid` of shaders-wgsl/shared/field_stencil.wgsl).
    fn uniform(&self) -> [u32; 10] {
        // Grid::new keeps the cell count and every axis within u32.
        let b = &self.buffers;
        let g = &self.global;
        let [oz, oy, ox] = self.offset;
        [b.nx(), b.ny(), b.nz(), b.cells(), g.nx(), g.ny(), g.nz(), ox, oy, oz]
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    }
}

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
    /// `CELLS_PER_INVOCATION_X`, `_Y` and `_Z` as resolved for the adapter): the block the
    /// dispatch divides the grid into.
    cells_per_workgroup: [u32; 3],
    workgroups: [u32; 3],
    /// Whether the prelude's `load4_NAME`/`store4_NAME` go through vector views here.
    views: VectorViews,
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

/// The error of `spec` that cannot run as asked, saying why (`message`).
fn invalid_kernel(spec: &KernelSpec, message: String) -> Error {
    Error::InvalidKernel { kernel: spec.name.clone(), message }
}

/// Errors unless `spec` is written for grids of `grid`'s rank.
fn check_rank(spec: &KernelSpec, grid: &Grid) -> Result<()> {
    if grid.rank() == spec.rank {
        return Ok(());
    }
    Err(invalid_kernel(
        spec,
        format!(
            "it is written for {}-D grids and the grid {grid} is {}-D: give a grid of rank {} or a kernel for rank {}",
            spec.rank,
            grid.rank(),
            spec.rank,
            grid.rank()
        ),
    ))
}

/// The vector views `spec`'s fields on `grid` reach through on `gpu`: `asked`, or as the
/// device's limits and backend allow; errors when the device binds too few buffers for the
/// fields at all.
fn vector_views(gpu: &GpuDevice, spec: &KernelSpec, grid: &Grid, asked: Option<VectorViews>) -> Result<VectorViews> {
    // Bindings first: more fields than the device binds are refused before the prelude for
    // them is generated and validated (minutes for a GPU allowing a million bindings).
    let bindings = GridFootprint::new(grid, spec.fields.len(), spec.fields.len(), [1, 1, 1])?;
    let limits = gpu.device().limits();
    bindings.check_bindings(&limits, gpu.label())?;
    // WebGPU forbids `NAME_out` and `NAME_out4`, two writable bindings of one buffer, in one
    // bind group; native wgpu accepts them.
    Ok(asked.unwrap_or_else(|| match gpu.adapter().backend {
        wgpu::Backend::BrowserWebGpu => VectorViews::Emulated,
        _ => bindings.vector_views(&limits),
    }))
}

/// Whether `grid` fits `gpu` for `checked` at `width` cells per invocation along x. Rows and
/// planes per invocation are chosen per adapter and only shrink the dispatch: the fit is
/// checked at one of each, as the size checks before the devices opened were.
fn fits(gpu: &GpuDevice, grid: &Grid, fields: usize, checked: &CheckedWgsl, width: u32) -> bool {
    GridFootprint::new(grid, fields, fields, checked.cells_per_workgroup_with([width, 1, 1]))
        .is_ok_and(|f| f.check(&gpu.device().limits(), gpu.label()).is_ok())
}

/// `spec` checked for `layout`'s indexing and `views`, with the workgroup shapes it forces or
/// else `gpu`'s adapter's.
fn check_for_adapter(
    gpu: &GpuDevice,
    spec: &KernelSpec,
    layout: &Layout,
    views: VectorViews,
) -> Result<Arc<CheckedWgsl>> {
    if let Some(forced) = spec.workgroup_shapes {
        return spec.check_for(layout.indexing, forced, views);
    }
    let shapes = invocation_width::workgroup_shapes(gpu.adapter());
    let preferred = spec.check_for(layout.indexing, shapes, views)?;
    // A grid the adapter's shapes cannot dispatch even at the kernel's widest (more
    // workgroups along an axis than the device allows: a grid 4 rows per workgroup cannot be
    // 300000 rows tall) runs with the CPU drivers' shapes, which the size checks before the
    // devices opened allowed for.
    let widest = preferred.cells_per_invocation_x.cells;
    if shapes == WorkgroupShapes::CpuDriver || fits(gpu, &layout.buffers, spec.fields.len(), &preferred, widest) {
        Ok(preferred)
    } else {
        spec.check_for(layout.indexing, WorkgroupShapes::CpuDriver, views)
    }
}

/// The cells per invocation `[x, y, z]` `checked` runs with on `gpu` for `grid` (see
/// [`invocation_width`]).
fn cells_per_invocation(gpu: &GpuDevice, spec: &KernelSpec, grid: &Grid, checked: &CheckedWgsl) -> Result<[u32; 3]> {
    let dispatch_fits = |width: u32| fits(gpu, grid, spec.fields.len(), checked, width);
    let x = invocation_width::resolve(spec.invocation_width, checked, &spec.name, gpu.adapter(), &dispatch_fits)?;
    let [rows, planes] = invocation_width::resolve_rows_and_planes(spec.invocation_width, checked, gpu.adapter());
    Ok([x, rows, planes])
}

/// The buffers of bind group 0 of a field kernel with `fields` fields: the `grid` and
/// `params` uniforms, each field's pair (read, written), then with bound `views` the same
/// pairs again as `vec4` views.
fn field_bindings(fields: usize, views: VectorViews) -> Vec<(u32, wgpu::BufferBindingType)> {
    let mut bindings =
        vec![(GRID_BINDING, wgpu::BufferBindingType::Uniform), (PARAMS_BINDING, wgpu::BufferBindingType::Uniform)];
    let mut pair = |binding: u32| bindings.extend([(binding, storage(true)), (binding + 1, storage(false))]);
    for k in 0..fields as u32 {
        pair(FIRST_FIELD_BINDING + 2 * k);
    }
    if views == VectorViews::Bound {
        for k in 0..fields {
            pair(prelude::vector_view_binding(fields, k));
        }
    }
    bindings
}

/// The buffers a [`FieldSim`] binds: the `grid` and `params` uniforms, and per field its
/// ping-pong pair.
struct StateBuffers {
    grid: wgpu::Buffer,
    params: wgpu::Buffer,
    /// Per field: the buffer read at even steps, then the one read at odd steps.
    fields: Vec<[wgpu::Buffer; 2]>,
}

impl StateBuffers {
    /// The buffers of `spec` laid out as `layout` says, both of each field's pair holding its
    /// values in `initial` (field after field).
    fn new(gpu: &GpuDevice, spec: &KernelSpec, layout: &Layout, initial: &[f32]) -> Self {
        let dims = layout.uniform();
        let mut params: Vec<f32> = spec.params.clone();
        params.resize(params.len().div_ceil(4).max(1) * 4, 0.0);
        let grid = filled_buffer(gpu, "grid", bytemuck::cast_slice(&dims), wgpu::BufferUsages::UNIFORM);
        let params = filled_buffer(gpu, "params", bytemuck::cast_slice(&params), wgpu::BufferUsages::UNIFORM);
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let fields = spec
            .fields
            .iter()
            .zip(initial.chunks_exact(layout.buffers.cells()))
            .map(|(name, values)| {
                [0, 1].map(|side| {
                    let label = format!("field {name} ({})", ["a", "b"][side]);
                    filled_buffer(gpu, &label, bytemuck::cast_slice(values), usage)
                })
            })
            .collect();
        StateBuffers { grid, params, fields }
    }

    /// The bind group of a step that reads side `read` of each pair and writes the other,
    /// made with `layout` (see [`field_bindings`]).
    fn bind_group(
        &self,
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        views: VectorViews,
        read: usize,
    ) -> wgpu::BindGroup {
        let mut entries = vec![
            wgpu::BindGroupEntry { binding: GRID_BINDING, resource: self.grid.as_entire_binding() },
            wgpu::BindGroupEntry { binding: PARAMS_BINDING, resource: self.params.as_entire_binding() },
        ];
        // Each field's pair, then (with views) the same pair again as `vec4` views.
        let fields = self.fields.len();
        let mut pairs: Vec<(u32, &[wgpu::Buffer; 2])> =
            self.fields.iter().enumerate().map(|(k, pair)| (FIRST_FIELD_BINDING + 2 * k as u32, pair)).collect();
        if views == VectorViews::Bound {
            pairs.extend(
                self.fields.iter().enumerate().map(|(k, pair)| (prelude::vector_view_binding(fields, k), pair)),
            );
        }
        for (binding, pair) in pairs {
            entries.push(wgpu::BindGroupEntry { binding, resource: pair[read].as_entire_binding() });
            entries.push(wgpu::BindGroupEntry { binding: binding + 1, resource: pair[1 - read].as_entire_binding() });
        }
        device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("field-stencil"), layout, entries: &entries })
    }
}

/// A buffer of `gpu` holding `contents`, labelled `label`, for `usage`.
///
/// Created empty and filled through the queue, not `create_buffer_init`: that one maps the
/// buffer at creation and panics inside wgpu when the device is lost meanwhile (a device
/// failing mid-run must be an error, not a panic). Every size here is a multiple of 4 bytes
/// (u32/f32 contents), as `write_buffer` needs.
fn filled_buffer(gpu: &GpuDevice, label: &str, contents: &[u8], usage: wgpu::BufferUsages) -> wgpu::Buffer {
    let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: contents.len() as u64,
        usage: usage | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    gpu.queue().write_buffer(&buffer, 0, contents);
    buffer
}

impl FieldSim {
    /// Compiles `spec` on `gpu` for `grid` and uploads `initial`: every field, field after
    /// field, each in C order (`fields × cells` values). The state is at step 0.
    pub fn new(gpu: &GpuDevice, spec: &KernelSpec, grid: &Grid, initial: &[f32]) -> Result<Self> {
        Self::with_layout(gpu, spec, &Layout::whole(grid), initial)
    }

    /// [`FieldSim::new`] with buffers laid out as `layout` says; `initial` fills the buffers
    /// (`fields × layout.buffers` values).
    pub(crate) fn with_layout(gpu: &GpuDevice, spec: &KernelSpec, layout: &Layout, initial: &[f32]) -> Result<Self> {
        Self::with_views(gpu, spec, layout, initial, None)
    }

    /// [`FieldSim::with_layout`] with the vector views `views`, or (`None`) as the device's
    /// limits allow: tests take the emulated ones on a device that binds the views.
    fn with_views(
        gpu: &GpuDevice,
        spec: &KernelSpec,
        layout: &Layout,
        initial: &[f32],
        views: Option<VectorViews>,
    ) -> Result<Self> {
        let grid = &layout.buffers;
        check_rank(spec, grid)?;
        let views = vector_views(gpu, spec, grid, views)?;
        let checked = check_for_adapter(gpu, spec, layout, views)?;
        let cells_per_invocation = cells_per_invocation(gpu, spec, grid, &checked)?;
        let cells_per_workgroup = checked.cells_per_workgroup_with(cells_per_invocation);
        let constants = invocation_width::pipeline_constants(&checked, cells_per_invocation);
        let constants: Vec<(&str, f64)> = constants.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let fields = spec.fields.len();
        // Sized by the cells a workgroup covers, which is what the dispatch divides the grid by.
        let footprint = gpu.check_grid(grid, fields, fields, cells_per_workgroup)?;
        check_immediates(gpu)?;
        if initial.len() as u64 != footprint.cells * fields as u64 {
            return Err(invalid_kernel(
                spec,
                format!(
                    "initial state holds {} values, expected {fields} fields × {grid} = {}",
                    initial.len(),
                    footprint.cells * fields as u64
                ),
            ));
        }
        // The updated cells are at most the buffers' cells, whose dispatch `check_grid` checked.
        // Divided by the cells a workgroup covers (`CELLS_PER_INVOCATION_X`, `_Y`, `_Z` included).
        let workgroups = GridFootprint::new(&layout.updated, fields, fields, cells_per_workgroup)?.dispatch();
        gpu.scoped(&format!("compiling kernel {}", spec.name), |device| {
            let shader =
                ComputeShader::new(device, &spec.name, &checked.source, &field_bindings(fields, views), CLOCK_BYTES);
            let pipeline = shader.pipeline(device, &spec.name, "main", &constants);
            let state = StateBuffers::new(gpu, spec, layout, initial);
            let bind_groups = [0, 1].map(|read| state.bind_group(device, shader.group_layout(), views, read));
            (pipeline, state.fields, bind_groups)
        })
        .map(|(pipeline, buffers, bind_groups)| FieldSim {
            gpu: gpu.clone(),
            spec: spec.clone(),
            grid: *grid,
            pipeline,
            buffers,
            bind_groups,
            workgroup_size: checked.workgroup_size,
            cells_per_workgroup,
            workgroups,
            views,
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
        self.first_step.wrapping_add(self.done)
    }

    /// Both buffers of field `field` (by index): the one read at even steps, then at odd steps.
    pub(crate) fn buffer_pair(&self, field: usize) -> Option<&[wgpu::Buffer; 2]> {
        self.buffers.get(field)
    }

    /// Index of the buffer of each pair that holds the current state.
    pub(crate) fn current_side(&self) -> usize {
        (self.done % 2) as usize
    }

    /// The kernel's workgroup size `[x, y, z]`.
    pub fn workgroup_size(&self) -> [u32; 3] {
        self.workgroup_size
    }

    /// The cells one workgroup updates, `[x, y, z]`: the workgroup size, times the cells per
    /// invocation along x this device runs the kernel with (`InvocationWidth`); the dispatch
    /// divides the grid into these blocks.
    pub fn cells_per_workgroup(&self) -> [u32; 3] {
        self.cells_per_workgroup
    }

    /// Whether the prelude's `load4_NAME`/`store4_NAME` reach the fields through vector views
    /// on this device ([`VectorViews`]).
    pub fn vector_views(&self) -> VectorViews {
        self.views
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

    /// Buffer `side` (0 or 1) of field `field`'s ping-pong pair, for passes that read the
    /// state after the steps (the f16 pack pass binds both sides once).
    pub(crate) fn side_buffer(&self, field: usize, side: usize) -> Option<&wgpu::Buffer> {
        self.buffers.get(field).and_then(|pair| pair.get(side))
    }

    /// Bytes of the complete state: every field at full precision (f32), field after field.
    /// With the step count, it is all the next step depends on (the noise is keyed by the
    /// kernel's seed and the step), so it is what a checkpoint saves.
    pub fn state_bytes(&self) -> u64 {
        self.field_bytes() * self.buffers.len() as u64
    }

    /// Records into `encoder` copies of every field's values after the steps encoded so far,
    /// field after field, into `dst` from offset 0 (at least [`FieldSim::state_bytes`] long).
    pub fn encode_state_copy(&self, encoder: &mut wgpu::CommandEncoder, dst: &wgpu::Buffer) {
        let bytes = self.field_bytes();
        for (k, pair) in self.buffers.iter().enumerate() {
            encoder.copy_buffer_to_buffer(&pair[self.current_side()], 0, dst, k as u64 * bytes, bytes);
        }
    }

    /// Replaces the state with `state` (as [`FieldSim::encode_state_copy`] saved it: every
    /// field, f32 little-endian) taken after `step` steps, so that the next step encoded is
    /// step `step`: what restarting from a checkpoint does.
    pub fn restore_state(&mut self, state: &[u8], step: u64) -> Result<()> {
        if state.len() as u64 != self.state_bytes() {
            return Err(Error::InvalidKernel {
                kernel: self.spec.name.clone(),
                message: format!(
                    "a saved state of {} bytes cannot restore {} fields × {} (expected {} bytes): it was saved \
                     by another kernel or grid",
                    state.len(),
                    self.buffers.len(),
                    self.grid,
                    self.state_bytes()
                ),
            });
        }
        let bytes = usize::try_from(self.field_bytes()).unwrap_or(usize::MAX);
        for (pair, values) in self.buffers.iter().zip(state.chunks_exact(bytes.max(1))) {
            self.gpu.queue().write_buffer(&pair[self.current_side()], 0, values);
        }
        self.first_step = step.wrapping_sub(self.done);
        Ok(())
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
        let all: Vec<usize> = (0..self.buffers.len()).collect();
        self.read_fields(&all)
    }

    /// Copies the current values of `fields` (indices into the kernel's fields, in the order
    /// given) back to the host, blocking; field after field.
    pub fn read_fields(&self, fields: &[usize]) -> Result<Vec<f32>> {
        let pairs = fields
            .iter()
            .map(|k| {
                self.buffers.get(*k).ok_or_else(|| Error::InvalidKernel {
                    kernel: self.spec.name.clone(),
                    message: format!(
                        "it has no field {k}: its fields are {:?}, indices 0 to {}",
                        self.spec.fields,
                        self.buffers.len() - 1
                    ),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if pairs.is_empty() {
            return Ok(Vec::new());
        }
        let field_bytes = self.field_bytes();
        let size = field_bytes * fields.len() as u64;
        let staging = self.gpu.scoped("allocating a readback buffer", |device| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("read-state"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        let mut encoder = self.gpu.device().create_command_encoder(&Default::default());
        for (k, pair) in pairs.into_iter().enumerate() {
            let current = &pair[self.current_side()];
            encoder.copy_buffer_to_buffer(current, 0, &staging, k as u64 * field_bytes, field_bytes);
        }
        self.gpu.submit_and_read(encoder, &staging, bytemuck::pod_collect_to_vec::<u8, f32>)
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;
    use crate::{Boundary, DeviceSelector, gray_scott_3d, open_devices};

    /// The prelude's `load4_NAME`/`store4_NAME` give the same bits through vector views and
    /// through four scalar accesses (what a device without the bindings for the views runs):
    /// the 3-D Gray-Scott moves whole aligned rows with them on CPU drivers. Rows of 16 and 20
    /// cells (20: the last 4 of a row take the scalar brick), odd rows and planes so bricks
    /// lack their second row or plane, both boundaries.
    #[test]
    fn vector_views_and_their_emulation_give_the_same_bits() {
        let gpu = open_devices(&DeviceSelector::Indices(vec![0]), 1).unwrap().remove(0);
        let params = gray_scott_3d::GrayScott3dParams { noise: 0.02, ..Default::default() };
        for shape in [[5, 3, 16], [3, 7, 20]] {
            let grid = Grid::new(&shape).unwrap();
            let init = gray_scott_3d::initial_state(&grid);
            for boundary in Boundary::ALL {
                let spec = params.kernel(4).with_boundary(boundary);
                let states: Vec<Vec<f32>> = [None, Some(VectorViews::Emulated)]
                    .into_iter()
                    .map(|views| {
                        let mut sim = FieldSim::with_views(&gpu, &spec, &Layout::whole(&grid), &init, views).unwrap();
                        if let Some(v) = views {
                            assert_eq!(sim.vector_views(), v);
                        } else {
                            assert_eq!(sim.vector_views(), VectorViews::Bound, "lavapipe binds them");
                        }
                        sim.run_steps(20).unwrap();
                        sim.read_state().unwrap()
                    })
                    .collect();
                assert!(states[0] != init, "{shape:?}, {boundary}: nothing changed");
                assert!(states[0] == states[1], "{shape:?}, {boundary}: the views and their emulation differ");
            }
        }
    }
}
