// ZFP fixed-rate encoding of one f32 field, one invocation per block of 4^DIMS cells.
//
// The host prepends DIMS and SIZE = 4^DIMS, and `coefficients` and `plane`, written out for
// the rank with constant indices (`unrolled.rs`, `encoder.rs`): one pipeline per rank serves
// every shape and rate, which `params` gives.
//
// In fixed-rate mode every block takes exactly `maxbits` bits, so block b starts at bit
// b · maxbits of the stream and the blocks are encoded independently. The stream is the zfp C
// library's (1.0.x, default build: ZFP_ROUND_NEVER, no ZFP_WITH_DAZ) bit for bit: bits go into
// 32-bit words least significant bit first, which, read as little-endian bytes, are the bytes of
// zfp's 64-bit stream words. The steps follow zfp's src/template/encode*.c; the comments name
// the functions there.
//
// `stream` must be zeroed before the pass: every word is ORed into it (atomicOr). A word that
// two blocks share takes bits from both; the words a block owns alone are ORed too, which
// spares the writer a branch.

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

// zfp's negabinary mask for 32-bit integers (traitsf.h: NBMASK).
const NBMASK: u32 = 0xaaaaaaaau;

// ---- the bit writer (bitstream.c: stream_write_bits, least significant bit first) ----
//
// Zero bits are not written: the stream is cleared before the pass, so a run of zeros only
// moves the writer on, and a block's padding costs nothing. A group of invocations runs a
// store that any of its lanes reaches for all of them (lavapipe stores lane by lane, a GPU's
// lanes diverge), so each loop of the plane coder stores through a single `write` per
// iteration, of up to 64 bits: a group's test bit, zeros and one-bit, or a plane's first bits.

var<private> word_index: u32;
var<private> word_bits: u32;
var<private> word_fill: u32;

// The mask of a 64-bit value's low `n` (0 ..= 64) bits.
fn low_mask(n: u32) -> vec2<u32> {
    // WGSL takes shift amounts modulo 32: the selects keep the shifts of 32 and more out.
    let x = select((1u << n) - 1u, 0xffffffffu, n >= 32u);
    let y = select((1u << (n - 32u)) - 1u, 0xffffffffu, n >= 64u);
    return vec2<u32>(x, select(y, 0u, n <= 32u));
}

// Writes the low `n` (0 ..= 64) bits of `value` after the `word_fill` (0 ..= 31) bits of the
// word being filled, and ORs the one or two words this completes into the stream.
fn write(value: vec2<u32>, n: u32) {
    let v = value & low_mask(n);
    let fill = word_fill;
    let carry = select(v >> vec2<u32>(32u - fill), vec2<u32>(0u), fill == 0u);
    let words = array<u32, 3>(word_bits | (v.x << fill), carry.x | (v.y << fill), carry.y);
    let total = fill + n;
    let full = total / 32u;
    if (full > 0u) {
        atomicOr(&stream[word_index], words[0]);
        if (full > 1u) {
            atomicOr(&stream[word_index + 1u], words[1]);
        }
    }
    word_index += full;
    word_fill = total % 32u;
    word_bits = select(select(words[0], words[1], full == 1u), words[2], full == 2u);
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

// Cell (x, y, z) of the block at block coordinates `b` with `n` cells along each axis,
// padded as zfp pads a partial block: its f32 bits.
fn load(p: Params, b: vec3<u32>, n: vec3<u32>, x: u32, y: u32, z: u32) -> u32 {
    let cx = 4u * b.x + padded(x, n.x);
    let cy = 4u * b.y + padded(y, n.y);
    let cz = 4u * b.z + padded(z, n.z);
    return field[p.offset + cx * p.sx + cy * p.sy + cz * p.sz];
}

// exponent_block's largest |x| as bits, skipping NaN (`max < NaN` is false in C).
fn larger(largest: u32, bits: u32) -> u32 {
    let magnitude = bits & 0x7fffffffu;
    return select(largest, max(largest, magnitude), magnitude <= 0x7f800000u);
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
    // Beside an infinity (emax = 0), values of 2 and more pass 2^31: x86 converts them to INT_MIN.
    if (shift > 7) {
        return i32(-2147483647 - 1);
    }
    var magnitude = 0u;
    if (shift >= 0) {
        magnitude = significand << u32(shift);
    } else if (shift > -32) {
        magnitude = significand >> u32(-shift);
    }
    let value = i32(magnitude);
    return select(value, -value, (bits & 0x80000000u) != 0u);
}

// ---- embedded coding of the bit planes (encode.c: encode_few_ints, rate-constrained) ----

// `plane` without its lowest one-bit.
fn without_lowest_one(plane: vec2<u32>) -> vec2<u32> {
    return select(vec2<u32>(0u, plane.y & (plane.y - 1u)), vec2<u32>(plane.x & (plane.x - 1u), plane.y), plane.x != 0u);
}

// The position of the lowest one-bit of `plane`; 64 for an empty one.
fn lowest_one(plane: vec2<u32>) -> u32 {
    return select(32u + countTrailingZeros(plane.y), countTrailingZeros(plane.x), plane.x != 0u);
}

// zfp's bit-plane coder with `maxbits` bits to spend, on the planes above. Its unary scans
// (a group test, then a zero per coefficient until a one) are written a group at a time: the
// test's one-bit, the zeros up to the next one-bit of the plane, and that one-bit, cut where
// zfp's loop stops (its budget, or the last coefficient, whose one-bit is implied).
fn encode_planes(c: array<u32, SIZE>, maxbits: u32) {
    var bits = maxbits;
    var n = 0u;
    var k = 32u;
    while (bits > 0u && k > 0u) {
        k -= 1u;
        let x = plane(c, k);
        // step 2: the first n bits as they are
        let m = min(n, bits);
        bits -= m;
        write(x, m);
        // step 3: unary run-length code of the rest, a group per iteration (the loop does
        // not start when the budget ran out above, m < n)
        var rest = x & ~low_mask(n);
        while (bits > 0u && n < SIZE) {
            bits -= 1u;
            // An empty rest fails the group test: a zero, and the plane is done.
            let empty = rest.x == 0u && rest.y == 0u;
            let gap = lowest_one(rest) - n;
            let limit = min(SIZE - 1u - n, bits);
            let one = select(0u, 1u, gap < limit);
            let zeros = select(min(gap, limit), 0u, empty);
            // the test's one, `zeros` zeros, and the coefficient's one if the scan reached it
            let length = zeros + 1u + one;
            let high = select(vec2<u32>(0u, one << (length - 33u)), vec2<u32>(one << (length - 1u), 0u), length <= 32u);
            write(select(high | vec2<u32>(1u, 0u), vec2<u32>(0u), empty), length);
            if (empty) {
                break;
            }
            // Without the coefficient's one the scan ended: at the budget or the last coefficient.
            bits -= zeros + one;
            n += zeros + 1u;
            rest = without_lowest_one(rest);
        }
    }
    // encode_block pads with zeros to exactly maxbits: the cleared stream holds them.
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

    // gather, gather_partial and exponent_block (written out per rank by `unrolled.rs`)
    let raw = gather(p, vec3<u32>(bx, by, bz), vec3<u32>(nx, ny, nz));
    let largest = largest_magnitude(raw);

    // The block starts at bit b · maxbits (computed without overflowing 32 bits).
    let start_rest = b * p.maxbits_rest;
    word_index = b * p.maxbits_words + start_rest / 32u;
    word_fill = start_rest % 32u;
    word_bits = 0u;

    // All zeros: a single zero bit, padded to maxbits, which the cleared stream holds.
    if (largest != 0u) {
        // The biased exponent emax + 127 of zfp's exponent(), which frexp gives as the
        // exponent field + 1 (subnormals clamp to emax = -126, i.e. 1). Written with its flag.
        // An infinity's frexp (glibc) gives exponent 0: emax = 0, as exponent field 126.
        let ebits = select(largest >> 23u, 126u, largest == 0x7f800000u);
        write(vec2<u32>(2u * (ebits + 1u) + 1u, 0u), 9u);
        // fwd_cast, fwd_xform and fwd_order (`coefficients`, written out per rank by `unrolled.rs`)
        encode_planes(coefficients(raw, ebits), p.maxbits - 9u);
    }
    if (word_fill > 0u) {
        atomicOr(&stream[word_index], word_bits);
    }
}
