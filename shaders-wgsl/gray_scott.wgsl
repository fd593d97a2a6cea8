// Gray-Scott reaction-diffusion on a 2-D grid, one explicit Euler step. Fields u, v.
//   u' = u + dt * (Du * L(u) - u v^2 + F (1 - u))
//   v' = v + dt * (Dv * L(v) + u v^2 - (F + k) v)
// L is the 9-point Laplacian, summed in the order of the prelude's `laplacian9_*` (so the
// bits match). Twin: wgpipe_compute::gray_scott::cpu_step.
//
// Each invocation updates CELLS_PER_INVOCATION_X consecutive cells of one row, sliding a
// window of three stencil columns along it: every column of the 3x3 stencil is loaded once
// per invocation (10 columns for 8 cells) instead of once per cell (24). Loads are what CPU
// drivers pay for (lavapipe runs each one lane by lane); `cargo xtask bench --kernel`
// measured 8 cells and a 64x4 workgroup fastest of 1, 2, 4, 8, 16, 32 cells and 16x16,
// 32x8, 64x4 shapes at 1024x1024 (README, "Kernel throughput").

struct Params {
    feed: f32,
    kill: f32,
    du: f32,
    dv: f32,
    dt: f32,
}

@group(0) @binding(1) var<uniform> params: Params;

// Read by wgpipe: the dispatch covers the grid with this many cells per invocation along x.
const CELLS_PER_INVOCATION_X: u32 = 8u;

// One column of the stencil's window: u and v in rows y - 1, y and y + 1.
struct Column {
    um: f32,
    u0: f32,
    up: f32,
    vm: f32,
    v0: f32,
    vp: f32,
}

// The column at x of the rows with offsets ym, y0, yp.
fn column(ym: u32, y0: u32, yp: u32, x: u32) -> Column {
    return Column(u_in[ym + x], u_in[y0 + x], u_in[yp + x], v_in[ym + x], v_in[y0 + x], v_in[yp + x]);
}

// 9-point Laplacian from the centre c and its neighbours: sum of w * (neighbour - c), w = 0.5
// on the edge neighbours and 0.25 on the diagonals, in the prelude's order.
fn laplacian9_of(c: f32, up: f32, down: f32, left: f32, right: f32, ul: f32, ur: f32, dl: f32, dr: f32) -> f32 {
    var s = 0.5 * (up - c);
    s = s + 0.5 * (down - c);
    s = s + 0.5 * (left - c);
    s = s + 0.5 * (right - c);
    s = s + 0.25 * (ul - c);
    s = s + 0.25 * (ur - c);
    s = s + 0.25 * (dl - c);
    s = s + 0.25 * (dr - c);
    return s;
}

@compute @workgroup_size(64, 4, 1)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let x0 = id.x * CELLS_PER_INVOCATION_X;
    if (x0 >= grid.nx || id.y >= grid.ny) {
        return;
    }
    // Row offsets of y - 1, y, y + 1 and the column left of x0, boundary rule applied.
    let ym = prev_index(id.y, grid.ny) * grid.nx;
    let y0 = id.y * grid.nx;
    let yp = next_index(id.y, grid.ny) * grid.nx;
    var left = column(ym, y0, yp, prev_index(x0, grid.nx));
    var centre = column(ym, y0, yp, x0);
    for (var j = 0u; j < CELLS_PER_INVOCATION_X; j++) {
        let x = x0 + j;
        // Right of x, boundary rule applied; past the row's end (x >= nx, only when nx is not
        // a multiple of the cells per invocation) any in-grid column: nothing is written there.
        let right = column(ym, y0, yp, next_index(min(x, grid.nx - 1u), grid.nx));
        if (x < grid.nx) {
            let u = centre.u0;
            let v = centre.v0;
            let lu = laplacian9_of(u, centre.um, centre.up, left.u0, right.u0, left.um, right.um, left.up, right.up);
            let lv = laplacian9_of(v, centre.vm, centre.vp, left.v0, right.v0, left.vm, right.vm, left.vp, right.vp);
            let uvv = u * v * v;
            u_out[y0 + x] = u + params.dt * (params.du * lu - uvv + params.feed * (1.0 - u));
            v_out[y0 + x] = v + params.dt * (params.dv * lv + uvv - (params.feed + params.kill) * v);
        }
        left = centre;
        centre = right;
    }
}
