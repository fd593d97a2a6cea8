//! ZFP's fixed-rate format, as far as storing streams encoded elsewhere needs it: the size of
//! a stream, and H5Z-ZFP's parameters. (The encoder itself runs on the GPU:
//! `wgpipe_compute::zfp`.)
//!
//! zfp (1.0) codes an array of 1 to 3 dimensions in blocks of 4^d values; at a fixed rate of
//! R bits per value every block takes `max(R · 4^d, 9)` bits, partial blocks at the far edges
//! included. The H5Z-ZFP filter codes an HDF5 chunk as the array of the chunk's axes longer
//! than 1, and so does the encoder for stored fields.

mod decode;
mod header;

use std::fmt;

use crate::error::{Error, Result};

/// Bits per value of ZFP's fixed-rate mode for f32 values, 1 to 32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ZfpRate(u8);

impl ZfpRate {
    /// `bits` per value, if it is 1 to 32.
    pub fn new(bits: u32) -> Result<Self> {
        match u8::try_from(bits) {
            Ok(b @ 1..=32) => Ok(ZfpRate(b)),
            _ => Err(Error::InvalidOptions(format!(
                "ZFP rate {bits}: a fixed rate is 1 to 32 bits per f32 value (e.g. zfp:rate=8, a quarter of the bytes)"
            ))),
        }
    }

    /// Bits per value.
    pub fn bits(self) -> u32 {
        u32::from(self.0)
    }

    /// The array ZFP codes for a field (or chunk) of `shape`: its axes longer than 1, or one
    /// axis of 1 for a single value.
    pub fn coded_shape(shape: &[usize]) -> Vec<usize> {
        let coded: Vec<usize> = shape.iter().copied().filter(|&n| n > 1).collect();
        if coded.is_empty() { vec![1] } else { coded }
    }

    /// Bits of the stream of an array of `shape` ([`ZfpRate::coded_shape`] is applied), or
    /// `None` for more than 3 coded axes or a count that overflows.
    pub fn stream_bits(self, shape: &[usize]) -> Option<u64> {
        let coded = Self::coded_shape(shape);
        if coded.len() > 3 {
            return None;
        }
        let blocks = coded.iter().try_fold(1u64, |n, &d| n.checked_mul(d.div_ceil(4) as u64))?;
        let block_bits = (self.bits() << (2 * coded.len())).max(9);
        blocks.checked_mul(u64::from(block_bits))
    }

    /// Bytes of the stream `zfp_compress` writes for `shape` with zfp's default 64-bit stream
    /// words: the bits padded to whole words. What a field encoded before the sink holds.
    pub fn stream_bytes(self, shape: &[usize]) -> Option<u64> {
        Some(self.stream_bits(shape)?.div_ceil(64) * 8)
    }

    /// The f32 values of a field of `shape` from its `stream` at this rate (what the zfp C
    /// library's `zfp_decompress` gives, value for value); `None` when the array ZFP codes has
    /// more than 3 axes. A stream shorter than the shape needs reads as zeros past its end.
    pub fn decode(self, stream: &[u8], shape: &[usize]) -> Option<Vec<f32>> {
        decode::decode(stream, shape, self)
    }

    /// The plane of index `z` along the slowest axis of a 3-D field's `stream` (`[ny, nx]`
    /// values), decoding only the blocks that hold it; a field whose coded array has fewer
    /// axes is one plane, `z = 0`. `None` for a `z` past the array or more than 3 coded axes.
    pub fn decode_plane(self, stream: &[u8], shape: &[usize], z: usize) -> Option<Vec<f32>> {
        decode::decode_z(stream, shape, self, Some(z))
    }

    /// Bytes of the same stream as H5Z-ZFP stores it in a chunk (its zfp is built with 8-bit
    /// stream words): the bits padded to whole bytes. The leading bytes of
    /// [`ZfpRate::stream_bytes`]; the rest are zero padding.
    pub fn chunk_bytes(self, shape: &[usize]) -> Option<u64> {
        Some(self.stream_bits(shape)?.div_ceil(8))
    }

    /// The same stream as numcodecs' `zfpy` codec stores it in a Zarr chunk: zfp's full header
    /// (shape and rate, which zarr-python and zarrs read to decode it) before the blocks, in
    /// whole 64-bit words; byte for byte what `zfp_write_header` and `zfp_compress` write.
    /// `None` where zfp's header cannot describe `shape` (more than 3 coded axes, or a 3-D
    /// axis over 65536 values: 2^24 in 2-D).
    pub fn zfpy_chunk(self, stream: &[u8], shape: &[usize]) -> Option<Vec<u8>> {
        header::zfpy_chunk(self, stream, shape)
    }

    /// Whether zfp's header can describe a field of `shape` ([`ZfpRate::zfpy_chunk`] gives a
    /// chunk for it).
    pub fn zfpy_describes(self, shape: &[usize]) -> bool {
        header::header(self, shape).is_some()
    }
}

impl fmt::Display for ZfpRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// How a field's bytes arrive in every [`crate::Frame`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
    /// Its values, `dtype.size()` bytes each (the default).
    #[default]
    Values,
    /// Its f32 values as a ZFP fixed-rate stream ([`ZfpRate::stream_bytes`] bytes), encoded
    /// before the sink (wgpipe encodes on the GPU: `output.compress_on = "device"`). The HDF5
    /// sink (as H5Z-ZFP chunks, which every reader with the filter decodes), the Zarr sink (as
    /// chunks of numcodecs' `zfpy` codec, which zarr-python and zarrs decode; one frame a
    /// chunk, no shards) and the raw sink (each frame's stream, its metadata saying
    /// `"encoding": "zfp:rate=R"`; wgpipe's reader decodes it) store such fields; the others
    /// refuse them.
    Zfp(ZfpRate),
}

impl Encoding {
    /// `zfp:rate=R (encoded before the sink)`, for messages; empty for values.
    pub fn describe(&self) -> String {
        match self {
            Encoding::Values => String::new(),
            Encoding::Zfp(rate) => format!("ZFP fixed rate {rate} (encoded before the sink)"),
        }
    }
}
