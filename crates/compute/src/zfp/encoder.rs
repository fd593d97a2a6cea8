//! The fixed-rate encoding pass: `encode.wgsl` specialised for one field's shape and rate.

use super::{ZfpField, ZfpRate};
use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::pipeline::{ComputeShader, storage};

/// The shader body; the constants of one shape and rate go before it.
const SHADER: &str = include_str!("encode.wgsl");

/// Invocations (blocks) per workgroup, as `encode.wgsl` declares.
const WORKGROUP: u64 = 64;

/// The compiled ZFP fixed-rate encoding pass for fields of one rank (1, 2 or 3). It encodes an
/// f32 field that is already on the device into a stream buffer on the same device, in the
/// caller's command encoder, so a [`crate::FrameSource`] can compress its own fields before
/// readback. One encoder serves every shape and rate of its rank: each [`ZfpBinding`] names
/// its own.
///
/// ```
/// use wgpipe_compute::zfp::{ZfpEncoder, ZfpField, ZfpRate};
/// use wgpipe_compute::{open_devices, DeviceSelector, Grid};
///
/// let gpu = open_devices(&DeviceSelector::All, 1)?.remove(0);
/// let field = ZfpField::contiguous(Grid::new(&[6, 10])?);
/// let encoder = ZfpEncoder::new(&gpu, 2)?;
/// let values: Vec<f32> = (0..60).map(|i| (i as f32 * 0.1).sin()).collect();
/// let stream = encoder.encode_slice(&gpu, field, ZfpRate::new(8)?, &values)?;
/// // 2 × 3 blocks of 4 × 4 values at 8 bits each.
/// assert_eq!(stream.len(), 6 * 16 * 8 / 8);
/// # Ok::<(), wgpipe_compute::Error>(())
/// ```
#[derive(Debug)]
pub struct ZfpEncoder {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    rank: usize,
}

/// One field layout at one rate, its input field and output stream buffers bound to a
/// [`ZfpEncoder`].
#[derive(Debug)]
pub struct ZfpBinding {
    bind_group: wgpu::BindGroup,
    output: wgpu::Buffer,
    field: ZfpField,
    rate: ZfpRate,
    workgroups: [u32; 2],
}

impl ZfpBinding {
    /// The layout of the field it encodes.
    pub fn field(&self) -> ZfpField {
        self.field
    }

    /// Its rate.
    pub fn rate(&self) -> ZfpRate {
        self.rate
    }

    /// Bytes of the encoded stream the output buffer receives.
    pub fn stream_bytes(&self) -> u64 {
        self.field.stream_bytes(self.rate)
    }
}

impl ZfpEncoder {
    /// Compiles the pass for fields of `rank` dimensions on `gpu`.
    pub fn new(gpu: &GpuDevice, rank: usize) -> Result<Self> {
        if !(1..=3).contains(&rank) {
            return Err(Error::InvalidEncoding {
                what: format!("ZFP encoding of a {rank}-dimensional field"),
                message: "fields of 1, 2 or 3 dimensions only".to_owned(),
            });
        }
        let source = format!(
            "const DIMS: u32 = {rank}u;\nconst SIZE: u32 = {}u;\n{}\n{SHADER}",
            1 << (2 * rank),
            super::unrolled::source(rank)
        );
        let (pipeline, layout) = gpu.scoped("compiling the ZFP encoder", |device| compile(device, &source))?;
        Ok(ZfpEncoder { pipeline, layout, rank })
    }

    /// Binds `input` (f32 elements, [`ZfpField::elements`] of them at least; `STORAGE`) and
    /// `output` ([`ZfpField::stream_bytes`] at least; `STORAGE | COPY_DST`) for encoding
    /// `field` at `rate`. Errors when the field is not of the encoder's rank, when a buffer is
    /// too small, or when the field or its stream exceed what the pass can address (32-bit
    /// indices) or the device can bind.
    pub fn bind(
        &self,
        gpu: &GpuDevice,
        field: ZfpField,
        rate: ZfpRate,
        input: &wgpu::Buffer,
        output: &wgpu::Buffer,
    ) -> Result<ZfpBinding> {
        let (params, workgroups) = self.check(gpu, field, rate, input, output)?;
        let bind_group = gpu.scoped("binding the ZFP encoder's buffers", |device| {
            let uniform = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("zfp params"),
                size: std::mem::size_of_val(&params) as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            gpu.queue().write_buffer(&uniform, 0, bytemuck::bytes_of(&params));
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("zfp-encode"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: input.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: output.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: uniform.as_entire_binding() },
                ],
            })
        })?;
        Ok(ZfpBinding { bind_group, output: output.clone(), field, rate, workgroups })
    }

    /// Records the encoding of `binding`'s input into its output: the stream's bytes are
    /// cleared (blocks that share a word OR their bits into it), then one pass codes every block.
    pub fn record(&self, encoder: &mut wgpu::CommandEncoder, binding: &ZfpBinding) {
        encoder.clear_buffer(&binding.output, 0, Some(binding.stream_bytes()));
        let mut pass = encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("zfp-encode"), timestamp_writes: None });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &binding.bind_group, &[]);
        pass.dispatch_workgroups(binding.workgroups[0], binding.workgroups[1], 1);
    }

    /// Uploads `values` (the field's elements), encodes them at `rate` and reads the stream
    /// back: one round trip, for tests and for fields that live on the host.
    pub fn encode_slice(&self, gpu: &GpuDevice, field: ZfpField, rate: ZfpRate, values: &[f32]) -> Result<Vec<u8>> {
        let expected = field.elements();
        if values.len() < expected {
            return Err(Error::InvalidEncoding {
                what: format!("ZFP encoding of the {} grid", field.grid()),
                message: format!("{} values given, the field's layout needs {expected}", values.len()),
            });
        }
        let stream_bytes = field.stream_bytes(rate);
        let (input, output, staging) = gpu.scoped("allocating the ZFP encoder's buffers", |device| {
            let buffer = |label, size, usage| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage,
                    mapped_at_creation: false,
                })
            };
            use wgpu::BufferUsages as U;
            let input = buffer("zfp input", (values.len() as u64 * 4).max(4), U::STORAGE | U::COPY_DST);
            let output = buffer("zfp stream", stream_bytes, U::STORAGE | U::COPY_DST | U::COPY_SRC);
            let staging = buffer("zfp staging", stream_bytes, U::MAP_READ | U::COPY_DST);
            (input, output, staging)
        })?;
        gpu.queue().write_buffer(&input, 0, bytemuck::cast_slice(values));
        let binding = self.bind(gpu, field, rate, &input, &output)?;
        let mut encoder = gpu.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("zfp") });
        self.record(&mut encoder, &binding);
        encoder.copy_buffer_to_buffer(&output, 0, &staging, 0, stream_bytes);
        gpu.submit_and_read(encoder, &staging, <[u8]>::to_vec)
    }

    /// Checks `field`, `rate` and the buffers against the encoder and the device; returns the
    /// shader's parameters and the workgroups to dispatch.
    fn check(
        &self,
        gpu: &GpuDevice,
        field: ZfpField,
        rate: ZfpRate,
        input: &wgpu::Buffer,
        output: &wgpu::Buffer,
    ) -> Result<(Params, [u32; 2])> {
        let rank = field.grid().rank();
        if rank != self.rank {
            return Err(Error::InvalidEncoding {
                what: format!("ZFP encoding of the {} grid", field.grid()),
                message: format!("the encoder was compiled for {}-dimensional fields", self.rank),
            });
        }
        let limits = gpu.device().limits();
        let too_large = |message: String| Error::TooLarge {
            grid: field.grid().to_string(),
            fields: 1,
            device: format!("device {}", gpu.label()),
            message,
        };
        let stream_bytes = field.stream_bytes(rate);
        if stream_bytes > limits.max_storage_buffer_binding_size {
            return Err(too_large(format!(
                "its ZFP stream of {stream_bytes} bytes exceeds the device's largest storage binding, {} bytes: \
                 use a lower rate or a smaller grid",
                limits.max_storage_buffer_binding_size
            )));
        }
        let needed = field.elements() as u64 * 4;
        for (which, buffer, expected) in [("input field", input, needed), ("output stream", output, stream_bytes)] {
            if buffer.size() < expected {
                return Err(Error::Gpu {
                    device: gpu.label().to_owned(),
                    message: format!(
                        "the ZFP encoder's {which} buffer holds {} bytes, it needs {expected}",
                        buffer.size()
                    ),
                });
            }
        }
        let mut params = Params::new(&field, rate).map_err(too_large)?;
        let max_dim = u64::from(limits.max_compute_workgroups_per_dimension.max(1));
        let groups = u64::from(params.blocks).div_ceil(WORKGROUP);
        let x = groups.clamp(1, max_dim);
        let y = groups.div_ceil(x);
        if y > max_dim {
            return Err(too_large(format!("its {groups} workgroups of ZFP blocks exceed {max_dim} × {max_dim}")));
        }
        // x and y are at most max_dim, a u32; so is a row of x workgroups (checked above).
        params.row =
            u32::try_from(x * WORKGROUP).map_err(|_| too_large("its dispatch rows are too long".to_owned()))?;
        Ok((params, [x as u32, y as u32]))
    }
}

/// `encode.wgsl`'s `Params`, field for field (a uniform buffer of 16 words).
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    nx: u32,
    ny: u32,
    nz: u32,
    sx: u32,
    sy: u32,
    sz: u32,
    offset: u32,
    bx: u32,
    by: u32,
    blocks: u32,
    maxbits: u32,
    maxbits_words: u32,
    maxbits_rest: u32,
    /// Invocations per dispatch row: set with the dispatch (`ZfpEncoder::check`).
    row: u32,
    /// A uniform struct is a multiple of 16 bytes.
    padding: [u32; 2],
}

impl Params {
    /// The parameters of `field` at `rate`, `row` left 0. Errors when the shader's u32 indices
    /// cannot address the field's elements, its stream's words, or the products
    /// `block · (bits per block mod 32)` it forms to find a block's first bit.
    fn new(field: &ZfpField, rate: ZfpRate) -> std::result::Result<Self, String> {
        let grid = field.grid();
        let [_, by, bx] = field.blocks();
        let blocks: u64 = field.blocks().iter().map(|&b| b as u64).product();
        let maxbits = rate.block_bits(grid.rank());
        let limit = u64::from(u32::MAX);
        let elements = field.elements() as u64;
        let words = field.stream_bytes(rate) / 4;
        let rest = u64::from(maxbits % 32).max(1);
        if elements > limit || words > limit || blocks * rest > limit {
            return Err(format!(
                "its buffer of {elements} elements and ZFP stream of {words} words exceed the encoder's 32-bit \
                 indices (at most {limit} each, and at most {} blocks at this rate): split the grid or use a smaller \
                 one",
                limit / rest
            ));
        }
        let [sz, sy, sx] = field.strides;
        // Each value is at most `elements` or `blocks`, checked above to fit in u32.
        let small = |v: usize| v as u32;
        Ok(Params {
            nx: small(grid.nx()),
            ny: small(grid.ny()),
            nz: small(grid.nz()),
            sx: small(sx),
            sy: small(sy),
            sz: small(sz),
            offset: small(field.offset),
            bx: small(bx),
            by: small(by),
            blocks: blocks as u32,
            maxbits,
            maxbits_words: maxbits / 32,
            maxbits_rest: maxbits % 32,
            row: 0,
            padding: [0; 2],
        })
    }
}

/// The encoding pipeline of `source` and the layout of its bind group: the field (read), the
/// stream (written) and the uniform of one shape and rate.
fn compile(device: &wgpu::Device, source: &str) -> (wgpu::ComputePipeline, wgpu::BindGroupLayout) {
    let buffers = [(0, storage(true)), (1, storage(false)), (2, wgpu::BufferBindingType::Uniform)];
    let shader = ComputeShader::new(device, "zfp-encode", source, &buffers, 0);
    (shader.pipeline(device, "zfp-encode", "main", &[]), shader.group_layout().clone())
}
