//! Reduced-precision frames: fields computed in f32 and stored as IEEE binary16, converted on
//! the GPU so that the readback, the host copy and the sink all move half the bytes.
//!
//! A small compute pass after a frame's steps packs each read field into its own buffer of
//! u32 words with WGSL's `pack2x16float` (cells 2w and 2w + 1 into word w, the lower cell in
//! the low half, so the words' little-endian bytes are the halves in cell order). A field of
//! an odd number of cells ends with one padding half: the packed fields sit in the staging
//! buffer `padded_field_bytes` apart (copies between buffers move whole words) and the host
//! copy leaves each field's padding half out.

use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::field_sim::FieldSim;
use crate::pipeline::{ComputeShader, storage};

/// Invocations per workgroup of the pack pass (one u32 word, two cells, each).
const WORKGROUP: u32 = 64;

/// The pack shader for fields of `cells` cells, dispatched as rows of `row` invocations.
fn pack_wgsl(cells: u64, row: u64) -> String {
    format!(
        "// Packs one f32 field into f16 pairs: word w holds cells 2w (low half) and 2w + 1.
const CELLS: u32 = {cells}u;
const ROW: u32 = {row}u;
@group(0) @binding(0) var<storage, read> field: array<f32>;
@group(0) @binding(1) var<storage, read_write> packed: array<u32>;

@compute @workgroup_size({WORKGROUP})
fn main(@builtin(global_invocation_id) id: vec3<u32>) {{
    let w = id.y * ROW + id.x;
    let i = 2u * w;
    if (i >= CELLS) {{
        return;
    }}
    // The padding half of an odd field is 0.
    let high = select(0.0, field[min(i + 1u, CELLS - 1u)], i + 1u < CELLS);
    packed[w] = pack2x16float(vec2<f32>(field[i], high));
}}
"
    )
}

/// The pack pass's workgroups `[x, y]` for `sim`'s fields of `cells` cells (`words` packed
/// words), and the invocations of one row of the dispatch; errors past the device's
/// dispatch limits.
fn pack_dispatch(sim: &FieldSim, cells: u64, words: u64) -> Result<([u32; 2], u64)> {
    let groups = words.div_ceil(u64::from(WORKGROUP));
    let max_dim = u64::from(sim.gpu().device().limits().max_compute_workgroups_per_dimension.max(1));
    let x = groups.clamp(1, max_dim);
    let y = groups.div_ceil(x);
    let too_large = || Error::InvalidKernel {
        kernel: sim.spec().name.clone(),
        message: format!(
            "f16 output of {cells} cells per field needs {groups} workgroups of the pack pass, more than \
             {max_dim} × {max_dim}: use f32 output or a smaller grid"
        ),
    };
    let workgroups = [u32::try_from(x).map_err(|_| too_large())?, u32::try_from(y).map_err(|_| too_large())?];
    if y > max_dim {
        return Err(too_large());
    }
    Ok((workgroups, x * u64::from(WORKGROUP)))
}

/// The buffer field `field` is packed into, `bytes` long.
fn packed_buffer(device: &wgpu::Device, field: usize, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(&format!("packed field {field}")),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

/// The bind groups packing each side of field `field` of `sim` into `out`; `None` when `sim`
/// has no such field.
fn bind_sides(
    device: &wgpu::Device,
    shader: &ComputeShader,
    sim: &FieldSim,
    field: usize,
    out: &wgpu::Buffer,
) -> Option<[wgpu::BindGroup; 2]> {
    let [Some(a), Some(b)] = [0, 1].map(|side| sim.side_buffer(field, side)) else { return None };
    Some([a, b].map(|input| {
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("pack-f16"),
            layout: shader.group_layout(),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: input.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: out.as_entire_binding() },
            ],
        })
    }))
}

/// The pack pass of one [`FieldSim`]'s read fields, and the buffers it packs into.
pub(crate) struct HalfPacker {
    pipeline: wgpu::ComputePipeline,
    /// Per read field: the bind group reading its buffer of each side.
    bind_groups: Vec<[wgpu::BindGroup; 2]>,
    /// Per read field: its packed words.
    packed: Vec<wgpu::Buffer>,
    workgroups: [u32; 2],
    /// Bytes of one packed field: its halves rounded up to whole words.
    padded_field_bytes: u64,
}

impl HalfPacker {
    /// Compiles the pack pass for `fields` (indices into `sim`'s fields, in frame order).
    pub(crate) fn new(sim: &FieldSim, fields: &[usize]) -> Result<Self> {
        let gpu: &GpuDevice = sim.gpu();
        let cells = sim.grid().cells() as u64;
        let words = cells.div_ceil(2);
        let (workgroups, row) = pack_dispatch(sim, cells, words)?;
        let padded_field_bytes = words * 4;
        let source = pack_wgsl(cells, row);
        gpu.scoped("compiling the f16 pack pass", |device| {
            let buffers = [(0, storage(true)), (1, storage(false))];
            let shader = ComputeShader::new(device, "pack-f16", &source, &buffers, 0);
            let pipeline = shader.pipeline(device, "pack-f16", "main", &[]);
            let packed: Vec<wgpu::Buffer> =
                fields.iter().map(|&f| packed_buffer(device, f, padded_field_bytes)).collect();
            let bind_groups = fields
                .iter()
                .zip(&packed)
                .filter_map(|(&f, out)| bind_sides(device, &shader, sim, f, out))
                .collect::<Vec<_>>();
            (pipeline, bind_groups, packed)
        })
        .and_then(|(pipeline, bind_groups, packed)| {
            // FrameProducer::new checked every index against the kernel's fields.
            if bind_groups.len() != fields.len() {
                return Err(Error::InvalidKernel {
                    kernel: sim.spec().name.clone(),
                    message: format!("field indices {fields:?} are out of range"),
                });
            }
            Ok(HalfPacker { pipeline, bind_groups, packed, workgroups, padded_field_bytes })
        })
    }

    /// Bytes between two packed fields in the staging buffer.
    pub(crate) fn padded_field_bytes(&self) -> u64 {
        self.padded_field_bytes
    }

    /// Records the pack pass reading side `side` of each field, and the copies of the packed
    /// fields into `staging`, `padded_field_bytes` apart.
    pub(crate) fn encode(&self, encoder: &mut wgpu::CommandEncoder, side: usize, staging: &wgpu::Buffer) {
        {
            let mut pass = encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("pack-f16"), timestamp_writes: None });
            pass.set_pipeline(&self.pipeline);
            for groups in &self.bind_groups {
                pass.set_bind_group(0, &groups[side % 2], &[]);
                pass.dispatch_workgroups(self.workgroups[0], self.workgroups[1], 1);
            }
        }
        for (k, packed) in self.packed.iter().enumerate() {
            encoder.copy_buffer_to_buffer(
                packed,
                0,
                staging,
                k as u64 * self.padded_field_bytes,
                self.padded_field_bytes,
            );
        }
    }
}
