//! The ZFP pass of one [`FieldSim`]'s read fields: each field encoded into its own stream
//! buffer after the frame's steps, the streams copied into staging back to back.

use super::{ZfpBinding, ZfpEncoder, ZfpField, ZfpRate};
use crate::error::{Error, Result};
use crate::field_sim::FieldSim;

pub(crate) struct ZfpPacker {
    encoder: ZfpEncoder,
    /// Per read field: its binding on each side of the ping-pong pair.
    bindings: Vec<[ZfpBinding; 2]>,
    /// Per read field: its stream.
    streams: Vec<wgpu::Buffer>,
    stream_bytes: u64,
}

impl ZfpPacker {
    /// The encoder of `fields` (indices into `sim`'s fields, in frame order) at `rate`.
    pub(crate) fn new(sim: &FieldSim, fields: &[usize], rate: ZfpRate) -> Result<Self> {
        Self::over(sim, ZfpField::squeezed(sim.grid()), fields, rate)
    }

    /// The encoder of the cells `field` names in each of `sim`'s buffers of `fields` (a
    /// block's own cells among its ghosts: [`crate::BlockSim::with_zfp`]).
    pub(crate) fn over(sim: &FieldSim, field: ZfpField, fields: &[usize], rate: ZfpRate) -> Result<Self> {
        let gpu = sim.gpu();
        let encoder = ZfpEncoder::new(gpu, field.grid().rank())?;
        let stream_bytes = field.stream_bytes(rate);
        let mut bindings = Vec::with_capacity(fields.len());
        let mut streams = Vec::with_capacity(fields.len());
        for &f in fields {
            let stream = gpu.scoped("allocating a ZFP stream buffer", |device| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("zfp stream of field {f}")),
                    size: stream_bytes,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                })
            })?;
            let side = |side| {
                // FrameProducer::new checked every index against the kernel's fields.
                let input = sim.side_buffer(f, side).ok_or_else(|| Error::InvalidKernel {
                    kernel: sim.spec().name.clone(),
                    message: format!("field index {f} is out of range"),
                })?;
                encoder.bind(gpu, field, rate, input, &stream)
            };
            bindings.push([side(0)?, side(1)?]);
            streams.push(stream);
        }
        Ok(ZfpPacker { encoder, bindings, streams, stream_bytes })
    }

    /// Bytes of one field's stream, and between two streams in staging.
    pub(crate) fn stream_bytes(&self) -> u64 {
        self.stream_bytes
    }

    /// Records the encoding of side `side` of each field, and the copies of the streams into
    /// `staging`, `stream_bytes` apart.
    pub(crate) fn encode(&self, encoder: &mut wgpu::CommandEncoder, side: usize, staging: &wgpu::Buffer) {
        for (k, (sides, stream)) in self.bindings.iter().zip(&self.streams).enumerate() {
            self.encoder.record(encoder, &sides[side % 2]);
            encoder.copy_buffer_to_buffer(stream, 0, staging, k as u64 * self.stream_bytes, self.stream_bytes);
        }
    }
}
