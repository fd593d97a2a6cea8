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
        let groups = words.div_ceil(u64::from(WORKGROUP));
        let max_dim = u64::from(gpu.device().limits().max_compute_workgroups_per_dimension.max(1));
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
        let padded_field_bytes = words * 4;
        let source = pack_wgsl(cells, x * u64::from(WORKGROUP));
        gpu.scoped("compiling the f16 pack pass", |device| {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("pack-f16"),
                source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
            });
            let entry = |binding, read_only| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            };
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("pack-f16"),
                entries: &[entry(0, true), entry(1, false)],
            });
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("pack-f16"),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("pack-f16"),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
            let packed: Vec<wgpu::Buffer> = fields
                .iter()
                .map(|f| {
                    device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(&format!("packed field {f}")),
                        size: padded_field_bytes,
                        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                        mapped_at_creation: false,
                    })
                })
                .collect();
            let bind_groups = fields
                .iter()
                .zip(&packed)
                .filter_map(|(f, out)| {
                    let sides = [0, 1].map(|side| sim.side_buffer(*f, side));
                    let [Some(a), Some(b)] = sides else { return None };
                    Some([a, b].map(|input| {
                        device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: Some("pack-f16"),
                            layout: &layout,
                            entries: &[
                                wgpu::BindGroupEntry { binding: 0, resource: input.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 1, resource: out.as_entire_binding() },
                            ],
                        })
                    }))
                })
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
