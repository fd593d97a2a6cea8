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
// load one lane at a time, and loads are most of a step's time there (`cargo xtask bench
// kernel` measures the brick against the plain row and one cell per invocation; docs,
// "Benchmarks"). GPUs keep one cell per invocation (their neighbouring invocations' loads coalesce), which
// is the plain row of width 1.
//
// Where a brick's rows are whole aligned quads (in a whole grid whose nx is a multiple of 4,
// every brick but a row's last when nx is no multiple of 8), it moves each row's 8 cells as
// two vec4s (`load4_u`, `store4_u`: one vector access per lane where the prelude binds
// vector views) and updates four cells at a time (`update_quad`): lavapipe loads and stores
// a lane's vec4 for little more than one f32 (`cargo xtask bench kernel` measures it against
// the scalar brick).

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
    let first = cell(vec3(x0, y, z));
    let o = brick_offsets(first, x0, y, z);
    // Quads: 8 cells from a multiple of 4 (never in a block, whose cells sit past a ghost),
    // all inside the row, in rows that start at multiples of 4.
    let quads = CELLS_PER_INVOCATION_X == 8u && x0 + 8u <= nx && first.x % 4u == 0u && grid.nx % 4u == 0u;
    if (quads) {
        update_brick_of_quads(vec3(x0, y, z), first, o, has_b, has_c);
        return;
    }
    let r_m = o.r_m;
    let r_0 = o.r_0;
    let r_1 = o.r_1;
    let r_2 = o.r_2;
    let p_m = o.p_m;
    let p_0 = o.p_0;
    let p_1 = o.p_1;
    let p_2 = o.p_2;
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

// Row offsets (y - 1, y, y + 1, y + 2) and plane offsets (z - 1, z, z + 1, z + 2) of the
// brick whose first cell is `first` at (x0, y, z); the last of each only matters where row b
// or plane c is updated, and stays in the grid.
struct BrickOffsets {
    r_m: u32,
    r_0: u32,
    r_1: u32,
    r_2: u32,
    p_m: u32,
    p_0: u32,
    p_1: u32,
    p_2: u32,
}

fn brick_offsets(first: Cell, x0: u32, y: u32, z: u32) -> BrickOffsets {
    let e = extent();
    let y1 = min(y + 1u, e.y - 1u);
    let z1 = min(z + 1u, e.z - 1u);
    return BrickOffsets(
        first.ym, first.y0, first.yp, cell(vec3(x0, y1, z)).yp,
        first.zm, first.z0, first.zp, cell(vec3(x0, y, z1)).zp,
    );
}

// The brick of `update_brick` where its rows are whole aligned quads: rows a, b, c, d (the
// same rows, the same neighbours) each loaded as two vec4s and a value either side, the rows
// outside the brick as two vec4s, each row updated by `update_row_of_quads`. The brick's
// first cell is `first`, at `at`; its offsets `o`.
fn update_brick_of_quads(at: vec3<u32>, first: Cell, o: BrickOffsets, has_b: bool, has_c: bool) {
    let x0 = at.x;
    let y = at.y;
    let z = at.z;
    // The x neighbours of the rows' first and last cells (the boundary rule's).
    let xl = first.xm;
    let xr = cell(vec3(x0 + 7u, y, z)).xp;
    // Quad indices: the brick's first along x, then each row's first (rows start at multiples
    // of 4, so a row's offset / 4 is its first quad).
    let q = x0 / 4u;
    let a = row_at((o.p_0 + o.r_0) / 4u + q);
    let b = row_at((o.p_0 + o.r_1) / 4u + q);
    let c = row_at((o.p_1 + o.r_0) / 4u + q);
    let d = row_at((o.p_1 + o.r_1) / 4u + q);
    update_row_of_quads(first, a, xl, xr, row_at((o.p_0 + o.r_m) / 4u + q), b, row_at((o.p_m + o.r_0) / 4u + q), c);
    if (has_b) {
        let cb = cell(vec3(x0, y + 1u, z));
        update_row_of_quads(cb, b, xl, xr, a, row_at((o.p_0 + o.r_2) / 4u + q), row_at((o.p_m + o.r_1) / 4u + q), d);
    }
    if (has_c) {
        let cc = cell(vec3(x0, y, z + 1u));
        update_row_of_quads(cc, c, xl, xr, row_at((o.p_1 + o.r_m) / 4u + q), d, a, row_at((o.p_2 + o.r_0) / 4u + q));
    }
    if (has_b && has_c) {
        let cd = cell(vec3(x0, y + 1u, z + 1u));
        update_row_of_quads(cd, d, xl, xr, c, row_at((o.p_1 + o.r_2) / 4u + q), b, row_at((o.p_2 + o.r_1) / 4u + q));
    }
}

// Eight cells of a row, u and v, as two quads each: cells 0-3 and 4-7.
struct Row {
    u0: vec4<f32>,
    u1: vec4<f32>,
    v0: vec4<f32>,
    v1: vec4<f32>,
}

// The row whose first quad is quad `q` of the fields.
fn row_at(q: u32) -> Row {
    return Row(load4_u(q), load4_u(q + 1u), load4_v(q), load4_v(q + 1u));
}

// The 8 cells of row `r` from cell `c`; `xl` and `xr` are the x offsets of the cells left of
// the first and right of the last; ym, yp, zm and zp are the neighbouring rows.
fn update_row_of_quads(c: Cell, r: Row, xl: u32, xr: u32, ym: Row, yp: Row, zm: Row, zp: Row) {
    let row = c.z0 + c.y0;
    let ul = u_in[row + xl];
    let vl = v_in[row + xl];
    let ur = u_in[row + xr];
    let vr = v_in[row + xr];
    // Each quad's left and right neighbours: the row's values shifted by one cell.
    let n = global_index(c);
    update_quad(c.i / 4u, n, r.u0, r.v0,
        vec4(ul, r.u0.xyz), vec4(r.u0.yzw, r.u1.x), ym.u0, yp.u0, zm.u0, zp.u0,
        vec4(vl, r.v0.xyz), vec4(r.v0.yzw, r.v1.x), ym.v0, yp.v0, zm.v0, zp.v0);
    update_quad(c.i / 4u + 1u, n + 4u, r.u1, r.v1,
        vec4(r.u0.w, r.u1.xyz), vec4(r.u1.yzw, ur), ym.u1, yp.u1, zm.u1, zp.u1,
        vec4(r.v0.w, r.v1.xyz), vec4(r.v1.yzw, vr), ym.v1, yp.v1, zm.v1, zp.v1);
}

// `update_cell` for the four cells of quad `q`, whose first cell has global index `n`, each
// component summed in the same order, so each gives the bits update_cell would.
fn update_quad(q: u32, n: u32, u: vec4<f32>, v: vec4<f32>,
               uxm: vec4<f32>, uxp: vec4<f32>, uym: vec4<f32>, uyp: vec4<f32>, uzm: vec4<f32>, uzp: vec4<f32>,
               vxm: vec4<f32>, vxp: vec4<f32>, vym: vec4<f32>, vyp: vec4<f32>, vzm: vec4<f32>, vzp: vec4<f32>) {
    var su = uxm;
    su = su + uxp;
    su = su + uym;
    su = su + uyp;
    su = su + uzm;
    su = su + uzp;
    var sv = vxm;
    sv = sv + vxp;
    sv = sv + vym;
    sv = sv + vyp;
    sv = sv + vzm;
    sv = sv + vzp;
    let lu = (su - 6.0 * u) * (1.0 / 6.0);
    let lv = (sv - 6.0 * v) * (1.0 / 6.0);
    let uvv = u * v * v;
    let noise = vec4(uniform_noise(n), uniform_noise(n + 1u), uniform_noise(n + 2u), uniform_noise(n + 3u));
    let du = params.du * lu - uvv + params.feed * (1.0 - u) + params.noise * noise;
    let dv = params.dv * lv + uvv - (params.feed + params.kill) * v;
    store4_u(q, u + params.dt * du);
    store4_v(q, v + params.dt * dv);
}
