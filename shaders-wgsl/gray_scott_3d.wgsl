// Gray-Scott reaction-diffusion on a 3-D grid, the model of the ADIOS2 tutorial; one explicit
// Euler step. Fields u, v.
//   u' = u + dt * (Du * L(u) - u v^2 + F (1 - u) + noise * r)
//   v' = v + dt * (Dv * L(v) + u v^2 - (F + k) v)
// L is the 7-point Laplacian, summed in the order of the prelude's `laplacian7_*` (so the
// bits match), r = uniform_noise in [-1, 1), a hash of (seed, cell, step). Twin:
// wgpipe_compute::gray_scott_3d::cpu_step.
//
// Each invocation updates CELLS_PER_INVOCATION_X consecutive cells of one row, sliding a
// window of three values of the row along it: the row's own values are loaded once per
// invocation (10 for 8 cells), the four other neighbours (y and z) once per cell, 5 loads per
// cell and field instead of 7. Measured with `cargo xtask bench --kernel` (README, "Kernel
// throughput"): 1.26-1.27x as fast as one cell per invocation at 64^3 and 128^3; with
// `--candidate-3d` under load, 4 cells were no faster than one, and the 8x8x4 and 16x4x4
// workgroups within the noise of each other.

struct Params {
    feed: f32,
    kill: f32,
    du: f32,
    dv: f32,
    dt: f32,
    noise: f32,
}

@group(0) @binding(1) var<uniform> params: Params;

// Read by wgpipe: the dispatch covers the grid with this many cells per invocation along x.
// An override: wgpipe sets it per adapter, 8 on CPU drivers and 1 on GPUs, whose loads of
// neighbouring invocations coalesce (crates/compute/src/invocation_width.rs). Any width
// gives the same bits: each cell's sums run in the same order.
override CELLS_PER_INVOCATION_X: u32 = 8u;

@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let x0 = id.x * CELLS_PER_INVOCATION_X;
    // Cells along x this kernel updates (a block's own, without ghosts, when split).
    let nx = extent().x;
    if (!in_grid(vec3(x0, id.y, id.z))) {
        return;
    }
    // The window starts at x0 - 1 and x0; cell() applies the boundary rule.
    let first = cell(vec3(x0, id.y, id.z));
    let row = first.z0 + first.y0;
    var u_left = u_in[row + first.xm];
    var v_left = v_in[row + first.xm];
    var u = u_in[row + first.x];
    var v = v_in[row + first.x];
    for (var j = 0u; j < CELLS_PER_INVOCATION_X; j++) {
        let x = x0 + j;
        // Past the row's end (only when nx is no multiple of CELLS_PER_INVOCATION_X) the last
        // cell stands in, so every load stays in the grid; nothing is written there.
        let c = cell(vec3(min(x, nx - 1u), id.y, id.z));
        let u_right = u_in[row + c.xp];
        let v_right = v_in[row + c.xp];
        if (x < nx) {
            var su = u_left;
            su = su + u_right;
            su = su + u_in[c.z0 + c.ym + c.x];
            su = su + u_in[c.z0 + c.yp + c.x];
            su = su + u_in[c.zm + c.y0 + c.x];
            su = su + u_in[c.zp + c.y0 + c.x];
            var sv = v_left;
            sv = sv + v_right;
            sv = sv + v_in[c.z0 + c.ym + c.x];
            sv = sv + v_in[c.z0 + c.yp + c.x];
            sv = sv + v_in[c.zm + c.y0 + c.x];
            sv = sv + v_in[c.zp + c.y0 + c.x];
            let lu = (su - 6.0 * u) * (1.0 / 6.0);
            let lv = (sv - 6.0 * v) * (1.0 / 6.0);
            let uvv = u * v * v;
            let du = params.du * lu - uvv + params.feed * (1.0 - u) + params.noise * uniform_noise(global_index(c));
            let dv = params.dv * lv + uvv - (params.feed + params.kill) * v;
            u_out[c.i] = u + params.dt * du;
            v_out[c.i] = v + params.dt * dv;
        }
        u_left = u;
        v_left = v;
        u = u_right;
        v = v_right;
    }
}
