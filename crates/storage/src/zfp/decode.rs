//! Decoding a ZFP fixed-rate stream of f32 values: what wgpipe's readers do with a field that
//! was stored as its stream (the raw sink), value for value what the zfp C library's
//! `zfp_decompress` gives (1.0, default build). The steps follow zfp's
//! `src/template/decode*.c`; the comments name the functions there.

use super::ZfpRate;

/// zfp's negabinary mask for 32-bit integers (traitsf.h: NBMASK).
const NBMASK: u32 = 0xaaaa_aaaa;

/// zfp's coefficient order (codec1.c, codec2.c, codec3.c: `perm_1`, `perm_2`, `perm_3`).
const PERM_1: [usize; 4] = [0, 1, 2, 3];
const PERM_2: [usize; 16] = [0, 1, 4, 5, 2, 8, 6, 9, 3, 12, 10, 7, 13, 11, 14, 15];
const PERM_3: [usize; 64] = [
    0, 1, 4, 16, 20, 17, 5, 2, 8, 32, 21, 6, 18, 24, 9, 33, 36, 3, 12, 48, 22, 25, 37, 40, 34, 10, 7, 19, 28, 13, 49,
    52, 41, 38, 26, 23, 29, 53, 11, 35, 44, 14, 50, 56, 42, 27, 39, 45, 30, 54, 57, 60, 51, 15, 43, 46, 58, 61, 55, 31,
    62, 59, 47, 63,
];

/// Bits of a stream, least significant bit of each byte first (zfp's bit order); reads past
/// the end give zeros, as zfp's padding would.
struct Bits<'a> {
    bytes: &'a [u8],
    at: u64,
}

impl Bits<'_> {
    fn bit(&mut self) -> bool {
        let byte = usize::try_from(self.at / 8).ok().and_then(|i| self.bytes.get(i)).copied().unwrap_or(0);
        let bit = (byte >> (self.at % 8)) & 1 == 1;
        self.at += 1;
        bit
    }

    /// `n` (at most 64) bits, the first in bit 0.
    fn bits(&mut self, n: u32) -> u64 {
        (0..n).fold(0u64, |x, i| x | (u64::from(self.bit()) << i))
    }
}

/// The values of a field of `shape` (C order; axes of 1 are left out of the coded array, as
/// [`ZfpRate::coded_shape`] says) from its fixed-rate `stream` at `rate`; `None` when the
/// coded array has more than 3 axes.
pub(super) fn decode(stream: &[u8], shape: &[usize], rate: ZfpRate) -> Option<Vec<f32>> {
    decode_z(stream, shape, rate, None)
}

/// [`decode`], or with `Some(z)` only the cells of index `z` along the array's slowest axis of
/// three (the blocks that hold them: fixed rate gives every block's place), as a `[ny, nx]`
/// plane; a coded array of fewer axes has one such plane, `z = 0`.
pub(super) fn decode_z(stream: &[u8], shape: &[usize], rate: ZfpRate, only: Option<usize>) -> Option<Vec<f32>> {
    let coded = ZfpRate::coded_shape(shape);
    let dims = coded.len();
    if dims > 3 {
        return None;
    }
    // [nz, ny, nx], 1 along the axes the array lacks.
    let mut n = [1usize; 3];
    n[3 - dims..].copy_from_slice(&coded);
    let [nz, ny, nx] = n;
    let (z0, z1) = match only {
        Some(z) if z < nz => (z, z + 1),
        Some(_) => return None,
        None => (0, nz),
    };
    let maxbits = u64::from(rate.bits() << (2 * dims)).max(9);
    let blocks = [nz, ny, nx].map(|d| d.div_ceil(4) as u64);
    let mut values = vec![0f32; (z1 - z0) * ny * nx];
    for bz in (z0 / 4 * 4..z1).step_by(4) {
        for by in (0..ny).step_by(4) {
            for bx in (0..nx).step_by(4) {
                let block = ((bz / 4) as u64 * blocks[1] + (by / 4) as u64) * blocks[2] + (bx / 4) as u64;
                let mut bits = Bits { bytes: stream, at: block * maxbits };
                let cells = decode_block(&mut bits, maxbits, dims);
                // Scatter the block's cells that lie in the array and the range (scatter_partial).
                for z in (bz.max(z0)..(bz + 4).min(z1)).map(|z| z - bz) {
                    for y in 0..4.min(ny - by) {
                        for x in 0..4.min(nx - bx) {
                            values[((bz + z - z0) * ny + by + y) * nx + bx + x] = cells[16 * z + 4 * y + x];
                        }
                    }
                }
            }
        }
    }
    Some(values)
}

/// One block of 4^dims values (decodef.c: decode_block), `maxbits` bits from `bits`.
fn decode_block(bits: &mut Bits<'_>, maxbits: u64, dims: usize) -> [f32; 64] {
    let size = 1usize << (2 * dims);
    let mut out = [0f32; 64];
    if !bits.bit() {
        return out;
    }
    // The common exponent, biased by 127.
    let emax = bits.bits(8) as i32 - 127;
    let planes = decode_ints(bits, maxbits.saturating_sub(9), size);
    // inv_order: back to the block's order, from negabinary.
    let perm: &[usize] = match dims {
        1 => &PERM_1,
        2 => &PERM_2,
        _ => &PERM_3,
    };
    let mut ints = [0i32; 64];
    for (i, &p) in perm.iter().enumerate() {
        ints[p] = (planes[i] ^ NBMASK).wrapping_sub(NBMASK) as i32;
    }
    inv_xform(&mut ints, dims);
    // inv_cast: x = 2^(emax - 30) · i, the scale computed in f32 as zfp computes it.
    let scale = pow2(emax - 30);
    for (o, &i) in out.iter_mut().zip(&ints).take(size) {
        *o = scale * i as f32;
    }
    out
}

/// 2^e as an f32, exactly (subnormal where f32 has no normal power of 2, 0 below them).
fn pow2(e: i32) -> f32 {
    match e {
        ..-149 => 0.0,
        -149..=-127 => f32::from_bits(1 << (e + 149)),
        -126..=127 => f32::from_bits(((e + 127) as u32) << 23),
        _ => f32::INFINITY,
    }
}

/// The bit-plane decoder (decode.c: decode_few_ints), rate-constrained: `maxbits` bits.
fn decode_ints(bits: &mut Bits<'_>, maxbits: u64, size: usize) -> [u32; 64] {
    let mut data = [0u32; 64];
    let mut budget = maxbits;
    let mut n = 0usize;
    for k in (0..32).rev() {
        if budget == 0 {
            break;
        }
        // step 1: the first n bits of plane k as they are
        let m = (n as u64).min(budget);
        budget -= m;
        let mut x = bits.bits(m as u32);
        // step 2: unary run-length decode of the rest of the plane
        while budget > 0 && n < size {
            budget -= 1;
            if !bits.bit() {
                break;
            }
            while budget > 0 && n < size - 1 {
                budget -= 1;
                if bits.bit() {
                    break;
                }
                n += 1;
            }
            x += 1u64 << n;
            n += 1;
        }
        // step 3: deposit the plane
        for (i, d) in data.iter_mut().enumerate().take(size) {
            *d += (((x >> i) & 1) as u32) << k;
        }
    }
    data
}

/// zfp's inverse decorrelating transform (decodeN.c: inv_xform), the lifts along z, y, x.
fn inv_xform(p: &mut [i32; 64], dims: usize) {
    match dims {
        1 => inv_lift(p, 0, 1),
        2 => {
            (0..4).for_each(|x| inv_lift(p, x, 4));
            (0..4).for_each(|y| inv_lift(p, 4 * y, 1));
        }
        _ => {
            (0..16).for_each(|yx| inv_lift(p, yx, 16));
            (0..4).for_each(|x| (0..4).for_each(|z| inv_lift(p, 16 * z + x, 4)));
            (0..16).for_each(|zy| inv_lift(p, 4 * zy, 1));
        }
    }
}

/// decode.c: inv_lift of the 4-vector at `base` with stride `s` (wrapping, as zfp's
/// arithmetic on its bounded values never overflows).
fn inv_lift(p: &mut [i32; 64], base: usize, s: usize) {
    let (mut x, mut y, mut z, mut w) = (p[base], p[base + s], p[base + 2 * s], p[base + 3 * s]);
    y = y.wrapping_add(w >> 1);
    w = w.wrapping_sub(y >> 1);
    y = y.wrapping_add(w);
    w = w.wrapping_sub(y.wrapping_sub(w));
    z = z.wrapping_add(x);
    x = x.wrapping_sub(z.wrapping_sub(x));
    y = y.wrapping_add(z);
    z = z.wrapping_sub(y.wrapping_sub(z));
    w = w.wrapping_add(x);
    x = x.wrapping_sub(w.wrapping_sub(x));
    p[base] = x;
    p[base + s] = y;
    p[base + 2 * s] = z;
    p[base + 3 * s] = w;
}
