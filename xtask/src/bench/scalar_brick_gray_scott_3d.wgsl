// The 3-D Gray-Scott step as shipped before its brick moved whole aligned rows as vec4s (kept
// by `cargo xtask bench --kernel` and `--against gs-mpiio` to measure the shipped shader
// against, and checked bit for bit with it): the 8 x 2 x 2 brick of scalar loads and stores.
//
// Gray-Scott reaction-diffusion on a 3-D grid, the model of the ADIOS2 tutorial; one explicit
// Euler step. Fields u, v.
//   u' = u + dt * (Du * L(u) - u v^2 + F (1 - u) + noise * r)
//   v' = v + dt * (Dv * L(v) + u v^2 - (F + k) v)
// L is the 7-point Laplacian, summed in the order of the prelude's `laplacian7_*` (so the
// bits match), r = uniform_noise in [-1, 1), a hash of (seed, cell, step). Twin:
// wgpipe_compute::gray_scott_3d::cpu_step.
//
// Each invocation updates CELLS_PER_INVOCATION_X consecutive cells of a row, sliding a window
// of three values along it, so that the row's own values are loaded once (10 for 8 cells).
// On CPU drivers it does so in a brick of 2 rows (y, y + 1) of 2 planes (z, z + 1): each of
// the four rows' y and z neighbours inside the brick is another row's value already loaded,
// so a cell costs 3 loads per field instead of 5 (a plain row) or 7 (one cell). CPU drivers
// load one lane at a time, and loads are most of a step's time there: measured with
// `cargo xtask bench --kernel` (docs, "Benchmarks"), the brick ran 1.35x (64^3) and 1.36x
// (128^3) as fast as the plain row on lavapipe, 1.64x as fast as one cell per invocation.
// GPUs keep one cell per invocation (their neighbouring invocations' loads coalesce), which
// is the plain row of width 1.

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

// Read by wgpipe: rows along y and planes along z per invocation, 1 or 2 each (the brick
// code below handles no more). Overrides set per adapter like the width: 2 on CPU drivers,
// 1 on GPUs; a forced width (`InvocationWidth::Cells`) sets both to 1.
override CELLS_PER_INVOCATION_Y: u32 = 2u;
override CELLS_PER_INVOCATION_Z: u32 = 2u;

@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (CELLS_PER_INVOCATION_Y == 1u && CELLS_PER_INVOCATION_Z == 1u) {
        update_row(id);
    } else {
        update_brick(id);
    }
}

// One row of CELLS_PER_INVOCATION_X cells: the cell at (x0 + j, id.y, id.z) for each j.
fn update_row(id: vec3<u32>) {
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
            let uy = vec2(u_in[c.z0 + c.ym + c.x], u_in[c.z0 + c.yp + c.x]);
            let vy = vec2(v_in[c.z0 + c.ym + c.x], v_in[c.z0 + c.yp + c.x]);
            let uz = vec2(u_in[c.zm + c.y0 + c.x], u_in[c.zp + c.y0 + c.x]);
            let vz = vec2(v_in[c.zm + c.y0 + c.x], v_in[c.zp + c.y0 + c.x]);
            update_cell(c, u, v, vec2(u_left, u_right), vec2(v_left, v_right), uy, vy, uz, vz);
        }
        u_left = u;
        v_left = v;
        u = u_right;
        v = v_right;
    }
}

// One cell's update from its values and its six neighbours', summed x - 1, x + 1, y - 1,
// y + 1, z - 1, z + 1 as the prelude's `laplacian7_*` and the CPU twin do (each pair: before,
// after). Both `update_row` and `update_brick` end here.
fn update_cell(c: Cell, u: f32, v: f32, ux: vec2<f32>, vx: vec2<f32>, uy: vec2<f32>, vy: vec2<f32>, uz: vec2<f32>, vz: vec2<f32>) {
    var su = ux.x;
    su = su + ux.y;
    su = su + uy.x;
    su = su + uy.y;
    su = su + uz.x;
    su = su + uz.y;
    var sv = vx.x;
    sv = sv + vx.y;
    sv = sv + vy.x;
    sv = sv + vy.y;
    sv = sv + vz.x;
    sv = sv + vz.y;
    let lu = (su - 6.0 * u) * (1.0 / 6.0);
    let lv = (sv - 6.0 * v) * (1.0 / 6.0);
    let uvv = u * v * v;
    let du = params.du * lu - uvv + params.feed * (1.0 - u) + params.noise * uniform_noise(global_index(c));
    let dv = params.dv * lv + uvv - (params.feed + params.kill) * v;
    u_out[c.i] = u + params.dt * du;
    v_out[c.i] = v + params.dt * dv;
}

// A brick of CELLS_PER_INVOCATION_X cells along x in rows a = (y, z), b = (y + 1, z),
// c = (y, z + 1), d = (y + 1, z + 1), each row a sliding window as in `update_row`. Rows b, c
// and d are always loaded: they are row a's y + 1 and z + 1 neighbours (found by the boundary
// rule, so past the grid's last row or plane they are what it wraps or clamps to); they are
// updated only where the brick has them (CELLS_PER_INVOCATION_Y or _Z is 2) inside the grid.
fn update_brick(id: vec3<u32>) {
    let x0 = id.x * CELLS_PER_INVOCATION_X;
    let y = id.y * CELLS_PER_INVOCATION_Y;
    let z = id.z * CELLS_PER_INVOCATION_Z;
    let e = extent();
    if (!in_grid(vec3(x0, y, z))) {
        return;
    }
    let nx = e.x;
    let has_b = CELLS_PER_INVOCATION_Y == 2u && y + 1u < e.y;
    let has_c = CELLS_PER_INVOCATION_Z == 2u && z + 1u < e.z;
    // Row offsets (y - 1, y, y + 1, y + 2) and plane offsets (z - 1, z, z + 1, z + 2); the
    // last of each only matters where row b or plane c is updated, and stays in the grid.
    let y1 = min(y + 1u, e.y - 1u);
    let z1 = min(z + 1u, e.z - 1u);
    let first = cell(vec3(x0, y, z));
    let r_m = first.ym;
    let r_0 = first.y0;
    let r_1 = first.yp;
    let r_2 = cell(vec3(x0, y1, z)).yp;
    let p_m = first.zm;
    let p_0 = first.z0;
    let p_1 = first.zp;
    let p_2 = cell(vec3(x0, y, z1)).zp;
    let ra = p_0 + r_0;
    let rb = p_0 + r_1;
    let rc = p_1 + r_0;
    let rd = p_1 + r_1;
    // Each row's window: the value left of the current cell, and the cell's.
    var ua_l = u_in[ra + first.xm];
    var va_l = v_in[ra + first.xm];
    var ua = u_in[ra + first.x];
    var va = v_in[ra + first.x];
    var ub_l = u_in[rb + first.xm];
    var vb_l = v_in[rb + first.xm];
    var ub = u_in[rb + first.x];
    var vb = v_in[rb + first.x];
    var uc_l = u_in[rc + first.xm];
    var vc_l = v_in[rc + first.xm];
    var uc = u_in[rc + first.x];
    var vc = v_in[rc + first.x];
    var ud_l = u_in[rd + first.xm];
    var vd_l = v_in[rd + first.xm];
    var ud = u_in[rd + first.x];
    var vd = v_in[rd + first.x];
    for (var j = 0u; j < CELLS_PER_INVOCATION_X; j++) {
        let x = x0 + j;
        // Past the row's end the last cell stands in, as in `update_row`.
        let a = cell(vec3(min(x, nx - 1u), y, z));
        let cx = a.x;
        let ua_r = u_in[ra + a.xp];
        let va_r = v_in[ra + a.xp];
        let ub_r = u_in[rb + a.xp];
        let vb_r = v_in[rb + a.xp];
        let uc_r = u_in[rc + a.xp];
        let vc_r = v_in[rc + a.xp];
        let ud_r = u_in[rd + a.xp];
        let vd_r = v_in[rd + a.xp];
        if (x < nx) {
            let ua_ym = u_in[p_0 + r_m + cx];
            let va_ym = v_in[p_0 + r_m + cx];
            let ua_zm = u_in[p_m + r_0 + cx];
            let va_zm = v_in[p_m + r_0 + cx];
            update_cell(a, ua, va, vec2(ua_l, ua_r), vec2(va_l, va_r), vec2(ua_ym, ub), vec2(va_ym, vb), vec2(ua_zm, uc), vec2(va_zm, vc));
            if (has_b) {
                let ub_yp = u_in[p_0 + r_2 + cx];
                let vb_yp = v_in[p_0 + r_2 + cx];
                let ub_zm = u_in[p_m + r_1 + cx];
                let vb_zm = v_in[p_m + r_1 + cx];
                let b = cell(vec3(x, y + 1u, z));
                update_cell(b, ub, vb, vec2(ub_l, ub_r), vec2(vb_l, vb_r), vec2(ua, ub_yp), vec2(va, vb_yp), vec2(ub_zm, ud), vec2(vb_zm, vd));
            }
            if (has_c) {
                let uc_ym = u_in[p_1 + r_m + cx];
                let vc_ym = v_in[p_1 + r_m + cx];
                let uc_zp = u_in[p_2 + r_0 + cx];
                let vc_zp = v_in[p_2 + r_0 + cx];
                let c = cell(vec3(x, y, z + 1u));
                update_cell(c, uc, vc, vec2(uc_l, uc_r), vec2(vc_l, vc_r), vec2(uc_ym, ud), vec2(vc_ym, vd), vec2(ua, uc_zp), vec2(va, vc_zp));
            }
            if (has_b && has_c) {
                let ud_yp = u_in[p_1 + r_2 + cx];
                let vd_yp = v_in[p_1 + r_2 + cx];
                let ud_zp = u_in[p_2 + r_1 + cx];
                let vd_zp = v_in[p_2 + r_1 + cx];
                let d = cell(vec3(x, y + 1u, z + 1u));
                update_cell(d, ud, vd, vec2(ud_l, ud_r), vec2(vd_l, vd_r), vec2(uc, ud_yp), vec2(vc, vd_yp), vec2(ub, ud_zp), vec2(vb, vd_zp));
            }
        }
        ua_l = ua;
        va_l = va;
        ua = ua_r;
        va = va_r;
        ub_l = ub;
        vb_l = vb;
        ub = ub_r;
        vb = vb_r;
        uc_l = uc;
        vc_l = vc;
        uc = uc_r;
        vc = vc_r;
        ud_l = ud;
        vd_l = vd;
        ud = ud_r;
        vd = vd_r;
    }
}
