// Gray-Scott reaction-diffusion on a 2-D grid, one explicit Euler step. Fields u, v.
//   u' = u + dt * (Du * L(u) - u v^2 + F (1 - u))
//   v' = v + dt * (Dv * L(v) + u v^2 - (F + k) v)
// L is the 9-point Laplacian, summed in the order of the prelude's `laplacian9_*` (so the
// bits match). Twin: wgpipe_compute::gray_scott::cpu_step.
//
// Each invocation updates CELLS_PER_INVOCATION_X consecutive cells of one row, sliding a
// window of three stencil columns along it: every column of the 3x3 stencil is loaded once
// per invocation (10 columns for 8 cells) instead of once per cell (24). Loads are what CPU
// drivers pay for (lavapipe runs each one lane by lane). `cargo xtask bench kernel` compares
// this shader with the widths it did not get, with the `%`-wrapped shader it replaced, and
// (`--candidate xtask/src/bench/tile_gray_scott.wgsl`) with a shared-memory tile, which was
// the slower on every adapter measured (docs: Benchmarks, "Kernel throughput").
//
// The workgroup is the prelude's, chosen per adapter (prelude.rs, `WorkgroupShapes`): 16x16
// on CPU drivers, which keeps narrow grids busy, and 64x4 on GPUs, whose warps then load one
// row each instead of splitting their loads over several rows (`cargo xtask bench kernel`
// measures each kernel with the shapes it did not get, "other-shapes").

struct Params {
    feed: f32,
    kill: f32,
    du: f32,
    dv: f32,
    dt: f32,
}

@group(0) @binding(1) var<uniform> params: Params;

// Read by wgpipe: the dispatch covers the grid with this many cells per invocation along x.
// An override: wgpipe sets it per adapter, 8 on CPU drivers and 1 on GPUs, whose loads of
// neighbouring invocations coalesce (crates/compute/src/invocation_width.rs). Any width
// gives the same bits: each cell's sums run in the same order.
override CELLS_PER_INVOCATION_X: u32 = 8u;

// One column of the stencil's window: u and v in rows y - 1, y and y + 1.
struct Column {
    um: f32,
    u0: f32,
    up: f32,
    vm: f32,
    v0: f32,
    vp: f32,
}

// The column at x of the rows with offsets ym, y0, yp (a `Cell`'s row offsets).
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

@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let x0 = id.x * CELLS_PER_INVOCATION_X;
    // Cells along x this kernel updates (a block's own, without ghosts, when split).
    let nx = extent().x;
    if (!in_grid(vec3(x0, id.y, id.z))) {
        return;
    }
    // The window starts at x0 - 1 and x0; cell() applies the boundary rule, so the kernel
    // never computes a neighbour's index itself.
    let first = cell(vec3(x0, id.y, id.z));
    var left = column(first.ym, first.y0, first.yp, first.xm);
    var centre = column(first.ym, first.y0, first.yp, first.x);
    for (var j = 0u; j < CELLS_PER_INVOCATION_X; j++) {
        let x = x0 + j;
        // Past the row's end (only when nx is no multiple of CELLS_PER_INVOCATION_X) the last
        // cell stands in, so every load stays in the grid; nothing is written there.
        let c = cell(vec3(min(x, nx - 1u), id.y, id.z));
        let right = column(c.ym, c.y0, c.yp, c.xp);
        if (x < nx) {
            let u = centre.u0;
            let v = centre.v0;
            let lu = laplacian9_of(u, centre.um, centre.up, left.u0, right.u0, left.um, right.um, left.up, right.up);
            let lv = laplacian9_of(v, centre.vm, centre.vp, left.v0, right.v0, left.vm, right.vm, left.vp, right.vp);
            let uvv = u * v * v;
            u_out[c.i] = u + params.dt * (params.du * lu - uvv + params.feed * (1.0 - u));
            v_out[c.i] = v + params.dt * (params.dv * lv + uvv - (params.feed + params.kill) * v);
        }
        left = centre;
        centre = right;
    }
}
