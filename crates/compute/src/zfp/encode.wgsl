// ZFP fixed-rate encoding of one f32 field, one invocation per block of 4^DIMS cells.
//
// The host prepends DIMS and SIZE = 4^DIMS (see `encoder.rs`): one pipeline per rank serves
// every shape and rate, which `params` gives.
//
// In fixed-rate mode every block takes exactly `maxbits` bits, so block b starts at bit
// b · maxbits of the stream and the blocks are encoded independently. The stream is the zfp C
// library's (1.0.x, default build: ZFP_ROUND_NEVER, no ZFP_WITH_DAZ) bit for bit: bits go into
// 32-bit words least significant bit first, which, read as little-endian bytes, are the bytes of
// zfp's 64-bit stream words. The steps follow zfp's src/template/encode*.c; the comments name
// the functions there.
//
// `stream` must be zeroed before the pass: a word that two blocks share is written with
// atomicOr by both; the words a block owns alone are stored.

struct Params {
    // The field's cells per axis (1 along absent axes), its element strides, its first element.
    nx: u32, ny: u32, nz: u32,
    sx: u32, sy: u32, sz: u32,
    offset: u32,
    // Blocks along x and y, and in all.
    bx: u32, by: u32, blocks: u32,
    // Bits per block, as maxbits_words · 32 + maxbits_rest.
    maxbits: u32, maxbits_words: u32, maxbits_rest: u32,
    // Invocations per dispatch row.
    row: u32,
}

@group(0) @binding(0) var<storage, read> field: array<u32>;
@group(0) @binding(1) var<storage, read_write> stream: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> params: Params;

// zfp's coefficient order (codec1.c, codec2.c, codec3.c: perm_1, perm_2, perm_3): by total
// sequency, then by the sum of squares.
const PERM_1 = array<u32, 4>(0u, 1u, 2u, 3u);
const PERM_2 = array<u32, 16>(0u, 1u, 4u, 5u, 2u, 8u, 6u, 9u, 3u, 12u, 10u, 7u, 13u, 11u, 14u, 15u);
const PERM_3 = array<u32, 64>(
    0u, 1u, 4u, 16u, 20u, 17u, 5u, 2u, 8u, 32u, 21u, 6u, 18u, 24u, 9u, 33u,
    36u, 3u, 12u, 48u, 22u, 25u, 37u, 40u, 34u, 10u, 7u, 19u, 28u, 13u, 49u, 52u,
    41u, 38u, 26u, 23u, 29u, 53u, 11u, 35u, 44u, 14u, 50u, 56u, 42u, 27u, 39u, 45u,
    30u, 54u, 57u, 60u, 51u, 15u, 43u, 46u, 58u, 61u, 55u, 31u, 62u, 59u, 47u, 63u);

// zfp's negabinary mask for 32-bit integers (traitsf.h: NBMASK).
const NBMASK: u32 = 0xaaaaaaaau;

// ---- the bit writer (bitstream.c: stream_write_bits, least significant bit first) ----

var<private> word_index: u32;
var<private> word_bits: u32;
var<private> word_fill: u32;
// The word being filled holds bits of the block before this one.
var<private> word_shared: bool;

fn put_word() {
    if (word_shared) {
        atomicOr(&stream[word_index], word_bits);
    } else {
        atomicStore(&stream[word_index], word_bits);
    }
    word_shared = false;
    word_index += 1u;
    word_bits = 0u;
    word_fill = 0u;
}

// Writes the low `n` (0 ..= 32) bits of `value`.
fn write_bits(value: u32, n: u32) {
    if (n == 0u) {
        return;
    }
    let v = select(value & ((1u << n) - 1u), value, n == 32u);
    word_bits |= v << word_fill;
    let room = 32u - word_fill;
    if (n < room) {
        word_fill += n;
        return;
    }
    put_word();
    if (n > room) {
        word_bits = v >> room;
    }
    word_fill = n - room;
}

fn write_bit(bit: bool) -> bool {
    write_bits(select(0u, 1u, bit), 1u);
    return bit;
}

// stream_pad: `n` zero bits.
fn pad(n: u32) {
    var left = n;
    while (left >= 32u) {
        write_bits(0u, 32u);
        left -= 32u;
    }
    write_bits(0u, left);
}

// ---- gathering a block (encode1.c .. encode3.c: gather, gather_partial, pad_block) ----

// The cell a padded block takes at position `i` of an axis with `n` (1 ..= 4) cells in the
// block: zfp's pad_block copies p[0] to p[1], p[1] to p[2] and p[0] to p[3] as far as needed.
fn padded(i: u32, n: u32) -> u32 {
    if (i < n) {
        return i;
    }
    return select(0u, 1u, n == 2u && i == 2u);
}

// ---- the block-floating-point transform (encodef.c: exponent_block, fwd_cast) ----

// fwd_cast's (Int)(2^(30 - emax) · x), in integers so that subnormal inputs are exact whatever
// the GPU does with subnormal floats. `ebits` is the block's largest biased exponent field.
fn quantize(bits: u32, ebits: u32) -> i32 {
    let e = (bits >> 23u) & 0xffu;
    // zfp computes the scale 2^(30 - emax) in float: below emax = -97 (ebits < 29) it
    // overflows to infinity and x86's conversion of the infinite (or NaN) products gives
    // INT_MIN for every value of the block, as does a NaN anywhere.
    if (ebits < 29u || e == 255u) {
        return i32(-2147483647 - 1);
    }
    let significand = select((bits & 0x7fffffu) | 0x800000u, bits & 0x7fffffu, e == 0u);
    // x = significand · 2^(max(e, 1) − 150) and emax = ebits − 126.
    let shift = i32(max(e, 1u)) - i32(ebits) + 6;
    var magnitude = 0u;
    if (shift >= 0) {
        magnitude = significand << u32(shift);
    } else if (shift > -32) {
        magnitude = significand >> u32(-shift);
    }
    let value = i32(magnitude);
    return select(value, -value, (bits & 0x80000000u) != 0u);
}

// ---- the decorrelating transform (encode.c: fwd_lift; encodeN.c: fwd_xform) ----

fn fwd_lift(p: ptr<function, array<i32, SIZE>>, base: u32, s: u32) {
    var x = (*p)[base];
    var y = (*p)[base + s];
    var z = (*p)[base + 2u * s];
    var w = (*p)[base + 3u * s];
    x += w; x >>= 1u; w -= x;
    z += y; z >>= 1u; y -= z;
    x += z; x >>= 1u; z -= x;
    w += y; w >>= 1u; y -= w;
    w += y >> 1u; y -= w >> 1u;
    (*p)[base] = x;
    (*p)[base + s] = y;
    (*p)[base + 2u * s] = z;
    (*p)[base + 3u * s] = w;
}

fn fwd_xform(p: ptr<function, array<i32, SIZE>>) {
    if (DIMS == 1u) {
        fwd_lift(p, 0u, 1u);
    } else if (DIMS == 2u) {
        for (var y = 0u; y < 4u; y++) { fwd_lift(p, 4u * y, 1u); }
        for (var x = 0u; x < 4u; x++) { fwd_lift(p, x, 4u); }
    } else {
        for (var z = 0u; z < 4u; z++) {
            for (var y = 0u; y < 4u; y++) { fwd_lift(p, 4u * y + 16u * z, 1u); }
        }
        for (var x = 0u; x < 4u; x++) {
            for (var z = 0u; z < 4u; z++) { fwd_lift(p, 16u * z + x, 4u); }
        }
        for (var y = 0u; y < 4u; y++) {
            for (var x = 0u; x < 4u; x++) { fwd_lift(p, x + 4u * y, 16u); }
        }
    }
}

fn perm(i: u32) -> u32 {
    if (DIMS == 1u) {
        return PERM_1[i];
    } else if (DIMS == 2u) {
        return PERM_2[i];
    }
    return PERM_3[i];
}

// ---- embedded coding of the bit planes (encode.c: encode_few_ints, rate-constrained) ----

// The coefficients' bit planes: plane k has coefficient i's bit k at bit i, coefficients 0-31
// in `planes_lo`, 32-63 in `planes_hi`, made by two 32 x 32 bit-matrix transposes instead of
// one pass over the coefficients per plane.
var<private> planes_lo: array<u32, 32>;
var<private> planes_hi: array<u32, 32>;

// Transposes the 32 x 32 bit matrix `a` (row i = a[i], column 0 = bit 31): afterwards a[r]
// bit 31 - c is the old a[c] bit 31 - r (Hacker's Delight, transpose32a).
fn transpose32(a: ptr<private, array<u32, 32>>) {
    var j = 16u;
    var m = 0x0000ffffu;
    while (j != 0u) {
        var k = 0u;
        while (k < 32u) {
            let t = ((*a)[k] ^ ((*a)[k + j] >> j)) & m;
            (*a)[k] ^= t;
            (*a)[k + j] ^= t << j;
            k = (k + j + 1u) & ~j;
        }
        j >>= 1u;
        m ^= m << j;
    }
}

// Plane k of the coefficients, as (bits of coefficients 0-31, bits of coefficients 32-63).
fn plane(k: u32) -> vec2<u32> {
    return vec2<u32>(reverseBits(planes_lo[31u - k]), reverseBits(planes_hi[31u - k]));
}

// `plane` shifted right by `s` (0 ..= 64) bits.
fn shift_plane(plane: vec2<u32>, s: u32) -> vec2<u32> {
    if (s == 0u) {
        return plane;
    } else if (s < 32u) {
        return vec2<u32>((plane.x >> s) | (plane.y << (32u - s)), plane.y >> s);
    } else if (s < 64u) {
        return vec2<u32>(plane.y >> (s - 32u), 0u);
    }
    return vec2<u32>(0u, 0u);
}

// Writes the low `m` (0 ..= 64) bits of `plane`.
fn write_plane_bits(plane: vec2<u32>, m: u32) {
    if (m <= 32u) {
        write_bits(plane.x, m);
    } else {
        write_bits(plane.x, 32u);
        write_bits(plane.y, m - 32u);
    }
}

// The position of the lowest one-bit of a non-zero plane.
fn lowest_one(plane: vec2<u32>) -> u32 {
    if (plane.x != 0u) {
        return countTrailingZeros(plane.x);
    }
    return 32u + countTrailingZeros(plane.y);
}

// zfp's bit-plane coder with `maxbits` bits to spend, on the planes above. Its unary scans
// (write a zero per coefficient until a one) are written as runs: the zeros up to the
// plane's lowest one-bit at once, cut where zfp's loop stops (its budget, or the last
// coefficient, whose one-bit is implied).
fn encode_planes(maxbits: u32) {
    var bits = maxbits;
    var n = 0u;
    var k = 32u;
    while (bits > 0u && k > 0u) {
        k -= 1u;
        var x = plane(k);
        // step 2: the first n bits as they are
        let m = min(n, bits);
        bits -= m;
        write_plane_bits(x, m);
        x = shift_plane(x, m);
        // step 3: unary run-length code of the rest (group tests)
        while (bits > 0u && n < SIZE) {
            bits -= 1u;
            if (!write_bit(x.x != 0u || x.y != 0u)) {
                break;
            }
            let t = lowest_one(x);
            let limit = min(SIZE - 1u - n, bits);
            if (t < limit) {
                // t zeros, then the one-bit
                if (t < 32u) {
                    write_bits(1u << t, t + 1u);
                } else {
                    pad(t);
                    write_bits(1u, 1u);
                }
                bits -= t + 1u;
                x = shift_plane(x, t);
                n += t;
            } else {
                // zeros until the scan stops
                pad(limit);
                bits -= limit;
                x = shift_plane(x, limit);
                n += limit;
            }
            x = shift_plane(x, 1u);
            n += 1u;
        }
    }
    // encode_block: padded with zeros to exactly maxbits
    pad(bits);
}

// ---- one block (encodef.c: encode_block) ----

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let p = params;
    let b = id.y * p.row + id.x;
    if (b >= p.blocks) {
        return;
    }
    let bx = b % p.bx;
    let by = (b / p.bx) % p.by;
    let bz = b / (p.bx * p.by);
    let nx = min(p.nx - 4u * bx, 4u);
    let ny = min(p.ny - 4u * by, 4u);
    let nz = min(p.nz - 4u * bz, 4u);

    var raw: array<u32, SIZE>;
    var largest = 0u;
    for (var i = 0u; i < SIZE; i++) {
        let x = 4u * bx + padded(i % 4u, nx);
        let y = 4u * by + padded((i / 4u) % 4u, ny);
        let z = 4u * bz + padded(i / 16u, nz);
        let bits = field[p.offset + x * p.sx + y * p.sy + z * p.sz];
        raw[i] = bits;
        // exponent_block's max of |x| skips NaN (`max < NaN` is false).
        let magnitude = bits & 0x7fffffffu;
        if (magnitude <= 0x7f800000u) {
            largest = max(largest, magnitude);
        }
    }

    // The block starts at bit b · maxbits (computed without overflowing 32 bits).
    let start_rest = b * p.maxbits_rest;
    word_index = b * p.maxbits_words + start_rest / 32u;
    word_fill = start_rest % 32u;
    word_bits = 0u;
    word_shared = word_fill != 0u;

    if (largest == 0u) {
        // All zeros: a single zero bit, padded to maxbits.
        pad(p.maxbits);
    } else {
        // The biased exponent emax + 127 of zfp's exponent(), which frexp gives as the
        // exponent field + 1 (subnormals clamp to emax = -126, i.e. 1). Written with its flag.
        let ebits = largest >> 23u;
        write_bits(2u * (ebits + 1u) + 1u, 9u);
        var ints: array<i32, SIZE>;
        for (var i = 0u; i < SIZE; i++) {
            ints[i] = quantize(raw[i], ebits);
        }
        fwd_xform(&ints);
        // fwd_order: reordered and mapped to negabinary, as the rows of the bit matrices.
        for (var i = 0u; i < 32u; i++) {
            planes_lo[i] = 0u;
            planes_hi[i] = 0u;
        }
        for (var i = 0u; i < SIZE; i++) {
            let u = (bitcast<u32>(ints[perm(i)]) + NBMASK) ^ NBMASK;
            if (i < 32u) {
                planes_lo[i] = u;
            } else {
                planes_hi[i - 32u] = u;
            }
        }
        transpose32(&planes_lo);
        if (SIZE > 32u) {
            transpose32(&planes_hi);
        }
        encode_planes(p.maxbits - 9u);
    }
    if (word_fill > 0u) {
        atomicOr(&stream[word_index], word_bits);
    }
}
