//! The viridis colormap, as a 256-entry lookup table interpolated linearly between
//! matplotlib's viridis at 0, 0.1, ..., 1 (perceptually uniform, readable in greyscale).

/// Viridis at 0, 0.1, ..., 1 (sRGB; #440154 ... #fde725).
const VIRIDIS: [[u8; 3]; 11] = [
    [68, 1, 84],
    [72, 36, 117],
    [65, 68, 135],
    [53, 95, 141],
    [42, 120, 142],
    [33, 145, 140],
    [34, 168, 132],
    [68, 191, 112],
    [122, 209, 81],
    [189, 223, 38],
    [253, 231, 37],
];

/// 256 colours, index 0 = lowest value.
pub fn viridis_lut() -> Vec<[u8; 3]> {
    let steps = (VIRIDIS.len() - 1) as f32;
    (0..256)
        .map(|i| {
            let x = i as f32 / 255.0 * steps;
            let lo = (x.floor() as usize).min(VIRIDIS.len() - 2);
            let t = x - lo as f32;
            let (a, b) = (VIRIDIS[lo], VIRIDIS[lo + 1]);
            std::array::from_fn(|c| (f32::from(a[c]) + t * (f32::from(b[c]) - f32::from(a[c]))).round() as u8)
        })
        .collect()
}
