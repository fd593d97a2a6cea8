//! Plain-Rust twins of the WGSL building blocks, summing in the same order as the shaders,
//! so GPU results can be checked against an independent CPU computation.

/// The prelude's `laplacian9` on one field (row-major `rows × cols`, periodic).
pub fn laplacian9(field: &[f32], rows: usize, cols: usize, r: usize, c: usize) -> f32 {
    let up = (r + rows - 1) % rows;
    let down = (r + 1) % rows;
    let left = (c + cols - 1) % cols;
    let right = (c + 1) % cols;
    let at = |rr: usize, cc: usize| field[rr * cols + cc];
    let x = at(r, c);
    let mut s = 0.5 * (at(up, c) - x);
    s += 0.5 * (at(down, c) - x);
    s += 0.5 * (at(r, left) - x);
    s += 0.5 * (at(r, right) - x);
    s += 0.25 * (at(up, left) - x);
    s += 0.25 * (at(up, right) - x);
    s += 0.25 * (at(down, left) - x);
    s += 0.25 * (at(down, right) - x);
    s
}
