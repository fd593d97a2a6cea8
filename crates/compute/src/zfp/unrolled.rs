//! The per-block steps of `encode.wgsl` whose array indices are known, written out for one
//! rank as straight-line WGSL: every index a constant, so that shader compilers keep the
//! block's 4^d coefficients in registers instead of indexed memory (the looped form, with the
//! indices in loop counters, was much slower on lavapipe: `cargo xtask bench zfp-device`).
//!
//! - `fn gather(p: Params, b: vec3<u32>, n: vec3<u32>) -> array<u32, SIZE>`: the block's f32
//!   bits, padded (`load`), and `fn largest_magnitude(raw) -> u32` (`larger`).
//! - `fn coefficients(raw: array<u32, SIZE>, ebits: u32) -> array<u32, SIZE>`: zfp's
//!   block-floating-point cast of the values (`quantize`), its decorrelating transform (encode.c:
//!   `fwd_lift`, encodeN.c: `fwd_xform`), and its reordering by sequency into negabinary
//!   (`fwd_order`, with codecN.c's `perm_N`).
//! - `fn plane(c: array<u32, SIZE>, k: u32) -> vec2<u32>`: bit plane `k` of the coefficients,
//!   coefficient i at bit i (0–31 in `x`, 32–63 in `y`).

use std::fmt::Write as _;

/// zfp's coefficient order (codec1.c, codec2.c, codec3.c: `perm_1`, `perm_2`, `perm_3`): by
/// total sequency, then by the sum of squares. Index `i + 4j + 16k` of the block.
const PERM_1: [usize; 4] = [0, 1, 2, 3];
const PERM_2: [usize; 16] = [0, 1, 4, 5, 2, 8, 6, 9, 3, 12, 10, 7, 13, 11, 14, 15];
const PERM_3: [usize; 64] = [
    0, 1, 4, 16, 20, 17, 5, 2, 8, 32, 21, 6, 18, 24, 9, 33, 36, 3, 12, 48, 22, 25, 37, 40, 34, 10, 7, 19, 28, 13, 49,
    52, 41, 38, 26, 23, 29, 53, 11, 35, 44, 14, 50, 56, 42, 27, 39, 45, 30, 54, 57, 60, 51, 15, 43, 46, 58, 61, 55, 31,
    62, 59, 47, 63,
];

/// The WGSL of both functions for blocks of `rank` (1, 2 or 3) dimensions.
pub(super) fn source(rank: usize) -> String {
    let size = 1usize << (2 * rank);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fn gather(p: Params, b: vec3<u32>, n: vec3<u32>) -> array<u32, SIZE> {{\n    var raw: array<u32, SIZE>;"
    );
    for i in 0..size {
        let _ = writeln!(s, "    raw[{i}] = load(p, b, n, {}u, {}u, {}u);", i % 4, (i / 4) % 4, i / 16);
    }
    let _ = writeln!(s, "    return raw;\n}}\n");
    let _ = writeln!(s, "fn largest_magnitude(raw: array<u32, SIZE>) -> u32 {{\n    var largest = 0u;");
    for i in 0..size {
        let _ = writeln!(s, "    largest = larger(largest, raw[{i}]);");
    }
    let _ = writeln!(s, "    return largest;\n}}\n");
    let _ = writeln!(
        s,
        "fn coefficients(raw: array<u32, SIZE>, ebits: u32) -> array<u32, SIZE> {{\n    var c: array<i32, SIZE>;"
    );
    for i in 0..size {
        let _ = writeln!(s, "    c[{i}] = quantize(raw[{i}], ebits);");
    }
    for (base, stride) in lifts(rank) {
        let [a, b, c, d] = [0, 1, 2, 3].map(|k| base + k * stride);
        let _ = writeln!(
            s,
            "    {{ var x = c[{a}]; var y = c[{b}]; var z = c[{c}]; var w = c[{d}];\n      \
             x += w; x >>= 1u; w -= x; z += y; z >>= 1u; y -= z; x += z; x >>= 1u; z -= x;\n      \
             w += y; w >>= 1u; y -= w; w += y >> 1u; y -= w >> 1u;\n      \
             c[{a}] = x; c[{b}] = y; c[{c}] = z; c[{d}] = w; }}"
        );
    }
    let perm: &[usize] = match rank {
        1 => &PERM_1,
        2 => &PERM_2,
        _ => &PERM_3,
    };
    let _ = writeln!(s, "    var u: array<u32, SIZE>;");
    for (i, p) in perm.iter().enumerate() {
        let _ = writeln!(s, "    u[{i}] = (bitcast<u32>(c[{p}]) + NBMASK) ^ NBMASK;");
    }
    let _ = writeln!(s, "    return u;\n}}\n");
    let _ = writeln!(s, "fn plane(c: array<u32, SIZE>, k: u32) -> vec2<u32> {{\n    var lo = 0u;\n    var hi = 0u;");
    for i in 0..size {
        let (word, bit) = if i < 32 { ("lo", i) } else { ("hi", i - 32) };
        let _ = writeln!(s, "    {word} |= ((c[{i}] >> k) & 1u) << {bit}u;");
    }
    let _ = writeln!(s, "    return vec2<u32>(lo, hi);\n}}");
    s
}

/// The lifts of zfp's forward transform of a `rank`-dimensional block, in zfp's order: along
/// x, then y, then z, each as (first index, stride).
fn lifts(rank: usize) -> Vec<(usize, usize)> {
    match rank {
        1 => vec![(0, 1)],
        2 => {
            let x = (0..4).map(|y| (4 * y, 1));
            let y = (0..4).map(|x| (x, 4));
            x.chain(y).collect()
        }
        _ => {
            let x = (0..16).map(|zy| (4 * zy, 1));
            let y = (0..4).flat_map(|x| (0..4).map(move |z| (16 * z + x, 4)));
            let z = (0..16).map(|yx| (yx, 16));
            x.chain(y).chain(z).collect()
        }
    }
}
