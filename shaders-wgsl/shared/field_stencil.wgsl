// Field-stencil prelude, prepended by wgpipe to every kernel before compilation.
//
// A kernel sees every field of the previous state in `src` and writes the next state to `dst`
// (ping-pong buffers swapped by the host after each step). Field f occupies
// `src[f * grid.cells .. (f + 1) * grid.cells]`, row-major. A kernel with parameters declares
// its own `struct Params` and `@group(0) @binding(3) var<uniform> params: Params;`.

struct Grid {
    rows: u32,
    cols: u32,
    cells: u32,
    fields: u32,
}

@group(0) @binding(0) var<uniform> grid: Grid;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

// Index of (r, c) wrapped onto the periodic grid; offsets of at most one grid size either way.
fn cell_index(r: i32, c: i32) -> u32 {
    let rows = i32(grid.rows);
    let cols = i32(grid.cols);
    let rr = (r + rows) % rows;
    let cc = (c + cols) % cols;
    return u32(rr * cols + cc);
}

// Value of field `f` at (r, c) on the periodic grid.
fn at(f: u32, r: i32, c: i32) -> f32 {
    return src[f * grid.cells + cell_index(r, c)];
}

// 9-point Laplacian: sum over the 8 neighbours of w * (neighbour - centre), w = 0.5 on the
// four edge neighbours and 0.25 on the diagonals. The CPU twins sum in this same order.
fn laplacian9(f: u32, r: i32, c: i32) -> f32 {
    let x = at(f, r, c);
    var s = 0.5 * (at(f, r - 1, c) - x);
    s = s + 0.5 * (at(f, r + 1, c) - x);
    s = s + 0.5 * (at(f, r, c - 1) - x);
    s = s + 0.5 * (at(f, r, c + 1) - x);
    s = s + 0.25 * (at(f, r - 1, c - 1) - x);
    s = s + 0.25 * (at(f, r - 1, c + 1) - x);
    s = s + 0.25 * (at(f, r + 1, c - 1) - x);
    s = s + 0.25 * (at(f, r + 1, c + 1) - x);
    return s;
}
