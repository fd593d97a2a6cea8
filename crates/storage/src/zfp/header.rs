//! The stream of a field encoded before the sink as numcodecs' `zfpy` codec stores a chunk:
//! zfp's full header (`zfp_write_header(…, ZFP_HEADER_FULL)`) and then the blocks, which is
//! what `zfp_compress` writes after that header. zarr-python (numcodecs) and zarrs read the
//! header to learn the array's shape and the rate, decode, and reshape to the chunk's shape,
//! so a chunk `[1, z, y, x]` holds the 3-D stream of its frame. The header is written here
//! rather than by the zfp C library: it is three fields of a documented layout (zfp.c:
//! `zfp_write_header`, `zfp_field_metadata`, `zfp_stream_mode`), and the test against the
//! library's own header keeps it honest.

use super::ZfpRate;

/// Bits of the header for a fixed rate: a 32-bit magic, 52 bits of field metadata and the
/// 12-bit short form of the mode (every fixed rate of f32 values has one: at most 2048 bits a
/// block). Byte aligned, so the blocks that follow are the stream's bytes unshifted.
const HEADER_BITS: u64 = 32 + 52 + 12;

/// zfp's codec version (`ZFP_CODEC`, zfp 1.0), the magic's last byte.
const ZFP_CODEC: u128 = 5;

/// zfp's `zfp_type_float` minus 1, as the metadata stores the scalar type.
const FLOAT_TYPE: u128 = 2;

/// The chunk numcodecs' `zfpy` codec would hold for a field of `shape` whose fixed-rate
/// `stream` (its blocks from bit 0, as the device writes them) is at `rate`: the header, the
/// stream, zero padding to whole 64-bit words (zfp's stream words). `None` where zfp's
/// header cannot describe the array: more than 3 coded axes, or an axis longer than its
/// metadata holds (2^48 values in 1-D, 2^24 in 2-D, 2^16 in 3-D).
pub(super) fn zfpy_chunk(rate: ZfpRate, stream: &[u8], shape: &[usize]) -> Option<Vec<u8>> {
    let header = header(rate, shape)?;
    let total = (HEADER_BITS + rate.stream_bits(shape)?).div_ceil(64) * 8;
    let mut chunk = Vec::with_capacity(usize::try_from(total).ok()?);
    chunk.extend_from_slice(&header.to_le_bytes()[..(HEADER_BITS / 8) as usize]);
    let body = chunk.capacity() - chunk.len();
    chunk.extend_from_slice(&stream[..body.min(stream.len())]);
    chunk.resize(chunk.capacity(), 0);
    Some(chunk)
}

/// The header's bits, the first in bit 0 (zfp writes bits least significant first).
pub(super) fn header(rate: ZfpRate, shape: &[usize]) -> Option<u128> {
    let coded = ZfpRate::coded_shape(shape);
    let axis_bits: u32 = match coded.len() {
        1 => 48,
        2 => 24,
        3 => 16,
        _ => return None,
    };
    // zfp_field_metadata: the axes from the slowest (nz) to the fastest (nx), each as n - 1;
    // then the dimensionality - 1 and the scalar type - 1, two bits each.
    let mut meta: u128 = 0;
    for &n in &coded {
        let n = u128::try_from(n).ok()?.checked_sub(1)?;
        if n >> axis_bits != 0 {
            return None;
        }
        meta = (meta << axis_bits) | n;
    }
    meta = (meta << 2) | (coded.len() as u128 - 1);
    meta = (meta << 2) | FLOAT_TYPE;
    // zfp_stream_mode of a fixed rate: its bits a block, minus 1.
    let block_bits = rate.stream_bits(&vec![4; coded.len()])?;
    let mode = u128::from(block_bits) - 1;
    let magic = u128::from(b'z') | u128::from(b'f') << 8 | u128::from(b'p') << 16 | ZFP_CODEC << 24;
    Some(magic | meta << 32 | mode << 84)
}
