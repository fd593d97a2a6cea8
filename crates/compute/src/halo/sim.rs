//! [`BlockSim`]: a field-stencil kernel on one block, with ghost layers and the GPU copies
//! that fill and drain them.

use super::{Block, Faces};
use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::field_sim::{FieldSim, Layout};
use crate::grid::Grid;
use crate::kernel::KernelSpec;
use crate::pipeline::{ComputeShader, storage};
use crate::prelude::{Boundary, Indexing};
use crate::zfp::packer::ZfpPacker;
use crate::zfp::{ZfpField, ZfpRate};

/// The pack/unpack shader.
const FACES_WGSL: &str = include_str!("faces.wgsl");
/// Its `WORKGROUP`.
const FACES_WORKGROUP: u32 = 64;

/// A field-stencil kernel on a [`Block`] with a one-cell ghost layer on every face.
///
/// A step updates only the block's own cells; the ghosts hold what the neighbours sent
/// ([`BlockSim::write_ghosts`]). The kernel is compiled with the block prelude
/// ([`Indexing::Block`]): its `global_index(c)` is the cell's index in the whole grid, so
/// noise drawn with `uniform_noise(global_index(c))` is the whole grid's, and a split run is
/// bit-identical to the whole grid run by [`FieldSim`] (periodic boundary, same seed and
/// parameters). One step of a split run:
///
/// ```text
/// faces = sim.read_faces()?;          // one GPU round trip: every face of every field
/// ghosts = (exchange with the neighbours: ghosts.get(a, Low) = low neighbour's faces.get(a, High), ...)
/// sim.write_ghosts(&ghosts)?;         // one upload + one unpack dispatch per field
/// sim.run_step()?;
/// ```
///
/// Cost per step, with `F` fields of a block of `nz × ny × nx` cells: the faces are
/// `S = 2 · F · (ny·nx + nz·nx + nz·ny)` values, `4·S` bytes read back (pack into a device
/// buffer, one copy to a mapped staging buffer, one wait) and `4·S` bytes uploaded (one
/// `write_buffer`), plus `F` pack and `F` unpack dispatches of `S / F` invocations each. For a
/// 64³ block of the 2-field Gray-Scott that is 196 608 bytes each way, against 2 MiB of state.
///
/// Supported: rank 1 and 3 (3- and 7-point stencils need only faces); rank 2 (the 9-point
/// Laplacian reads diagonal neighbours, which need corner ghosts) is refused. Only faces are
/// exchanged: the ghost edges and corners of a 3-D block stay 0, so a kernel must read its
/// neighbours through the faces only (`laplacian7_NAME`, or `neighbour` with one non-zero
/// offset). A split grid must be periodic; a zero-flux kernel runs only on the whole grid (its
/// ghosts then mirror its own boundary layers: [`crate::exchange_faces`]).
pub struct BlockSim {
    sim: FieldSim,
    block: Block,
    /// The block's own cells inside its buffers (the inner [`FieldSim`]'s grid, ghosts
    /// included): offset 1 on every axis.
    interior: Block,
    /// Every face of every field: what pack writes, then the ghosts unpack reads.
    faces: wgpu::Buffer,
    /// `faces` copied for the host to map.
    staging: wgpu::Buffer,
    pack: wgpu::ComputePipeline,
    unpack: wgpu::ComputePipeline,
    /// Per field: the bind group of the buffer read at even steps, then at odd steps.
    bind_groups: Vec<[wgpu::BindGroup; 2]>,
    /// Workgroups of one pack or unpack dispatch.
    dispatch: [u32; 2],
    /// An empty `Faces` of this block: the layout `read_faces` fills and `write_ghosts` takes.
    layout: Faces,
    /// The ZFP pass of the fields a frame holds as streams ([`BlockSim::with_zfp`]).
    zfp: Option<ZfpPacker>,
}

/// Errors unless `spec` can run split on `block` (its rank, 1 or 3, and the periodic boundary
/// unless the block is the whole grid) from `initial`, the block's cells of every field.
fn check_block(spec: &KernelSpec, block: &Block, initial: &[f32]) -> Result<()> {
    let invalid = |message: String| Error::InvalidKernel { kernel: spec.name.clone(), message };
    let rank = block.global().rank();
    if spec.rank != rank {
        return Err(invalid(format!(
            "it is written for {}-D grids and the grid {} is {rank}-D: give a grid of rank {} or a kernel for \
             rank {rank}",
            spec.rank,
            block.global(),
            spec.rank
        )));
    }
    if rank == 2 {
        return Err(invalid(
            "blocks (split domains) support 1-D and 3-D kernels: the 2-D 9-point Laplacian reads diagonal \
             neighbours, which need corner ghosts that the face exchange does not carry; run 2-D grids whole \
             with FieldSim"
                .to_owned(),
        ));
    }
    if spec.boundary != Boundary::Periodic && !block.is_whole() {
        return Err(invalid(format!(
            "split domains support the periodic boundary; the kernel's boundary is {} and the block at offset \
             {:?} of shape {:?} is not the whole {} grid: use boundary = \"periodic\" or one block",
            spec.boundary,
            block.offset(),
            block.shape(),
            block.global()
        )));
    }
    let fields = spec.fields.len();
    if Some(initial.len()) != fields.checked_mul(block.cells()) {
        return Err(invalid(format!(
            "initial state of the block holds {} values, expected {fields} fields × {} cells of the block {:?}",
            initial.len(),
            block.cells(),
            block.shape()
        )));
    }
    Ok(())
}

/// Workgroups `[x, y]` of one pack or unpack dispatch over `face_values` values of `fields`
/// fields (one field a dispatch), rows no longer than the device allows.
fn face_dispatch(gpu: &GpuDevice, face_values: usize, fields: usize) -> [u32; 2] {
    let halo_groups = (face_values / fields.max(1)).div_ceil(FACES_WORKGROUP as usize);
    let max_groups = gpu.device().limits().max_compute_workgroups_per_dimension.max(1) as usize;
    let groups_x = halo_groups.clamp(1, max_groups);
    [groups_x, halo_groups.div_ceil(groups_x).max(1)].map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// The `halo` uniform of faces.wgsl: the `padded` buffers' axes and `fields`, then whether
/// each axis exists at rank `rank`.
fn halo_uniform(padded: &Grid, rank: usize, fields: usize) -> [u32; 8] {
    let g = |axis_rank: usize| u32::from(rank >= axis_rank);
    let dims = [padded.nx(), padded.ny(), padded.nz(), fields].map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    [dims[0], dims[1], dims[2], dims[3], g(1), g(2), g(3), 0]
}

/// The GPU side of a block's face exchange, as [`BlockSim`] keeps it.
struct HaloPasses {
    faces: wgpu::Buffer,
    staging: wgpu::Buffer,
    pack: wgpu::ComputePipeline,
    unpack: wgpu::ComputePipeline,
    bind_groups: Vec<[wgpu::BindGroup; 2]>,
}

impl HaloPasses {
    /// Compiles the pack and unpack passes on `gpu` for `sim`'s field buffers, with faces of
    /// `face_bytes` bytes and the `halo` uniform `uniform`.
    fn new(gpu: &GpuDevice, sim: &FieldSim, uniform: &[u32; 8], face_bytes: u64) -> Result<Self> {
        gpu.scoped("creating the halo buffers and shaders", |device| {
            let storage = storage(false);
            let buffers = [(0, wgpu::BufferBindingType::Uniform), (1, storage), (2, storage)];
            let shader = ComputeShader::new(device, "halo faces", FACES_WGSL, &buffers, 4);
            let (pack, unpack) =
                (shader.pipeline(device, "pack", "pack", &[]), shader.pipeline(device, "unpack", "unpack", &[]));
            let buffer = |label: &str, size: u64, usage: wgpu::BufferUsages| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: size.max(4),
                    usage,
                    mapped_at_creation: false,
                })
            };
            let copy = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
            let faces = buffer("halo faces", face_bytes, wgpu::BufferUsages::STORAGE | copy);
            let staging =
                buffer("halo faces staging", face_bytes, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
            let halo = buffer("halo uniform", 32, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST);
            gpu.queue().write_buffer(&halo, 0, bytemuck::cast_slice(uniform));
            let bind_groups = halo_bind_groups(device, &shader, sim, &halo, &faces);
            HaloPasses { faces, staging, pack, unpack, bind_groups }
        })
    }
}

/// Per field of `sim`: the bind groups of the buffer read at even steps, then at odd steps,
/// with the `halo` uniform and the `faces` buffer.
fn halo_bind_groups(
    device: &wgpu::Device,
    shader: &ComputeShader,
    sim: &FieldSim,
    halo: &wgpu::Buffer,
    faces: &wgpu::Buffer,
) -> Vec<[wgpu::BindGroup; 2]> {
    (0..sim.spec().fields.len())
        .filter_map(|k| sim.buffer_pair(k))
        .map(|pair| {
            pair.each_ref().map(|field| {
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("halo faces"),
                    layout: shader.group_layout(),
                    entries: &[
                        wgpu::BindGroupEntry { binding: 0, resource: halo.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 1, resource: field.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 2, resource: faces.as_entire_binding() },
                    ],
                })
            })
        })
        .collect()
}

impl std::fmt::Debug for BlockSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockSim")
            .field("kernel", &self.sim.spec().name)
            .field("device", &self.sim.gpu().label())
            .field("global", &self.block.global().shape())
            .field("offset", &self.block.offset())
            .field("shape", &self.block.shape())
            .field("steps", &self.steps())
            .finish()
    }
}

impl BlockSim {
    /// Compiles `spec` on `gpu` for `block` and uploads `initial`: the block's cells of every
    /// field (`fields × block cells`, no ghosts), field after field, C order. The ghosts start
    /// at 0: exchange before the first step. Errors as [`FieldSim::new`] does, and for a rank
    /// or boundary a split cannot support.
    pub fn new(gpu: &GpuDevice, spec: &KernelSpec, block: &Block, initial: &[f32]) -> Result<Self> {
        check_block(spec, block, initial)?;
        let rank = block.global().rank();
        let fields = spec.fields.len();
        let padded_shape: Vec<usize> = block.shape().iter().map(|n| n + 2).collect();
        let padded = Grid::new(&padded_shape)?;
        let mut padded_state = vec![0.0; fields * padded.cells()];
        let interior = Block::new(&padded, &vec![1; rank], block.shape())?;
        interior.place(initial, fields, &mut padded_state)?;
        let layout = Layout {
            buffers: padded,
            updated: *block.grid(),
            global: *block.global(),
            offset: block.offset3(),
            indexing: Indexing::Block,
        };
        let sim = FieldSim::with_layout(gpu, spec, &layout, &padded_state)?;
        let faces_layout = Faces::new(block, fields);
        let face_values = faces_layout.as_slice().len();
        let dispatch = face_dispatch(gpu, face_values, fields);
        let uniform = halo_uniform(&padded, rank, fields);
        let HaloPasses { faces, staging, pack, unpack, bind_groups } =
            HaloPasses::new(gpu, &sim, &uniform, (face_values * 4) as u64)?;
        Ok(BlockSim {
            sim,
            block: block.clone(),
            interior,
            faces,
            staging,
            pack,
            unpack,
            bind_groups,
            dispatch,
            layout: faces_layout,
            zfp: None,
        })
    }

    /// The same simulation, its frames holding `fields` (indices into the kernel's) as ZFP
    /// fixed-rate streams at `rate` of the block's own cells ([`BlockSim::encode_block_streams`]),
    /// each coded as an array of the block's shape without its axes of size 1: the chunk of the
    /// block a Zarr store of the whole grid holds. Errors where the encoder cannot run here.
    pub fn with_zfp(mut self, fields: &[usize], rate: ZfpRate) -> Result<Self> {
        let padded = self.interior.global().shape();
        let strides: Vec<usize> = (0..padded.len()).map(|a| padded[a + 1..].iter().product()).collect();
        // The block's first cell lies one ghost layer in along every axis.
        let first = strides.iter().sum();
        let field = ZfpField::squeezed_within(self.block.shape(), &strides, first)?;
        self.zfp = Some(ZfpPacker::over(&self.sim, field, fields, rate)?);
        Ok(self)
    }

    /// Bytes of one field's stream ([`BlockSim::with_zfp`]), or `None` for a simulation whose
    /// frames hold values.
    pub fn zfp_stream_bytes(&self) -> Option<u64> {
        self.zfp.as_ref().map(ZfpPacker::stream_bytes)
    }

    /// Records the ZFP encoding of the fields of [`BlockSim::with_zfp`] after the steps
    /// recorded so far, and the copies of their streams into `target` from byte 0, one after
    /// the other. Errors for a simulation without [`BlockSim::with_zfp`].
    pub fn encode_block_streams(&self, encoder: &mut wgpu::CommandEncoder, target: &wgpu::Buffer) -> Result<()> {
        let zfp = self.zfp.as_ref().ok_or_else(|| Error::InvalidEncoding {
            what: "the block's ZFP streams".to_owned(),
            message: "this block simulation encodes no field: build it with BlockSim::with_zfp".to_owned(),
        })?;
        zfp.encode(encoder, self.sim.current_side(), target);
        Ok(())
    }

    /// The same simulation with its current state taken as the state after `step` steps (a
    /// resumed run), so the noise continues where the interrupted run left off.
    pub fn starting_at_step(mut self, step: u64) -> Self {
        self.sim = self.sim.starting_at_step(step);
        self
    }

    /// The block this simulation computes.
    pub fn block(&self) -> &Block {
        &self.block
    }

    /// The kernel.
    pub fn spec(&self) -> &KernelSpec {
        self.sim.spec()
    }

    /// The device.
    pub fn gpu(&self) -> &GpuDevice {
        self.sim.gpu()
    }

    /// Steps done so far, counting from step 0 (see [`BlockSim::starting_at_step`]).
    pub fn steps(&self) -> u64 {
        self.sim.steps()
    }

    /// Records one pack or unpack dispatch per field on the current buffers.
    fn encode_halo(&self, encoder: &mut wgpu::CommandEncoder, pipeline: &wgpu::ComputePipeline) {
        let mut pass =
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("halo"), timestamp_writes: None });
        pass.set_pipeline(pipeline);
        let side = self.sim.current_side();
        for (k, groups) in self.bind_groups.iter().enumerate() {
            pass.set_bind_group(0, &groups[side], &[]);
            pass.set_immediates(0, bytemuck::bytes_of(&(k as u32)));
            pass.dispatch_workgroups(self.dispatch[0], self.dispatch[1], 1);
        }
    }

    /// The block's own boundary layer next to every face, for the neighbours, in one GPU round
    /// trip: `faces.get(axis, side)` is what the neighbour on that side needs,
    /// [`Block::face_len`] values, field after field, each in C order of the other axes.
    pub fn read_faces(&mut self) -> Result<Faces> {
        let gpu = self.sim.gpu();
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        self.encode_halo(&mut encoder, &self.pack);
        encoder.copy_buffer_to_buffer(&self.faces, 0, &self.staging, 0, self.faces.size());
        let mut faces = self.layout.clone();
        gpu.submit_and_read(encoder, &self.staging, |view| {
            let values: &mut [u8] = bytemuck::cast_slice_mut(faces.as_mut_slice());
            let bytes = values.len();
            values.copy_from_slice(&view[..bytes]);
        })?;
        Ok(faces)
    }

    /// Fills the ghost layers with what the neighbours sent: `ghosts.get(axis, side)` is the
    /// layer beyond the block's face on that side (the neighbour's own boundary layer facing
    /// this block), laid out as [`BlockSim::read_faces`] returns. One upload and one unpack
    /// dispatch per field, queued before the next step.
    pub fn write_ghosts(&mut self, ghosts: &Faces) -> Result<()> {
        if !ghosts.same_layout(&self.layout) {
            return Err(Error::InvalidBlock {
                what: format!("at offset {:?} of shape {:?}", self.block.offset(), self.block.shape()),
                global: self.block.global().to_string(),
                message: format!(
                    "the ghosts given have the layout of another block or field count ({} values per axis and \
                     side: {:?}); this block takes {:?}: build them with Faces::new of this block",
                    ghosts.as_slice().len(),
                    ghosts.lens(),
                    self.layout.lens()
                ),
            });
        }
        let gpu = self.sim.gpu();
        if !ghosts.as_slice().is_empty() {
            gpu.queue().write_buffer(&self.faces, 0, bytemuck::cast_slice(ghosts.as_slice()));
        }
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        self.encode_halo(&mut encoder, &self.unpack);
        gpu.queue().submit([encoder.finish()]);
        gpu.check()
    }

    /// One step of the kernel on the block's own cells (the ghosts must be current); queued,
    /// not waited for: [`BlockSim::read_faces`] and [`BlockSim::read_block`] wait.
    pub fn run_step(&mut self) -> Result<()> {
        let gpu = self.sim.gpu().clone();
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        self.sim.encode_steps(&mut encoder, 1);
        gpu.queue().submit([encoder.finish()]);
        gpu.check()
    }

    /// Records copies of the block's own cells of `fields` (indices into the kernel's fields;
    /// an index out of range copies nothing) into `target` from offset 0: field after field,
    /// C order of the block, f32 — [`BlockSim::read_block`]'s layout, on the GPU, so a
    /// [`crate::FrameSource`] can read a block back through the staging ring. One copy per
    /// row of the block along its last axis (the rows are not contiguous in the buffers,
    /// which hold the ghosts too).
    pub fn encode_block_copy(&self, encoder: &mut wgpu::CommandEncoder, fields: &[usize], target: &wgpu::Buffer) {
        let padded = self.interior.global().shape();
        let shape = self.block.shape();
        let (row, rows) = match shape.split_last() {
            Some((&row, outer)) => (row, outer.iter().product::<usize>()),
            None => return,
        };
        let field_bytes = (self.block.cells() * 4) as u64;
        for (k, &f) in fields.iter().enumerate() {
            let Some(current) = self.sim.current(f) else { continue };
            for r in 0..rows {
                // The row's index along each outer axis, slowest first, then its first cell
                // in the padded buffer (offset 1 on every axis).
                let (mut rest, mut cell) = (r, 0usize);
                let mut stride = padded[padded.len() - 1];
                for axis in (0..shape.len() - 1).rev() {
                    cell += (rest % shape[axis] + 1) * stride;
                    rest /= shape[axis];
                    stride *= padded[axis];
                }
                let from = ((cell + 1) * 4) as u64;
                let to = k as u64 * field_bytes + (r * row * 4) as u64;
                encoder.copy_buffer_to_buffer(current, from, target, to, (row * 4) as u64);
            }
        }
    }

    /// The block's own cells of `fields` (indices into the kernel's fields), field after field,
    /// C order of the block: what a rank writes as its hyperslab of a frame. Blocking.
    pub fn read_block(&self, fields: &[usize]) -> Result<Vec<f32>> {
        self.interior.extract(&self.sim.read_fields(fields)?, fields.len())
    }
}
